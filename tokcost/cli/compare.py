"""``tokcost compare``: who pays more tokens for the same meaning."""

from __future__ import annotations

import csv
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

import tokcost
from tokcost.cli.console import (
    err,
    escape_controls,
    out,
    print_json,
    print_wide,
    progress_enabled,
    warn,
)
from tokcost.cli.options import CatalogOpt, JsonOpt, PlotForceOpt, TokenizersOpt
from tokcost.errors import UsageError
from tokcost.units import spec_label

if TYPE_CHECKING:
    from decimal import Decimal

    from tokcost import CompareResult, GroupReport, Measurement, Meter, Row

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
_SECTION_ROWS = 30  # past this many texts, a table groups its rows by script
_CHART_ROWS = 30  # past this many, the terminal chart would scroll away: --plot draws them


def _num(x: float | None, fmt: str = "{:.2f}") -> str:
    return "–" if x is None else fmt.format(x)


def _money(x: Decimal | None) -> str:
    return "–" if x is None else tokcost.format_usd(x)


def _mark(r: Measurement, cell: str) -> str:
    """≈ in front of a number a proxy tokenizer gave ("–": nothing to mark)."""
    return cell if r.exact or cell == "–" else f"≈{cell}"


def _name(meter: Meter) -> str:
    return meter.label if meter.exact else f"≈{meter.label}"


def _tokens(r: Measurement) -> str:
    return _mark(r, f"{r.tokens:,}")


def _premium(r: Measurement) -> str:
    return _mark(r, _num(r.premium, "{:.2f}x"))


def _cost(r: Measurement) -> str:
    return _mark(r, _money(r.cost_usd))


# ---------------------------------------------------------------------------- output


def _print_tables(result: CompareResult, chart: bool) -> None:
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    report = result.report
    for group in report.groups:
        for meter in report.meters:
            per_line = group.kind != "prose"
            table = Table(
                title=escape(f"{group.kind} · {_name(meter)} · premium vs "
                             f"{escape_controls(group.baseline)}"),
                title_justify="left",
                header_style="bold",
            )
            names = ["code", "format" if per_line else "language"]
            names += [] if per_line else ["script"]
            for name in names:
                table.add_column(name)
            for name in ("tokens", "bytes/tok", "chars/tok",
                         "tok/line" if per_line else "words/tok", "premium"):
                table.add_column(name, justify="right")
            sentences = any(r.result(meter.label).sentence_premiums for r in group.rows)
            if sentences:  # aligned sentences (FLORES-200): the premium's distribution
                for name in ("median/sent", "p95/sent", "sent >2x"):
                    table.add_column(name, justify="right")
            if meter.priced:
                table.add_column("input cost", justify="right")
            for section, rows in _sections(group, meter, by_script=not per_line):
                if section is not None:
                    if table.rows:
                        table.add_section()
                    table.add_row("", f"[bold]{section}[/bold]")
                for row in rows:
                    r = row.result(meter.label)
                    # names come from file names: shown as they are, never as markup
                    cells: list[Any] = [Text(escape_controls(row.code)),
                                        Text(escape_controls(row.sample.label))]
                    cells += [] if per_line else [row.sample.script or ""]
                    cells += [
                        _tokens(r), _num(r.bytes_per_token), _num(r.chars_per_token),
                        _num(r.tokens_per_line if per_line else r.words_per_token),
                        _premium(r),
                    ]
                    if sentences:
                        cells += _sentence_cells(r)
                    if meter.priced:
                        cells.append(_cost(r))
                    style = "bold" if row.code == group.baseline else None
                    table.add_row(*cells, style=style)
            print_wide(table)
            if meter.priced:
                _print_cost_sentence(group, meter)
        if chart and len(group.rows) <= _CHART_ROWS:
            _print_chart(group, report.meters)
        elif chart:
            err.print(f"no terminal chart for {len(group.rows)} texts; --plot FILE draws them "
                      "all", highlight=False)
        out.print()


def _sections(group: GroupReport, meter: Meter, *,
              by_script: bool) -> list[tuple[str | None, tuple[Row, ...]]]:
    """The table's rows: one run by premium, or, past ``_SECTION_ROWS`` texts (FLORES-200
    has 204), one section per script, the scripts by their median premium, largest first."""
    rows = group.rows_by(meter.label)
    if not by_script or len(rows) <= _SECTION_ROWS:
        return [(None, rows)]
    scripts: dict[str, list[Row]] = {}
    for row in rows:
        scripts.setdefault(row.sample.script or "unknown script", []).append(row)

    def median(items: list[Row]) -> float:
        return statistics.median(r.result(meter.label).premium or 0.0 for r in items)

    ordered = sorted(scripts.items(), key=lambda kv: (-median(kv[1]), kv[0]))
    return [(f"{name}: {len(items)} text{'s' if len(items) > 1 else ''}, median "
             f"{median(items):.2f}x", tuple(items)) for name, items in ordered]


def _sentence_cells(r: Measurement) -> list[str]:
    p = r.sentence_premiums
    if p is None:
        return ["–", "–", "–"]
    return [_mark(r, f"{p.median:.2f}x"), _mark(r, f"{p.p95:.2f}x"), f"{p.over_2x:.0%}"]


def _print_cost_sentence(group: GroupReport, meter: Meter) -> None:
    top = group.rows_by(meter.label)[0]
    base = next(r for r in group.rows if r.code == group.baseline)
    t, b = top.result(meter.label), base.result(meter.label)
    if top is base or t.cost_ratio is None:
        return
    out.print(
        f"On {meter.label}, the {top.sample.label} version costs "
        f"{_mark(t, f'{t.cost_ratio:.1f}x')} the {base.sample.label} one "
        f"({_cost(t)} vs {_cost(b)} as input)."
    )


def _print_chart(group: GroupReport, meters: tuple[Meter, ...]) -> None:
    """Bars of every tokenizer side by side, rows by premium on the first one."""
    colors = ["cyan", "magenta", "yellow", "green", "blue", "red"]
    from rich.cells import cell_len
    from rich.markup import escape

    top = max((r.result(m.label).premium or 0.0) for r in group.rows for m in meters) or 1.0
    # names come from file names: escaped (never markup), padded by their width on screen
    names = [escape_controls(r.sample.display_name) for r in group.rows]
    width = max(cell_len(n) for n in names)
    out.print(f"[bold]{escape(f'{group.kind}: premium vs {escape_controls(group.baseline)}')}"
              "[/bold]  " + "  ".join(f"[{colors[i % len(colors)]}]■ {escape(_name(m))}[/]"
                                      for i, m in enumerate(meters)))
    for row, shown in zip(group.rows, names, strict=True):
        for i, m in enumerate(meters):
            r = row.result(m.label)
            p = r.premium or 0.0
            name = shown if i == 0 else ""
            pad = " " * (width - cell_len(name))
            bar = "█" * max(1, round(p / top * _BAR))
            out.print(f"{escape(name)}{pad} [{colors[i % len(colors)]}]{bar}[/] "
                      f"{_mark(r, f'{p:.2f}x')}", highlight=False)


def _csv_rows(result: CompareResult) -> list[list[object]]:
    """One row per text and tokenizer: each tokenizer's rows by its own premium."""
    rows: list[list[object]] = []
    for g in result.report.groups:
        for m in result.report.meters:
            for row in g.rows_by(m.label):
                r = row.result(m.label)
                rows.append([
                    g.kind, row.code, row.sample.label, row.sample.script or "", r.meter,
                    r.tokens, r.exact, row.bytes, row.chars,
                    "" if row.words is None else row.words, row.lines,
                    _num(r.bytes_per_token, "{:.4f}"), _num(r.chars_per_token, "{:.4f}"),
                    "" if r.words_per_token is None else f"{r.words_per_token:.4f}",
                    "" if r.tokens_per_line is None else f"{r.tokens_per_line:.4f}",
                    "" if r.premium is None else f"{r.premium:.4f}",
                    "" if r.cost_usd is None else str(r.cost_usd),
                    "" if r.cost_ratio is None else f"{r.cost_ratio:.4f}",
                ])
    return rows


CSV_HEADER = [
    "kind", "code", "name", "script", "tokenizer", "tokens", "exact", "bytes", "chars",
    "words", "lines", "bytes_per_token", "chars_per_token", "words_per_token",
    "tokens_per_line", "premium", "cost_usd", "cost_ratio",
]


def _print_csv(result: CompareResult) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    writer.writerows(_csv_rows(result))


def _markdown(result: CompareResult) -> str:
    """One table per group, every tokenizer side by side, rows by the first one's premium."""
    report = result.report
    lines: list[str] = []
    for g in report.groups:
        what = "language" if g.kind == "prose" else "format"
        head = ["code", what, "script"]
        for m in report.meters:
            head += [f"{_name(m)} tokens", f"{_name(m)} premium"]
            if m.priced:
                head.append(f"{_name(m)} input cost")
        lines += [f"### {g.kind} (premium vs `{g.baseline}`)", "",
                  "| " + " | ".join(head) + " |",
                  "|" + "|".join("---" if i < 3 else "---:" for i in range(len(head))) + "|"]
        for row in g.rows:
            cells = [f"`{row.code}`", row.sample.label, row.sample.script or ""]
            for m in report.meters:
                r = row.result(m.label)
                cells += [_tokens(r), _premium(r)]
                if m.priced:
                    cells.append(_cost(r))
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def _proxy_notes(result: CompareResult) -> None:
    for m in result.report.meters:
        if not m.exact:
            err.print(f"note: ≈ {m.label} is counted with a proxy tokenizer "
                      f"({spec_label(m.spec)}); its numbers are approximate",
                      highlight=False)


# --------------------------------------------------------------------------- command


def _kind(text: str) -> str:
    """Check a --kind here, in this command's words (typer's own enum check would say
    it differently); typer then turns the checked name into a CorpusKind."""
    names = [k.value for k in tokcost.CorpusKind]
    if text not in names:
        raise UsageError(f"unknown --kind '{text}'; use one of {', '.join(names)}")
    return text


def compare(
    sources: Annotated[
        list[Path] | None,
        typer.Argument(help="A folder of parallel <lang>.txt files (or FLORES-200, or UDHR in "
                       "Unicode's data/txt, as distributed), or files (en.txt hi.txt ...; '-' "
                       "reads stdin). Default: the built-in corpora.",
                       show_default=False),
    ] = None,
    builtin: Annotated[
        bool, typer.Option("--builtin", help="Use the corpora shipped with tokcost.")
    ] = False,
    tokenizers: TokenizersOpt = None,
    models: Annotated[
        list[str] | None,
        typer.Option("--model", "-m", help="Catalog model (repeatable): its tokenizer, and "
                     "the cost of each version as input at its price.", show_default=False),
    ] = None,
    baseline: Annotated[
        str, typer.Option("--baseline", help="Language code the premium is relative to.")
    ] = "en",
    kinds: Annotated[
        list[tokcost.CorpusKind] | None,
        typer.Option("--kind", "-k", parser=_kind, metavar="<kind>",
                     help="prose, code or data (repeatable; built-in corpora or a folder "
                     "with index.yaml). Default: all.", show_default=False),
    ] = None,
    split: Annotated[
        tokcost.FloresSplit,
        typer.Option("--split", help="FLORES-200 folders: the dev or devtest sentences, or "
                     "both (as Petrov et al. 2023)."),
    ] = tokcost.FloresSplit.BOTH,
    json_out: JsonOpt = False,
    csv_out: Annotated[bool, typer.Option("--csv", help="Print CSV: one row per text and "
                                          "tokenizer.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print Markdown tables.")] = False,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Write a bar chart of the premiums to a .png or .svg file "
                     "(needs: pip install 'tokcost\\[plot]').", show_default=False),
    ] = None,
    force: PlotForceOpt = False,
    no_chart: Annotated[
        bool, typer.Option("--no-chart", help="Tables only, no terminal bar chart.")
    ] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 1 on any warning: texts not parallel, empty, "
                           "skipped as binary, or with invalid UTF-8.")
    ] = False,
    catalog: CatalogOpt = None,
) -> None:
    """Token inflation across languages, scripts, code and data formats.

    For every text: tokens, bytes/token, chars/token, words/token (where words are
    whitespace-delimited), tokens/line (code and data), and the premium: tokens(X) /
    tokens(baseline) on the same content (Petrov et al. 2023). With -m, the cost of each
    version as input on that model.
    """
    if sum((json_out, csv_out, markdown)) > 1:
        raise UsageError("pick one of --json, --csv, --markdown")
    if builtin and sources:
        raise UsageError("pass either --builtin or folders/files, not both")
    result = _compare(
        sources or (), tokenizers=tokenizers or (), models=models or (), catalog=catalog,
        baseline=baseline, kinds=kinds or (), split=split, plot=plot, force=force,
    )
    for message in result.report.warnings:
        warn(message)
    if result.plot is not None:
        err.print(f"wrote {result.plot}", highlight=False)
    if not json_out:
        _proxy_notes(result)
    if json_out:
        print_json(result.to_dict())
    elif csv_out:
        _print_csv(result)
    elif markdown:
        sys.stdout.write(_markdown(result))
    else:
        _print_tables(result, chart=not no_chart)
    if strict and result.report.warnings:
        err.print(f"{len(result.report.warnings)} warning(s) with --strict", highlight=False)
        raise typer.Exit(code=1)


def _compare(sources: Sequence[Path], **request: Any) -> CompareResult:
    """``tokcost.compare``, with a progress bar on stderr when a person watches it."""
    if not progress_enabled():
        return tokcost.compare(sources, **request)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(TextColumn("counting"), BarColumn(), MofNCompleteColumn(), console=err,
                  transient=True) as progress:
        task = progress.add_task("count", total=None)

        def on_progress(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        return tokcost.compare(sources, **request, on_progress=on_progress)


def register(app: typer.Typer) -> None:
    app.command("compare", epilog=EPILOG)(compare)
