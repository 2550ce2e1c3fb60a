"""A report as people read it: the cells of the terminal tables and chart, Markdown, CSV,
all from one place (≈ marks every number a proxy tokenizer gave)."""

from __future__ import annotations

import csv
import io
import statistics
from dataclasses import dataclass
from decimal import Decimal

from tokcost.inflation.measure import GroupReport, Measurement, Meter, Report, Row
from tokcost.units import format_usd

_SECTION_ROWS = 30  # past this many texts, a table groups its rows by script
CSV_HEADER = ("kind", "code", "name", "script", "tokenizer", "tokens", "exact", "bytes", "chars",
              "words", "lines", "bytes_per_token", "chars_per_token", "words_per_token",
              "tokens_per_line", "premium", "cost_usd", "cost_ratio")


def _num(x: float | Decimal | None, fmt: str = "{:.2f}", none: str = "–") -> str:
    return none if x is None else fmt.format(x)


def _mark(r: Measurement, cell: str) -> str:
    """≈ in front of a number a proxy tokenizer gave ("–": nothing to mark)."""
    return cell if r.exact or cell == "–" else f"≈{cell}"


def _cost(r: Measurement) -> str:
    return _mark(r, "–" if r.cost_usd is None else format_usd(r.cost_usd))


def name(meter: Meter) -> str:
    return meter.label if meter.exact else f"≈{meter.label}"


@dataclass(frozen=True)
class TableView:
    """One group on one meter: ``sections`` of (is the baseline, cells) rows under an
    optional heading; the first ``text_columns`` cells are text; ``note``: the cost."""

    title: str
    header: tuple[str, ...]
    text_columns: int
    sections: tuple[tuple[str | None, tuple[tuple[bool, tuple[str, ...]], ...]], ...]
    note: str | None


@dataclass(frozen=True)
class ChartView:
    """Bars of every meter side by side: (name, ((premium, shown), ...)) per text."""

    title: str
    legend: tuple[str, ...]
    rows: tuple[tuple[str, tuple[tuple[float, str], ...]], ...]


def table(group: GroupReport, meter: Meter) -> TableView:
    """The terminal table of ``group`` on ``meter``, its rows by that meter's premium."""
    per_line = group.kind != "prose"
    rows = group.rows_by(meter.label)
    sentences = any(r.result(meter.label).sentence_premiums for r in rows)
    header: tuple[str, ...] = ("code", "format") if per_line else ("code", "language", "script")
    header += ("tokens", "bytes/tok", "chars/tok", "tok/line" if per_line else "words/tok",
               "premium")
    header += ("median/sent", "p95/sent", "sent >2x") if sentences else ()
    header += ("input cost",) if meter.priced else ()

    def cells(row: Row) -> tuple[bool, tuple[str, ...]]:
        r = row.result(meter.label)
        shown = [row.code, row.sample.label] + ([] if per_line else [row.sample.script or ""])
        shown += [_mark(r, f"{r.tokens:,}"), _num(r.bytes_per_token), _num(r.chars_per_token),
                  _num(r.tokens_per_line if per_line else r.words_per_token),
                  _mark(r, _num(r.premium, "{:.2f}x"))]
        p = r.sentence_premiums
        if sentences:
            shown += (["–", "–", "–"] if p is None else
                      [_mark(r, f"{p.median:.2f}x"), _mark(r, f"{p.p95:.2f}x"), f"{p.over_2x:.0%}"])
        shown += [_cost(r)] if meter.priced else []
        return row.code == group.baseline, tuple(shown)

    sections = tuple((title, tuple(cells(r) for r in part))
                     for title, part in _sections(rows, meter, by_script=not per_line))
    return TableView(f"{group.kind} · {name(meter)} · premium vs {group.baseline}", header,
                     2 if per_line else 3, sections,
                     _cost_sentence(group, meter) if meter.priced else None)


def _sections(rows: tuple[Row, ...], meter: Meter,
              by_script: bool) -> list[tuple[str | None, tuple[Row, ...]]]:
    """One run by premium, or past ``_SECTION_ROWS`` texts one section per script."""
    if not by_script or len(rows) <= _SECTION_ROWS:
        return [(None, rows)]
    scripts: dict[str, list[Row]] = {}
    for row in rows:
        scripts.setdefault(row.sample.script or "unknown script", []).append(row)
    median = {script: statistics.median(r.result(meter.label).premium or 0.0 for r in items)
              for script, items in scripts.items()}
    ordered = sorted(scripts.items(), key=lambda kv: (-median[kv[0]], kv[0]))
    return [(f"{script}: {len(items)} text{'s' if len(items) > 1 else ''}, median "
             f"{median[script]:.2f}x", tuple(items)) for script, items in ordered]


def _cost_sentence(group: GroupReport, meter: Meter) -> str | None:
    top = group.rows_by(meter.label)[0]
    base = next(r for r in group.rows if r.code == group.baseline)
    t, b = top.result(meter.label), base.result(meter.label)
    if top is base or t.cost_ratio is None:
        return None
    return (f"On {meter.label}, the {top.sample.label} version costs "
            f"{_mark(t, f'{t.cost_ratio:.1f}x')} the {base.sample.label} one "
            f"({_cost(t)} vs {_cost(b)} as input).")


def chart(group: GroupReport, meters: tuple[Meter, ...]) -> ChartView:
    """The terminal chart of ``group``: rows by premium on the first meter."""
    bars = tuple((row.sample.display_name, tuple(
        (r.premium or 0.0, _mark(r, f"{r.premium or 0.0:.2f}x"))
        for r in (row.result(m.label) for m in meters))) for row in group.rows)
    return ChartView(f"{group.kind}: premium vs {group.baseline}",
                     tuple(name(m) for m in meters), bars)


def markdown(report: Report) -> str:
    """One table per group, every meter side by side, rows by the first one's premium."""
    lines: list[str] = []
    for g in report.groups:
        head = ["code", "language" if g.kind == "prose" else "format", "script"]
        head += [f"{name(m)} {column}" for m in report.meters
                 for column in ("tokens", "premium", "input cost")[:3 if m.priced else 2]]
        lines += [f"### {g.kind} (premium vs `{g.baseline}`)", "", "| " + " | ".join(head) + " |",
                  "|" + "|".join("---" if i < 3 else "---:" for i in range(len(head))) + "|"]
        for row in g.rows:
            cells = [f"`{row.code}`", row.sample.label, row.sample.script or ""]
            for m in report.meters:
                r = row.result(m.label)
                cells += [_mark(r, f"{r.tokens:,}"), _mark(r, _num(r.premium, "{:.2f}x"))]
                cells += [_cost(r)] if m.priced else []
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def to_csv(report: Report) -> str:
    """One row per text and meter: each meter's rows by its own premium."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for g in report.groups:
        for m in report.meters:
            for row in g.rows_by(m.label):
                r = row.result(m.label)
                writer.writerow([
                    g.kind, row.code, row.sample.label, row.sample.script or "", r.meter, r.tokens,
                    r.exact, row.bytes, row.chars, "" if row.words is None else row.words,
                    row.lines, _num(r.bytes_per_token, "{:.4f}"), _num(r.chars_per_token, "{:.4f}"),
                    *(_num(x, "{:.4f}", "") for x in (r.words_per_token, r.tokens_per_line)),
                    _num(r.premium, "{:.4f}", ""), "" if r.cost_usd is None else str(r.cost_usd),
                    _num(r.cost_ratio, "{:.4f}", "")])
    return out.getvalue()
