"""vLLM's releases, v0.11 to v0.34, and what changed in each: the defaults, the start-up
accounting and the KV cache dtypes, with the file and PR of every rule (the block sizes are
in ``blocks``, the layer specs in ``specs``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from tokcost.errors import UsageError, arg
from tokcost.memory.engines.base import (
    Release,
)
from tokcost.memory.fit import GiB

if TYPE_CHECKING:

    pass


NAME, TITLE = "vllm", "vLLM"  # the engine's name and how reports title it
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
#   stage (max_concurrent_batches). The V1 runner keeps pp on more stages; v0.26 to v0.28 pick
#   it for MoE and Mamba-hybrid models (config/vllm.py _is_default_v2_model_runner_model), later
#   releases only where V2 lacks a feature, v0.34 has none (plan.py v1_model_runner).
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

# The releases other rules are tied to (the rules: blocks.py, specs.py and below).
V0_12, V0_13, V0_14, V0_15 = Release(0, 12), Release(0, 13), Release(0, 14), Release(0, 15)
V0_18, V0_20 = Release(0, 18), Release(0, 20)
V0_19 = Release(0, 19)
V0_32 = Release(0, 32)
V0_24, V0_25, V0_30 = Release(0, 24), Release(0, 25), Release(0, 30)
V0_17, V0_23 = Release(0, 17), Release(0, 23)

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


def log_gib(size: int, release: Release) -> str:
    """GiB as vLLM ``release`` logs them: "%.2f" to v0.13; from v0.14 ``format_gib``
    (vllm/utils/mem_utils.py), str(round(x, 2)), so 22.5 and 5.0, not 22.50 and 5.00."""
    return f"{size / GiB:.2f}" if release < V0_14 else str(round(size / GiB, 2))


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


# The model classes (config.json's architectures, catalog architecture.model_class) a release's
# model registry lists, where that is not every modelled release: read from
# vllm/model_executor/models/registry.py (_TEXT_GENERATION_MODELS, _MULTIMODAL_MODELS) in each
# sdist, v0.11.0 to v0.34.0 (the v0.15.0 wheel). vLLM refuses any other class at start-up
# (ModelRegistry._raise_for_unsupported: "Model architectures [...] are not supported for
# now"; for a dropped one, _PREVIOUSLY_SUPPORTED_MODELS: "was supported in vLLM until
# v0.23.0"). The classes of the catalog, the config fixtures and the published logs, and the
# other classes of those families whose configs tokcost reads (Gemma-4 and Qwen3.5 text-only,
# Kimi-K2.5, Step-3.5, MiniMax-M1); every other
# class tokcost reads (Llama, Qwen2/3, Qwen3-Next, DeepSeek-V3/V3.2, GLM-4.5, Gemma-2/3/3n,
# gpt-oss, Mistral, Mixtral, Phi-3, GraniteMoeHybrid, FalconH1, Jamba, NemotronH, OPT, Llama-4)
# is listed by all of v0.11 to v0.34. vLLM's Transformers-backend fallback for a class it does
# not list is not modelled.
SERVED_FROM: dict[str, tuple[Release, str]] = {
    "MiniMaxM2ForCausalLM": (V0_12, "minimax_m2.py"),  # MiniMax-M2/M2.5/M2.7
    "MiMoV2FlashForCausalLM": (V0_14, "PR #30836"),
    "KimiK25ForConditionalGeneration": (V0_15, "PR #33131"),  # Kimi-K2.5 (text: kimi_k2)
    "Step3p5ForCausalLM": (Release(0, 16), "step3p5.py"),
    "GlmMoeDsaForCausalLM": (Release(0, 16), "deepseek_v2.py"),  # GLM-5 (model_type glm_moe_dsa)
    "Qwen3_5ForConditionalGeneration": (V0_17, "PR #34110"),  # Qwen3.5/3.6 dense
    "Qwen3_5MoeForConditionalGeneration": (V0_17, "PR #34110"),  # Qwen3.5/3.6 MoE
    "Gemma4ForCausalLM": (V0_19, "PR #38826"),
    "Gemma4ForConditionalGeneration": (V0_19, "PR #38826"),
    # text-only Qwen3.5 checkpoints (model_type qwen3_5_text, qwen3_5_moe_text)
    "Qwen3_5ForCausalLM": (V0_27, "PR #50210"),
    "Qwen3_5MoeForCausalLM": (V0_27, "PR #50210"),
}
# Dropped from the registry: the last release that lists the class (v0.24 on put them in
# _PREVIOUSLY_SUPPORTED_MODELS, "0.23.0"; PR #45993 removed minimax_text_01.py).
SERVED_UNTIL: dict[str, tuple[Release, str]] = {
    "MiniMaxText01ForCausalLM": (V0_23, "PR #45993"),  # MiniMax-Text-01
    "MiniMaxM1ForCausalLM": (V0_23, "PR #45993"),
    "MiniMaxForCausalLM": (V0_23, "PR #45993"),
}


def check_served(model: str, model_class: str | None, release: Release) -> None:
    """Refuse a model whose class ``release``'s model registry does not list (None: a class
    not known, served)."""
    if model_class is None:
        return
    first, last = SERVED_FROM.get(model_class), SERVED_UNTIL.get(model_class)
    if first is not None and release < first[0]:
        since = first[0]
        raise UsageError(
            f"vLLM {release} cannot serve {model}: its model registry has no {model_class}, "
            f"which came in {since} ({first[1]}); use "
            f"{arg('engine', f'vllm@{since.major}.{since.minor}')} or later",
            param="engine")
    if last is not None and release > last[0]:
        until = last[0]
        raise UsageError(
            f"vLLM {release} cannot serve {model}: {model_class} was dropped after {until} "
            f"({last[1]}); use {arg('engine', f'vllm@{until.major}.{until.minor}')} or earlier",
            param="engine")
