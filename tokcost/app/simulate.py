"""``kvmem simulate``: serve one stream of requests under each allocation policy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokcost.errors import UsageError
from tokcost.memory.blocks import check_block_size
from tokcost.memory.policies import POLICIES, PolicyName, policy_names

if TYPE_CHECKING:
    from tokcost.catalog import CatalogSource, ModelEntry
    from tokcost.memory import KvDtypeName
    from tokcost.memory.report import PolicyReport

__all__ = ["SimulationResult", "simulate"]

DEFAULT_MAX_LEN = 2048  # when neither max_len nor the model's context window says


@dataclass(frozen=True)
class SimulationResult:
    """One report per policy on the same requests, and the memory they shared."""

    model: str | None  # None when the memory was given as token slots
    kv_memory_bytes: int | None
    kv_bytes_per_token: int | None
    capacity_tokens: int
    max_len: int
    requests: int
    samples_per_request: int
    workload: str  # the distribution's name, or the trace's path
    seed: int
    rate: float | None
    policies: tuple[PolicyReport, ...]
    # Requests longer than max_len, cut to fit (the CLI warns; not in the JSON document).
    clipped_requests: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON document ``kvmem simulate`` prints (keys in the README)."""
        return {
            "model": self.model,
            "kv_memory_bytes": self.kv_memory_bytes,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "capacity_tokens": self.capacity_tokens,
            "max_len": self.max_len,
            "requests": self.requests,
            "samples_per_request": self.samples_per_request,
            "workload": self.workload,
            "seed": self.seed,
            "rate": self.rate,
            "policies": [r.to_dict() for r in self.policies],
        }


def simulate(
    *,
    model: str | ModelEntry = "opt-13b",
    catalog: CatalogSource = None,
    kv_memory: int = 12 * 10**9,
    kv_dtype: KvDtypeName | str = "fp16",
    slots: int | None = None,
    distribution: str = "sharegpt",
    requests: int = 500,
    rate: float | None = None,
    trace: str | Path | None = None,
    policies: Sequence[PolicyName | str] = POLICIES,
    block_size: int = 16,
    max_len: int | None = None,
    samples: int = 1,
    seed: int = 0,
    plot: str | Path | None = None,
    force: bool = False,
) -> SimulationResult:
    """Where KV memory goes under each policy, PagedAttention's Figure 2 on your workload.

    The memory is ``kv_memory`` bytes of ``model``'s cache (OPT-13B, 12 GB: the paper's
    setting), or ``slots`` token slots. Requests are ``requests`` draws from
    ``distribution`` (``sharegpt``, ``alpaca``, ``uniform:LO-HI``, ``fixed:P,O``), all at
    once or as Poisson arrivals at ``rate`` per decode step, or a JSONL ``trace``;
    ``samples`` parallel samples each. Requests longer than ``max_len`` (default: the
    model's context window) are cut to it; ``clipped_requests`` says how many.
    ``block_size`` is the paged policy's block, 1 to ``max_len`` tokens.
    ``plot`` writes stacked bars per policy.

    >>> r = simulate(slots=600, distribution="fixed:40,20", requests=10, policies=["paged"])
    >>> r.policies[0].label, r.policies[0].completed
    ('paged/16', 10)
    """
    from tokcost.memory import kv_bytes_per_token
    from tokcost.memory.simulate import compare_policies
    from tokcost.memory.workload import clip_requests, load_requests, requests_from_distribution

    names = policy_names(policies)
    if samples < 1:
        raise UsageError(f"samples must be >= 1, got {samples}", param="samples")
    if max_len is not None and max_len < 2:
        raise UsageError(
            f"max_len must be >= 2 (one prompt token and one output token), got {max_len}",
            param="max_len",
        )
    target = Path(plot) if plot is not None else None
    if target is not None:
        from tokcost.plotting import check_plot_path

        check_plot_path(target, force=force)  # before any work
    memory: int | None = None
    per_token: int | None = None
    model_id: str | None = None
    if slots is not None:
        if slots < 1:
            raise UsageError(f"slots must be >= 1, got {slots}", param="slots")
        capacity = slots
        limit = DEFAULT_MAX_LEN if max_len is None else max_len
    else:
        from tokcost.tokenizers import open_catalog

        entry = open_catalog(catalog).resolve(model) if isinstance(model, str) else model
        if entry.architecture is None:
            raise UsageError(
                f"model '{entry.id}' has no architecture in the catalog; pick another model or "
                "give the memory as slots=N",
                param="slots",
            )
        per_token = kv_bytes_per_token(entry.architecture, kv_dtype)
        memory = kv_memory
        capacity = memory // per_token
        limit = max_len if max_len is not None else entry.context_window or DEFAULT_MAX_LEN
        model_id = entry.id
    check_block_size(block_size, limit)  # before the trace is read
    trace_path = Path(trace) if trace is not None else None
    if trace_path is not None:
        drawn = load_requests(trace_path, max_len=None)
        if samples > 1:
            drawn = [replace(r, n=samples) for r in drawn]
    else:
        drawn = requests_from_distribution(
            distribution, requests, seed=seed, max_len=None, n=samples, rate=rate
        )
    reqs, clipped = clip_requests(drawn, limit)
    reports = compare_policies(
        reqs, capacity_tokens=capacity, policies=names, max_len=limit, block_size=block_size
    )
    if target is not None:
        from tokcost.plotting.simulate import plot_policies

        what = (f"{model_id}, {memory / 2**30:.1f} GiB of KV memory" if model_id and memory
                else f"{capacity:,} token slots")
        source = (trace_path.name if trace_path is not None
                  else f"{requests} {distribution}-like requests")
        plot_policies(reports, target, force=force,
                      title=f"Where KV-cache memory goes: {what}, {source}")
    return SimulationResult(
        model=model_id,
        kv_memory_bytes=memory,
        kv_bytes_per_token=per_token,
        capacity_tokens=capacity,
        max_len=limit,
        requests=len(reqs),
        samples_per_request=samples,
        workload=str(trace_path) if trace_path is not None else distribution,
        seed=seed,
        rate=rate,
        policies=tuple(reports),
        clipped_requests=clipped,
    )
