"""Budget evaluation: ``measure`` counts every budget's files (once per tokenizer), ``judge``
applies the limits (two steps, so ``update_baseline`` writes the counts before judging),
``locate`` finds the line where a file crosses its limit (a GitHub annotation points there)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pathspec

from tokcost.budget.baseline import Baseline, BaselineEntry, BaseRef, growth_percent
from tokcost.budget.config import Budget, BudgetConfig, BudgetConfigError
from tokcost.budget.report import ReportTables, render, render_json, tables, update_hint
from tokcost.errors import InputError, TokcostError
from tokcost.tokenizers import TokenizerChoice, model_choice, open_catalog, resolve_tokenizers
from tokcost.units import format_percent, format_usd, round_percent, spec_label

if TYPE_CHECKING:
    from tokcost.adapters import Tokenizer
    from tokcost.catalog import CatalogSource, ModelEntry
    from tokcost.runner import RunConfig, Runner

RULES = ("max_tokens_per_file", "max_total_tokens", "max_cost_per_call", "context_window",
         "max_growth_percent", "max_file_growth_percent")


@dataclass(frozen=True)
class Finding:
    """A limit a budget exceeds. ``path`` is None for budget-wide rules."""

    budget: str
    rule: str
    path: str | None
    actual: float | int | Decimal
    limit: float | int | Decimal
    message: str
    line: int | None = None  # where the file crosses the limit (locate)


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
    failures: tuple[Finding, ...] = ()
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
        """(path, before, now) of each file whose count changed, by path (None: new, gone)."""
        if self.baseline_total is None:
            return []
        return sorted([*((f.path, f.baseline_tokens, f.tokens) for f in self.files
                         if f.baseline_tokens != f.tokens),
                       *((path, before, None) for path, before in self.removed)])


@dataclass(frozen=True)
class ConfigResult:
    """One config checked: its budgets' results and the warnings, as reports show them."""

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
        return 2 if self.strict and self.notices else 0 if self.passed else 1

    def to_dict(self) -> dict[str, Any]:
        """The JSON report (``tokcost check --json``)."""
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


def match_files(budget: Budget, files: list[str]) -> tuple[list[str], list[str]]:
    """The files a budget's gitignore-style globs cover, and its globs that match none."""
    spec = pathspec.GitIgnoreSpec.from_lines(budget.paths)
    excluded = pathspec.GitIgnoreSpec.from_lines(budget.exclude) if budget.exclude else None
    chosen = [f for f in files if spec.match_file(f) and not (excluded and excluded.match_file(f))]
    unmatched = [glob for glob in budget.paths if not glob.startswith("!") and not any(
        pathspec.GitIgnoreSpec.from_lines([glob]).match_file(f) for f in files)]
    return chosen, unmatched


def _open(config: BudgetConfig, catalog: CatalogSource) -> Any:
    """The catalog for the budgets; a broken one the config names is the config's error."""
    if catalog is not None or config.catalog is None:
        return open_catalog(catalog)
    try:
        return open_catalog(config.catalog)
    except TokcostError as exc:
        # "catalog='x.yaml' does not exist" -> "tokcost.yaml: catalog: 'x.yaml' does not exist"
        text = str(exc).replace("catalog=", "", 1) if exc.param == "catalog" else str(exc)
        raise BudgetConfigError(f"{config.display}: catalog: {text}") from None


def measure(config: BudgetConfig, *, engine: RunConfig | Runner | None = None,
            catalog: CatalogSource = None, files: list[str] | None = None) -> Measurement:
    """Find and count every budget's ``files`` (default: all but ``.gitignore``d ones), each
    once per tokenizer, with one notice per file skipped or not UTF-8."""
    from tokcost.counting import Inputs, Skipped, count_paths, invalid_utf8_note, walk
    all_files = files if files is not None else sorted(
        Path(s.path).relative_to(config.root).as_posix() for s in walk([str(config.root)]))
    notices: list[Notice] = []
    plans: list[tuple[Measured, list[str]]] = []  # each budget and the files it covers
    tokenizers: dict[str, Tokenizer] = {}
    for budget in config.budgets:
        entry, choice, tok = _resolve(config, budget, catalog)
        # The spec as written ({mistral_common}/... unexpanded): the baseline is portable.
        key = choice.written_spec or choice.spec
        tokenizers.setdefault(key, tok)
        chosen, unmatched = match_files(budget, all_files)
        notices += [Notice(f"budget '{budget.name}': glob '{glob}' matches no file",
                           config.display, budget.line) for glob in unmatched]
        plans.append((Measured(budget, entry, key, bool(tok.exact), ()), chosen))
    counts: dict[tuple[str, str], tuple[int, int]] = {}  # (tokenizer, file) -> (bytes, tokens)
    file_notices: dict[str, Notice] = {}
    for key, tok in tokenizers.items():
        wanted = sorted({f for m, chosen in plans if m.tokenizer == key for f in chosen})
        if not wanted:
            continue
        report = count_paths(Inputs(paths=[str(config.root / f) for f in wanted],
                                    gitignore=False), {key: tok}, run=engine)
        if report.unreadable:
            # A budget over a file it cannot read would pass short of that file's tokens.
            first, n = report.unreadable[0], len(report.unreadable)
            more = f" (and {n - 1} more)" if n > 1 else ""
            raise InputError(f"{_relative(first.path, config.root)}: {first.reason}{more}; "
                             "the budgets cannot be checked without it")
        for fc in report.files:
            rel = _relative(fc.path, config.root)
            counts[key, rel] = (fc.bytes, fc.tokens[key])
            if fc.invalid_utf8_bytes:
                note = invalid_utf8_note(rel, fc.invalid_utf8_bytes)
                file_notices.setdefault(note, Notice(note, rel))
        for skip in report.skipped:
            rel = _relative(skip.path, config.root)
            # The input policy's words, as count says them: "skipped logo.png: binary (...)"
            note = Skipped(rel, skip.reason).note
            file_notices.setdefault(note, Notice(note, rel))
    measured = tuple(replace(m, files=tuple(FileResult(f, *counts[m.tokenizer, f]) for f in chosen
                                            if (m.tokenizer, f) in counts)) for m, chosen in plans)
    return Measurement(config, measured, (*notices, *file_notices.values()))


def _resolve(config: BudgetConfig, budget: Budget, catalog: CatalogSource,
             ) -> tuple[ModelEntry | None, TokenizerChoice, Tokenizer]:
    """A budget's model and tokenizer; a problem is the config's, at the budget's line."""
    where = f"{config.where(budget)}: budget '{budget.name}'"
    model_id = budget.model or config.model
    cat = None if model_id is None else _open(config, catalog)
    try:
        entry = None if cat is None else cat.resolve(model_id)
        _require(where, budget, entry)
        choice = _tokenizer(config, budget, entry, catalog)
        return entry, choice, choice.load()
    except BudgetConfigError:
        raise  # _require's own, already placed
    except TokcostError as exc:
        raise BudgetConfigError(f"{where}: {exc.template}", param=exc.param,
                                related=exc.related, value=exc.value) from None


def _tokenizer(config: BudgetConfig, budget: Budget, entry: ModelEntry | None,
               catalog: CatalogSource) -> TokenizerChoice:
    """The budget's own tokenizer, else its model's, else the config's, else the default."""
    if budget.tokenizer is None and entry is not None and entry.tokenizer:
        return model_choice(entry)
    spec = budget.tokenizer or config.tokenizer
    source = catalog if catalog is not None else config.catalog
    [choice] = resolve_tokenizers([spec] if spec else [], catalog=source)
    return choice


def _relative(path: str, root: Path) -> str:
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return path


def _require(where: str, budget: Budget, entry: ModelEntry | None) -> None:
    """Config errors found only once the model is known (exit code 2)."""
    for key, missing, what in (
        ("max_cost_per_call", entry is not None and not _priced(entry),
         "no price in the catalog, so {key} cannot be checked; add pricing to the catalog "
         "(catalog: FILE) or pick a priced model"),
        ("max_context_percent", entry is not None and not entry.context_window,
         "no context_window in the catalog, so {key} cannot be checked; add it to the catalog"),
    ):
        if getattr(budget, key) is None:
            continue
        if entry is None:
            raise BudgetConfigError(f"{where}: {key} needs a model; set 'model' in the budget "
                                    "or at the top")
        if missing:
            raise BudgetConfigError(f"{where}: model '{entry.id}' has " + what.format(key=key))


def _database_model(entry: ModelEntry) -> tuple[Any, Any] | None:
    """genai-prices's database and model behind an entry only it knows (price's models)."""
    if entry.pricing is not None or not (entry.source or "").startswith("genai-prices"):
        return None
    from tokcost.catalog.pricedb import load
    db = load()
    model = None if db is None else db.find(entry.id, entry.provider)
    return None if model is None else (db, model)


def _priced(entry: ModelEntry) -> bool:
    return entry.pricing is not None or _database_model(entry) is not None


def _call_cost(entry: ModelEntry, budget: Budget, input_tokens: int) -> Decimal:
    """Cost of one call with ``input_tokens`` of prompt, ``cached_share`` of it cached."""
    from tokcost.pricing import Usage, database_cost, estimate_cost
    cached = int((Decimal(input_tokens) * budget.cached_share).to_integral_value(ROUND_HALF_EVEN))
    found = _database_model(entry)
    if found is not None:  # today's price, as `price -m` gives it for such a model
        import datetime as dt
        usage = Usage(input_tokens, budget.output_tokens, cached)
        return database_cost(found[1], found[0], usage,
                             when=dt.datetime.now(dt.timezone.utc)).total
    # Long-context tiers, cached rates and the rest are the price model's business.
    return estimate_cost(entry, input_tokens=input_tokens, output_tokens=budget.output_tokens,
                         cached_tokens=cached).total


def judge(measurement: Measurement, baseline: Baseline | None, *, strict: bool = False,
          baseline_display: str | None = None, base: BaseRef | None = None) -> ConfigResult:
    """Apply every budget's limits to its counted files; growth against the ``baseline``
    file, or against the counts at the git ref ``base`` (no file to update then)."""
    config = measurement.config
    hint = update_hint(config.display)
    vs, accept = ("the baseline", f"; if intended, {hint}") if base is None else (base.label, "")
    notices = list(measurement.notices)
    results = []
    for m in measurement.budgets:
        name = m.budget.name
        entry = baseline.budgets.get(name) if baseline is not None else None
        if entry is not None and entry.tokenizer != m.tokenizer:
            notices.append(Notice(
                f"budget '{name}': baseline counted with {entry.tokenizer}, now "
                f"{m.tokenizer}; growth not checked; {hint}", config.display, m.budget.line))
            entry = None
        elif entry is None and (m.budget.max_growth_percent is not None
                                or m.budget.max_file_growth_percent is not None):
            why = "no baseline file" if baseline is None else "not in the baseline"
            notices.append(Notice(f"budget '{name}': {why}, growth not checked; {hint}",
                                  config.display, m.budget.line))
        judged = _measured_result(m, entry)
        found = sorted(_findings(judged, vs, accept),
                       key=lambda x: (x.path is not None, x.path or "", RULES.index(x.rule)))
        results.append(replace(judged, failures=tuple(found)))
    here = Path.cwd().resolve()
    return ConfigResult(
        config=config.display, baseline=baseline_display or _relative(str(config.baseline), here),
        baseline_found=baseline is not None, budgets=tuple(results), notices=tuple(notices),
        strict=strict, root=_relative(str(config.root), here) or ".", base=base)


def _measured_result(m: Measured, base: BaselineEntry | None) -> BudgetResult:
    """A budget's result before any limit is applied: baseline counts, costs, shares."""
    budget, entry = m.budget, m.model
    window = entry.context_window if entry is not None else None
    # The model whose price a cost limit uses (None: no cost to compute).
    priced = entry if (entry is not None and budget.max_cost_per_call is not None
                       and _priced(entry)) else None
    each = not budget.combine  # a call per file, not one call with all of them
    known = base.files if base is not None else {}
    files = tuple(FileResult(
        path=f.path, bytes=f.bytes, tokens=f.tokens, baseline_tokens=known.get(f.path),
        cost=_call_cost(priced, budget, f.tokens) if priced and each else None,
        context_percent=(f.tokens + budget.reserve) * 100.0 / window if each and window else None)
        for f in m.files)
    total = sum(f.tokens for f in files)
    if budget.combine:
        cost = _call_cost(priced, budget, total) if priced else None
        context = (total + budget.reserve) * 100.0 / window if window else None
    else:
        cost = max((f.cost for f in files if f.cost is not None), default=None)
        context = max((f.context_percent for f in files if f.context_percent is not None),
                      default=None)
    now = {f.path for f in files}
    return BudgetResult(
        budget=budget, model=entry.id if entry is not None else None, tokenizer=m.tokenizer,
        exact=m.exact, files=files, baseline_total=base.total_tokens if base is not None else None,
        cost=cost, context_percent=context, context_window=window,
        removed=tuple(sorted((p, n) for p, n in known.items() if p not in now)),
        renamed=tuple(sorted(base.renamed.items())) if base is not None else ())


def _findings(b: BudgetResult, vs: str, accept: str) -> Iterator[Finding]:
    """The limits the budget and its files exceed; ≈ before every number a proxy gave;
    growth is ``vs`` the baseline, ``accept`` says how to accept it."""
    budget, name, model, a = b.budget, b.name, b.model, "" if b.exact else "≈"
    window = 100.0 if budget.max_context_percent is None else budget.max_context_percent
    n = len(b.files)
    # The whole budget (path None), whose cost and window share count only with combine.
    whole = (None, b.total_tokens, b.cost if budget.combine else None,
             b.context_percent if budget.combine else None, b.growth_percent, b.baseline_total)
    for path, tokens, cost, share, growth, before in [whole, *(
            (f.path, f.tokens, f.cost, f.context_percent, f.growth_percent, f.baseline_tokens)
            for f in b.files)]:
        where, of = (f"budget '{name}': ", "") if path is None else (
            f"{path}: ", f" of budget '{name}'")
        rule, kind = ("max_total_tokens", "total") if path is None else (
            "max_tokens_per_file", "per-file")
        most = getattr(budget, rule)
        if most is not None and tokens > most:
            files = f" in {n} file{'' if n == 1 else 's'}" if path is None else ""
            yield Finding(name, rule, path, tokens, most,
                          f"{where}{a}{tokens:,} tokens{files} ({a}{spec_label(b.tokenizer)}), "
                          f"over the {most:,}-token {kind} limit{of}")
        most_cost = budget.max_cost_per_call
        if most_cost is not None and cost is not None and cost > most_cost:
            one = ", all files in one prompt" if path is None else ""
            yield Finding(name, "max_cost_per_call", path, cost, most_cost,
                          f"{where}{a}{format_usd(cost)} per call on {model} ({a}{tokens:,} "
                          f"input + {budget.output_tokens:,} output tokens{one}), over the "
                          f"{format_usd(most_cost)} limit{of}")
        if share is not None and share > window:
            yield Finding(name, "context_window", path, round_percent(share), window,
                          f"{where}{a}{tokens:,} prompt + {budget.reserve:,} reserved output "
                          f"tokens = {a}{format_percent(share)} of {model}'s "
                          f"{b.context_window:,}-token window, over {_pct(window)}%"
                          + ("" if path is None else f" (budget '{name}')"))
        rule = "max_growth_percent" if path is None else "max_file_growth_percent"
        most_growth = getattr(budget, rule)
        if most_growth is not None and growth is not None and growth > most_growth:
            yield Finding(name, rule, path, round_percent(growth), most_growth,
                          f"{where}{a}{tokens:,} tokens, {a}{format_percent(growth, sign=True)} "
                          f"against {vs} ({a}{before:,}), over the "
                          f"+{_pct(most_growth)}% limit{of}{accept}")


def baseline_from(measurement: Measurement) -> Baseline:
    """The baseline that records the measured counts."""
    return Baseline({m.budget.name: BaselineEntry(m.tokenizer, {f.path: f.tokens for f in m.files})
                     for m in measurement.budgets})


def _pct(value: float) -> str:
    """A limit as the user wrote it: 10 -> '10', 0.00001 -> '0.00001' (never '1e-05')."""
    shown = f"{value:g}"
    return f"{Decimal(repr(value)):f}" if "e" in shown else shown


def crossing_line(text: str, tokenizer: Tokenizer, limit: int) -> int | None:
    """The first line (1-based) through which ``text`` has more than ``limit`` tokens,
    or None when the whole text has at most ``limit``."""
    if limit < 0:
        return None  # even an empty file is over: no line is to blame
    ends = [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    if not ends or ends[-1] != len(text):
        ends.append(len(text))  # the last line has no newline
    if tokenizer.count(text) <= limit:
        return None
    # Invariant: lines 1..lo are within the limit (lo = 0: nothing), 1..hi are over it.
    lo, hi = 0, len(ends)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if tokenizer.count(text[: ends[mid - 1]]) > limit:
            hi = mid
        else:
            lo = mid
    return hi


def allowed_tokens(finding: Finding, budget: BudgetResult) -> int | None:
    """The most tokens the file of ``finding`` may have (None: growth or cost)."""
    if finding.rule == "max_tokens_per_file":
        return budget.budget.max_tokens_per_file
    if finding.rule == "context_window" and budget.context_window:
        return window_allowance(float(finding.limit), budget.context_window, budget.budget.reserve)
    return None


def window_allowance(share: float, window: int, reserve: int) -> int:
    """The most prompt tokens whose share of ``window``, with ``reserve`` output tokens, stays
    within ``share`` percent, in the judge's floats (negative when the reserve alone is over)."""
    most = int(share * window / 100) - reserve
    while most >= -reserve and (most + reserve) * 100.0 / window > share:
        most -= 1
    while (most + 1 + reserve) * 100.0 / window <= share:
        most += 1
    return most


def locate(result: ConfigResult, measurement: Measurement, *,
           catalog: CatalogSource = None) -> ConfigResult:
    """``result`` with ``line`` set on each failing file's finding that has one."""
    from tokcost.counting import Skipped, load_input
    config = measurement.config
    measured = {m.budget.name: m for m in measurement.budgets}
    texts: dict[str, str | None] = {}
    budgets = []
    for b in result.budgets:
        wanted = [(f, f.path, limit) for f in b.failures
                  if f.path is not None and (limit := allowed_tokens(f, b)) is not None]
        if not wanted:
            budgets.append(b)
            continue
        m = measured[b.name]
        tok = _tokenizer(config, m.budget, m.model, catalog).load()  # built once per process
        found: dict[int, Finding] = {}
        for f, path, limit in wanted:
            if path not in texts:  # read as it was counted: a skipped file has no line
                read = load_input(config.root / path)
                texts[path] = None if isinstance(read, Skipped) else read.text
            text = texts[path]
            if text is not None:
                found[id(f)] = replace(f, line=crossing_line(text, tok, limit))
        budgets.append(replace(b, failures=tuple(found.get(id(f), f) for f in b.failures)))
    return replace(result, budgets=tuple(budgets))
