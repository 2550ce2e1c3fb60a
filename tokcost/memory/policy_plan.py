"""``kvmem estimate`` with a cache policy (``evict``, ``residual``): ``policy_bytes`` replaces
the engine's per-request bytes in the engine's KV memory. Full-attention models only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokcost.errors import UsageError, arg
from tokcost.memory.cache_policy import Eviction, KvQuant, QuantFormat, policy_bytes
from tokcost.memory.engines.base import Deployment, Engine, EngineReport, Plan
from tokcost.memory.fit import GpuFit
from tokcost.memory.note import Note

if TYPE_CHECKING:
    from tokcost.memory.request import CacheSpec

__all__ = ["PolicyPlan", "policy_plan"]

# A quantized cache keeps its residual in the model's compute dtype (bf16/fp16).
_RESIDUAL_BYTES = 2


@dataclass(frozen=True)
class PolicyPlan(Plan):
    """An engine plan whose per-request bytes are a cache policy's (numbers per GPU)."""

    inner: Plan
    block_size: int
    fit: GpuFit | None
    quant: KvQuant | None
    evict: Eviction | None
    layers: int
    kv_heads: int
    head_dim: int
    full_bytes: int
    prompt: int | None = None  # SnapKV compresses this many prompt tokens (None: all)

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
        return super().largest_context(batch, limit) or None  # none at all: no answer

    def report(self, max_model_len: int) -> EngineReport:
        return self.inner.report(max_model_len)

    def to_dict(self) -> dict[str, Any]:
        q, e = self.quant, self.evict
        grouped = q if q is not None and q.grouped else None
        return {"kv_dtype": q.format if q is not None else None, "keys": grouped and grouped.keys,
                "values": grouped and grouped.values, "group": grouped and grouped.group,
                "residual": grouped and grouped.residual,
                "evict": None if e is None else {"kind": e.kind, "sinks": e.sinks,
                                                 "heavy": e.heavy, "budget": e.budget,
                                                 "recent": e.recent},
                "prompt": self.prompt if e is not None and e.kind == "snapkv" else None}


def policy_plan(inner: Plan, fit: GpuFit | None, dep: Deployment, cache: CacheSpec, engine: Engine,
    *, layers: int, prompt: int | None) -> tuple[PolicyPlan, list[Note]]:
    """The plan for ``cache``'s policy (``layers``: the fullest stage's), and its notes."""
    layout, residual, ev = dep.layout, cache.residual, cache.eviction
    kinds = [kind for kind, n in layout.counts.items() if n and kind != "full"]
    if kinds or dep.head_dim is None or layout.kv_heads_per_gpu is None:
        raise UsageError(f"model '{dep.model}' has {', '.join(sorted(kinds))} layers; cache "
                         "policies are planned for full-attention models only",
                         param="evict" if ev is not None else "residual")
    dtype = layout.dtype
    if residual is not None and dtype.group is None:
        raise UsageError(f"{arg('residual')} applies to int8/int4 caches (KIVI), not "
                         f"{dtype.name}; give {arg('kv_dtype', 'int8')} or int4",
                         param="residual", related=("kv_dtype",))
    quant: KvQuant | None = None
    full_bytes = dtype.bits // 8
    if dtype.name == "fp8":
        quant = KvQuant("fp8", residual=0)
    elif dtype.group is not None:
        fmt: QuantFormat = "int8" if dtype.name == "int8" else "int4"
        # Without a residual, keys per token as kv_layout sizes them; with one, KIVI's layout.
        quant = KvQuant(fmt, group=dtype.group, keys="token" if residual is None else "channel",
                        residual=residual or 0)
        full_bytes = _RESIDUAL_BYTES
    plan = PolicyPlan(inner, inner.block_size, fit, quant, ev, layers, layout.kv_heads_per_gpu,
                      dep.head_dim, full_bytes, prompt)
    if max(plan.request_bytes(1), plan.request_bytes(10**6)) == 0:
        raise UsageError(f"{arg('evict')} '{cache.evict}' keeps no tokens; give a budget of at "
                         "least one", param="evict")
    what = []
    if quant is not None and quant.grouped:
        what.append(f"{quant.format} keys per {quant.keys}, values per {quant.values} in groups "
                    f"of {quant.group}, the last {quant.residual:,} tokens in bf16")
    if ev is not None:
        what.append(f"{ev.kind} eviction")
    notes = [Note(f"cache policy: {'; '.join(what)} (tokcost.memory.cache_policy); per "
                  "sequence is the bytes it holds at each context")] if what else []
    kept = engine.eviction_note() if ev is not None else None
    return plan, [*notes, *([kept] if kept else []),
                  Note("the decode and prefill rooflines read the full cache, not the policy's")]
