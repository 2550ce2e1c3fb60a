"""Token counts -> money, in ``Decimal`` from end to end (prices are USD per million).

The rules, per request:

* ``input_tokens`` is the whole prompt. ``cached_tokens`` (cache hits) and
  ``cache_write_tokens`` (tokens written to the cache) are parts of it, billed at
  their own rates; the rest is billed at the input rate. A model without a
  cached-input (or cache-write) price bills those tokens as ordinary input.
* ``output_tokens`` is the visible answer; ``reasoning_tokens`` come on top and are
  billed at the output rate unless the model prices them apart.
* Long-context tiers look at the prompt of each request. ``applies_to: all``
  (Anthropic, Google): once the prompt exceeds the threshold every token of that
  request, output included, is billed at the tier's rates. ``applies_to: excess``:
  only the uncached prompt tokens above the threshold get the tier input rate.
* ``batch`` takes the model's batch discount off input, output and reasoning, and
  off cache reads/writes only where the provider says so (Anthropic yes; OpenAI
  and Google keep cached input at the standard rate). Cache reads/writes of a model
  that does not price them are ordinary input, so they take the discount too.

Example: gpt-4o, 1,000 prompt tokens of which 400 cached, 200 output::

    600 x $2.50/M + 400 x $1.25/M + 200 x $10/M = $0.0015 + $0.0005 + $0.002 = $0.004

Every amount a person reads goes through ``format_usd`` (one rule, every command);
JSON keeps the exact decimal strings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any

from tokcost.catalog.schema import ModelEntry, PriceTier, Pricing
from tokcost.errors import TokcostError, UsageError

__all__ = [
    "MILLION", "SIGNIFICANT_DIGITS", "CostBreakdown", "CostLine", "NoPrice", "estimate_cost",
    "format_usd", "limit_warnings", "require_price",
]

MILLION = Decimal(1_000_000)
SIGNIFICANT_DIGITS = 3  # under $1: enough decimals for this many significant digits
_CENT = Decimal("0.01")


def format_usd(amount: Decimal | int | float | str, *, per_million: bool = False) -> str:
    """Money for people, the one rule of every command (``--json`` keeps exact strings).

    ``$`` and at least two decimals. From $1 up: to the cent, with thousands
    separators. Under $1: three significant digits, so a positive amount never reads
    as $0.00; an amount that needs fewer is shown exactly ($0.045, not $0.0450), so
    a trailing zero is always a rounded digit. Halves round up. ``per_million``: a
    rate per million tokens, ``$2.50/M``.

    >>> format_usd(Decimal("1234.5")), format_usd(Decimal("0.465")), format_usd(0.3)
    ('$1,234.50', '$0.465', '$0.30')
    >>> format_usd(Decimal("0.00026265")), format_usd(Decimal("0.0066025")), format_usd(0)
    ('$0.000263', '$0.00660', '$0.00')
    >>> format_usd(Decimal("0.075"), per_million=True)
    '$0.075/M'
    """
    value = amount if isinstance(amount, Decimal) else Decimal(str(amount))
    if not value.is_finite():
        raise ValueError(f"not an amount of money: {amount!r}")
    sign, value = ("-" if value < 0 else ""), abs(value)
    text = None
    if 0 < value < 1:
        places = max(2, SIGNIFICANT_DIGITS - 1 - value.adjusted())
        shown = _round(value, places)
        if shown.adjusted() > value.adjusted():  # 0.000999 rounds up to 0.00100: one place less
            shown = _round(value, max(2, places - 1))
        if shown < 1:  # 0.9996 rounds to 1.000 and is shown as dollars below
            whole, _, frac = f"{shown:f}".partition(".")
            if shown == value:  # exact: no zero that was not a rounded digit
                frac = frac.rstrip("0").ljust(2, "0")
            text = f"{whole}.{frac}"
    if text is None:
        text = f"{_round(value, 2):,.2f}"
    return f"{sign}${text}" + ("/M" if per_million else "")


def _round(value: Decimal, places: int) -> Decimal:
    # A context wide enough for every digit kept: quantize fails past the default 28.
    prec = max(28, value.adjusted() + places + 2)
    return value.quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP, Context(prec=prec))


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
    notes: tuple[str, ...] = field(default_factory=tuple)
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
        return {
            "model": self.model,
            "requests": self.requests,
            "batch": self.batch,
            "tier": (
                {
                    "above_input_tokens": self.tier.above_input_tokens,
                    "applies_to": self.tier.applies_to,
                }
                if self.tier
                else None
            ),
            "lines": [
                {
                    "kind": line.kind,
                    "tokens": line.tokens,
                    "usd_per_million": str(line.usd_per_million),
                    "cost_usd": str(line.cost),
                }
                for line in self.lines
            ],
            "per_request_usd": str(self.per_request),
            "total_usd": str(self.total),
            "notes": list(self.notes),
            "as_of": self.as_of,
            "source": self.source,
        }


def require_price(entry: ModelEntry, *, batch: bool = False) -> Pricing:
    """The entry's prices, or NoPrice: a model without a price costs an error, never $0.

    Callers that count files first ask here before they count.
    """
    pricing = entry.pricing
    if pricing is None:
        raise NoPrice(
            f"model '{entry.id}' has no price in the catalog; add a pricing section "
            f"(USD per million tokens) to it in your own catalog (catalog=FILE with "
            f"'extends: shipped')",
            param="catalog",
        )
    if batch and pricing.batch_discount is None:
        raise NoPrice(f"model '{entry.id}' has no batch price in the catalog; drop batch=True",
                      param="batch")
    return pricing


def limit_warnings(
    entry: ModelEntry,
    *,
    input_tokens: int,
    output_tokens: int = 0,
    reasoning_tokens: int = 0,
    exact: bool = True,
) -> tuple[str, ...]:
    """What in one request the model would not take: a prompt longer than its context
    window, an output (reasoning included) longer than its maximum output tokens.

    A price is still given (the tokens are counted as asked), with these as warnings;
    a model whose catalog entry states no limit is not checked against it. ``exact``
    False: the prompt was counted with a proxy tokenizer, so its size is approximate.

    >>> from tokcost.catalog import ModelEntry
    >>> gpt4 = ModelEntry(id="gpt-4", context_window=8192, max_output_tokens=8192)
    >>> limit_warnings(gpt4, input_tokens=8192, output_tokens=8192)
    ()
    >>> (warning,) = limit_warnings(gpt4, input_tokens=100_000)
    >>> warning.split(":")[0]
    "the prompt (100,000 tokens) exceeds gpt-4's context window of 8,192 tokens"
    """
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
        found.append(
            f"{what} exceeds {entry.id}'s maximum of {limit:,} output tokens: a request "
            f"stops there; ask for fewer output tokens"
        )
    return tuple(found)


def _check_count(name: str, value: int) -> None:
    if value < 0:
        raise UsageError(f"{name} must not be negative, got {value}", param=name)


def _tier_for(pricing: Pricing, prompt_tokens: int) -> PriceTier | None:
    """The highest tier whose threshold the prompt exceeds (strictly)."""
    chosen = None
    for tier in pricing.tiers:  # sorted by threshold when loaded
        if prompt_tokens > tier.above_input_tokens:
            chosen = tier
    return chosen


def estimate_cost(
    entry: ModelEntry,
    *,
    input_tokens: int,
    output_tokens: int = 0,
    cached_tokens: int = 0,
    cache_write_tokens: int = 0,
    reasoning_tokens: int = 0,
    batch: bool = False,
    requests: int = 1,
) -> CostBreakdown:
    """The cost of ``requests`` identical requests of the given token counts.

    >>> from tokcost.catalog import ModelEntry, Pricing
    >>> rates = Pricing(input=Decimal("2.50"), cached_input=Decimal("1.25"), output=Decimal(10))
    >>> entry = ModelEntry(id="gpt-4o-like", pricing=rates)
    >>> estimate_cost(entry, input_tokens=1000, cached_tokens=400, output_tokens=200).total
    Decimal('0.0040')
    """
    pricing = require_price(entry, batch=batch)
    for name, value in (
        ("input_tokens", input_tokens),
        ("output_tokens", output_tokens),
        ("cached_tokens", cached_tokens),
        ("cache_write_tokens", cache_write_tokens),
        ("reasoning_tokens", reasoning_tokens),
    ):
        _check_count(name, value)
    if requests <= 0:
        raise UsageError(f"requests must be a positive integer, got {requests}",
                         param="requests")
    if cached_tokens + cache_write_tokens > input_tokens:
        raise UsageError(
            f"cached ({cached_tokens}) plus cache-write ({cache_write_tokens}) tokens exceed "
            f"the prompt's {input_tokens} input tokens; input_tokens is the whole prompt",
            param="input_tokens",
        )

    notes: list[str] = []
    tier = _tier_for(pricing, input_tokens)
    fresh = input_tokens - cached_tokens - cache_write_tokens

    def rate(kind: str, base: Decimal | None) -> Decimal | None:
        if tier is not None and tier.applies_to == "all":
            tier_price: Decimal | None = getattr(tier, kind)
            if tier_price is not None:
                return tier_price
        return base

    input_rate = rate("input", pricing.input)
    assert input_rate is not None
    output_rate = rate("output", pricing.output)
    assert output_rate is not None
    cached_rate = rate("cached_input", pricing.cached_input)
    write_rate = rate("cache_write", pricing.cache_write)
    reasoning_rate = rate("reasoning", pricing.reasoning)
    # A cache read or write the model does not price is ordinary input, in every rule:
    # at the input rate, and under the batch discount like the rest of the prompt.
    cached_as_input = bool(cached_tokens) and cached_rate is None
    write_as_input = bool(cache_write_tokens) and write_rate is None
    if cached_as_input:
        cached_rate = input_rate
        notes.append("no cached-input price: cached tokens billed as input")
    if write_as_input:
        write_rate = input_rate
        notes.append("no cache-write price: cache writes billed as input")
    if reasoning_tokens and reasoning_rate is None:
        reasoning_rate = output_rate
        notes.append("reasoning tokens billed as output")

    discount = pricing.batch_discount if batch and pricing.batch_discount is not None else None
    keep = Decimal(1) - discount if discount is not None else Decimal(1)
    keep_cache = keep if pricing.batch_discount_cache else Decimal(1)
    keep_cached = keep if cached_as_input else keep_cache
    keep_write = keep if write_as_input else keep_cache
    if discount is not None and not pricing.batch_discount_cache:
        # Only the cache tokens with a price of their own keep it; those billed as input
        # take the input's discount (and the note names only what stays undiscounted).
        undiscounted = [what for what, tokens, as_input in (
            ("cache reads", cached_tokens, cached_as_input),
            ("cache writes", cache_write_tokens, write_as_input)) if tokens and not as_input]
        if undiscounted:
            notes.append(f"the batch discount does not apply to {' and '.join(undiscounted)} "
                         "for this model")

    # (kind, tokens per request, rate per million)
    parts: list[tuple[str, int, Decimal]] = []
    if tier is not None and tier.applies_to == "excess":
        above = max(0, min(fresh, input_tokens - tier.above_input_tokens))
        tier_input = tier.input if tier.input is not None else input_rate
        parts.append(("input", fresh - above, input_rate * keep))
        if above:
            parts.append((f"input above {tier.above_input_tokens:,}", above, tier_input * keep))
    else:
        parts.append(("input", fresh, input_rate * keep))
    if cached_tokens:
        assert cached_rate is not None
        parts.append(("cached input", cached_tokens, cached_rate * keep_cached))
    if cache_write_tokens:
        assert write_rate is not None
        parts.append(("cache write", cache_write_tokens, write_rate * keep_write))
    parts.append(("output", output_tokens, output_rate * keep))
    if reasoning_tokens:
        assert reasoning_rate is not None
        parts.append(("reasoning", reasoning_tokens, reasoning_rate * keep))

    lines = tuple(
        CostLine(kind, tokens * requests, usd, Decimal(tokens * requests) * usd / MILLION)
        for kind, tokens, usd in parts
    )
    if tier is not None:
        scope = (
            "every token of the request" if tier.applies_to == "all" else "prompt tokens above it"
        )
        notes.append(
            f"long-context tier: prompt of {input_tokens:,} tokens exceeds "
            f"{tier.above_input_tokens:,}, so {scope} is billed at the tier rates"
        )
    if discount is not None:
        notes.append(f"batch discount {(discount * 100).normalize():f}% applied")
    return CostBreakdown(
        model=entry.id,
        requests=requests,
        batch=batch,
        lines=lines,
        tier=tier,
        notes=tuple(notes),
        as_of=pricing.as_of.isoformat() if pricing.as_of else None,
        source=pricing.source,
    )
