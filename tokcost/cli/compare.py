"""``tokcost compare``: who pays more tokens for the same meaning."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

import tokcost
from tokcost.cli.console import err, escape_controls, out, print_json, table, warn, with_progress
from tokcost.cli.options import CatalogOpt, JsonOpt, PlotForceOpt, TokenizersOpt
from tokcost.errors import UsageError, install_hint
from tokcost.units import spec_label

EPILOG = """
Examples:

  tokcost compare
      the built-in corpora with o200k_base
  tokcost compare --builtin -t o200k_base -t cl100k_base --kind prose
  tokcost compare --builtin -m gpt-4o -m claude-sonnet-4-5
      token premium and cost per model
  tokcost compare my-texts/ --baseline de
      a folder of parallel <lang>.txt files
  tokcost compare flores200_dataset/ -t cl100k_base
      FLORES-200 as distributed (dev+devtest)
  tokcost compare udhr/data/txt/ --plot udhr.png
      UDHR in Unicode's translations
  tokcost compare en.txt hi.txt sw.txt -t cl100k_base
      a list of files
  translate en.txt --to de | tokcost compare en.txt -
      stdin is the text 'stdin'
  tokcost compare --builtin -t bpe:en-only.bpe -t bpe:all.bpe --plot bpe.png
  tokcost compare --builtin --json | jq '.groups[0].samples[0]'
"""

_BAR = 36  # characters for the largest premium in the terminal chart
_CHART_ROWS = 30  # past this many, the terminal chart would scroll away: --plot draws them
_COLORS = ("cyan", "magenta", "yellow", "green", "blue", "red")


def _print_tables(result: Any, chart: bool) -> None:
    from rich.text import Text
    for tables, bars in result.tables():
        for view in tables:
            grid = table(*view.header, text=view.text_columns)
            grid.title = Text(escape_controls(view.title))  # a file's code, never markup
            for heading, rows in view.sections:
                if heading is not None:
                    if grid.rows:
                        grid.add_section()
                    grid.add_row("", Text(heading, style="bold"))
                for baseline, cells in rows:
                    # names come from file names: shown as they are, never as markup
                    grid.add_row(*(Text(escape_controls(c)) for c in cells),
                                 style="bold" if baseline else None)
            out.print(grid)
            if view.note:
                out.print(view.note, markup=False)
        if chart and len(bars.rows) <= _CHART_ROWS:
            _print_chart(bars)
        elif chart:
            err.print(f"no terminal chart for {len(bars.rows)} texts; --plot FILE draws them all")


def _print_chart(chart: Any) -> None:
    """Bars of every tokenizer side by side, rows by premium on the first one."""
    from rich.cells import cell_len
    from rich.text import Text
    title, legend, rows = chart.title, chart.legend, chart.rows
    top = max((p for _, bars in rows for p, _ in bars), default=0.0) or 1.0
    names = [escape_controls(name) for name, _ in rows]  # a file name, never markup
    width = max(map(cell_len, names), default=0)
    head = Text(escape_controls(title), style="bold")
    for i, name in enumerate(legend):
        head.append("  ").append(f"■ {name}", style=_COLORS[i % len(_COLORS)])
    out.print(head)
    for shown, (_, bars) in zip(names, rows, strict=True):
        for i, (premium, label) in enumerate(bars):
            name = shown if i == 0 else ""
            line = Text(name + " " * (width - cell_len(name)) + " ")
            bar = "█" * max(1, round(premium / top * _BAR))
            out.print(line.append(bar, style=_COLORS[i % len(_COLORS)]).append(f" {label}"))


def compare(
    sources: Annotated[list[Path] | None, typer.Argument(help="A folder of parallel <lang>.txt "
        "files (or FLORES-200, or UDHR in Unicode's data/txt, as distributed), or files (en.txt "
        "hi.txt ...; '-' reads stdin). Default: the built-in corpora.")] = None,
    builtin: Annotated[bool, typer.Option(
        "--builtin", help="Use the corpora shipped with tokcost.")] = False,
    tokenizers: TokenizersOpt = None,
    models: Annotated[list[str] | None, typer.Option("--model", "-m", help="Catalog model "
        "(repeatable): its tokenizer, and the cost of each version as input at its price.")] = None,
    baseline: Annotated[str, typer.Option(
        "--baseline", help="Language code the premium is relative to.")] = "en",
    kinds: Annotated[list[str] | None, typer.Option("--kind", "-k", metavar="<kind>",
        help="prose, code or data (repeatable; built-in corpora or a folder with index.yaml). "
        "Default: all.")] = None,
    split: Annotated[str, typer.Option("--split", metavar="<dev|devtest|both>", help="FLORES-200 "
        "folders: the dev or devtest sentences, or both (as Petrov et al. 2023).")] = "both",
    json_out: JsonOpt = False,
    csv_out: Annotated[bool, typer.Option(
        "--csv", help="Print CSV: one row per text and tokenizer.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print Markdown tables.")] = False,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write a bar chart of the premiums to "
        f"a .png or .svg file (needs: {install_hint('plot')}).")] = None,
    force: PlotForceOpt = False,
    no_chart: Annotated[bool, typer.Option(
        "--no-chart", help="Tables only, no terminal bar chart.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 1 on any warning: texts not "
        "parallel, empty, skipped as binary, or with invalid UTF-8.")] = False,
    catalog: CatalogOpt = None) -> None:
    """Token inflation across languages, scripts, code and data formats.

    For every text: tokens, bytes/token, chars/token, words/token (where words are
    whitespace-delimited), tokens/line (code and data), and the premium: tokens(X) /
    tokens(baseline) on the same content (Petrov et al. 2023). With -m, the cost of each
    version as input on that model.
    """
    if sum((json_out, csv_out, markdown)) > 1:
        raise UsageError("pick one of --json, --csv, --markdown")
    result = with_progress("counting", tokcost.compare, tokcost.CompareRequest.of(
        sources=tuple(sources or ()), builtin=builtin, baseline=baseline,
        kinds=tuple(kinds or ()), split=split, tokenizers=tuple(tokenizers or ()),
        models=tuple(models or ()), catalog=catalog, plot=plot, force=force))
    for message in result.warnings:
        warn(message)
    if result.plot is not None:
        err.print(f"wrote {result.plot}")
    for m in () if json_out else (m for m in result.report.meters if not m.exact):
        err.print(f"note: ≈ {m.label} is counted with a proxy tokenizer ({spec_label(m.spec)}); "
                  "its numbers are approximate")
    if json_out:
        print_json(result.to_dict())
    elif csv_out or markdown:
        sys.stdout.write(result.render("csv" if csv_out else "markdown"))
    else:
        _print_tables(result, chart=not no_chart)
    if strict and result.warnings:
        err.print(f"{len(result.warnings)} warning(s) with --strict")
        raise typer.Exit(code=1)
