"""``Vllm``, the engine profile: its options, the deployment checks, and the plan for each
stage."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar

from tokcost.errors import Note, UsageError, arg
from tokcost.memory.engines.base import (
    Deployment,
    Engine,
    EngineReport,
    Release,
)
from tokcost.memory.engines.vllm.blocks import align_skipped, ds_mla, resolve_block_size
from tokcost.memory.engines.vllm.plan import VllmPlan, v1_model_runner
from tokcost.memory.engines.vllm.releases import (
    ALIGN_FAMILIES,
    GDN_CHECKPOINT_ALIGNMENT,
    GRANULE,
    MARGIN_FLOOR,
    MARGIN_FRACTION,
    MAX_SPECULATIVE,
    NAME,
    OLDEST,
    TITLE,
    UTIL_BEFORE_V0_21,
    UTIL_EXTENSIBLE,
    UTIL_FROM_V0_21,
    V0_13,
    V0_14,
    V0_15,
    V0_18,
    V0_20,
    V0_21,
    V0_25,
    V0_28,
    V0_32,
    V0_33,
    V0_34,
    V_OWN_SIZE_FROM,
    MambaMode,
    check_dtype,
    check_served,
    default_max_num_batched_tokens,
)
from tokcost.memory.engines.vllm.specs import (
    Group,
    groups_of,
    kv_cache_specs,
    own_specs,
    skip_items,
    skipped_layers,
    uniform_type,
)
from tokcost.memory.fit import DEFAULT_BLOCK, GiB, GpuFit
from tokcost.memory.kv import KvLayout, pp_stages
from tokcost.units import format_bytes, parse_count

if TYPE_CHECKING:
    from collections.abc import Callable

    from tokcost.memory.request import KvRequest


@dataclass(frozen=True, kw_only=True)
class Vllm(Engine):
    """vLLM, with its scheduler's tokens per step and its hybrid KV cache manager."""

    name: ClassVar[str] = NAME
    title: ClassVar[str] = TITLE
    code: ClassVar[str] = "v1 KV cache manager"
    releases: ClassVar[tuple[Release, Release] | None] = (OLDEST, V0_34)
    kv_offload: ClassVar[bool] = True  # --kv-offloading-size (tokcost.memory.offload)

    max_num_batched_tokens: int | None = None  # None: vllm serve's default for the GPU
    hybrid_manager: bool = True  # False: --disable-hybrid-kv-cache-manager
    # None: vllm serve's default, for linear hybrids off before v0.28 and on from it (see V0_28)
    enable_prefix_caching: bool | None = None
    num_speculative_tokens: int = 0  # speculative decoding's tokens per step (MTP, EAGLE...)
    draft_layers: int | None = None  # the drafter's attention layers; None: the model's MTP head
    # VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE (V0_14 above); None: the release's default
    chunked_hybrid: bool | None = None
    release: Release = V0_34
    # Layers cached in the model's dtype: indices and/or "sliding_window" ("0,31" or a sequence)
    kv_cache_dtype_skip_layers: str | tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "release", self.release_of(self.release))
        object.__setattr__(self, "kv_cache_dtype_skip_layers", skip_items(
            self.kv_cache_dtype_skip_layers, self.release))
        mnbt = self.max_num_batched_tokens
        if mnbt is not None:
            mnbt = parse_count(mnbt, param="max_num_batched_tokens")
            if mnbt <= 0:
                raise UsageError(f"{arg('max_num_batched_tokens')} must be a positive integer, "
                                 f"got {mnbt}", param="max_num_batched_tokens")
            object.__setattr__(self, "max_num_batched_tokens", mnbt)
        for name in ("num_speculative_tokens", "draft_layers"):
            value = getattr(self, name)
            if value is not None:
                value = parse_count(value, param=name)
                if value < 0 or value > MAX_SPECULATIVE:
                    raise UsageError(f"{arg(name)} must be 0 to {MAX_SPECULATIVE}, got {value}",
                                     param=name)
                object.__setattr__(self, name, value)
        if self.draft_layers and not self.num_speculative_tokens:
            raise UsageError(f"{arg('draft_layers')} are a speculative drafter's layers; give "
                             f"{arg('num_speculative_tokens', 'N')} with them",
                             param="draft_layers", related=("num_speculative_tokens",))

    def cache_layout(self, layout: KvLayout, model_dtype: Callable[[], KvLayout]) -> KvLayout:
        padded = self.release < V_OWN_SIZE_FROM  # V stored at K's head size (see above)
        if padded:
            layout = layout.padding_v()
        items = self.kv_cache_dtype_skip_layers  # a tuple once __post_init__ ran
        if items:
            own = model_dtype()
            layout = layout.skipping(skipped_layers(tuple(items), layout, self.release),
                                     own.padding_v() if padded else own)
        tokens = self.num_speculative_tokens
        if not tokens:
            return layout
        if layout.counts["linear"] and (layout.mamba_chunk is not None
                                        or not layout.conv_row_bytes):
            raise UsageError(f"{arg('num_speculative_tokens')} on a linear hybrid is modelled for "
                             "Gated DeltaNet ones (Qwen3-Next, Qwen3.5/3.6: vLLM grows their "
                             "conv state by a row per token); this model's linear layers are "
                             "Mamba or lightning attention, whose states tokcost does not grow; "
                             f"leave out {arg('num_speculative_tokens')}",
                             param="num_speculative_tokens")
        draft = layout.mtp_layers if self.draft_layers is None else self.draft_layers
        if draft and not (layout.counts["full"] or layout.counts["mla"]):
            raise UsageError(f"{arg('draft_layers')}: the drafter's layers are modelled as the "
                             "model's full or MLA attention, and this model has neither; give "
                             f"{arg('draft_layers', 0)}", param="draft_layers")
        return layout.speculating(tokens, draft)

    @property
    def default_util(self) -> float:
        return UTIL_FROM_V0_21 if self.release >= V0_21 else UTIL_BEFORE_V0_21

    def extensible(self, dep: Deployment) -> bool:
        """v0.34's extensible KV cache: on unless --kv-cache-memory is given (config/cache.py)."""
        return self.release >= V0_34 and dep.kv_memory is None

    def check(self, request: KvRequest) -> None:
        return None  # vLLM reads decode context parallel

    def plan(self, dep: Deployment) -> tuple[VllmPlan, GpuFit | None]:
        ext = self.extensible(dep)
        util = (UTIL_EXTENSIBLE if ext else self.default_util) if dep.util is None else dep.util
        dep = replace(dep, util=util)
        # ROCm keeps a 3 GiB floor (KV_CACHE_MARGIN_FLOOR_BYTES: kernel scratch outside torch)
        rocm = dep.gpu is not None and (dep.gpu.architecture or "").startswith("cdna")
        floor = 3 * MARGIN_FLOOR if rocm else MARGIN_FLOOR
        margin = max(floor, int(dep.reserve * MARGIN_FRACTION)) if ext else None
        fit = dep.fit(DEFAULT_BLOCK if dep.block_size is None else dep.block_size, margin=margin)
        plan = self.pool(dep, None if fit is None else fit.available_bytes)
        if fit is not None and ext and dep.memory_bytes is not None:
            # determine_available_memory's profiling figure: requested - weights - reserve
            requested = math.ceil(dep.memory_bytes * util)
            plan = replace(plan, estimate=requested - dep.weights - dep.reserve,
                           requested=requested, granule=GRANULE, util=util)
        if fit is None or plan.num_blocks is None:
            return plan, fit
        return plan, replace(fit, block_size=plan.block_size, page_bytes=plan.block_bytes,
                             num_blocks=plan.num_blocks, cache_tokens=plan.num_blocks
                             // len(plan.groups) * plan.block_size * plan.dcp)

    def _nemotron_ssm(self, dep: Deployment) -> Deployment:
        """NemotronH's SSM state in the config's mamba_ssm_cache_dtype, else float16, from v0.13
        (NemotronHForCausalLMConfig, model_executor/models/config.py, PR #29978), float32 by
        default from v0.20 (PR #39032); before v0.13 in the model dtype, as the layout has it."""
        layout = dep.layout
        family = (dep.family or "").replace("-", "_").lower()
        if family != "nemotron_h" or not layout.ssm_elements or self.release < V0_13:
            return dep
        dtype = layout.ssm_cache_dtype or ("fp32" if self.release >= V0_20 else "fp16")
        itemsize = layout.state_bytes // (layout.conv_elements + layout.ssm_elements)
        state = layout.state_bytes + layout.ssm_elements * ((4 if dtype == "fp32" else 2)
                                                            - itemsize)
        return replace(dep, layout=replace(layout, state_bytes=state))

    def settle(self, dep: Deployment) -> Deployment:
        # a model class the release's registry does not list is refused before anything else
        check_served(dep.model, dep.model_class, self.release)
        return ds_mla(dep, self.release)

    def pool(self, dep: Deployment, available: int | None) -> VllmPlan:
        dep = self._nemotron_ssm(self.settle(dep))
        layout = dep.layout
        if all(k == "linear" for k in layout.layers):
            raise UsageError("this model caches no tokens (only fixed-state layers)")
        check_dcp(dep)
        if layout.draft_layers and dep.pp > 1:
            raise UsageError(f"{arg('pp')} with a speculative drafter's layers is not modelled "
                             "(tokcost does not place them on a pipeline stage); give "
                             f"{arg('draft_layers', 0)} or {arg('pp', 1)}", param="pp",
                             related=("draft_layers",))
        check_dtype(layout.dtype.name, self.release)
        mode = self._mamba_mode(dep)
        checkpoint = self._gdn_checkpoint(dep, mode)
        block, reason = resolve_block_size(layout, dep, self.release, mamba_mode=mode,
                                           checkpoint=checkpoint)
        if self.max_num_batched_tokens is None:
            mnbt, source = default_max_num_batched_tokens(
                dep.gpu.name if dep.gpu else None, dep.memory_bytes, self.release)
        else:
            mnbt, source = self.max_num_batched_tokens, f"{arg('max_num_batched_tokens')} given"
        shared = None
        if self.release >= V0_25 and layout.skipped:
            block, shared, grew = align_skipped(layout, dep, block, self.release)
            if grew:
                reason = Note(grew)
        hybrid, off_reason = self._hybrid(layout)
        specs = kv_cache_specs(layout, block, hybrid, dep, self.release, shared)
        linear = bool(layout.counts["linear"])
        mixed = uniform_type(specs)
        return VllmPlan(groups=(Group(min(specs, key=lambda s: s.page_bytes),
                                      tuple(range(len(specs)))),) if mixed else groups_of(specs),
                        stages=tuple(frozenset(s) for s in pp_stages(len(layout.layers), dep.pp)),
                        page_bytes=specs[0].page_bytes, block_size=block, block_size_reason=reason,
                        max_num_batched_tokens=mnbt, batched_tokens_source=Note(source),
                        hybrid_manager=hybrid, available=available,
                        model_max_len=dep.model_max_len, release=self.release,
                        version=self.version, dcp=dep.dcp,
                        layer_pages=tuple(s.page_bytes for s in specs) if mixed else (),
                        mamba_mode=mode, draft_layers=layout.draft_layers,
                        spec_blocks=self.num_speculative_tokens
                        if linear and self.release >= V0_15 else 0,
                        checkpoint_blocks=int(mode == "align" and self.release >= V0_32 and (
                            layout.mamba2 or checkpoint > 1)),
                        hybrid_off_reason=off_reason,
                        v1_runner=v1_model_runner(self.release, dep.moe, linear),
                        check_specs=() if self.release >= V0_14 else tuple(
                            own_specs(layout, block)))

    def _hybrid(self, layout: KvLayout) -> tuple[bool, str]:
        """Whether the hybrid manager is on, and why vLLM turned it off if it did itself."""
        env = self.chunked_hybrid if self.chunked_hybrid is not None else self.release >= V0_14
        if self.hybrid_manager and layout.chunked and layout.counts["sliding"] and not env:
            return False, ("vLLM v0.11 to v0.13 turn it off for chunked local attention unless "
                           "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1, the default "
                           "from v0.14, PR #29627")
        return self.hybrid_manager, ""

    def _mamba_mode(self, dep: Deployment) -> MambaMode:
        """The mamba_cache_mode prefix caching puts a linear hybrid in (see V0_28)."""
        layout = dep.layout
        given = self.enable_prefix_caching
        if not layout.counts["linear"] or not (self.release >= V0_28 if given is None else given):
            return "none"
        if self.release < V0_15:
            raise UsageError(f"{arg('enable_prefix_caching')} on a linear hybrid is modelled from "
                             f"vLLM v0.15 (PR #30877); use {arg('engine', 'vllm@0.15')} or later",
                             param="enable_prefix_caching", related=("engine",))
        if layout.mamba_chunk is not None and self.release < V0_28:
            return "all"
        return "align"

    def _gdn_checkpoint(self, dep: Deployment, mode: MambaMode) -> int:
        """FlashInfer GDN's prefill checkpoint grid in "align" mode (v0.33 on, Hopper; see
        V0_28), 1 where there is none."""
        layout = dep.layout
        arch = dep.gpu.architecture if dep.gpu is not None else None
        gdn = layout.counts["linear"] and layout.mamba_chunk is None and (
            layout.conv_row_bytes > 0 or (dep.family or "").replace("-", "_").lower()
            .startswith(ALIGN_FAMILIES))
        hopper = (arch or "hopper") == "hopper"
        return GDN_CHECKPOINT_ALIGNMENT if (
            mode == "align" and self.release >= V0_33 and gdn and hopper) else 1

    def idle_notes(self, dep: Deployment) -> list[Note]:
        flag = arg("chunked_hybrid", self.chunked_hybrid)
        if self.chunked_hybrid is None:
            return []
        # vllm/config/vllm.py (v0.34, __post_init__'s hybrid KV cache manager rules) reads the
        # variable only when model_config.attention_chunk_size is set, to turn the manager off.
        if not dep.layout.chunked:
            return [Note(f"{flag} has no effect: {dep.model} has no chunked local attention "
                         "(vLLM reads VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE only "
                         "for a model with attention_chunk_size)")]
        if not self.hybrid_manager:
            return [Note(f"{flag} has no effect with {arg('hybrid_manager', False)}: the "
                         "variable only lets the hybrid KV cache manager stay on")]
        return []

    def pool_notes(self, report: EngineReport, context: int) -> list[Note]:
        if not self.num_speculative_tokens or self.draft_layers is not None \
                or report.settings.get("draft_layers"):
            return []
        return [Note("speculative decoding with no drafter layers in the pool: the model has no "
                     "MTP head (catalog mtp_layers); an EAGLE head's or a draft model's attention "
                     f"layers join vLLM's pool too: give {arg('draft_layers', 'N')}")]

    def budget_line(self, fit: GpuFit, dep: Deployment) -> str:
        if fit.margin_bytes is None or fit.memory_bytes is None or fit.util is None:
            return super().budget_line(fit, dep)
        mem = format_bytes(fit.memory_bytes)
        return (f"GPU {dep.gpu.name if dep.gpu else 'custom'}: min({mem} x {fit.util:g}, {mem} - "
                f"margin {format_bytes(fit.margin_bytes)}) - weights "
                f"{format_bytes(fit.weights_bytes)} - reserve {format_bytes(fit.reserve_bytes)} "
                f"= {format_bytes(fit.available_bytes)} for the KV cache")

    def budget_notes(self, dep: Deployment) -> list[Note]:
        padded = [Note(f"vLLM {self.release} caches V heads padded to K's head size (MiMo-V2: V "
                       "128 zero-padded to 192, mimo_v2_flash.py); from v0.20 (PR #40045) V is "
                       f"cached at its own size: {arg('engine', 'vllm@0.20')}")
                  ] if dep.layout.v_padded else []
        given = dep.kv_dtype_given
        ds_mla = [Note(
            f"{arg('kv_dtype', given)}: vLLM {self.release} caches {dep.model}'s MLA layers as "
            f"fp8_ds_mla (656 B a token a layer, DeepSeek's fp8 layout, beside the indexer's "
            f"{dep.layout.indexer_bytes} B): "
            + ("'Using custom fp8 kv-cache format for DeepSeekV3.2' (DeepseekV32ForCausalLM"
               ".verify_and_update_config, PR #25896)" if self.release < V0_18 else
               "'Using DeepSeek's fp8_ds_mla KV cache format', FlashMLASparse's (mla_attention.py);"
               " FlashInfer MLA sparse, on Blackwell, keeps plain fp8"))
        ] if given is not None and dep.layout.dtype.name == "fp8_ds_mla" else []
        return padded + ds_mla + self._budget_notes(dep)

    def _budget_notes(self, dep: Deployment) -> list[Note]:
        if dep.memory_bytes is None or dep.kv_memory is not None:
            return []
        if self.extensible(dep):
            return self._extensible_notes(dep)
        util = "" if dep.util is not None else (
            "gpu_memory_utilization 0.92: vLLM's default from v0.21 (PR #38284; 0.9 before, "
            f"{arg('engine', 'vllm@0.20')}); " if self.release >= V0_21 else
            "gpu_memory_utilization 0.9: vLLM's default before v0.21 (0.92 from v0.21); ")
        graphs = ("its CUDA-graph estimate (from v0.21, PR #30515; "
                  "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 leaves it out)"
                  if self.release >= V0_21 else "not the CUDA graphs (before v0.21 they are "
                  "captured after the cache is sized, out of the memory outside "
                  "gpu_memory_utilization)")
        return [Note(f"{util}reserve of {dep.reserve / GiB:g} GiB per GPU for what vLLM "
                     f"profiles before sizing the cache: activations, non-torch memory and "
                     f"{graphs}; set {arg('reserve', 'SIZE')}, or pass vLLM's logged 'Available "
                     f"KV cache memory' as {arg('kv_memory', 'SIZE')}"),
                *dep.driver_note(f"the {arg('reserve')} absorbs")]

    def _extensible_notes(self, dep: Deployment) -> list[Note]:
        util = "" if dep.util is not None else (
            "gpu_memory_utilization 1.0: vLLM's default from v0.34, whose extensible KV cache "
            "is sized from the memory free after warmup (0.92 with "
            f"{arg('kv_memory')}, and before: {arg('engine', 'vllm@0.33')}); ")
        return [Note(f"{util}reserve of {dep.reserve / GiB:g} GiB per GPU for the transient "
                     "peak vLLM keeps free after warmup (activations; the CUDA graphs it "
                     "captured are measured as used); vLLM keeps a margin of max(1 GiB, 0.75 x "
                     "that peak; 3 GiB on ROCm) of the device free "
                     "(vllm/v1/worker/extensible_kv_cache.py) and "
                     f"commits whole 2 MiB granules per layer; set {arg('reserve', 'SIZE')}, or "
                     f"give vLLM's kv_cache_memory_bytes as {arg('kv_memory', 'SIZE')} (no "
                     "extensible cache then)"),
                *dep.driver_note(f"the margin and the {arg('reserve')} absorb")]



def check_dcp(dep: Deployment) -> None:
    """vLLM's decode-context-parallel checks (vllm/config/model.py, PRs #23734 and #25438):
    MLA's one latent is on every TP GPU; GQA needs as many copies of each kv head."""
    dcp, tp, kinds = dep.dcp, dep.layout.tp, dep.layout.counts
    if dcp == 1:
        return
    if kinds["sliding"] or kinds["linear"]:
        raise UsageError(f"{arg('dcp')} is modelled for full-attention and MLA layers; "
                         f"{dep.model} has sliding-window or linear-attention layers",
                         param="dcp")
    if kinds["full"] and dep.kv_heads is not None and dcp > tp // dep.kv_heads:
        raise UsageError(f"vLLM refuses {arg('dcp', dcp)}: decode context parallel size must be "
                         f"at most tp // kv heads = {tp} // {dep.kv_heads} = "
                         f"{tp // dep.kv_heads} (it splits the copies of each kv head); give "
                         f"{arg('tp', dcp * dep.kv_heads)} or more, or "
                         + (f"leave out {arg('dcp')}" if tp // dep.kv_heads < 2 else
                            f"{arg('dcp', tp // dep.kv_heads)} or less"),
                         param="dcp", related=("tp",))


def plan_vllm(layout: KvLayout, *, available: int | None, max_num_batched_tokens: int | None = None,
              hybrid_manager: bool = True, dcp: int = 1, release: Release = V0_21) -> VllmPlan:
    """vLLM ``release``'s config for ``layout`` and ``available`` bytes (one stage, default
    block, no GPU)."""
    engine = Vllm(max_num_batched_tokens=max_num_batched_tokens, hybrid_manager=hybrid_manager,
                  release=release)
    return engine.pool(Deployment(layout=layout, dcp=dcp), available)
