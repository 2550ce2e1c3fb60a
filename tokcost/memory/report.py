"""What a serving simulation reports: memory split per step, and averaged per policy."""

from __future__ import annotations

from dataclasses import asdict, dataclass
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
        return {k: round(v, 3 if k == "mean_batch" else 6) if isinstance(v, float) else v
                for k, v in asdict(self).items()}
