"""The attention block size vLLM picks, by release, GPU and backend (vllm/platforms/cuda.py,
vllm/platforms/interface.py, vllm/model_executor/models/config.py), and DeepSeek-V3.2's
fp8_ds_mla cache."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from tokcost.errors import Note, UsageError, arg
from tokcost.memory.engines.base import (
    Deployment,
    Release,
)
from tokcost.memory.engines.vllm.releases import (
    BLOCK_V0_34,
    MAMBA1_CHUNK,
    V0_12,
    V0_14,
    V0_15,
    V0_18,
    V0_19,
    V0_20,
    V0_21,
    V0_27,
    V0_30,
    V0_33,
    V0_34,
    MambaMode,
    cdiv,
)
from tokcost.memory.fit import DEFAULT_BLOCK
from tokcost.memory.kv import FP8_DS_MLA_BYTES, KV_DTYPES, KvLayout, kv_dtype

if TYPE_CHECKING:

    from tokcost.catalog.schema import LayerKind


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
        if block < MM_PREFIX_BLOCK and mm_prefix_composite(layout, dep, release):
            return MM_PREFIX_BLOCK, (
                f"{MM_PREFIX_BLOCK}: vLLM's TRITON_FLASHINFER backend, first on Blackwell "
                f"(SM 10.x) from v0.30 for a model with bidirectional image attention and "
                f"head_dim {dep.head_dim}, has {MM_PREFIX_BLOCK}-token kernel blocks only "
                "(v1/attention/backends/triton_flashinfer.py, PR #56305)")
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


# Models with bidirectional attention over image tokens (ModelConfig.is_mm_prefix_lm: model_type
# gemma3, the multimodal Gemma-3, in MM_PREFIX_LM_MODELS; Gemma-4, whose text_config says
# use_bidirectional_attention "vision", Gemma4ModelArchConfigConvertor) pass use_mm_prefix to the
# backend selector, and a backend without supports_mm_prefix is passed over:
# - v0.14 to v0.24: only TRITON_ATTN and FLEX_ATTENTION take it (v1/attention/backend.py
#   validate_configuration), so such a model runs on Triton on every NVIDIA GPU: MultipleOf(16),
#   and FlashInfer's head_dim-256 assert (v0.12 to v0.17, below) never runs for it.
# - v0.25: FLASH_ATTN takes it where FA4 is built (PR #42175); still multiples of 16 (its FA4
#   head_dim-256 kernel's 128-token pages, fa_utils.py FA4_HD256_PAGE_SIZE, v0.29 on, fall back
#   to FA2 for an mm-prefix model, _fa4_hd256_fallback_reason, and FlashInfer, which Blackwell
#   puts first, is valid for a text model: so no release picks them by default).
# - v0.30 (PR #56305): on SM 10.x TRITON_FLASHINFER (Triton for image spans, FlashInfer
#   causal) comes first (vllm/platforms/cuda.py _get_backend_priorities): head sizes 256 and 512
#   only, kernel_block_sizes (64,), caches both backends take (16-bit and fp8, not nvfp4 or the
#   per-token-head layouts), no DCP. The first attention layer's backend sets the block
#   (Platform._find_non_ssm_backend): 64, 16 not being a multiple of it; v0.34's default is 64
#   anyway. On Hopper its TRITON_FLASH_ATTN twin needs FA4, which FA3 hands head_dim 256 to only
#   above 256, so FLASH_ATTN (16) stays.
# tokcost knows the model by its catalog family (the catalog's Gemma-3 and Gemma-4 are the
# multimodal -it checkpoints) or a config's text model_type: gemma4_text is read as multimodal
# (every published Gemma-4 text_config says "vision"), gemma3_text as text-only (the Gemma-3 1B's
# own model_type; a multimodal Gemma-3 config is best named by its catalog entry).
MM_PREFIX_FAMILIES = ("gemma-3", "gemma3", "gemma-4", "gemma4", "gemma4_text")
MM_PREFIX_BLOCK = 64
MM_PREFIX_DTYPES = ("bf16", "fp16", "fp8", "fp8_e4m3", "fp8_e5m2")


def mm_prefix(dep: Deployment) -> bool:
    """Whether vLLM reads the model as is_mm_prefix_lm (see above)."""
    return (dep.family or "").lower() in MM_PREFIX_FAMILIES


def sm100(dep: Deployment) -> bool:
    """A data-centre Blackwell (compute capability 10.x: B200, GB200, B300), not the SM 12.x
    GeForce/RTX PRO cards or the GB10, which vLLM gives the Hopper-side backend order."""
    return dep.gpu is not None and dep.gpu.architecture == "blackwell"


def mm_prefix_composite(layout: KvLayout, dep: Deployment, release: Release) -> bool:
    """Whether vLLM ``release`` puts the first attention layer on TRITON_FLASHINFER."""
    return (release >= V0_30 and sm100(dep) and mm_prefix(dep) and dep.head_dim in (256, 512)
            and layout.dtype.name in MM_PREFIX_DTYPES and dep.dcp == 1)


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


def ds_mla(dep: Deployment, release: Release) -> Deployment:
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
            and not kinds["linear"] and V0_12 <= release < V0_18
            and not (mm_prefix(dep) and release >= V0_14)):  # Triton from v0.14 (see above)
        # FlashInferMetadataBuilder.__init__ (vllm/v1/attention/backends/flashinfer.py) asserts
        # block_size != 16 for head size 256 on SM 10.x, PR #27994; FlashInfer is Blackwell's first
        # backend (vllm/platforms/cuda.py); v0.18's flashinfer.py has no such assert.
        raise UsageError(f"vLLM {release} stops at start-up on Blackwell: FlashInfer asserts "
                         "against 16-token blocks for head_dim 256 (v0.12 to v0.17, PR #27994); "
                         f"give {arg('block_size', 32)} or 64", param="block_size",
                         related=("engine",))
    if kinds["linear"] and attn:
        align, how = hybrid_step(layout, dep, where, block, release)
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


def hybrid_step(layout: KvLayout, dep: Deployment, where: str, block: int,
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


def kernel_blocks(layout: KvLayout, dep: Deployment, where: str) -> tuple[tuple[int, ...], int]:
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


def largest_within(blocks: tuple[tuple[int, ...], int], per_token: int, budget: int,
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
