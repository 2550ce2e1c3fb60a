"""Budget evaluation: match files, count them once per tokenizer, judge every limit.

Two steps, so ``update_baseline`` can write the counts before judging growth:
``measure(config)`` finds and counts the files of every budget; ``judge(measured,
baseline)`` applies the limits and returns a ``CheckResult`` whose order is
deterministic (budgets in config order, files by path, rules in a fixed order).

Rules (the names are stable; they appear in every report format):

=========================  ===================================================
``max_tokens_per_file``    each file's tokens
``max_total_tokens``       the budget's total tokens
``max_cost_per_call``      one call's cost: the file (or, with ``combine``, all
                           files) as input, plus ``output_tokens``
``context_window``         prompt + reserved output, as a share of the model's
                           window: at most ``max_context_percent`` (default 100)
``max_growth_percent``     the budget's total against the baseline
``max_file_growth_percent``  each file against the baseline
=========================  ===================================================
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pathspec

from tokcost.budget.baseline import Baseline, BaselineEntry, BaseRef, growth_percent
from tokcost.budget.config import Budget, BudgetConfig, BudgetConfigError
from tokcost.budget.report import money, percent, render, render_json, round_percent, tables
from tokcost.errors import InputError, TokcostError
from tokcost.tokenizers import (
    TokenizerChoice,
    model_choice,
    open_catalog,
    resolve_tokenizers,
    spec_label,
)

if TYPE_CHECKING:
    from tokcost.adapters import Tokenizer
    from tokcost.budget.report import ReportTables
    from tokcost.catalog import Catalog, ModelEntry
    from tokcost.runner import RunConfig, Runner

RULES = (
    "max_tokens_per_file",
    "max_total_tokens",
    "max_cost_per_call",
    "context_window",
    "max_growth_percent",
    "max_file_growth_percent",
)
_RULE_ORDER = {rule: i for i, rule in enumerate(RULES)}
# Reports are read in CI logs and PR comments, where the way to accept growth is the
# command, so findings and warnings name it (exceptions speak the API instead).
UPDATE_HINT = "run: tokcost check --update-baseline"
# The config files a bare `tokcost check` finds in the folder it runs in.
_FOUND_HERE = ("tokcost.yaml", "tokcost.yml", ".tokcost.yaml", "pyproject.toml")


def update_hint(config_display: str) -> str:
    """The command that accepts grown files for this config: a config a bare
    ``tokcost check`` would not find here is named, or the wrong baseline is updated."""
    if config_display in _FOUND_HERE:
        return UPDATE_HINT
    return f"run: tokcost check -c {config_display} --update-baseline"


# --- results ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """A limit a budget exceeds. ``path`` is None for budget-wide rules."""

    budget: str
    rule: str
    path: str | None
    actual: float | int | Decimal
    limit: float | int | Decimal
    message: str
    line: int | None = None  # where the file crosses the limit (tokcost.budget.crossing)


@dataclass(frozen=True)
class Notice:
    """A warning (an error under ``strict``), pointing at a file and line if it can."""

    message: str
    file: str | None = None
    line: int | None = None


@dataclass(frozen=True)
class FileResult:
    path: str  # relative to the config's folder, '/'-separated
    bytes: int
    tokens: int
    baseline_tokens: int | None = None
    cost: Decimal | None = None  # one call with this file as the prompt
    context_percent: float | None = None

    @property
    def growth_percent(self) -> float | None:
        return growth_percent(self.tokens, self.baseline_tokens)


@dataclass(frozen=True)
class Measured:
    """A budget's counted files, before any limit is applied."""

    budget: Budget
    model: ModelEntry | None
    tokenizer: str  # the spec as written (the catalog's for a model): it keys the baseline
    exact: bool
    files: tuple[FileResult, ...]


@dataclass(frozen=True)
class BudgetResult:
    budget: Budget
    model: str | None
    tokenizer: str
    exact: bool
    files: tuple[FileResult, ...]
    baseline_total: int | None
    cost: Decimal | None  # the largest cost of one call (the combined call with combine)
    context_percent: float | None  # the largest share of the window
    context_window: int | None
    failures: tuple[Finding, ...]
    removed: tuple[tuple[str, int], ...] = ()  # baseline files no longer there: (path, tokens)
    renamed: tuple[tuple[str, str], ...] = ()  # (path, its path at the git base), by path

    @property
    def name(self) -> str:
        return self.budget.name

    @property
    def total_tokens(self) -> int:
        return sum(f.tokens for f in self.files)

    @property
    def growth_percent(self) -> float | None:
        return growth_percent(self.total_tokens, self.baseline_total)

    @property
    def passed(self) -> bool:
        return not self.failures

    def changes(self) -> list[tuple[str, int | None, int | None]]:
        """Files whose count differs from the baseline: (path, before, now), by path.

        ``before`` is None for a new file, ``now`` None for a removed one. Empty when
        the budget has no baseline to compare with.
        """
        if self.baseline_total is None:
            return []
        rows: list[tuple[str, int | None, int | None]] = [
            (f.path, f.baseline_tokens, f.tokens) for f in self.files
            if f.baseline_tokens != f.tokens
        ]
        rows += [(path, before, None) for path, before in self.removed]
        return sorted(rows)


@dataclass(frozen=True)
class CheckResult:
    config: str
    baseline: str
    baseline_found: bool
    budgets: tuple[BudgetResult, ...]
    notices: tuple[Notice, ...] = ()
    strict: bool = False
    root: str = "."  # the config's folder relative to cwd: file paths are relative to it
    base: BaseRef | None = None  # the git ref growth was measured against, if not a file
    written: str | None = None  # the baseline file update_baseline wrote (even with base)

    @property
    def failures(self) -> list[Finding]:
        return [f for b in self.budgets for f in b.failures]

    @property
    def passed(self) -> bool:
        return all(b.passed for b in self.budgets)

    @property
    def exit_code(self) -> int:
        """0 every budget holds, 1 a budget is exceeded, 2 warnings under ``strict``."""
        if self.strict and self.notices:
            return 2
        return 0 if self.passed else 1

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (``tokcost check --json``; keys in the README)."""
        return render_json(self)

    def render(self, fmt: str) -> str:
        """The report as ``json``, ``github``, ``markdown`` or ``junit`` text."""
        return render(self, fmt)

    def tables(self) -> ReportTables:
        """The formatted cells of the report's tables (for a terminal renderer)."""
        return tables(self)


@dataclass(frozen=True)
class Measurement:
    config: BudgetConfig
    budgets: tuple[Measured, ...]
    notices: tuple[Notice, ...]


# --- measuring ------------------------------------------------------------------------------


def list_files(root: Path) -> list[str]:
    """Every file below ``root`` (``.gitignore``d paths and ``.git`` left out), sorted."""
    from tokcost.counting import walk

    rel = [Path(s.path).relative_to(root).as_posix() for s in walk([str(root)])]
    return sorted(rel)


def match_files(budget: Budget, files: list[str]) -> tuple[list[str], list[str]]:
    """The files a budget covers, and its (non-negated) globs that matched nothing.

    Globs are gitignore-style (pathspec): ``*.md`` matches at any depth,
    ``/README.md`` only at the top, ``prompts/**`` everything below prompts/.
    """
    spec = pathspec.GitIgnoreSpec.from_lines(budget.paths)
    excluded = pathspec.GitIgnoreSpec.from_lines(budget.exclude) if budget.exclude else None
    chosen = [
        f for f in files if spec.match_file(f) and not (excluded and excluded.match_file(f))
    ]
    unmatched = []
    for glob in budget.paths:
        if glob.startswith("!"):
            continue
        one = pathspec.GitIgnoreSpec.from_lines([glob])
        if not any(one.match_file(f) for f in files):
            unmatched.append(glob)
    return chosen, unmatched


def _open(config: BudgetConfig, catalog: str | Path | Catalog | None,
          source: str | Path | Catalog | None) -> Catalog:
    """The catalog for the budgets: a broken one is its own error, and one the config
    names is blamed on the config's ``catalog`` key, not on a parameter never passed."""
    if catalog is not None or config.catalog is None:
        return open_catalog(source)
    try:
        return open_catalog(source)
    except TokcostError as exc:
        # "catalog='x.yaml' does not exist" -> "tokcost.yaml: catalog: 'x.yaml' does not exist"
        text = str(exc).replace("catalog=", "", 1) if exc.param == "catalog" else str(exc)
        raise BudgetConfigError(f"{config.display}: catalog: {text}") from None


def measure(
    config: BudgetConfig,
    *,
    engine: RunConfig | Runner | None = None,
    catalog: str | Path | Catalog | None = None,
    files: list[str] | None = None,
) -> Measurement:
    """Find and count the files of every budget (each file once per tokenizer).

    ``catalog`` replaces the config's ``catalog`` key (None: the key, else
    ``$TOKCOST_CATALOG`` or the shipped models.yaml); it resolves models and
    ``model:ID`` tokenizer specs alike. ``engine`` runs the counting (default: here).
    """
    from tokcost.counting import Inputs, Skipped, count_paths, invalid_utf8_note

    source = catalog if catalog is not None else config.catalog
    notices: list[Notice] = []
    plans: list[tuple[Budget, ModelEntry | None, str, bool, list[str]]] = []
    tokenizers: dict[str, Tokenizer] = {}
    all_files = list_files(config.root) if files is None else files
    for budget in config.budgets:
        where = f"{config.where(budget)}: budget '{budget.name}'"
        model_id = budget.model or config.model
        entry = None
        if model_id is not None:
            cat = _open(config, catalog, source)
            try:
                entry = cat.resolve(model_id)
            except TokcostError as exc:
                raise BudgetConfigError(f"{where}: {exc}", param=exc.param) from None
        _require(config, budget, entry)
        try:
            choice = _tokenizer(config, budget, entry, source)
            tok = choice.load()
        except TokcostError as exc:
            raise BudgetConfigError(f"{where}: {exc}", param=exc.param) from None
        key = _key(choice)
        tokenizers.setdefault(key, tok)
        chosen, unmatched = match_files(budget, all_files)
        for glob in unmatched:
            notices.append(Notice(
                f"budget '{budget.name}': glob '{glob}' matches no file", config.display,
                budget.line))
        plans.append((budget, entry, key, bool(tok.exact), chosen))

    counts: dict[tuple[str, str], tuple[int, int]] = {}
    file_notices: dict[str, Notice] = {}  # one per file, however many tokenizers read it
    for key, tok in tokenizers.items():
        wanted = sorted({f for _, _, k, _, chosen in plans if k == key for f in chosen})
        if not wanted:
            continue
        report = count_paths(Inputs(paths=[str(config.root / f) for f in wanted],
                                    gitignore=False), {key: tok}, run=engine)
        if report.unreadable:
            # A budget over a file it cannot read would pass short of that file's tokens.
            first = report.unreadable[0]
            more = f" (and {len(report.unreadable) - 1} more)" if len(report.unreadable) > 1 else ""
            raise InputError(f"{_relative(first.path, config.root)}: {first.reason}{more}; "
                             "the budgets cannot be checked without it")
        for fc in report.files:
            rel = Path(fc.path).relative_to(config.root).as_posix()
            counts[(key, rel)] = (fc.bytes, fc.tokens[key])
            if fc.invalid_utf8_bytes:
                note = invalid_utf8_note(rel, fc.invalid_utf8_bytes)
                file_notices.setdefault(note, Notice(note, rel))
        for skip in report.skipped:
            rel = _relative(skip.path, config.root)
            # The input policy's words, as count says them: "skipped logo.png: binary (...)"
            note = Skipped(rel, skip.reason).note
            file_notices.setdefault(note, Notice(note, rel))
    notices += file_notices.values()

    measured = []
    for budget, entry, key, exact, chosen in plans:
        rows = tuple(
            FileResult(path=f, bytes=counts[(key, f)][0], tokens=counts[(key, f)][1])
            for f in chosen
            if (key, f) in counts
        )
        measured.append(Measured(budget, entry, key, exact, rows))
    return Measurement(config, tuple(measured), tuple(notices))


def _tokenizer(config: BudgetConfig, budget: Budget, entry: ModelEntry | None,
               catalog: str | Path | Catalog | None) -> TokenizerChoice:
    """The budget's own tokenizer, else its model's, else the config's, else the default.

    A ``model:ID`` spec names a catalog model's tokenizer, through the same catalog.
    """
    if budget.tokenizer is None and entry is not None and entry.tokenizer:
        return model_choice(entry)
    spec = budget.tokenizer or config.tokenizer
    [choice] = resolve_tokenizers([spec] if spec else [], catalog=catalog)
    return choice


def _key(choice: TokenizerChoice) -> str:
    # The spec as written ({mistral_common}/... unexpanded) keys the counts and is
    # recorded in the baseline, which must not depend on this machine.
    return choice.written_spec or choice.spec


def _relative(path: str, root: Path) -> str:
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return path


def _require(config: BudgetConfig, budget: Budget, entry: ModelEntry | None) -> None:
    """Config errors found only once the model is known (exit code 2)."""
    where = f"{config.where(budget)}: budget '{budget.name}'"
    if budget.max_cost_per_call is not None:
        if entry is None:
            raise BudgetConfigError(
                f"{where}: max_cost_per_call needs a model; set 'model' in the budget "
                "or at the top"
            )
        if entry.pricing is None:
            raise BudgetConfigError(
                f"{where}: model '{entry.id}' has no price in the catalog, so max_cost_per_call "
                "cannot be checked; add pricing to the catalog (catalog: FILE) or pick a "
                "priced model"
            )
    if budget.max_context_percent is not None:
        if entry is None:
            raise BudgetConfigError(
                f"{where}: max_context_percent needs a model; set 'model' in the budget "
                "or at the top"
            )
        if not entry.context_window:
            raise BudgetConfigError(
                f"{where}: model '{entry.id}' has no context_window in the catalog, so "
                "max_context_percent cannot be checked; add it to the catalog"
            )


# --- judging ------------------------------------------------------------------------------


def _call_cost(entry: ModelEntry, budget: Budget, input_tokens: int) -> Decimal:
    """Cost of one call with ``input_tokens`` of prompt, ``cached_share`` of it cached."""
    from tokcost.pricing import estimate_cost

    cached = int((Decimal(input_tokens) * budget.cached_share).to_integral_value(ROUND_HALF_EVEN))
    # Long-context tiers, cached rates and the rest are the price model's business.
    breakdown = estimate_cost(
        entry, input_tokens=input_tokens, output_tokens=budget.output_tokens, cached_tokens=cached
    )
    return breakdown.total


def judge(measurement: Measurement, baseline: Baseline | None, *, strict: bool = False,
          baseline_display: str | None = None) -> CheckResult:
    """Apply every budget's limits to its counted files."""
    config = measurement.config
    notices = list(measurement.notices)
    results = []
    for m in measurement.budgets:
        budget = m.budget
        base: BaselineEntry | None = None
        if baseline is not None:
            base = baseline.budgets.get(budget.name)
        wants_growth = (
            budget.max_growth_percent is not None or budget.max_file_growth_percent is not None
        )
        if base is not None and base.tokenizer != m.tokenizer:
            notices.append(Notice(
                f"budget '{budget.name}': baseline counted with {base.tokenizer}, now "
                f"{m.tokenizer}; growth not checked; {update_hint(config.display)}",
                config.display, budget.line))
            base = None
        elif base is None and wants_growth:
            why = "no baseline file" if baseline is None else "not in the baseline"
            notices.append(Notice(
                f"budget '{budget.name}': {why}, growth not checked; {update_hint(config.display)}",
                config.display, budget.line))
        results.append(_judge_one(config, m, base))
    return CheckResult(
        config=config.display,
        baseline=baseline_display or _relative(str(config.baseline), Path.cwd().resolve()),
        baseline_found=baseline is not None,
        budgets=tuple(results),
        notices=tuple(notices),
        strict=strict,
        root=_relative(str(config.root), Path.cwd().resolve()) or ".",
    )


def _judge_one(config: BudgetConfig, m: Measured, base: BaselineEntry | None) -> BudgetResult:
    budget, entry = m.budget, m.model
    window = entry.context_window if entry is not None else None
    model = entry.id if entry is not None else None
    # ≈ right before every number the proxy gave, and before its name (as in the tables).
    a = "" if m.exact else "≈"
    tok = a + spec_label(m.tokenizer)
    # The model whose price a cost limit uses (None: no cost to compute).
    priced = entry if (
        entry is not None and entry.pricing is not None and budget.max_cost_per_call is not None
    ) else None
    files = []
    for f in m.files:
        files.append(FileResult(
            path=f.path, bytes=f.bytes, tokens=f.tokens,
            baseline_tokens=base.files.get(f.path) if base is not None else None,
            cost=_call_cost(priced, budget, f.tokens) if priced and not budget.combine else None,
            context_percent=_share(f.tokens + budget.reserve, window) if not budget.combine
            else None,
        ))
    total = sum(f.tokens for f in files)
    if budget.combine:
        cost = _call_cost(priced, budget, total) if priced else None
        context = _share(total + budget.reserve, window)
    else:
        costs = [f.cost for f in files if f.cost is not None]
        cost = max(costs) if costs else None
        shares = [f.context_percent for f in files if f.context_percent is not None]
        context = max(shares) if shares else None

    found: list[Finding] = []
    name = budget.name

    def add(rule: str, path: str | None, actual: Any, limit: Any, message: str) -> None:
        found.append(Finding(name, rule, path, actual, limit, message))

    for f in files:
        if budget.max_tokens_per_file is not None and f.tokens > budget.max_tokens_per_file:
            add("max_tokens_per_file", f.path, f.tokens, budget.max_tokens_per_file,
                f"{f.path}: {a}{f.tokens:,} tokens ({tok}), over the "
                f"{budget.max_tokens_per_file:,}-token per-file limit of budget '{name}'")
        if (budget.max_cost_per_call is not None and f.cost is not None
                and f.cost > budget.max_cost_per_call):
            add("max_cost_per_call", f.path, f.cost, budget.max_cost_per_call,
                f"{f.path}: {a}{money(f.cost)} per call on {model} ({a}{f.tokens:,} input + "
                f"{budget.output_tokens:,} output tokens), over the "
                f"{money(budget.max_cost_per_call)} limit of budget '{name}'")
        if f.context_percent is not None:
            limit = budget.max_context_percent if budget.max_context_percent is not None else 100.0
            if f.context_percent > limit:
                add("context_window", f.path, round_percent(f.context_percent), limit,
                    f"{f.path}: {a}{f.tokens:,} prompt + {budget.reserve:,} reserved output "
                    f"tokens = {a}{percent(f.context_percent)} of {model}'s {window:,}-token "
                    f"window, over {_pct(limit)}% (budget '{name}')")
        g = f.growth_percent
        if budget.max_file_growth_percent is not None and g is not None and (
            g > budget.max_file_growth_percent
        ):
            add("max_file_growth_percent", f.path, round_percent(g),
                budget.max_file_growth_percent,
                f"{f.path}: {a}{f.tokens:,} tokens, {a}{percent(g, sign=True)} against the "
                f"baseline ({a}{f.baseline_tokens:,}), over the "
                f"+{_pct(budget.max_file_growth_percent)}% limit of budget '{name}'; "
                f"if intended, {update_hint(config.display)}")
    if budget.max_total_tokens is not None and total > budget.max_total_tokens:
        add("max_total_tokens", None, total, budget.max_total_tokens,
            f"budget '{name}': {a}{total:,} tokens in {len(files)} file"
            f"{'' if len(files) == 1 else 's'} ({tok}), over the "
            f"{budget.max_total_tokens:,}-token total limit")
    if budget.combine and cost is not None and budget.max_cost_per_call is not None and (
        cost > budget.max_cost_per_call
    ):
        add("max_cost_per_call", None, cost, budget.max_cost_per_call,
            f"budget '{name}': {a}{money(cost)} per call on {model} ({a}{total:,} input + "
            f"{budget.output_tokens:,} output tokens, all files in one prompt), over the "
            f"{money(budget.max_cost_per_call)} limit")
    if budget.combine and context is not None:
        limit = budget.max_context_percent if budget.max_context_percent is not None else 100.0
        if context > limit:
            add("context_window", None, round_percent(context), limit,
                f"budget '{name}': {a}{total:,} prompt + {budget.reserve:,} reserved output "
                f"tokens = {a}{percent(context)} of {model}'s {window:,}-token window, over "
                f"{_pct(limit)}%")
    base_total = base.total_tokens if base is not None else None
    g = growth_percent(total, base_total)
    if budget.max_growth_percent is not None and g is not None and g > budget.max_growth_percent:
        add("max_growth_percent", None, round_percent(g), budget.max_growth_percent,
            f"budget '{name}': {a}{total:,} tokens, {a}{percent(g, sign=True)} against the "
            f"baseline ({a}{base_total:,}), over the +{_pct(budget.max_growth_percent)}% limit; "
            f"if intended, {update_hint(config.display)}")
    found.sort(key=lambda x: (x.path is not None, x.path or "", _RULE_ORDER[x.rule]))
    return BudgetResult(
        budget=budget, model=model, tokenizer=m.tokenizer, exact=m.exact, files=tuple(files),
        baseline_total=base_total, cost=cost, context_percent=context, context_window=window,
        failures=tuple(found),
        removed=tuple(sorted(
            (p, n) for p, n in (base.files.items() if base is not None else ())
            if p not in {f.path for f in files}
        )),
    )


def baseline_from(measurement: Measurement) -> Baseline:
    """The baseline that records the measured counts."""
    return Baseline({
        m.budget.name: BaselineEntry(m.tokenizer, {f.path: f.tokens for f in m.files})
        for m in measurement.budgets
    })


def _share(tokens: int, window: int | None) -> float | None:
    return None if not window else tokens * 100.0 / window


def _pct(value: float) -> str:
    """A limit as the user wrote it: 10 -> '10', 0.00001 -> '0.00001' (never '1e-05')."""
    shown = f"{value:g}"
    return f"{Decimal(repr(value)):f}" if "e" in shown else shown
