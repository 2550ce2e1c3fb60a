"""SGLang's token pools, reproduced (docs/kvmem.md): token-granular pages, full and sliding-window
pools, from sgl-project/sglang v0.5 ``python/sglang/srt/``: the pool
``model_runner_kv_cache_mixin.py``, the default fraction ``server_args.py``, the SWA pools
``swa_memory_pool.py``, the log ``memory_pool.py`` (GB = 2^30 B) and ``scheduler.py``."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, ClassVar

from tokcost.catalog.schema import LayerKind
from tokcost.errors import Note, UsageError, arg
from tokcost.memory.engines.base import Deployment, Engine, EngineGroup, EngineReport, Plan, Release
from tokcost.memory.fit import DoesNotFit, GiB, GpuFit
from tokcost.memory.kv import KvLayout, pp_stages
from tokcost.units import format_bytes

if TYPE_CHECKING:
    from tokcost.memory.request import KvRequest

__all__ = ["Sglang", "SglangPlan", "default_mem_fraction_static", "plan_sglang"]

MiB = 2**20
V0_5 = Release(0, 5)
DEFAULT_SWA_FULL_TOKENS_RATIO = 0.8
MAMBA_FULL_MEMORY_RATIO = 0.9
MAMBA_CACHE_PER_RUNNING_REQUEST = 3  # MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO
# Catalog families whose architectures is_hybrid_swa_model lists.
HYBRID_SWA_FAMILIES = frozenset({"gpt-oss", "llama-4", "gemma-4", "mimo-v2", "step-3.5"})


def default_mem_fraction_static(memory_bytes: int | None, tp: int, pp: int) -> tuple[float, str]:
    """SGLang's default ``mem_fraction_static`` for this GPU, and how it was reached."""
    if memory_bytes is None:
        return 0.88, "SGLang's default without a known GPU"
    mib = memory_bytes / MiB
    chunk, graph_bs = 16384, 512  # chunked_prefill_size, cuda_graph_max_bs (NVIDIA branches)
    for below, size, small, large in ((20, 2048, 8, 8), (35, 2048, 24, 80), (60, 4096, 32, 160),
                                      (160, 8192, 256, 512)):
        if mib < below * 1024:
            chunk, graph_bs = size, small if tp < 4 else large
            break
    reserved = 512 + max(chunk, 2048) * 1.5 + graph_bs * 2 + tp * pp / 8 * 1024
    if mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return round((mib - reserved) / mib, 3), (
        f"SGLang's default: ({mib:,.0f} MiB - {reserved:,.0f} MiB reserved for activations "
        f"and CUDA graphs) / {mib:,.0f} MiB")


@dataclass(frozen=True)
class _Stage:
    full: int  # full-attention (and MLA) layers, plus sliding ones kept in the full pool
    swa: int  # sliding layers in the SWA pool
    linear: int


@dataclass(frozen=True)
class SglangPlan(Plan):
    """SGLang's pools for one model (worked example: docs/kvmem.md)."""

    full_bytes: int  # F: bytes per token of one full-pool layer
    swa_bytes: int  # S: bytes per token of one SWA-pool layer
    stage: _Stage  # the stage with the largest cell (all stages take its capacity)
    window: int | None
    state_bytes: int  # one request's recurrent state over the stage's linear layers
    block_size: int  # SGLang's page_size
    swa_ratio: float
    hybrid_swa: bool
    mla: bool
    available: int | None  # per GPU (None: no budget)
    settings: dict[str, object] = field(default_factory=dict)
    model_max_len: int | None = None  # the model's own: a longer context_length is refused
    version: str = ""  # the profile's words for the release followed

    @property
    def cell_size(self) -> int:
        return self.full_bytes * self.stage.full + self.swa_bytes * self.stage.swa

    def _align(self, n: int) -> int:
        return n // self.block_size * self.block_size

    def _pools(self) -> tuple[int, int, int, int] | None:
        """(max_total_num_tokens, full pool tokens, swa pool tokens, mamba states)."""
        if self.available is None:
            return None
        rest, mamba = self.available, 0
        if self.stage.linear and self.state_bytes:
            mamba = int(rest * MAMBA_FULL_MEMORY_RATIO / (1 + MAMBA_FULL_MEMORY_RATIO)
                        // self.state_bytes)
            rest -= mamba * self.state_bytes
        tokens = self._align(max(rest, 0) // self.cell_size)
        if not self.hybrid_swa:
            return tokens, tokens, 0, mamba
        if self.stage.full == 0:
            return tokens, 0, tokens, mamba
        f_all, s_all = self.full_bytes * self.stage.full, self.swa_bytes * self.stage.swa
        full = self._align(int(tokens * (f_all + s_all) / (f_all + self.swa_ratio * s_all)))
        return full, full, self._align(int(full * self.swa_ratio)), mamba

    def _swa_tokens(self, context: int) -> int:
        return min(context, self.window) if self.window else context

    def request_bytes(self, context: int) -> int:
        return (context * self.full_bytes * self.stage.full + self.state_bytes
                + self._swa_tokens(context) * self.swa_bytes * self.stage.swa)

    def max_concurrency(self, context: int) -> float | None:
        pools = self._pools()
        if pools is None:
            return None
        _, full, swa, mamba = pools
        limits = [full / context] if self.stage.full else []
        limits += [swa / self._swa_tokens(context)] if self.hybrid_swa and self.stage.swa else []
        limits += [mamba // MAMBA_CACHE_PER_RUNNING_REQUEST] if self.stage.linear else []
        return min(limits) if limits else None

    def fits(self, context: int, batch: int) -> bool | None:
        pools = self._pools()
        if pools is None:
            return None
        if self.past_model_len(context):
            return False
        conc = self.max_concurrency(context)
        # A prompt past max_total_num_tokens - 1 is rejected (scheduler max_req_input_len).
        return pools[0] > 0 and context < pools[0] + 1 and conc is not None and conc >= batch

    def _kv_line(self, tokens: int, layers: int, per_token: int) -> str:
        size = (tokens + self.block_size) * per_token * layers / GiB
        if self.mla:
            return f"KV Cache is allocated. #tokens: {tokens}, KV size: {size:.2f} GB"
        return (f"KV Cache is allocated. #tokens: {tokens}, K size: {size / 2:.2f} GB, "
                f"V size: {size / 2:.2f} GB")

    def _lines(self, pools: tuple[int, int, int, int]) -> list[str]:
        total, full, swa, mamba = pools
        lines = [f"max_mamba_cache_size: {mamba}"] if mamba else []
        if self.hybrid_swa:
            lines.append(f"Use sliding window memory pool. full_layer_tokens={full}, "
                         f"swa_layer_tokens={swa}")
            if self.stage.full:
                lines.append(self._kv_line(full, self.stage.full, self.full_bytes))
            lines.append(self._kv_line(swa, self.stage.swa, self.swa_bytes))
        else:
            lines.append(self._kv_line(total, self.stage.full, self.full_bytes))
        return [*lines, f"max_total_num_tokens={total}"]

    def _details(self, report: EngineReport) -> tuple[str, ...]:
        s = report.settings
        if s["full_pool_tokens"] is None:
            return ()
        tokens = [f"full pool {s['full_pool_tokens']:,} tokens"]
        if s["swa_pool_tokens"] is not None:
            tokens.append(f"SWA pool {s['swa_pool_tokens']:,} tokens "
                          f"(ratio {s['swa_full_tokens_ratio']:g})")
        if s["max_mamba_cache_size"] is not None:
            tokens.append(f"{s['max_mamba_cache_size']:,} mamba states")
        pools = ", ".join(f"{g.kind} pool: {g.layers} layers" for g in report.groups)
        kept = ["SGLang keeps this model's sliding-window layers in the full pool (only "
                "Llama-4, gpt-oss, MiMo-V2, Step-3.5 and Gemma-4 get a sliding-window pool)"]
        return (f"SGLang pools: {pools}; cell {self.cell_size:,} B per token; "
                f"{', '.join(tokens)}", *(kept if s.get("sliding_layers_in_full_pool") else []),
                *report.logs(list(report.lines)))

    def report(self, max_model_len: int) -> EngineReport:
        pools = self._pools()
        kinds = (("mla" if self.mla else "full", self.stage.full, self.full_bytes, None),
                 ("swa", self.stage.swa, self.swa_bytes, self.window))
        groups = [EngineGroup(kind, n, n, self.block_size, self.block_size * per_token, window)
                  for kind, n, per_token, window in kinds if n]
        refusal = None
        if self.past_model_len(max_model_len):
            # SGLang's words (configs/model_config.py), raised before any memory is sized.
            refusal = (f"User-specified context_length ({max_model_len}) is greater than the "
                       f"derived context_length ({self.model_max_len}) (set "
                       "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 to override)")
        if pools is not None and pools[0] <= 0:
            refusal = refusal or ("Not enough memory for the KV cache pool (SGLang's advice: "
                                  "increase mem_fraction_static)")
        starts = pools is not None and pools[0] > 0
        mfs, source = (self.settings.get(f"mem_fraction_static{k}") for k in ("", "_source"))
        reason = f"{self.block_size} (SGLang's page_size" + (
            ", token-granular)" if self.block_size == 1 else ")")
        header = f"block {reason}"
        if isinstance(mfs, float) and isinstance(source, Note):
            header += f"; mem_fraction_static {mfs:g} ({source.template})"
        report = EngineReport(
            name=Sglang.name, version=self.version, block_size=self.block_size,
            block_size_reason=Note(reason), max_model_len=max_model_len,
            model_max_len=self.model_max_len, groups=tuple(groups),
            num_blocks=None if pools is None else pools[0] // self.block_size,
            cache_tokens=None if pools is None else pools[0],
            max_concurrency=self.max_concurrency(max_model_len) if starts else None,
            lines=tuple(self._lines(pools)) if pools is not None and starts else (),
            refusal=refusal, settings={**self.settings, "cell_size_bytes": self.cell_size,
                      "hybrid_swa_pools": self.hybrid_swa,
                      "swa_full_tokens_ratio": self.swa_ratio if self.hybrid_swa else None,
                      "full_pool_tokens": None if pools is None else pools[1],
                      "swa_pool_tokens": pools[2] if pools and self.hybrid_swa else None,
                      "max_mamba_cache_size": pools[3] if pools and self.stage.linear else None},
            title=Sglang.title, header=Note(header), advice=self.advice(max_model_len,
                               f"{arg('contexts')} or raise {arg('mem_fraction_static')}"))
        return replace(report, details=self._details(report))


@dataclass(frozen=True, kw_only=True)
class Sglang(Engine):
    """SGLang, with its static memory fraction and its sliding-window pool ratio."""

    name: ClassVar[str] = "sglang"
    title: ClassVar[str] = "SGLang"
    code: ClassVar[str] = "token pools (model_runner_kv_cache_mixin.py)"
    # One release modelled: the default fraction is PR #10975's heuristic (Sep 2025); older
    # releases had another, so sglang@0.4 is refused rather than answered with v0.5's.
    releases: ClassVar[tuple[Release, Release] | None] = (V0_5, V0_5)

    mem_fraction_static: float | None = None  # None: SGLang's default for the GPU
    swa_full_tokens_ratio: float | None = None  # None: 0.8
    release: Release = V0_5

    def __post_init__(self) -> None:
        object.__setattr__(self, "release", self.release_of(self.release))
        mfs, ratio = self.mem_fraction_static, self.swa_full_tokens_ratio
        if mfs is not None and not 0 < mfs < 1:
            raise UsageError(f"{arg('mem_fraction_static')} must be in (0, 1), got {mfs:g}",
                             param="mem_fraction_static")
        if ratio is not None and not 0 < ratio <= 1:
            raise UsageError(f"{arg('swa_full_tokens_ratio')} must be in (0, 1], got {ratio:g}",
                             param="swa_full_tokens_ratio")

    def gpu_knobs(self) -> dict[str, bool]:
        return {"mem_fraction_static": self.mem_fraction_static is not None}

    def check(self, request: KvRequest) -> None:
        super().check(request)
        # SGLang's mem_fraction_static already leaves room for activations and CUDA graphs.
        budget = request.budget
        for param, given in (("gpu_util", budget.gpu_util is not None),
                             ("reserve", budget.reserve is not None)):
            if given:
                raise UsageError(f"{arg(param)} is vLLM's budget; SGLang sizes its pool with "
                                 f"{arg('mem_fraction_static')}",
                                 param=param, related=("engine", "mem_fraction_static"))

    def plan(self, dep: Deployment) -> tuple[SglangPlan, GpuFit | None]:
        self.refuse_layout(dep, chunked=True)
        settings: dict[str, object] = {"mem_fraction_static": None,
                                       "mem_fraction_static_source": None}
        available, mfs = dep.kv_memory, None
        if available is None and dep.memory_bytes is not None:
            if self.mem_fraction_static is not None:
                mfs, source = self.mem_fraction_static, f"{arg('mem_fraction_static')} given"
            else:
                mfs, source = default_mem_fraction_static(dep.memory_bytes, dep.layout.tp, dep.pp)
            settings.update(mem_fraction_static=mfs, mem_fraction_static_source=Note(source))
            available = int(dep.memory_bytes * mfs) - dep.weights
            if available <= 0:
                raise DoesNotFit(
                    f"nothing is left for SGLang's KV pool: {dep.memory_bytes * mfs / GiB:.1f} "
                    f"GiB static ({mfs:g} of {dep.memory_bytes / GiB:.1f} GiB) minus "
                    f"{dep.weights / GiB:.1f} GiB weights; use more GPUs ({arg('tp')}), a "
                    "smaller weights dtype, or a larger GPU", param="tp")
        plan = self.pools(dep, available, settings)
        if available is None:
            return plan, None
        tokens = plan.report(dep.model_max_len or 1).cache_tokens or 0
        given = dep.kv_memory is not None
        return plan, GpuFit(None if given else dep.memory_bytes, mfs, 0 if given else dep.weights,
                            0, available, plan.block_size, plan.cell_size * plan.block_size,
                            tokens // plan.block_size, tokens)

    def pools(self, dep: Deployment, available: int | None,
              settings: dict[str, object] | None = None) -> SglangPlan:
        layout, page = dep.layout, 1 if dep.block_size is None else dep.block_size
        counts = layout.counts
        if layout.indexer_bytes:
            page = _nsa_page(dep)
        # Llama-4 (the one chunked family, its config read as model_type llama4_text) is
        # hybrid SWA with the chunk as its window (model_runner: sliding_window_size =
        # attention_chunk_size).
        hybrid_swa = bool(counts["sliding"]) and (
            dep.family in HYBRID_SWA_FAMILIES or layout.chunked) and not (
            dep.family == "gpt-oss" and dep.gpu is not None and dep.gpu.architecture == "blackwell")
        full_kind: LayerKind = "mla" if counts["mla"] else "full" if counts["full"] else "sliding"
        full_bytes = layout.token_bytes.get(full_kind, 0)
        swa_bytes = layout.token_bytes.get("sliding", 0)
        stages = []
        for stage in pp_stages(len(layout.layers), dep.pp):
            kinds = [layout.layers[i] for i in stage]
            swa = kinds.count("sliding") if hybrid_swa else 0
            full = sum(1 for k in kinds if k in ("full", "mla", "sliding")) - swa
            stages.append(_Stage(full, swa, kinds.count("linear")))
        best = max(stages, key=lambda s: full_bytes * s.full + swa_bytes * s.swa)
        if best.full + best.swa == 0:
            raise UsageError("this model caches no tokens (only fixed-state layers)")
        ratio = self.swa_full_tokens_ratio
        return SglangPlan(
            full_bytes=full_bytes or swa_bytes, swa_bytes=swa_bytes, stage=best,
            window=layout.window,
            # SGLang's mamba_ssm_dtype defaults to float32: twice the bf16 bytes counted.
            state_bytes=best.linear * layout.state_bytes * 2, block_size=page,
            swa_ratio=DEFAULT_SWA_FULL_TOKENS_RATIO if ratio is None else ratio,
            hybrid_swa=hybrid_swa, mla=bool(counts["mla"]), available=available,
            settings={**(settings or {}),
                      "sliding_layers_in_full_pool": bool(counts["sliding"]) and not hybrid_swa},
            model_max_len=dep.model_max_len, version=self.version)

    def budget_line(self, fit: GpuFit, dep: Deployment) -> str:
        if fit.memory_bytes is None or fit.util is None:
            return super().budget_line(fit, dep)
        return (f"GPU {dep.gpu.name if dep.gpu else 'custom'}: {format_bytes(fit.memory_bytes)} x "
                f"{fit.util:g} (mem_fraction_static) - weights {format_bytes(fit.weights_bytes)} = "
                f"{format_bytes(fit.available_bytes)} for the KV pool")

    def budget_notes(self, dep: Deployment) -> list[Note]:
        return dep.driver_note("comes out of the headroom SGLang keeps outside "
                               f"{arg('mem_fraction_static')} (activations, CUDA graphs)")

    def pool_notes(self, report: EngineReport, context: int) -> list[Note]:
        # SGLang starts; its scheduler aborts prompts past max_req_input_len
        pool = report.cache_tokens
        if report.refuses_to_start or not pool or context <= pool:
            return []
        return [Note(f"SGLang starts, but its pool of {pool:,} tokens cannot hold one "
                     f"{context:,}-token request (prompts are capped at max_total_num_tokens - 1 "
                     f"= {pool - 1:,}); give a smaller context or a larger "
                     f"{arg('mem_fraction_static')}")]


def _nsa_page(dep: Deployment) -> int:
    """DeepSeek-V3.2's NSA pool (NSATokenToKVPool, mem_cache/memory_pool.py, as in v0.5.4 and
    v0.5.6; the indexer counted in profile_max_num_token and in the log from PR #11309, v0.5.4):
    pages of 64 tokens (asserted there); per token and layer the MLA latent, stored fp8 as 512 B +
    4 scales x 4 B + the rope part in bf16 (656 B, tokcost's fp8_ds_mla), and the indexer's fp8
    key with its float32 scale (128 + 4 B). Later releases (v0.5.23's DSATokenToKVPool) take
    other page sizes: not modelled."""
    dtype = dep.layout.dtype
    if dtype.bits == 8 and dtype.name != "fp8_ds_mla":
        raise UsageError(f"SGLang stores {dep.model}'s fp8 latent with its scales and a bf16 rope "
                         f"part, 656 B per token and layer (NSATokenToKVPool): give "
                         f"{arg('kv_dtype', 'fp8_ds_mla')}", param="kv_dtype")
    if dep.block_size not in (None, 64):
        raise UsageError(f"SGLang's NSA pool takes 64-token pages only; drop {arg('block_size')}",
                         param="block_size")
    return 64


def plan_sglang(layout: KvLayout, *, available: int | None, family: str | None = None,
                swa_full_tokens_ratio: float | None = None) -> SglangPlan:
    """SGLang's pools for ``layout`` on one stage with token-granular pages."""
    engine = Sglang(swa_full_tokens_ratio=swa_full_tokens_ratio)
    return engine.pools(Deployment(layout=layout, family=family), available)

