"""Cache policies: what a quantized (``KvQuant``: fp8; int8/int4 as KIVI, Liu et al. 2024) or
evicting (``Eviction``: window, StreamingLLM, H2O, SnapKV) KV cache holds, one formula each, which
``kvmem`` plans with and tokcost.reference.kvpolicy is measured against (docs/kvmem.md)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal, cast

from tokcost.errors import UsageError, arg

QuantFormat = Literal["fp8", "int8", "int4"]
QuantAxis = Literal["channel", "token"]
EvictKind = Literal["window", "streaming", "h2o", "snapkv"]

QUANT_FORMATS: tuple[str, ...] = ("fp8", "int8", "int4")
EVICT_KINDS: tuple[str, ...] = ("window", "streaming", "h2o", "snapkv")
SCALE_BYTES = 2  # fp16 scale ...
ZERO_BYTES = 2  # ... and fp16 zero point per group (HF QuantizedCache, KIVI)

__all__ = ["EVICT_KINDS", "QUANT_FORMATS", "CachePolicy", "Eviction", "KvQuant", "parse_evict",
           "parse_policy", "policy_bytes"]


@dataclass(frozen=True)
class KvQuant:
    """fp8 (e4m3, one scale per tensor) or int8/int4 with an fp16 scale and zero point per
    group: keys per channel over ``group`` tokens, values per token over ``group`` channels,
    the last ``residual`` tokens in full precision (KIVI)."""

    format: QuantFormat
    group: int = 64
    keys: QuantAxis = "channel"
    values: QuantAxis = "token"
    residual: int = 128

    def __post_init__(self) -> None:
        if self.format not in QUANT_FORMATS:
            raise UsageError(f"unknown cache format '{self.format}'; use one of "
                             f"{', '.join(QUANT_FORMATS)}", param="kv_dtype")
        if self.group < 1:
            raise UsageError(f"{arg('kv_group_size')} must be positive, got {self.group}",
                             param="kv_group_size")
        if self.residual < 0:
            raise UsageError(f"{arg('residual')} must not be negative, got {self.residual}",
                             param="residual")

    @property
    def bits(self) -> int:
        return {"fp8": 8, "int8": 8, "int4": 4}[self.format]

    @property
    def grouped(self) -> bool:
        """int8/int4 carry a scale and zero point per group; fp8 one scale per tensor."""
        return self.format != "fp8"

    def quantized_tokens(self, tokens: int) -> int:
        """How many of ``tokens`` are stored quantized (the rest in full precision)."""
        older = max(0, tokens - self.residual)
        if self.grouped and "channel" in (self.keys, self.values):
            older = older // self.group * self.group  # a channel group spans whole tokens
        return older

    def _half_bytes(self, q: int, axis: QuantAxis, kv_heads: int, head_dim: int) -> int:
        data = q * kv_heads * math.ceil(head_dim * self.bits / 8)
        if not self.grouped:
            return data
        per_group = SCALE_BYTES + ZERO_BYTES
        if axis == "channel":  # one scale/zero per channel per `group` tokens
            return data + (q // self.group) * kv_heads * head_dim * per_group
        return data + q * kv_heads * math.ceil(head_dim / self.group) * per_group

    def layer_bytes(self, tokens: int, *, kv_heads: int, head_dim: int, full_bytes: int) -> int:
        q = self.quantized_tokens(tokens)
        full = (tokens - q) * 2 * kv_heads * head_dim * full_bytes
        return (full + self._half_bytes(q, self.keys, kv_heads, head_dim)
                + self._half_bytes(q, self.values, kv_heads, head_dim))


@dataclass(frozen=True)
class Eviction:
    """An eviction policy and its budget: a count, or a fraction (``0.25``) of the length so
    far, rounded down (so it grows by at most one token per token decoded)."""

    kind: EvictKind
    recent: float = 0
    sinks: int = 0
    heavy: float = 0
    budget: float = 0

    def __post_init__(self) -> None:
        if self.kind not in EVICT_KINDS:
            raise UsageError(f"unknown eviction '{self.kind}'; use one of "
                             f"{', '.join(EVICT_KINDS)}", param="evict")
        for name in ("recent", "sinks", "heavy", "budget"):
            value = getattr(self, name)
            if value < 0 or (isinstance(value, float) and not value.is_integer() and value >= 1):
                raise UsageError(f"{arg('evict')} {name}={value} must be a count (1024) or a "
                                 "fraction below 1 (0.25)", param="evict")
        kept = {"window": (self.recent,), "streaming": (self.sinks, self.recent),
                "h2o": (self.heavy, self.recent), "snapkv": (self.budget, self.recent)}
        if not any(kept[self.kind]):
            raise UsageError(f"{arg('evict')} {self.kind} keeps no tokens; a policy must keep at "
                             "least one (window:1024 or window:0.25)", param="evict")

    @staticmethod
    def _tokens(value: float, length: int) -> int:
        return int(value * length) if 0 < value < 1 else int(value)

    def limits(self, length: int) -> tuple[int, int, int]:
        """Tokens kept from the start, by score (H2O, SnapKV) and from the end, at ``length``."""
        recent = self._tokens(self.recent, length)
        if self.kind == "h2o" and 0 < self.heavy < 1 and 0 < self.recent < 1:
            # Round the sum once: rounded apart it could grow by two in a step (evicting one).
            return 0, int((self.heavy + self.recent) * length) - recent, recent
        scored = {"h2o": self.heavy, "snapkv": self.budget}.get(self.kind, 0)
        return self.sinks if self.kind == "streaming" else 0, self._tokens(scored, length), recent

    def held(self, tokens: int, *, prompt: int | None = None) -> int:
        """Tokens one layer holds at ``tokens`` (SnapKV compresses the ``prompt`` once)."""
        if self.kind == "snapkv":
            p = tokens if prompt is None else min(prompt, tokens)
            return min(p, sum(self.limits(p))) + (tokens - p)
        return min(tokens, sum(self.limits(tokens)))


_EVICT = re.compile(r"^(?P<kind>[a-z0-9]+)(?::(?P<a>[0-9.]+)(?:\+(?P<b>[0-9.]+))?)?$")


def parse_evict(text: str) -> Eviction:
    """An eviction from its spec: ``window:N``, ``streaming:SINKS+N``, ``h2o:HEAVY+RECENT``,
    ``snapkv:BUDGET[+WINDOW]`` (window 32); budgets may be fractions (``h2o:0.1+0.1``)."""
    m = _EVICT.match(text.strip().lower())
    if m is None or m["kind"] not in EVICT_KINDS or m["a"] is None:
        raise UsageError(
            f"{arg('evict')} '{text}' is not a policy; write window:N, streaming:SINKS+N, "
            "h2o:HEAVY+RECENT or snapkv:BUDGET[+WINDOW] (N a count or a fraction)", param="evict")
    kind, a_text, b_text = cast(EvictKind, m["kind"]), m["a"], m["b"]
    a, b = _budget(a_text, text), None if b_text is None else _budget(b_text, text)
    usage = {"window": "window takes one number (window:1024)",
             "streaming": "write streaming:SINKS+WINDOW (streaming:4+1024)",
             "h2o": "write h2o:HEAVY+RECENT (h2o:256+256)"}
    wrong = {"window": b is not None, "streaming": b is None or "." in a_text, "h2o": b is None}
    if wrong.get(kind):
        raise UsageError(f"{arg('evict')} '{text}': {usage[kind]}", param="evict")
    b = 32.0 if b is None else b  # SnapKV's observation window
    given: dict[str, dict[str, Any]] = {
        "window": {"recent": a}, "streaming": {"sinks": int(a), "recent": b},
        "h2o": {"heavy": a, "recent": b}, "snapkv": {"budget": a, "recent": b}}
    try:
        return Eviction(kind, **given[kind])
    except UsageError as exc:  # Eviction's own checks, named by the spec they came in
        raise UsageError(f"{arg('evict')} '{text}': {str(exc).removeprefix('evict ')}",
                         param="evict") from None


def _budget(number: str, text: str) -> float:
    """A count (``1024``), or with a decimal point a share in (0, 1): ``1.0`` is not a token."""
    if "." not in number:
        return float(int(number))
    try:
        value = float(number)
    except ValueError:
        value = -1.0
    if not 0 < value < 1:
        raise UsageError(f"{arg('evict')} '{text}': {number} is not a count or a fraction below "
                         "1 (a decimal point makes a fraction); write a count (1024) or a "
                         "fraction below 1 (0.25)", param="evict")
    return value


def policy_bytes(tokens: int, *, layers: int, kv_heads: int, head_dim: int, full_bytes: int,
    quant: KvQuant | None = None, evict: Eviction | None = None, prompt: int | None = None) -> int:
    """Bytes ``layers`` full-attention layers hold for one sequence that has seen ``tokens``."""
    held = evict.held(tokens, prompt=prompt) if evict is not None else tokens
    if quant is None:
        return layers * held * 2 * kv_heads * head_dim * full_bytes
    return layers * quant.layer_bytes(held, kv_heads=kv_heads, head_dim=head_dim,
                                      full_bytes=full_bytes)


@dataclass(frozen=True)
class CachePolicy:
    """One named policy to evaluate (``parse_policy``)."""

    name: str
    quant: KvQuant | None = None
    evict: Eviction | None = None

    def bytes(self, tokens: int, *, layers: int, kv_heads: int, head_dim: int,
              full_bytes: int, prompt: int | None = None) -> int:
        return policy_bytes(tokens, layers=layers, kv_heads=kv_heads, head_dim=head_dim,
                            full_bytes=full_bytes, quant=self.quant, evict=self.evict,
                            prompt=prompt)


def parse_policy(text: str, *, residual: int = 128, group: int = 64) -> CachePolicy:
    """``fp8`` (no residual, as vLLM's), ``int8``, ``int4`` (keys per channel, as KIVI),
    ``int4:per-token`` (keys per token too), or an eviction (``parse_evict``)."""
    spec = text.strip().lower()
    head, _, tail = spec.partition(":")
    if head in QUANT_FORMATS:
        if tail not in ("", "per-channel", "per-token"):
            raise UsageError(f"policy '{text}': write {head}, {head}:per-channel or "
                             f"{head}:per-token (how keys are grouped)", param="policies")
        keys: QuantAxis = "token" if tail == "per-token" else "channel"
        fmt: QuantFormat = "fp8" if head == "fp8" else ("int8" if head == "int8" else "int4")
        return CachePolicy(spec, quant=KvQuant(fmt, group=group, keys=keys,
                                               residual=0 if fmt == "fp8" else residual))
    if head in EVICT_KINDS:
        try:
            return CachePolicy(spec, evict=parse_evict(spec))
        except UsageError as exc:  # in the words of the parameter the spec came in
            why = str(exc).removeprefix(f"evict '{text}': ").removeprefix("evict ")
            raise UsageError(f"policy '{text}': {why}", param="policies") from None
    raise UsageError(f"unknown policy '{text}'; use fp8, int8, int4[:per-token], window:N, "
                     "streaming:SINKS+N, h2o:HEAVY+RECENT or snapkv:BUDGET[+WINDOW]",
                     param="policies")
