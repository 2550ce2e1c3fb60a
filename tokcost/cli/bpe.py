"""``tokcost bpe train|encode|decode|inspect|export``: parse, call ``tokcost``, render."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

import tokcost
from tokcost import ExportFormat
from tokcost.cli.console import err, out, print_json, progress_enabled, warn
from tokcost.cli.errors import to_flags
from tokcost.cli.options import ForceOpt, JsonOpt, SchedulerOpt
from tokcost.errors import UsageError

if TYPE_CHECKING:
    from rich.progress import Task

bpe_app = typer.Typer(
    name="bpe",
    help="Train, use, inspect and export tokcost's own byte-level BPE (matches HF BpeTrainer).",
    no_args_is_help=True,
    rich_markup_mode="rich",
)

ModelArg = Annotated[
    str,
    typer.Argument(
        help="A model: tok.bpe, bpe:tok.bpe, a .tiktoken rank file or tiktoken:cl100k_base.",
        show_default=False,
    ),
]
PatternOpt = Annotated[
    str | None,
    typer.Option("--pattern", help="Pattern for a .tiktoken file without PATH.json beside it."),
]


@contextmanager
def _progress() -> Iterator[Any]:
    """A rich progress callback on stderr when a person watches; else None."""
    if not progress_enabled():
        yield None
        return
    from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task: Task) -> Text:
            unit = task.fields.get("unit", "")
            speed = task.speed
            if speed is None:
                return Text("")
            if unit == "B":
                return Text(f"{speed / 1e6:.1f} MB/s")
            return Text(f"{speed:,.0f} {unit}/s")

    bars: dict[str, Any] = {}
    with Progress(
        TextColumn("{task.description:<12}"),
        BarColumn(),
        TextColumn("{task.completed:>,.0f}/{task.total:,.0f}"),
        Rate(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as progress:

        def callback(phase: str, done: int, total: int) -> None:
            if phase not in bars:
                unit = "B" if phase == "pretokenize" else "merges"
                bars[phase] = progress.add_task(phase, total=total, unit=unit)
            progress.update(bars[phase], completed=done, total=total)

        yield callback


@bpe_app.command("train")
def train_cmd(
    ctx: typer.Context,
    files: Annotated[
        list[str],
        typer.Argument(
            help="UTF-8 text files to train on (with --engine dask also "
            "globs and fsspec URLs such as s3://...).",
            show_default=False,
        ),
    ],
    vocab_size: Annotated[
        str,
        typer.Option(
            "--vocab-size", "-v", metavar="COUNT",
            help="Tokens in the vocabulary: specials + 256 bytes + merges (32000, 32k, 32Ki).",
        ),
    ],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Model file to write (and OUT.vocab beside it).")
    ],
    pattern: Annotated[
        str,
        typer.Option(
            "--pattern", "-p", help="gpt2, cl100k, o200k (tiktoken's regexes) or a regex."
        ),
    ] = "o200k",
    special_tokens: Annotated[
        list[str] | None,
        typer.Option("--special", "-s", help="A special token (repeatable), e.g. '<|endoftext|>'."),
    ] = None,
    min_frequency: Annotated[
        str, typer.Option("--min-frequency", metavar="COUNT",
                          help="Stop when the best pair is rarer.")
    ] = "0",
    max_token_length: Annotated[
        int | None,
        typer.Option("--max-token-length", help="Longest token in bytes (default: no limit)."),
    ] = None,
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", help="Processes that pre-tokenize in parallel.")
    ] = 1,
    engine: Annotated[
        str,
        typer.Option(
            "--engine",
            help="local, or dask: pre-tokenize on a Dask cluster "
            "(--scheduler ADDRESS, else --jobs local worker processes); the "
            "merges are identical.",
        ),
    ] = "local",
    scheduler: SchedulerOpt = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Train a BPE vocabulary; the merges equal Hugging Face BpeTrainer's.

    Examples:

      tokcost bpe train corpus.txt --vocab-size 32768 -o tok.bpe

      tokcost bpe train docs/*.md -v 8192 -p cl100k -s '<|endoftext|>' -j 2 -o tok.bpe --json

      tokcost bpe train 's3://bucket/corpus/*.txt' -v 32768 --engine dask -o tok.bpe
    """
    config = tokcost.TrainerConfig(
        vocab_size=tokcost.parse_count(vocab_size, param="vocab_size"),
        pattern=pattern,
        special_tokens=tuple(special_tokens or ()),
        min_frequency=tokcost.parse_count(min_frequency, param="min_frequency"),
        max_token_length=max_token_length,
        jobs=jobs,
    )
    with _progress() as callback:
        result = tokcost.train_bpe(files, config, output, force=force, engine=engine,
                                   scheduler=scheduler, progress=callback)
    for message in result.warnings:
        # The library's warnings name parameters; say them as this command's flags.
        for param in ("min_frequency", "vocab_size"):
            message = to_flags(message, param, ctx.command.params)
        warn(message)
    summary = result.to_dict()
    if json_out:
        print_json(summary)
        return
    model_path, vocab_file = result.outputs
    out.print(
        f"trained {summary['vocab_size']:,} tokens ({summary['merges']:,} merges) from "
        f"{result.distinct_pretokens:,} distinct pre-tokens in {summary['seconds']:.1f} s"
    )
    out.print(f"wrote {model_path} and {vocab_file}")


def _read_text(text: str | None, file: Path | None) -> str:
    if text is not None and file is not None:
        raise UsageError("give TEXT or --file, not both")
    if text is not None:
        return text
    if file is not None and str(file) != "-":
        try:
            with open(file, encoding="utf-8", newline="") as fh:
                return fh.read()
        except FileNotFoundError:
            raise UsageError(f"file not found: {file}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {file} as UTF-8 text: {exc}") from None
    if sys.stdin.isatty():
        raise UsageError("give TEXT, --file PATH, or pipe text on stdin")
    return sys.stdin.read()


@bpe_app.command("encode")
def encode_cmd(
    model: ModelArg,
    text: Annotated[
        str | None, typer.Argument(help="Text to encode (default: --file or stdin).")
    ] = None,
    file: Annotated[
        Path | None, typer.Option("--file", "-f", help="Read the text from a file ('-' = stdin).")
    ] = None,
    allow_special: Annotated[
        bool,
        typer.Option("--allow-special", help="Encode special-token text as the special token."),
    ] = False,
    reference: Annotated[
        bool, typer.Option("--reference", help="Use the pure-Python encoder, not tiktoken's core.")
    ] = False,
    pattern: PatternOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Print the token ids of a text.

    Examples:

      tokcost bpe encode tok.bpe "hello world"

      cat notes.txt | tokcost bpe encode tok.bpe --json
    """
    result = tokcost.encode_bpe(model, _read_text(text, file), allow_special=allow_special,
                                reference=reference, pattern=pattern)
    if json_out:
        print_json(result.to_dict())
    else:
        out.print(" ".join(map(str, result.ids)))


@bpe_app.command("decode")
def decode_cmd(
    model: ModelArg,
    ids: Annotated[
        list[str] | None, typer.Argument(help="Token ids (default: read from stdin).")
    ] = None,
    pattern: PatternOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Print the text of token ids (bytes that are not UTF-8 show as U+FFFD).

    Examples:

      tokcost bpe decode tok.bpe 71 1917

      tokcost bpe encode tok.bpe "hi" | tokcost bpe decode tok.bpe
    """
    raw = ids if ids else sys.stdin.read().replace(",", " ").split()
    try:
        numbers = [int(x) for x in raw]
    except ValueError:
        raise UsageError(f"token ids must be integers, got {raw[:5]}") from None
    result = tokcost.decode_bpe(model, numbers, pattern=pattern)
    if json_out:
        print_json(result.to_dict())
    else:
        text = result.text
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


@bpe_app.command("inspect")
def inspect_cmd(
    model: ModelArg,
    top: Annotated[
        int, typer.Option("--top", help="How many merges and long tokens to show.")
    ] = 10,
    pattern: PatternOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Summarize a model: sizes, pattern, special tokens, first merges, longest tokens.

    Examples:

      tokcost bpe inspect tok.bpe

      tokcost bpe inspect tiktoken:cl100k_base --json
    """
    from rich.table import Table

    result = tokcost.inspect_bpe(model, top=top, pattern=pattern)
    info = result.to_dict()
    if json_out:
        print_json(info)
        return
    table = Table(show_header=False, box=None)
    for key in (
        "source",
        "pattern",
        "vocab_size",
        "tokens",
        "mergeable_tokens",
        "merges",
        "max_token_bytes",
    ):
        value = info[key]
        table.add_row(key, f"{value:,}" if isinstance(value, int) else str(value))
    table.add_row(
        "special_tokens", ", ".join(f"{k}={v}" for k, v in info["special_tokens"].items()) or "-"
    )
    out.print(table)
    if info["first_merges"]:
        out.print("first merges:")
        for m in info["first_merges"]:
            out.print(
                f"  {m['id']:>6}  [{m['left']}] + [{m['right']}] -> [{m['token']}]", markup=False
            )
    out.print(
        "longest tokens: " + "  ".join(f"[{t}]" for t in info["longest_tokens"]), markup=False
    )


@bpe_app.command("export")
def export_cmd(
    model: ModelArg,
    output: Annotated[Path, typer.Option("--output", "-o", help="File to write.")],
    format: Annotated[
        ExportFormat,
        typer.Option("--format", help="tiktoken (rank file + OUT.json) or hf (tokenizer.json)."),
    ] = ExportFormat.HF,
    pattern: PatternOpt = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Export to a tiktoken rank file or a Hugging Face tokenizer.json (same ids).

    Examples:

      tokcost bpe export tok.bpe --format hf -o tokenizer.json

      tokcost bpe export tok.bpe --format tiktoken -o tok.tiktoken
    """
    result = tokcost.export_bpe(model, output, format=format, force=force, pattern=pattern)
    if json_out:
        print_json(result.to_dict())
    else:
        out.print("wrote " + " and ".join(str(p) for p in result.outputs))


def register(app: typer.Typer) -> None:
    app.add_typer(bpe_app, name="bpe")
