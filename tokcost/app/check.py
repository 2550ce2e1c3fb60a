"""``tokcost check``: count every budget's files, record the baseline if asked, judge.

One call does what the command does: read the config, resolve each budget's model
and tokenizer through one catalog, count the files on one engine, write the
baseline (``update_baseline=True``, atomically) or read it, and apply the limits.
The result's ``to_dict()`` is ``tokcost check --json``; ``render(fmt)`` gives the
GitHub, Markdown and JUnit reports.

With ``base="main"`` growth is measured against the files as they are at that git ref
(``tokcost.budget.git_base``, no checkout) instead of against a baseline file.

>>> import tokcost
>>> # result = tokcost.check("tokcost.yaml", strict=True)
>>> # result.exit_code, result.render("markdown")
>>> # tokcost.check(base="origin/main").render("github")
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tokcost.app.engine import EngineKind, make_engine
from tokcost.atomic import ensure_writable
from tokcost.budget import (
    Baseline,
    CheckResult,
    baseline_from,
    judge,
    load_config,
    measure,
    read_baseline,
    write_baseline,
)
from tokcost.budget.crossing import locate
from tokcost.budget.git_base import against_base, baseline_at, open_tree

if TYPE_CHECKING:
    from tokcost.catalog import Catalog

__all__ = ["CheckResult", "check"]


def check(
    config: str | Path | None = None,
    *,
    baseline: str | Path | None = None,
    base: str | None = None,
    update_baseline: bool = False,
    strict: bool = False,
    catalog: str | Path | Catalog | None = None,
    engine: EngineKind | str = EngineKind.LOCAL,
    jobs: int = 1,
    scheduler: str | None = None,
) -> CheckResult:
    """Check the budgets of ``config`` (None: tokcost.yaml or ``[tool.tokcost]`` here).

    ``baseline`` replaces the config's baseline file and ``catalog`` its catalog.
    ``base`` (a git branch, tag or commit) measures growth against the budgeted files
    as they are at that ref, counted the same way, instead of against a baseline file:
    files new, removed and renamed since are reported, and a baseline file is then not
    read at all (``base`` wins over ``baseline``). A missing git, a ref that names no
    commit or a config outside a git work tree is a UsageError (exit code 2).
    ``update_baseline`` writes today's counts before judging, so growth is measured
    against them (with ``base``, the file is still written, and growth is against
    ``base``). ``strict`` makes warnings (a glob matching nothing, no baseline) fail
    with exit code 2. ``engine``/``jobs``/``scheduler`` choose where counting runs.
    A failing file's finding has the ``line`` where it crosses a token limit.
    """
    loaded = load_config(config)
    path = Path(baseline) if baseline is not None else loaded.baseline
    tree = open_tree(loaded.root, base) if base is not None else None  # fails before counting
    if update_baseline:
        ensure_writable(path, create_folder=True)  # before counting, not after
    measured = measure(loaded, catalog=catalog,
                       engine=make_engine(engine, jobs=jobs, scheduler=scheduler))
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
        if not update_baseline:
            known = read_baseline(path)
        # A baseline given here is shown as given; the config's, relative to the cwd.
        shown = str(baseline) if baseline is not None else None
        result = judge(measured, known, strict=strict, baseline_display=shown)
    return locate(result, measured, catalog=catalog)
