"""``kvmem simulate``: serve one stream of requests under each allocation policy."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokcost.errors import UsageError, arg
from tokcost.memory.blocks import check_block_size
from tokcost.memory.policies import POLICIES, PolicyName, policy_names
from tokcost.memory.request import PlotSpec
from tokcost.parts import Parts
from tokcost.units import parse_count, parse_size

if TYPE_CHECKING:
    from tokcost.catalog import CatalogSource, ModelEntry
    from tokcost.memory.simulate import PolicyReport
    from tokcost.memory.workload import Request

__all__ = ["SimulationRequest", "simulate"]

DEFAULT_MAX_LEN = 2048  # when neither max_len nor the model's context window says


@dataclass(frozen=True, kw_only=True)
class MemorySpec:
    """``kv_memory`` bytes of ``model``'s cache (OPT-13B, 12 GB: the paper's), or ``slots``."""

    model: str | ModelEntry = "opt-13b"
    catalog: CatalogSource = None
    kv_memory: int = 12 * 10**9
    kv_dtype: str = "fp16"
    slots: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kv_memory", parse_size(self.kv_memory, param="kv_memory"))
        if self.slots is not None:
            object.__setattr__(self, "slots", parse_count(self.slots, param="slots"))
            if self.slots < 1:
                raise UsageError(f"{arg('slots')} must be >= 1, got {self.slots}", param="slots")


@dataclass(frozen=True, kw_only=True)
class WorkloadSpec:
    """``requests`` drawn from ``distribution`` (at ``rate`` per step) or a JSONL ``trace``,
    ``samples`` each, cut to ``max_len`` (None: the model's context window)."""

    distribution: str = "sharegpt"
    requests: int = 500
    rate: float | None = None
    trace: Path | None = None
    samples: int = 1
    seed: int = 0
    max_len: int | None = None

    def __post_init__(self) -> None:
        for name in ("requests", "samples", "seed", "max_len"):
            if isinstance(getattr(self, name), str):
                object.__setattr__(self, name, parse_count(getattr(self, name), param=name))
        if isinstance(self.trace, str):
            object.__setattr__(self, "trace", Path(self.trace))
        if self.samples < 1:
            raise UsageError(f"{arg('samples')} must be >= 1, got {self.samples}", param="samples")
        if self.max_len is not None and self.max_len < 2:
            raise UsageError(f"{arg('max_len')} must be >= 2 (one prompt token and one output "
                             f"token), got {self.max_len}", param="max_len")

    def draw(self) -> list[Request]:
        from tokcost.memory.workload import load_requests, requests_from_distribution
        if self.trace is None:
            return requests_from_distribution(self.distribution, self.requests, seed=self.seed,
                                              max_len=None, n=self.samples, rate=self.rate)
        drawn = load_requests(self.trace, max_len=None)
        return drawn if self.samples == 1 else [replace(r, n=self.samples) for r in drawn]


@dataclass(frozen=True, kw_only=True)
class SimulationRequest(Parts):
    """One ``kvmem simulate``: ``policies`` (a comma list too) on one workload in one memory;
    ``block_size`` is the paged policy's."""

    memory: MemorySpec = field(default_factory=MemorySpec)
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    policies: tuple[PolicyName, ...] = tuple(PolicyName(p) for p in POLICIES)
    block_size: int = 16
    output: PlotSpec = field(default_factory=PlotSpec)

    def __post_init__(self) -> None:
        given: Any = self.policies
        names = [p.strip() for p in given.split(",") if p.strip()] if isinstance(given, str) \
            else given
        object.__setattr__(self, "policies", policy_names(names))
        object.__setattr__(self, "block_size", parse_count(self.block_size, param="block_size"))


@dataclass(frozen=True, kw_only=True)
class SimulationResult:
    """One report per policy on the same requests, and the memory they shared."""

    model: str | None = None  # None when the memory was given as token slots
    kv_memory_bytes: int | None = None
    kv_bytes_per_token: int | None = None
    capacity_tokens: int
    max_len: int
    requests: int = 0
    samples_per_request: int = 1
    workload: str = ""  # the distribution's name, or the trace's path
    seed: int = 0
    rate: float | None = None
    policies: tuple[PolicyReport, ...] = ()
    clipped_requests: int = 0  # cut to max_len (the CLI warns; not in the JSON document)

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "clipped_requests"}
        return {**data, "policies": [r.to_dict() for r in self.policies]}


def _memory(request: SimulationRequest) -> SimulationResult:
    mem, max_len = request.memory, request.workload.max_len
    if mem.slots is not None:
        return SimulationResult(capacity_tokens=mem.slots, max_len=max_len or DEFAULT_MAX_LEN)
    from tokcost.memory import kv_bytes_per_token
    from tokcost.tokenizers import open_catalog
    entry = open_catalog(mem.catalog).resolve(mem.model) if isinstance(mem.model, str) \
        else mem.model
    if entry.architecture is None:
        raise UsageError(f"model '{entry.id}' has no architecture in the catalog; pick another "
                         f"model or give the memory as {arg('slots', 'N')}", param="slots")
    per_token = kv_bytes_per_token(entry.architecture, mem.kv_dtype)
    return SimulationResult(
        model=entry.id, kv_memory_bytes=mem.kv_memory, kv_bytes_per_token=per_token,
        capacity_tokens=mem.kv_memory // per_token,
        max_len=max_len or entry.context_window or DEFAULT_MAX_LEN)


def simulate(request: SimulationRequest, *,
             on_progress: Callable[[int, int], None] | None = None) -> SimulationResult:
    """Where KV memory goes under each policy (PagedAttention's Figure 2) on your workload;
    ``on_progress`` hears (requests served, requests x policies) every few thousand."""
    from tokcost.memory import simulate as sim
    from tokcost.memory.workload import clip_requests
    from tokcost.plotting import check_plot_path
    out, work = request.output, request.workload
    check_plot_path(out.plot, force=out.force)  # before any work
    pool = _memory(request)
    check_block_size(request.block_size, pool.max_len)  # before the trace is read
    reqs, clipped = clip_requests(work.draw(), pool.max_len)
    reports = sim.compare_policies(reqs, capacity_tokens=pool.capacity_tokens,
                                   policies=request.policies, max_len=pool.max_len,
                                   block_size=request.block_size, progress=on_progress)
    if out.plot is not None:
        from tokcost.plotting.memory import plot_policies
        what = (f"{pool.model}, {pool.kv_memory_bytes / 2**30:.1f} GiB of KV memory"
                if pool.model and pool.kv_memory_bytes else f"{pool.capacity_tokens:,} token slots")
        source = (work.trace.name if work.trace is not None
                  else f"{work.requests} {work.distribution}-like requests")
        plot_policies([r for r in reports if r.infeasible is None], out.plot,
                      title=f"Where KV-cache memory goes: {what}, {source}")
    return replace(pool, requests=len(reqs), samples_per_request=work.samples,
                   workload=str(work.trace) if work.trace is not None else work.distribution,
                   seed=work.seed, rate=work.rate, policies=tuple(reports),
                   clipped_requests=clipped)
