"""Several configs in one run (a monorepo): each config's result under its own heading.

``CheckRun`` holds one ``CheckResult`` per config, in the order they were given (or
by folder, for every config below one). Its exit code is the worst of them, and each
report format keeps the configs apart: a list in JSON, a heading per config in
Markdown, a testsuite per config in JUnit, and in GitHub annotations each config's
verdict line names it (the annotations carry paths relative to the checkout already).

>>> CheckRun(()).exit_code, CheckRun(()).headline
(0, 'no configs')
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokcost.budget.report import (
    FORMATS,
    MARKER,
    render,
    render_github,
    render_json,
    render_junit,
    render_markdown,
)
from tokcost.errors import UsageError

if TYPE_CHECKING:
    from tokcost.budget.evaluate import CheckResult

__all__ = ["CheckRun", "render_one"]

_VERDICT = "tokcost check: "  # how a GitHub report's own verdict lines begin


@dataclass(frozen=True)
class CheckRun:
    """The results of several configs checked in one run.

    ``several=False`` (one config, named or found) renders exactly that config's own
    report, so a caller can treat every run alike.
    """

    results: tuple[CheckResult, ...]
    several: bool = True

    @property
    def exit_code(self) -> int:
        """The worst exit code: 2 (warnings under strict) over 1 (a budget exceeded)."""
        return max((r.exit_code for r in self.results), default=0)

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    @property
    def failed(self) -> list[CheckResult]:
        """The configs whose check failed, in run order."""
        return [r for r in self.results if r.exit_code]

    @property
    def headline(self) -> str:
        """``1 of 3 configs failed (svc/tokcost.yaml)``, ``all 3 configs hold``."""
        n = len(self.results)
        if not n:
            return "no configs"
        failed = self.failed
        if failed:
            names = ", ".join(r.config for r in failed)
            return f"{len(failed)} of {n} config{'s' if n != 1 else ''} failed ({names})"
        return f"all {n} config{'s' if n != 1 else ''} hold"

    def to_list(self) -> list[dict[str, Any]]:
        """The JSON report: one ``CheckResult.to_dict()`` per config, in run order."""
        return [render_json(r) for r in self.results]

    def render(self, fmt: str, *, quiet: bool = False, hide_passed: bool = False) -> str:
        """The run as ``json``, ``github``, ``markdown`` or ``junit`` text.

        ``quiet`` (Markdown) keeps only the failing configs' failures and the verdicts;
        ``hide_passed`` leaves out the budgets that hold. The machine formats are
        always complete.
        """
        if not self.several and len(self.results) == 1:
            return render_one(self.results[0], fmt, quiet=quiet, hide_passed=hide_passed)
        if fmt == "json":
            return json.dumps(self.to_list(), indent=2, ensure_ascii=False) + "\n"
        if fmt == "github":
            return _github(self)
        if fmt == "markdown":
            return _markdown(self, quiet=quiet, hide_passed=hide_passed)
        if fmt == "junit":
            return _junit(self)
        raise _unknown(fmt)


def render_one(result: CheckResult, fmt: str, *, quiet: bool = False,
               hide_passed: bool = False) -> str:
    """One config's report, with the Markdown report's ``quiet``/``hide_passed``."""
    if fmt == "markdown":
        return render_markdown(result, quiet=quiet, hide_passed=hide_passed)
    if fmt not in FORMATS:
        raise _unknown(fmt)
    return render(result, fmt)


def _unknown(fmt: str) -> UsageError:
    return UsageError(f"unknown report format {fmt!r}; use one of {', '.join(FORMATS)}",
                      param="fmt")


def _github(run: CheckRun) -> str:
    lines = []
    for r in run.results:
        for line in render_github(r).splitlines():
            if line.startswith(_VERDICT):  # "tokcost check svc/tokcost.yaml: FAIL: ..."
                line = f"tokcost check {r.config}: {line[len(_VERDICT):]}"
            lines.append(line)
    lines.append(f"{_VERDICT}{'FAIL' if run.exit_code else 'ok'}: {run.headline}")
    return "\n".join(lines) + "\n"


def _markdown(run: CheckRun, *, quiet: bool, hide_passed: bool) -> str:
    icon = "❌" if run.exit_code else "✅"
    out = [MARKER, f"### {icon} tokcost check: {run.headline}", ""]
    for r in run.results:
        if (quiet or hide_passed) and not r.exit_code:
            continue
        mark = "❌" if r.exit_code else "✅"
        heading = f"#### {mark} `{r.config}`: {r.tables().headline}"
        out.append(render_markdown(r, marker=False, heading=heading, quiet=quiet,
                                   hide_passed=hide_passed))
    return "\n".join(out).rstrip("\n") + "\n"


_COUNTED = ("name", "tests", "failures", "errors", "skipped")


def _junit(run: CheckRun) -> str:
    """A testsuite per config holding the testcases of each of its budgets (their
    classname, ``tokcost.BUDGET``, keeps the budget)."""
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name="tokcost check")
    totals = dict.fromkeys(("tests", "failures", "errors"), 0)
    for r in run.results:
        # Each config's own report is the source, so the two can never disagree.
        doc = ET.fromstring(render_junit(r).encode("utf-8"))
        suite = ET.SubElement(root, "testsuite", name=r.config)
        extra: dict[str, str] = {}
        for inner in doc.findall("testsuite"):
            extra.update((k, v) for k, v in inner.attrib.items() if k not in _COUNTED)
            for case in inner:
                suite.append(case)
        cases = suite.findall("testcase")
        counts = {
            "tests": len(cases),
            "failures": sum(c.find("failure") is not None for c in cases),
            "errors": sum(c.find("error") is not None for c in cases),
            "skipped": sum(c.find("skipped") is not None for c in cases),
        }
        for key, value in counts.items():
            suite.set(key, str(value))
        for name, text in extra.items():
            suite.set(name, text)
        for key in totals:
            totals[key] += counts[key]
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
