"""Token counts -> money, in ``Decimal`` from end to end (USD per million), by docs/price.md's
billing rules: 600 x $2.50/M + 400 cached x $1.25/M + 200 output x $10/M = $0.004."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from tokcost.catalog.schema import ModelEntry, PriceTier, Pricing
from tokcost.errors import TokcostError, UsageError, arg

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
    for name, value in counts.items():
        if value < 0:
            raise UsageError(f"{arg(name)} must not be negative, got {value}", param=name)
    if requests <= 0:
        raise UsageError(f"{arg('requests')} must be a positive integer, got {requests}",
                         param="requests")
    if cached_tokens + cache_write_tokens > input_tokens:
        raise UsageError(
            f"cached ({cached_tokens}) plus cache-write ({cache_write_tokens}) tokens exceed "
            f"the prompt's {input_tokens} input tokens; {arg('input_tokens')} is the whole "
            "prompt", param="input_tokens")
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
