"""What a serving simulation reports: memory split per step, and averaged per policy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["PolicyReport", "StepSample"]


@dataclass(frozen=True)
class StepSample:
    """Slots in each category at one step (for property tests and plots)."""

    token_states: int
    reserved: int
    internal: int
    external: int
    free: int
    live_sequences: int


@dataclass(frozen=True)
class PolicyReport:
    """Averages over the busy steps, as fractions of the KV memory (sum to 1)."""

    policy: str
    block_size: int | None
    capacity_tokens: int
    token_states: float
    reserved: float
    internal_fragmentation: float
    external_fragmentation: float
    free: float
    peak_batch: int  # most sequences running at once
    mean_batch: float
    steps: int
    saturated_steps: int  # steps in which requests waited for memory (the averaged ones)
    completed: int
    preemptions: int
    prefix_sharing_saved: float | None  # paged with n > 1: share of blocks saved

    @property
    def label(self) -> str:
        """``max``, ``pow2``, ``oracle`` or ``paged/16`` (the block size)."""
        return self.policy if self.block_size is None else f"{self.policy}/{self.block_size}"

    def to_dict(self) -> dict[str, Any]:
        """One entry of the ``policies`` list in ``kvmem simulate``'s JSON document."""
        return {
            "policy": self.policy,
            "block_size": self.block_size,
            "capacity_tokens": self.capacity_tokens,
            "token_states": round(self.token_states, 6),
            "reserved": round(self.reserved, 6),
            "internal_fragmentation": round(self.internal_fragmentation, 6),
            "external_fragmentation": round(self.external_fragmentation, 6),
            "free": round(self.free, 6),
            "peak_batch": self.peak_batch,
            "mean_batch": round(self.mean_batch, 3),
            "steps": self.steps,
            "saturated_steps": self.saturated_steps,
            "completed": self.completed,
            "preemptions": self.preemptions,
            "prefix_sharing_saved": (
                None if self.prefix_sharing_saved is None else round(self.prefix_sharing_saved, 6)
            ),
        }
