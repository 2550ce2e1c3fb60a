"""Reports of a check: the cells of its tables, JSON, GitHub annotations, Markdown, JUnit XML;
each a pure, deterministic function of the results (no timestamps), kept as golden files."""

from __future__ import annotations

import html
import json
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokcost.budget.baseline import growth_percent
from tokcost.budget.config import work_tree_root
from tokcost.errors import UsageError, arg
from tokcost.units import format_percent, format_usd, round_percent, spec_label

if TYPE_CHECKING:
    from tokcost.budget.evaluate import BudgetResult, ConfigResult, Finding

FORMATS = ("json", "github", "markdown", "junit")
JSON_VERSION = 1
MARKER = "<!-- tokcost-check -->"  # lets a PR-comment bot find and update its comment
# Reports are read in CI logs and PR comments, so they name the command that accepts growth.
UPDATE_HINT = "run: tokcost check --update-baseline"
# The config files a bare `tokcost check` finds in the folder it runs in.
_FOUND_HERE = ("tokcost.yaml", "tokcost.yml", ".tokcost.yaml", "pyproject.toml")
_VERDICT = "tokcost check: "  # how a GitHub report's own verdict lines begin


def update_hint(config_display: str) -> str:
    """The command that accepts grown files: it names a config a bare check would not find."""
    found = config_display in _FOUND_HERE
    return UPDATE_HINT if found else f"run: tokcost check -c {config_display} --update-baseline"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


@dataclass(frozen=True)
class ReportTables:
    """A report's tables as formatted cells, so every renderer shows the same values:
    ``failures`` (budget, ``path:line`` or None, rule, actual, limit), ``budgets`` (passed,
    budget, model, files, tokens, growth, cost/call, window; failing first) and ``changes``
    (budget, file, before, now, growth)."""

    failures: tuple[tuple[str, str | None, str, str, str], ...]
    budgets: tuple[tuple[bool, str, str, str, str, str, str, str], ...]
    changes: tuple[tuple[str, str, str, str, str], ...]
    headline: str  # "2 of 3 budgets exceeded (8 failures)", "all 3 budgets hold vs main"
    strict: str | None  # the line saying warnings count as errors, under strict
    changes_title: str = "Changes against the baseline"  # "Changes vs main" with a git base
    hint: str | None = None  # how to accept growth, when a growth limit failed


def tables(result: ConfigResult) -> ReportTables:
    """The cells of ``result``'s tables; ≈ marks every number a proxy tokenizer gave."""
    approx = {b.name: "" if b.exact else "≈" for b in result.budgets}
    failures = tuple(
        (f.budget, f"{f.path}:{f.line}" if f.path is not None and f.line else f.path, f.rule,
         approx.get(f.budget, "") + _value(f, f.actual), _value(f, f.limit))
        for f in result.failures)
    ordered = [b for b in result.budgets if not b.passed] + [b for b in result.budgets if b.passed]
    budgets = tuple(
        (b.passed, b.name, f"{b.model} ({tok})" if b.model else tok, str(len(b.files)),
         _marked(b, f"{b.total_tokens:,}"), _marked(b, _growth(b.growth_percent)),
         _marked(b, "–" if b.cost is None else format_usd(b.cost)),
         _marked(b, "–" if b.context_percent is None else format_percent(b.context_percent)))
        for b in ordered for tok in [approx[b.name] + spec_label(b.tokenizer)])
    changes = tuple((b.name, path, *_change_cells(b, before, now))
                    for b in result.budgets for path, before, now in _changes(b))
    grown = any(f.rule.endswith("growth_percent") for f in result.failures)
    against = f"vs {result.base.label}" if result.base is not None else None
    return ReportTables(
        failures, budgets, changes, headline(result), _strict_line(result),
        f"Changes {against}" if against else "Changes against the baseline",
        f"if intended, {update_hint(result.config)}" if grown and against is None else None)


def _changes(b: BudgetResult) -> list[tuple[str, int | None, int | None]]:
    """``b.changes()`` and every renamed file, as ``new (renamed from old)``."""
    old = dict(b.renamed)
    rows = [(path, before, now) for path, before, now in b.changes() if path not in old]
    counts = {f.path: (f.baseline_tokens, f.tokens) for f in b.files}
    rows += [(path, *counts[path]) for path in old if path in counts]
    return [(f"{path} (renamed from {old[path]})" if path in old else path, before, now)
            for path, before, now in sorted(rows)]


def headline(result: ConfigResult, show: Callable[[str], str] = str) -> str:
    """``2 of 3 budgets exceeded (8 failures)``, ``all 3 budgets hold vs main``; ``show``
    writes the names (Markdown shows them as code)."""
    n = len(result.budgets)
    failed = sum(not b.passed for b in result.budgets)
    against = f" vs {show(result.base.label)}" if result.base is not None else ""
    if failed:
        return (f"{failed} of {_plural(n, 'budget')} exceeded "
                f"({_plural(len(result.failures), 'failure')}){against}")
    return f"all {n} budgets hold{against}" if n != 1 else f"the budget holds{against}"


def run_headline(results: Sequence[ConfigResult], show: Callable[[str], str] = str) -> str:
    """``1 of 3 configs failed (svc/tokcost.yaml)``, ``all 3 configs hold``."""
    failed = [show(r.config) for r in results if r.exit_code]
    if failed:
        return f"{len(failed)} of {_plural(len(results), 'config')} failed ({', '.join(failed)})"
    return f"all {_plural(len(results), 'config')} hold" if results else "no configs"


def _strict_line(result: ConfigResult) -> str | None:
    if not (result.strict and result.notices):
        return None
    s = "s" if len(result.notices) != 1 else ""
    # The report's own wording for its strict mode (it names the CLI's option).
    return f"{len(result.notices)} warning{s} treated as error{s} (--strict)"


def _growth(value: float | None) -> str:
    return "–" if value is None else format_percent(value, sign=True)


def _value(f: Finding, which: Any) -> str:
    if isinstance(which, Decimal):
        return format_usd(which)
    if f.rule == "context_window":
        return format_percent(which)
    return format_percent(which, sign=True) if f.rule.endswith("growth_percent") else f"{which:,}"


def _marked(b: BudgetResult, cell: str) -> str:
    """``cell`` with ≈ in front when a proxy tokenizer counted it ("–": nothing to mark)."""
    return cell if b.exact or cell in ("–", "new", "removed") else f"≈{cell}"


def _change_cells(b: BudgetResult, before: int | None, now: int | None) -> tuple[str, str, str]:
    if before is None:
        cells = ("–", f"{now:,}", "new")
    elif now is None:
        cells = (f"{before:,}", "–", "removed")
    else:
        cells = (f"{before:,}", f"{now:,}", _growth(growth_percent(now, before)))
    return _marked(b, cells[0]), _marked(b, cells[1]), _marked(b, cells[2])


def _json_value(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, float):
        return round_percent(value)  # the floats are percentages (growth, window share)
    return value


def render_json(result: ConfigResult) -> dict[str, Any]:
    """The JSON report (its keys: docs/check.md)."""
    base = result.base
    return {
        "version": JSON_VERSION, "passed": result.passed and not (result.strict and result.notices),
        "exit_code": result.exit_code, "config": result.config,
        "baseline": result.baseline if base is None else None,  # no file is read
        "baseline_found": result.baseline_found, "base": None if base is None else {
            "ref": base.ref, "commit": base.commit, "label": base.label},
        "strict": result.strict, "summary": {"budgets": len(result.budgets),
                    "failed_budgets": sum(not b.passed for b in result.budgets),
                    "failures": len(result.failures), "warnings": len(result.notices)},
        "failures": [
            {"budget": f.budget, "rule": f.rule, "path": f.path, "actual": _json_value(f.actual),
             "limit": _json_value(f.limit), "line": f.line, "message": f.message}
            for f in result.failures],
        "warnings": [{"message": n.message, "file": n.file, "line": n.line}
                     for n in result.notices],
        "budgets": [_budget_json(b) for b in result.budgets]}


def _budget_json(b: BudgetResult) -> dict[str, Any]:
    budget = b.budget
    limits = {key: getattr(budget, key) for key in (
        "max_tokens_per_file", "max_total_tokens", "max_cost_per_call", "max_context_percent",
        "max_growth_percent", "max_file_growth_percent", "output_tokens")}
    limits.update(max_cost_per_call=_json_value(budget.max_cost_per_call),
                  reserve_output_tokens=budget.reserve, cached_share=str(budget.cached_share),
                  combine=budget.combine)
    return {
        "name": b.name, "passed": b.passed, "model": b.model, "tokenizer": b.tokenizer,
        "exact": b.exact, "paths": list(budget.paths), "limits": limits,
        "total_tokens": b.total_tokens, "baseline_total_tokens": b.baseline_total,
        "growth_percent": _json_value(b.growth_percent), "cost_per_call_usd": _json_value(b.cost),
        "context_window": b.context_window, "context_percent": _json_value(b.context_percent),
        "removed_files": [{"path": p, "baseline_tokens": n} for p, n in b.removed],
        "renamed_files": [{"path": p, "from": old} for p, old in b.renamed],
        "files": [{"path": f.path, "bytes": f.bytes, "tokens": f.tokens,
                   "baseline_tokens": f.baseline_tokens,
                   "growth_percent": _json_value(f.growth_percent),
                   "cost_per_call_usd": _json_value(f.cost),
                   "context_percent": _json_value(f.context_percent)} for f in b.files]}


def _escape_data(text: str) -> str:
    # Workflow-command escaping (actions/toolkit: command.ts escapeData / escapeProperty).
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _command(level: str, message: str, *, file: str | None = None, line: int | None = None,
             title: str | None = None) -> str:
    props = [f"{key}={value}" for key, value in (("file", file), ("line", line), ("title", title))
             if value]
    joined = ",".join(_escape_data(p).replace(":", "%3A").replace(",", "%2C") for p in props)
    return f"::{level}{' ' + joined if props else ''}::{_escape_data(message)}"


def render_github(result: ConfigResult, *, workspace: str | Path | None = None) -> str:
    """Workflow commands, an annotation per failure; paths relative to where GitHub resolves
    them: ``$GITHUB_WORKSPACE`` when the files are in it, else the work tree's top, else cwd."""
    here = Path(os.path.realpath(Path.cwd()))
    root = Path(os.path.realpath(here / result.root))
    given = workspace if workspace is not None else os.environ.get("GITHUB_WORKSPACE")
    candidates = [Path(os.path.realpath(given))] if given else []
    candidates += [top] if (top := work_tree_root(root)) is not None else []
    base = next((f for f in candidates if f == root or f in root.parents), here)

    def rel(full: Path) -> str:
        return Path(os.path.relpath(full, base)).as_posix()

    full = here / result.config
    config = rel(Path(os.path.realpath(full.parent)) / full.name)
    lines = [_command("error", f.message, title=f"tokcost: {f.rule} (budget {f.budget})",
                      file=config if f.path is None else rel(root / f.path),
                      line=b.budget.line if f.path is None else f.line)
             for b in result.budgets for f in b.failures]
    level = "error" if result.strict else "warning"
    for n in result.notices:
        file = (config if n.file == result.config else rel(root / n.file)) if n.file else None
        lines.append(_command(level, n.message, file=file, line=n.line, title="tokcost check"))
    lines.append(f"{_VERDICT}{'FAIL' if result.exit_code else 'ok'}: {headline(result)}")
    strict = _strict_line(result)
    lines += [f"{_VERDICT}FAIL: {strict}"] if strict else []
    return "\n".join(lines) + "\n"


# What must not reach Markdown raw: controls (\r and \n start new blocks), line separators,
# and os.fsdecode's stand-ins for undecodable bytes.
_NOT_MARKDOWN = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def _code(text: str, *, cell: bool = True) -> str:
    """``text`` as a code span: whatever a pull request named a file or a budget, it shows as
    written and does nothing (no HTML, link, @mention or heading); in a table ``cell`` its
    pipes are escaped (GFM unescapes them before reading the span)."""
    text = _NOT_MARKDOWN.sub(_visible, text)
    text = text.replace("|", "\\|") if cell else text
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    pad = " " if text[:1] in ("`", " ") or text[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _inline(text: str) -> str:
    return _code(text, cell=False)


def _md_table(head: str, align: str, rows: list[str]) -> list[str]:
    return [f"| {head} |", f"|{align}|", *rows, ""]


def render_markdown(result: ConfigResult, *, quiet: bool = False, hide_passed: bool = False,
                    heading: str | None = None) -> str:
    """A Markdown report; a ``heading`` (one config of several) replaces the title."""
    cells, base = tables(result), result.base
    icon = "❌" if result.exit_code else "✅"
    out = [heading] if heading else [MARKER, f"### {icon} tokcost check: "
                                               f"{headline(result, _inline)}"]
    out += ["", f"**{cells.strict}**", ""] if cells.strict else [""]
    if cells.failures:
        out += _md_table("budget | file | rule | actual | limit", "---|---|---|--:|--:", [
            f"| {_code(budget)} | {_code(path) if path else '(all files)'} | `{rule}` | "
            f"{actual} | {limit} |" for budget, path, rule, actual, limit in cells.failures])
    rows = [row for row in cells.budgets if not (hide_passed and row[0])]
    if rows and not quiet:
        out += _md_table("| budget | model | files | tokens | growth | cost/call | window",
                         "---|---|---|--:|--:|--:|--:|--:", [
            f"| {'✅' if passed else '❌'} | {_code(name)} | {_code(model)} | "
            + " | ".join(numbers) + " |" for passed, name, model, *numbers in rows])
    if cells.changes and not quiet:
        out += [f"<details><summary>{html.escape(cells.changes_title)}</summary>", ""]
        out += _md_table("budget | file | before | now | growth", "---|---|--:|--:|--:", [
            f"| {_code(name)} | {_code(path)} | {' | '.join(counts)} |"
            for name, path, *counts in cells.changes])
        out += ["</details>", ""]
    if result.failures:
        out += ["<details><summary>Messages</summary>", ""]
        out += [f"- {_inline(f.message)}" for f in result.failures]
        out += ["", "</details>", ""]
    if result.notices and not (quiet and not result.strict):
        out += ["**Warnings**", ""]
        out += [f"- {_inline(n.message)}" for n in result.notices] + [""]
    if not quiet:
        if base is not None:
            against = f" · vs {_inline(base.label)} ({_inline(base.short)})"
        else:
            found = "" if result.baseline_found else " (not found)"
            # Limits given with paths have no config file and no baseline.
            baseline = _inline(str(result.baseline))
            against = f" · baseline {baseline}{found}" if result.baseline else ""
        out.append(f"<sub>config {_inline(str(result.config))}{against}</sub>")
    return "\n".join(out).rstrip("\n") + "\n"


# What XML 1.0 cannot hold even escaped: C0 controls but \t\n\r, surrogates, U+FFFE/U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # os.fsdecode's stand-in for an undecodable byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def xml_text(text: str) -> str:
    r"""``text`` with what XML 1.0 forbids written as a visible escape (``\x01``), so the
    report stays well-formed and still names the file."""
    return _NOT_XML.sub(_visible, text)


def _suites(result: ConfigResult) -> Iterator[tuple[str, list[ET.Element]]]:
    """(suite, testcases): per budget one for it and one per file, then the warnings."""
    for b in result.budgets:
        cases = []
        for name, path in [("(budget)", None), *((f.path, f.path) for f in b.files)]:
            case = ET.Element("testcase", classname=xml_text(f"tokcost.{b.name}"),
                              name=xml_text(name))
            found = [f for f in b.failures if f.path == path]
            if found:
                message = xml_text("; ".join(f.message for f in found))
                ET.SubElement(case, "failure", message=message,
                              type=",".join(f.rule for f in found)).text = xml_text("\n".join(
                    f"{f.rule}: {'' if b.exact else '≈'}{_value(f, f.actual)} > "
                    f"{_value(f, f.limit)}" + (f" (from line {f.line})" if f.line else "")
                    for f in found))
            cases.append(case)
        yield b.name, cases
    if result.notices:
        cases = []
        for i, n in enumerate(result.notices, start=1):
            case = ET.Element("testcase", classname="tokcost.warnings", name=f"warning {i}")
            attrs = {"message": xml_text(n.message)} | ({"type": "strict"} if result.strict else {})
            ET.SubElement(case, "error" if result.strict else "skipped", attrs)
            cases.append(case)
        yield "tokcost warnings", cases


def render_junit(results: Sequence[ConfigResult], *, several: bool = False) -> str:
    """JUnit XML valid against Jenkins xunit's ``junit-10.xsd`` (a testcase names its file)."""
    if several:
        name = "tokcost check"
        groups = [(r.config, [c for _, cases in _suites(r) for c in cases]) for r in results]
    else:
        [result] = results
        name = "tokcost check" + (f" vs {result.base.label}" if result.base is not None else "")
        groups = list(_suites(result))
    root = ET.Element("testsuites", name=xml_text(name))
    for suite_name, cases in groups:
        suite = ET.SubElement(root, "testsuite", name=xml_text(suite_name), tests=str(len(cases)))
        for key, tag in (("failures", "failure"), ("errors", "error"), ("skipped", "skipped")):
            suite.set(key, str(sum(c.find(tag) is not None for c in cases)))
        suite.extend(cases)
    for key in ("tests", "failures", "errors"):
        root.set(key, str(sum(int(suite.get(key, 0)) for suite in root)))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render(results: ConfigResult | Sequence[ConfigResult], fmt: str, *, several: bool = False,
           quiet: bool = False, hide_passed: bool = False) -> str:
    """The report of one config, or of ``several``, in one of FORMATS. ``quiet`` (failures
    and verdicts) and ``hide_passed`` shorten Markdown; the machine formats are complete."""
    one = not isinstance(results, Sequence)
    runs: Sequence[ConfigResult] = (results,) if one else results  # type: ignore[assignment]
    several = several and not one
    if fmt == "json":
        data: Any = [render_json(r) for r in runs] if several else render_json(runs[0])
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if fmt == "junit":
        return render_junit(runs, several=several)
    if fmt == "github":
        lines = [f"tokcost check {r.config}: {line[len(_VERDICT):]}"
                 if several and line.startswith(_VERDICT) else line
                 for r in runs for line in render_github(r).splitlines()]
        verdict = "FAIL" if any(r.exit_code for r in runs) else "ok"
        lines += [f"{_VERDICT}{verdict}: {run_headline(runs)}"] if several else []
        return "\n".join(lines) + "\n"
    if fmt == "markdown":
        if not several:
            return render_markdown(runs[0], quiet=quiet, hide_passed=hide_passed)
        failed = any(r.exit_code for r in runs)
        out = [MARKER, f"### {'❌' if failed else '✅'} tokcost check: "
                       f"{run_headline(runs, _inline)}", ""]
        out += [render_markdown(r, quiet=quiet, hide_passed=hide_passed, heading=(
            f"#### {'❌' if r.exit_code else '✅'} {_inline(str(r.config))}: "
            f"{headline(r, _inline)}"))
            for r in runs if r.exit_code or not (quiet or hide_passed)]
        return "\n".join(out).rstrip("\n") + "\n"
    raise UsageError(f"unknown report format {arg('fmt', repr(fmt))}; use one of "
                     f"{', '.join(FORMATS)}", param="fmt", value=fmt)
