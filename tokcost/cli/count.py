"""``tokcost count`` / ``tokcount``: tokens in files, folders and stdin."""

from __future__ import annotations

import csv
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from tokcost.cli.console import err, out, print_json, progress_enabled, warn
from tokcost.cli.options import CatalogOpt, JsonOpt
from tokcost.errors import InputError, UsageError

EPILOG = """
Examples:

\b
  tokcount README.md                        count one file with o200k_base (GPT-4o)
  tokcost count src/ -t cl100k_base -t o200k_base   a folder, two tokenizers side by side
  cat prompt.txt | tokcount -m gpt-4o       stdin, and the share of gpt-4o's context window
  tokcost count docs/ --include '*.md' --json       machine-readable, Markdown files only
  tokcost count --chat messages.json -m gpt-4o      a chat request with its per-message overhead
  tokcount notes.txt --truncate 100         print the text cut to its first 100 tokens
  tokcost count 'data/**/*.txt' --engine dask --jobs 4      4 Dask worker processes here
  tokcost count s3://bucket/docs/ --engine dask --scheduler tcp://10.0.0.5:8786
"""


@dataclass(frozen=True)
class Column:
    label: str
    spec: str
    exact: bool
    model: Any | None = None  # tokcost.catalog.ModelEntry


def _label(spec: str) -> str:
    family, _, arg = spec.partition(":")
    if family == "tiktoken" and "/" not in arg:
        return arg
    return spec


def _columns(tokenizers: list[str], models: list[str], catalog: str | None) -> list[Column]:
    from tokcost.adapters.registry import DEFAULT_SPEC, normalize_spec

    # -t model:ID is -m ID (DESIGN §2): through the same --catalog, marked ≈ for proxies.
    models = [t.partition(":")[2] for t in tokenizers if t.startswith("model:")] + list(models)
    tokenizers = [t for t in tokenizers if not t.startswith("model:")]
    cols = [Column(_label(normalize_spec(t)), normalize_spec(t), True) for t in tokenizers]
    if models:
        from tokcost.catalog import load_catalog

        cat = load_catalog(catalog)
        for model_id in models:
            entry = cat.resolve(model_id)
            if not entry.tokenizer:
                raise UsageError(
                    f"model '{entry.id}' names no tokenizer in the catalog; pass one with -t SPEC"
                )
            cols.append(Column(entry.id, entry.tokenizer, entry.tokenizer_exact, entry))
    if not cols:
        cols.append(Column(_label(DEFAULT_SPEC), DEFAULT_SPEC, True))
    return cols


def _pct(share: float) -> str:
    """0.0213 -> '2.13%'; small shares keep three decimals so they do not read as 0."""
    return f"{share:.2%}" if share >= 0.01 else f"{share * 100:.3f}%"


def _fmt(n: int, exact: bool) -> str:
    return f"{n:,}" if exact else f"≈{n:,}"


def _load_tokenizers(cols: list[Column]) -> dict[str, Any]:
    from tokcost.adapters.registry import get_tokenizer

    toks: dict[str, Any] = {}
    for col in cols:
        if col.spec not in toks:
            toks[col.spec] = get_tokenizer(col.spec)
    return toks


def count(
    paths: Annotated[
        list[str] | None,
        typer.Argument(help="Files or folders to count; '-' (or a pipe) reads stdin.",
                       show_default=False),
    ] = None,
    tokenizer: Annotated[
        list[str] | None,
        typer.Option("--tokenizer", "-t", help="Tokenizer spec (repeatable): o200k_base, "
                     "tiktoken:cl100k_base, hf:PATH/tokenizer.json, sp:PATH.model, bpe:PATH.",
                     show_default=False),
    ] = None,
    model: Annotated[
        list[str] | None,
        typer.Option("--model", "-m", help="Model id from the catalog (repeatable): counts "
                     "with its tokenizer and shows the share of its context window.",
                     show_default=False),
    ] = None,
    json_out: JsonOpt = False,
    csv_out: Annotated[bool, typer.Option("--csv", help="Print CSV: one row per file.")] = False,
    total_only: Annotated[
        bool, typer.Option("--total", help="Print only the total token count (first tokenizer).")
    ] = False,
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", min=1, show_default=False, help="Parallel workers: "
                     "threads for tiktoken/tokenizers, whose cores release the GIL, else "
                     "processes (default 1); with --engine dask, one worker per CPU."),
    ] = None,
    engine: Annotated[
        str, typer.Option("--engine", help="local (this process, --jobs workers) or dask "
                          "(a Dask cluster: --scheduler ADDRESS, else --jobs local worker "
                          "processes; inputs may be globs or fsspec URLs such as s3://...).")
    ] = "local",
    scheduler: Annotated[
        str | None,
        typer.Option("--scheduler", help="Dask scheduler address (tcp://HOST:8786) for "
                     "--engine dask.", show_default=False),
    ] = None,
    include: Annotated[
        list[str] | None,
        typer.Option("--include", help="Only files matching this glob (repeatable).",
                     show_default=False),
    ] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option("--exclude", help="Leave out files matching this glob (repeatable).",
                     show_default=False),
    ] = None,
    no_gitignore: Annotated[
        bool, typer.Option("--no-gitignore", help="Also count files .gitignore excludes.")
    ] = False,
    allow_special: Annotated[
        bool, typer.Option("--allow-special", help="Encode special-token text such as "
                           "<|endoftext|> as the special token (default: plain text).")
    ] = False,
    chat: Annotated[
        Path | None,
        typer.Option("--chat", help="Count an OpenAI-style JSON message list, with the "
                     "model's per-message overhead (default model gpt-4o).",
                     show_default=False),
    ] = None,
    tokens: Annotated[
        bool, typer.Option("--tokens", help="Show the token pieces of one input.")
    ] = False,
    truncate: Annotated[
        int | None,
        typer.Option("--truncate", min=0, help="Print the input cut to its first N tokens.",
                     show_default=False),
    ] = None,
    catalog: CatalogOpt = None,
) -> None:
    """Count tokens in files, folders (recursive, .gitignore-aware) and stdin."""
    if chat is not None:
        _count_chat(str(chat), tokenizer or [], model or ["gpt-4o"], catalog, json_out)
        return
    cols = _columns(tokenizer or [], model or [], catalog)
    inputs = list(paths or [])
    if not inputs:
        if sys.stdin.isatty():
            raise UsageError("nothing to count: give files or folders, or '-' to read stdin")
        inputs = ["-"]
    toks = _load_tokenizers(cols)
    if tokens or truncate is not None:
        _show_pieces(inputs, cols[0], toks[cols[0].spec], tokens, truncate, allow_special)
        return

    from tokcost.app.engine import make_engine

    report = _run(inputs, toks, make_engine(engine, jobs=jobs, scheduler=scheduler),
                  include or [], exclude or [], not no_gitignore, allow_special)
    for skip in report.skipped:
        warn(f"skipped {skip.path}: {skip.reason}")
    for f in report.files:
        if f.invalid_utf8_bytes:
            warn(f"{f.path}: {f.invalid_utf8_bytes} bytes of invalid UTF-8, counted as U+FFFD")
    if not report.files and not report.skipped:
        warn("no files matched")
    if not report.files and report.skipped:
        raise InputError(
            f"nothing to count: every input was skipped ({len(report.skipped)}, reasons above)"
        )
    if total_only:
        out.print(str(report.total_tokens(cols[0].spec)))
    elif json_out:
        print_json(_as_json(report, cols))
    elif csv_out:
        _print_csv(report, cols)
    else:
        _print_table(report, cols)


def _run(inputs: list[str], toks: dict[str, Any], engine: Any, include: list[str],
         exclude: list[str], gitignore: bool, allow_special: bool) -> Any:
    from tokcost.counting import count_paths

    if not progress_enabled():
        return count_paths(inputs, toks, engine=engine, include=include, exclude=exclude,
                           gitignore=gitignore, allow_special=allow_special)
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TransferSpeedColumn

    with Progress(SpinnerColumn(), TextColumn("counting"), BarColumn(),
                  TextColumn("{task.completed:,.0f} bytes"), TransferSpeedColumn(),
                  console=err, transient=True) as bar:
        task = bar.add_task("count", total=None)

        def on_progress(_: str, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total or None)

        return count_paths(inputs, toks, engine=engine, include=include, exclude=exclude,
                           gitignore=gitignore, allow_special=allow_special,
                           progress=on_progress)


def _as_json(report: Any, cols: list[Column]) -> dict[str, Any]:
    return {
        "tokenizers": [
            {"label": c.label, "spec": c.spec, "exact": c.exact,
             "model": c.model.id if c.model else None}
            for c in cols
        ],
        "files": [
            {"path": f.path, "bytes": f.bytes, "chars": f.chars,
             "tokens": {c.label: f.tokens[c.spec] for c in cols},
             "invalid_utf8_bytes": f.invalid_utf8_bytes}
            for f in report.files
        ],
        "total": {
            "files": len(report.files), "bytes": report.total_bytes, "chars": report.total_chars,
            "tokens": {c.label: report.total_tokens(c.spec) for c in cols},
        },
        "models": [_window(report.total_tokens(c.spec), c) for c in cols if c.model],
        "skipped": [{"path": s.path, "reason": s.reason} for s in report.skipped],
    }


def _window(total: int, col: Column) -> dict[str, Any]:
    window = col.model.context_window if col.model else None
    return {
        "id": col.label, "tokenizer": col.spec, "exact": col.exact, "tokens": total,
        "context_window": window,
        "context_share": round(total / window, 6) if window else None,
    }


def _print_csv(report: Any, cols: list[Column]) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(["path", "bytes", "chars", *[c.label for c in cols]])
    for f in report.files:
        writer.writerow([f.path, f.bytes, f.chars, *[f.tokens[c.spec] for c in cols]])
    writer.writerow(["TOTAL", report.total_bytes, report.total_chars,
                     *[report.total_tokens(c.spec) for c in cols]])


def _print_table(report: Any, cols: list[Column]) -> None:
    from rich.table import Table

    table = Table(show_footer=len(report.files) > 1, box=None, pad_edge=False)
    table.add_column("file", footer=f"total ({len(report.files)} files)")
    table.add_column("bytes", justify="right", footer=f"{report.total_bytes:,}")
    table.add_column("chars", justify="right", footer=f"{report.total_chars:,}")
    for c in cols:
        table.add_column(c.label, justify="right", style="bold",
                         footer=_fmt(report.total_tokens(c.spec), c.exact))
    for f in report.files:
        table.add_row(f.path, f"{f.bytes:,}", f"{f.chars:,}",
                      *[_fmt(f.tokens[c.spec], c.exact) for c in cols])
    out.print(table)
    for c in cols:
        if c.model is None:
            continue
        w = _window(report.total_tokens(c.spec), c)
        if w["context_window"]:
            mark = "" if c.exact else " (≈: approximate, proxy tokenizer)"
            if w["context_share"] > 1:
                mark += " — does not fit"
            out.print(f"{c.label}: {_fmt(w['tokens'], c.exact)} tokens = "
                      f"{_pct(w['context_share'])} of its {w['context_window']:,}-token context "
                      f"window{mark}")


def _read_input(inputs: list[str]) -> str:
    if len(inputs) != 1 or Path(inputs[0]).is_dir():
        raise UsageError("--tokens and --truncate take one file or '-' (stdin)")
    if inputs[0] == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            data = Path(inputs[0]).read_bytes()
        except FileNotFoundError:
            raise UsageError(f"no such file: {inputs[0]}") from None
    return data.decode("utf-8", errors="replace")


def _show_pieces(inputs: list[str], col: Column, tok: Any, show: bool, truncate: int | None,
                 allow_special: bool) -> None:
    text = _read_input(inputs)
    ids = tok.encode(text, allow_special=allow_special)
    if truncate is not None:
        sys.stdout.write(tok.decode(ids[:truncate]))
        sys.stdout.flush()
        return
    pieces = [p.decode("utf-8", errors="backslashreplace") for p in tok.token_bytes(ids)]
    if out.is_terminal:
        # Alternating backgrounds show where one token ends and the next begins.
        from rich.text import Text

        colors = ("on grey23", "on dark_blue", "on dark_green", "on dark_red")
        shown = Text()
        for i, piece in enumerate(pieces):
            shown.append(piece, style=colors[i % 4])
        out.print(shown)
    else:
        out.print(repr(pieces), markup=False)
    out.print(f"{len(ids):,} tokens ({col.label})", style="dim")
    out.print(str(ids), style="dim", markup=False)


def _count_chat(path: str, tokenizers: list[str], models: list[str], catalog: str | None,
                json_out: bool) -> None:
    from tokcost.catalog import load_catalog
    from tokcost.chat import count_chat, load_messages

    messages = load_messages(path)
    cat = load_catalog(catalog)
    rows = []
    for model_id in models:
        entry = cat.resolve(model_id)
        if entry.chat is None:
            raise UsageError(f"model '{entry.id}' has no chat overhead in the catalog; "
                             "choose a model that has one (tokcost models show ID)")
        spec = tokenizers[0] if tokenizers else entry.tokenizer
        if not spec:
            raise UsageError(f"model '{entry.id}' names no tokenizer; pass -t SPEC")
        col = _columns([spec], [], catalog)[0] if tokenizers else Column(
            entry.id, spec, entry.tokenizer_exact, entry)
        tok = _load_tokenizers([col])[col.spec]
        result = count_chat(messages, tok, per_message=entry.chat.per_message,
                            per_name=entry.chat.per_name, reply_priming=entry.chat.reply_priming)
        rows.append((entry, col, result))
    if any(r.skipped_parts for _, _, r in rows):
        warn(f"{rows[0][2].skipped_parts} non-text parts (images, audio, tool calls) not counted")
    if json_out:
        print_json({"chat": path, "models": [
            {"id": e.id, "tokenizer": c.spec, "exact": c.exact, "messages": r.messages,
             "content_tokens": r.content_tokens, "overhead_tokens": r.overhead_tokens,
             "total": r.total, "context_window": e.context_window}
            for e, c, r in rows]})
        return
    from rich.table import Table

    table = Table(box=None, pad_edge=False)
    for name in ("model", "messages", "content", "overhead", "total", "window"):
        table.add_column(name, justify="left" if name == "model" else "right")
    for e, c, r in rows:
        share = _pct(r.total / e.context_window) if e.context_window else "-"
        table.add_row(e.id, str(r.messages), _fmt(r.content_tokens, c.exact),
                      str(r.overhead_tokens), _fmt(r.total, c.exact), share)
    out.print(table)


def register(app: typer.Typer) -> None:
    app.command("count", epilog=EPILOG)(count)
