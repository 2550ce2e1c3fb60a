"""The ``ideal`` profile: the bytes a paged cache truly holds, no engine's reserves.

Every token-caching layer holds whole blocks of the context, a sliding layer only the blocks
its window touches, a linear layer its fixed state (``KvLayout.sequence_bytes``). This is
the steady state of a long request, and what tokcost printed before it had engine profiles.
"""

from __future__ import annotations

from dataclasses import dataclass

from tokcost.memory.engines.base import EngineGroup, EngineReport
from tokcost.memory.fit import GpuFit, largest_context, max_concurrency
from tokcost.memory.kv import KvLayout

__all__ = ["IDEAL_VERSION", "IdealPlan"]

IDEAL_VERSION = "tokcost steady state (bytes held, whole blocks)"


@dataclass(frozen=True)
class IdealPlan:
    layout: KvLayout
    block_size: int
    fit: GpuFit | None

    def request_bytes(self, context: int) -> int:
        return self.layout.sequence_bytes(context, self.block_size)

    def max_concurrency(self, context: int) -> float | None:
        return None if self.fit is None else max_concurrency(self.layout, self.fit, context)

    def fits(self, context: int, batch: int) -> bool | None:
        if self.fit is None:
            return None
        return batch * self.request_bytes(context) <= self.fit.available_bytes

    def largest_context(self, batch: int, limit: int) -> int | None:
        if self.fit is None:
            return None
        return largest_context(self.layout, self.fit, batch=batch, limit=limit)

    def report(self, max_model_len: int) -> EngineReport:
        counts = self.layout.counts
        groups = tuple(
            EngineGroup(kind, counts[kind], counts[kind], self.block_size,
                        self.block_size * self.layout.token_bytes.get(kind, 0)
                        if kind != "linear" else self.layout.state_bytes,
                        self.layout.window if kind == "sliding" else None)
            for kind in ("full", "sliding", "mla", "linear") if counts[kind]
        )
        fit = self.fit
        return EngineReport(
            name="ideal",
            version=IDEAL_VERSION,
            block_size=self.block_size,
            block_size_reason=f"{self.block_size} (as given)",
            max_model_len=max_model_len,
            groups=groups,
            num_blocks=None if fit is None else fit.num_blocks,
            cache_tokens=None if fit is None else fit.cache_tokens,
            max_concurrency=self.max_concurrency(max_model_len),
        )
