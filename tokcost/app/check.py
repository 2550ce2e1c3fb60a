"""Use case ``check``: count every budget's files, record the baseline if asked, judge
growth against the baseline file or a git ref, and render the reports."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokcost.app import names
from tokcost.atomic import ensure_writable
from tokcost.budget import baseline_from, judge, load_config, measure, read_baseline, write_baseline
from tokcost.budget.baseline import GitTree, baseline_at, check_target, open_tree
from tokcost.budget.config import adhoc_config, display_path, find_configs, shadow_notice
from tokcost.budget.evaluate import Notice, locate
from tokcost.budget.report import render, run_headline
from tokcost.errors import UsageError, arg
from tokcost.parts import Parts
from tokcost.runner import EngineKind, RunConfig
from tokcost.units import parse_count

if TYPE_CHECKING:
    from tokcost.budget import BudgetConfig, BudgetResult, ConfigResult, Finding
    from tokcost.catalog import CatalogSource

__all__ = ["CheckRequest", "check"]


@dataclass(frozen=True, kw_only=True)
class AdhocBudget:
    """``paths`` checked without a config file, as a tokcost.yaml with one budget would."""

    paths: tuple[str, ...] = ()
    limits: Mapping[str, Any] = field(default_factory=dict)
    model: str | None = None
    tokenizer: str | None = None
    budget_config: BudgetConfig = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "paths", names(self.paths))
        object.__setattr__(self, "limits", dict(self.limits))
        if not self.paths:
            raise UsageError(f"{arg('limits')} apply to files checked without a config; pass "
                             f"{arg('paths')} too, or set them in the config", param="limits",
                             related=("paths",))
        object.__setattr__(self, "budget_config", adhoc_config(
            self.paths, self.limits, model=self.model, tokenizer=self.tokenizer))


@dataclass(frozen=True, kw_only=True)
class Growth:
    """Growth against the ``baseline`` file (None: the config's) or the git ref ``base``."""

    baseline: Path | None = None
    base: str | None = None
    update_baseline: bool = False
    force: bool = False  # write the baseline anywhere, over any regular file

    def __post_init__(self) -> None:
        if self.baseline is not None:
            object.__setattr__(self, "baseline", Path(self.baseline))


@dataclass(frozen=True, kw_only=True)
class CheckRequest(Parts):
    """``config`` files (none: found walking up), every config ``under`` a folder, or ``adhoc``."""

    config: tuple[Path, ...] = ()
    under: Path | None = None
    adhoc: AdhocBudget | None = None
    growth: Growth = field(default_factory=Growth)
    strict: bool = False
    catalog: CatalogSource = None
    engine: EngineKind | str = EngineKind.LOCAL
    jobs: int | None = None
    scheduler: str | None = None
    run: RunConfig = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "config", tuple(map(Path, names(self.config))))
        if self.jobs is not None:
            object.__setattr__(self, "jobs", parse_count(self.jobs, param="jobs", minimum=1))
        object.__setattr__(self, "run", RunConfig(engine=self.engine, jobs=self.jobs,
                                                  scheduler=self.scheduler))
        if self.under is not None:
            object.__setattr__(self, "under", Path(self.under))
            if not self.under.is_dir():
                raise UsageError(f"{arg('under', repr(str(self.under)))} is not a folder",
                                 param="under", value=self.under)
        if self.config and self.under is not None:
            raise UsageError(f"{arg('under')} finds every config below a folder; drop "
                             f"{arg('config')}, or drop {arg('under')} and repeat {arg('config')}",
                             param="under", related=("config",))
        # Paths with limits are the whole check: no config, and no baseline.
        if self.adhoc is not None and (self.config or self.under is not None):
            raise UsageError(f"give {arg('paths')} with limits, or {arg('config')}/"
                             f"{arg('under')}, not both: {arg('paths')} are checked without a "
                             "config file", param="paths", related=("config", "under"))
        g = self.growth
        for name, is_set in (("update_baseline", g.update_baseline),
                             ("baseline", g.baseline is not None), ("base", g.base is not None)):
            if self.adhoc is not None and is_set:
                raise UsageError(f"{arg(name)} needs a config file; {arg('paths')} with limits "
                                 "have no baseline (write a tokcost.yaml to track growth)",
                                 param=name, related=("paths",))
        if self.several and self.growth.baseline is not None:
            raise UsageError(f"{arg('baseline')} names one file, and each of several configs "
                             f"has its own baseline; drop {arg('baseline')}", param="baseline")

    @property
    def several(self) -> bool:
        """Whether the run checks several configs (each reported under its own name)."""
        return self.under is not None or len(self.config) > 1


@dataclass(frozen=True)
class CheckResult:
    """Every config checked, in order; unless ``several``, it reports as its one config."""

    configs: tuple[ConfigResult, ...]
    several: bool = False

    @property
    def exit_code(self) -> int:
        """0 every budget holds, 1 a budget is exceeded, 2 warnings under ``strict``."""
        return max((r.exit_code for r in self.configs), default=0)

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    @property
    def failed(self) -> list[ConfigResult]:
        return [r for r in self.configs if r.exit_code]

    @property
    def budgets(self) -> list[BudgetResult]:
        return [b for r in self.configs for b in r.budgets]

    @property
    def failures(self) -> list[Finding]:
        return [f for r in self.configs for f in r.failures]

    @property
    def headline(self) -> str:
        """``1 of 3 configs failed (svc/tokcost.yaml)``, ``all 3 configs hold``."""
        return run_headline(self.configs)

    def to_dict(self) -> dict[str, Any] | list[dict[str, Any]]:
        """The ``tokcost check --json`` document: the config's, or a list of them."""
        docs = [r.to_dict() for r in self.configs]
        return docs if self.several or len(docs) != 1 else docs[0]

    def render(self, fmt: str, *, quiet: bool = False, hide_passed: bool = False) -> str:
        """The report in one of ``tokcost.budget.FORMATS`` (see ``report.render``)."""
        return render(self.configs, fmt, several=self.several or len(self.configs) != 1,
                      quiet=quiet, hide_passed=hide_passed)


def check(request: CheckRequest) -> CheckResult:
    """Check the request's budgets (every config read, every git ref resolved first)."""
    if request.adhoc is not None:
        configs = [request.adhoc.budget_config]
    elif request.under is None:
        configs = [load_config(c) for c in request.config] or [load_config(None)]
    else:
        configs = [replace(load_config(path), shadowed=shadowed)
                   for path, shadowed in find_configs(request.under)]
        if not configs:
            raise UsageError(f"no tokcost.yaml (or [tool.tokcost] in pyproject.toml) at or below "
                             f"'{display_path(request.under)}' ({arg('under')}); create one or "
                             f"pass {arg('config')}", param="under", related=("config",))
    growth = request.growth
    trees = [None if growth.base is None else open_tree(c.root, growth.base) for c in configs]
    if growth.update_baseline:  # before counting, not after
        for c in configs:
            if not growth.force:  # a --baseline given here may lie anywhere
                check_target(growth.baseline or c.baseline, None if growth.baseline else c.root)
            ensure_writable(growth.baseline or c.baseline, create_folder=True)
    results = tuple(_check_one(c, tree, request) for c, tree in zip(configs, trees, strict=True))
    return CheckResult(results, several=request.several)


def _check_one(loaded: BudgetConfig, tree: GitTree | None, request: CheckRequest) -> ConfigResult:
    """Measure, record or read the baseline (or count the files at the ref), judge."""
    given, update = request.growth.baseline, request.growth.update_baseline
    path = given if given is not None else loaded.baseline
    measured = measure(loaded, catalog=request.catalog, engine=request.run)
    known = baseline_from(measured) if update else None
    if known is not None:
        write_baseline(path, known)
    if tree is None:
        if request.adhoc is None and not update:
            known = read_baseline(path)
        # A baseline given here is shown as given; the config's, relative to the cwd.
        shown = str(given) if given is not None else _shown(loaded.baseline)
    else:
        known, shown = baseline_at(measured, tree, catalog=request.catalog), tree.ref.label
    result = judge(measured, known, strict=request.strict, baseline_display=shown,
                          base=tree.ref if tree is not None else None)
    shadow = shadow_notice(loaded)
    if shadow is not None:
        # The other file is named relative to the config's folder, like every file noted.
        result = replace(result, notices=(Notice(shadow, loaded.shadowed[0].name), *result.notices))
    if update:
        result = replace(result, written=str(given) if given is not None
                         else _shown(path) or str(path))
    result = locate(result, measured, catalog=request.catalog)
    if request.adhoc is not None:
        # No baseline is read or written, and a note has no config file to point at.
        result = replace(result, baseline="", notices=tuple(
            replace(n, file=None) if n.file == loaded.display else n for n in result.notices))
    return result


def _shown(path: Path) -> str | None:
    """A baseline as reports show it: relative to the cwd (None: the report's default)."""
    try:
        shown = display_path(path)
    except (OSError, ValueError):  # another drive on Windows
        return None
    return None if os.path.isabs(shown) else shown
