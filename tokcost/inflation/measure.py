"""Measuring: every sample counted with every meter, and the premium tokens(X) /
tokens(baseline) on the same content (Petrov et al. 2023, "Language Model Tokenizers
Introduce Unfairness Between Languages")."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from tokcost.adapters.base import Tokenizer, count_backend, count_many, plan_run
from tokcost.errors import UsageError, arg
from tokcost.inflation.corpus import Group, Sample, paragraphs

if TYPE_CHECKING:
    from tokcost.catalog.schema import ModelEntry
    from tokcost.tokenizers import TokenizerChoice

# The ratios a JSON report rounds to four digits, in its key order.
_ROUNDED = ("bytes_per_token", "chars_per_token", "words_per_token", "tokens_per_word",
            "tokens_per_line", "premium")
# (tokenizer id, group index, sample code) -> tokens, or the tokens of each aligned sentence
_Counts = dict[tuple[int, int, str], int]
_Units = dict[tuple[int, int, str], list[int]]


@dataclass(frozen=True)
class Meter:
    """A tokenizer to measure with, and optionally the catalog model that prices it."""

    label: str
    spec: str
    tokenizer: Tokenizer
    exact: bool = True
    model: ModelEntry | None = None

    @classmethod
    def of(cls, spec: str, label: str | None = None) -> Meter:
        """A meter for a tokenizer spec, labelled ``label`` (default: the spec)."""
        from tokcost.adapters.registry import get_tokenizer, normalize_spec
        spec = normalize_spec(spec)
        tok = get_tokenizer(spec)
        return cls(label or spec, spec, tok, exact=tok.exact)

    @classmethod
    def from_choice(cls, choice: TokenizerChoice) -> Meter:
        """A meter for a resolved tokenizer (``tokcost.resolve_tokenizers``); it loads it."""
        tok = choice.load()
        return cls(choice.label, choice.spec, tok, exact=tok.exact, model=choice.model)

    @property
    def priced(self) -> bool:
        return self.model is not None and self.model.pricing is not None


@dataclass(frozen=True)
class SentencePremiums:
    """The premium read sentence by sentence on aligned text (FLORES-200): its tail."""

    sentences: int  # sentences with a non-empty baseline
    median: float
    p95: float  # interpolated between neighbours (numpy's "linear" method)
    over_2x: float  # share of sentences whose premium exceeds 2

    @classmethod
    def of(cls, counts: Sequence[int], baseline: Sequence[int]) -> SentencePremiums | None:
        """Statistics of ``counts[i] / baseline[i]``, or None without a sentence to compare."""
        ratios = sorted(c / b for c, b in zip(counts, baseline, strict=True) if b)
        if not ratios:
            return None
        at = 0.95 * (len(ratios) - 1)
        lo = int(at)
        hi = min(lo + 1, len(ratios) - 1)
        p95 = ratios[lo] + (ratios[hi] - ratios[lo]) * (at - lo)
        return cls(len(ratios), statistics.median(ratios), p95,
                   sum(r > 2 for r in ratios) / len(ratios))


@dataclass(frozen=True)
class Measurement:
    """One sample measured with one meter."""

    meter: str
    tokens: int
    exact: bool
    bytes_per_token: float | None
    chars_per_token: float | None
    words_per_token: float | None
    tokens_per_word: float | None  # fertility
    tokens_per_line: float | None
    premium: float | None  # tokens / baseline tokens on the same content
    cost_usd: Decimal | None  # the sample sent once as input to the meter's model
    cost_ratio: float | None  # cost / the baseline's cost on the same model
    sentence_premiums: SentencePremiums | None = None  # aligned sentences only


@dataclass(frozen=True)
class Row:
    """One sample's sizes and its measurement with each meter."""

    sample: Sample
    bytes: int
    chars: int
    words: int | None
    lines: int
    paragraphs: int
    results: tuple[Measurement, ...]

    @property
    def code(self) -> str:
        return self.sample.code

    def result(self, meter: str) -> Measurement:
        return next(r for r in self.results if r.meter == meter)


@dataclass(frozen=True)
class GroupReport:
    kind: str
    baseline: str
    rows: tuple[Row, ...]  # by premium on the first meter (``rows_by``)
    warnings: tuple[str, ...] = ()

    def rows_by(self, meter: str) -> tuple[Row, ...]:
        """The rows by premium on ``meter``, largest first, ties (and none, last) by code."""
        return tuple(sorted(self.rows, key=lambda r: (-(r.result(meter).premium or 0.0), r.code)))


@dataclass(frozen=True)
class Report:
    meters: tuple[Meter, ...]
    groups: tuple[GroupReport, ...]
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` document (its keys: docs/compare.md)."""
        # backend: which engine counted (toktok-rs or tiktoken...; the counts are equal)
        meters = [{"label": m.label, "spec": m.spec, "exact": m.exact,
                   "model": m.model.id if m.model else None, "priced": m.priced,
                   "backend": count_backend(m.tokenizer)} for m in self.meters]
        groups = [{"kind": g.kind, "baseline": g.baseline, "warnings": list(g.warnings),
                   "samples": [_row_dict(row) for row in g.rows]} for g in self.groups]
        return {"tokenizers": meters, "groups": groups, "warnings": list(self.warnings)}


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 4)


def _row_dict(row: Row) -> dict[str, Any]:
    s = row.sample
    results = [{"tokenizer": r.meter, "tokens": r.tokens, "exact": r.exact,
                **{key: _round(getattr(r, key)) for key in _ROUNDED},
                "cost_usd": None if r.cost_usd is None else str(r.cost_usd),
                "cost_ratio": _round(r.cost_ratio),
                "sentence_premium": None if (p := r.sentence_premiums) is None else {
                    "sentences": p.sentences, "median": _round(p.median), "p95": _round(p.p95),
                    "share_over_2x": _round(p.over_2x)}} for r in row.results]
    return {"code": s.code, "name": s.label, "script": s.script, "kind": s.kind, "path": s.path,
            "bytes": row.bytes, "chars": row.chars, "words": row.words, "lines": row.lines,
            "paragraphs": row.paragraphs, "invalid_utf8_bytes": s.invalid_utf8_bytes,
            "results": results}


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def _cost(meter: Meter, tokens: int) -> Decimal | None:
    if not meter.priced or meter.model is None:
        return None
    from tokcost.pricing import estimate_cost
    return estimate_cost(meter.model, input_tokens=tokens).total


def _count(groups: Sequence[Group], meters: Sequence[Meter],
           on_progress: Callable[[int, int], None] | None) -> tuple[_Counts, _Units]:
    """Every sample counted once per tokenizer, and its sentences where they are aligned."""
    total = sum(len(g.samples) for g in groups) * len(meters)
    # All the text is in hand: a tokenizer may pick the backend for its size (plan_run).
    chars = sum(len(s.text) + sum(map(len, s.units or ())) for g in groups for s in g.samples)
    for tokenizer in {id(m.tokenizer): m.tokenizer for m in meters}.values():
        plan_run(tokenizer, chars)
    counts: _Counts = {}
    units: _Units = {}
    done = 0
    for gi, group in enumerate(groups):
        base = group.sample(group.baseline)
        n = None if base is None or base.units is None else len(base.units)
        for sample in group.samples:
            for meter in meters:
                key = (id(meter.tokenizer), gi, sample.code)
                if key not in counts:
                    counts[key] = meter.tokenizer.count(sample.text)
                    if n is not None and sample.units is not None and len(sample.units) == n:
                        units[key] = count_many(meter.tokenizer, sample.units)
                done += 1
                if on_progress:
                    on_progress(done, total)
    return counts, units


def measure(groups: Sequence[Group], meters: Sequence[Meter], *,
            on_progress: Callable[[int, int], None] | None = None) -> Report:
    """Count every sample with every meter; ``on_progress(done, total)`` after each count."""
    if not meters:
        raise UsageError(f"no tokenizer to compare with; pass at least one {arg('meters')}",
                         param="meters")
    counts, units = _count(groups, meters, on_progress)
    reports = []
    for gi, g in enumerate(groups):
        rows = tuple(_row(sample, g, meters, counts, units, gi) for sample in g.samples)
        report = GroupReport(g.kind, g.baseline, rows, g.warnings)
        reports.append(replace(report, rows=report.rows_by(meters[0].label)))
    return Report(tuple(meters), tuple(reports), tuple(w for g in groups for w in g.warnings))


def _row(sample: Sample, group: Group, meters: Sequence[Meter], counts: _Counts,
         units: _Units, gi: int) -> Row:
    n_bytes, n_chars = len(sample.text.encode("utf-8")), len(sample.text)
    words = len(sample.text.split()) if sample.has_words else None
    lines = sum(1 for line in sample.text.splitlines() if line.strip())
    results = []
    for meter in meters:
        key, base_key = ((id(meter.tokenizer), gi, c) for c in (sample.code, group.baseline))
        tokens, base_tokens = counts[key], counts[base_key]
        cost, base_cost = _cost(meter, tokens), _cost(meter, base_tokens)
        mine, base = units.get(key), units.get(base_key)
        results.append(Measurement(
            meter=meter.label, tokens=tokens, exact=meter.exact,
            bytes_per_token=_ratio(n_bytes, tokens), chars_per_token=_ratio(n_chars, tokens),
            words_per_token=None if words is None else _ratio(words, tokens),
            tokens_per_word=None if words is None else _ratio(tokens, words),
            tokens_per_line=_ratio(tokens, lines) if sample.kind != "prose" else None,
            premium=_ratio(tokens, base_tokens), cost_usd=cost,
            cost_ratio=float(cost / base_cost) if cost is not None and base_cost else None,
            sentence_premiums=(SentencePremiums.of(mine, base)
                               if mine is not None and base is not None else None)))
    return Row(sample, n_bytes, n_chars, words, lines, len(paragraphs(sample.text)), tuple(results))


def premium(tokens: int, baseline_tokens: int) -> float:
    """Petrov et al.'s tokenization premium: ``tokens / baseline_tokens``."""
    if baseline_tokens <= 0:
        raise UsageError("the baseline has no tokens; a premium needs a non-empty baseline")
    return tokens / baseline_tokens
