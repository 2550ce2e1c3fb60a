"""``tokcost bpe train|encode|decode|inspect|export``: parse, call ``tokcost.bpe``, render."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tokcost.cli.console import err, out, print_json, progress_enabled, warn
from tokcost.errors import UsageError

if TYPE_CHECKING:
    from rich.progress import Task

    from tokcost.bpe import BPEModel

bpe_app = typer.Typer(
    name="bpe",
    help="Train, use, inspect and export tokcost's own byte-level BPE (matches HF BpeTrainer).",
    no_args_is_help=True,
    rich_markup_mode="rich",
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print a JSON summary (keys in the README).")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite existing output files.")]
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
    files: Annotated[
        list[str],
        typer.Argument(
            help="UTF-8 text files to train on (with --engine dask also "
            "globs and fsspec URLs such as s3://...).",
            show_default=False,
        ),
    ],
    vocab_size: Annotated[
        int,
        typer.Option(
            "--vocab-size", "-v", help="Tokens in the vocabulary: specials + 256 bytes + merges."
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
    special: Annotated[
        list[str] | None,
        typer.Option("--special", "-s", help="A special token (repeatable), e.g. '<|endoftext|>'."),
    ] = None,
    min_frequency: Annotated[
        int, typer.Option("--min-frequency", help="Stop when the best pair is rarer.")
    ] = 0,
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
    scheduler: Annotated[
        str | None,
        typer.Option(
            "--scheduler",
            help="Dask scheduler address (tcp://HOST:8786) for --engine dask.",
            show_default=False,
        ),
    ] = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Train a BPE vocabulary; the merges equal Hugging Face BpeTrainer's.

    Examples:

      tokcost bpe train corpus.txt --vocab-size 32768 -o tok.bpe

      tokcost bpe train docs/*.md -v 8192 -p cl100k -s '<|endoftext|>' -j 2 -o tok.bpe --json

      tokcost bpe train 's3://bucket/corpus/*.txt' -v 32768 --engine dask -o tok.bpe
    """
    from tokcost.bpe import TrainerConfig, check_writable, save_model, train, vocab_path

    if jobs < 1:
        raise UsageError("--jobs must be 1 or more")
    config = TrainerConfig(
        vocab_size=vocab_size,
        pattern=pattern,
        special_tokens=tuple(special or ()),
        min_frequency=min_frequency,
        max_token_length=max_token_length,
        jobs=jobs,
    )
    check_writable([output, vocab_path(output)], force)  # fail before hours of training
    t0 = time.perf_counter()
    with _progress() as callback:
        from tokcost.app.engine import make_engine

        chosen = make_engine(engine, jobs=jobs if jobs > 1 else None, scheduler=scheduler)
        # the local engine's processes come from config.jobs; only Dask is handed over
        result = train(files, config, callback,
                       engine=None if engine == "local" and not scheduler else chosen)
    for message in result.warnings:
        warn(message)
    model_path, vocab_file = save_model(result.model, output, force=force)
    model = result.model
    summary = {
        "vocab_size": model.n_tokens,
        "requested_vocab_size": vocab_size,
        "merges": len(model.merges),
        "special_tokens": model.special_tokens,
        "pattern": model.pattern_name or model.pattern,
        "distinct_pretokens": result.distinct_pretokens,
        "total_pretokens": result.total_pretokens,
        "seconds": round(time.perf_counter() - t0, 3),
        "seconds_pretokenize": round(result.seconds_pretokenize, 3),
        "seconds_merge": round(result.seconds_merge, 3),
        "exhausted": result.exhausted,
        "outputs": [str(model_path), str(vocab_file)],
    }
    if json_out:
        print_json(summary)
        return
    out.print(
        f"trained {model.n_tokens:,} tokens ({len(model.merges):,} merges) from "
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
    from tokcost.adapters.bpe import BPETokenizer
    from tokcost.bpe import load_any

    bpe = load_any(model, pattern=pattern)
    tok = BPETokenizer(bpe, model, use_tiktoken=not reference)
    ids = tok.encode_strict(_read_text(text, file), allow_special=allow_special)
    if json_out:
        print_json({"model": model, "count": len(ids), "ids": ids})
    else:
        out.print(" ".join(map(str, ids)))


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
    from tokcost.bpe import Encoder, load_any

    raw = ids if ids else sys.stdin.read().replace(",", " ").split()
    try:
        numbers = [int(x) for x in raw]
    except ValueError:
        raise UsageError(f"token ids must be integers, got {raw[:5]}") from None
    enc = Encoder(load_any(model, pattern=pattern))
    text = enc.decode(numbers)
    if json_out:
        print_json({"model": model, "text": text, "count": len(numbers)})
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _inspect(model: BPEModel, source: str, top: int) -> dict[str, Any]:
    from tokcost.bpe import render_token

    dec = model.decoder
    longest = sorted(model.ranks, key=lambda b: (-len(b), model.ranks[b]))[:top]
    merges = [
        {
            "left": render_token(dec[a]),
            "right": render_token(dec[b]),
            "token": render_token(dec[c]),
            "id": c,
        }
        for a, b, c in model.merges[:top]
    ]
    return {
        "source": source,
        "pattern": model.pattern_name or model.pattern,
        "vocab_size": model.vocab_size,
        "tokens": model.n_tokens,
        "mergeable_tokens": len(model.ranks),
        "merges": len(model.merges),
        "special_tokens": model.special_tokens,
        "max_token_bytes": max(len(b) for b in model.ranks),
        "longest_tokens": [render_token(b) for b in longest],
        "first_merges": merges,
    }


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

    from tokcost.bpe import load_any

    info = _inspect(load_any(model, pattern=pattern), model, top)
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
    fmt: Annotated[
        str,
        typer.Option("--format", help="tiktoken (rank file + OUT.json) or hf (tokenizer.json)."),
    ] = "hf",
    pattern: PatternOpt = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False,
) -> None:
    """Export to a tiktoken rank file or a Hugging Face tokenizer.json (same ids).

    Examples:

      tokcost bpe export tok.bpe --format hf -o tokenizer.json

      tokcost bpe export tok.bpe --format tiktoken -o tok.tiktoken
    """
    from tokcost.bpe import export_hf, export_tiktoken, load_any

    if fmt not in ("hf", "tiktoken"):
        raise UsageError(f"--format must be hf or tiktoken, not {fmt!r}")
    bpe = load_any(model, pattern=pattern)
    paths = (
        export_hf(bpe, output, force=force)
        if fmt == "hf"
        else export_tiktoken(bpe, output, force=force)
    )
    if json_out:
        print_json(
            {"format": fmt, "outputs": [str(p) for p in paths], "vocab_size": bpe.vocab_size}
        )
    else:
        out.print("wrote " + " and ".join(str(p) for p in paths))


def register(app: typer.Typer) -> None:
    app.add_typer(bpe_app, name="bpe")
