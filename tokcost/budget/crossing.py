"""Where a file crosses its token limit: the first line L such that the text through the
end of L, counted as one text, is over the limit (the line a GitHub annotation points at)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokcost.adapters import Tokenizer
    from tokcost.budget.evaluate import BudgetResult, ConfigResult, Finding, Measurement
    from tokcost.catalog import CatalogSource


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
        limit = budget.budget.max_tokens_per_file
        return int(limit) if limit is not None else None
    if finding.rule == "context_window" and budget.context_window:
        window, reserve = budget.context_window, budget.budget.reserve
        return window_allowance(float(finding.limit), window, reserve)
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
    from tokcost.budget.evaluate import _tokenizer
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
