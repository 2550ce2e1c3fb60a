"""One ``kvmem estimate``: a model, a set of context lengths, optionally a GPU.

The library result (``KvEstimate``) carries every number the CLI prints and a
``to_dict`` with the stable JSON keys documented in the README.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tokcost.catalog.schema import Gpu, ModelEntry
from tokcost.errors import UsageError
from tokcost.memory.blocks import check_block_size
from tokcost.memory.cache_policy import Eviction
from tokcost.memory.engines.base import EnginePlan, EngineReport
from tokcost.memory.engines.options import Budget, EngineOptions, engine_name, plan_engine
from tokcost.memory.fit import (
    DEFAULT_RESERVE,
    DEFAULT_UTIL,
    GpuFit,
)
from tokcost.memory.kv import (
    ArchitectureIncomplete,
    KvDtypeName,
    KvLayout,
    attention_shape,
    kv_layout,
)
from tokcost.memory.parallel import pp_stages
from tokcost.memory.policy_plan import PolicyPlan, policy_plan
from tokcost.memory.roofline import (
    DecodeStep,
    Prefill,
    Roofline,
    gpu_peaks,
    roofline_notes,
    weights_bytes,
)
from tokcost.units import weight_bits

# Upper bound of the "largest context" search when the model states no window.
_SEARCH_LIMIT = 10**8
# Past these a number is a typo, not a plan: the longest context windows are about 10^7
# tokens, and an engine runs hundreds of sequences at once, not millions.
MAX_CONTEXT = 10**9
MAX_BATCH = 10**6
MAX_TP = 1024  # tensor parallelism spans one NVLink domain: tens of GPUs, not thousands
# vLLM's kv_cache_dtype "auto" is the model's dtype; checkpoints quantized to fp8/int4 still
# compute (and cache) in bf16 unless a KV dtype is given.
_AUTO_KV = {"bf16": "bf16", "fp16": "fp16", "fp32": "fp32"}


@dataclass(frozen=True)
class ContextRow:
    """Cache sizes for one context length (bytes per GPU)."""

    context: int
    sequence_bytes: int  # exact, no block rounding
    paged_sequence_bytes: int  # whole blocks
    batch_bytes: int  # paged, x batch
    blocks_per_sequence: int
    by_kind: dict[str, int]
    beyond_context_window: bool
    max_concurrency: float | None = None
    fits: bool | None = None
    decode: DecodeStep | None = None
    engine_blocks: int | None = None  # vLLM: blocks one request holds, summed over groups
    prefill: Prefill | None = None  # time to first token for the row's prompt


@dataclass(frozen=True)
class KvEstimate:
    model: str
    kv_dtype: str
    block_size: int
    tp: int
    batch: int
    layout: KvLayout
    rows: tuple[ContextRow, ...]
    context_window: int | None
    gpu: str | None = None
    fit: GpuFit | None = None
    largest_context: int | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    engine: EngineReport | None = None
    pp: int = 1
    # The engine's accounting, for sweeps (the plot); not part of the JSON document.
    plan: EnginePlan | None = field(default=None, repr=False, compare=False)
    # --- cache policy (tokcost.memory.policy_plan): only with evict/residual
    cache_policy: dict[str, Any] | None = None

    @property
    def bytes_per_token(self) -> int:
        return self.layout.bytes_per_token

    def to_dict(self) -> dict[str, Any]:
        counts = self.layout.counts
        data: dict[str, Any] = {
            "model": self.model,
            "kv_dtype": self.kv_dtype,
            "block_size": self.block_size,
            "tp": self.tp,
            "pp": self.pp,
            "batch": self.batch,
            "per_gpu": self.tp > 1 or self.pp > 1,
            "layers": {kind: counts[kind] for kind in ("full", "sliding", "mla", "linear")},
            "sliding_window": self.layout.window if counts["sliding"] else None,
            "kv_heads_per_gpu": self.layout.kv_heads_per_gpu,
            "bytes_per_token": self.bytes_per_token,
            "linear_state_bytes_per_layer": self.layout.state_bytes if counts["linear"] else None,
            "context_window": self.context_window,
            "contexts": [_row_dict(r) for r in self.rows],
            "gpu": None,
            "engine": self.engine.to_dict() if self.engine is not None else None,
            "notes": list(self.notes),
        }
        if self.cache_policy is not None:  # only with evict/residual: older documents unchanged
            data["cache_policy"] = self.cache_policy
        if self.fit is not None:
            f = self.fit
            data["gpu"] = {
                "name": self.gpu,
                "memory_bytes": f.memory_bytes,
                "gpu_util": f.util,
                "weights_bytes": f.weights_bytes,
                "reserve_bytes": f.reserve_bytes,
                "available_kv_bytes": f.available_bytes,
                "page_bytes": f.page_bytes,
                "num_blocks": f.num_blocks,
                "cache_tokens": f.cache_tokens,
                "largest_context": self.largest_context,
            }
        return data


def _row_dict(row: ContextRow) -> dict[str, Any]:
    out: dict[str, Any] = {
        "context": row.context,
        "sequence_bytes": row.sequence_bytes,
        "paged_sequence_bytes": row.paged_sequence_bytes,
        "batch_bytes": row.batch_bytes,
        "blocks_per_sequence": row.blocks_per_sequence,
        "by_layer_kind": row.by_kind,
        "beyond_context_window": row.beyond_context_window,
        "max_concurrency": row.max_concurrency,
        "fits": row.fits,
        "engine_blocks_per_request": row.engine_blocks,
        "decode": None,
        "prefill": None,
    }
    # --- roofline (tokcost.memory.roofline): decode step and time to first token
    if row.decode is not None:
        d = row.decode
        out["decode"] = {
            "weights_bytes": d.weights_bytes,
            "kv_bytes": d.kv_bytes,
            "step_bytes": d.step_bytes,
            "bandwidth_bytes_per_s": d.bandwidth_bytes_per_s,
            "flops": d.flops,
            "peak_flops_per_s": d.peak_flops_per_s,
            "efficiency": d.efficiency,
            "experts_touched": _round(d.experts_touched, 2),
            "bandwidth_ms": round(d.bandwidth_seconds * 1000, 4),
            "compute_ms": _round(_ms(d.compute_seconds), 4),
            "bound": d.bound,
            "step_ms": round(d.step_seconds * 1000, 4),
            "tokens_per_s_per_sequence": round(d.tokens_per_s_per_sequence, 2),
            "tokens_per_s": round(d.tokens_per_s, 2),
        }
    if row.prefill is not None:
        f = row.prefill
        out["prefill"] = {
            "prompt_tokens": f.prompt_tokens,
            "weights_bytes": f.weights_bytes,
            "kv_bytes": f.kv_bytes,
            "flops": f.flops,
            "experts_touched": _round(f.experts_touched, 2),
            "bandwidth_ms": round(f.bandwidth_seconds * 1000, 4),
            "compute_ms": _round(_ms(f.compute_seconds), 4),
            "bound": f.bound,
            "ttft_ms": round(f.ttft_seconds * 1000, 4),
        }
    return out


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _window(entry: ModelEntry) -> str:
    return f"{entry.context_window:,} tokens" if entry.context_window else "no window stated"


def estimate_kv(
    entry: ModelEntry,
    *,
    contexts: Sequence[int] | None = None,
    batch: int = 1,
    kv_dtype: str | KvDtypeName = "bf16",
    block_size: int | None = None,
    tp: int = 1,
    gpu: Gpu | None = None,
    gpu_memory: int | None = None,
    gpu_util: float = DEFAULT_UTIL,
    kv_memory: int | None = None,
    reserve: int = DEFAULT_RESERVE,
    weights_dtype: str | None = None,
    group: int | None = None,
    bandwidth: int | None = None,
    engine: str | EngineOptions = "vllm",
    flops: float | None = None,
    efficiency: float = 1.0,
    input_tokens: int | None = None,
    evict: str | Eviction | None = None,
    residual: int | None = None,
) -> KvEstimate:
    """Everything ``kvmem estimate`` reports for one model (numbers per GPU).

    ``engine`` is ``vllm`` (default), ``sglang`` or ``ideal``, or ``EngineOptions`` with the
    engine's own settings; ``block_size`` None is the engine's default (vLLM 16 before the
    backend's forced sizes, SGLang 1).

    With a bandwidth (the GPU's, or ``bandwidth``) each context gets a decode step and,
    with a peak FLOP/s (the GPU's for the weights dtype, or ``flops``), the time to
    first token of an ``input_tokens`` prompt (default: the context itself); see
    ``tokcost.memory.roofline``.

    ``evict`` (``streaming:4+1024``...) and ``residual`` (int8/int4 as KIVI stores them) size
    each request by the cache policy's bytes (``tokcost.memory.policy_plan``).
    """
    arch = entry.architecture
    if arch is None:
        raise ArchitectureIncomplete(
            f"model '{entry.id}' has no architecture (layers, kv_heads, head_dim...); KV sizes "
            f"need them: add them from its config.json to your own catalog=FILE", param="catalog"
        )
    options = engine if isinstance(engine, EngineOptions) else EngineOptions(name=engine)
    options = dataclasses.replace(options, name=engine_name(options.name))
    options.check()
    if batch <= 0:
        raise UsageError(f"batch must be a positive integer, got {batch}", param="batch")
    if batch > MAX_BATCH:
        raise UsageError(
            f"batch={batch:,} is beyond {MAX_BATCH:,} sequences at once; engines run hundreds",
            param="batch",
        )
    if tp > MAX_TP:
        raise UsageError(
            f"tp={tp:,} is beyond {MAX_TP:,} GPUs in one tensor-parallel group; tensor "
            "parallelism spans one NVLink domain (8 to 72 GPUs)",
            param="tp",
        )
    pp_stages(arch.layers, options.pp)  # refuse a bad pipeline split before any work
    if weights_dtype is not None:
        weight_bits(weights_dtype)  # reject a typo even when no GPU is given
    if block_size is not None:
        if block_size <= 0:
            raise UsageError(f"block_size must be a positive integer, got {block_size}",
                             param="block_size")
        check_block_size(block_size)
    if str(kv_dtype).lower() == "auto":
        kv_dtype = _AUTO_KV.get(arch.weights_dtype, "bf16")
    ctxs = list(contexts) if contexts else [entry.context_window or 8192]
    for ctx in ctxs:
        if ctx <= 0:
            raise UsageError(f"contexts must be positive, got {ctx}", param="contexts")
        if ctx > MAX_CONTEXT:
            raise UsageError(
                f"contexts={ctx:,} is beyond {MAX_CONTEXT:,} tokens, far past any model's "
                f"context window ({entry.id}: {_window(entry)}); check the number and its "
                "suffix",
                param="contexts",
            )
    layout = kv_layout(arch, kv_dtype, tp=tp, group=group, model=entry.id)
    gpus = tp * options.pp
    notes: list[str] = []
    memory = gpu.memory_bytes if gpu is not None else gpu_memory
    peaks = gpu_peaks(gpu, weights_dtype=weights_dtype or arch.weights_dtype,
                      bandwidth=bandwidth, flops=flops, efficiency=efficiency)
    if input_tokens is not None and input_tokens <= 0:
        raise UsageError(f"input_tokens must be positive, got {input_tokens}",
                         param="input_tokens")
    if input_tokens is not None and peaks is not None and peaks.flops_per_s is None:
        raise UsageError(
            f"a time to first token needs the GPU's peak FLOP/s, and "
            f"{gpu.name if gpu else 'a custom GPU'} states none: give flops=FLOP/s",
            param="flops",
        )
    need_weights = kv_memory is None and memory is not None
    weights_total = weights_bytes(arch, dtype=weights_dtype, model=entry.id) if need_weights else 0
    budget = Budget(memory, gpu, -(-weights_total // gpus), gpu_util, reserve, kv_memory)
    head_dim = attention_shape(arch, entry.id)[1] if layout.token_bytes.keys() - {"mla"} else None
    if group is not None and head_dim is not None and group < head_dim and head_dim % group:
        # Values are grouped over a head's channels (a group past head_dim is one group of
        # them all); a cache stores whole groups, and the reference quantizer (tokcost kvmem
        # quality) refuses a partial one the same way.
        raise UsageError(f"kv_group_size={group} must divide {entry.id}'s head_dim {head_dim}",
                         param="kv_group_size")
    plan, fit = plan_engine(options, layout, entry, budget, block_size=block_size,
                            head_dim=head_dim)
    policy: PolicyPlan | None = None
    if evict is not None or residual is not None:
        stage = max(len(s) for s in pp_stages(arch.layers, options.pp))
        policy, policy_notes = policy_plan(
            plan, fit, layout, engine=options.name, layers=stage, head_dim=head_dim,
            evict=evict, residual=residual, prompt=input_tokens, model=entry.id)
        plan = policy
        notes.extend(policy_notes)
    block = plan.block_size
    if fit is not None and kv_memory is None and options.name != "sglang":
        notes.append(
            f"reserve of {reserve / 2**30:g} GiB per GPU for activations and runtime "
            f"overhead (vLLM profiles this; set reserve=SIZE, or pass vLLM's logged "
            f"'Available KV cache memory' as kv_memory=SIZE)"
        )
    if fit is not None and kv_memory is None and gpu is not None:
        notes.append(
            f"{gpu.name}'s memory is the total nvidia-smi/rocm-smi reports; the framework "
            "sees a little less (the driver and the CUDA/HIP context keep a few hundred "
            "MiB), which "
            + ("the reserve absorbs" if options.name != "sglang" else
               "comes out of the headroom SGLang keeps outside mem_fraction_static "
               "(activations, CUDA graphs)")
        )
    # A decode step passes every pipeline stage in turn: per step the GPUs of one
    # tensor-parallel group read all layers' weights between them (so weights split tp
    # ways, not tp x pp).
    roof = (
        Roofline(arch, layout, peaks, tp=tp, weights_dtype=weights_dtype, model=entry.id)
        if peaks is not None
        else None
    )
    if peaks is not None:
        notes.extend(roofline_notes(arch, peaks, batch=batch, gpu=gpu.name if gpu else None,
                                    weights_dtype=weights_dtype, model=entry.id))
    if tp > 1:
        notes.append(f"numbers are per GPU: {tp}-way tensor parallelism splits kv heads")
        if "mla" in layout.counts:
            notes.append("MLA's latent cache is replicated on every tensor-parallel GPU")
    if options.pp > 1:
        sizes = ", ".join(str(len(s)) for s in pp_stages(arch.layers, options.pp))
        notes.append(f"pipeline parallelism: {options.pp} stages of {sizes} layers (vLLM's "
                     "split); the fullest stage sets every stage's pool")
    if "linear" in layout.counts:
        notes.append("linear-attention layers hold a fixed bf16 state per sequence")
    if "sliding" in layout.counts or "linear" in layout.counts:
        notes.append(
            f"the blocks column counts the context's {block}-token blocks; windowed and "
            "linear layers hold fewer, which per sequence, concurrency and fits already count"
        )
    if options.name != "ideal" and layout.dtype.group is not None:
        notes.append(f"{layout.dtype.name} caches use tokcost's per-group scales; "
                     f"{options.name} has no {layout.dtype.name} KV cache of that layout")
    window = entry.context_window
    if window and any(ctx > window for ctx in ctxs):
        notes.append(
            f"contexts marked >window exceed {entry.id}'s {window:,}-token context window: "
            "sizes for a model that cannot serve them"
        )
    rows: list[ContextRow] = []
    for ctx in ctxs:
        paged = plan.request_bytes(ctx)
        step = roof.decode(ctx, batch) if roof is not None else None
        first = roof.prefill(input_tokens or ctx) if roof is not None else None
        blocks_of = getattr(plan, "blocks_per_request", None)
        rows.append(
            ContextRow(
                context=ctx,
                sequence_bytes=paged if policy else layout.sequence_bytes(ctx),
                paged_sequence_bytes=paged,
                batch_bytes=batch * paged,
                blocks_per_sequence=-(-ctx // block),
                by_kind={"full": paged} if policy else layout.by_kind(ctx, block),
                beyond_context_window=bool(entry.context_window and ctx > entry.context_window),
                max_concurrency=plan.max_concurrency(ctx),
                fits=plan.fits(ctx, batch),
                decode=step,
                engine_blocks=blocks_of(ctx) if blocks_of is not None else None,
                prefill=first,
            )
        )
    largest = plan.largest_context(batch, entry.context_window or _SEARCH_LIMIT)
    report = plan.report(max(ctxs))
    pool = report.cache_tokens
    if options.name == "sglang" and not report.refuses_to_start and pool and max(ctxs) > pool:
        # SGLang starts whatever the pool holds; its scheduler then takes prompts of at most
        # max_total_num_tokens - 1 tokens (max_req_input_len) and aborts longer ones.
        notes.append(
            f"SGLang starts, but its pool of {pool:,} tokens cannot hold one {max(ctxs):,}-token "
            f"request (prompts are capped at max_total_num_tokens - 1 = {pool - 1:,}); give a "
            "smaller context or a larger mem_fraction_static"
        )
    return KvEstimate(
        model=entry.id,
        kv_dtype=layout.dtype.name,
        block_size=block,
        tp=tp,
        batch=batch,
        layout=layout,
        rows=tuple(rows),
        context_window=entry.context_window,
        gpu=gpu.name if gpu is not None else ("custom" if memory is not None else None),
        fit=fit,
        largest_context=largest,
        notes=tuple(notes),
        engine=report,
        pp=options.pp,
        plan=plan,
        cache_policy=policy.to_dict() if policy is not None else None,
    )
