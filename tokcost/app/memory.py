"""``kvmem estimate``: the KV cache of one model, what fits on a GPU, and the decode rate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokcost.errors import UsageError
from tokcost.memory.estimate import KvEstimate
from tokcost.memory.fit import DEFAULT_RESERVE, DEFAULT_UTIL

if TYPE_CHECKING:
    from tokcost.catalog import CatalogSource, Gpu, ModelEntry
    from tokcost.memory import KvDtypeName

# KvEstimate is the estimate a MemoryEstimate carries: the CLI renders it.
__all__ = ["KvEstimate", "MemoryEstimate", "estimate_memory"]


@dataclass(frozen=True)
class MemoryEstimate:
    """Every number ``kvmem estimate`` prints (``estimate``), and the plot it wrote."""

    estimate: KvEstimate
    plot: Path | None = None
    # Where a config.json / hf: model's numbers came from (weights from safetensors
    # headers...): notes for the reader, not part of the JSON document.
    source_notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON document ``kvmem estimate`` prints (keys in the README)."""
        return {**self.estimate.to_dict(), "plot": str(self.plot) if self.plot else None}


def estimate_memory(
    model: str | ModelEntry | None = None,
    *,
    config: str | Path | None = None,
    catalog: CatalogSource = None,
    contexts: Sequence[int] | None = None,
    batch: int = 1,
    kv_dtype: KvDtypeName | str = "bf16",
    kv_group_size: int | None = None,
    block_size: int | None = None,
    tp: int = 1,
    gpu: str | Gpu | None = None,
    gpu_memory: int | None = None,
    gpu_util: float = DEFAULT_UTIL,
    kv_memory: int | None = None,
    reserve: int | None = None,
    weights_dtype: str | None = None,
    bandwidth: int | None = None,
    flops: float | None = None,
    efficiency: float = 1.0,
    input_tokens: int | None = None,
    plot: str | Path | None = None,
    force: bool = False,
    engine: str = "vllm",
    max_num_batched_tokens: int | None = None,
    hybrid_manager: bool = True,
    pp: int = 1,
    mem_fraction_static: float | None = None,
    swa_full_tokens_ratio: float | None = None,
    evict: str | None = None,
    residual: int | None = None,
) -> MemoryEstimate:
    """Size the KV cache of ``model`` at each context (default: its window), per GPU.

    ``model`` is a catalog id or alias, an entry, or ``hf:ORG/REPO`` (the local Hugging
    Face cache, else the hub); ``config`` instead reads a config.json or a model folder
    (weights from its safetensors headers).

    Sizes are bytes (``tokcost.parse_size("80GiB")``). Give the GPU as a catalog
    ``gpu`` or its ``gpu_memory``, or skip the estimate with ``kv_memory``, the
    "Available KV cache memory" vLLM logs; ``reserve`` defaults to 2 GiB per GPU.
    ``plot`` writes the memory against context (``.png``/``.svg``/``.pdf``).

    ``engine`` picks whose accounting the numbers follow: ``vllm`` (default: vLLM v1's KV
    cache manager, with ``max_num_batched_tokens`` and ``hybrid_manager``), ``sglang`` (its
    token pools, with ``mem_fraction_static`` and ``swa_full_tokens_ratio``) or ``ideal`` (the
    bytes truly held). ``pp`` splits the layers over pipeline stages as vLLM does;
    ``block_size`` None is the engine's own (vLLM: 16, or what its backend forces).
    With a GPU (or ``bandwidth``) each context also gets the decode roofline, the
    slower of bandwidth and compute at ``efficiency`` (default 1.0, the datasheet
    bound), and the time to first token of an ``input_tokens`` prompt (default: the
    context); ``flops`` overrides the GPU's peak FLOP/s.

    ``evict`` (``window:N``, ``streaming:SINKS+N``, ``h2o:HEAVY+RECENT``,
    ``snapkv:BUDGET[+WINDOW]``) and ``residual`` (int8/int4 stored as KIVI stores them, the
    last ``residual`` tokens in full precision) size each request by the cache policy's
    bytes, ``tokcost.memory.cache_policy.policy_bytes``.

    >>> r = estimate_memory("llama-3.1-8b", contexts=[8192], kv_memory=10 * 2**30)
    >>> r.estimate.bytes_per_token, r.estimate.fit.num_blocks
    (131072, 5120)
    """
    from tokcost.memory import estimate_kv
    from tokcost.memory.engines.options import EngineOptions, engine_name
    from tokcost.tokenizers import open_catalog

    engine = engine_name(engine)
    if engine == "sglang":
        # SGLang's mem_fraction_static already leaves room for activations and CUDA graphs.
        vllm_budget = (("gpu_util", gpu_util != DEFAULT_UTIL), ("reserve", reserve is not None))
        for param, given in vllm_budget:
            if given:
                raise UsageError(
                    f"{param} is vLLM's budget; SGLang sizes its pool with mem_fraction_static",
                    param=param, related=("engine", "mem_fraction_static"),
                )

    if gpu is not None and gpu_memory is not None:
        raise UsageError("gpu already sets the GPU memory; give a GPU or its memory, not both",
                         param="gpu")
    if kv_memory is not None and (
        gpu_memory is not None or gpu_util != DEFAULT_UTIL or reserve is not None
        or mem_fraction_static is not None
    ):
        raise UsageError(
            "kv_memory replaces the estimate from GPU memory, utilization and reserve; "
            "give it without them",
            param="kv_memory",
        )
    if gpu is None and gpu_memory is None and kv_memory is None:
        # Without a GPU nothing reads them: say so rather than print an estimate they
        # did not change.
        unused = [name for name, given in (("gpu_util", gpu_util != DEFAULT_UTIL),
                                           ("reserve", reserve is not None),
                                           ("mem_fraction_static", mem_fraction_static is not None))
                  if given]
        if unused:
            raise UsageError(
                f"{unused[0]} applies to a GPU's memory; give gpu or gpu_memory with it",
                param=unused[0], related=("gpu", "gpu_memory"),
            )
    if gpu is None and bandwidth is None:
        # The roofline needs a bandwidth: without one these would change nothing.
        unused = [name for name, given in (("efficiency", efficiency != 1.0),
                                           ("flops", flops is not None),
                                           ("input_tokens", input_tokens is not None)) if given]
        if unused:
            raise UsageError(
                f"{unused[0]} applies to the decode and prefill roofline; give gpu or "
                "bandwidth with it",
                param=unused[0], related=("gpu", "bandwidth"),
            )
    target = Path(plot) if plot is not None else None
    if target is not None:
        from tokcost.plotting import check_plot_path

        check_plot_path(target, force=force)  # before any work
    cat = open_catalog(catalog)
    gpu_entry = cat.resolve_gpu(gpu) if isinstance(gpu, str) else gpu  # before reading a model
    from tokcost.app.models import resolve_model

    entry, loaded = resolve_model(
        model, config=config, catalog=cat,
        needs_weights=(gpu is not None or bandwidth is not None
                       or (gpu_memory is not None and kv_memory is None)),
    )
    result = estimate_kv(
        entry,
        contexts=contexts,
        batch=batch,
        kv_dtype=kv_dtype,
        block_size=block_size,
        tp=tp,
        gpu=gpu_entry,
        gpu_memory=gpu_memory,
        gpu_util=gpu_util,
        kv_memory=kv_memory,
        reserve=DEFAULT_RESERVE if reserve is None else reserve,
        weights_dtype=weights_dtype,
        group=kv_group_size,
        bandwidth=bandwidth,
        engine=EngineOptions(
            name=engine,
            max_num_batched_tokens=max_num_batched_tokens,
            hybrid_manager=hybrid_manager,
            pp=pp,
            mem_fraction_static=mem_fraction_static,
            swa_full_tokens_ratio=swa_full_tokens_ratio,
        ),
        flops=flops,
        efficiency=efficiency,
        input_tokens=input_tokens,
        evict=evict,
        residual=residual,
    )
    if target is not None:
        from tokcost.plotting.memory import plot_memory

        plot_memory(result, target, force=force)
    return MemoryEstimate(result, target, loaded.notes if loaded is not None else ())
