"""SGLang's token pools, reproduced (docs/kvmem.md): token-granular pages, full and sliding-window
pools, from sgl-project/sglang v0.4.6 to v0.5.23 ``python/sglang/srt/`` (what changed by release:
docs/kvmem-engines.md): the pool ``model_executor/model_runner.py`` (later
``model_runner_kv_cache_mixin.py``, ``pool_configurator.py``), the default fraction
``server_args.py`` (``arg_groups/memory_hook.py`` by v0.5.19), the SWA pools
``swa_memory_pool.py``, the log ``memory_pool.py`` (GB = 2^30 B) and ``scheduler.py``."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, ClassVar

from tokcost.catalog.schema import LayerKind
from tokcost.errors import Note, UsageError, arg
from tokcost.memory.engines.base import Deployment, Engine, EngineGroup, EngineReport, Plan, Release
from tokcost.memory.fit import DoesNotFit, GiB, GpuFit
from tokcost.memory.kv import KvLayout
from tokcost.units import format_bytes, parse_count

if TYPE_CHECKING:
    from tokcost.memory.request import KvRequest

__all__ = ["Sglang", "SglangPlan", "default_mem_fraction_static", "mamba_state_bytes",
           "plan_sglang", "vlm_fraction"]

MiB = 2**20
# The releases whose rules tokcost has read (python/sglang/srt/ of each PyPI release): the
# oldest, the newest patch of each minor (what sglang@0.4 and sglang@0.5 stand for), and each
# release that changed a rule below (PRs named where found; else the file and the release).
V0_4_6, V0_4_7, V0_4_8, V0_4_9, V0_4_10 = (Release(0, 4, p) for p in (6, 7, 8, 9, 10))
V0_5_1, V0_5_3, V0_5_4, V0_5_5, V0_5_7, V0_5_8 = (Release(0, 5, p) for p in (1, 3, 4, 5, 7, 8))
V0_5_9, V0_5_10, V0_5_11, V0_5_12 = (Release(0, 5, p) for p in (9, 10, 11, 12))
V0_5_13, V0_5_17, V0_5_20, V0_5_23 = (Release(0, 5, p) for p in (13, 17, 20, 23))
V0_5_14, V0_5_15, V0_5_19, V0_5_22 = (Release(0, 5, p) for p in (14, 15, 19, 22))
# --enable-dp-attention with --dp 1: v0.4.8 to v0.5.1 assert dp_size > 1; v0.5.2 on reset it
# ("if self.dp_size == 1: self.enable_dp_attention = False", _handle_data_parallelism; a
# post-process pass from v0.5.15) only after __post_init__ has sized the default
# mem_fraction_static (v0.5.2: + 4 GiB; v0.5.3 to v0.5.18 server_args.py, v0.5.19 to v0.5.21
# arg_groups/memory_hook.py: + cuda graph max_bs x 1 x 3 ...) and, v0.5.10 to v0.5.18, the prefill
# CUDA graphs (_handle_piecewise_cuda_graph, then _disable_tc_piecewise_cudagraph_if_incompatible)
# with DP attention on. v0.5.22's reserve asks attn_dp_size > 1 (attn_dp_enabled_of).
SGLANG_DP1_ATTENTION = (Release(0, 5, 2), V0_5_22)
DEFAULT_SWA_FULL_TOKENS_RATIO = 0.8
MAMBA_FULL_MEMORY_RATIO = 0.9  # server_args.py mamba_full_memory_ratio, from v0.5.4
MAMBA_CACHE_PER_RUNNING_REQUEST = 3  # MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO
# Catalog families whose architectures configs/model_config.py is_hybrid_swa_model lists (v0.5.8
# on: Llama-4, gpt-oss, MiMo-V2; Step-3.5 from v0.5.9, Gemma-4 from v0.5.11), by release.
HYBRID_SWA_FROM = {"llama-4": V0_5_8, "gpt-oss": V0_5_8, "mimo-v2": V0_5_8,
                   "step-3.5": V0_5_9, "gemma-4": V0_5_11}
# Before is_hybrid_swa_model (v0.4.10 to v0.5.7) model_runner.py gave the SWA pool to every model
# whose class reports a sliding window (get_attention_sliding_window_size) except Llama-4; v0.4.10
# kept Gemma-2/3 there, v0.5.1 to v0.5.7 turned it off for them and for gpt-oss in server_args.py
# (disable_hybrid_swa_memory), and v0.5.7's is_hybrid_model turned it on for MiMo-V2-Flash.
SWA_BY_WINDOW = {"gemma-2": (V0_4_10, V0_5_1), "gemma-3": (V0_4_10, V0_5_1),
                 "mimo-v2": (V0_5_7, V0_5_8)}
# The first release with a model file for the family (srt/models/), of the releases read.
SERVED_FROM = {"gpt-oss": V0_5_1, "qwen3-next": Release(0, 5, 2), "mimo-v2": V0_5_7,
               "step-3.5": V0_5_9, "gemma-4": V0_5_11}
# Model classes without prefill (piecewise) CUDA graphs (model_config.py
# piecewise_cuda_graph_disabled_model_archs, v0.5.10 and v0.5.23), by catalog family.
NO_PREFILL_GRAPH_FAMILIES = frozenset({"qwen3-next"})
# Multimodal models (configs/model_config.py: is_multimodal = enable_multimodal and the class
# in multimodal_model_archs), by the release that lists the catalog's classes: Gemma-3n from
# v0.4.9, Qwen3.5/3.6-MoE from v0.5.9, Gemma-4 from v0.5.11. Gemma-3 and Llama-4 are listed
# but in mm_disabled_models (v0.4.6 to v0.5.23): multimodal off unless --enable-multimodal.
MULTIMODAL_FROM = {"Gemma3nForConditionalGeneration": V0_4_9,
                   "Qwen3_5MoeForConditionalGeneration": V0_5_9,
                   "Gemma4ForConditionalGeneration": V0_5_11}
# Multimodal models lose the prefill CUDA graphs, and with them the default fraction's reserve
# for them (the graph config is resolved before the fraction): v0.5.10 to v0.5.13 every one
# (server_args.py _handle_piecewise_cuda_graph, "Multimodal / VLM models"); v0.5.14's
# tc_piecewise and v0.5.15's breakable default backends' "multimodal model" rules, from v0.5.16
# (arg_groups/cuda_graph_hook.py by v0.5.19) but for the classes in configs/model_config.py
# multimodal_breakable_cuda_graph_supported_model_archs, Qwen3.5/3.6-MoE's among them.
MULTIMODAL_PREFILL_GRAPH_FROM = {"Qwen3_5MoeForConditionalGeneration": Release(0, 5, 16)}
# The vision tower as adjust_mem_fraction_for_vlm reads it (v0.4.10 on): vision_config's
# num_hidden_layers (24 when absent) and hidden_size (1024), for the catalog models whose
# config.json tokcost has (tests/fixtures/hf_configs_families): Gemma-4-26B-A4B 27 x 1152;
# Qwen3.6-35B-A3B names its layers "depth" (27), which SGLang's Qwen3_5MoeVisionConfig
# (configs/qwen3_5.py) keeps as depth, so num_hidden_layers falls back to 24. Gemma-4-31B
# carries the 26B-A4B's tower (27 x 1152): with it the 31B's parameters meet google/gemma-4-31B-it's
# safetensors total to the parameter (tests/test_hf_params.py test_gemma4_31b_shares_the_26b_...).
VISION_TOWERS = {"gemma-4-26b-a4b": (27, 1152), "gemma-4-31b": (27, 1152),
                 "qwen3.6-35b-a3b": (24, 1152)}
# v0.5.18 on (PR #34141, mem_cache/kv_cache_configurator.py mm_runtime_reservation_gb): a multimodal
# model's KV budget loses SGLANG_VLM_CACHE_SIZE_MB (100) for the embedding cache, allocated
# after the pool is sized (more with --mm-feature-transport cuda_ipc/cuda_vmm, not modelled).
MM_RESERVE_FROM = Release(0, 5, 18)
MM_EMBEDDING_CACHE_MIB = 100
# The pool's dtype as memory_pool.py prints it from v0.5.13 (torch's names).
TORCH_DTYPES = {"bf16": "torch.bfloat16", "fp16": "torch.float16", "fp32": "torch.float32",
                "fp8": "torch.float8_e4m3fn", "fp8_e4m3": "torch.float8_e4m3fn",
                "fp8_e5m2": "torch.float8_e5m2"}


# --speculative-algorithm's choices (server_args.py; NEXTN runs as EAGLE): EAGLE, EAGLE3 and
# NEXTN from v0.4.6, STANDALONE from v0.5.2, NGRAM from v0.5.3.
SPECULATIVE_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM")
SPECULATIVE_SINCE = {"STANDALONE": Release(0, 5, 2), "NGRAM": V0_5_3}
# v0.4.6 to v0.5.6 (model_runner.py init_memory_pool) grew the target's pool by
# max_running_requests x (num_steps x eagle_topk + num_draft_tokens) + 100 tokens for the
# draft and verify steps, max_running_requests 48 by default (server_args.py).
SPEC_HEADROOM_UNTIL = V0_5_7
SPEC_MAX_RUNNING_REQUESTS = 48
MAX_DRAFT_LAYERS = 256  # past this a draft is no draft


# A config.json's model_type as the catalog's family, for the rules above (--config models).
MODEL_TYPE_FAMILIES = {"gpt_oss": "gpt-oss", "gemma2": "gemma-2", "gemma3": "gemma-3",
                       "gemma3_text": "gemma-3", "gemma4": "gemma-4", "gemma4_text": "gemma-4",
                       "llama4": "llama-4", "llama4_text": "llama-4", "step3p5": "step-3.5",
                       "qwen3_next": "qwen3-next", "deepseek_v3": "deepseek-v3",
                       "kimi_k2": "deepseek-v3",  # Kimi-K2 runs as DeepseekV3ForCausalLM
                       # MiMoV2FlashForCausalLM (configs/model_config.py is_hybrid_swa_model's
                       # MiMo-V2 archs, v0.5.8 on; is_hybrid_model in v0.5.7)
                       "mimo_v2_flash": "mimo-v2"}


def _family(dep: Deployment) -> str:
    family = dep.family or ""
    return MODEL_TYPE_FAMILIES.get(family, family)


def _rocm(dep: Deployment) -> bool:
    """An AMD GPU: no prefill CUDA graphs (v0.5.10 server_args.py is_hip; v0.5.23
    cuda_graph_config.py default_prefill_backend: CUDA only)."""
    arch = dep.gpu.architecture if dep.gpu is not None else None
    return arch is not None and arch.startswith(("cdna", "rdna"))


def _sm100(dep: Deployment) -> bool:
    """A data-center Blackwell GPU (SM 10.x: B200, B300, GB200), not an RTX 50xx (SM 12.0)."""
    gpu = dep.gpu
    return gpu is not None and gpu.architecture == "blackwell"  # 10.x, not blackwell-geforce


def _tp_table(parallel: int) -> float:
    """v0.4.6/v0.4.7 server_args.py: the fraction for GPUs of up to 80 GiB by parallel size."""
    return next(f for at_least, f in ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87), (1, 0.88))
                if parallel >= at_least or at_least == 1)


def _fraction_v0_4(mib: float, tp: int, pp: int, release: Release, dp_attention: bool = False,
                   speculative: str | None = None) -> tuple[float, str]:
    """v0.4.6's and v0.4.7's tables, v0.4.8's tiered reserve (server_args.py __post_init__);
    v0.4.8 to v0.5.2 keep 4 GiB more back with DP attention (``dp_attention``) and 2 GiB
    with speculative decoding (STANDALONE 6 GiB, v0.5.2); v0.4.7 keeps 20 GiB, not 18, above
    96 GiB and takes 0.95 of the table's fraction below with speculative decoding."""
    if release < V0_4_7:  # tp only; above 80 GiB 13 GiB kept back, unrounded
        if mib <= 81920:
            return _tp_table(tp), f"SGLang v0.4.6's default for GPUs up to 80 GiB at TP {tp}"
        return (mib - 13 * 1024) / mib, (f"SGLang v0.4.6's default: ({mib:,.0f} MiB - 13,312 "
                                         f"MiB) / {mib:,.0f} MiB")
    if release < V0_4_8:  # tp x pp; larger GPUs from 0.88 (v0.4.7 server_args.py)
        fraction = _tp_table(tp * pp) if mib <= 81920 else 0.88
        spec = ", speculative decoding" if speculative else ""
        if mib > 180_000:
            return 0.79, "SGLang v0.4.7's default for GPUs over 180,000 MiB"
        if mib > 96 * 1024:  # "need reserve more memory for spec cuda graph": 20 GiB
            keep = (20 if speculative else 18) * 1024
            fraction = min(fraction + 48 * 1024 * (1 - fraction) / mib, (mib - keep) / mib)
        elif speculative:
            fraction *= 0.95
        return fraction, f"SGLang v0.4.7's default for {mib:,.0f} MiB at TP x PP {tp * pp}{spec}"
    parallel = tp * pp  # v0.4.8 to v0.5.2: GiB kept for activations and CUDA graphs, by tier
    reserved = 1024 * ((2.8 + parallel / 10) if mib < 35 * 1024 else (9.5 + parallel / 2)
                       if mib < 90 * 1024 else (12 + parallel / 2) if mib < 160 * 1024 else 32)
    parts = ""
    if speculative:  # "draft model and larger cuda graph buffers"
        draft = 6 * 1024 if speculative == "STANDALONE" else 2 * 1024
        reserved += draft
        parts += f", {draft:,} of them for the draft model"
    if dp_attention:  # PR #7054 (v0.4.8): "if self.enable_dp_attention: reserved_mem += 4 * 1024"
        reserved += 4 * 1024
        parts += ", 4,096 of them for DP attention"
    return round((mib - reserved) / mib, 3), (
        f"SGLang's default: ({mib:,.0f} MiB - {reserved:,.0f} MiB reserved for activations "
        f"and CUDA graphs{parts}) / {mib:,.0f} MiB")


def vlm_fraction(fraction: float, release: Release,
                 vision: tuple[int, int] | None) -> tuple[float, str]:
    """SGLang's fraction for a multimodal model (``vision``: its tower's layers and hidden
    size, None: no vision_config): v0.4.6 to v0.4.8 take 0.90 of any fraction, a given one too
    (model_executor/model_runner.py), v0.4.9 of the default only (server_args.py
    __post_init__); from v0.4.10 the default only, adjust_mem_fraction_for_vlm (PR #6881;
    server_args.py, v0.5.19 on arg_groups/memory_hook.py): 0.95 x (1 - 0.1 x (layers x
    hidden^2 / (24 x 1024^2) - 1)), that factor kept in [0.8, 1.05], unrounded; nothing
    without a vision_config."""
    if release < V0_4_10:
        return fraction * 0.90, f"{fraction:g} x 0.90 for a multimodal model"
    if vision is None:
        return fraction, ""
    layers, hidden = vision
    ratio = layers * hidden**2 / (24 * 1024**2)  # the tower against ViT-L/14's
    factor = 0.95 * max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))
    return fraction * factor, (f"{fraction:g} x {factor:g} for its vision tower of {layers} "
                               f"layers of {hidden}")


def prefill_graph_sizes(max_tokens: int) -> list[int]:
    """The prefill (piecewise) CUDA graphs' token sizes (server_args.py
    _generate_piecewise_cuda_graph_tokens, v0.5.10; generate_prefill_cuda_graph_batch_sizes)."""
    sizes = [*range(4, 33, 4), *range(48, 257, 16), *range(288, 513, 32),
             *range(576, 1025, 64), *range(1280, 4097, 256), *range(4608, max_tokens + 1, 512)]
    return [s for s in sizes if s <= max_tokens]


def speculative_reserve(algorithm: str | None, release: Release) -> int:
    """MiB SGLang's default fraction keeps back for a draft model and its CUDA graphs, after
    the 10 GiB floor (server_args.py _handle_gpu_memory_settings): STANDALONE 6 GiB, NGRAM
    none, EAGLE/EAGLE3/NEXTN 2 GiB from v0.5.3 and 4 GiB from v0.5.10; none from v0.5.14
    (PR #23862 dropped it: the draft's KV joins the pool's cell, its weights load first)."""
    if algorithm is None or algorithm == "NGRAM" or release >= V0_5_14:
        return 0
    if algorithm == "STANDALONE":
        return 6 * 1024
    return 4 * 1024 if release >= V0_5_10 else 2 * 1024


def dp_attention_reserve(graph_bs: int, attn_dp: int, *, on: bool | None = None) -> float:
    """MiB kept back for DP attention's padding from v0.5.3 (PR #10975's heuristics,
    server_args.py; v0.5.19 on arg_groups/memory_hook.py reserve_for_graph_mb): cuda graph
    max_bs x dp x 3, and x 1.5 more past a max_bs of 300, before the 10 GiB floor; ``on``:
    DP attention is on when it is reckoned (default: ``attn_dp`` > 1)."""
    if not (attn_dp > 1 if on is None else on):
        return 0
    return graph_bs * attn_dp * 3 + (graph_bs * attn_dp * 1.5 if graph_bs > 300 else 0)


def default_mem_fraction_static(memory_bytes: int | None, tp: int, pp: int,
                                release: Release = V0_5_23, *, mla: bool = False,
                                prefill_graph: bool = True, attn_dp: int = 0,
                                speculative: str | None = None) -> tuple[float, str]:
    """SGLang's default ``mem_fraction_static`` for this GPU in ``release``, and how it was
    reached (``prefill_graph``: the model may capture prefill CUDA graphs, v0.5.10 on;
    ``attn_dp``: DP attention's ranks where it is asked for, 0 where not; 1, DP attention with
    one rank, is still on when the fraction is reckoned in SGLANG_DP1_ATTENTION's releases;
    ``speculative``: the algorithm)."""
    dp_on = attn_dp > 1 or (attn_dp == 1 and SGLANG_DP1_ATTENTION[0] <= release
                            < SGLANG_DP1_ATTENTION[1])
    if memory_bytes is None:  # 0.95 from v0.5.20 (arg_groups/memory_hook.py)
        return 0.95 if release >= V0_5_20 else 0.88, "SGLang's default without a known GPU"
    mib = memory_bytes / MiB
    if release < V0_5_3:
        return _fraction_v0_4(mib, tp, pp, release, dp_on and release >= V0_4_8,
                              speculative if release >= V0_4_7 else None)
    # PR #10975 (v0.5.3): chunked_prefill_size and cuda_graph_max_bs by the GPU's memory, then
    # reserved = 512 + 1.5 x chunk + 2 x graph bs + tp x pp / 8 GiB (MiB), at least 10 GiB above
    # 60 GiB. GPUs of 20 to 35 GiB: bs 16 (tp < 4) to v0.5.4, 24 from v0.5.5, and from v0.5.20
    # chunks of 4,096 with bs 48 / 160.
    small = ((4096, 48, 160) if release >= V0_5_20 else (2048, 24, 80) if release >= V0_5_5
             else (2048, 16, 80))
    chunk, graph_bs = 16384, 512
    for below, size, low, high in ((20, 2048, 8, 8), (35, *small), (60, 4096, 32, 160),
                                   (160, 8192, 256, 512)):
        if mib < below * 1024:
            chunk, graph_bs = size, low if tp < 4 else high
            break
    dp_part = dp_attention_reserve(graph_bs, attn_dp, on=dp_on)
    reserved = 512 + max(chunk, 2048) * 1.5 + graph_bs * 2 + tp * pp / 8 * 1024 + dp_part
    graphs = f", {dp_part:,.0f} of them for DP attention" if dp_part else ""
    if release >= V0_5_10 and prefill_graph and pp == 1:
        # Prefill CUDA graphs on by default from v0.5.10 (disable_piecewise_cuda_graph, off
        # with pipeline parallelism): 8 MiB per captured size, 1.5 GiB with an MLA backend.
        extra = 1.5 * 1024 if mla else len(prefill_graph_sizes(chunk)) * 8
        reserved += extra
        graphs += f", {extra:,.0f} of them for prefill CUDA graphs"
    if mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    draft = speculative_reserve(speculative, release)
    if draft:
        reserved += draft
        graphs += f", {draft:,} of them for the draft model"
    return round((mib - reserved) / mib, 3), (
        f"SGLang's default: ({mib:,.0f} MiB - {reserved:,.0f} MiB reserved for activations "
        f"and CUDA graphs{graphs}) / {mib:,.0f} MiB")


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
    release: Release = V0_5_23
    dtype: str = "bf16"  # the KV cache's (tokcost's name)
    mem_fraction_static: float | None = None  # as the refusal prints it
    page_note: str = ""  # why the page is what it is, when the attention backend set it
    # K's bytes of full_bytes and swa_bytes where V's heads are narrower (MiMo-V2: SGLang's
    # MHATokenToKVPool keeps v_buffer at v_head_dim, memory_pool.py); 0: half of them
    k_bytes: tuple[int, int] = (0, 0)
    conv_bytes: int = 0  # of state_bytes, the conv states' (0: the split is not known)
    # A speculative draft's attention layers (EAGLE/NEXTN/STANDALONE), each full_bytes per
    # token: its own pool of max_total_num_tokens (eagle_worker.py shares the target's token
    # indices), in the cell from v0.5.14 (draft_cell_size).
    draft_layers: int = 0
    # v0.4.6 to v0.5.6: tokens the target adds to its pool for the draft and verify steps
    # (max_running_requests x (steps x topk + draft tokens) + 100)
    spec_headroom: int = 0

    @property
    def target_cell(self) -> int:
        return self.full_bytes * self.stage.full + self.swa_bytes * self.stage.swa

    @property
    def cell_size(self) -> int:
        """Bytes per token the pool is sized by: the target's, and the draft's from v0.5.14."""
        return self.target_cell + self.draft_cell_size

    @property
    def draft_cell_size(self) -> int:
        """What the draft adds to the cell (model_executor/pool_configurator.py
        DefaultPoolConfigurator, PR #23862 in v0.5.14: int(cell x (1 + draft layers / layers)),
        in floats; v0.5.22 adds int(cell x draft layers / layers)); 0 before v0.5.14, where the
        draft's pool lies outside mem_fraction_static's budget (model_runner.py)."""
        cell, layers, draft = self.target_cell, self.stage.full, self.draft_layers
        if not draft or self.release < V0_5_14 or not layers:
            return 0
        if self.hybrid_swa:
            # HybridSWAPoolConfigurator from v0.5.15 (PR #29622): F x (full layers + draft
            # layers) + ratio x S x SWA layers, the draft's layers full ones; v0.5.14 scaled
            # only the default configurator's cell
            return self.full_bytes * draft if self.release >= V0_5_15 else 0
        if self.release >= V0_5_22:
            return int(cell * draft / layers)
        return int(cell * (1 + draft / layers)) - cell

    def _align(self, n: int) -> int:
        return n // self.block_size * self.block_size

    def _pools(self) -> tuple[int, int, int, int] | None:
        """(max_total_num_tokens, full pool tokens, swa pool tokens, mamba states)."""
        if self.available is None:
            return None
        rest, mamba = self.available, 0
        if self.stage.linear and self.state_bytes:
            slots = int(rest * MAMBA_FULL_MEMORY_RATIO / (1 + MAMBA_FULL_MEMORY_RATIO)
                        // self.state_bytes)
            rest -= slots * self.state_bytes
            # From v0.5.17 one of the slots is the pool's padding slot, not a request's
            # (mem_cache/kv_cache_configurator.py: (budget - per_slot) // per_slot states).
            mamba = slots - 1 if self.release >= V0_5_17 else slots
        tokens = self._align(max(rest, 0) // self.cell_size + self.spec_headroom)
        if not self.hybrid_swa:
            return tokens, tokens, 0, mamba
        if self.stage.full == 0:
            return tokens, 0, tokens, mamba
        return (*self._split(tokens, max(rest, 0)), mamba)

    def _split(self, tokens: int, rest: int) -> tuple[int, int, int]:
        """(max_total_num_tokens, full, swa) of a hybrid SWA pool, ``tokens`` being the pool
        over every layer and ``rest`` its bytes."""
        f_all, s_all = self.full_bytes * self.stage.full, self.swa_bytes * self.stage.swa
        ratio, release = self.swa_ratio, self.release
        if release < V0_5_9:
            # model_runner.py set_num_token_hybrid (v0.4.10 to v0.5.8): by layer counts,
            # full = tokens x layers / (ratio x swa layers + full layers); page-aligned from v0.5.
            layers = self.stage.full + self.stage.swa
            full = int(tokens * layers / (ratio * self.stage.swa + self.stage.full))
            swa = int(full * ratio)
            if release >= V0_5_1:
                full, swa = self._align(full), self._align(swa)
            return full, full, swa
        if release < V0_5_11:  # by bytes (model_runner_kv_cache_mixin.py, v0.5.9 and v0.5.10)
            full = self._align(int(tokens * (f_all + s_all) / (f_all + ratio * s_all)))
        else:  # pool_configurator.py (v0.5.11 on): the cell counts the SWA pool at the ratio
            full = self._align(int(rest // (f_all + self.draft_cell_size + ratio * s_all)))
        return full, full, self._align(int(full * ratio))

    def _draft_tokens(self, total: int) -> int:
        """The draft pool's tokens: the target's max_total_num_tokens, but in v0.5.7 and v0.5.8
        a hybrid SWA target handed its draft the tokens before the full/SWA split
        (model_runner_kv_cache_mixin.py init_memory_pool set draft_runner_cache_size before
        set_num_tokens_hybrid_swa; v0.5.9 moved it after)."""
        if self.hybrid_swa and V0_5_7 <= self.release < V0_5_9 and self.available is not None:
            return self._align(self.available // self.cell_size)
        return total

    def _swa_tokens(self, context: int) -> int:
        return min(context, self.window) if self.window else context

    def request_bytes(self, context: int) -> int:
        return (context * self.full_bytes * (self.stage.full + self.draft_layers)
                + self.state_bytes
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
        if self.refuses_long_context(context):
            return False
        conc = self.max_concurrency(context)
        # A prompt past max_total_num_tokens - 1 is rejected (scheduler max_req_input_len).
        return pools[0] > 0 and context < pools[0] + 1 and conc is not None and conc >= batch

    def refuses_long_context(self, context: int) -> bool:
        """A context_length past the model's: refused from v0.5.1; v0.4.x warned and started
        (SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN defaulted to True, configs/model_config.py)."""
        return self.release >= V0_5_1 and self.past_model_len(context)

    def _kv_line(self, tokens: int, layers: int, per_token: int, label: str = "",
                 k_bytes: int = 0) -> str:
        size = (tokens + self.block_size) * per_token * layers / GiB
        k_size = (tokens + self.block_size) * k_bytes * layers / GiB if k_bytes else size / 2
        # memory_pool.py: the dtype from v0.5.13; the SWA pools' "Full"/"SWA" from v0.5.17.
        head = (f"{label} KV Cache" if label and self.release >= V0_5_17 else "KV Cache")
        dtype = (f" dtype: {TORCH_DTYPES.get(self.dtype, self.dtype)},"
                 if self.release >= V0_5_13 else "")
        if self.mla:
            return f"{head} is allocated.{dtype} #tokens: {tokens}, KV size: {size:.2f} GB"
        return (f"{head} is allocated.{dtype} #tokens: {tokens}, K size: {k_size:.2f} GB, "
                f"V size: {size - k_size:.2f} GB")

    def mamba_line(self, states: int) -> str:
        """MambaPool's line for ``states`` (max_mamba_cache_size): its conv and SSM tensors hold
        states + 1 slots (slot 0 pads), in GB = 2^30 B (mem_cache/memory_pool.py, v0.5.4 on;
        SGLang ends the line with a space, left out here)."""
        slots = states + 1
        return (f"Mamba Cache is allocated. max_mamba_cache_size: {states}, conv_state size: "
                f"{slots * self.conv_bytes / GiB:.2f}GB, ssm_state size: "
                f"{slots * (self.state_bytes - self.conv_bytes) / GiB:.2f}GB")

    def _lines(self, pools: tuple[int, int, int, int]) -> list[str]:
        total, full, swa, mamba = pools
        lines = ([self.mamba_line(mamba)] if self.conv_bytes else
                 [f"max_mamba_cache_size: {mamba}"]) if mamba else []
        if self.hybrid_swa:
            # "Sliding" to v0.5.6, "sliding" from v0.5.7 (model_runner.py)
            word = "sliding" if self.release >= V0_5_7 else "Sliding"
            lines.append(f"Use {word} window memory pool. full_layer_tokens={full}, "
                         f"swa_layer_tokens={swa}")
            if self.stage.full:
                lines.append(self._kv_line(full, self.stage.full, self.full_bytes, "Full",
                                           self.k_bytes[0]))
            lines.append(self._kv_line(swa, self.stage.swa, self.swa_bytes, "SWA",
                                       self.k_bytes[1]))
        else:
            lines.append(self._kv_line(total, self.stage.full, self.full_bytes,
                                       k_bytes=self.k_bytes[0]))
        if self.draft_layers:  # the draft worker's pool, as many tokens, its own layers
            lines.append(self._kv_line(self._draft_tokens(total), self.draft_layers,
                                       self.full_bytes, k_bytes=self.k_bytes[0]))
        return [*lines, f"max_total_num_tokens={total}"]

    def _no_memory(self) -> str:
        """The RuntimeError of an empty pool (model_runner.py; from v0.5.10 MemoryPoolConfig in
        model_runner_kv_cache_mixin.py): the fraction printed from v0.5.3."""
        text, mfs = "Not enough memory. Please try to increase --mem-fraction-static.", \
            self.mem_fraction_static
        if mfs is None or self.release < V0_5_3:  # (none with --kv-memory)
            return text
        return text + (f" Current value: mem_fraction_static={mfs}" if self.release >= V0_5_10
                       else f" Current value: self.server_args.mem_fraction_static={mfs}")

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
        pools = ", ".join(f"{g.kind} pool: {g.layers} layer{'s' * (g.layers > 1)}"
                          for g in report.groups)
        kept = [f"SGLang {self.release} keeps this model's sliding-window layers in the full "
                "pool (from v0.5.8 only Llama-4, gpt-oss, MiMo-V2, Step-3.5 and Gemma-4 get a "
                "sliding-window pool; before, Gemma-2/3 in v0.4.10: docs/kvmem-engines.md)"]
        return (f"SGLang pools: {pools}; cell {self.cell_size:,} B per token; "
                f"{', '.join(tokens)}", *(kept if s.get("sliding_layers_in_full_pool") else []),
                *report.logs(list(report.lines)))

    def report(self, max_model_len: int) -> EngineReport:
        pools = self._pools()
        kinds = (("mla" if self.mla else "full", self.stage.full, self.full_bytes, None),
                 ("swa", self.stage.swa, self.swa_bytes, self.window),
                 ("draft", self.draft_layers, self.full_bytes, None))
        groups = [EngineGroup(kind, n, n, self.block_size, self.block_size * per_token, window)
                  for kind, n, per_token, window in kinds if n]
        refusal = None
        if self.refuses_long_context(max_model_len):
            # SGLang's words (configs/model_config.py, v0.5.1 on), raised before any memory
            # is sized.
            refusal = (f"Warning: User-specified context_length ({max_model_len}) is greater "
                       f"than the derived context_length ({self.model_max_len}). This may lead "
                       "to incorrect model outputs or CUDA errors. Note that the derived "
                       "context_length may differ from max_position_embeddings in the model's "
                       "config. To allow overriding this maximum, set the env var "
                       "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")
        if pools is not None and pools[0] <= 0:
            refusal = refusal or self._no_memory()
        starts = pools is not None and pools[0] > 0
        mfs, source = (self.settings.get(f"mem_fraction_static{k}") for k in ("", "_source"))
        reason = f"{self.block_size} (SGLang's page_size" + (
            ", token-granular)" if self.block_size == 1 else
            f": {self.page_note})" if self.page_note else ")")
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
    # get_pp_indices (srt/distributed/utils.py): the layers left over go to the last stages
    # (vLLM's go to the stages before the last)
    pp_extra_last: ClassVar[bool] = True
    # v0.4.6 to v0.5.23 (the newest on PyPI), by patch: sglang@0.4 is v0.4.10, sglang@0.5
    # v0.5.23; what changed between them: the V0_x_y rules above (docs/kvmem-engines.md).
    releases: ClassVar[tuple[Release, Release] | None] = (V0_4_6, V0_5_23)
    patches: ClassVar[tuple[Release, ...]] = (V0_4_10, V0_5_23)
    # SGLang's releases on PyPI (`pip index versions sglang`; .postN builds are their patch's):
    # v0.4.6 to v0.4.10, then v0.5.1 to v0.5.23 (v0.5.0 reached only rc0 to rc2).
    published: ClassVar[tuple[Release, ...]] = (
        *(Release(0, 4, p) for p in range(6, 11)), *(Release(0, 5, p) for p in range(1, 24)))

    mem_fraction_static: float | None = None  # None: SGLang's default for the GPU
    swa_full_tokens_ratio: float | None = None  # None: 0.8
    release: Release = V0_5_23
    # --enable-dp-attention: --dp N attention ranks inside the TP group (v0.5.22 on also
    # spelled --attn-dp-size N, arg_groups/parallel_hook.py)
    enable_dp_attention: bool = False
    speculative_algorithm: str | None = None  # EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM
    draft_layers: int | None = None  # the draft's attention layers; None: the model's MTP

    def __post_init__(self) -> None:
        object.__setattr__(self, "release", self.release_of(self.release))
        self._check_speculative()
        mfs, ratio = self.mem_fraction_static, self.swa_full_tokens_ratio
        if mfs is not None and not 0 < mfs < 1:
            raise UsageError(f"{arg('mem_fraction_static')} must be in (0, 1), got {mfs:g}",
                             param="mem_fraction_static")
        if ratio is not None and not 0 < ratio <= 1:
            raise UsageError(f"{arg('swa_full_tokens_ratio')} must be in (0, 1], got {ratio:g}",
                             param="swa_full_tokens_ratio")

    def _check_speculative(self) -> None:
        algo, draft = self.speculative_algorithm, self.draft_layers
        if algo is not None:
            algo = str(algo).strip().upper()
            if algo not in SPECULATIVE_ALGORITHMS:
                raise UsageError(f"{arg('speculative_algorithm', repr(self.speculative_algorithm))}"
                                 f" is not one of SGLang's: {', '.join(SPECULATIVE_ALGORITHMS)}",
                                 param="speculative_algorithm")
            object.__setattr__(self, "speculative_algorithm", algo)
            since = SPECULATIVE_SINCE.get(algo)
            if since is not None and self.release < since:
                raise UsageError(
                    f"SGLang {self.release} has no {arg('speculative_algorithm', algo)} (it came "
                    f"in {since}); use {arg('engine', f'sglang@{str(since)[1:]}')} or later",
                    param="speculative_algorithm", related=("engine",))
        if draft is not None:
            draft = parse_count(draft, param="draft_layers")
            if draft < 0 or draft > MAX_DRAFT_LAYERS:
                raise UsageError(f"{arg('draft_layers')} must be 0 to {MAX_DRAFT_LAYERS}, got "
                                 f"{draft}", param="draft_layers")
            object.__setattr__(self, "draft_layers", draft)
            if algo is None or algo == "NGRAM":
                raise UsageError(f"{arg('draft_layers')} are a draft model's layers; give "
                                 f"{arg('speculative_algorithm', 'EAGLE')} (or NEXTN, EAGLE3, "
                                 "STANDALONE) with them", param="draft_layers",
                                 related=("speculative_algorithm",))
            if draft == 0:  # every draft model SGLang loads has attention layers
                raise UsageError(f"{arg('draft_layers', 0)} leaves {algo}'s draft model without "
                                 "layers; give its attention layers, or "
                                 f"{arg('speculative_algorithm', 'NGRAM')} (no draft model)",
                                 param="draft_layers", related=("speculative_algorithm",))

    def attention_dp(self, dp: int) -> int:
        return dp if self.enable_dp_attention else 1

    def gpu_knobs(self) -> dict[str, bool]:
        return {"mem_fraction_static": self.mem_fraction_static is not None}

    def check(self, request: KvRequest) -> None:
        super().check(request)
        tp, dp = request.parallel.tp, request.parallel.dp
        if self.enable_dp_attention and dp == 1 and self.release < Release(0, 5, 2):
            # server_args.py to v0.5.1: assert self.dp_size > 1 (v0.5.2 turns the flag off)
            raise UsageError(f"SGLang {self.release} refuses {arg('enable_dp_attention')} with "
                             f"{arg('dp', 1)} (\"Please set a dp-size > 1\"); give "
                             f"{arg('dp', 'N')} attention ranks, N dividing {arg('tp')}",
                             param="dp", related=("enable_dp_attention", "tp"))
        if self.enable_dp_attention and dp > 1 and self.speculative_algorithm == "STANDALONE":
            # server_args.py (v0.5.2 on; arg_groups/speculative_hook.py by v0.5.13): "Currently
            # standalone speculative decoding does not support dp attention."
            raise UsageError(f"SGLang refuses {arg('speculative_algorithm', 'STANDALONE')} with "
                             f"{arg('enable_dp_attention')} (\"standalone speculative decoding "
                             "does not support dp attention\"); drop one",
                             param="speculative_algorithm", related=("enable_dp_attention",))
        if self.enable_dp_attention and tp % dp:
            # server_args.py: assert self.tp_size % self.dp_size == 0 (v0.4.6 on)
            raise UsageError(f"{arg('dp', dp)} must divide {arg('tp', tp)} with "
                             f"{arg('enable_dp_attention')}: SGLang's attention ranks split the "
                             "tensor-parallel group", param="dp",
                             related=("tp", "enable_dp_attention"))
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
                if self._multimodal(dep) and self.release < V0_4_9:
                    # v0.4.6 to v0.4.8 cut any fraction, a given one too (model_runner.py)
                    mfs, why = vlm_fraction(mfs, self.release, None)
                    source += f", then {why}"
            else:
                mfs, source = default_mem_fraction_static(
                    dep.memory_bytes, dep.layout.tp * dep.attn_dp, dep.pp, self.release,
                    mla=bool(dep.layout.counts["mla"]), prefill_graph=self._prefill_graph(dep),
                    attn_dp=dep.attn_dp if self.enable_dp_attention or dep.attn_dp > 1 else 0,
                    speculative=self.speculative_algorithm)
                if self._multimodal(dep):
                    mfs, why = vlm_fraction(mfs, self.release, self._vision(dep))
                    source += f", then {why}" if why else ""
            settings.update(mem_fraction_static=mfs, mem_fraction_static_source=Note(source))
            mm = self._mm_reserve(dep)
            if mm:
                settings["multimodal_reserve_bytes"] = mm
            available = int(dep.memory_bytes * mfs) - dep.weights - mm
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
        mm = 0 if given else self._mm_reserve(dep)
        return plan, GpuFit(None if given else dep.memory_bytes, mfs, 0 if given else dep.weights,
                            mm, available, plan.block_size, plan.cell_size * plan.block_size,
                            tokens // plan.block_size, tokens)

    def _multimodal(self, dep: Deployment) -> bool:
        """SGLang serves the model as multimodal (MULTIMODAL_FROM)."""
        since = MULTIMODAL_FROM.get(dep.model_class or "")
        return since is not None and self.release >= since

    def _mm_reserve(self, dep: Deployment) -> int:
        """Bytes the multimodal embedding cache takes from the KV budget (MM_RESERVE_FROM)."""
        if not self._multimodal(dep) or self.release < MM_RESERVE_FROM:
            return 0
        return MM_EMBEDDING_CACHE_MIB * MiB

    def _vision(self, dep: Deployment) -> tuple[int, int] | None:
        """The vision tower SGLang sizes its default fraction by (VISION_TOWERS); refused where
        the release reads one that tokcost does not have."""
        tower = VISION_TOWERS.get(dep.model)
        if tower is None and self.release >= V0_4_10:
            raise UsageError(
                f"SGLang {self.release} lowers its default {arg('mem_fraction_static')} for "
                f"multimodal {dep.model} by its vision tower's size (vision_config), which "
                f"tokcost does not have (adjust_mem_fraction_for_vlm); give "
                f"{arg('mem_fraction_static')}",
                param="mem_fraction_static", related=("engine",))
        return tower

    def pools(self, dep: Deployment, available: int | None,
              settings: dict[str, object] | None = None) -> SglangPlan:
        layout = dep.layout
        page, page_note = self._page(dep)
        counts = layout.counts
        if layout.indexer_bytes:
            if not V0_5_4 <= self.release < V0_5_23:
                raise UsageError(
                    f"SGLang {self.release} is not modelled for {dep.model}'s sparse-attention "
                    "indexer (NSA): tokcost sizes its pool as v0.5.4 to v0.5.22 do (PR #11309), "
                    "and v0.5.23's DSATokenToKVPool differs; use "
                    f"{arg('engine', 'sglang@0.5.22')} or {arg('engine', 'vllm')}",
                    param="engine")
            page, page_note = _nsa_page(dep, self.release), ""
        self._refuse_unserved(dep)
        hybrid_swa = bool(counts["sliding"]) and self._swa_pool(dep)
        draft = self._draft(dep, hybrid_swa)
        params = self._spec_params(dep, page) if draft else None
        full_kind: LayerKind = "mla" if counts["mla"] else "full" if counts["full"] else "sliding"
        full_bytes = layout.token_bytes.get(full_kind, 0)
        swa_bytes = layout.token_bytes.get("sliding", 0)
        stages = []
        for stage in dep.stages:
            kinds = [layout.layers[i] for i in stage]
            swa = kinds.count("sliding") if hybrid_swa else 0
            full = sum(1 for k in kinds if k in ("full", "mla", "sliding")) - swa
            stages.append(_Stage(full, swa, kinds.count("linear")))
        best = max(stages, key=lambda s: full_bytes * s.full + swa_bytes * s.swa)
        if best.full + best.swa == 0:
            raise UsageError("this model caches no tokens (only fixed-state layers)")
        ratio, mfs = self.swa_full_tokens_ratio, (settings or {}).get("mem_fraction_static")
        return SglangPlan(
            full_bytes=full_bytes or swa_bytes, swa_bytes=swa_bytes, stage=best,
            window=layout.window,
            state_bytes=best.linear * mamba_state_bytes(layout, self.release), block_size=page,
            page_note=page_note, conv_bytes=best.linear * layout.conv_elements * 2,
            swa_ratio=DEFAULT_SWA_FULL_TOKENS_RATIO if ratio is None else ratio,
            hybrid_swa=hybrid_swa, mla=bool(counts["mla"]), available=available,
            draft_layers=draft, spec_headroom=0 if params is None else SPEC_MAX_RUNNING_REQUESTS * (
                params[0] * params[1] + params[2]) + 100,
            settings={
                **(settings or {}),
                "sliding_layers_in_full_pool": bool(counts["sliding"]) and not hybrid_swa,
                **({"speculative_algorithm": self.speculative_algorithm, "draft_layers": draft}
                   if self.speculative_algorithm else {}),
                **({"speculative_parameters": params} if params else {}),
                **({"attention_dp": dep.attn_dp} if dep.attn_dp > 1 else {})},
            model_max_len=dep.model_max_len, version=self.version, release=self.release,
            dtype=layout.dtype.name, mem_fraction_static=mfs if isinstance(mfs, float) else None,
            # K is half of a V-padded token (kv.py v_padded_bytes: 2 x K's head size)
            k_bytes=(layout.v_padded_bytes.get(full_kind, 0) // 2,
                     layout.v_padded_bytes.get("sliding", 0) // 2))

    def _draft(self, dep: Deployment, hybrid_swa: bool) -> int:
        """The draft's attention layers in the pool: --draft-layers, else the draft config's
        num_nextn_predict_layers (NEXTN, and EAGLE on a model with MTP layers: SGLang loads the
        target's path as the draft, arg_groups/speculative_hook.py), else one layer, an EAGLE
        head's num_hidden_layers (model_runner_components/spec_aux_hidden_state.py). NGRAM
        keeps no draft pool."""
        algo, layout = self.speculative_algorithm, dep.layout
        if algo is None or algo == "NGRAM":
            return 0
        what = ("Mamba or linear-attention states" if layout.counts["linear"] else
                "a sparse-attention indexer (NSA)" if layout.indexer_bytes else
                "only sliding-window layers" if hybrid_swa and not layout.counts["full"]
                else None)
        if what is not None:
            raise UsageError(f"{arg('speculative_algorithm')} is modelled for models SGLang keeps "
                             f"in full or MLA pools (and a sliding-window one beside); "
                             f"{dep.model} has {what}, whose draft pools SGLang sizes by other "
                             "rules (Mamba/DSA configurators); leave it out",
                             param="speculative_algorithm")
        own_mtp = algo == "NEXTN" or (algo == "EAGLE" and layout.mtp_layers > 0)
        if hybrid_swa and own_mtp and self.draft_layers is None:
            # HybridSWAPoolConfigurator: an MTP draft's layers may be sliding ones
            # (mtp_local_layer_ids, eagle_draft_swa_num_layers), which tokcost does not place
            raise UsageError(f"{arg('speculative_algorithm', algo)} drafts with {dep.model}'s own "
                             "MTP layers, which SGLang may keep in its sliding-window pool: not "
                             "modelled; an external EAGLE head's full-attention layers are "
                             f"({arg('speculative_algorithm', 'EAGLE3')}, "
                             f"{arg('draft_layers', 'N')})", param="speculative_algorithm",
                             related=("draft_layers",))
        if hybrid_swa and self.release < SPEC_HEADROOM_UNTIL:
            raise UsageError(f"{arg('speculative_algorithm')} on a sliding-window pool is "
                             f"modelled from SGLang v0.5.7 ({self.release} grew the pool for the "
                             "draft before the full/SWA split); use "
                             f"{arg('engine', 'sglang@0.5.7')} or later",
                             param="speculative_algorithm", related=("engine",))
        if dep.pp > 1:
            raise UsageError(f"{arg('pp')} with {arg('speculative_algorithm')} is not modelled "
                             "(tokcost does not place the draft on a pipeline stage); give "
                             f"{arg('pp', 1)}", param="pp", related=("speculative_algorithm",))
        if self.draft_layers is not None:
            return self.draft_layers
        if algo in ("NEXTN", "EAGLE") and layout.mtp_layers:
            return layout.mtp_layers
        if algo in ("NEXTN", "STANDALONE"):
            whose = ("has no MTP layers (num_nextn_predict_layers)" if algo == "NEXTN" else
                     "is drafted by a separate model")
            raise UsageError(f"{arg('speculative_algorithm', algo)}: {dep.model} {whose}; give "
                             f"the draft's attention layers as {arg('draft_layers', 'N')}",
                             param="draft_layers", related=("speculative_algorithm",))
        return 1

    def _spec_params(self, dep: Deployment, page: int) -> tuple[int, int, int] | None:
        """(num_steps, eagle_topk, num_draft_tokens) where the release grows the pool by them
        (v0.4.6 to v0.5.6), else None: server_args.py auto_choose_speculative_params for the
        target's architecture, (3, 1, 4) for STANDALONE (v0.5.2 on), DeepSeek-V2/V3 (v0.4.7 on)
        and gpt-oss (v0.5.1 on), else (5, 4, 8); v0.4.6 to v0.4.8 cut eagle_topk to 1 on pages
        over one token, and eagle_topk 1 takes num_steps + 1 draft tokens."""
        release = self.release
        if release >= SPEC_HEADROOM_UNTIL:
            return None
        family = _family(dep)
        short = (self.speculative_algorithm == "STANDALONE"
                 or (family in ("deepseek-v2", "deepseek-v3", "kimi-k2") and release >= V0_4_7)
                 or (family == "gpt-oss" and release >= V0_5_1))
        steps, topk, draft = (3, 1, 4) if short else (5, 4, 8)
        if page > 1 and topk > 1 and release < Release(0, 4, 9):
            topk, draft = 1, steps + 1
        return steps, topk, draft

    def _prefill_graph(self, dep: Deployment) -> bool:
        """Whether SGLang captures prefill CUDA graphs for ``dep`` (v0.5.10 on, reserved for in
        the default fraction): not for NO_PREFILL_GRAPH_FAMILIES nor on ROCm; not with DP
        attention from v0.5.10 to v0.5.18 (server_args.py _handle_piecewise_cuda_graph, then
        the piecewise and breakable backends' "DP attention" rule, which PR #31682 took out for
        v0.5.19, arg_groups/cuda_graph_hook.py); not with speculative decoding in v0.5.10 (its
        rule 2, dropped in v0.5.11); multimodal models as MULTIMODAL_PREFILL_GRAPH_FROM says."""
        release = self.release
        since = MULTIMODAL_PREFILL_GRAPH_FROM.get(dep.model_class or "")
        if self._multimodal(dep) and (since is None or release < since):
            return False  # MULTIMODAL_PREFILL_GRAPH_FROM
        return not (_family(dep) in NO_PREFILL_GRAPH_FAMILIES or _rocm(dep)
                    or ((dep.attn_dp > 1 or self.enable_dp_attention) and V0_5_10 <= release
                        < V0_5_19)  # --dp 1 too: SGLANG_DP1_ATTENTION
                    or (self.speculative_algorithm is not None and release == V0_5_10))

    def _refuse_unserved(self, dep: Deployment) -> None:
        """A family the release has no model file for, or Mamba layers before v0.5.4's pool."""
        since, sglang = SERVED_FROM.get(_family(dep)), arg("engine", "sglang")
        if since is not None and self.release < since:
            raise UsageError(f"SGLang {self.release} has no model code for {dep.model} (it came "
                             f"in {since}); use {sglang}", param="engine")
        if dep.layout.counts["linear"] and self.release < V0_5_4:
            raise UsageError(f"SGLang's Mamba state pool is modelled from v0.5.4 (sized by "
                             f"mamba_full_memory_ratio); {dep.model} under {self.release} is not; "
                             f"use {sglang}", param="engine")

    def _page(self, dep: Deployment) -> tuple[int, str]:
        """The page_size: 1 (or the given one), except where the default attention backend on
        SM 10.x Blackwell (B200, B300; not the RTX 50xx's SM 12.0) takes other pages: DeepSeek-V3
        runs trtllm_mla from v0.5.4 (pages of 32 or 64, else 64), gpt-oss trtllm_mha from its
        first release (v0.5.1), Llama-4 from v0.5.6 and other attention models from v0.5.7 (16,
        32 or 64, and 128 by v0.5.23; else 64), server_args.py."""
        given = 1 if dep.block_size is None else dep.block_size
        if not _sm100(dep):
            return given, ""
        if dep.layout.counts["mla"]:
            if _family(dep) == "deepseek-v3" and self.release >= V0_5_4 and given not in (32, 64):
                return 64, "trtllm_mla on Blackwell takes 32 or 64"
            return given, ""
        takes = (16, 32, 64, 128) if self.release >= V0_5_23 else (16, 32, 64)
        since = (V0_5_1 if _family(dep) == "gpt-oss" else Release(0, 5, 6) if dep.layout.chunked
                 else V0_5_7)
        if self.release >= since and given not in takes:
            return 64, f"trtllm_mha on Blackwell takes {', '.join(map(str, takes))}"
        return given, ""

    def _swa_pool(self, dep: Deployment) -> bool:
        """Whether the release gives the sliding layers their own pool (HYBRID_SWA_FROM,
        SWA_BY_WINDOW). Llama-4 (the one chunked family, model_type llama4_text) takes its chunk
        as the window (model_runner: sliding_window_size = attention_chunk_size); gpt-oss on
        Blackwell runs trtllm_mha, which turned the pool off in v0.5.8 and v0.5.9 (server_args.py;
        trtllm_mha translates SWA indices from PR #18970, and v0.5.10 keeps the pool)."""
        family, release = _family(dep), self.release
        if family in SWA_BY_WINDOW:
            first, last = SWA_BY_WINDOW[family]
            if first <= release < last:
                return True
        since = HYBRID_SWA_FROM.get(family, V0_5_8 if dep.layout.chunked else None)
        return since is not None and release >= since and not (
            family == "gpt-oss" and _sm100(dep) and release < V0_5_10)

    def idle_notes(self, dep: Deployment) -> list[Note]:
        notes = []
        if self.enable_dp_attention and dep.attn_dp == 1:
            # server_args.py (_handle_data_parallelism, v0.5.2 on): "if self.dp_size == 1:
            # self.enable_dp_attention = False"; v0.4.x and v0.5.1 refuse it (check); before
            # v0.5.22 only after the default fraction (SGLANG_DP1_ATTENTION)
            first, last = SGLANG_DP1_ATTENTION
            late = (f" only after it has sized its default {arg('mem_fraction_static')} with "
                    "it on (its DP attention reserve above)" if first <= self.release < last
                    and self.mem_fraction_static is None and dep.kv_memory is None
                    and dep.memory_bytes is not None else "")
            notes.append(Note(f"{arg('enable_dp_attention')} with {arg('dp', 1)}: SGLang turns "
                              f"DP attention off{late}; give {arg('dp', 'N')} attention ranks "
                              f"(N dividing {arg('tp')})"))
        if self.swa_full_tokens_ratio is None or self._swa_pool(dep):
            return notes
        why = ("has no sliding-window layers" if not dep.layout.counts["sliding"] else
               f"keeps its sliding-window layers in the full pool under SGLang {self.release}")
        return [*notes, Note(f"{arg('swa_full_tokens_ratio')} has no effect: {dep.model} {why}, "
                             "and the ratio sizes only the sliding-window pool")]

    def budget_line(self, fit: GpuFit, dep: Deployment) -> str:
        if fit.memory_bytes is None or fit.util is None:
            return super().budget_line(fit, dep)
        mm = (f" - multimodal embedding cache {format_bytes(fit.reserve_bytes)}"
              if fit.reserve_bytes else "")
        return (f"GPU {dep.gpu.name if dep.gpu else 'custom'}: {format_bytes(fit.memory_bytes)} x "
                f"{fit.util:g} (mem_fraction_static) - weights {format_bytes(fit.weights_bytes)}"
                f"{mm} = {format_bytes(fit.available_bytes)} for the KV pool")

    def budget_notes(self, dep: Deployment) -> list[Note]:
        notes = dep.driver_note("comes out of the headroom SGLang keeps outside "
                                f"{arg('mem_fraction_static')} (activations, CUDA graphs)")
        if dep.attn_dp > 1 and dep.memory_bytes is not None and dep.kv_memory is None:
            tp = dep.layout.tp * dep.attn_dp
            notes.append(Note(f"the weights are the model's / {tp * dep.pp} GPUs; with DP "
                              f"attention SGLang splits the attention weights over "
                              f"{dep.layout.tp} GPU{'s' * (dep.layout.tp > 1)} only (each rank "
                              "holds its own), which tokcost does not add: the pool is that "
                              "much smaller (pass SGLang's logged figures to check)"))
        return notes

    def pool_notes(self, report: EngineReport, context: int) -> list[Note]:
        return [*self._draft_notes(report), *self._pool_notes(report, context)]

    def _draft_notes(self, report: EngineReport) -> list[Note]:
        algo, draft = self.speculative_algorithm, report.settings.get("draft_layers")
        if algo is None or not isinstance(draft, int) or not draft:
            return []
        notes = []
        if self.draft_layers is None and algo in ("EAGLE", "EAGLE3") and draft == 1:
            notes.append(Note(f"{algo}'s draft is taken as one attention layer shaped as the "
                              "model's (an EAGLE head's num_hidden_layers); give "
                              f"{arg('draft_layers', 'N')} for another draft"))
        params = report.settings.get("speculative_parameters")
        if isinstance(params, tuple):
            steps, topk, tokens = params
            grown = SPEC_MAX_RUNNING_REQUESTS * (steps * topk + tokens) + 100
            notes.append(Note(
                f"SGLang {self.release} grows the pool past its budget by max_running_requests "
                f"{SPEC_MAX_RUNNING_REQUESTS} x (num_steps {steps} x eagle_topk {topk} + "
                f"num_draft_tokens {tokens}) + 100 = {grown:,} tokens (model_runner.py "
                "init_memory_pool), with the parameters it chooses for this model "
                "(auto_choose_speculative_params); others given to SGLang change that"))
        if self.release < V0_5_14:
            notes.append(Note(f"SGLang {self.release} sizes the pool without the draft: the "
                              f"draft's pool ({draft} layer{'s' * (draft > 1)}, as many tokens) "
                              f"comes out of the memory outside {arg('mem_fraction_static')} "
                              "(from v0.5.14 its layers join the cell)"))
        elif report.settings.get("mem_fraction_static") is not None:
            # scheduler.py init_model_worker (PR #23862): the draft worker loads its weights
            # before init_memory_pools profiles what is left
            notes.append(Note(f"SGLang {self.release} loads the draft's weights before it sizes "
                              "the pool, so they come out of it too; tokcost's weights are the "
                              "target model's only: SGLang's pool is smaller by the draft's "
                              "weights per GPU"))
        return notes

    def _pool_notes(self, report: EngineReport, context: int) -> list[Note]:
        # SGLang starts; its scheduler aborts prompts past max_req_input_len
        if (self.release < V0_5_1 and report.model_max_len is not None
                and context > report.model_max_len):
            return [Note(f"SGLang {self.release} starts past the model's context_length "
                         f"({report.model_max_len:,}) with a warning: "
                         "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN defaulted to True before "
                         "v0.5.1 (configs/model_config.py)")]
        pool = report.cache_tokens
        if report.refuses_to_start or not pool or context <= pool:
            return []
        return [Note(f"SGLang starts, but its pool of {pool:,} tokens cannot hold one "
                     f"{context:,}-token request (prompts are capped at max_total_num_tokens - 1 "
                     f"= {pool - 1:,}); give a smaller context or a larger "
                     f"{arg('mem_fraction_static')}")]


def mamba_state_bytes(layout: KvLayout, release: Release = V0_5_23) -> int:
    """One request's state in one linear layer as SGLang's MambaPool holds it
    (Mamba2CacheParams.mamba_cache_per_req, configs/mamba_utils.py): the conv state in bf16
    (CONV_DTYPE to v0.5.8, SGLANG_MAMBA_CONV_DTYPE's default from v0.5.9) and the SSM state in
    --mamba-ssm-dtype, float32 by default (server_args.py, v0.5.4); from v0.5.9 a config's own
    mamba_ssm_dtype comes first (mamba2_state_dtype(config), nemotron_h.py, qwen3_next.py,
    falcon_h1.py...). Without the split (lightning attention) the whole state counts float32."""
    if not layout.ssm_elements:
        return layout.state_bytes * 2
    ssm = 2 if release >= V0_5_9 and layout.ssm_dtype in ("bf16", "fp16") else 4
    return layout.conv_elements * 2 + layout.ssm_elements * ssm


def _nsa_page(dep: Deployment, release: Release) -> int:
    """DeepSeek-V3.2's NSA pool (NSATokenToKVPool, mem_cache/memory_pool.py, as in v0.5.4 and
    v0.5.6; the indexer counted in profile_max_num_token and in the log from PR #11309, v0.5.4):
    pages of 64 tokens (asserted there); per token and layer the MLA latent, stored fp8 as 512 B +
    4 scales x 4 B + the rope part in bf16 (656 B, tokcost's fp8_ds_mla), and the indexer's fp8
    key with its float32 scale (128 + 4 B). On an AMD GPU v0.5.8 to v0.5.11 take pages of 1
    (server_args.py: "Setting page size to 1 for DeepSeek DSA on ROCm"); from v0.5.12 only where
    aiter's preshuffle paged-MQA kernel is missing (Triton < 3.5:
    aiter_can_use_preshuffle_paged_mqa), so 64 there. Later releases (v0.5.23's
    DSATokenToKVPool) take other page sizes: not modelled."""
    dtype = dep.layout.dtype
    if dtype.bits == 8 and dtype.name != "fp8_ds_mla":
        raise UsageError(f"SGLang stores {dep.model}'s fp8 latent with its scales and a bf16 rope "
                         f"part, 656 B per token and layer (NSATokenToKVPool): give "
                         f"{arg('kv_dtype', 'fp8_ds_mla')}", param="kv_dtype")
    page = 1 if _rocm(dep) and V0_5_8 <= release < V0_5_12 else 64
    if dep.block_size not in (None, page):
        raise UsageError(f"SGLang's NSA pool takes {page}-token pages only here; drop "
                         f"{arg('block_size')}", param="block_size")
    return page


def plan_sglang(layout: KvLayout, *, available: int | None, family: str | None = None,
                swa_full_tokens_ratio: float | None = None,
                release: str | Release = V0_5_23) -> SglangPlan:
    """SGLang's pools for ``layout`` on one stage with token-granular pages."""
    engine = Sglang(swa_full_tokens_ratio=swa_full_tokens_ratio,
                    release=Sglang.release_of(release))
    return engine.pools(Deployment(layout=layout, family=family), available)

