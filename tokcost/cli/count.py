"""``tokcost count`` / ``tokcount``: tokens in files, folders and stdin."""

from __future__ import annotations

import csv
import itertools
import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

import tokcost
from tokcost import units
from tokcost.cli import console
from tokcost.cli import options as opt
from tokcost.cli.console import error, out, print_json, progress_enabled, table, warn
from tokcost.errors import UsageError

if TYPE_CHECKING:
    from tokcost import CountRequest

EPILOG = """
Examples:

  tokcount README.md
      count one file with o200k_base (GPT-4o)
  tokcost count src/ -t cl100k_base -t o200k_base
      a folder, two tokenizers side by side
  cat prompt.txt | tokcount -m gpt-4o
      stdin, and the share of gpt-4o's context window
  tokcost count docs/ --include '*.md' --json
      machine-readable, Markdown files only
  tokcost count . --by lang --top 5
      the five languages with the most tokens (also --by ext, --by dir)
  tokcost count --chat messages.json -m gpt-4o
      a chat request with its per-message overhead
  tokcost count --chat - -m gpt-4o < messages.json
      a chat request from stdin
  tokcost count --request body.json -m gpt-4o -m claude-sonnet-4-5
      a whole request body (messages, tools, images) as each provider bills it
  tokcount notes.txt --truncate 100
      print the text cut to its first 100 tokens
  tokcount a.txt b.txt --tokens --json
      each file's ids, pieces and text as JSON
  tokcost count 'data/**/*.txt' --engine dask --jobs 4
      4 Dask worker processes here
  tokcost count s3://bucket/docs/ --engine dask \\
    --scheduler tcp://10.0.0.5:8786
      files in S3, counted on a running Dask cluster
"""


def _pct(share: float) -> str:
    """0.0213 -> '2.13%'; under 1% the shares rule (a positive share never reads 0%)."""
    return f"{share:.2%}" if share >= 0.01 else units.format_percent(share * 100)


def _approx(text: str, exact: bool) -> str:
    return text if exact else f"≈{text}"  # ≈ marks a proxy tokenizer's figures


def _fmt(n: int, exact: bool) -> str:
    return _approx(f"{n:,}", exact)


LIST_HINT = "--verbose lists them"  # ends a line that sums skipped files up
FLAG_WORDS = {"include": "--include", "exclude": "--exclude", "gitignore=False": "--no-gitignore"}
_SHOWS_WITH_JSON = frozenset({"--tokens", "--truncate"})


def refuse_conflicts(*, paths: list[str], chat: str | None, flags: dict[str, bool],
                     chat_flag: str = "--chat") -> None:
    """One usage error for output options that cannot all be honoured (``flags``: given?)."""
    given = [flag for flag, on in flags.items() if on]
    if chat is not None:
        what = "message list" if chat_flag == "--chat" else "request body"
        if paths:
            raise UsageError(f"{chat_flag} counts one {what}, not files too ({paths[0]}); "
                             "count the files in a run of their own")
        shown = [f for f in given if f != "--json"]
        if shown:
            raise UsageError(f"{chat_flag} prints its own table or --json; drop {shown[0]}")
        return
    for first, second in itertools.combinations(given, 2):
        if not ("--json" in (first, second) and {first, second} - {"--json"} <= _SHOWS_WITH_JSON):
            raise UsageError(f"{first} and {second} cannot be combined: pick one output")


PathsArg = Annotated[list[str] | None, typer.Argument(metavar="PATH...",
    help="Files or folders to count; '-' (or a pipe) reads stdin.")]
ModelsOpt = Annotated[list[str] | None, typer.Option(
    "--model", "-m", metavar="ID", help="Model id from the catalog "
    "(repeatable): counts with its tokenizer and shows the share of its context window.")]
CsvOpt = Annotated[bool, typer.Option("--csv", help="Print CSV: one row per file.")]
TotalOpt = Annotated[bool, typer.Option(
    "--total", help="Print only the total token count (first tokenizer).")]
JobsOpt = Annotated[int | None, typer.Option(
    "--jobs", "-j", min=1, metavar="N",
    help="Parallel workers: threads for tiktoken/toktok-rs/tokenizers, whose cores release "
    "the GIL, else processes (default: a thread per CPU when they all release it, else 1); "
    "with --engine dask, one worker per CPU.")]
EngineOpt = Annotated[str, typer.Option(
    "--engine", help="local (this process, --jobs workers) or dask (a Dask cluster: "
    "--scheduler ADDRESS, else --jobs local worker processes; inputs may be globs or fsspec "
    "URLs such as s3://...).")]
IncludeOpt = Annotated[list[str] | None, typer.Option("--include", metavar="GLOB",
    help="Only files matching this glob (repeatable).")]
ExcludeOpt = Annotated[list[str] | None, typer.Option("--exclude", metavar="GLOB",
    help="Leave out files matching this glob (repeatable).")]
NoGitignoreOpt = Annotated[bool, typer.Option(
    "--no-gitignore", help="Also count files .gitignore excludes.")]
FollowOpt = Annotated[bool, typer.Option(
    "--follow", help="Read the symlinks met in folders (default: skipped; a link to a device or "
    "FIFO never is).")]
AllowSpecialOpt = Annotated[bool, typer.Option(
    "--allow-special", help="Encode special-token text such as <|endoftext|> as the special "
    "token (default: plain text).")]
ChatOpt = Annotated[str | None, typer.Option(
    "--chat", metavar="FILE", help="Count an OpenAI-style JSON message "
    "list ('-': stdin), with the model's per-message overhead (default model gpt-4o).")]
RequestOpt = Annotated[str | None, typer.Option(
    "--request", metavar="FILE", help="Count a whole request body ('-': stdin): OpenAI Chat "
    "Completions or Responses, Anthropic Messages, with tools, images and documents, by each "
    "provider's published rules (default model: the body's); --json marks each part exact or "
    "approximate.")]
TokensOpt = Annotated[bool, typer.Option(
    "--tokens", help="Show the token pieces of each input (one tokenizer: -t or -m once). "
    "With --json: {tokenizer, max_tokens, files: [{path, count, input_tokens, truncated, "
    "ids, pieces, text, invalid_utf8_bytes}], skipped}.")]
TruncateOpt = Annotated[int | None, opt.count_option("--truncate", signed=False,
    help="Print each input cut to its first COUNT tokens (100, 8k, 8Ki; --json: the --tokens "
    "document, text cut to COUNT tokens).")]
ByOpt = Annotated[str | None, typer.Option(
    "--by", metavar="KEY", help="One row per ext (extension), lang (language: the name "
    "Pygments gives the file name, as pygmentize -N) or dir (the first path component below "
    "each folder named, as du -d 1 lists it: src/app/, src/main.py), with files, bytes and "
    "tokens; --json adds groups[].")]
SortOpt = Annotated[str | None, typer.Option(
    "--sort", metavar="KEY", help="Order the rows: tokens (most first, first tokenizer), "
    "bytes (most first) or name (default: as read; --by and --top: by tokens).")]
TopOpt = Annotated[int | None, opt.count_option("--top", signed=False, help="Show the first "
    "COUNT rows (sorted by tokens unless --sort), the rest summed up in one '(N more)' row; "
    "--json: others.")]
VerboseOpt = Annotated[bool, typer.Option(
    "--verbose", help="List every skipped file. By default several binary files, or several "
    "paths to files already counted, are summed up in one line.")]


def count(paths: PathsArg = None, tokenizers: opt.TokenizersOpt = None, models: ModelsOpt = None,
    json_out: opt.JsonOpt = False, csv_out: CsvOpt = False, total_only: TotalOpt = False,
    jobs: JobsOpt = None, engine: EngineOpt = "local", scheduler: opt.SchedulerOpt = None,
    timeout: opt.DaskTimeoutOpt = None, include: IncludeOpt = None, exclude: ExcludeOpt = None,
    no_gitignore: NoGitignoreOpt = False, follow: FollowOpt = False,
    allow_special: AllowSpecialOpt = False, chat: ChatOpt = None, tokens: TokensOpt = False,
    truncate: TruncateOpt = None, by: ByOpt = None, sort: SortOpt = None, top: TopOpt = None,
    catalog: opt.CatalogOpt = None, verbose: VerboseOpt = False,
    version: opt.VersionOpt = False, request: RequestOpt = None) -> None:
    """Count tokens in files, folders (recursive, .gitignore-aware) and stdin.

    A file named twice (directly, through a folder or a link) is counted once, as du
    counts it; a symlink, FIFO, socket or device inside a folder is skipped with the reason
    (named directly, a FIFO such as <(cmd) is read).
    """
    if chat is not None and request is not None:
        raise UsageError("--chat and --request cannot be combined: a request body holds its "
                         "messages; give one")
    refuse_conflicts(paths=list(paths or []), chat=chat or request, flags={
        "--json": json_out, "--csv": csv_out, "--total": total_only, "--tokens": tokens,
        "--truncate": truncate is not None}, chat_flag="--chat" if request is None else "--request")
    view = {"by": by, "sort": sort, "top": top}
    shaping = next((f"--{k}" for k, v in view.items() if v is not None), None)
    whole = chat if chat is not None else request
    if shaping and (whole is not None or tokens or truncate is not None or total_only):
        other = ("--chat" if chat is not None else "--request" if request is not None
                 else "--tokens" if tokens else "--truncate" if truncate is not None else "--total")
        raise UsageError(f"{shaping} shapes the table of counts, which {other} does not print; "
                         f"drop one of them")
    selection = {"tokenizers": tokenizers or [], "models": models or [], "catalog": catalog}
    if chat is not None:
        _print_chat(tokcost.count_chat(tokcost.ChatRequest.of(chat=chat, **selection)), json_out)
        return
    if request is not None:
        _print_request(tokcost.count_chat(tokcost.ChatRequest.of(
            chat=request, body=True, **selection)), json_out)
        return
    inputs = {"paths": list(paths or []) or ([] if sys.stdin.isatty() else ["-"]),
              "include": include or [], "exclude": exclude or [], "gitignore": not no_gitignore,
              "follow": follow}
    result: Any  # the tokens (TokensResult) or the counts (CountResult)
    if tokens or truncate is not None:
        given = [*(tokenizers or []), *(models or [])]
        if len(given) > 1:  # one tokenizer's tokens, or the first would pass for all
            raise UsageError(f"{'--tokens' if tokens else '--truncate'} takes one tokenizer, "
                             f"got {len(given)} ({', '.join(given)}); run it once per tokenizer")
        result = tokcost.tokenize(tokcost.TokenizeRequest.of(
            **inputs, **selection, allow_special=allow_special, max_tokens=truncate))
    else:
        result = _count(tokcost.CountRequest.of(
            **inputs, **selection, **view, allow_special=allow_special, engine=engine,
            jobs=jobs, scheduler=scheduler, timeout=timeout))
    for note in result.notes(verbose=verbose, hint=LIST_HINT, names=FLAG_WORDS):
        warn(note)
    result.raise_for_empty()
    if json_out:  # the output modes exclude each other (refuse_conflicts)
        print_json(result.to_dict())
    elif truncate is not None:
        # The cut text, ending a line even when it does not (as ttok -t N).
        for i, f in enumerate(result.files):
            if len(result.files) > 1:
                sys.stdout.write(("\n" if i else "") + f"==> {f.path} <==\n")
            sys.stdout.write(f.text if f.text.endswith("\n") else f.text + "\n")
        sys.stdout.flush()
    elif tokens:
        _show_pieces(result)
    elif total_only:
        out.print(str(result.total_tokens()))
    elif csv_out:
        _print_csv(result)
    else:
        _print_table(result)
    if result.unreadable:  # exit 1 after the output, as wc does
        error(result.unreadable)
        raise typer.Exit(code=1)


def _count(request: CountRequest) -> Any:
    if not progress_enabled():
        return tokcost.count(request)
    import rich.progress as rp
    with rp.Progress(rp.SpinnerColumn(), rp.TextColumn("{task.description}"), rp.BarColumn(),
                     rp.DownloadColumn(), rp.TransferSpeedColumn(), rp.TimeRemainingColumn(),
                     console=console.err, transient=True) as bar:
        task = bar.add_task("counting", total=None)

        def on_progress(stage: str, done: int, total: int) -> None:
            if stage == "walk":
                bar.update(task, description=f"listing {done:,} files")
            else:
                bar.update(task, description="counting", completed=done, total=total or None)

        return tokcost.count(request, progress=on_progress)


def _print_csv(result: Any) -> None:
    cols, by = result.tokenizers, result.view.by
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:  # a non-UTF-8 file name goes out as its bytes, as it was
        reconfigure(errors="surrogateescape")
    writer = csv.writer(sys.stdout, lineterminator="\n")
    # csv does not quote a lone "\r", which readers take for a line end: quote its row.
    quoted = csv.writer(sys.stdout, lineterminator="\n", quoting=csv.QUOTE_ALL)
    writer.writerow([by or "path", *(["files"] if by else []), "bytes", "chars",
                     *[c.label for c in cols]])
    shown, rest = result.rows()
    for r in [*shown, *([rest] if rest else [])]:
        name = _name(r)
        (quoted if "\r" in name else writer).writerow(
            [name, *([r.files] if by else []), r.bytes, r.chars, *[r.tokens[c.spec] for c in cols]])
    writer.writerow(["TOTAL", *([len(result.files)] if by else []), result.total_bytes,
                     result.total_chars, *[result.total_tokens(c) for c in cols]])


def _name(row: Any) -> str:
    return str(row.path if hasattr(row, "path") else row.name)  # a file's, or a group's


_BY_HEADER = {"ext": "extension", "lang": "language", "dir": "folder"}


def _print_table(result: Any) -> None:
    from rich.text import Text
    files, by = result.files, result.view.by
    if not files:  # the warning says why; a header over no rows would say nothing
        return
    shown_rows, rest = result.rows()
    shown = table(footer=len(files) > 1 or bool(by))
    n = len(files)
    shown.add_column(_BY_HEADER[by] if by else "file",
                     footer=f"total ({n:,} file{'s' * (n != 1)})", overflow="fold")
    if by:
        shown.add_column("files", justify="right", footer=f"{len(files):,}")
    shown.add_column("bytes", justify="right", footer=f"{result.total_bytes:,}")
    shown.add_column("chars", justify="right", footer=f"{result.total_chars:,}")
    for c in result.tokenizers:
        shown.add_column(_approx(c.label, c.exact), justify="right", style="bold",
                         footer=_fmt(result.total_tokens(c), c.exact))
    for r in [*shown_rows, *([rest] if rest else [])]:
        # Text, not markup: 'a[red]b.txt' keeps its brackets; a newline would split the row.
        name = _name(r)
        shown.add_row(Text(console.escape_controls(name)), *([f"{r.files:,}"] if by else []),
                      f"{r.bytes:,}", f"{r.chars:,}",
                      *[_fmt(r.tokens[c.spec], c.exact) for c in result.tokenizers])
    out.print(shown)
    for w in result.windows:
        if w.context_window and w.context_share is not None:
            mark = (("" if w.exact else " (≈: approximate, proxy tokenizer)")
                    + ("" if w.fits else " — does not fit"))
            share = _approx(_pct(w.context_share), w.exact)
            out.print(f"{w.id}: {_fmt(w.tokens, w.exact)} tokens = {share} of its "
                      f"{w.context_window:,}-token context window{mark}")


def _show_pieces(result: Any) -> None:
    for f in result.files:
        if len(result.files) > 1:  # as head(1) names each input
            out.print(f"==> {f.path} <==", markup=False, highlight=False)
        if out.is_terminal:
            # Alternating backgrounds show where each token ends.
            from rich.text import Text
            colors = ("on grey23", "on dark_blue", "on dark_green", "on dark_red")
            out.print(Text.assemble(*((p, colors[i % 4]) for i, p in enumerate(f.pieces))))
        else:
            out.print(repr(list(f.pieces)), markup=False)
        choice = f.tokenizer
        out.print(f"{_fmt(len(f.ids), choice.exact)} tokens ({_approx(choice.label, choice.exact)}"
                  + ("" if choice.exact else f", proxy {units.spec_label(choice.spec)}") + ")",
                  style="dim", markup=False)
        out.print(str(list(f.ids)), style="dim", markup=False)


def _print_chat(result: Any, json_out: bool) -> None:
    for note in result.warnings:
        warn(note)
    if json_out:
        print_json(result.to_dict())
        return
    # The model sets the per-message overhead; the tokenizer (its own, or -t) counted.
    shown = table("model", "tokenizer", "messages", "content", "overhead", "total", "window")
    for m in result.models:
        c = m.counted
        share = "-" if m.context_share is None else _approx(_pct(m.context_share), m.exact)
        shown.add_row(m.id, units.spec_label(m.tokenizer), str(c.messages),
                      _fmt(c.content_tokens, m.exact), str(c.overhead_tokens),
                      _fmt(c.total, m.exact), share)
    out.print(shown)


def _print_request(result: Any, json_out: bool) -> None:
    for note in result.warnings:
        warn(note)
    if json_out:
        print_json(result.to_dict())
        return
    shown = table("model", "part", "tokens", "window", text=2)
    for m in result.models:
        for p in m.counted.parts:
            shown.add_row(m.id, p.kind, _fmt(p.tokens, p.exact), "")
        share = "-" if m.context_share is None else _pct(m.context_share)
        if m.counted.unknown:  # the warnings say which and why
            share += f" ({m.counted.unknown} not counted)"
        shown.add_row(f"[bold]{m.id}[/bold]", "[bold]total[/bold]",
                      f"[bold]{_fmt(m.counted.total, m.counted.exact)}[/bold]", share)
    out.print(shown)
