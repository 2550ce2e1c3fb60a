"""Choosing an engine profile and building its plan from one GPU's memory budget.

The budget is each engine's own: vLLM (and ``ideal``) take ``memory x gpu_memory_utilization
- weights - activation peak`` (tokcost's stated ``reserve``; vLLM profiles it), SGLang takes
``memory x mem_fraction_static - weights`` (its fraction already leaves room for activations
and CUDA graphs). ``kv_memory`` replaces either with the figure the engine logged.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tokcost.catalog.schema import Gpu, ModelEntry
from tokcost.errors import UsageError, suggest
from tokcost.memory.engines.base import ENGINES, EnginePlan
from tokcost.memory.engines.ideal import IdealPlan
from tokcost.memory.engines.sglang import default_mem_fraction_static, plan_sglang
from tokcost.memory.engines.vllm import plan_vllm
from tokcost.memory.fit import DEFAULT_BLOCK, DoesNotFit, GpuFit, gpu_fit
from tokcost.memory.kv import KvLayout
from tokcost.memory.parallel import pp_stages

__all__ = ["EngineOptions", "engine_name", "plan_engine"]


def engine_name(name: str) -> str:
    """``vllm``, ``sglang`` or ``ideal`` (any case), or a one-line error with a suggestion."""
    key = str(name).lower()
    if key not in ENGINES:
        raise UsageError(
            f"unknown engine '{name}'{suggest(key, ENGINES)}; use one of {', '.join(ENGINES)}",
            param="engine",
        )
    return key


@dataclass(frozen=True)
class EngineOptions:
    """The engine and the knobs only it reads (None: the engine's default)."""

    name: str = "vllm"
    max_num_batched_tokens: int | None = None  # vLLM
    hybrid_manager: bool = True  # vLLM: False = --disable-hybrid-kv-cache-manager
    pp: int = 1
    mem_fraction_static: float | None = None  # SGLang
    swa_full_tokens_ratio: float | None = None  # SGLang

    def check(self) -> None:
        """Refuse a knob the chosen engine does not read, rather than ignore it."""
        only = {
            "max_num_batched_tokens": ("vllm", self.max_num_batched_tokens is not None),
            "hybrid_manager": ("vllm", not self.hybrid_manager),
            "mem_fraction_static": ("sglang", self.mem_fraction_static is not None),
            "swa_full_tokens_ratio": ("sglang", self.swa_full_tokens_ratio is not None),
        }
        for param, (engine, given) in only.items():
            if given and self.name != engine:
                raise UsageError(
                    f"{param} is {'vLLM' if engine == 'vllm' else 'SGLang'}'s setting; "
                    f"use it with engine={engine} (the engine is {self.name})",
                    param=param, related=("engine",),
                )
        if self.mem_fraction_static is not None and not 0 < self.mem_fraction_static < 1:
            raise UsageError(
                f"mem_fraction_static must be in (0, 1), got {self.mem_fraction_static:g}",
                param="mem_fraction_static",
            )


@dataclass(frozen=True)
class Budget:
    """One GPU's memory and what the weights take from it (None: no GPU given)."""

    memory_bytes: int | None
    gpu: Gpu | None
    weights: int  # per GPU
    util: float
    reserve: int
    kv_memory: int | None

    @property
    def known(self) -> bool:
        return self.memory_bytes is not None or self.kv_memory is not None


def _stage_layout(layout: KvLayout, pp: int) -> KvLayout:
    """The pipeline stage that caches the most per token (it sets every stage's pool)."""
    if pp == 1:
        return layout
    stages = pp_stages(len(layout.layers), pp)
    return max((layout.subset(s) for s in stages), key=lambda lay: lay.bytes_per_token)


def plan_engine(
    options: EngineOptions,
    layout: KvLayout,
    entry: ModelEntry,
    budget: Budget,
    *,
    block_size: int | None,
    head_dim: int | None,
) -> tuple[EnginePlan, GpuFit | None]:
    """The engine's plan for ``layout`` and the GPU fit it implies (None without a budget)."""
    gpu = budget.gpu
    arch = gpu.architecture if gpu is not None else None
    if options.name == "sglang":
        return _sglang(options, layout, entry, budget, block_size=block_size, arch=arch)
    block = block_size if block_size is not None else DEFAULT_BLOCK
    ideal_layout = _stage_layout(layout, options.pp)
    fit = None
    if budget.known:
        fit = gpu_fit(
            ideal_layout,
            memory_bytes=budget.memory_bytes,
            util=budget.util,
            weights=budget.weights,
            reserve=budget.reserve,
            kv_memory=budget.kv_memory,
            block_size=block,
        )
    if options.name == "ideal":
        return IdealPlan(ideal_layout, block, fit), fit
    plan = plan_vllm(
        layout,
        available=None if fit is None else fit.available_bytes,
        block_size=block_size,
        architecture=arch,
        head_dim=head_dim,
        max_num_batched_tokens=options.max_num_batched_tokens,
        gpu_name=gpu.name if gpu is not None else None,
        memory_bytes=budget.memory_bytes,
        hybrid_manager=options.hybrid_manager,
        pp=options.pp,
        model_max_len=entry.context_window,
    )
    if fit is not None:
        blocks = plan.num_blocks
        assert blocks is not None
        fit = replace(
            fit,
            block_size=plan.block_size,
            page_bytes=plan.page_bytes * plan.stage_group_size,
            num_blocks=blocks,
            cache_tokens=blocks // len(plan.groups) * plan.block_size,
        )
    return plan, fit


def _sglang(
    options: EngineOptions,
    layout: KvLayout,
    entry: ModelEntry,
    budget: Budget,
    *,
    block_size: int | None,
    arch: str | None,
) -> tuple[EnginePlan, GpuFit | None]:
    page = block_size if block_size is not None else 1
    settings: dict[str, object] = {"mem_fraction_static": None, "mem_fraction_static_source": None}
    available = None
    mfs = None
    if budget.kv_memory is not None:
        available = budget.kv_memory
    elif budget.memory_bytes is not None:
        tp = layout.tp
        if options.mem_fraction_static is not None:
            mfs, source = options.mem_fraction_static, "mem_fraction_static given"
        else:
            mfs, source = default_mem_fraction_static(budget.memory_bytes, tp, options.pp)
        settings.update(mem_fraction_static=mfs, mem_fraction_static_source=source)
        available = int(budget.memory_bytes * mfs) - budget.weights
        if available <= 0:
            raise DoesNotFit(
                f"nothing is left for SGLang's KV pool: {budget.memory_bytes * mfs / 2**30:.1f} "
                f"GiB static ({mfs:g} of {budget.memory_bytes / 2**30:.1f} GiB) minus "
                f"{budget.weights / 2**30:.1f} GiB weights; use more GPUs (tp), a smaller "
                "weights dtype, or a larger GPU", param="tp",
            )
    plan = plan_sglang(
        layout,
        available=available,
        family=entry.family,
        architecture=arch,
        page_size=page,
        swa_full_tokens_ratio=options.swa_full_tokens_ratio,
        pp=options.pp,
        settings=settings,
        model_max_len=entry.context_window,
    )
    fit = None
    if available is not None:
        report = plan.report(entry.context_window or 1)
        tokens = report.cache_tokens or 0
        fit = GpuFit(
            memory_bytes=budget.memory_bytes if budget.kv_memory is None else None,
            util=mfs,
            weights_bytes=budget.weights if budget.kv_memory is None else 0,
            reserve_bytes=0,
            available_bytes=available,
            block_size=page,
            page_bytes=plan.cell_size * page,
            num_blocks=tokens // page,
            cache_tokens=tokens,
        )
    return plan, fit
