"""``tokcost check``: count every budget's files, record the baseline if asked, judge.

One call does what the command does: read the config, resolve each budget's model
and tokenizer through one catalog, count the files on one engine, write the
baseline (``update_baseline=True``, atomically) or read it, and apply the limits.
The result's ``to_dict()`` is ``tokcost check --json``; ``render(fmt)`` gives the
GitHub, Markdown and JUnit reports.

>>> import tokcost
>>> # result = tokcost.check("tokcost.yaml", strict=True)
>>> # result.exit_code, result.render("markdown")
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

if TYPE_CHECKING:
    from tokcost.catalog import Catalog

__all__ = ["CheckResult", "check"]


def check(
    config: str | Path | None = None,
    *,
    baseline: str | Path | None = None,
    update_baseline: bool = False,
    strict: bool = False,
    catalog: str | Path | Catalog | None = None,
    engine: EngineKind | str = EngineKind.LOCAL,
    jobs: int = 1,
    scheduler: str | None = None,
) -> CheckResult:
    """Check the budgets of ``config`` (None: tokcost.yaml or ``[tool.tokcost]`` here).

    ``baseline`` replaces the config's baseline file and ``catalog`` its catalog.
    ``update_baseline`` writes today's counts before judging, so growth is measured
    against them. ``strict`` makes warnings (a glob matching nothing, no baseline)
    fail with exit code 2. ``engine``/``jobs``/``scheduler`` choose where counting runs.
    """
    loaded = load_config(config)
    path = Path(baseline) if baseline is not None else loaded.baseline
    if update_baseline:
        ensure_writable(path, create_folder=True)  # before counting, not after
    measured = measure(loaded, catalog=catalog,
                       engine=make_engine(engine, jobs=jobs, scheduler=scheduler))
    known: Baseline | None
    if update_baseline:
        known = baseline_from(measured)
        write_baseline(path, known)
    else:
        known = read_baseline(path)
    # A baseline given here is shown as given; the config's, relative to the cwd.
    shown = str(baseline) if baseline is not None else None
    return judge(measured, known, strict=strict, baseline_display=shown)
