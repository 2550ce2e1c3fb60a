"""``tokcost check``: count every budget's files, record the baseline if asked, judge.

One call does what the command does: read the config, resolve each budget's model
and tokenizer through one catalog, count the files on one engine, write the
baseline (``update_baseline=True``, atomically) or read it, and apply the limits.
The result's ``to_dict()`` is ``tokcost check --json``; ``render(fmt)`` gives the
GitHub, Markdown and JUnit reports.

Without a config, ``paths`` and ``limits`` make the one budget a tokcost.yaml would
hold (``tokcost check 'prompts/**/*.md' --max-tokens 10k``); ``check_many`` checks
several configs in one run (``-c a -c b``, ``--all``), each under its own folder.
With ``base="main"`` growth is measured against the files as they are at that git ref
(``tokcost.budget.git_base``, no checkout) instead of against a baseline file.

>>> import tokcost
>>> # result = tokcost.check("tokcost.yaml", strict=True)
>>> # result.exit_code, result.render("markdown")
>>> # tokcost.check(paths=["prompts/"], limits={"max_tokens_per_file": "10k"}).passed
>>> # tokcost.check_many(under=".").exit_code   # every tokcost.yaml below here
>>> # tokcost.check(base="origin/main").render("github")
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokcost.atomic import ensure_writable
from tokcost.budget import (
    Baseline,
    BudgetConfig,
    CheckResult,
    CheckRun,
    Notice,
    baseline_from,
    judge,
    load_config,
    measure,
    read_baseline,
    write_baseline,
)
from tokcost.budget.config import (
    adhoc_config,
    display_path,
    find_configs,
    shadow_notice,
)
from tokcost.budget.crossing import locate
from tokcost.budget.git_base import against_base, baseline_at, open_tree
from tokcost.errors import UsageError
from tokcost.runner import EngineKind, RunConfig

if TYPE_CHECKING:
    from tokcost.catalog import Catalog

__all__ = ["CheckResult", "CheckRun", "check", "check_many"]


def check(
    config: str | Path | None = None,
    *,
    baseline: str | Path | None = None,
    base: str | None = None,
    update_baseline: bool = False,
    strict: bool = False,
    catalog: str | Path | Catalog | None = None,
    engine: EngineKind | str = EngineKind.LOCAL,
    jobs: int | None = None,
    scheduler: str | None = None,
    paths: Sequence[str | Path] | None = None,
    limits: Mapping[str, Any] | None = None,
    model: str | None = None,
    tokenizer: str | None = None,
) -> CheckResult:
    """Check the budgets of ``config`` (None: the tokcost.yaml or ``[tool.tokcost]``
    found walking up from here to the git work tree root).

    ``baseline`` replaces the config's baseline file and ``catalog`` its catalog.
    ``base`` (a git branch, tag or commit) measures growth against the budgeted files
    as they are at that ref, counted the same way, instead of against a baseline file:
    files new, removed and renamed since are reported, and a baseline file is then not
    read at all (``base`` wins over ``baseline``). A missing git, a ref that names no
    commit or a config outside a git work tree is a UsageError (exit code 2).
    ``update_baseline`` writes today's counts before judging, so growth is measured
    against them (with ``base``, the file is still written, and growth is against
    ``base``). ``strict`` makes warnings (a glob matching nothing, no baseline) fail
    with exit code 2. ``engine``/``jobs``/``scheduler`` choose where counting runs
    (``jobs`` None: as ``count``, a thread per CPU when the tokenizers allow it; see
    ``tokcost.runner.RunConfig``).
    A failing file's finding has the ``line`` where it crosses a token limit.

    Ad-hoc, without a config file: ``paths`` (files, folders, globs relative to the
    cwd) checked against ``limits`` (budget keys such as ``max_tokens_per_file``,
    ``max_cost_per_call``, ``max_context_percent``, valued as in tokcost.yaml), with
    ``model`` for prices and context window and ``tokenizer`` to count with.
    """
    if paths is not None:
        if config is not None:
            raise UsageError("give either config or paths with limits, not both",
                             param="paths", related=("config",))
        if update_baseline or baseline is not None or base is not None:
            param = ("update_baseline" if update_baseline
                     else "baseline" if baseline is not None else "base")
            raise UsageError(f"{param} needs a config file: limits given with paths have "
                             "no baseline", param=param)
        adhoc = adhoc_config(paths, limits or {}, model=model, tokenizer=tokenizer)
        result = _check_one(adhoc, strict=strict, catalog=catalog,
                            engine=RunConfig(engine=engine, jobs=jobs, scheduler=scheduler),
                            use_baseline=False)
        # No baseline is read or written, and a note has no config file to point at.
        return replace(result, baseline="", notices=tuple(
            replace(n, file=None) if n.file == adhoc.display else n for n in result.notices))
    for name, value in (("limits", limits), ("model", model), ("tokenizer", tokenizer)):
        if value is not None:
            raise UsageError(f"{name} applies to paths checked without a config; pass "
                             "paths=[...] too, or set it in the config", param=name,
                             related=("paths",))
    loaded = load_config(config)
    return _check_one(loaded, baseline=baseline, base=base, update_baseline=update_baseline,
                      strict=strict, catalog=catalog,
                      engine=RunConfig(engine=engine, jobs=jobs, scheduler=scheduler))


def check_many(
    configs: Sequence[str | Path] | None = None,
    *,
    under: str | Path | None = None,
    base: str | None = None,
    update_baseline: bool = False,
    strict: bool = False,
    catalog: str | Path | Catalog | None = None,
    engine: EngineKind | str = EngineKind.LOCAL,
    jobs: int | None = None,
    scheduler: str | None = None,
) -> CheckRun:
    """Check several configs in one run: each of ``configs``, or every config at or
    below the folder ``under`` (one per folder, ``.gitignore``d folders left out).

    Every config is read before any file is counted, so a broken one fails the run
    at once (exit code 2). Each config keeps its own folder, baseline and catalog key;
    the run's exit code is the worst of them.
    """
    if (configs is None) == (under is None):
        raise UsageError("give either configs=[...] or under=FOLDER", param="configs",
                         related=("under",))
    loaded: list[BudgetConfig] = []
    if configs is not None:
        if not configs:
            raise UsageError("configs is empty; name at least one config file",
                             param="configs")
        loaded = [load_config(c) for c in configs]
    else:
        folder = Path(under)  # type: ignore[arg-type]
        if not folder.is_dir():
            raise UsageError(f"under='{folder}' is not a folder", param="under")
        for path, shadowed in find_configs(folder):
            loaded.append(replace(load_config(path), shadowed=shadowed))
        if not loaded:
            raise UsageError(f"no tokcost.yaml (or [tool.tokcost] in pyproject.toml) at or "
                             f"below under='{display_path(folder)}'; create one or pass "
                             "configs=[...]", param="under")
    if update_baseline:
        for c in loaded:
            ensure_writable(c.baseline, create_folder=True)
    if base is not None:  # every config's ref resolved before any counting or writing
        for c in loaded:
            open_tree(c.root, base)
    run_engine = RunConfig(engine=engine, jobs=jobs, scheduler=scheduler)
    return CheckRun(tuple(
        _check_one(c, base=base, update_baseline=update_baseline, strict=strict,
                   catalog=catalog, engine=run_engine)
        for c in loaded
    ))


def _check_one(
    loaded: BudgetConfig,
    *,
    baseline: str | Path | None = None,
    base: str | None = None,
    update_baseline: bool = False,
    strict: bool,
    catalog: str | Path | Catalog | None,
    engine: RunConfig,
    use_baseline: bool = True,
) -> CheckResult:
    """Measure, record or read the baseline, judge: one config."""
    path = Path(baseline) if baseline is not None else loaded.baseline
    tree = open_tree(loaded.root, base) if base is not None else None  # fails before counting
    if update_baseline:
        ensure_writable(path, create_folder=True)  # before counting, not after
    measured = measure(loaded, catalog=catalog, engine=engine)
    known: Baseline | None = None
    if update_baseline:
        known = baseline_from(measured)
        write_baseline(path, known)
    if tree is not None:
        at_base = baseline_at(measured, tree, catalog=catalog)
        result = against_base(
            judge(measured, at_base, strict=strict, baseline_display=tree.ref.label),
            at_base, tree.ref)
    else:
        if use_baseline and not update_baseline:
            known = read_baseline(path)
        # A baseline given here is shown as given; the config's, relative to the cwd.
        shown = str(baseline) if baseline is not None else _shown(loaded.baseline)
        result = judge(measured, known, strict=strict, baseline_display=shown)
    shadow = shadow_notice(loaded)
    if shadow is not None:
        # The other file is named relative to the config's folder, like every file noted.
        other = loaded.shadowed[0].name
        result = replace(result, notices=(Notice(shadow, other), *result.notices))
    if update_baseline:
        result = replace(result, written=str(baseline) if baseline is not None
                         else _shown(path) or str(path))
    return locate(result, measured, catalog=catalog)


def _shown(path: Path) -> str | None:
    """The config's baseline as reports show it: relative to the cwd, or ``../x`` for a
    config found in a folder above (None: the report's own default)."""
    try:
        shown = display_path(path)
    except (OSError, ValueError):  # another drive on Windows
        return None
    return None if os.path.isabs(shown) else shown
