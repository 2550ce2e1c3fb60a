"""vLLM v1's KV cache manager, reproduced (docs/kvmem.md) from vllm-project/vllm v0.11 on:
pages ``vllm/v1/kv_cache_interface.py``; groups, num_blocks, the start-up check and the log
``vllm/v1/core/kv_cache_utils.py``; block sizes ``vllm/platforms/cuda.py``,
``vllm/model_executor/models/config.py``; tokens per step ``vllm/engine/arg_utils.py``. What
changed between releases is in ``RULES`` (``--engine vllm@0.20``), each rule with its PR."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, ClassVar, Literal

from tokcost.errors import Note, UsageError, arg
from tokcost.memory.engines.base import (
    Deployment,
    Engine,
    EngineGroup,
    EngineReport,
    Plan,
    Release,
    largest,
)
from tokcost.memory.fit import DEFAULT_BLOCK, GiB, GpuFit
from tokcost.memory.kv import FP8_DS_MLA_BYTES, KV_DTYPES, KvLayout, kv_dtype, pp_stages
from tokcost.units import format_bytes, parse_count

if TYPE_CHECKING:
    from collections.abc import Callable

    from tokcost.catalog.schema import LayerKind
    from tokcost.memory.request import KvRequest

__all__ = ["Vllm", "VllmPlan", "default_max_num_batched_tokens", "plan_vllm"]

OLDEST = Release(0, 11)  # the v1 engine with the hybrid KV cache manager, as modelled
# v0.21 (PR #38284, vllm/config/cache.py and vllm/envs.py): VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS
# (PR #30515, off until then) on by default, so the CUDA graphs' estimated memory is taken
# before the KV cache is sized, and gpu_memory_utilization's default rises from 0.9 to 0.92 to
# make up for it; and "GPU KV cache size" is logged as int(concurrency x max_model_len)
# (kv_cache_utils.py get_kv_cache_capacity; issues #40691, #43308), where v0.20 logged
# num_blocks // groups x the smallest block.
V0_21 = Release(0, 21)
UTIL_BEFORE_V0_21, UTIL_FROM_V0_21 = 0.9, 0.92

# Releases v0.22 to v0.34, each rule read in that release's sdist against the one before (the
# PyPI sdists do not name PRs; the files are cited, and the PR where the issue tracker has it):
# - v0.22: the start-up refusal's words (kv_cache_utils.py _check_enough_kv_cache_memory):
#   "the model's max seq len" (was "models's"), and "gpu_memory_utilization" is said to control
#   CPU memory on the CPU backend too.
# - v0.26 (PR #47728, merged 2026-07-06: blocks leave the window on the processed-token
#   basis): sliding-window and chunked-local groups reserve for every batch in flight:
#   window - 1 (a chunk) + max_in_flight_tokens, VllmConfig.max_in_flight_tokens =
#   max_concurrent_batches x max_num_batched_tokens (vllm/config/vllm.py; kv_cache_interface.py
#   SlidingWindowSpec/ChunkedLocalAttentionSpec.max_admission_blocks_per_request); with async
#   scheduling (on by default) the V2 model runner keeps pp + 1 batches in flight, 2 on one
#   stage (max_concurrent_batches). The V1 runner keeps pp on more stages; v0.26 picks it for
#   MoE and Mamba-hybrid models (config/vllm.py _is_default_v2_model_runner_model), later
#   releases only where V2 lacks a feature, v0.34 has none: tokcost takes the V2 runner's.
#   v0.25 reserved one max_num_batched_tokens.
# - v0.28: GPUs of 160 GiB or more get max_num_batched_tokens 16,384 for vllm serve too
#   (engine/arg_utils.py get_batch_defaults), and the capacity is logged on one line
#   ("GPU KV cache size: N tokens, Maximum concurrency for L tokens per request: C x",
#   kv_cache_utils.py update_kv_cache_capacity).
# - v0.29 (the change PR #47272 describes; the v0.25 to v0.28 sdists lack it): the start-up
#   check plans against the blocks left after the null block BlockPool
#   holds back: available - one block's bytes (kv_cache_utils.py get_kv_cache_configs and
#   check_enough_kv_cache_memory); num_blocks itself still counts it.
# - v0.33: GB10 (DGX Spark, compute capability 12.1) stays on the small tier of batched tokens
#   however much memory it has (arg_utils.py get_batch_defaults).
# - v0.34: the extensible KV cache (PR #56492, the product of #47363's demo;
#   vllm/v1/worker/extensible_kv_cache.py, config/cache.py
#   enable_extensible_kv_cache, on by default on CUDA and ROCm unless --kv-cache-memory is
#   given): gpu_memory_utilization defaults to 1.0 (resolved_gpu_memory_utilization; 0.92
#   without it), and the cache is sized after warmup: measure_kv_cache_bytes keeps
#   min(requested - used, headroom - margin) - transient peak, margin = max(1 GiB,
#   0.75 x transient peak) (KV_CACHE_MARGIN_FLOOR_BYTES, KV_CACHE_MARGIN_FRACTION; ROCm's
#   floor, for the CDNA GPUs, is 3 GiB). With tokcost's reserve as that peak and the weights as
#   what is used: min(ceil(memory x util), memory - margin) - weights - reserve. Blocks are
#   committed in 2 MiB granules per layer segment (blocks_within, physical_bytes_for; utils/
#   extensible_tensor.py _MIN_GRANULARITY), logged as "Memory after warmup"; after warmup the
#   one-request check runs again on (num_blocks - 1) blocks (kv_cache_planning.py
#   shrink_kv_cache_configs). CacheConfig.DEFAULT_BLOCK_SIZE is 64 (16 to v0.33).
V0_22, V0_26, V0_27, V0_28, V0_29, V0_33, V0_34 = (
    Release(0, n) for n in (22, 26, 27, 28, 29, 33, 34))
UTIL_EXTENSIBLE = 1.0
MARGIN_FLOOR, MARGIN_FRACTION, GRANULE = GiB, 0.75, 2 << 20
BLOCK_V0_34 = 64

SERVE_BATCHED_TOKENS_HUGE = 16384  # vllm serve, >= 160 GiB, from v0.28
SERVE_BATCHED_TOKENS_LARGE = 8192  # vllm serve, >= 70 GiB and not an A100
SERVE_BATCHED_TOKENS_SMALL = 2048

MAX_SPECULATIVE = 64  # speculative tokens or drafter layers tokcost takes

SpecKind = Literal["full", "sliding", "chunked", "mla", "mamba"]


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def default_max_num_batched_tokens(gpu_name: str | None, memory_bytes: int | None,
                                   release: Release = V0_34) -> tuple[int, str]:
    """``vllm serve``'s default tokens per scheduler step, and why (arg_utils.py)."""
    huge = release >= V0_28
    if memory_bytes is None:
        return SERVE_BATCHED_TOKENS_LARGE, (
            "vllm serve default for GPUs of 70 GiB or more but A100; no GPU given, smaller "
            f"GPUs get {SERVE_BATCHED_TOKENS_SMALL:,}"
            + (f", 160 GiB or more {SERVE_BATCHED_TOKENS_HUGE:,}" if huge else ""))
    if huge and memory_bytes >= 160 * GiB:
        return SERVE_BATCHED_TOKENS_HUGE, (
            f"vllm serve default from v0.28: {memory_bytes / GiB:.1f} GiB >= 160 GiB")
    name = (gpu_name or "").lower()
    a100 = "a100" in name
    gb10 = release >= V0_33 and ("gb10" in name or "spark" in name)
    if memory_bytes >= 70 * GiB and not a100 and not gb10:
        return SERVE_BATCHED_TOKENS_LARGE, (
            f"vllm serve default: {memory_bytes / GiB:.1f} GiB >= 70 GiB and not an A100")
    why = ("a GB10 (the small tier from v0.33)" if gb10 and not a100 else "an A100" if a100
           else f"{memory_bytes / GiB:.1f} GiB < 70 GiB")
    return SERVE_BATCHED_TOKENS_SMALL, f"vllm serve default: {why}"


@dataclass(frozen=True)
class Spec:
    """One layer's ``KVCacheSpec``: what a block of that layer holds."""

    kind: SpecKind
    block_size: int
    page_bytes: int
    window: int | None = None

    def max_bytes(self, max_model_len: int, max_num_batched_tokens: int, dcp: int = 1,
                  states: int = 1) -> int:
        """``max_memory_usage_bytes``: the most one request of ``max_model_len`` needs; with
        decode context parallel each GPU of a DCP group holds every ``dcp``-th token
        (``AttentionSpec.max_memory_usage_bytes``, PR #23734). ``max_num_batched_tokens``: the
        tokens in flight a local (sliding, chunked) group reserves for (from v0.26 every
        batch in flight's, ``VllmPlan.in_flight_tokens``)."""
        if self.kind == "mamba":  # the plan counts them by mode and release (see V0_28)
            return self.page_bytes * states
        if self.kind == "sliding":
            assert self.window is not None
            tokens = min(self.window - 1 + max_num_batched_tokens, max_model_len)
            return (cdiv(tokens, self.block_size) + 1) * self.page_bytes
        if self.kind == "chunked":  # ChunkedLocalAttentionSpec: one chunk + the step, no +1
            # (Llama-4 gets the hybrid manager: VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE
            # defaults to 1 since PR #29627, vllm/envs.py; 0 disables it, --no-hybrid-manager)
            assert self.window is not None
            tokens = min(self.window + max_num_batched_tokens, max_model_len)
            return cdiv(tokens, self.block_size) * self.page_bytes
        return cdiv(cdiv(max_model_len, dcp), self.block_size) * self.page_bytes


@dataclass(frozen=True)
class Group:
    spec: Spec
    layers: tuple[int, ...]


# Block-size rules by release (vllm/platforms/cuda.py check_and_update_config, and
# HybridAttentionMambaModelConfig in vllm/model_executor/models/config.py), dated by the merge
# commits on vllm-project/vllm main; the release is the first whose branch followed the merge:
# - FlashMLA on Hopper forces 64-token blocks: PR #14451 (2025-03-08, v0.8), to v0.17.
# - DeepSeek-V3.2 (config index_topk) forces 64 for FlashMLASparse on every GPU: PR #25896
#   (2025-09-30, shipped with V3.2 support in v0.11).
# - Blackwell's default MLA backend: CUTLASS MLA (128-token blocks, PR #21626, 2025-07-27) until
#   PR #32615 (2026-01-19, after v0.14's branch) made it FlashInfer MLA (64 unless the block is 32
#   or a multiple of 64): v0.15 to v0.17.
# - FlashInfer on Blackwell has no 16-token blocks for head_dim 256: a Mamba hybrid's attention
#   block grows in steps of 32 there, PR #27994 (2025-11-05): v0.12 to v0.17 (v0.11.1/.2 are read
#   as v0.11, which did not have it); v0.18's HybridAttentionMambaModelConfig no longer has the
#   branch (removed by PR #36987, 2026-03-16, as read before; the sdists pin the release), so
#   steps of 16 again.
# - A Mamba hybrid's attention block steps from v0.20 (PR #37467, merged after the v0.19 branch):
#   Platform._align_hybrid_block_size (vllm/platforms/interface.py) runs once the backend is
#   known and steps in max(the backend's smallest kernel block, the block already chosen), so a
#   given --block-size of 64 raises in steps of 64; before it the config stepped in 16 (64 for
#   MLA: 128 only when CUTLASS MLA was asked for by name, vllm/model_executor/models/config.py).
# From v0.18 (PR #35122, 2026-03-09, after the v0.17 branch point 097eb544e of 2026-03-04) none
# of the forcing above is left: vLLM takes the block from the attention backend it selects,
# ``_backend_block`` below.
V0_12, V0_13, V0_14, V0_15 = Release(0, 12), Release(0, 13), Release(0, 14), Release(0, 15)
V0_18, V0_20 = Release(0, 18), Release(0, 20)

# Chunked local attention (Llama-4) and the hybrid KV cache manager, by release:
# - v0.11 to v0.13 turn the hybrid manager off for a model with attention_chunk_size unless
#   VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1 (default "0", vllm/envs.py; the check in
#   vllm/config/vllm.py __post_init__, vllm/config/__init__.py in v0.11; PR #21761): every chunked
#   layer is then paged as a full one (unify_hybrid_kv_cache_specs). From v0.14 the variable
#   defaults to "1" (PR #29627), so Llama-4 keeps the hybrid manager.
# - v0.11 to v0.13 run the start-up check (check_enough_kv_cache_memory, estimate_max_model_len
#   in vllm/v1/core/kv_cache_utils.py) on each layer's own spec, summed over the worker's layers,
#   before get_kv_cache_groups unifies or pads them; from v0.14 it runs on the groups (PR #29431,
#   _max_memory_usage_bytes_from_groups). So v0.12 starts Llama-4 with the manager off at a
#   max_model_len its pool cannot hold (the chunked layers counted as chunks) and logs a
#   concurrency under 1x.


def log_gib(size: int, release: Release) -> str:
    """GiB as vLLM ``release`` logs them: "%.2f" to v0.13; from v0.14 ``format_gib``
    (vllm/utils/mem_utils.py), str(round(x, 2)), so 22.5 and 5.0, not 22.50 and 5.00."""
    return f"{size / GiB:.2f}" if release < V0_14 else str(round(size / GiB, 2))

# --kv-cache-dtype-skip-layers (vllm/config/cache.py kv_cache_dtype_skip_layers): PR #33695,
# merged 2026-03-27, after v0.18.0 was out (see DTYPE_SINCE). Attention.__init__
# (vllm/model_executor/layers/attention/attention.py) caches a layer with "auto", the model's
# dtype, when its index (extract_layer_index) is listed or when it has a sliding window and
# "sliding_window" is; the others keep --kv-cache-dtype. Pages that do not divide are padded
# from v0.24 and skip layers raise the block from v0.25 (align_skipped, below _hybrid_step).
# MLA layers read the list from PR #47309 (commit 0becb7486, merged 2026-07-16):
# MLAAttention.__init__ (vllm/model_executor/layers/attention/mla_attention.py) caches a layer
# whose index is listed with "auto" (index only: MLA layers ignore "sliding_window"), and its
# get_kv_cache_spec passes that per-layer dtype as cache_dtype_str, so a skipped layer is paged
# as (kv_lora_rank + qk_rope_head_dim) x the model dtype's bytes (MLAAttentionSpec
# .real_page_size_bytes, vllm/v1/kv_cache_interface.py), also under fp8_ds_mla; the indexer cache
# (DeepSeek-V3.2) is another layer and keeps its own. The specs stay MLAAttentionSpec with one
# block, so they make one UniformTypeKVCacheSpecs group as attention layers do; the block is the
# backend's for --kv-cache-dtype, raised by align_skipped. v0.26's mla_attention.py is the first
# to read kv_cache_dtype_skip_layers (v0.25's does not).
V0_19 = Release(0, 19)
SKIP_SLIDING = "sliding_window"

# V heads narrower than K's (MiMo-V2-Flash: K 192, V 128, v_head_dim), by release: up to v0.19
# MiMoV2Attention.forward pads V with zeros to head_dim before the Attention layer, built without
# head_size_v, so each cached token holds 2 x head_dim per head (the spec's head_size_v defaults
# to head_size, vllm/v1/kv_cache_interface.py; mimo_v2_flash.py of v0.14 to v0.19). From v0.20
# (PR #40045, merged 2026-04-16) it passes head_size_v=v_head_dim and the
# FlashAttentionDiffKVBackend, and V is cached at its own 128. MiMo-V2 is the only non-MLA model
# whose config gives a v_head_dim tokcost reads (MLA's is read apart; openPangu's sink attention
# passes head_size_v already in v0.18, from v_channels).
V_OWN_SIZE_FROM = V0_20

# Prefix caching on a linear (Mamba-family) hybrid: vLLM's mamba_cache_mode, by release
# (MambaModelConfig in vllm/model_executor/models/config.py; MambaSpec.max_memory_usage_bytes in
# vllm/v1/kv_cache_interface.py says how many state blocks a request holds in each linear group):
# - PR #30877 (merged 2026-01-23) added the modes: the v0.15.0 wheel and every later release
#   have them (v0.14.0 has none); before v0.15 prefix caching on a hybrid is refused here (vLLM
#   had an older Mamba2-only scheme, PR #25752, not modelled). With prefix
#   caching a model with SupportsMambaPrefixCaching (the Mamba1/Mamba2 families: Jamba, Mamba,
#   Mamba2, NemotronH, Zamba2, GraniteMoeHybrid, FalconH1) gets "all", every other hybrid
#   (Gated DeltaNet: Qwen3-Next, Qwen3.5/3.6; lightning attention...) "align".
#   "none": 1 + num_speculative_blocks state blocks; "align": 2 + num_speculative_blocks;
#   "all": cdiv(max_model_len, block), the attention block raised to a multiple of
#   lcm(mamba chunk, kernel block) (the chunk: mamba_chunk_size or chunk_size, else 2048,
#   ModelConfig.get_mamba_chunk_size), and the state block = that block.
# - "all" adds num_speculative_blocks from PR #41233 (merged 2026-05, "all" + spec decoding),
#   in the v0.22.0 sdist (v0.21.0 lacks it); tokcost models speculative decoding on Gated
#   DeltaNet hybrids only, so it never meets that case.
# - v0.28 (PR #50991, merged 2026-08-04): vllm serve turns prefix caching on by default for
#   hybrid models (EngineArgs: is_prefix_caching_supported, no longer "and not is_hybrid"),
#   and the default mode is "align" for every model ("all" only if asked for).
# - v0.32: Mamba2 mixers (mamba_mixer2.py get_kv_cache_spec) export a prefill checkpoint:
#   num_prefill_checkpoint_blocks 1, counted in "align" (2 + spec + 1); PR #57329 ("[Mamba2]
#   Enable internal prefill checkpoints"), first in the v0.32.0 sdist.
# - v0.33: Gated DeltaNet layers on FlashInfer's GDN prefill (the default on Hopper; Blackwell
#   only with CUDA 13, not modelled) do the same (qwen_gdn_linear_attn.py), and the attention
#   block becomes a multiple of lcm(kernel block, 64) (FLASHINFER_GDN_CHECKPOINT_ALIGNMENT,
#   vllm/v1/attention/backends/gdn_attn.py; platforms/interface.py _align_hybrid_block_size).
# Speculative decoding (MTP, EAGLE, n-gram): num_speculative_blocks = num_speculative_tokens
# (vllm/model_executor/layers/mamba/abstract.py get_kv_cache_spec), counted in the state blocks
# from v0.15 (PR #30877; v0.11 to v0.14 reserve one state per request whatever it is); a GDN
# conv state keeps conv_kernel_size - 1 + num_spec rows (mamba_utils.py
# gated_delta_net_state_shape, since Qwen3-Next's support, v0.11), which can raise the
# attention block; the drafter's attention layers (an MTP head: num_nextn_predict_layers,
# mtp_num_hidden_layers) get KV cache specs of their own and join the groups
# (gpu_model_runner.py get_kv_cache_spec walks every Attention layer, the drafter's included).
V0_32 = Release(0, 32)
ALIGN_FAMILIES = ("qwen3_next", "qwen3_5")  # Gated DeltaNet, by catalog family or model_type
MambaMode = Literal["none", "align", "all"]
GDN_CHECKPOINT_ALIGNMENT = 64
MAMBA1_CHUNK = 2048  # get_mamba_chunk_size's default


# --kv-cache-dtype values newer than v0.11, with the first release that has each: read from the
# CacheDType literal (vllm/config/cache.py) of every release's sdist. fp8, fp8_e4m3 and fp8_e5m2
# predate v0.11; fp8_ds_mla came with DeepSeek-V3.2 (PR #25896, v0.11: there vLLM turns an fp8
# or "auto" cache into it, vllm/model_executor/models/config.py DeepseekV32ForCausalLM, and the
# literal lists it from v0.12). The per-token-head layouts and nvfp4 are first listed in v0.20
# (v0.19's literal ends at fp8_ds_mla), int4_per_token_head in v0.25 (v0.24's lists int8 and fp8
# only).
DTYPE_SINCE: dict[str, tuple[Release, str]] = {
    "fp8_per_token_head": (Release(0, 20), "PR #38378"),
    "int8_per_token_head": (Release(0, 20), "PR #38378"),
    "nvfp4": (Release(0, 20), "PR #37332, with PR #40177"),
    "int4_per_token_head": (Release(0, 25), "PR #40835"),
}


def check_dtype(name: str, release: Release) -> None:
    """Refuse a KV cache dtype ``release`` did not have, naming the first release with it."""
    since = DTYPE_SINCE.get(name)
    if since is None or release >= since[0]:
        return
    first, pr = since
    raise UsageError(f"vLLM {release} has no {name} KV cache: it is a vLLM cache dtype from "
                     f"{first} ({pr}); use {arg('engine', f'vllm@{first.major}.{first.minor}')} "
                     "or later", param="kv_dtype", related=("engine",))


def _mla_block(block: int, where: str, release: Release, sparse: bool) -> tuple[int, str] | None:
    """The MLA block vLLM ``release`` (before v0.18) forces on ``where``, and why; None: it keeps
    ``block``."""
    if sparse:
        return (None if block == 64 else (64, "64: vLLM forces 64-token blocks for DeepSeek-V3.2's"
                " FlashMLASparse backend (vllm/platforms/cuda.py, PR #25896)"))
    # v0.11 forces unless the block equals the kernel's (block_size != 64, != 128); v0.12 on keeps
    # a multiple of it (% 64, % 128: vllm/platforms/cuda.py check_and_update_config)
    def kept(n: int) -> bool:
        return block == n if release < V0_12 else block % n == 0

    if where == "hopper":
        return None if kept(64) else (
            64, "64: vLLM forces 64-token blocks for FlashMLA on Hopper (vllm/platforms/cuda.py, "
            "PR #14451; to v0.17)")
    if where != "blackwell":
        return None
    if release >= V0_15:
        return None if block == 32 or block % 64 == 0 else (
            64, "64: vLLM forces 64-token blocks for FlashInfer MLA, Blackwell's default MLA "
            "backend from v0.15 (vllm/platforms/cuda.py, PR #32615; to v0.17)")
    return None if kept(128) else (
        128, "128: vLLM forces 128-token blocks for CUTLASS MLA, Blackwell's default MLA backend"
        " to v0.14 (PR #21626; FlashInfer MLA from v0.15, PR #32615) (vllm/platforms/cuda.py)")


# From v0.18 (PR #35122) vllm/platforms/interface.py update_block_size_for_backend keeps a given
# --block-size (the selector then passes over backends whose kernels cannot take it, with a
# warning); else the block is 16 if the selected backend's kernels take 16, else the smallest of
# its kernel blocks (AttentionBackend.get_preferred_block_size, vllm/v1/attention/backend.py).
# The backend is the first valid one in _get_backend_priorities (vllm/platforms/cuda.py), read
# at PR #35122's merge and at 193ce8812 (2026-05-25, v0.21's time); kernel blocks from each
# backend's get_supported_kernel_block_sizes (vllm/v1/attention/backends/):
# - no MLA: FLASH_ATTN (MultipleOf(16)) first, FLASHINFER ([16, 32, 64]) first on Blackwell: 16.
# - MLA on Hopper: FLASH_ATTN_MLA first (PR #24794), MultipleOf(16), but kv cache dtypes
#   auto/bfloat16/float16 only (mla/flashattn_mla.py): 16; an fp8 cache falls to FLASHMLA, [64]
#   (mla/flashmla.py): 64.
# - MLA on Blackwell (SM 10.x): FLASHINFER_MLA, [32, 64] (mla/flashinfer_mla.py): 32.
# - MLA on other GPUs: TRITON_MLA, no kernel limit (MultipleOf(16) later): 16.
# - DeepSeek-V3.2 (sparse), _sparse_block below: FLASHMLA_SPARSE, [64] (mla/flashmla_sparse.py),
#   on Hopper (from v0.30 FLASH_ATTN_MLA_SPARSE, MultipleOf(64), comes first for 16-bit caches,
#   PR #46189: 64 too); on Blackwell the sparse backends' order depends on the heads per GPU and
#   the cache dtype.
def _backend_block(layout: KvLayout, dep: Deployment, where: str, block: int,
                   release: Release) -> tuple[int, str]:
    """The block vLLM v0.18 on takes from the backend it selects (no --block-size given)."""
    src = "vllm/platforms/interface.py update_block_size_for_backend, PR #35122"
    if not layout.counts["mla"]:
        return block, f"{block} (vLLM's default)"  # FlashAttention and FlashInfer take 16
    if layout.indexer_bytes > 0:
        return _sparse_block(layout, dep, where, block, release, src)
    if where == "blackwell":  # FlashInfer MLA: kernel blocks [32, 64]
        if block in (32, 64):
            return block, (f"{block} (vLLM's default): FlashInfer MLA, Blackwell's MLA backend, "
                           f"takes it ({src})")
        return 32, f"32: FlashInfer MLA's smallest kernel block, Blackwell's MLA backend ({src})"
    if where != "hopper":
        return block, f"{block} (vLLM's default); Triton MLA on {where} keeps it"
    if layout.dtype.bits == 16:
        return block, (f"{block} (vLLM's default): FlashAttention MLA, Hopper's first MLA backend "
                       f"for a 16-bit cache, takes it ({src})")
    return 64, (f"64: FlashMLA's kernel block; FlashAttention MLA, Hopper's first MLA backend, "
                f"takes no {layout.dtype.name} cache ({src})")


# DeepSeek-V3.2 on Blackwell (SM 10.x), _get_backend_priorities in vllm/platforms/cuda.py; num_heads
# is the MLA layer's, the model's query heads // tp:
# - v0.18: FLASHINFER_MLA_SPARSE before FLASHMLA_SPARSE at 16 heads per GPU or fewer, after it
#   above (PR #33451 added the FlashInfer backend);
# - v0.19 on: FlashInfer first for any quantized cache too (PR #37252, "Set Flashinfer sparse MLA
#   as default backend for FP8 kv cache"), whatever the heads;
# - v0.33 on: at 16 heads or fewer a bf16 cache tries FLASH_ATTN_MLA_SPARSE_FA4 first
#   (mla/flashattn_mla_sparse.py: kv cache auto/bfloat16 only, 8, 16, 32, 64 or 128 query heads
#   x dcp, and a 512 + 64 latent).
# FlashInfer MLA sparse (mla/flashinfer_mla_sparse.py) takes auto/float16/bfloat16/fp8/fp8_e4m3
# caches, kernel blocks [32, 64] (MultipleOf(32) by v0.33): vLLM's default 16 is not one, so 32.
# FA4 sparse and FlashMLA sparse: multiples of 64 / [64]: 64. FlashMLA sparse stores an fp8 cache
# as fp8_ds_mla (mla_attention.py converts it after selecting the backend).
SPARSE_FI_DTYPES = ("bf16", "fp16", "fp8", "fp8_e4m3")


def _sparse_block(layout: KvLayout, dep: Deployment, where: str, block: int, release: Release,
                  src: str) -> tuple[int, str]:
    """DeepSeek-V3.2's block from the sparse MLA backend vLLM ``release`` selects."""
    name = layout.dtype.name
    flashmla = (64, f"64: FlashMLASparse's kernel block, DeepSeek-V3.2's backend ({src})"
                + ("; vLLM stores an fp8 cache there as fp8_ds_mla" if name in ("fp8", "fp8_e4m3")
                   else ""))
    if where != "blackwell":
        return flashmla
    heads = dep.heads_per_gpu
    few = heads is not None and heads <= 16
    if release >= V0_33 and name == "bf16" and few and heads is not None \
            and heads * dep.dcp in ((8, 16, 32, 64) if dep.dcp > 1 else (8, 16)) \
            and layout.token_bytes["mla"] - layout.indexer_bytes == 2 * (512 + 64):
        return 64, (f"64: FA4 sparse MLA's kernel block (multiples of 64), Blackwell's first "
                    f"sparse backend for a bf16 cache at {heads} heads per GPU from v0.33 ({src})")
    quantized = name not in ("bf16", "fp16")
    if name in SPARSE_FI_DTYPES and (few or (quantized and release >= V0_19)):
        why = (f"{heads} heads per GPU, 16 or fewer" if few else
               "an fp8 cache, from v0.19 (PR #37252)")
        takes = block % 32 == 0 and (block in (32, 64) or release >= V0_33)  # MultipleOf(32)
        return (block, f"{block} (vLLM's default), which FlashInfer MLA sparse takes; vLLM puts "
                f"it first on Blackwell for {why} ({src})") if takes else (
            32, f"32: FlashInfer MLA sparse's smallest kernel block; vLLM puts it first on "
                f"Blackwell for {why} ({src})")
    if heads is None and name in SPARSE_FI_DTYPES:
        return flashmla[0], flashmla[1] + (
            "; the model's attention heads are not known: at 16 per GPU or fewer vLLM would take "
            "FlashInfer MLA sparse, 32")
    return flashmla


def _ds_mla(dep: Deployment, release: Release) -> Deployment:
    """DeepSeek-V3.2's fp8 cache is fp8_ds_mla where vLLM makes it so: v0.11 to v0.17
    (DeepseekV32ForCausalLM.verify_and_update_config, vllm/model_executor/models/config.py,
    PR #25896, turns any fp8* cache dtype into it, and v0.11 "auto" too) and, from v0.18,
    wherever FlashMLASparse is the backend (MLAAttention.__init__ in
    vllm/model_executor/layers/attention/mla_attention.py converts an fp8* dtype after selecting
    it); FlashInfer MLA sparse keeps a plain fp8 cache. ``dep`` with its MLA layers laid out so
    (656 B a token a layer, plus the indexer's own bytes) and the dtype given kept."""
    layout = dep.layout
    name = layout.dtype.name
    auto = dep.kv_dtype_given == "auto" and release < V0_12  # v0.11 turns "auto" too
    if not layout.indexer_bytes or name == "fp8_ds_mla" or not (name.startswith("fp8") or auto):
        return dep
    where = (dep.gpu.architecture if dep.gpu is not None else None) or "hopper"
    if release >= V0_18 and where == "blackwell" and name in SPARSE_FI_DTYPES:
        heads = dep.heads_per_gpu
        if release >= V0_19 or (heads is not None and heads <= 16):
            return dep
    latent = layout.token_bytes["mla"] - layout.indexer_bytes
    if latent != layout.dtype.vector_bytes(512 + 64):
        raise UsageError(f"vLLM {release} stores {dep.model}'s {name} cache as fp8_ds_mla, whose "
                         "656-byte layout is for a 512 + 64 latent, and this model's is not; "
                         f"give {arg('kv_dtype', 'bf16')}", param="kv_dtype")
    mla = replace(layout, dtype=KV_DTYPES["fp8_ds_mla"],
                  token_bytes={**layout.token_bytes, "mla": FP8_DS_MLA_BYTES
                               + layout.indexer_bytes})
    return replace(dep, layout=mla, kv_dtype_given=dep.kv_dtype_given or name)


def resolve_block_size(layout: KvLayout, dep: Deployment, release: Release = V0_21, *,
                       mamba_mode: MambaMode = "none", checkpoint: int = 1) -> tuple[int, Note]:
    """The attention block size vLLM ``release`` ends up with, and why (``mamba_mode`` and a
    prefill ``checkpoint`` grid: a linear hybrid's prefix caching; see V0_28)."""
    kinds = layout.counts
    block = dep.block_size if dep.block_size is not None else DEFAULT_BLOCK
    given = f"{arg('block_size')} given" if dep.block_size is not None else "vLLM's default"
    reason = f"{block} ({given})"
    arch = dep.gpu.architecture if dep.gpu is not None else None
    where = arch or "hopper"
    assumed = "" if arch else " (no GPU architecture given: Hopper assumed)"
    if release >= V0_18 and dep.block_size is None:
        if release >= V0_34:
            block = BLOCK_V0_34
        block, reason = _backend_block(layout, dep, where, block, release)
        if release >= V0_34 and block == BLOCK_V0_34:
            # v0.34: CacheConfig.DEFAULT_BLOCK_SIZE 64 (vllm/config/cache.py); a backend keeps
            # the default when its kernels take it (get_preferred_block_size): FlashAttention
            # (MultipleOf(16)), FlashInfer ([16, 32, 64]), FlashAttention MLA (MultipleOf(16)),
            # FlashInfer MLA ([32, 64]), FlashMLA and FlashMLASparse ([64]), Triton MLA: all 64.
            reason = Note(
                f"{BLOCK_V0_34}: vLLM's default from v0.34 (DEFAULT_BLOCK_SIZE, "
                "vllm/config/cache.py; 16 before), which the attention backend it selects takes")
        if kinds["mla"]:
            reason += assumed
    elif release >= V0_18:
        if kinds["mla"]:
            reason += ("; from v0.18 vLLM keeps it and picks a backend whose kernels take it "
                       "(PR #35122)")
    elif kinds["mla"]:
        forced = _mla_block(block, where, release, layout.indexer_bytes > 0)
        if forced is None and where not in ("hopper", "blackwell"):
            reason += f"; Triton MLA on {where} keeps it"
        elif forced is not None:
            block, reason = forced
            reason += assumed
    attn = next((layout.token_bytes[k] for k in ("mla", "full", "sliding") if kinds[k]), 0)
    if (block == 16 and where == "blackwell" and dep.head_dim == 256 and not kinds["mla"]
            and not kinds["linear"] and V0_12 <= release < V0_18):
        # FlashInferMetadataBuilder.__init__ (vllm/v1/attention/backends/flashinfer.py) asserts
        # block_size != 16 for head size 256 on SM 10.x, PR #27994; FlashInfer is Blackwell's first
        # backend (vllm/platforms/cuda.py); v0.18's flashinfer.py has no such assert.
        raise UsageError(f"vLLM {release} stops at start-up on Blackwell: FlashInfer asserts "
                         "against 16-token blocks for head_dim 256 (v0.12 to v0.17, PR #27994); "
                         f"give {arg('block_size', 32)} or 64", param="block_size",
                         related=("engine",))
    if kinds["linear"] and attn:
        align, how = _hybrid_step(layout, dep, where, block, release)
        align = math.lcm(align, checkpoint)
        needed = align * cdiv(layout.state_bytes, align * attn)
        if checkpoint > 1:
            how += (f"; lcm with FlashInfer GDN's prefill checkpoint grid of {checkpoint} on "
                    f"Hopper, from v0.33{assumed}")
        steps = f"in steps of {align}"
        if mamba_mode == "all":
            chunk = layout.mamba_chunk or MAMBA1_CHUNK
            align = math.lcm(chunk, align)
            needed = align * cdiv(cdiv(layout.state_bytes, attn), align)
            steps = (f"in steps of {align}, lcm of the Mamba chunk {chunk} and the kernel block "
                     "(prefix caching, mamba_cache_mode all)")
        if block < needed:
            block = needed
            reason = (f"{needed}: vLLM raises the attention block until its page ({needed} x "
                      f"{attn:,} B) covers the {layout.state_bytes:,} B linear-attention state, "
                      f"{steps} ({how})")
    return block, Note(reason)


def _hybrid_step(layout: KvLayout, dep: Deployment, where: str, block: int,
                 release: Release) -> tuple[int, str]:
    """The step in which vLLM ``release`` raises a Mamba hybrid's attention block, and where."""
    if release >= V0_27 and layout.counts["mla"]:  # _align_hybrid_block_size: TRTLLM and
        # FlashInfer MLA decode kernels want the kernel blocks aligned to 128 / kernel block,
        # so an MLA hybrid's block is a multiple of 128 on every GPU (v0.27 on)
        return max(128, block), ("a multiple of 128 for an MLA hybrid from v0.27: "
                                 "vllm/platforms/interface.py _align_hybrid_block_size")
    if release >= V0_20:  # PR #37467: max(smallest kernel block, block); FlashAttention,
        # FlashInfer and Triton MLA take 16; an MLA backend that takes no 16 set ``block`` to
        # its smallest kernel block already (_backend_block), or a given block is kept.
        return max(16, block), ("the larger of the backend's smallest kernel block and the "
                                "block: vllm/platforms/interface.py, PR #37467")
    src = "vllm/model_executor/models/config.py"
    if layout.counts["mla"]:  # CUTLASS MLA, Blackwell's default to v0.14, forces 128 after it
        return (128, src) if where == "blackwell" and release < V0_15 else (64, src)
    if where == "blackwell" and dep.head_dim == 256 and V0_12 <= release < V0_18:
        return 32, (f"{src}: FlashInfer takes no 16-token blocks for head_dim 256 on "
                    "Blackwell, PR #27994")
    return 16, src


# Pages that do not divide, and layers kept in the model dtype (--kv-cache-dtype-skip-layers):
# - v0.24 (PR #45181, "Support mixed KV page sizes"): unify_kv_cache_spec_page_size
#   (vllm/v1/core/kv_cache_utils.py) pads a smaller attention page that does not divide the
#   largest one up to it, keeping its block, where the backend reads pages by the block stride
#   (AttentionSpec.indexes_kv_by_block_stride: FlashAttention, FlashInfer and Triton do); from
#   v0.29 every non-MLA attention layer is padded so; MLA pages are not (vLLM refuses).
# - v0.25 (PR #42890, "Support nvfp4 kv with kv-cache-dtype-skip-layers sliding_window"):
#   Platform._align_heterogeneous_kv_block_size (vllm/platforms/interface.py) runs whenever
#   skip layers are set. With p and s a token's page in the cache dtype and in the model's
#   (FullAttentionSpec of the model's heads; p == s leaves all as is) and k the backend's
#   smallest kernel block, the block becomes max(k, block) x cdiv(s x k, max(k, block) x p) if
#   that is larger, and block x p is the shared page every sliding layer pads to; and from
#   v0.25 a sliding layer picks its own block (Attention.get_kv_cache_spec,
#   vllm/model_executor/layers/attention/attention.py, _largest_kernel_block_within): the
#   largest kernel block whose page fits the shared page (none set: the smallest kernel block,
#   unify then scales it); from v0.30 a MultipleOf(n) backend offers the largest multiple of n
#   that fits, and without a shared page the budget is its page at the primary block.
V0_24, V0_25, V0_30 = Release(0, 24), Release(0, 25), Release(0, 30)


def _kernel_blocks(layout: KvLayout, dep: Deployment, where: str) -> tuple[tuple[int, ...], int]:
    """The non-MLA backend's kernel blocks: its fixed sizes and its MultipleOf base (0: none).
    FlashInfer (Blackwell's first, and the one with nvfp4: flashinfer.py) lists 16, 32, 64, and
    128 to 1,024 on Blackwell for GQA (v0.24 on, trtllm-gen); FlashAttention (Hopper's first)
    and Triton (the per-token-head layouts) take multiples of 16."""
    name = layout.dtype.name
    if name.endswith("_per_token_head"):
        return (), 16
    if where == "blackwell" or name == "nvfp4":
        heads, kv = dep.heads_per_gpu, layout.kv_heads_per_gpu
        gqa = where == "blackwell" and heads is not None and bool(kv) and heads // (kv or 1) > 1
        return (16, 32, 64, *((128, 256, 512, 1024) if gqa else ())), 0
    return (), 16


def _largest_within(blocks: tuple[tuple[int, ...], int], per_token: int, budget: int,
                    release: Release) -> int:
    """``_largest_kernel_block_within``: the largest kernel block whose page fits ``budget``."""
    fixed, multiple = blocks
    candidates = list(fixed)
    if release >= V0_30 and multiple:
        candidates.append(max(multiple, budget // per_token // multiple * multiple))
    elif not candidates and multiple:
        candidates = [multiple]
    fitting = [b for b in candidates if b * per_token <= budget]
    return max(fitting) if fitting else min(candidates)


def align_skipped(layout: KvLayout, dep: Deployment, block: int,
                  release: Release) -> tuple[int, int | None, str]:
    """``_align_heterogeneous_kv_block_size`` (v0.25 on, skip layers set): the block, the page
    sliding layers pad to (None: none) and why the block grew ('' if it did not)."""
    kinds = layout.counts
    where = (dep.gpu.architecture if dep.gpu is not None else None) or "hopper"
    if kinds["mla"]:  # FullAttentionSpec of one 576-wide head: only the dtypes' ratio counts
        model = layout.skipped_bytes["mla"] - layout.indexer_bytes
        model_bits = kv_dtype(layout.skipped_dtype or "bf16").bits
        p, s = model * layout.dtype.bits // model_bits, model
        kmin = _backend_block(layout, replace(dep, block_size=None), where, 16, release)[0]
    else:
        kind: LayerKind = "full" if kinds["full"] else "sliding"
        p, s, kmin = layout.token_bytes[kind], layout.skipped_bytes[kind], 16
    if s <= p:
        return block, None, ""
    align = max(kmin, block)
    needed = align * cdiv(s * kmin, align * p)
    why = ""
    if block < needed:
        why = (f"{needed}: vLLM raises the block until a page in the cache dtype ({needed} x "
               f"{p:,} B) covers {kmin} tokens in the model's ({kmin} x {s:,} B), in steps of "
               f"{align} (skip layers: vllm/platforms/interface.py, PR #42890)")
        block = needed
    return block, (None if kinds["mla"] else block * p), why


def _layer_specs(layout: KvLayout, block: int) -> list[Spec]:
    """Each layer's own ``KVCacheSpec`` as the model reports it, before any unification."""
    pages = {k: block * layout.token_bytes[k] for k in ("full", "sliding", "mla")
             if layout.counts[k]}
    top_attn = max(pages.values()) if pages else layout.state_bytes
    specs: list[Spec] = []
    for i, kind in enumerate(layout.layers):
        page = block * layout.layer_bytes(i)  # a skipped layer's in the model dtype
        if kind == "linear":  # the state page is padded to the attention page
            specs.append(Spec("mamba", block, max(top_attn, layout.state_bytes)))
        elif kind == "sliding":
            specs.append(Spec("chunked" if layout.chunked else "sliding", block, page,
                              layout.window))
        else:
            specs.append(Spec(kind, block, page))
    return specs


def _specs(layout: KvLayout, block: int, hybrid_manager: bool, dep: Deployment | None = None,
           release: Release = V0_21, shared: int | None = None) -> list[Spec]:
    kinds = layout.counts
    if kinds["linear"] and not hybrid_manager:
        raise UsageError(
            "vLLM refuses to start: 'Hybrid KV cache manager is disabled but failed to convert "
            "the KV cache specs to one unified type' (linear-attention layers need the hybrid "
            f"manager); drop {arg('hybrid_manager', False)}", param="hybrid_manager")
    # Hybrid manager off: a sliding layer beside full ones is full (unify_hybrid_kv_cache_specs).
    unify = kinds["sliding"] and (kinds["full"] or kinds["mla"]) and not hybrid_manager
    pages = {k: block * layout.token_bytes[k] for k in ("full", "sliding", "mla") if kinds[k]}
    top_attn = max(pages.values()) if pages else layout.state_bytes
    dep = dep or Deployment(layout=layout)
    where = (dep.gpu.architecture if dep.gpu is not None else None) or "hopper"
    own = release >= V0_25 and not unify and not layout.chunked  # sliding layers' own block
    specs: list[Spec] = []
    for i, kind in enumerate(layout.layers):
        page = block * layout.layer_bytes(i)  # a skipped layer's in the model dtype
        if kind == "linear":  # the state page is padded to the attention page
            specs.append(Spec("mamba", block, max(top_attn, layout.state_bytes)))
        elif kind == "sliding" and own:
            per_token, blocks = layout.layer_bytes(i), _kernel_blocks(layout, dep, where)
            if shared is not None:
                sw = _largest_within(blocks, per_token, shared, release)
                specs.append(Spec("sliding", sw, shared, layout.window))
            else:
                sw = (_largest_within(blocks, per_token, per_token * block, release)
                      if release >= V0_30 else min(blocks[0] or (blocks[1],)))
                specs.append(Spec("sliding", sw, sw * per_token, layout.window))
        elif kind == "sliding":
            specs.append(Spec("full", block, page) if unify else Spec(
                "chunked" if layout.chunked else "sliding", block, page, layout.window))
        else:
            specs.append(Spec(kind, block, page))
    if uniform_type(specs):
        return specs
    # unify_kv_cache_spec_page_size: smaller pages grow by whole multiples of their block; from
    # v0.24 a non-MLA attention page that does not divide is padded instead (above).
    top = max(s.page_bytes for s in specs)
    pad = release >= V0_24
    if any(top % s.page_bytes and not (pad and s.kind != "mla") for s in specs):
        raise UsageError("vLLM cannot start this model: its layers' page sizes do not divide "
                         "each other ('Cannot unify by adjusting block_size')" + (
                             "; vLLM pads attention pages from v0.24 (PR #45181) and aligns skip "
                             f"layers from v0.25 (PR #42890): {arg('engine', 'vllm@0.25')}"
                             if layout.skipped and release < V0_24 else ""),
                         related=("engine",))
    return [s if s.page_bytes == top else replace(s, page_bytes=top) if top % s.page_bytes
            else replace(s, block_size=s.block_size * top // s.page_bytes, page_bytes=top)
            for s in specs]


def uniform_type(specs: list[Spec]) -> bool:
    """Pages that differ by layer in specs of one type and block (here: layers kept in the
    model dtype beside quantized ones): vLLM puts every layer in one group whose page is the sum
    of the layers' own (``UniformTypeKVCacheSpecs``, vllm/v1/kv_cache_interface.py, tried by
    get_kv_cache_groups before unify_kv_cache_spec_page_size, vllm/v1/core/kv_cache_utils.py)."""
    return (len({(s.kind, s.block_size, s.window) for s in specs}) == 1
            and len({s.page_bytes for s in specs}) > 1)


def _groups(specs: list[Spec]) -> tuple[Group, ...]:
    """``get_kv_cache_groups``: one group if all specs are equal, else the padded split."""
    by_spec = {spec: [i for i, s in enumerate(specs) if s == spec] for spec in specs}
    smallest, largest = min(map(len, by_spec.values())), max(map(len, by_spec.values()))
    size = largest if largest < smallest * 1.5 else smallest
    # layers[i::n], not contiguous runs, so pipeline stages pad less.
    return tuple(Group(spec, tuple(layers[i::n])) for spec, layers in by_spec.items()
                 for n in [cdiv(len(layers), size)] for i in range(n))


@dataclass(frozen=True)
class VllmPlan(Plan):
    """vLLM's KV cache config for one model (worked example: docs/kvmem.md)."""

    groups: tuple[Group, ...]
    stages: tuple[frozenset[int], ...]
    page_bytes: int
    block_size: int
    block_size_reason: Note
    max_num_batched_tokens: int
    batched_tokens_source: Note
    hybrid_manager: bool
    available: int | None  # per GPU (None: no budget)
    model_max_len: int | None = None  # the model's own: a longer max_model_len is refused
    release: Release = V0_21
    version: str = ""  # the profile's words for the release followed
    dcp: int = 1
    layer_pages: tuple[int, ...] = ()  # each layer's page where they differ (uniform_type)
    mamba_mode: MambaMode = "none"  # a linear hybrid's mamba_cache_mode (prefix caching)
    spec_blocks: int = 0  # num_speculative_blocks, where the release counts them
    checkpoint_blocks: int = 0  # num_prefill_checkpoint_blocks ("align", v0.32 on)
    draft_layers: int = 0  # a speculative drafter's attention layers in the groups

    # v0.34's extensible KV cache: the profiling estimate it logs and first checks (the blocks
    # come from ``available``, measured after warmup), the budget requested, and its granule
    estimate: int | None = None
    requested: int | None = None
    granule: int = 0
    util: float | None = None  # v0.34's hint names a gpu_memory_utilization below 1

    # Before v0.14 the start-up check sums each layer's own spec (V0_14 above); empty: the groups
    check_specs: tuple[Spec, ...] = ()
    hybrid_off_reason: str = ""  # why vLLM turned the hybrid manager off by itself

    def state_blocks(self, context: int) -> int:
        """State blocks a request holds in each linear group (MambaSpec
        .max_memory_usage_bytes of the release; see V0_28)."""
        if self.mamba_mode == "all":  # (no spec blocks: tokcost refuses them on Mamba families)
            return cdiv(context, self.block_size)
        return (2 if self.mamba_mode == "align" else 1) + self.spec_blocks + self.checkpoint_blocks

    @property
    def group_size(self) -> int:
        return max(len(g.layers) for g in self.groups)

    def _stage_group_size(self, stage: frozenset[int]) -> int:
        return max(sum(1 for i in g.layers if i in stage) for g in self.groups)

    @property
    def stage_group_size(self) -> int:
        """Layer slots a block id spans on the fullest pipeline stage (one GPU)."""
        return max(self._stage_group_size(s) for s in self.stages)

    def _stage_block_bytes(self, stage: frozenset[int]) -> int:
        """Bytes a block id takes on ``stage``: a page per layer slot, or the sum of its layers'
        own pages (``UniformTypeKVCacheSpecs.page_size_bytes``)."""
        if self.layer_pages:
            return sum(self.layer_pages[i] for i in stage)
        return self.page_bytes * self._stage_group_size(stage)

    @property
    def block_bytes(self) -> int:
        """Bytes a block id takes on the fullest pipeline stage (one GPU)."""
        return max(self._stage_block_bytes(s) for s in self.stages)

    def _stage_strides(self, stage: frozenset[int]) -> list[int]:
        """A block's bytes in each layer segment of ``stage`` (one per layer slot)."""
        if self.layer_pages:
            return [self.layer_pages[i] for i in stage]
        return [self.page_bytes] * self._stage_group_size(stage)

    def _stage_blocks(self, stage: frozenset[int], size: int) -> int:
        assert self.available is not None
        blocks = max(0, self.available // size)
        if not self.granule or self.estimate is None:
            return blocks
        # ExtensibleKVCache.blocks_within: at most the capacity reserved from the estimate,
        # and no more than the granules committed per segment fit in the measured bytes
        blocks = min(blocks, max(0, self.estimate // size))
        strides, g = self._stage_strides(stage), self.granule
        while blocks > 0 and sum(cdiv(blocks * s, g) * g for s in strides) > self.available:
            blocks -= 1
        return blocks

    @property
    def num_blocks(self) -> int | None:
        if self.available is None:
            return None
        # floor(available / page / slots) = floor(available / (page x slots))
        return min(self._stage_blocks(stage, size)
                   for stage in self.stages if (size := self._stage_block_bytes(stage)))

    @property
    def in_flight_batches(self) -> int:
        """Batches a local group reserves for: one to v0.25; from v0.26 max_concurrent_batches
        with async scheduling and the V2 model runner, pp + 1 (vllm/config/vllm.py)."""
        return 1 if self.release < V0_26 else len(self.stages) + 1

    def blocks_per_request(self, context: int) -> int:
        """Blocks one request of ``context`` tokens may hold, summed over the groups."""
        mnbt = self.max_num_batched_tokens * self.in_flight_batches
        states = self.state_blocks(context)
        return sum(cdiv(g.spec.max_bytes(context, mnbt, self.dcp, states),
                        g.spec.page_bytes) for g in self.groups)

    engine_blocks = blocks_per_request

    def request_bytes(self, context: int) -> int:
        return self.blocks_per_request(context) * self.block_bytes

    def needed_bytes(self, context: int, stage: frozenset[int]) -> int:
        """``_max_memory_usage_bytes_from_groups`` on one stage (its padded group size); before
        v0.14 ``max_memory_usage_bytes`` over the stage's layers, each by its own spec."""
        if self.check_specs:
            mnbt = self.max_num_batched_tokens
            return sum(self.check_specs[i].max_bytes(context, mnbt, self.dcp,
                                                          self.state_blocks(context))
                       for i in stage)
        return self._stage_block_bytes(stage) * self.blocks_per_request(context)

    def _checks(self, stage: frozenset[int]) -> list[tuple[int, bool]]:
        """The bytes each start-up check holds one request to, and whether it runs after
        warmup (v0.34); from v0.29 less the null block."""
        size = self._stage_block_bytes(stage)
        assert self.available is not None
        if self.estimate is None:
            return [(self.available - (size if self.release >= V0_29 else 0), False)]
        return [(self.estimate - size, False), (((self.num_blocks or 0) - 1) * size, True)]

    def _fits_alone(self, context: int, stage: frozenset[int], avail: int) -> bool:
        return self.needed_bytes(context, stage) <= avail

    def max_concurrency(self, context: int) -> float | None:
        blocks = self.num_blocks
        return None if blocks is None else blocks / self.blocks_per_request(context)

    def fits(self, context: int, batch: int) -> bool | None:
        blocks = self.num_blocks
        if blocks is None or self.available is None:
            return None
        starts = not self.past_model_len(context) and all(
            avail > 0 and self._fits_alone(context, s, avail) for s in self.stages
            if self._stage_group_size(s) for avail, _ in self._checks(s))
        return starts and batch * self.blocks_per_request(context) <= blocks

    def _hint(self, warm: bool) -> str:
        """What vLLM tells to do (kv_cache_planning.py _more_kv_cache_memory_hint, v0.34)."""
        if self.release < V0_22:
            return "Try increasing `gpu_memory_utilization` when initializing the engine."
        if self.estimate is None:
            return ("Try increasing `gpu_memory_utilization` when initializing the engine "
                    "(this flag also controls CPU memory reservation on the CPU backend, "
                    "despite its name).")
        used = "the model, its activations, CUDA graphs and warmup" if warm else (
            "the model and its activations")
        graphs = (" CUDA graphs take less with fewer or smaller capture sizes in the "
                  "compilation config.") if warm else ""
        if self.util is not None and self.util < 1:
            return (f"The KV cache gets what is left after {used} within "
                    f"`gpu_memory_utilization`={self.util}; increase it (with the extensible "
                    "KV cache it defaults to 1.0) or decrease `max_model_len` or "
                    f"`max_num_seqs`.{graphs}")
        return ("The extensible KV cache already takes all device memory left after "
                f"{used}; decrease `max_model_len` or `max_num_seqs`, or the model needs a "
                f"device with more memory.{graphs}")

    def _refusal_at(self, max_model_len: int) -> tuple[str, bool] | None:
        """vLLM's refusal and whether it comes after warmup (v0.34), or None."""
        if self.past_model_len(max_model_len):
            # vLLM's words (config/model.py), checked before memory
            return (f"max_model_len {max_model_len:,} is greater than the model's "
                    f"{self.model_max_len:,} (set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 to override)",
                    False)
        if self.available is None:
            return None
        old = self.release < V0_22
        for stage in self.stages:
            if not self._stage_group_size(stage):
                continue
            for avail, warm in self._checks(stage):
                if avail <= 0 and old:
                    return ("No available memory for the cache blocks. Try increasing "
                            "`gpu_memory_utilization` when initializing the engine.", warm)
                if avail <= 0:
                    return f"No available memory for the cache blocks. {self._hint(warm)}", warm
                needed = self.needed_bytes(max_model_len, stage)
                if needed <= avail:
                    continue
                # _estimate_max_model_len_from_groups: a binary search up to max_model_len
                est = largest(partial(self._fits_alone, stage=stage, avail=avail),
                              max_model_len)
                hint = (f"Based on the available memory, the estimated maximum model length "
                        f"is {est}. " if est > 0 else "")
                head = (f"To serve at least one request with the model{'s' if old else ''}'s "
                        f"max seq len ({max_model_len}), ({self._gib(needed)} GiB KV cache is "
                        "needed, which is larger than the available KV cache memory "
                        f"({self._gib(avail)} GiB). {hint}")
                if old:
                    return (head + "Try increasing `gpu_memory_utilization` or decreasing "
                            "`max_model_len` when initializing the engine.", warm)
                if self.estimate is None:
                    return (head + "Try increasing `gpu_memory_utilization` (which also "
                            "controls CPU memory on the CPU backend) or decreasing "
                            "`max_model_len` when initializing the engine.", warm)
                return (head + f"{self._hint(warm)} Decreasing `max_model_len` also reduces "
                        "what is needed.", warm)
        return None

    def _gib(self, size: int) -> str:
        return log_gib(size, self.release)

    def _refusal(self, max_model_len: int) -> str | None:
        refusal = self._refusal_at(max_model_len)
        return None if refusal is None else refusal[0]

    def logged_tokens(self, max_model_len: int) -> tuple[int, int] | None:
        """GPU KV cache size as v0.20 and earlier log it (x dcp: "Multiplying the GPU KV cache
        size by the dcp_world_size"), and as later versions do."""
        blocks = self.num_blocks
        if blocks is None:
            return None
        # Mamba specs carry block_size = mamba_block_size = max_model_len (no prefix caching;
        # "align" and "all": the attention block).
        smallest = min(max_model_len if g.spec.kind == "mamba" and self.mamba_mode == "none"
                       else g.spec.block_size for g in self.groups)
        conc = blocks / self.blocks_per_request(max_model_len)
        return blocks // len(self.groups) * smallest * self.dcp, int(conc * max_model_len)

    def cache_tokens(self, max_model_len: int) -> int | None:
        """The "GPU KV cache size" the release logs."""
        tokens = self.logged_tokens(max_model_len)
        return None if tokens is None else tokens[self.release >= V0_21]

    def _lines(self, max_model_len: int, refusal: str | None) -> list[str]:
        tokens = self.cache_tokens(max_model_len)
        shown = self.available if self.estimate is None else self.estimate
        lines = [] if shown is None else [f"Available KV cache memory: {self._gib(shown)} GiB"]
        at = self._refusal_at(max_model_len)
        blocks = self.num_blocks
        if self.estimate is not None and blocks is not None and (at is None or at[1]):
            # extensible_kv_cache.py measure_kv_cache_blocks; tokcost does not know the free,
            # committed and transient figures that open the line
            lines.append(f"Memory after warmup: ... {blocks} KV cache blocks "
                         f"({self._gib(blocks * self.block_bytes)} GiB) fit within the "
                         f"requested {self._gib(self.requested or 0)} GiB.")
        if refusal is not None:
            return [*lines, f"ValueError: {refusal}"]
        if tokens is None:
            return lines
        conc = (f"Maximum concurrency for {max_model_len:,} tokens per request: "
                f"{self.max_concurrency(max_model_len):.2f}x")
        if self.release >= V0_28:  # one line from v0.28
            return [*lines, f"GPU KV cache size: {tokens:,} tokens, {conc}"]
        return [*lines, f"GPU KV cache size: {tokens:,} tokens", conc]

    def _details(self, report: EngineReport) -> tuple[str, ...]:
        if self.available is None:
            return ()
        size, groups = self.group_size, Counter(g.spec.kind for g in self.groups)
        slots = self.stage_group_size  # one GPU's: with --pp its stage's share of each group
        layers = {kind: sum(len(g.layers) for g in self.groups if g.spec.kind == kind)
                  for kind in groups}
        blocks = {g.spec.kind: g.spec.block_size for g in self.groups if g.spec.kind != "mamba"}
        own: dict[str, str] = {k: f", {b}-token blocks" if len(set(blocks.values())) > 1
                               else "" for k, b in blocks.items()}
        desc = [f"{n} {kind} ({layers[kind]} layers{own.get(kind, '')}"
                + (f" + {n * size - layers[kind]} padding)" if n * size > layers[kind] else ")")
                for kind, n in groups.items()]
        tokens = self.logged_tokens(report.max_model_len) or (0, 0)
        local, read = (("a chunked layer's chunk", "chunk") if groups["chunked"] else
                       ("a sliding layer's window - 1", "window"))
        tag = "" if tokens[0] == tokens[1] else (
            "   (v0.21 on: concurrency x max_model_len; v0.20: "
            f"num_blocks // groups x block = {tokens[0]:,})" if self.release >= V0_21 else
            f"   (v0.20: num_blocks // groups x block; v0.21 on: concurrency x max_model_len "
            f"= {tokens[1]:,})")
        log = [line + (tag if line.startswith("GPU KV cache size") else "")
               for line in report.lines if not line.startswith("ValueError")]
        return (
            f"vLLM groups: {len(self.groups)}, each of {size} layer slots"
            + (f" ({slots} on the fullest pipeline stage, one GPU)" if slots != size else "")
            + f": {', '.join(desc)}; page "
            + (f"{self.page_bytes:,} B ({self.block_size} tokens x 1 layer)"
               if not self.layer_pages else " + ".join(
                   f"{n} x {page:,} B" for page, n in Counter(self.layer_pages).most_common())
               + f" ({self.block_size} tokens, each layer in its own dtype: "
               "UniformTypeKVCacheSpecs)"),
            # vLLM divides by the slots of the stage it runs on (the fullest sets the pool)
            (f"blocks: floor({self.available:,} / {self.page_bytes:,} B / {slots} layers per "
             "group" + (" on the fullest stage)" if slots != size else ")")
             if not self.layer_pages else
             f"blocks: floor({self.available:,} / {self.block_bytes:,} B per block)")
            + ("" if not self.granule or self.available is None
               or self.available // self.block_bytes == self.num_blocks else
               f" = {self.available // self.block_bytes:,}, in whole 2 MiB granules per layer")
            + f" = {self.num_blocks:,} blocks of {self.block_bytes:,} B",
            f"per request of {report.max_model_len:,} tokens: "
            f"{self.blocks_per_request(report.max_model_len):,} blocks summed over the groups"
            + ("" if not {"sliding", "chunked"} & groups.keys() else  # why more than decode reads
               f" = {self.request_bytes(report.max_model_len) / GiB:.2f} GiB per sequence, "
               f"vLLM's reserve: {local} + "
               + (f"{self.in_flight_batches} x " if self.in_flight_batches > 1 else "")
               + "max_num_batched_tokens, padding slots too; decode "
               f"reads only the {read}"),
            *report.logs(log))

    def _state_header(self, max_model_len: int) -> str:
        if self.mamba_mode == "none" and not self.spec_blocks and not self.draft_layers:
            return ""
        parts = []
        if self.mamba_mode != "none":
            parts.append(f"prefix caching: mamba_cache_mode {self.mamba_mode}")
        if self.mamba_mode != "none" or self.spec_blocks:
            extra = [f"{self.spec_blocks} speculative"] if self.spec_blocks else []
            extra += [f"{self.checkpoint_blocks} prefill checkpoint"] if self.checkpoint_blocks \
                else []
            parts.append(f"{self.state_blocks(max_model_len):,} state blocks per request in each "
                         "linear group" + (f" ({', '.join(extra)})" if extra else ""))
        if self.draft_layers:
            parts.append(f"{self.draft_layers} drafter attention layer"
                         f"{'s' if self.draft_layers > 1 else ''} in the pool")
        return "; " + "; ".join(parts)

    def report(self, max_model_len: int) -> EngineReport:
        refusal = self._refusal(max_model_len)
        tokens = self.logged_tokens(max_model_len)
        header = (f"block {self.block_size_reason.template}; max_num_batched_tokens "
                  f"{self.max_num_batched_tokens:,} ({self.batched_tokens_source.template})"
                  + ("" if self.hybrid_manager else "; hybrid KV cache manager off"
                     + (f" ({self.hybrid_off_reason})" if self.hybrid_off_reason else ""))
                  + self._state_header(max_model_len))
        report = EngineReport(
            name=Vllm.name, version=self.version, block_size=self.block_size,
            block_size_reason=self.block_size_reason, max_model_len=max_model_len,
            model_max_len=self.model_max_len,
            groups=tuple(EngineGroup(g.spec.kind, len(g.layers), self.group_size,
                                     g.spec.block_size, g.spec.page_bytes, g.spec.window)
                         for g in self.groups), num_blocks=self.num_blocks,
            cache_tokens=None if refusal else self.cache_tokens(max_model_len),
            max_concurrency=None if refusal else self.max_concurrency(max_model_len),
            lines=tuple(self._lines(max_model_len, refusal)), refusal=refusal, settings={
                "group_size": self.group_size,
                "max_num_batched_tokens": self.max_num_batched_tokens,
                "max_num_batched_tokens_source": self.batched_tokens_source,
                "hybrid_manager": self.hybrid_manager,
                "pipeline_stages": [len(s) for s in self.stages],
                **({"mamba_cache_mode": self.mamba_mode} if self.mamba_mode != "none" else {}),
                **({"state_blocks_per_request": self.state_blocks(max_model_len)}
                   if self.mamba_mode != "none" or self.spec_blocks else {}),
                **({"draft_layers": self.draft_layers} if self.draft_layers else {}),
                "blocks_per_request": self.blocks_per_request(max_model_len),
                "logged_tokens": None if tokens is None else {
                    "v0.20_and_earlier": tokens[0], "v0.21_and_later": tokens[1]}},
            title=Vllm.title, header=Note(header),
            advice=self.advice(max_model_len, f"{arg('max_model_len')} ({arg('contexts')}) or "
                               f"raise {arg('gpu_memory_utilization')}"))
        return replace(report, details=self._details(report))


@dataclass(frozen=True, kw_only=True)
class Vllm(Engine):
    """vLLM, with its scheduler's tokens per step and its hybrid KV cache manager."""

    name: ClassVar[str] = "vllm"
    title: ClassVar[str] = "vLLM"
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
        object.__setattr__(self, "kv_cache_dtype_skip_layers", _skip_items(
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
            layout = layout.skipping(_skipped(tuple(items), layout, self.release),
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
        return _ds_mla(dep, self.release)

    def pool(self, dep: Deployment, available: int | None) -> VllmPlan:
        dep = self._nemotron_ssm(self.settle(dep))
        layout = dep.layout
        if all(k == "linear" for k in layout.layers):
            raise UsageError("this model caches no tokens (only fixed-state layers)")
        _check_dcp(dep)
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
        specs = _specs(layout, block, hybrid, dep, self.release, shared)
        linear = bool(layout.counts["linear"])
        mixed = uniform_type(specs)
        return VllmPlan(groups=(Group(min(specs, key=lambda s: s.page_bytes),
                                      tuple(range(len(specs)))),) if mixed else _groups(specs),
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
                        check_specs=() if self.release >= V0_14 else tuple(
                            _layer_specs(layout, block)))

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


def _skip_items(given: str | tuple[str, ...] | None, release: Release) -> tuple[str, ...]:
    """``--kv-cache-dtype-skip-layers``' items (commas or spaces between them), checked; an
    empty tuple is what an unset option became (``dataclasses.replace`` checks it again)."""
    if given is None or given == ():
        return ()
    text = given if isinstance(given, str) else " ".join(map(str, given))
    items = tuple(text.replace(",", " ").split())
    if release < V0_19:
        raise UsageError(f"vLLM {release} has no {arg('kv_cache_dtype_skip_layers')}: it came "
                         f"in v0.19 (PR #33695); use {arg('engine', 'vllm@0.19')} or later",
                         param="kv_cache_dtype_skip_layers", related=("engine",))
    bad = next((i for i in items if not i.isdigit() and i != SKIP_SLIDING), None)
    if not items or bad is not None:
        raise UsageError(f"{arg('kv_cache_dtype_skip_layers', repr(text))}: give layer indices "
                         f"and/or {SKIP_SLIDING}, e.g. 0,31 or {SKIP_SLIDING}",
                         param="kv_cache_dtype_skip_layers")
    return items


def _skipped(items: tuple[str, ...], layout: KvLayout, release: Release) -> frozenset[int]:
    """The layers ``items`` keep in the model dtype, as vLLM's Attention layers (and, from
    v0.26, its MLAAttention layers, PR #47309) pick them."""
    kinds, param = layout.counts, "kv_cache_dtype_skip_layers"
    if kinds["mla"] and release < V0_26:
        raise UsageError(f"vLLM {release} reads {arg(param)} for attention layers only; this "
                         "model has MLA layers (vLLM reads the list for them from PR #47309, "
                         f"merged 2026-07-16, after v0.25.0): use {arg('engine', 'vllm@0.26')} "
                         "or later", param=param, related=("engine",))
    if kinds["linear"]:
        # v0.19 to v0.24: platforms/interface.py pads the Mamba state page to one block of the
        # --kv-cache-dtype attention page (mamba_page_size_padded); the skipped layers' pages are
        # larger, and unify_kv_cache_spec_page_size (vllm/v1/core/kv_cache_utils.py) cannot grow
        # a padded MambaSpec page: a bare AssertionError where the pages divide, else its
        # NotImplementedError. From v0.25 (first in its sdist; the PR is not pinned) Platform
        # ._align_heterogeneous_kv_block_size raises the block so that one page covers the
        # skipped layers' and the Mamba page, which tokcost does not model.
        why = ("from v0.25 vLLM raises the block until one page covers the skipped layers' and "
               "the Mamba state's (_align_heterogeneous_kv_block_size, vllm/platforms/"
               "interface.py), which tokcost does not model" if release >= V0_25 else
               f"vLLM {release} fails to start: it pads the Mamba state page to the "
               f"{arg('kv_dtype')} attention page (mamba_page_size_padded) and "
               "unify_kv_cache_spec_page_size cannot grow that page to the skipped layers' larger "
               "one (an AssertionError in vllm/v1/core/kv_cache_utils.py; v0.25 aligns them)")
        raise UsageError(f"{arg(param)} on a model with linear-attention layers (Mamba, Gated "
                         f"DeltaNet...): {why}; leave out {arg(param)} (every layer then caches "
                         f"in {arg('kv_dtype')})",
                         param=param, related=("kv_dtype",))
    n = len(layout.layers)
    wrong = next((int(i) for i in items if i.isdigit() and int(i) >= n), None)
    if wrong is not None:
        raise UsageError(f"{arg(param)}: the model has no layer {wrong} (its cached layers are 0 "
                         f"to {n - 1}; vLLM would match none)", param=param)
    sliding = {i for i, kind in enumerate(layout.layers) if kind == "sliding"}
    if SKIP_SLIDING in items and (not sliding or layout.chunked):
        raise UsageError(f"{arg(param, SKIP_SLIDING)}: the model has no sliding-window layers "
                         "(vLLM would match none); give layer indices", param=param)
    return frozenset({int(i) for i in items if i.isdigit()}
                     | (sliding if SKIP_SLIDING in items else set()))


def _check_dcp(dep: Deployment) -> None:
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
