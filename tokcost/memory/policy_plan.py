"""``kvmem estimate`` with a cache policy: eviction (``evict``) or a KIVI-style quantized
cache with a full-precision residual (``residual``), planned with the one bytes formula
(``tokcost.memory.cache_policy.policy_bytes``) that the reference caches' arrays match.

The policy replaces the engine's per-request bytes; the KV memory stays the engine's.
vLLM and SGLang evict nothing and have no KIVI layout, so with them the figures are what
the policy would hold in the memory that engine leaves, and a note says so; ``ideal`` is
the bytes held with no engine around them. Full-attention models only: a sliding, MLA or
linear layer holds something else, which this formula does not describe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tokcost.errors import UsageError
from tokcost.memory.cache_policy import (
    Eviction,
    KvQuant,
    QuantFormat,
    parse_evict,
    policy_bytes,
)
from tokcost.memory.engines.base import EnginePlan, EngineReport
from tokcost.memory.fit import GpuFit
from tokcost.memory.kv import KvLayout

__all__ = ["PolicyPlan", "policy_plan"]

# A quantized cache keeps its residual in the model's compute dtype (bf16/fp16).
_RESIDUAL_BYTES = 2


@dataclass(frozen=True)
class PolicyPlan:
    """An engine plan whose per-request bytes are a cache policy's (numbers per GPU)."""

    inner: EnginePlan
    fit: GpuFit | None
    quant: KvQuant | None
    evict: Eviction | None
    layers: int
    kv_heads: int
    head_dim: int
    full_bytes: int
    prompt: int | None = None  # SnapKV compresses this many prompt tokens (None: all)

    @property
    def block_size(self) -> int:
        return self.inner.block_size

    def request_bytes(self, context: int) -> int:
        return policy_bytes(context, layers=self.layers, kv_heads=self.kv_heads,
                            head_dim=self.head_dim, full_bytes=self.full_bytes,
                            quant=self.quant, evict=self.evict, prompt=self.prompt)

    def max_concurrency(self, context: int) -> float | None:
        if self.fit is None:
            return None
        return self.fit.available_bytes / max(1, self.request_bytes(context))

    def fits(self, context: int, batch: int) -> bool | None:
        if self.fit is None:
            return None
        return batch * self.request_bytes(context) <= self.fit.available_bytes

    def largest_context(self, batch: int, limit: int) -> int | None:
        """Bisection: the bytes grow with the context (until an eviction budget caps them)."""
        if self.fit is None or not self.fits(1, batch):
            return None
        lo, hi = 1, limit
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if self.fits(mid, batch) else (lo, mid - 1)
        return lo

    def report(self, max_model_len: int) -> EngineReport:
        return self.inner.report(max_model_len)

    def to_dict(self) -> dict[str, Any]:
        """The ``cache_policy`` object of ``kvmem estimate --json``."""
        q, e = self.quant, self.evict
        return {
            "kv_dtype": q.format if q is not None else None,
            "keys": q.keys if q is not None and q.grouped else None,
            "values": q.values if q is not None and q.grouped else None,
            "group": q.group if q is not None and q.grouped else None,
            "residual": q.residual if q is not None and q.grouped else None,
            "evict": None if e is None else {"kind": e.kind, "sinks": e.sinks,
                                             "heavy": e.heavy, "budget": e.budget,
                                             "recent": e.recent},
            "prompt": self.prompt if e is not None and e.kind == "snapkv" else None,
        }


def policy_plan(
    inner: EnginePlan, fit: GpuFit | None, layout: KvLayout, *, engine: str, layers: int,
    head_dim: int | None, evict: str | Eviction | None, residual: int | None,
    prompt: int | None, model: str,
) -> tuple[PolicyPlan, list[str]]:
    """The plan for ``evict``/``residual`` on ``layout`` (``layers`` full layers of the fullest
    pipeline stage), and the notes it needs."""
    kinds = [kind for kind, n in layout.counts.items() if n and kind != "full"]
    param = "evict" if evict is not None else "residual"
    if kinds or head_dim is None or layout.kv_heads_per_gpu is None:
        raise UsageError(f"model '{model}' has {', '.join(sorted(kinds))} layers; cache "
                         "policies are planned for full-attention models only", param=param)
    dtype = layout.dtype
    if residual is not None and dtype.group is None:
        raise UsageError(f"residual applies to int8/int4 caches (KIVI), not {dtype.name}; "
                         "give kv_dtype=int8 or int4", param="residual",
                         related=("kv_dtype",))
    ev = parse_evict(evict) if isinstance(evict, str) else evict
    quant: KvQuant | None = None
    full_bytes = dtype.bits // 8
    if dtype.name == "fp8":
        quant = KvQuant("fp8", residual=0)
    elif dtype.group is not None:
        fmt: QuantFormat = "int8" if dtype.name == "int8" else "int4"
        # Without a residual, keys per token as kv_layout sizes them (the same bytes);
        # with one, KIVI's layout: keys per channel, the recent tokens in full precision.
        quant = KvQuant(fmt, group=dtype.group, keys="token" if residual is None else "channel",
                        residual=residual or 0)
        full_bytes = _RESIDUAL_BYTES
    plan = PolicyPlan(inner, fit, quant, ev, layers, layout.kv_heads_per_gpu, head_dim,
                      full_bytes, prompt)
    if max(plan.request_bytes(1), plan.request_bytes(10**6)) == 0:
        raise UsageError(f"evict '{evict}' keeps no tokens; give a budget of at least one",
                         param="evict")
    notes = []
    what = []
    if quant is not None and quant.grouped:
        what.append(f"{quant.format} keys per {quant.keys}, values per {quant.values} in groups "
                    f"of {quant.group}, the last {quant.residual:,} tokens in bf16")
    if ev is not None:
        what.append(f"{ev.kind} eviction")
    if what:
        notes.append(f"cache policy: {'; '.join(what)} (tokcost.memory.cache_policy); per "
                     "sequence is the bytes it holds at each context")
    if ev is not None and engine != "ideal":
        notes.append(f"{engine} evicts nothing: per sequence, concurrency and fits are the bytes "
                     f"the eviction policy holds, in the KV memory {engine} leaves; its own "
                     "lines are for its full cache (engine=ideal drops them)")
    if ev is not None or residual is not None:
        notes.append("the decode and prefill rooflines read the full cache, not the policy's")
    return plan, notes
