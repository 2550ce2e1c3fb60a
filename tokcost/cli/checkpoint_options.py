"""What generate, attention and kvmem quality share: model options, reading a prompt."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tokcost.cli.console import warn
from tokcost.errors import UsageError

if TYPE_CHECKING:
    from tokcost import AttentionRequest, GenerateRequest

MODEL_HELP = ("Catalog model to run (tiny-ref ships weights), or hf:ORG/REPO from the local "
              "Hugging Face cache.")
ModelDirOpt = Annotated[str | None, typer.Option("--model-dir", help="A Hugging Face model folder "
    "(config.json, *.safetensors, tokenizer.json) instead of --model.")]
WeightsOpt = Annotated[str | None, typer.Option(
    "--weights", help="Weights .npz or .safetensors instead of the shipped ones.")]


def read_prompt(prompt: str | None, file: str | None = None) -> tuple[bytes, str]:
    """The prompt's bytes and what to call them: PROMPT, stdin ('-', or piped) or --file."""
    if prompt is not None and file is not None:
        raise UsageError("give PROMPT or --file, not both")
    source = file if file is not None else prompt
    if source is None:
        if sys.stdin.isatty():
            raise UsageError("give PROMPT, --file PATH, or pipe text on stdin")
        source = "-"
    if source == "-":
        return sys.stdin.buffer.read(), "stdin"
    if file is None:
        # argv holds undecodable bytes as surrogates (PEP 383); fsencode gives the bytes back.
        return os.fsencode(source), "the prompt"
    try:
        with open(file, "rb") as fh:
            return fh.read(), file
    except IsADirectoryError:
        raise UsageError(f"--file {file} is a folder; give a text file") from None
    except FileNotFoundError:
        raise UsageError(f"--file {file}: no such file") from None
    except OSError as exc:
        raise UsageError(f"--file {file}: cannot read it ({exc.strerror})") from None


def warn_replaced(request: GenerateRequest | AttentionRequest) -> None:
    bad = request.invalid_utf8_bytes
    if bad:
        warn(f"{request.prompt_source}: {bad} {'byte' if bad == 1 else 'bytes'} of invalid "
             "UTF-8, replaced with U+FFFD")


def warn_untrained(result: Any, shows: str) -> None:
    if not result.trained:
        warn(f"no trained weights for '{result.model}': using {result.weights}, {shows}")
