"""What every engine profile answers, and the report ``kvmem estimate`` shows for it.

An engine profile turns a model's per-layer cache sizes (``KvLayout``) and the KV memory of
one GPU into the numbers that engine would print and act on: how many tokens its pool holds,
how many requests of a length it admits at once, whether it starts at all. ``ideal`` is the
bytes truly held; ``vllm`` and ``sglang`` reproduce those engines' own accounting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

__all__ = ["ENGINES", "EngineGroup", "EnginePlan", "EngineReport"]

ENGINES = ("vllm", "sglang", "ideal")


@dataclass(frozen=True)
class EngineGroup:
    """One KV-cache group (vLLM) or pool (SGLang): layers that share a block table."""

    kind: str  # full, sliding, mla, mamba (vLLM spec kinds) or full/swa pools (SGLang)
    layers: int  # real layers in the group
    slots: int  # layer slots it occupies (layers + padding)
    block_size: int
    page_bytes: int  # one block of one layer
    window: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "layers": self.layers,
            "padding": self.slots - self.layers,
            "block_size": self.block_size,
            "page_bytes": self.page_bytes,
            "sliding_window": self.window,
        }


RefusalCause = Literal["model_len", "memory"]


def past_model_len(max_model_len: int, model_max_len: int | None) -> bool:
    """Is ``max_model_len`` longer than the model's own context length? vLLM and SGLang both
    refuse that at start-up (unless an environment variable overrides it), before memory."""
    return model_max_len is not None and max_model_len > model_max_len


def refusal_cause(refusal: str | None, max_model_len: int,
                  model_max_len: int | None) -> RefusalCause | None:
    """Why an engine that refuses to start does: the model's length, else memory."""
    if refusal is None:
        return None
    return "model_len" if past_model_len(max_model_len, model_max_len) else "memory"


@dataclass(frozen=True)
class EngineReport:
    """The engine's view of one deployment, for ``max_model_len`` tokens per request."""

    name: str
    version: str  # which engine code the formulas follow
    block_size: int
    block_size_reason: str
    max_model_len: int
    groups: tuple[EngineGroup, ...] = ()
    num_blocks: int | None = None
    cache_tokens: int | None = None  # the pool's capacity as the engine logs it
    max_concurrency: float | None = None
    lines: tuple[str, ...] = ()  # log lines as the engine prints them
    refuses_to_start: bool = False
    refusal: str | None = None
    # Why it refuses: "model_len" (longer than the model's own context length) or "memory"
    # (one request of max_model_len does not fit), so advice can name the right knob.
    refusal_cause: RefusalCause | None = None
    settings: dict[str, Any] = field(default_factory=dict)  # knobs and where defaults came from

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "block_size": self.block_size,
            "block_size_reason": self.block_size_reason,
            "max_model_len": self.max_model_len,
            "groups": [g.to_dict() for g in self.groups],
            "num_blocks": self.num_blocks,
            "cache_tokens": self.cache_tokens,
            "max_concurrency": self.max_concurrency,
            "logged_lines": list(self.lines),
            "refuses_to_start": self.refuses_to_start,
            "refusal": self.refusal,
            "refusal_cause": self.refusal_cause,
            **self.settings,
        }


class EnginePlan(Protocol):
    """An engine's accounting for one model on one GPU's KV memory (``available``)."""

    @property
    def block_size(self) -> int: ...

    def request_bytes(self, context: int) -> int:
        """Bytes the engine sets aside for one request of ``context`` tokens (per GPU)."""
        ...

    def max_concurrency(self, context: int) -> float | None:
        """Requests of ``context`` tokens served at once; None without a memory budget."""
        ...

    def fits(self, context: int, batch: int) -> bool | None:
        """Whether ``batch`` such requests run at once (and the engine starts at all)."""
        ...

    def largest_context(self, batch: int, limit: int) -> int | None:
        """Longest context (<= ``limit``) for which ``batch`` requests fit."""
        ...

    def report(self, max_model_len: int) -> EngineReport: ...
