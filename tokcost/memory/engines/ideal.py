"""The ``ideal`` profile: the bytes a paged cache truly holds (``KvLayout.sequence_bytes``),
no engine's reserves."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

from tokcost.errors import Note, arg
from tokcost.memory.engines.base import Deployment, Engine, EngineGroup, EngineReport, Plan
from tokcost.memory.fit import DEFAULT_BLOCK, GpuFit
from tokcost.memory.kv import KvDtype, KvLayout

__all__ = ["Ideal", "IdealPlan"]


@dataclass(frozen=True)
class IdealPlan(Plan):
    layout: KvLayout
    block_size: int
    fit: GpuFit | None
    given: bool = True  # the block came from --block-size (else tokcost's default)

    def request_bytes(self, context: int) -> int:
        return self.layout.sequence_bytes(context, self.block_size)

    def max_concurrency(self, context: int) -> float | None:
        """vLLM's ``num_blocks / ceil(context / block)`` if every layer caches every token."""
        if self.fit is not None and self.layout.uniform:
            return self.fit.num_blocks / math.ceil(context / self.block_size)
        return super().max_concurrency(context)

    def report(self, max_model_len: int) -> EngineReport:
        lay, fit, block, counts = self.layout, self.fit, self.block_size, self.layout.counts
        groups = tuple(
            EngineGroup(kind, counts[kind], counts[kind], block,
                        lay.state_bytes if kind == "linear" else block * lay.token_bytes[kind],
                        lay.window if kind == "sliding" else None)
            for kind in ("full", "sliding", "mla", "linear") if counts[kind])
        details = () if fit is None else (
            f"blocks: floor({fit.available_bytes:,} / {fit.page_bytes:,} B per block) = "
            f"{fit.num_blocks:,} -> {fit.cache_tokens:,} tokens"
            + ("" if lay.uniform else " at short context (windowed/linear layers cap long ones)"),)
        why = (f"{block} (as given)" if self.given else
               f"{block} (tokcost's default; {arg('block_size')} sets it)")
        return EngineReport(
            name=Ideal.name, version=Ideal.code, block_size=block,
            block_size_reason=Note(why), max_model_len=max_model_len,
            groups=groups, num_blocks=None if fit is None else fit.num_blocks,
            cache_tokens=None if fit is None else fit.cache_tokens,
            max_concurrency=self.max_concurrency(max_model_len), title=Ideal.title,
            sets_aside=False, header=Note(f"block {why}"), details=details)


@dataclass(frozen=True, kw_only=True)
class Ideal(Engine):
    """The bytes held: no engine's layouts, reserves or start-up checks."""

    name: ClassVar[str] = "ideal"
    title: ClassVar[str] = "ideal"
    code: ClassVar[str] = "tokcost steady state (bytes held, whole blocks)"

    def plan(self, dep: Deployment) -> tuple[IdealPlan, GpuFit | None]:
        block = DEFAULT_BLOCK if dep.block_size is None else dep.block_size
        fit = dep.fit(block)
        return IdealPlan(dep.stage_layout, block, fit, given=dep.block_size is not None), fit

    def layout_note(self, dtype: KvDtype) -> Note | None:
        return None  # tokcost's own layouts are the ones it holds

    def eviction_note(self) -> Note | None:
        return None
