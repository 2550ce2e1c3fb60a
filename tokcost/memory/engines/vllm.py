"""vLLM v1's KV cache manager, reproduced (docs/kvmem.md) from vllm-project/vllm v0.11 on:
pages ``vllm/v1/kv_cache_interface.py``; groups, num_blocks, the start-up check and the log
``vllm/v1/core/kv_cache_utils.py``; block sizes ``vllm/platforms/cuda.py``,
``vllm/model_executor/models/config.py``; tokens per step ``vllm/engine/arg_utils.py``. What
changed between releases is in ``RULES`` (``--engine vllm@0.20``), each rule with its PR."""

from __future__ import annotations

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
from tokcost.memory.kv import KvLayout, pp_stages
from tokcost.units import parse_count

if TYPE_CHECKING:
    from collections.abc import Callable

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

SERVE_BATCHED_TOKENS_LARGE = 8192  # vllm serve, >= 70 GiB and not an A100
SERVE_BATCHED_TOKENS_SMALL = 2048

SpecKind = Literal["full", "sliding", "chunked", "mla", "mamba"]


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def default_max_num_batched_tokens(gpu_name: str | None,
                                   memory_bytes: int | None) -> tuple[int, str]:
    """``vllm serve``'s default tokens per scheduler step, and why (arg_utils.py)."""
    if memory_bytes is None:
        return SERVE_BATCHED_TOKENS_LARGE, (
            "vllm serve default for GPUs of 70 GiB or more but A100; no GPU given, smaller "
            f"GPUs get {SERVE_BATCHED_TOKENS_SMALL:,}")
    a100 = "a100" in (gpu_name or "").lower()
    if memory_bytes >= 70 * GiB and not a100:
        return SERVE_BATCHED_TOKENS_LARGE, (
            f"vllm serve default: {memory_bytes / GiB:.1f} GiB >= 70 GiB and not an A100")
    why = "an A100" if a100 else f"{memory_bytes / GiB:.1f} GiB < 70 GiB"
    return SERVE_BATCHED_TOKENS_SMALL, f"vllm serve default: {why}"


@dataclass(frozen=True)
class Spec:
    """One layer's ``KVCacheSpec``: what a block of that layer holds."""

    kind: SpecKind
    block_size: int
    page_bytes: int
    window: int | None = None

    def max_bytes(self, max_model_len: int, max_num_batched_tokens: int, dcp: int = 1,
                  align: bool = False) -> int:
        """``max_memory_usage_bytes``: the most one request of ``max_model_len`` needs; with
        decode context parallel each GPU of a DCP group holds every ``dcp``-th token
        (``AttentionSpec.max_memory_usage_bytes``, PR #23734)."""
        if self.kind == "mamba":  # mamba_cache_mode "none": one state; "align": two
            return self.page_bytes * (2 if align else 1)
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
#   block grows in steps of 32 there, PR #27994 (2025-11-05): v0.12 on (v0.11.1/.2 are read as
#   v0.11, which did not have it); reverted by PR #36987 (2026-03-16), which tokcost does not
#   date yet: it keeps the steps of 32 from v0.18 on.
# From v0.18 (PR #35122, 2026-03-09, after the v0.17 branch point 097eb544e of 2026-03-04) none
# of the forcing above is left: vLLM takes the block from the attention backend it selects,
# ``_backend_block`` below.
V0_12, V0_15, V0_18 = Release(0, 12), Release(0, 15), Release(0, 18)

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
V0_14 = Release(0, 14)


def log_gib(size: int, release: Release) -> str:
    """GiB as vLLM ``release`` logs them: "%.2f" to v0.13; from v0.14 ``format_gib``
    (vllm/utils/mem_utils.py), str(round(x, 2)), so 22.5 and 5.0, not 22.50 and 5.00."""
    return f"{size / GiB:.2f}" if release < V0_14 else str(round(size / GiB, 2))

# --kv-cache-dtype-skip-layers (vllm/config/cache.py kv_cache_dtype_skip_layers): PR #33695,
# merged 2026-03-27, after v0.18.0 was out (see DTYPE_SINCE). Attention.__init__
# (vllm/model_executor/layers/attention/attention.py) caches a layer with "auto", the model's
# dtype, when its index (extract_layer_index) is listed or when it has a sliding window and
# "sliding_window" is; the others keep --kv-cache-dtype. Pages that do not divide are padded
# from PR #42890 (merged 2026-07-03, after v0.24.0, released 2026-07-01): tokcost does not model it.
# MLA layers read the list from PR #47309 (commit 0becb7486, merged 2026-07-16):
# MLAAttention.__init__ (vllm/model_executor/layers/attention/mla_attention.py) caches a layer
# whose index is listed with "auto" (index only: MLA layers ignore "sliding_window"), and its
# get_kv_cache_spec passes that per-layer dtype as cache_dtype_str, so a skipped layer is paged
# as (kv_lora_rank + qk_rope_head_dim) x the model dtype's bytes (MLAAttentionSpec
# .real_page_size_bytes, vllm/v1/kv_cache_interface.py), also under fp8_ds_mla; the indexer cache
# (DeepSeek-V3.2) is another layer and keeps its own. The specs stay MLAAttentionSpec with one
# block, so they make one UniformTypeKVCacheSpecs group as attention layers do; the block comes
# from the backend picked for --kv-cache-dtype. v0.25.0 was out (by 2026-07-12) before the merge;
# v0.26.0 was out by 2026-07-29 (tenstorrent/tt-xla PR #5827) and is the first release that can
# carry it: whether its branch followed the merge is not pinned, and tokcost reads it from v0.26.
V0_19, V0_26 = Release(0, 19), Release(0, 26)
SKIP_SLIDING = "sliding_window"

# --enable-prefix-caching on a Gated DeltaNet hybrid (Qwen3-Next, Qwen3.5/3.6) sets
# mamba_cache_mode "align" (MambaModelConfig in vllm/model_executor/models/config.py: "all" only
# for models with SupportsMambaPrefixCaching, the Mamba ones): each linear layer then holds
# 2 + num_speculative_blocks state blocks per request (MambaSpec.max_memory_usage_bytes,
# vllm/v1/kv_cache_interface.py), and the attention block is sized as without it
# (Platform's hybrid block alignment: only "all" aligns it to the Mamba chunk). PR #30877,
# merged 2026-01-23; before it vLLM turned prefix caching off for these models. tokcost reads
# it from v0.17, whose branch (2026-03-04, above) surely followed; vllm serve leaves prefix
# caching off for hybrid models until PR #50991 (merged 2026-08-04), hence the default here.
# tokcost models no speculative blocks (MTP/EAGLE), nor the "all" mode of the Mamba families.
V0_17 = Release(0, 17)
ALIGN_FAMILIES = ("qwen3_next", "qwen3_5")  # by catalog family or config model_type prefix


# --kv-cache-dtype values newer than v0.11, with the last release known to lack each
# (vllm/config/cache.py CacheDType; fp8, fp8_e4m3 and fp8_e5m2 predate v0.11, and fp8_ds_mla came
# with DeepSeek-V3.2, PR #25896, v0.11). A release lacks a PR when it was out before the merge:
# v0.18.0 was released by 2026-03-23 (xorbitsai/inference PR #4718 adapts to it) and v0.23.0
# ran by 2026-06-19 (its start-up log in vllm-project/vllm issue #46169).
DTYPE_SINCE: dict[str, tuple[Release, str]] = {
    "fp8_per_token_head": (Release(0, 18), "PR #38378, merged 2026-04-02"),
    "int8_per_token_head": (Release(0, 18), "PR #38378, merged 2026-04-02"),
    "nvfp4": (Release(0, 18), "PR #37332, merged 2026-04-17"),
    "int4_per_token_head": (Release(0, 23), "PR #40835, merged 2026-06-24"),
}


def check_dtype(name: str, release: Release) -> None:
    """Refuse a KV cache dtype ``release`` did not have, naming when vLLM added it."""
    since = DTYPE_SINCE.get(name)
    if since is None or release > since[0]:
        return
    last, pr = since
    later = Release(last.major, last.minor + 1)
    raise UsageError(f"vLLM {release} has no {name} KV cache: it came after {last} ({pr}); use "
                     f"{arg('engine', f'vllm@{later.major}.{later.minor}')} or later",
                     param="kv_dtype", related=("engine",))


def _mla_block(block: int, where: str, release: Release, sparse: bool) -> tuple[int, str] | None:
    """The MLA block vLLM ``release`` (before v0.18) forces on ``where``, and why; None: it keeps
    ``block``."""
    if sparse:
        return (None if block == 64 else (64, "64: vLLM forces 64-token blocks for DeepSeek-V3.2's"
                " FlashMLASparse backend (vllm/platforms/cuda.py, PR #25896)"))
    if where == "hopper":
        return None if block % 64 == 0 else (
            64, "64: vLLM forces 64-token blocks for FlashMLA on Hopper (vllm/platforms/cuda.py, "
            "PR #14451; to v0.17)")
    if where != "blackwell":
        return None
    if release >= V0_15:
        return None if block == 32 or block % 64 == 0 else (
            64, "64: vLLM forces 64-token blocks for FlashInfer MLA, Blackwell's default MLA "
            "backend from v0.15 (vllm/platforms/cuda.py, PR #32615; to v0.17)")
    return None if block % 128 == 0 else (
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
# - DeepSeek-V3.2 (sparse): FLASHMLA_SPARSE, [64] (mla/flashmla_sparse.py), the one sparse
#   backend on Hopper: 64; on Blackwell FLASHINFER_MLA_SPARSE ([32, 64], 32) comes first at 16
#   heads per GPU or fewer, and for an fp8 cache (PR #37252), but takes no fp8_ds_mla: tokcost
#   gives 64 there and says that the other cases are not modelled.
def _backend_block(layout: KvLayout, where: str, block: int) -> tuple[int, str]:
    """The block vLLM v0.18 on takes from the backend it selects (no --block-size given)."""
    src = "vllm/platforms/interface.py update_block_size_for_backend, PR #35122"
    if not layout.counts["mla"]:
        return block, f"{block} (vLLM's default)"  # FlashAttention and FlashInfer take 16
    if layout.indexer_bytes > 0:
        fi = ("; FlashInfer MLA sparse's 32 is not modelled" if where == "blackwell"
              and layout.dtype.name != "fp8_ds_mla" else "")
        return 64, f"64: FlashMLASparse's kernel block, DeepSeek-V3.2's backend ({src}){fi}"
    if where == "blackwell":
        return 32, f"32: FlashInfer MLA's smallest kernel block, Blackwell's MLA backend ({src})"
    if where != "hopper":
        return block, f"{block} (vLLM's default); Triton MLA on {where} keeps it"
    if layout.dtype.bits == 16:
        return block, (f"{block} (vLLM's default): FlashAttention MLA, Hopper's first MLA backend "
                       f"for a 16-bit cache, takes it ({src})")
    return 64, (f"64: FlashMLA's kernel block; FlashAttention MLA, Hopper's first MLA backend, "
                f"takes no {layout.dtype.name} cache ({src})")


def resolve_block_size(layout: KvLayout, dep: Deployment,
                       release: Release = V0_21) -> tuple[int, Note]:
    """The attention block size vLLM ``release`` ends up with, and why."""
    kinds = layout.counts
    block = dep.block_size if dep.block_size is not None else DEFAULT_BLOCK
    given = f"{arg('block_size')} given" if dep.block_size is not None else "vLLM's default"
    reason = f"{block} ({given})"
    arch = dep.gpu.architecture if dep.gpu is not None else None
    where = arch or "hopper"
    assumed = "" if arch else " (no GPU architecture given: Hopper assumed)"
    if release >= V0_18 and dep.block_size is None:
        block, reason = _backend_block(layout, where, block)
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
    if kinds["linear"] and attn:
        if kinds["mla"]:
            align = 128 if where == "blackwell" else 64
        else:  # FlashInfer has no 16-token blocks for head_dim 256 on Blackwell (v0.12 on)
            align = 32 if (where == "blackwell" and dep.head_dim == 256
                           and release >= V0_12) else 16
        needed = align * cdiv(layout.state_bytes, align * attn)
        if block < needed:
            block = needed
            reason = (f"{needed}: vLLM raises the attention block until its page ({needed} x "
                      f"{attn:,} B) covers the {layout.state_bytes:,} B linear-attention state, "
                      f"in steps of {align} (vllm/model_executor/models/config.py)")
    return block, Note(reason)


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


def _specs(layout: KvLayout, block: int, hybrid_manager: bool) -> list[Spec]:
    kinds = layout.counts
    if kinds["linear"] and not hybrid_manager:
        raise UsageError(
            "vLLM refuses to start: 'Hybrid KV cache manager is disabled but failed to convert "
            "the KV cache specs to one unified type' (linear-attention layers need the hybrid "
            f"manager); drop {arg('hybrid_manager', False)}", param="hybrid_manager")
    # Hybrid manager off: a sliding layer beside full ones is full (unify_hybrid_kv_cache_specs).
    unify = kinds["sliding"] and (kinds["full"] or kinds["mla"]) and not hybrid_manager
    specs = [Spec("full", s.block_size, s.page_bytes) if unify and s.kind in ("sliding", "chunked")
             else s for s in _layer_specs(layout, block)]
    if uniform_type(specs):
        return specs
    # unify_kv_cache_spec_page_size: smaller pages grow by whole multiples of their block.
    top = max(s.page_bytes for s in specs)
    if any(top % s.page_bytes for s in specs):
        raise UsageError("vLLM cannot start this model: its layers' page sizes do not divide "
                         "each other ('Cannot unify by adjusting block_size')" + (
                             "; vLLM pads them from PR #42890 (merged 2026-07-03, after v0.24.0),"
                             " which tokcost does not model" if layout.skipped else ""))
    return [replace(s, block_size=s.block_size * top // s.page_bytes, page_bytes=top)
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
    mamba_align: bool = False  # prefix caching on a linear hybrid: mamba_cache_mode "align"
    # Before v0.14 the start-up check sums each layer's own spec (V0_14 above); empty: the groups
    check_specs: tuple[Spec, ...] = ()
    hybrid_off_reason: str = ""  # why vLLM turned the hybrid manager off by itself

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

    @property
    def num_blocks(self) -> int | None:
        if self.available is None:
            return None
        # floor(available / page / slots) = floor(available / (page x slots))
        return min(max(0, self.available // size)
                   for stage in self.stages if (size := self._stage_block_bytes(stage)))

    def blocks_per_request(self, context: int) -> int:
        """Blocks one request of ``context`` tokens may hold, summed over the groups."""
        mnbt = self.max_num_batched_tokens
        return sum(cdiv(g.spec.max_bytes(context, mnbt, self.dcp, self.mamba_align),
                        g.spec.page_bytes) for g in self.groups)

    engine_blocks = blocks_per_request

    def request_bytes(self, context: int) -> int:
        return self.blocks_per_request(context) * self.block_bytes

    def needed_bytes(self, context: int, stage: frozenset[int]) -> int:
        """``_max_memory_usage_bytes_from_groups`` on one stage (its padded group size); before
        v0.14 ``max_memory_usage_bytes`` over the stage's layers, each by its own spec."""
        if self.check_specs:
            mnbt = self.max_num_batched_tokens
            return sum(self.check_specs[i].max_bytes(context, mnbt, self.dcp, self.mamba_align)
                       for i in stage)
        return self._stage_block_bytes(stage) * self.blocks_per_request(context)

    def _fits_alone(self, context: int, stage: frozenset[int]) -> bool:
        return self.available is not None and self.needed_bytes(context, stage) <= self.available

    def max_concurrency(self, context: int) -> float | None:
        blocks = self.num_blocks
        return None if blocks is None else blocks / self.blocks_per_request(context)

    def fits(self, context: int, batch: int) -> bool | None:
        blocks = self.num_blocks
        if blocks is None or self.available is None:
            return None
        starts = not self.past_model_len(context) and self.available > 0 and all(
            self._fits_alone(context, s) for s in self.stages if self._stage_group_size(s))
        return starts and batch * self.blocks_per_request(context) <= blocks

    def _refusal(self, max_model_len: int) -> str | None:
        if self.past_model_len(max_model_len):
            # vLLM's words (config/model.py), checked before memory
            return (f"max_model_len {max_model_len:,} is greater than the model's "
                    f"{self.model_max_len:,} (set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 to override)")
        if self.available is None:
            return None
        if self.available <= 0:
            return ("No available memory for the cache blocks. Try increasing "
                    "`gpu_memory_utilization` when initializing the engine.")
        for stage in self.stages:
            needed = self.needed_bytes(max_model_len, stage)
            if self._stage_group_size(stage) and needed > self.available:
                # _estimate_max_model_len_from_groups: a binary search up to max_model_len
                est = largest(partial(self._fits_alone, stage=stage), max_model_len)
                hint = (f"Based on the available memory, the estimated maximum model length "
                        f"is {est}. " if est > 0 else "")
                need, have = log_gib(needed, self.release), log_gib(self.available, self.release)
                return (f"To serve at least one request with the models's max seq len "
                        f"({max_model_len}), ({need} GiB KV cache is needed, which is "
                        f"larger than the available KV cache memory ({have} "
                        f"GiB). {hint}Try increasing `gpu_memory_utilization` or decreasing "
                        f"`max_model_len` when initializing the engine.")
        return None

    def logged_tokens(self, max_model_len: int) -> tuple[int, int] | None:
        """GPU KV cache size as v0.20 and earlier log it (x dcp: "Multiplying the GPU KV cache
        size by the dcp_world_size"), and as later versions do."""
        blocks = self.num_blocks
        if blocks is None:
            return None
        # Mamba specs carry block_size = mamba_block_size = max_model_len (no prefix caching;
        # "align": the attention block).
        smallest = min(max_model_len if g.spec.kind == "mamba" and not self.mamba_align
                       else g.spec.block_size for g in self.groups)
        conc = blocks / self.blocks_per_request(max_model_len)
        return blocks // len(self.groups) * smallest * self.dcp, int(conc * max_model_len)

    def cache_tokens(self, max_model_len: int) -> int | None:
        """The "GPU KV cache size" the release logs."""
        tokens = self.logged_tokens(max_model_len)
        return None if tokens is None else tokens[self.release >= V0_21]

    def _lines(self, max_model_len: int, refusal: str | None) -> list[str]:
        tokens = self.cache_tokens(max_model_len)
        lines = [] if self.available is None else [
            f"Available KV cache memory: {log_gib(self.available, self.release)} GiB"]
        if refusal is not None:
            return [*lines, f"ValueError: {refusal}"]
        if tokens is not None:
            lines.append(f"GPU KV cache size: {tokens:,} tokens")
            lines.append(f"Maximum concurrency for {max_model_len:,} tokens per request: "
                         f"{self.max_concurrency(max_model_len):.2f}x")
        return lines

    def _details(self, report: EngineReport) -> tuple[str, ...]:
        if self.available is None:
            return ()
        size, groups = self.group_size, Counter(g.spec.kind for g in self.groups)
        layers = {kind: sum(len(g.layers) for g in self.groups if g.spec.kind == kind)
                  for kind in groups}
        desc = [f"{n} {kind} ({layers[kind]} layers"
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
            f"vLLM groups: {len(self.groups)} of {size} layer slots: {', '.join(desc)}; page "
            + (f"{self.page_bytes:,} B ({self.block_size} tokens x 1 layer)"
               if not self.layer_pages else " + ".join(
                   f"{n} x {page:,} B" for page, n in Counter(self.layer_pages).most_common())
               + f" ({self.block_size} tokens, each layer in its own dtype: "
               "UniformTypeKVCacheSpecs)"),
            (f"blocks: floor({self.available:,} / {self.page_bytes:,} B / {size} layers per "
             "group)" if not self.layer_pages else
             f"blocks: floor({self.available:,} / {self.block_bytes:,} B per block)")
            + f" = {self.num_blocks:,} blocks of {self.block_bytes:,} B",
            f"per request of {report.max_model_len:,} tokens: "
            f"{self.blocks_per_request(report.max_model_len):,} blocks summed over the groups"
            + ("" if not {"sliding", "chunked"} & groups.keys() else  # why more than decode reads
               f" = {self.request_bytes(report.max_model_len) / GiB:.2f} GiB per sequence, "
               f"vLLM's reserve: {local} + max_num_batched_tokens, padding slots too; decode "
               f"reads only the {read}"),
            *report.logs(log))

    def report(self, max_model_len: int) -> EngineReport:
        refusal = self._refusal(max_model_len)
        tokens = self.logged_tokens(max_model_len)
        header = (f"block {self.block_size_reason.template}; max_num_batched_tokens "
                  f"{self.max_num_batched_tokens:,} ({self.batched_tokens_source.template})"
                  + ("" if self.hybrid_manager else "; hybrid KV cache manager off"
                     + (f" ({self.hybrid_off_reason})" if self.hybrid_off_reason else ""))
                  + ("; prefix caching: mamba_cache_mode align, 2 state blocks per request in "
                     "each linear group" if self.mamba_align else ""))
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
                **({"mamba_cache_mode": "align"} if self.mamba_align else {}),
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
    releases: ClassVar[tuple[Release, Release] | None] = (OLDEST, V0_21)
    kv_offload: ClassVar[bool] = True  # --kv-offloading-size (tokcost.memory.offload)

    max_num_batched_tokens: int | None = None  # None: vllm serve's default for the GPU
    hybrid_manager: bool = True  # False: --disable-hybrid-kv-cache-manager
    enable_prefix_caching: bool = False  # sizes linear hybrids' states ("align", V0_17 above)
    # VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE (V0_14 above); None: the release's default
    chunked_hybrid: bool | None = None
    release: Release = V0_21
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

    def cache_layout(self, layout: KvLayout, model_dtype: Callable[[], KvLayout]) -> KvLayout:
        items = self.kv_cache_dtype_skip_layers  # a tuple once __post_init__ ran
        if not items:
            return layout
        return layout.skipping(_skipped(tuple(items), layout, self.release), model_dtype())

    @property
    def default_util(self) -> float:
        return UTIL_FROM_V0_21 if self.release >= V0_21 else UTIL_BEFORE_V0_21

    def check(self, request: KvRequest) -> None:
        return None  # vLLM reads decode context parallel

    def plan(self, dep: Deployment) -> tuple[VllmPlan, GpuFit | None]:
        dep = replace(dep, util=self.default_util if dep.util is None else dep.util)
        fit = dep.fit(DEFAULT_BLOCK if dep.block_size is None else dep.block_size)
        plan = self.pool(dep, None if fit is None else fit.available_bytes)
        if fit is None or plan.num_blocks is None:
            return plan, fit
        return plan, replace(fit, block_size=plan.block_size, page_bytes=plan.block_bytes,
                             num_blocks=plan.num_blocks, cache_tokens=plan.num_blocks
                             // len(plan.groups) * plan.block_size * plan.dcp)

    def pool(self, dep: Deployment, available: int | None) -> VllmPlan:
        layout = dep.layout
        if all(k == "linear" for k in layout.layers):
            raise UsageError("this model caches no tokens (only fixed-state layers)")
        _check_dcp(dep)
        check_dtype(layout.dtype.name, self.release)
        block, reason = resolve_block_size(layout, dep, self.release)
        if self.max_num_batched_tokens is None:
            mnbt, source = default_max_num_batched_tokens(
                dep.gpu.name if dep.gpu else None, dep.memory_bytes)
        else:
            mnbt, source = self.max_num_batched_tokens, f"{arg('max_num_batched_tokens')} given"
        hybrid, off_reason = self._hybrid(layout)
        specs = _specs(layout, block, hybrid)
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
                        mamba_align=self._mamba_align(dep), hybrid_off_reason=off_reason,
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

    def _mamba_align(self, dep: Deployment) -> bool:
        """Whether prefix caching puts the linear layers in mamba_cache_mode "align"."""
        if not self.enable_prefix_caching or not dep.layout.counts["linear"]:
            return False
        family = (dep.family or "").replace("-", "_").lower()
        if not family.startswith(ALIGN_FAMILIES):
            raise UsageError(f"{arg('enable_prefix_caching')} is modelled for Gated DeltaNet "
                             "hybrids (Qwen3-Next, Qwen3.5/3.6: vLLM's mamba_cache_mode align); "
                             f"{dep.model} ({dep.family or 'family unknown'}) is not one; drop it",
                             param="enable_prefix_caching")
        if self.release < V0_17:
            raise UsageError(f"{arg('enable_prefix_caching')} on a linear hybrid is modelled from "
                             f"vLLM v0.17 (PR #30877); use {arg('engine', 'vllm@0.17')} or later",
                             param="enable_prefix_caching", related=("engine",))
        return True

    def budget_notes(self, dep: Deployment) -> list[Note]:
        if dep.memory_bytes is None or dep.kv_memory is not None:
            return []
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
        raise UsageError(f"{arg(param)} is modelled for full, sliding-window and MLA attention; "
                         "this model has linear-attention (Mamba) layers beside attention",
                         param=param)
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
                         f"{tp // dep.kv_heads} (it splits the copies of each kv head)",
                         param="dcp", related=("tp",))


def plan_vllm(layout: KvLayout, *, available: int | None, max_num_batched_tokens: int | None = None,
              hybrid_manager: bool = True, dcp: int = 1, release: Release = V0_21) -> VllmPlan:
    """vLLM ``release``'s config for ``layout`` and ``available`` bytes (one stage, default
    block, no GPU)."""
    engine = Vllm(max_num_batched_tokens=max_num_batched_tokens, hybrid_manager=hybrid_manager,
                  release=release)
    return engine.pool(Deployment(layout=layout, dcp=dcp), available)
