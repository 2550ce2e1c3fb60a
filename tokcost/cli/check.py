"""``tokcost check``: token, cost, context-window and growth budgets for CI."""

from __future__ import annotations

import io
import os
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

import tokcost
from tokcost.cli.console import err, out, warn

if TYPE_CHECKING:
    from tokcost import CheckResult

EPILOG = """
Examples:

\b
  tokcost check                              read ./tokcost.yaml (or \\[tool.tokcost])
  tokcost check --config ci/budgets.yaml --format github   annotations in GitHub Actions
  tokcost check --update-baseline            record today's counts as the baseline
  tokcost check --base origin/main           growth against the base branch, no baseline file
  tokcost check --format junit > tokcost.xml  a report for GitLab or Jenkins
  tokcost check --format markdown            a table for a pull-request comment
  tokcost check --strict                     a glob matching nothing fails the check

\b
Exit codes: 0 every budget holds, 1 a budget is exceeded, 2 a usage or config error
(or a warning under --strict).
"""


class Format(str, Enum):
    text = "text"
    json = "json"
    github = "github"
    markdown = "markdown"
    junit = "junit"


def check(
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="Budget config: a tokcost.yaml or a pyproject.toml "
                     "with \\[tool.tokcost] (default: look in the current folder).",
                     show_default=False),
    ] = None,
    fmt: Annotated[
        Format, typer.Option("--format", "-f", help="Report format.", case_sensitive=False)
    ] = Format.text,
    json_out: Annotated[
        bool, typer.Option("--json", help="Same as --format json.")
    ] = False,
    update_baseline: Annotated[
        bool, typer.Option("--update-baseline", help="Write the current counts to the baseline "
                           "JSON (atomically), then check against it.")
    ] = False,
    baseline: Annotated[
        Path | None,
        typer.Option("--baseline", help="Baseline JSON (default: the config's 'baseline' key, "
                     "else .tokcost-baseline.json beside the config).", show_default=False),
    ] = None,
    base: Annotated[
        str | None,
        typer.Option("--base", metavar="REF", help="Measure growth against the budgeted files "
                     "as they are at git REF (a branch, tag or commit; read with git, no "
                     "checkout) instead of the baseline file; wins over --baseline.",
                     show_default=False),
    ] = None,
    strict: Annotated[
        bool, typer.Option("--strict", help="Treat warnings (a glob matching nothing, a "
                           "missing baseline) as errors: exit code 2.")
    ] = False,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Parallel workers.")] = 1,
    catalog: Annotated[
        str | None,
        typer.Option("--catalog", help="Model catalog YAML (default: the config's 'catalog' "
                     "key, $TOKCOST_CATALOG, or the shipped models.yaml).", show_default=False),
    ] = None,
) -> None:
    """Fail the build when prompts outgrow their token, cost or context budgets."""
    if base is not None and baseline is not None:
        from rich.markup import escape

        warn(f"--base {escape(base)} wins over --baseline: growth is measured against "
             f"{escape(base)}, the baseline file is not read")
    result = tokcost.check(config, baseline=baseline, base=base,
                           update_baseline=update_baseline, strict=strict, jobs=jobs,
                           catalog=catalog)
    if update_baseline:
        n = sum(len(b.files) for b in result.budgets)
        err.print(f"wrote baseline {result.baseline} ({n} files in {len(result.budgets)} "
                  "budgets)", highlight=False)
    if json_out:
        fmt = Format.json
    if fmt is Format.text:
        for notice in result.notices:
            if strict:
                err.print(f"[bold red]error:[/bold red] {notice.message}", markup=True,
                          highlight=False)
            else:
                warn(notice.message)
        # CI logs are no terminal and rich would assume 80 columns: give the table room.
        width = out.width if out.is_terminal or "COLUMNS" in os.environ else 120
        out.print(render_text(result, width=max(width, 60), color=out.is_terminal),
                  end="", markup=False, highlight=False, soft_wrap=True)
    else:
        # Warnings are inside the machine-readable report; stdout stays parseable.
        typer.echo(result.render(fmt.value), nl=False)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if fmt is Format.github and summary and not _append_summary(summary, result):
        # The annotations above are the report and are complete; the summary is its copy,
        # so it is written (and can fail) last: an exceeded budget keeps its exit code.
        raise typer.Exit(code=result.exit_code or 1)
    if result.exit_code:
        raise typer.Exit(code=result.exit_code)


def _append_summary(summary: str, result: CheckResult) -> bool:
    """Append the Markdown report to the runner's step summary; False (said on stderr)
    when the file cannot be written."""
    try:
        with open(summary, "a", encoding="utf-8") as handle:  # the runner's protocol: append
            handle.write(result.render("markdown"))
    except OSError as exc:
        from rich.markup import escape

        err.print(f"[bold red]error:[/bold red] cannot write the step summary "
                  f"GITHUB_STEP_SUMMARY={escape(summary)}: {exc.strerror or exc}; the report "
                  "above is complete; point GITHUB_STEP_SUMMARY at a file you can write, or "
                  "unset it", markup=True,
                  highlight=False)
        return False
    return True


def render_text(result: CheckResult, *, width: int = 100, color: bool = False) -> str:
    """The terminal report: the failures first, then one row per budget, then a verdict."""
    from rich.console import Console
    from rich.text import Text

    cells = result.tables()
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system="standard" if color else None,
                      force_terminal=color, highlight=False, soft_wrap=False)
    if cells.failures:
        table = _table("Failures", ("budget", "left"), ("file", "left"), ("rule", "left"),
                       ("actual", "right"), ("limit", "right"))
        for budget, path, rule, actual, limit in cells.failures:
            table.add_row(budget, path or "(all files)", rule, actual, limit, style="red")
        console.print(table)
        if cells.hint:  # the other formats carry it in each growth failure's message
            console.print(Text(cells.hint))
    table = _table("Budgets", ("", "left"), ("budget", "left"), ("model", "left"),
                   ("files", "right"), ("tokens", "right"), ("growth", "right"),
                   ("cost/call", "right"), ("window", "right"))
    for passed, *row in cells.budgets:
        mark = Text("ok", style="green") if passed else Text("FAIL", style="bold red")
        table.add_row(mark, *row)
    console.print(table)
    if cells.changes:
        table = _table(cells.changes_title, ("budget", "left"), ("file", "left"),
                       ("before", "right"), ("now", "right"), ("growth", "right"))
        for change in cells.changes:
            table.add_row(*change)
        console.print(table)
    verdict = Text()
    verdict.append("FAIL " if not result.passed else "ok ",
                   style="bold red" if not result.passed else "bold green")
    verdict.append(cells.headline)
    console.print(verdict)
    if cells.strict:
        console.print(Text("FAIL ", style="bold red") + Text(cells.strict))
    # rich pads every line to the width; drop that so the report diffs cleanly.
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n"


def _table(title: str, *columns: tuple[str, str]) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for name, justify in columns:
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    return table


def register(app: typer.Typer) -> None:
    app.command("check", epilog=EPILOG)(check)
