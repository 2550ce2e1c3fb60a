"""``tokcost check``: token, cost, context-window and growth budgets for CI."""

from __future__ import annotations

import io
import os
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

import tokcost
from tokcost import units
from tokcost.cli.console import err, error, out, print_fitted, warn
from tokcost.errors import UsageError

if TYPE_CHECKING:
    from tokcost import CheckResult, CheckRun

EPILOG = """
Examples:

  tokcost check
      the tokcost.yaml (or \\[tool.tokcost]) here or above
  tokcost check 'prompts/**/*.md' --max-tokens 10k --max-cost '$0.05' \\
    -m gpt-4o
      limits without a config file
  tokcost check -c svc/tokcost.yaml -c web/tokcost.yaml
      several configs in one run
  tokcost check --all --quiet
      every tokcost.yaml below here; failures only
  tokcost check --config ci/budgets.yaml --format github
      annotations in GitHub Actions
  tokcost check --update-baseline
      record today's counts as the baseline
  tokcost check --base origin/main
      growth against the base branch, no baseline file
  tokcost check --format junit > tokcost.xml
      a report for GitLab or Jenkins
  tokcost check --format markdown
      a table for a pull-request comment
  tokcost check --strict
      a glob matching nothing fails the check

Exit codes: 0 every budget holds, 1 a budget is exceeded, 2 a usage or config error \
(or a warning under --strict).
"""


class Format(str, Enum):
    text = "text"
    json = "json"
    github = "github"
    markdown = "markdown"
    junit = "junit"


def check(
    paths: Annotated[
        list[str] | None,
        typer.Argument(help="Files, folders or globs to check against the limits given here "
                       "(--max-tokens, --max-cost, --max-window), without a config file.",
                       show_default=False),
    ] = None,
    config: Annotated[
        list[Path] | None,
        typer.Option("--config", "-c", help="Budget config: a tokcost.yaml or a pyproject.toml "
                     "with \\[tool.tokcost]; repeat it to check several (default: the first "
                     "found walking up from here to the git work tree root).",
                     show_default=False),
    ] = None,
    all_configs: Annotated[
        bool, typer.Option("--all", help="Check every tokcost.yaml (or \\[tool.tokcost]) at or "
                           "below the current folder, .gitignored folders left out.")
    ] = False,
    max_tokens: Annotated[
        str | None, typer.Option("--max-tokens", help="With PATHS: tokens per file, e.g. 10k.",
                                 show_default=False)
    ] = None,
    max_cost: Annotated[
        str | None, typer.Option("--max-cost", help="With PATHS: USD per call with the file as "
                                 "the prompt, e.g. '$0.05' or 5c (needs -m).", show_default=False)
    ] = None,
    max_window: Annotated[
        str | None, typer.Option("--max-window", help="With PATHS: share of the model's context "
                                 "window per file, e.g. 80% (needs -m).", show_default=False)
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="With PATHS: catalog model for the "
                                 "tokenizer, prices and context window.", show_default=False)
    ] = None,
    tokenizer: Annotated[
        str | None, typer.Option("--tokenizer", "-t", help="With PATHS: tokenizer spec to count "
                                 "with (default: the model's).", show_default=False)
    ] = None,
    fmt: Annotated[
        Format, typer.Option("--format", "-f", help="Report format.", case_sensitive=False)
    ] = Format.text,
    json_out: Annotated[
        bool, typer.Option("--json", help="Same as --format json.")
    ] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Text and Markdown: only the failures and "
                           "the verdict.")
    ] = False,
    hide_passed: Annotated[
        bool, typer.Option("--hide-passed", help="Text and Markdown: leave out the budgets "
                           "(and configs) that hold.")
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
    jobs: Annotated[
        int | None,
        typer.Option("--jobs", "-j", min=1, metavar="N", show_default=False,
                     help="Parallel workers (default: a thread per CPU, as count)."),
    ] = None,
    catalog: Annotated[
        str | None,
        typer.Option("--catalog", metavar="FILE", help="Model catalog YAML (default: the "
                     "config's 'catalog' "
                     "key, $TOKCOST_CATALOG, or the shipped models.yaml).", show_default=False),
    ] = None,
) -> None:
    """Fail the build when prompts outgrow their token, cost or context budgets."""
    if base is not None and baseline is not None:
        warn(f"--base {base} wins over --baseline: growth is measured against "
             f"{base}, the baseline file is not read")
    configs = list(config or [])
    several = all_configs or len(configs) > 1
    if json_out:
        fmt = Format.json
    results: list[CheckResult]
    if paths:
        limits = _adhoc_limits(configs, all_configs, update_baseline, baseline, model,
                               max_tokens=max_tokens, max_cost=max_cost, max_window=max_window)
        results = [tokcost.check(paths=paths, limits=limits, model=model, tokenizer=tokenizer,
                                 base=base, strict=strict, jobs=jobs, catalog=catalog)]
    else:
        given = [flag for flag, value in (("--max-tokens", max_tokens), ("--max-cost", max_cost),
                                          ("--max-window", max_window), ("--model", model),
                                          ("--tokenizer", tokenizer)) if value is not None]
        if given:
            raise UsageError(f"{given[0]} applies to PATHS given on the command line; add the "
                             "files or globs to check (a config sets its own limits and model)")
        if all_configs and configs:
            raise UsageError("--all finds every config below here; drop --config, or drop "
                             "--all and repeat --config")
        if several and baseline is not None:
            raise UsageError("--baseline names one file, and each of several configs has its "
                             "own baseline; drop --baseline")
        if several:
            run = tokcost.check_many(configs or None, under="." if all_configs else None,
                                     base=base, update_baseline=update_baseline, strict=strict,
                                     jobs=jobs, catalog=catalog)
            results = list(run.results)
        else:
            results = [tokcost.check(configs[0] if configs else None, baseline=baseline,
                                     base=base, update_baseline=update_baseline, strict=strict,
                                     jobs=jobs, catalog=catalog)]
    if update_baseline:
        for result in results:
            n = sum(len(b.files) for b in result.budgets)
            err.print(f"wrote baseline {result.written} ({n} files in {len(result.budgets)} "
                      "budgets)", highlight=False)
    run_all = tokcost.CheckRun(tuple(results), several=several)
    if fmt is Format.text:
        _print_text(run_all, strict=strict, quiet=quiet, hide_passed=hide_passed)
    else:
        # Warnings are inside the machine-readable report; stdout stays parseable.
        typer.echo(run_all.render(fmt.value, quiet=quiet, hide_passed=hide_passed), nl=False)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if fmt is Format.github and summary and not _append_summary(summary, run_all):
        # The annotations above are the report and are complete; the summary is its copy,
        # so it is written (and can fail) last: an exceeded budget keeps its exit code.
        raise typer.Exit(code=run_all.exit_code or 1)
    if run_all.exit_code:
        raise typer.Exit(code=run_all.exit_code)


def _adhoc_limits(configs: list[Path], all_configs: bool, update_baseline: bool,
                  baseline: Path | None, model: str | None, *, max_tokens: str | None,
                  max_cost: str | None, max_window: str | None) -> dict[str, Any]:
    """The budget keys of the limits given as flags, read by the parsers every config
    value goes through (so ``10k``, ``$0.05``, ``5c``, ``80%`` mean what they mean there)."""
    if configs or all_configs:
        raise UsageError("give PATHS with limits, or --config/--all, not both: PATHS are "
                         "checked without a config file")
    if update_baseline or baseline is not None:
        flag = "--update-baseline" if update_baseline else "--baseline"
        raise UsageError(f"{flag} needs a config file; PATHS with limits have no baseline "
                         "(write a tokcost.yaml to track growth)")
    if max_tokens is None and max_cost is None and max_window is None:
        raise UsageError("PATHS need a limit: add --max-tokens N, --max-cost USD or "
                         "--max-window PCT (or drop PATHS to use tokcost.yaml)")
    for flag, value in (("--max-cost", max_cost), ("--max-window", max_window)):
        if value is not None and model is None:
            what = "prices" if flag == "--max-cost" else "context window"
            raise UsageError(f"{flag} needs a model for its {what}; add -m MODEL, "
                             "e.g. -m gpt-4o")
    limits: dict[str, Any] = {}
    if max_tokens is not None:
        limits["max_tokens_per_file"] = units.parse_count(max_tokens, param="max_tokens",
                                                            minimum=1)
    if max_cost is not None:
        limits["max_cost_per_call"] = units.parse_money(max_cost, param="max_cost")
    if max_window is not None:
        limits["max_context_percent"] = units.parse_percent(max_window, param="max_window")
    return limits


def _print_text(run: CheckRun, *, strict: bool, quiet: bool, hide_passed: bool) -> None:
    """The terminal report: per config (under a heading when there are several) its
    warnings on stderr and its tables on stdout, then the run's verdict."""
    # CI logs are no terminal and rich would assume 80 columns: give the table room.
    width = out.width if out.is_terminal or "COLUMNS" in os.environ else 120
    several = run.several
    for result in run.results:
        if several and (quiet or hide_passed) and not result.exit_code:
            continue
        for notice in result.notices:
            text = f"{result.config}: {notice.message}" if several else notice.message
            if strict:
                error(text)
            elif not quiet:
                warn(text)  # warn escapes markup itself
        if several:
            out.print(f"── {result.config}", markup=False, highlight=False)
        out.print(render_text(result, width=max(width, 60), color=out.is_terminal,
                              quiet=quiet, hide_passed=hide_passed),
                  end="", markup=False, highlight=False, soft_wrap=True)
    if several:
        from rich.text import Text

        verdict = Text()
        verdict.append("FAIL " if run.exit_code else "ok ",
                       style="bold red" if run.exit_code else "bold green")
        verdict.append(run.headline)
        out.print(verdict, highlight=False)


def _append_summary(summary: str, run: CheckRun) -> bool:
    """Append the Markdown report to the runner's step summary; False (said on stderr)
    when the file cannot be written."""
    try:
        with open(summary, "a", encoding="utf-8") as handle:  # the runner's protocol: append
            handle.write(run.render("markdown"))
    except OSError as exc:
        error(f"cannot write the step summary GITHUB_STEP_SUMMARY={summary}: "
              f"{exc.strerror or exc}; the report above is complete; point "
              "GITHUB_STEP_SUMMARY at a file you can write, or unset it")
        return False
    return True


def render_text(result: CheckResult, *, width: int = 100, color: bool = False,
                quiet: bool = False, hide_passed: bool = False) -> str:
    """The terminal report: the failures first, then one row per budget, then a verdict.

    ``quiet`` keeps the failures and the verdict; ``hide_passed`` leaves the budgets
    that hold out of the budget table.
    """
    from rich.console import Console
    from rich.text import Text

    cells = result.tables()
    buf = io.StringIO()
    # markup=False: budget names and paths are shown as they are ("a[bold]b.txt")
    console = Console(file=buf, width=width, color_system="standard" if color else None,
                      force_terminal=color, highlight=False, soft_wrap=False, markup=False)
    if cells.failures:
        table = _table("Failures", ("budget", "left"), ("file", "left"), ("rule", "left"),
                       ("actual", "right"), ("limit", "right"))
        for budget, path, rule, actual, limit in cells.failures:
            table.add_row(budget, path or "(all files)", rule, actual, limit, style="red")
        print_fitted(console, table)
        if cells.hint:  # the other formats carry it in each growth failure's message
            console.print(Text(cells.hint))
    rows = [row for row in cells.budgets if not (hide_passed and row[0])]
    if rows and not quiet:
        table = _table("Budgets", ("", "left"), ("budget", "left"), ("model", "left"),
                       ("files", "right"), ("tokens", "right"), ("growth", "right"),
                       ("cost/call", "right"), ("window", "right"))
        for passed, *row in rows:
            mark = Text("ok", style="green") if passed else Text("FAIL", style="bold red")
            table.add_row(mark, *row)
        print_fitted(console, table)
    if cells.changes and not quiet:
        table = _table(cells.changes_title, ("budget", "left"), ("file", "left"),
                       ("before", "right"), ("now", "right"), ("growth", "right"))
        for change in cells.changes:
            table.add_row(*change)
        print_fitted(console, table)
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
        # a long path or budget name folds onto more lines; numbers are never cut
        overflow = "fold" if name in ("budget", "file") else "ellipsis"
        table.add_column(name, justify=justify, overflow=overflow)  # type: ignore[arg-type]
    return table


def register(app: typer.Typer) -> None:
    app.command("check", epilog=EPILOG)(check)
