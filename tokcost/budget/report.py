"""Reports of a ``CheckResult``: JSON, GitHub annotations, Markdown, JUnit XML.

Every builder is a pure function that returns a string (or a dict for JSON) and is
deterministic: budgets in config order with the failing ones first, files by path,
rules in a fixed order, no timestamps or timings, so the output can be kept as a
golden file. The terminal table (``--format text``) is the CLI's: it draws the
cells of ``tables(result)``, the same cells the Markdown report shows.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokcost.budget.baseline import growth_percent
from tokcost.errors import UsageError
from tokcost.tokenizers import spec_label
from tokcost.units import format_usd

if TYPE_CHECKING:  # evaluate imports this module (money, and the result's to_dict)
    from tokcost.budget.evaluate import BudgetResult, CheckResult, Finding

FORMATS = ("json", "github", "markdown", "junit")
JSON_VERSION = 1
MARKER = "<!-- tokcost-check -->"  # lets a PR-comment bot find and update its comment


def money(value: Decimal) -> str:
    """USD for people, by the one rule of every command (``tokcost.units.format_usd``).

    >>> money(Decimal("0.0123456")), money(Decimal("0.000042")), money(Decimal("0.5"))
    ('$0.0123', '$0.000042', '$0.50')
    """
    return format_usd(value)


def percent(value: float, *, sign: bool = False) -> str:
    """A share or a growth in percent for people, by the spirit of the money rule: a value
    that is not zero never reads as zero. One decimal from 0.1% up; under it, two significant
    digits (a 6-token prompt is 0.0047% of a 128k window, not "0.0%"). ``sign``: growth.

    >>> percent(7.94), percent(0.0469), percent(0.0004), percent(0.0), percent(0.0996)
    ('7.9%', '0.047%', '0.00040%', '0.0%', '0.10%')
    >>> percent(70.588, sign=True), percent(0.0), percent(-0.004, sign=True)
    ('+70.6%', '0.0%', '-0.0040%')
    """
    lead = ("+" if value >= 0 else "-") if sign else ("-" if value < 0 else "")
    magnitude = abs(value)
    if not math.isfinite(magnitude) or magnitude == 0 or magnitude >= 0.1:
        return f"{lead}{magnitude:.1f}%"
    return f"{lead}{_two_digits(magnitude)}%"


# The name the package exports: count's window shares follow the same rule.
format_percent = percent


def round_percent(value: float) -> float:
    """``value`` rounded for JSON: two decimals, or two significant digits under 0.1, so a
    positive share is never stored as 0.0."""
    magnitude = abs(value)
    if not math.isfinite(magnitude) or magnitude == 0 or magnitude >= 0.1:
        return round(value, 2)
    return math.copysign(float(_two_digits(magnitude)), value)


def _two_digits(magnitude: float) -> str:
    """0 < ``magnitude`` < 0.1 with two significant digits, halves up, never in e-notation."""
    exact = Decimal(magnitude)
    top = exact.adjusted()
    shown = exact.quantize(Decimal(1).scaleb(top - 1), ROUND_HALF_UP)
    if shown.adjusted() != top:  # 0.0996 -> 0.100: rounding gained a digit; keep two
        shown = shown.quantize(Decimal(1).scaleb(top), ROUND_HALF_UP)
    return f"{shown:f}"


# --- the cells the text and Markdown reports share -------------------------------------------


@dataclass(frozen=True)
class ReportTables:
    """A report's tables as formatted cells, so every renderer shows the same values.

    ``failures``: (budget, file or None for the whole budget, rule, actual, limit), the
    file as ``path:line`` where the line it crosses its limit on is known;
    ``budgets``: (passed, budget, model, files, tokens, growth, cost/call, window),
    failing budgets first; ``changes``: (budget, file, before, now, growth), a renamed
    file as ``path (renamed from old)``.
    """

    failures: tuple[tuple[str, str | None, str, str, str], ...]
    budgets: tuple[tuple[bool, str, str, str, str, str, str, str], ...]
    changes: tuple[tuple[str, str, str, str, str], ...]
    headline: str  # "2 of 3 budgets exceeded (8 failures)", "all 3 budgets hold vs main"
    strict: str | None  # the line saying warnings count as errors, under strict
    changes_title: str = "Changes against the baseline"  # "Changes vs main" with a git base
    hint: str | None = None  # how to accept growth, when a growth limit failed


def tables(result: CheckResult) -> ReportTables:
    """The cells of ``result``'s tables; ≈ marks every number a proxy tokenizer gave."""
    approx = {b.name: _approx(b) for b in result.budgets}
    failures = tuple(
        (f.budget, f"{f.path}:{f.line}" if f.path is not None and f.line else f.path, f.rule,
         approx.get(f.budget, "") + _value(f, f.actual), _value(f, f.limit))
        for f in result.failures
    )
    budgets = tuple(
        (
            b.passed,
            b.name,
            _model(b),
            str(len(b.files)),
            _tokens(b, b.total_tokens),
            _marked(b, _growth(b.growth_percent)),
            _marked(b, money(b.cost) if b.cost is not None else "–"),
            _marked(b, percent(b.context_percent) if b.context_percent is not None else "–"),
        )
        for b in _ordered(result)
    )
    changes = tuple(
        (b.name, path, *_marked_cells(b, _change_cells(before, now)))
        for b in result.budgets
        for path, before, now in _changes(b)
    )
    title = (f"Changes vs {result.base.label}" if result.base is not None
             else "Changes against the baseline")
    return ReportTables(failures, budgets, changes, _headline(result), _strict_line(result),
                        title, _hint(result))


def _changes(b: BudgetResult) -> list[tuple[str, int | None, int | None]]:
    """``b.changes()``, with each renamed file shown (as ``new (renamed from old)``)
    even when its count did not change."""
    old = dict(b.renamed)
    rows = [(path, before, now) for path, before, now in b.changes() if path not in old]
    counts = {f.path: (f.baseline_tokens, f.tokens) for f in b.files}
    rows += [(path, *counts[path]) for path in old if path in counts]
    return [(f"{path} (renamed from {old[path]})" if path in old else path, before, now)
            for path, before, now in sorted(rows)]


def _hint(result: CheckResult) -> str | None:
    """How to accept grown files: the command, when a growth limit against a baseline
    file failed (against a git base there is no file to update)."""
    from tokcost.budget.evaluate import update_hint

    grown = any(f.rule.endswith("growth_percent") for f in result.failures)
    return f"if intended, {update_hint(result.config)}" if grown and result.base is None else None


def _ordered(result: CheckResult) -> list[BudgetResult]:
    """Failing budgets first, each group in config order."""
    return [b for b in result.budgets if not b.passed] + [b for b in result.budgets if b.passed]


def _headline(result: CheckResult) -> str:
    n = len(result.budgets)
    failed = sum(not b.passed for b in result.budgets)
    against = f" vs {result.base.label}" if result.base is not None else ""
    if failed:
        count = len(result.failures)
        return (f"{failed} of {n} budget{'s' if n != 1 else ''} exceeded "
                f"({count} failure{'s' if count != 1 else ''}){against}")
    return f"all {n} budgets hold{against}" if n != 1 else f"the budget holds{against}"


def _strict_line(result: CheckResult) -> str | None:
    if result.strict and result.notices:
        k = len(result.notices)
        s = "s" if k != 1 else ""
        # The report's own wording for its strict mode (it names the CLI's option).
        return f"{k} warning{s} treated as error{s} (--strict)"
    return None


def _model(b: BudgetResult) -> str:
    tok = _approx(b) + spec_label(b.tokenizer)
    return f"{b.model} ({tok})" if b.model else tok


def _growth(value: float | None) -> str:
    return "–" if value is None else percent(value, sign=True)


def _value(f: Finding, which: Any) -> str:
    if isinstance(which, Decimal):
        return money(which)
    if f.rule in ("context_window",):
        return percent(which)
    if f.rule.endswith("growth_percent"):
        return percent(which, sign=True)
    return f"{which:,}"


def _approx(b: BudgetResult) -> str:
    return "" if b.exact else "≈"


_NO_NUMBER = ("–", "new", "removed")


def _marked(b: BudgetResult, cell: str) -> str:
    """``cell`` with ≈ in front when a proxy tokenizer counted it ("–": nothing to mark)."""
    return cell if b.exact or cell in _NO_NUMBER else f"≈{cell}"


def _marked_cells(b: BudgetResult, cells: tuple[str, str, str]) -> tuple[str, str, str]:
    before, now, growth = cells
    return _marked(b, before), _marked(b, now), _marked(b, growth)


def _tokens(b: BudgetResult, n: int) -> str:
    return f"{_approx(b)}{n:,}"


def _change_cells(before: int | None, now: int | None) -> tuple[str, str, str]:
    if before is None:
        return "–", f"{now:,}", "new"
    if now is None:
        return f"{before:,}", "–", "removed"
    return f"{before:,}", f"{now:,}", _growth(growth_percent(now, before))


# --- JSON ----------------------------------------------------------------------------------


def _num(value: float | None) -> float | None:
    return None if value is None else round_percent(value)


def _json_value(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, float):
        return round_percent(value)  # the floats are percentages (growth, window share)
    return value


def render_json(result: CheckResult) -> dict[str, Any]:
    """The JSON report (keys documented in the README, section tokcost check)."""
    return {
        "version": JSON_VERSION,
        "passed": result.passed and not (result.strict and result.notices),
        "exit_code": result.exit_code,
        "config": result.config,
        "baseline": result.baseline if result.base is None else None,  # no file is read
        "baseline_found": result.baseline_found,
        "base": None if result.base is None else {
            "ref": result.base.ref, "commit": result.base.commit, "label": result.base.label,
        },
        "strict": result.strict,
        "summary": {
            "budgets": len(result.budgets),
            "failed_budgets": sum(not b.passed for b in result.budgets),
            "failures": len(result.failures),
            "warnings": len(result.notices),
        },
        "failures": [
            {
                "budget": f.budget,
                "rule": f.rule,
                "path": f.path,
                "actual": _json_value(f.actual),
                "limit": _json_value(f.limit),
                "line": f.line,
                "message": f.message,
            }
            for f in result.failures
        ],
        "warnings": [
            {"message": n.message, "file": n.file, "line": n.line} for n in result.notices
        ],
        "budgets": [_budget_json(b) for b in result.budgets],
    }


def _budget_json(b: BudgetResult) -> dict[str, Any]:
    budget = b.budget
    limits = {
        "max_tokens_per_file": budget.max_tokens_per_file,
        "max_total_tokens": budget.max_total_tokens,
        "max_cost_per_call": _json_value(budget.max_cost_per_call),
        "max_context_percent": budget.max_context_percent,
        "max_growth_percent": budget.max_growth_percent,
        "max_file_growth_percent": budget.max_file_growth_percent,
        "output_tokens": budget.output_tokens,
        "reserve_output_tokens": budget.reserve,
        "cached_share": str(budget.cached_share),
        "combine": budget.combine,
    }
    return {
        "name": b.name,
        "passed": b.passed,
        "model": b.model,
        "tokenizer": b.tokenizer,
        "exact": b.exact,
        "paths": list(budget.paths),
        "limits": limits,
        "total_tokens": b.total_tokens,
        "baseline_total_tokens": b.baseline_total,
        "growth_percent": _num(b.growth_percent),
        "cost_per_call_usd": None if b.cost is None else str(b.cost),
        "context_window": b.context_window,
        "context_percent": _num(b.context_percent),
        "removed_files": [{"path": p, "baseline_tokens": n} for p, n in b.removed],
        "renamed_files": [{"path": p, "from": old} for p, old in b.renamed],
        "files": [
            {
                "path": f.path,
                "bytes": f.bytes,
                "tokens": f.tokens,
                "baseline_tokens": f.baseline_tokens,
                "growth_percent": _num(f.growth_percent),
                "cost_per_call_usd": None if f.cost is None else str(f.cost),
                "context_percent": _num(f.context_percent),
            }
            for f in b.files
        ],
    }


# --- GitHub Actions --------------------------------------------------------------------------


def _escape_data(text: str) -> str:
    # Workflow-command escaping (actions/toolkit: command.ts escapeData / escapeProperty).
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _command(level: str, message: str, *, file: str | None = None, line: int | None = None,
             title: str | None = None) -> str:
    props = []
    if file:
        props.append(f"file={_escape_prop(file)}")
    if line:
        props.append(f"line={line}")
    if title:
        props.append(f"title={_escape_prop(title)}")
    joined = (" " + ",".join(props)) if props else ""
    return f"::{level}{joined}::{_escape_data(message)}"


class _Workspace:
    """Annotation paths: GitHub resolves them against the workspace, whatever folder the
    step ran in (``working-directory: svc``), so they are made relative to
    ``$GITHUB_WORKSPACE`` when the files are inside it, else to the git work tree's top,
    else to the current folder."""

    def __init__(self, result: CheckResult, workspace: str | Path | None) -> None:
        here = Path(os.path.realpath(Path.cwd()))
        self.root = Path(os.path.realpath(here / result.root))
        self.config = result.config
        given = workspace if workspace is not None else os.environ.get("GITHUB_WORKSPACE")
        self.base = here
        candidates = [Path(os.path.realpath(given))] if given else []
        candidates += [d for d in (self.root, *self.root.parents) if (d / ".git").exists()][:1]
        for folder in candidates:
            if folder == self.root or folder in self.root.parents:
                self.base = folder
                break

    def _relative(self, full: Path) -> str:
        try:
            return full.relative_to(self.base).as_posix()
        except ValueError:
            return Path(os.path.relpath(full, self.base)).as_posix()

    def file(self, path: str) -> str:
        """A path relative to the config's folder (or a notice's absolute one)."""
        return self._relative(self.root / path)

    def config_file(self) -> str:
        full = Path(os.path.realpath(Path.cwd())) / self.config
        return self._relative(Path(os.path.realpath(full.parent)) / full.name)


def render_github(result: CheckResult, *, workspace: str | Path | None = None) -> str:
    """Workflow commands: an annotation on the offending file for each failure.

    A failing file's annotation has the line where the file crosses its limit, when
    ``tokcost.check`` found it (``Finding.line``); budget-wide failures point at the
    budget's line in the config file. Paths are relative to ``workspace`` (None:
    ``$GITHUB_WORKSPACE``), else the git work tree's top, else the current folder.
    """
    where = _Workspace(result, workspace)
    config = where.config_file()
    lines = []
    for b in result.budgets:
        for f in b.failures:
            title = f"tokcost: {f.rule} (budget {f.budget})"
            if f.path is not None:
                lines.append(_command("error", f.message, file=where.file(f.path),
                                      line=f.line, title=title))
            else:
                lines.append(_command("error", f.message, file=config,
                                      line=b.budget.line, title=title))
    level = "error" if result.strict else "warning"
    for n in result.notices:
        file = n.file
        if file:
            file = config if file == result.config else where.file(file)
        lines.append(_command(level, n.message, file=file, line=n.line, title="tokcost check"))
    verdict = "FAIL" if result.exit_code else "ok"
    lines.append(f"tokcost check: {verdict}: {_headline(result)}")
    strict = _strict_line(result)
    if strict:
        lines.append(f"tokcost check: FAIL: {strict}")
    return "\n".join(lines) + "\n"


# --- Markdown ------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(result: CheckResult, *, quiet: bool = False, hide_passed: bool = False,
                    marker: bool = True, heading: str | None = None) -> str:
    """A Markdown report for a PR comment or a GitHub job summary.

    ``quiet`` keeps the verdict and the failures only; ``hide_passed`` leaves the
    budgets that hold out of the budget table. ``marker``/``heading`` let a report of
    several configs put this one under its own heading (``tokcost.budget.many``).
    """
    cells = tables(result)
    icon = "❌" if result.exit_code else "✅"
    out = [MARKER] if marker else []
    out += [heading or f"### {icon} tokcost check: {cells.headline}", ""]
    if cells.strict:
        out += [f"**{cells.strict}**", ""]
    if cells.failures:
        out += ["| budget | file | rule | actual | limit |", "|---|---|---|--:|--:|"]
        for budget, path, rule, actual, limit in cells.failures:
            out.append(
                f"| {_cell(budget)} | {_cell(f'`{path}`' if path else '(all files)')} "
                f"| `{rule}` | {actual} | {limit} |"
            )
        out.append("")
    rows = [row for row in cells.budgets if not (hide_passed and row[0])]
    if rows and not quiet:
        out += [
            "| | budget | model | files | tokens | growth | cost/call | window |",
            "|---|---|---|--:|--:|--:|--:|--:|",
        ]
        for passed, name, model, *numbers in rows:
            out.append(f"| {'✅' if passed else '❌'} | {_cell(name)} | {_cell(model)} | "
                       + " | ".join(numbers) + " |")
        out.append("")
    if cells.changes and not quiet:
        out += [f"<details><summary>{cells.changes_title}</summary>", "",
                "| budget | file | before | now | growth |", "|---|---|--:|--:|--:|"]
        for name, path, *counts in cells.changes:
            out.append(f"| {_cell(name)} | `{_cell(path)}` | {' | '.join(counts)} |")
        out += ["", "</details>", ""]
    if result.failures:
        out += ["<details><summary>Messages</summary>", ""]
        out += [f"- {_cell(f.message)}" for f in result.failures]
        out += ["", "</details>", ""]
    if result.notices and not (quiet and not result.strict):
        out += ["**Warnings**", ""]
        out += [f"- {_cell(n.message)}" for n in result.notices]
        out.append("")
    if not quiet:
        if result.base is not None:
            against = f" · vs `{result.base.label}` (`{result.base.short}`)"
        else:
            found = "" if result.baseline_found else " (not found)"
            # Limits given with paths have no config file and no baseline.
            against = f" · baseline `{result.baseline}`{found}" if result.baseline else ""
        out.append(f"<sub>config `{result.config}`{against}</sub>")
    return "\n".join(out).rstrip("\n") + "\n"


# --- JUnit XML -------------------------------------------------------------------------------


# What XML 1.0 cannot hold at all, even escaped: C0 controls but tab, newline and return;
# surrogates (a file name that is not UTF-8 decodes to them); U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for an undecodable byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def xml_text(text: str) -> str:
    r"""``text`` with what XML 1.0 forbids written as a visible escape, so the report
    stays well-formed and still names the file.

    >>> xml_text("prompts/a\x01b.md"), xml_text("ok\tstill ok")
    ('prompts/a\\x01b.md', 'ok\tstill ok')
    """
    return _NOT_XML.sub(_visible, text)


def render_junit(result: CheckResult) -> str:
    """JUnit XML: a testsuite per budget, a testcase per file and one for the whole budget.

    It follows Jenkins xunit's ``junit-10.xsd`` (no ``file`` attribute on a testcase: its
    name is the file's path), which GitLab reads too; tests/fixtures/junit-10.xsd checks it.
    """
    import xml.etree.ElementTree as ET

    against = f" vs {result.base.label}" if result.base is not None else ""
    root = ET.Element("testsuites", name=xml_text(f"tokcost check{against}"))
    total_tests = total_failures = total_errors = 0
    for b in result.budgets:
        suite = ET.SubElement(root, "testsuite", name=xml_text(b.name))
        cases: list[tuple[str, list[Finding]]] = [
            ("(budget)", [f for f in b.failures if f.path is None])
        ]
        for fr in b.files:
            cases.append((fr.path, [f for f in b.failures if f.path == fr.path]))
        for name, failures in cases:
            case = ET.SubElement(suite, "testcase", classname=xml_text(f"tokcost.{b.name}"),
                                 name=xml_text(name))
            if failures:
                # One <failure> per testcase: JUnit readers count failed testcases.
                fail = ET.SubElement(case, "failure",
                                     message=xml_text("; ".join(f.message for f in failures)),
                                     type=",".join(f.rule for f in failures))
                fail.text = xml_text("\n".join(
                    f"{f.rule}: {_approx(b)}{_value(f, f.actual)} > {_value(f, f.limit)}"
                    + (f" (from line {f.line})" if f.line else "")
                    for f in failures
                ))
        failed = sum(1 for _, failures in cases if failures)
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(failed))
        suite.set("errors", "0")
        suite.set("skipped", "0")
        total_tests += len(cases)
        total_failures += failed
    if result.notices:
        suite = ET.SubElement(root, "testsuite", name="tokcost warnings")
        for i, n in enumerate(result.notices, start=1):
            case = ET.SubElement(suite, "testcase", classname="tokcost.warnings",
                                 name=f"warning {i}")
            if result.strict:
                ET.SubElement(case, "error", message=xml_text(n.message), type="strict")
            else:
                ET.SubElement(case, "skipped", message=xml_text(n.message))
        errors = len(result.notices) if result.strict else 0
        suite.set("tests", str(len(result.notices)))
        suite.set("failures", "0")
        suite.set("errors", str(errors))
        suite.set("skipped", str(0 if result.strict else len(result.notices)))
        total_tests += len(result.notices)
        total_errors += errors
    root.set("tests", str(total_tests))
    root.set("failures", str(total_failures))
    root.set("errors", str(total_errors))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render(result: CheckResult, fmt: str) -> str:
    """The report in one of FORMATS, as text (the terminal table is the CLI's)."""
    if fmt == "json":
        import json

        return json.dumps(render_json(result), indent=2, ensure_ascii=False) + "\n"
    if fmt == "github":
        return render_github(result)
    if fmt == "markdown":
        return render_markdown(result)
    if fmt == "junit":
        return render_junit(result)
    raise UsageError(f"unknown report format {fmt!r}; use one of {', '.join(FORMATS)}",
                     param="fmt")
