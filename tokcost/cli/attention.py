"""``tokcost attention``: what each head of the reference model attends to on a prompt."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Annotated

import typer

import tokcost
from tokcost.cli.checkpoint_options import MODEL_HELP, ModelDirOpt
from tokcost.cli.console import err, out, print_json, print_wide, warn
from tokcost.cli.options import CatalogOpt, JsonOpt, PlotForceOpt
from tokcost.errors import UsageError

if TYPE_CHECKING:
    from tokcost import AttentionResult

EPILOG = """
Examples:

  tokcost attention "The baker opens the shop and the baker sells bread"
  tokcost attention --file notes.txt --json
  tokcost attention "the cat sat on the mat, the cat" --plot heads.png \\
    --head L3H0 --head L0H1
  tokcost attention "Once upon a time" -m hf:HuggingFaceTB/SmolLM2-135M --json
  tokcost attention "Once upon a time" --model-dir ./my-model

Scores, per head, averaged over query positions 1..T-1 (0 sees only itself):
  entropy   -sum a ln a of a row, in nats; ent/max = entropy / ln(i+1)
            (1 = uniform)
  dist      mean distance back, in tokens (sum a_ij (i - j)); rel = dist / i
            (0..1)
  first     mass on the first token (attention sink)
  prev      mass on the token just before; self: mass on its own position
  dup       mass on earlier copies of the same token id (rows that have one;
            - if none)
A head is named when a score passes its threshold (printed under the table).
"""


def attention(
    prompt: Annotated[
        str | None,
        typer.Argument(metavar="PROMPT", show_default=False,
                       help="Text to run ('-' reads stdin; or --file)."),
    ] = None,
    file: Annotated[
        str | None, typer.Option("--file", show_default=False,
                                 help="Read the prompt from a file ('-' = stdin).")
    ] = None,
    model: Annotated[
        str, typer.Option("--model", "-m", help=MODEL_HELP)
    ] = "tiny-ref",
    model_dir: ModelDirOpt = None,
    weights: Annotated[
        str | None,
        typer.Option("--weights", help="Weights .npz or .safetensors instead of the shipped ones."),
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Seed for random weights (a model without any).")
    ] = None,
    plot: Annotated[
        str | None,
        typer.Option("--plot", show_default=False,
                     help="Write heat maps of the heads to PNG/SVG/PDF "
                     "(needs: pip install 'tokcost\\[plot]')."),
    ] = None,
    heads: Annotated[
        list[str] | None,
        typer.Option("--head", show_default=False,
                     help="A head to plot, L<layer>H<head> (repeatable; default: every head "
                     "of a small model, else the named ones)."),
    ] = None,
    force: PlotForceOpt = False,
    json_out: JsonOpt = False,
    catalog: CatalogOpt = None,
) -> None:
    """Score every attention head on PROMPT: entropy, distance, sinks, previous/duplicate tokens."""
    text = _read_prompt(prompt, file)
    result = tokcost.attention(text, model=model, catalog=catalog, weights=weights, seed=seed,
                               plot=plot, heads=tuple(heads or ()), force=force,
                               model_dir=model_dir)
    if json_out:
        print_json(result.to_dict())
    else:
        if not result.trained:
            warn(f"no trained weights for '{result.model}': using {result.weights}, so the "
                 "heads show a random model")
        _render(result)
    if result.plot is not None:
        err.print(f"wrote {result.plot} ({len(result.plotted)} heads)", highlight=False,
                  markup=False)


def _read_prompt(prompt: str | None, file: str | None) -> str:
    if prompt is not None and file is not None:
        raise UsageError("give PROMPT or --file, not both")
    source = file if file is not None else (prompt if prompt == "-" else None)
    if prompt is None and file is None:
        if sys.stdin.isatty():
            raise UsageError("give PROMPT, --file PATH, or pipe text on stdin")
        source = "-"
    if source == "-":
        data, name = sys.stdin.buffer.read(), "stdin"
    elif source is not None:
        try:
            with open(source, "rb") as fh:
                data = fh.read()
        except IsADirectoryError:
            raise UsageError(f"--file {source} is a folder; give a text file") from None
        except FileNotFoundError:
            raise UsageError(f"--file {source}: no such file") from None
        except OSError as exc:
            raise UsageError(f"--file {source}: cannot read it ({exc.strerror})") from None
        name = source
    else:
        # argv holds undecodable bytes as surrogates (PEP 383); fsencode gives the bytes back.
        data, name = os.fsencode(prompt or ""), "the prompt"
    read = tokcost.decode_prompt(data, source=name)
    if read.invalid_utf8_bytes:
        noun = "byte" if read.invalid_utf8_bytes == 1 else "bytes"
        warn(f"{name}: {read.invalid_utf8_bytes} {noun} of invalid UTF-8, replaced with U+FFFD")
    return read.text


def _render(result: AttentionResult) -> None:
    from rich import box
    from rich.table import Table

    t = len(result.prompt_ids)
    table = Table(
        title=f"{result.model}: {result.layers} layers x {result.attention_heads} heads "
              f"on {t} tokens",
        box=box.SIMPLE_HEAD,
    )
    for col in ("head", "entropy", "ent/max", "dist", "rel", "first", "prev", "self", "dup",
                "label"):
        table.add_column(col, justify="left" if col in ("head", "label") else "right")
    for s in result.heads:
        dup = "-" if s.duplicate_token is None else f"{s.duplicate_token:.2f}"
        table.add_row(s.name, f"{s.entropy:.2f}", f"{s.entropy_norm:.2f}",
                      f"{s.mean_distance:.1f}", f"{s.relative_distance:.2f}",
                      f"{s.first_token:.2f}", f"{s.previous_token:.2f}", f"{s.self_token:.2f}",
                      dup, ", ".join(s.labels))
    print_wide(table)
    sliding = [f"L{i}" for i, kind in enumerate(result.layer_kinds) if kind == "sliding"]
    if sliding:
        out.print(f"sliding-window layers (window {result.sliding_window}): {' '.join(sliding)}; "
                  "their ent/max and rel are over the keys the window shows", markup=False)
    if result.notable:
        out.print("notable heads:", markup=False)
        for n in result.notable:
            out.print(f"  {n.text}", markup=False)
    else:
        out.print("no head passes a threshold", markup=False)
    th = result.thresholds
    out.print(
        f"thresholds: sink first >= {th['first_token']:g}, previous-token prev >= "
        f"{th['previous_token']:g}, self >= {th['self_token']:g}, duplicate-token dup >= "
        f"{th['duplicate_token']:g}, broad ent/max >= {th['entropy_norm']:g}, local dist <= "
        f"{th['mean_distance']:g} or long-range rel >= {th['relative_distance']:g} (when no "
        "other label fits)",
        markup=False, soft_wrap=True,
    )


def register(app: typer.Typer) -> None:
    app.command("attention", epilog=EPILOG)(attention)
