"""Token counts -> money, in ``Decimal`` from end to end (USD per million), by docs/price.md's
billing rules: 600 x $2.50/M + 400 cached x $1.25/M + 200 output x $10/M = $0.004."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from tokcost.catalog.pricedb import DbModel, PriceDb, active
from tokcost.catalog.schema import ModelEntry, PriceTier, Pricing
from tokcost.errors import TokcostError, UsageError, arg, suggest

MILLION = Decimal(1_000_000)


class NoPrice(TokcostError):
    """The catalog has no price for this model (never silently $0)."""


@dataclass(frozen=True)
class CostLine:
    """One kind of token: how many (all requests), the rate applied, and the cost."""

    kind: str
    tokens: int
    usd_per_million: Decimal
    cost: Decimal


@dataclass(frozen=True)
class CostBreakdown:
    model: str
    requests: int
    batch: bool
    lines: tuple[CostLine, ...]
    tier: PriceTier | None = None
    notes: tuple[str, ...] = ()
    as_of: str | None = None
    source: str | None = None

    @property
    def total(self) -> Decimal:
        return sum((line.cost for line in self.lines), Decimal(0))

    @property
    def per_request(self) -> Decimal:
        return self.total / self.requests

    def to_dict(self) -> dict[str, Any]:
        """Stable JSON keys; money as decimal strings so no cent is lost to floats."""
        tier = {"above_input_tokens": self.tier.above_input_tokens,
                "applies_to": self.tier.applies_to} if self.tier else None
        return {"model": self.model, "requests": self.requests, "batch": self.batch, "tier": tier,
                "lines": [{"kind": line.kind, "tokens": line.tokens,
                           "usd_per_million": str(line.usd_per_million), "cost_usd": str(line.cost)}
                          for line in self.lines],
                "per_request_usd": str(self.per_request), "total_usd": str(self.total),
                "notes": list(self.notes), "as_of": self.as_of, "source": self.source}


def require_price(entry: ModelEntry, *, batch: bool = False) -> Pricing:
    """The entry's prices, or NoPrice (asked before any file is counted)."""
    pricing = entry.pricing
    if pricing is None:
        raise NoPrice(f"model '{entry.id}' has no price in the catalog; add a pricing section (USD "
                      f"per million tokens) to it in your own catalog ({arg('catalog', 'FILE')} "
                      "with 'extends: shipped')", param="catalog")
    if batch and pricing.batch_discount is None:
        raise NoPrice(f"model '{entry.id}' has no batch price in the catalog; drop "
                      f"{arg('batch', True)}", param="batch")
    return pricing


def limit_warnings(entry: ModelEntry, *, input_tokens: int, output_tokens: int = 0,
                   reasoning_tokens: int = 0, exact: bool = True) -> tuple[str, ...]:
    """What one request asks beyond the model's context window or maximum output tokens
    (``exact`` False: a proxy counted the prompt)."""
    found: list[str] = []
    window = entry.context_window
    if window is not None and input_tokens > window:
        about = "" if exact else "about "
        text = (f"the prompt ({about}{input_tokens:,} tokens) exceeds {entry.id}'s context "
                f"window of {window:,} tokens")
        beyond = [t.above_input_tokens for t in entry.pricing.tiers
                  if t.above_input_tokens >= window] if entry.pricing else []
        if beyond:  # the provider prices such prompts: some accounts have a longer window
            text += (f"; it fits only where the provider offers a longer window (priced by "
                     f"the long-context tier above {min(beyond):,} tokens)")
        else:
            text += (": the request would be refused; shorten the prompt or choose a model "
                     "with a longer window")
        found.append(text)
    limit = entry.max_output_tokens
    answer = output_tokens + reasoning_tokens
    if limit is not None and answer > limit:
        what = (f"the output plus reasoning ({output_tokens:,} + {reasoning_tokens:,} = "
                f"{answer:,} tokens)" if reasoning_tokens else f"the output ({answer:,} tokens)")
        found.append(f"{what} exceeds {entry.id}'s maximum of {limit:,} output tokens: a "
                     "request stops there; ask for fewer output tokens")
    return tuple(found)


def estimate_cost(entry: ModelEntry, *, input_tokens: int, output_tokens: int = 0,
    cached_tokens: int = 0, cache_write_tokens: int = 0, reasoning_tokens: int = 0,
    batch: bool = False, requests: int = 1) -> CostBreakdown:
    """The cost of ``requests`` identical requests of the given token counts."""
    pricing = require_price(entry, batch=batch)
    counts = {"input_tokens": input_tokens, "output_tokens": output_tokens,
              "cached_tokens": cached_tokens, "cache_write_tokens": cache_write_tokens,
              "reasoning_tokens": reasoning_tokens}
    check_counts(counts, requests)
    # The highest tier whose threshold the prompt exceeds (tiers are sorted when loaded).
    tier = next((t for t in reversed(pricing.tiers) if input_tokens > t.above_input_tokens), None)
    parts, notes = _rates(pricing, tier, counts, batch)
    lines = tuple(CostLine(kind, n * requests, usd, Decimal(n * requests) * usd / MILLION)
                  for kind, n, usd in parts)
    if tier is not None:
        scope = ("every token of the request" if tier.applies_to == "all"
                 else "prompt tokens above it")
        notes.append(f"long-context tier: prompt of {input_tokens:,} tokens exceeds "
                     f"{tier.above_input_tokens:,}, so {scope} is billed at the tier rates")
    if batch:
        discount = (pricing.batch_discount or Decimal(0)) * 100
        notes.append(f"batch discount {discount.normalize():f}% applied")
    return CostBreakdown(
        model=entry.id, requests=requests, batch=batch, lines=lines, tier=tier,
        notes=tuple(notes), as_of=pricing.as_of.isoformat() if pricing.as_of else None,
        source=pricing.source)


def check_counts(counts: dict[str, int], requests: int = 1) -> None:
    """Counts are not negative, and the cached and cache-write parts fit in the prompt."""
    for name, value in counts.items():
        if value < 0:
            raise UsageError(f"{arg(name)} must not be negative, got {value}", param=name)
    if requests <= 0:
        raise UsageError(f"{arg('requests')} must be a positive integer, got {requests}",
                         param="requests")
    cached, written, prompt = (counts["cached_tokens"], counts["cache_write_tokens"],
                               counts["input_tokens"])
    if cached + written > prompt:
        raise UsageError(
            f"cached ({cached}) plus cache-write ({written}) tokens exceed the prompt's "
            f"{prompt} input tokens; {arg('input_tokens')} is the whole prompt",
            param="input_tokens")


def _rates(pricing: Pricing, tier: PriceTier | None, counts: dict[str, int],
           batch: bool) -> tuple[list[tuple[str, int, Decimal]], list[str]]:
    """Each kind of token of one request with its rate (tier, batch discount, unpriced cache
    and reasoning applied), and the notes that say why."""
    notes: list[str] = []

    def rate(kind: str) -> Decimal | None:
        if tier is not None and tier.applies_to == "all" and getattr(tier, kind) is not None:
            return getattr(tier, kind)  # type: ignore[no-any-return]
        return getattr(pricing, kind)  # type: ignore[no-any-return]

    fresh = counts["input_tokens"] - counts["cached_tokens"] - counts["cache_write_tokens"]
    input_rate, output_rate, reasoning_rate = rate("input"), rate("output"), rate("reasoning")
    assert input_rate is not None and output_rate is not None
    keep = Decimal(1) - (pricing.batch_discount or Decimal(0)) if batch else Decimal(1)
    parts: list[tuple[str, int, Decimal]] = []
    if tier is not None and tier.applies_to == "excess":
        above = max(0, min(fresh, counts["input_tokens"] - tier.above_input_tokens))
        parts.append(("input", fresh - above, input_rate * keep))
        if above:
            tier_input = tier.input if tier.input is not None else input_rate
            parts.append((f"input above {tier.above_input_tokens:,}", above, tier_input * keep))
    else:
        parts.append(("input", fresh, input_rate * keep))
    kept: list[str] = []  # cache tokens whose own price the batch discount leaves alone
    for kind, price, tokens, missing, noun in (
            ("cached input", rate("cached_input"), counts["cached_tokens"],
             "cached-input price: cached tokens", "cache reads"),
            ("cache write", rate("cache_write"), counts["cache_write_tokens"],
             "cache-write price: cache writes", "cache writes")):
        if not tokens:
            continue
        if price is None:  # ordinary input, in every rule: the input's rate and discount
            notes.append(f"no {missing} billed as input")
            parts.append((kind, tokens, input_rate * keep))
            continue
        if batch and not pricing.batch_discount_cache:
            kept.append(noun)
        parts.append((kind, tokens, price * (keep if pricing.batch_discount_cache else Decimal(1))))
    if counts["reasoning_tokens"] and reasoning_rate is None:
        notes.append("reasoning tokens billed as output")
    if kept:
        notes.append(f"the batch discount does not apply to {' and '.join(kept)} for this model")
    parts.append(("output", counts["output_tokens"], output_rate * keep))
    if counts["reasoning_tokens"]:
        parts.append(("reasoning", counts["reasoning_tokens"],
                      (output_rate if reasoning_rate is None else reasoning_rate) * keep))
    return parts, notes


@dataclass(frozen=True)
class Usage:
    """One request's counts as genai-prices reads them: ``output`` excludes ``reasoning`` (both
    are output there); ``cache_ttl`` ("5m"/"1h") names the cache writes' lifetime; ``extra``
    sets any other usage key of the database (``input_audio_tokens``: part of the input)."""

    input: int
    output: int = 0
    cached: int = 0
    cache_write: int = 0
    reasoning: int = 0
    cache_ttl: str | None = None
    extra: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        check_counts({"input_tokens": self.input, "output_tokens": self.output,
                      "cached_tokens": self.cached, "cache_write_tokens": self.cache_write,
                      "reasoning_tokens": self.reasoning})

    def keys(self) -> dict[str, int]:
        found = {"input_tokens": self.input, "output_tokens": self.output + self.reasoning,
                 "cache_read_tokens": self.cached, "cache_write_tokens": self.cache_write,
                 "output_reasoning_tokens": self.reasoning, "requests": 1}
        if self.cache_ttl:
            found[f"cache_write_{self.cache_ttl}_tokens"] = self.cache_write
        return {**found, **dict(self.extra)}


_KINDS = {"input_tokens": "input", "cache_read_tokens": "cached input", "output_tokens": "output",
          "cache_write_tokens": "cache write", "output_reasoning_tokens": "reasoning"}


def database_cost(model: DbModel, db: PriceDb, usage: Usage, *, when: _dt.datetime,
                  batch: bool = False, requests: int = 1) -> CostBreakdown:
    """What genai-prices's ``ModelPrice.calc_price`` (0.2.3, types.py) charges, restated on the
    cached data: each priced unit gets its usage less that of its priced descendants (the
    units whose dimensions extend its own: ``decompose.compute_leaf_values``), times its
    price (a tier's once the request's input tokens pass its start), over its ``per``."""
    if batch and not model.has_variant("processing", "batch", when):
        raise NoPrice(f"genai-prices has no batch price for '{model.id}' on {model.provider} "
                      f"on {when:%Y-%m-%d}; "
                      f"drop {arg('batch', True)}", param="batch")
    counts = usage.keys()
    unknown = [k for k, _ in usage.extra if k not in db.units]
    if unknown:
        raise UsageError(f"{arg('usage', unknown[0])}: not a usage key of genai-prices"
                         f"{suggest(unknown[0], db.units)}", param="usage")
    prices = model.prices_at(when, {"processing": "batch"} if batch else None)
    priced = sorted((u for u in db.units.items() if u[1][0] in prices),
                    key=lambda u: (-len(u[1][2]), u[0]))
    leaves: dict[str, int] = {}
    for key, (_, _, dims) in priced:
        inner = [leaves[k] for k, (_, _, d) in priced if k != key and dims.items() <= d.items()]
        leaves[key] = counts.get(key, 0) - sum(inner)
        if leaves[key] < 0:
            raise UsageError(f"{key.replace('_', ' ')}: its parts ({sum(inner):,}) exceed it "
                             f"({counts.get(key, 0):,}); the cached, cache-write and other "
                             "parts of the prompt must fit in it", param="input_tokens")
    tier: PriceTier | None = None
    lines: list[CostLine] = []
    for key, (price_key, per, _) in ((k, db.units[k]) for k in _order(prices, db)):
        price = prices[price_key]
        if isinstance(price, tuple):  # ("tiers", base, ((start, price), ...)), last one passed
            start, price = next(((s, p) for s, p in reversed(price[2])
                                 if counts["input_tokens"] > s), (None, price[1]))
            if start is not None:
                tier = PriceTier(above_input_tokens=start, applies_to="all")
        n = leaves[key]
        if n or key in ("input_tokens", "output_tokens"):
            lines.append(CostLine(_KINDS.get(key, key.removesuffix("_tokens").replace("_", " ")),
                                  n * requests, price * MILLION / per, price * n / per * requests))
    return CostBreakdown(model=model.id, requests=requests, batch=batch, lines=tuple(lines),
                         tier=tier, notes=_database_notes(model, prices, usage, tier, when),
                         as_of=_as_of(model, when), source=model.pricing_url)


def _order(prices: dict[str, Any], db: PriceDb) -> list[str]:
    """The priced usage keys in the order the database lists the prices (its sum's order)."""
    by_price = {price_key: key for key, (price_key, _, _) in db.units.items()}
    return [by_price[k] for k in prices if k in by_price]


def _as_of(model: DbModel, when: _dt.datetime) -> str | None:
    """The start date of the dated price in force, if it is dated."""
    dates = [c[1] for c, _ in model.prices if c is not None and c[0] == "date" and active(c, when)]
    return max(dates).isoformat() if dates else None


def _database_notes(model: DbModel, prices: dict[str, Any], usage: Usage,
                    tier: PriceTier | None, when: _dt.datetime) -> tuple[str, ...]:
    notes = [f"prices from genai-prices {model.version}: {model.id} on {model.provider_name}"]
    if tier is not None:
        notes.append(f"long-context tier: prompt of {usage.input:,} tokens exceeds "
                     f"{tier.above_input_tokens:,}, so every tiered price of the request is "
                     "the tier's")
    missing = [(usage.cached, "cache_read_mtok", "cached-input price: cached tokens"),
               (usage.cache_write, "cache_write_mtok", "cache-write price: cache writes"),
               (usage.reasoning, "output_reasoning_mtok", "reasoning price: reasoning tokens")]
    for tokens, key, text in missing:
        if tokens and key not in prices:
            notes.append(f"no {text} billed as {'output' if 'reasoning' in key else 'input'}")
    if usage.cache_ttl == "1h" and usage.cache_write and "cache_write_1h_mtok" not in prices:
        notes.append("no 1-hour cache-write price: cache writes billed at the cache-write price")
    if any(c is not None and c[0] == "time" and active(c, when) for c, _ in model.prices):
        notes.append(f"a time-of-day price is in force at {when:%Y-%m-%d %H:%M} UTC")
    return tuple(notes)
