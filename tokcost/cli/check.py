"""``tokcost check``: token, cost, context-window and growth budgets for CI."""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

import tokcost
from tokcost import units
from tokcost.cli.console import err, error, make_console, out, print_fitted, table, warn
from tokcost.errors import UsageError

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

# PATHS' limits: flag -> (budget key, the parser every config value goes through)
_LIMITS: dict[str, tuple[str, Callable[..., Any]]] = {
    "max_tokens": ("max_tokens_per_file", partial(units.parse_count, minimum=1)),
    "max_cost": ("max_cost_per_call", units.parse_money),
    "max_window": ("max_context_percent", units.parse_percent)}


def check(
    paths: Annotated[list[str] | None, typer.Argument(help="Files, folders or globs to check "
        "against the limits given here (--max-tokens, --max-cost, --max-window), without a "
        "config file.")] = None,
    config: Annotated[list[Path] | None, typer.Option("--config", "-c", help="Budget config "
        "(repeatable: several in one run): a tokcost.yaml or a pyproject.toml with "
        "\\[tool.tokcost] (default: the first found walking up from here to the git work tree "
        "root).")] = None,
    under: Annotated[bool, typer.Option("--all", help="Check every tokcost.yaml (or "
        "\\[tool.tokcost]) at or below the current folder, .gitignored folders left out.")
    ] = False,
    max_tokens: Annotated[str | None, typer.Option(
        "--max-tokens", help="With PATHS: tokens per file, e.g. 10k.")] = None,
    max_cost: Annotated[str | None, typer.Option("--max-cost", help="With "
        "PATHS: USD per call with the file as the prompt, e.g. '$0.05' or 5c (needs -m).")] = None,
    max_window: Annotated[str | None, typer.Option("--max-window",
        help="With PATHS: share of the model's context window per file, e.g. 80% (needs -m).")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="With PATHS: catalog model "
        "for the tokenizer, prices and context window.")] = None,
    tokenizer: Annotated[str | None, typer.Option("--tokenizer", "-t", help="With PATHS: "
        "tokenizer spec to count with (default: the model's).")] = None,
    fmt: Annotated[Literal["text", "json", "github", "markdown", "junit"], typer.Option(
        "--format", "-f", help="Report format.", case_sensitive=False)] = "text",
    json_out: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Text and Markdown: only the "
        "failures and the verdict.")] = False,
    hide_passed: Annotated[bool, typer.Option("--hide-passed", help="Text and Markdown: leave "
        "out the budgets (and configs) that hold.")] = False,
    update_baseline: Annotated[bool, typer.Option("--update-baseline", help="Write the current "
        "counts to the baseline JSON (atomically), then check against it.")] = False,
    force: Annotated[bool, typer.Option("--force", help="With --update-baseline: write the "
        "baseline outside the config's repository, or over a file that is not a baseline.")
    ] = False,
    baseline: Annotated[Path | None, typer.Option("--baseline",
        help="Baseline JSON (default: the config's 'baseline' key, else .tokcost-baseline.json "
        "beside the config).")] = None,
    base: Annotated[str | None, typer.Option("--base", metavar="REF",
        help="Measure growth against the budgeted files as they are at git REF (a branch, tag or "
        "commit; read with git, no checkout) instead of the baseline file; wins over "
        "--baseline.")] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Treat warnings (a glob matching "
        "nothing, a missing baseline) as errors: exit code 2.")] = False,
    jobs: Annotated[int | None, typer.Option("--jobs", "-j", min=1, metavar="N",
        help="Parallel workers (default: a thread per CPU, as count).")] = None,
    catalog: Annotated[str | None, typer.Option("--catalog", metavar="FILE", help="Model "
        "catalog YAML (default: the config's 'catalog' key, $TOKCOST_CATALOG, or the shipped "
        "models.yaml).")] = None,
) -> None:
    """Fail the build when prompts outgrow their token, cost or context budgets."""
    if base is not None and baseline is not None:
        warn(f"--base {base} wins over --baseline: growth is measured against "
             f"{base}, the baseline file is not read")
    adhoc = _adhoc(paths or [], model, tokenizer, max_tokens=max_tokens, max_cost=max_cost,
                   max_window=max_window)
    result = tokcost.check(tokcost.CheckRequest.of(
        config=tuple(config or ()), under=Path(".") if under else None, **adhoc, baseline=baseline,
        base=base, update_baseline=update_baseline, force=force, strict=strict, catalog=catalog,
        jobs=jobs))
    for r in result.configs if update_baseline else ():
        n = sum(len(b.files) for b in r.budgets)
        err.print(f"wrote baseline {r.written} ({n} files in {len(r.budgets)} budgets)",
                  highlight=False)
    fmt = "json" if json_out else fmt
    if fmt == "text":
        _print_text(result, strict=strict, quiet=quiet, hide_passed=hide_passed)
    else:
        # Warnings are inside the machine-readable report; stdout stays parseable.
        typer.echo(result.render(fmt, quiet=quiet, hide_passed=hide_passed), nl=False)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if fmt == "github" and summary and not _append_summary(summary, result):
        # The summary copies the complete report, so it fails last: a budget keeps its code.
        raise typer.Exit(code=result.exit_code or 1)
    if result.exit_code:
        raise typer.Exit(code=result.exit_code)


def _adhoc(paths: list[str], model: str | None, tokenizer: str | None,
           **flags: str | None) -> dict[str, Any]:
    """The ad-hoc budget's options that PATHS and the limit flags make."""
    given = [name for name, value in (*flags.items(), ("model", model),
                                      ("tokenizer", tokenizer)) if value is not None]
    if not paths:
        if given:
            raise UsageError(f"--{given[0].replace('_', '-')} applies to PATHS given on the "
                             "command line; add the files or globs to check (a config sets "
                             "its own limits and model)")
        return {}
    if not set(flags) & set(given):
        raise UsageError("PATHS need a limit: add --max-tokens N, --max-cost USD or "
                         "--max-window PCT (or drop PATHS to use tokcost.yaml)")
    for name, what in (("max_cost", "prices"), ("max_window", "context window")):
        if name in given and model is None:
            raise UsageError(f"--{name.replace('_', '-')} needs a model for its {what}; add "
                             "-m MODEL, e.g. -m gpt-4o")
    limits = {key: parse(value, param=name) for name, (key, parse) in _LIMITS.items()
              if (value := flags[name]) is not None}
    return {"paths": tuple(paths), "limits": limits, "model": model, "tokenizer": tokenizer}


def _print_text(run: Any, *, strict: bool, quiet: bool, hide_passed: bool) -> None:
    """The terminal report: each config's warnings on stderr, the tables on stdout."""
    for result in _shown(run, quiet or hide_passed):
        for notice in result.notices:
            text = f"{result.config}: {notice.message}" if run.several else notice.message
            if strict:
                error(text)
            elif not quiet:
                warn(text)  # warn escapes markup itself
    # CI logs are no terminal and rich would assume 80 columns: give the table room.
    width = out.width if out.is_terminal or "COLUMNS" in os.environ else 120
    out.print(render_text(run, width=max(width, 60), color=out.is_terminal, quiet=quiet,
                          hide_passed=hide_passed),
              end="", markup=False, highlight=False, soft_wrap=True)


def _shown(run: Any, failing_only: bool) -> list[Any]:
    """The configs the report shows: of several, only the failing ones when asked."""
    return [r for r in run.configs if r.exit_code or not (failing_only and run.several)]


def _append_summary(summary: str, run: Any) -> bool:
    """Append the Markdown report to the step summary; False when it cannot be written."""
    try:
        with open(summary, "a", encoding="utf-8") as handle:  # the runner's protocol: append
            handle.write(run.render("markdown"))
    except OSError as exc:
        error(f"cannot write the step summary GITHUB_STEP_SUMMARY={summary}: "
              f"{exc.strerror or exc}; the report above is complete; point "
              "GITHUB_STEP_SUMMARY at a file you can write, or unset it")
        return False
    return True


def render_text(run: Any, *, width: int = 100, color: bool = False,
                quiet: bool = False, hide_passed: bool = False) -> str:
    """The terminal report: per config its failures, budgets, changes and verdict."""
    from rich.text import Text
    buf = io.StringIO()
    # markup=False: budget names and paths are shown as they are ("a[bold]b.txt")
    console = make_console(file=buf, width=width, color_system="standard" if color else None,
                           force_terminal=color, highlight=False, soft_wrap=False, markup=False)
    for result in _shown(run, quiet or hide_passed):
        if run.several:
            console.print(f"── {result.config}")
        cells = result.tables()
        if cells.failures:
            _print_table(console, "Failures", ("budget", "file", "rule", "actual", "limit"), 2,
                         [(b, path or "(all files)", *rest) for b, path, *rest in cells.failures],
                         style="red")
            if cells.hint:  # the other formats carry it in each growth failure's message
                console.print(Text(cells.hint))
        rows = [row for row in cells.budgets if not (hide_passed and row[0])]
        if rows and not quiet:
            _print_table(console, "Budgets", ("", "budget", "model", "files", "tokens", "growth",
                                              "cost/call", "window"), 5, [
                (Text("ok", style="green") if passed else Text("FAIL", style="bold red"), *row)
                for passed, *row in rows])
        if cells.changes and not quiet:
            _print_table(console, cells.changes_title, ("budget", "file", "before", "now",
                                                        "growth"), 3, cells.changes)
        console.print(_verdict(result.passed, cells.headline))
        if cells.strict:
            console.print(Text("FAIL ", style="bold red") + Text(cells.strict))
    if run.several:
        console.print(_verdict(not run.exit_code, run.headline))
    # rich pads every line to the width; drop that so the report diffs cleanly.
    return "\n".join(line.rstrip() for line in buf.getvalue().splitlines()) + "\n"


def _verdict(passed: bool, headline: str) -> Any:
    from rich.text import Text
    return Text.assemble(("ok " if passed else "FAIL ",
                          "bold green" if passed else "bold red"), headline)


def _print_table(console: Any, title: str, columns: tuple[str, ...], numbers: int,
                 rows: Sequence[Sequence[Any]], style: str | None = None) -> None:
    """A table in the one style: text columns, then ``numbers`` right-aligned ones."""
    grid = table(title=title)
    for i, name in enumerate(columns):
        grid.add_column(name, justify="right" if i >= len(columns) - numbers else "left",
                        overflow="fold" if name in ("budget", "file") else "ellipsis")
    for row in rows:
        grid.add_row(*row, style=style)
    print_fitted(console, grid)
