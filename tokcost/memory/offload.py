"""A second KV tier in host memory (``kvmem estimate --cpu-offload SIZE``): what vLLM's native
offloading or LMCache's CPU backend holds there, in their blocks; the GPU tier is unchanged.

vLLM's ``--kv-offloading-size`` (GiB, CacheConfig) and ``--kv-offloading-backend``, read in
``vllm/config/vllm.py`` ``_post_init_kv_transfer_config`` of each release's sdist:

- v0.11 has the OffloadingConnector but no such flag (``num_cpu_blocks`` per worker, given in
  ``--kv-transfer-config``): nothing to size by bytes.
- v0.12-v0.13 (the flags' first releases): no backend by default; ``native`` hands the connector
  ``num_cpu_blocks: 0``, which ``vllm/v1/kv_offload/cpu.py`` CPUOffloadingSpec refuses ("must be
  specified"); ``lmcache`` gives LMCacheConnectorV1 ``lmcache.max_local_cpu_size = size /
  (tp x pp)`` GiB per rank.
- v0.14 (PR #24498, ``cpu_bytes_to_use``): ``native`` is the default backend and its
  CPUOffloadingSpec makes ``cpu_bytes_to_use // (page x layers x world_size x factor)`` blocks.
- v0.25 (PR #42865): ``lmcache`` starts LMCacheMPConnector and passes no size: the standalone
  LMCache server owns the capacity.
- v0.27 (PRs #50094, #50301): the native tier lives in one shared mmap region, each block's row
  rounded up to ``mmap.PAGESIZE`` (4 KiB); a pure-MLA cache on TP > 1 (PP, DCP 1) keeps one copy
  of the latent instead of one per rank.

Hybrid caches (sliding, chunked-local and Mamba groups beside full ones), native from v0.21: a
host block is one GPU block id, every layer slot (the GPU tensors' total // num_blocks, so one
block of whichever group holds it), and a request keeps each group's blocks there as the
group's OffloadingGroupConfig bounds them (``HostLayout``; chunked-local groups from v0.28).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tokcost.errors import UsageError, arg
from tokcost.memory.engines.base import Deployment, HostGroup, HostLayout, Release

__all__ = ["BACKENDS", "OffloadTier", "check_offload", "offload_tier"]

BACKENDS = ("native", "lmcache")
# LMCache: tokens per chunk (lmcache/v1/config.py ``chunk_size`` default 256) and its pinned
# allocator's alignment of a chunk (local_cpu_backend.py ``calculate_chunk_budget``: 4 KiB).
LMCACHE_CHUNK = 256
LMCACHE_ALIGN = 4096
# vLLM's SharedOffloadRegion.BLOCK_SIZE_ALIGNMENT = mmap.PAGESIZE (4 KiB on x86-64 and most
# aarch64 Linux), CPUOffloadingSpec's since v0.27 (PR #50094); 1 before it.
PAGE_ALIGN = 4096

FLAGS = Release(0, 12)  # --kv-offloading-size/--kv-offloading-backend (CacheConfig)
NATIVE = Release(0, 14)  # cpu_bytes_to_use (PR #24498), native the default backend
LMCACHE_MP = Release(0, 25)  # lmcache -> LMCacheMPConnector, no size passed (PR #42865)
# OffloadingConnector implements SupportsHMA (offloading_connector.py): hybrid caches
HYBRID = Release(0, 21)
# --kv-offloading-size's connector config is made before the hybrid manager is decided
CONFIG_FIRST = Release(0, 22)
SHARED_REGION = Release(0, 27)  # mmap rows aligned (PR #50094), one MLA copy (PR #50301)
TP_REPLICAS = Release(0, 31)  # one copy decided by kv_tp_replicas: DeepSeek-V3.2's indexer too
# get_sliding_window_size_in_chunks (kv_connector/v1/offloading/scheduler.py) bounds a
# ChunkedLocalAttentionSpec group by its chunk from v0.28; v0.21 to v0.27 assert that every
# group is sliding, Mamba or a FullAttentionSpec, which ChunkedLocalAttentionSpec is not.
CHUNKED = Release(0, 28)
# OffloadingSpec (vllm/v1/kv_offload/base.py; kv_connector/v1/offloading/config.py from v0.26,
# resolve_dcp_kv_block_size from v0.33) takes a group's block as block_size x dcp tokens from
# v0.21: each GPU of the DCP group holds every dcp-th token of it. v0.14 to v0.20 hash and
# offload the cache's own block_size (vllm/v1/kv_offload/spec.py) under DCP: not modelled.
DCP = Release(0, 21)


def check_offload(backend: str, release: Release | None, *, hybrid_manager: bool = True) -> None:
    """Refuse a host tier the given vLLM ``release`` cannot size from ``--kv-offloading-size``
    (None: no release rules, the newest), or does not start with the hybrid KV cache manager
    on (``hybrid_manager``)."""
    if release is None:
        return
    if release < FLAGS:
        raise UsageError(f"{arg('cpu_offload')} is vLLM's kv_offloading_size, which vLLM "
                         f"{release} does not have (its OffloadingConnector counts "
                         f"num_cpu_blocks per worker in its kv_transfer_config); it came in "
                         f"v0.12, and sizes the native tier from v0.14 (PR #24498): use "
                         f"{arg('engine', 'vllm@0.14')} or newer", param="cpu_offload",
                         related=("engine",))
    if backend == "native" and release < NATIVE:
        raise UsageError(f"vLLM {release}'s {arg('offload_backend', 'native')} gives its "
                         f"OffloadingConnector num_cpu_blocks 0, which CPUOffloadingSpec "
                         f"refuses; native offloading takes its size from v0.14 (PR #24498): "
                         f"use {arg('engine', 'vllm@0.14')} or newer, or "
                         f"{arg('offload_backend', 'lmcache')}", param="offload_backend",
                         related=("engine", "cpu_offload"))
    # vllm/config/vllm.py __post_init__ decides the hybrid KV cache manager (HMA) before
    # _post_init_kv_transfer_config makes the connector's config out of --kv-offloading-size,
    # so the connector it turns HMA off for is not there yet; kv_connector/factory.py then
    # refuses a connector without SupportsHMA ("does not support HMA but HMA is enabled"),
    # whatever the model. Native: OffloadingConnector has SupportsHMA from v0.21; LMCache:
    # LMCacheConnectorV1 never has it, and from v0.22 the connector's config comes first.
    hma_from = HYBRID if backend == "native" else CONFIG_FIRST
    if hybrid_manager and release < hma_from:
        who = "OffloadingConnector" if backend == "native" else "LMCacheConnectorV1"
        raise UsageError(f"vLLM {release} refuses to start {who} for "
                         f"{arg('cpu_offload')} with its hybrid KV cache manager on (\"does not "
                         f"support HMA but HMA is enabled\": the manager is decided before "
                         f"kv_offloading_size makes the connector); give "
                         f"{arg('hybrid_manager', False)} (vLLM's "
                         f"disable_hybrid_kv_cache_manager), "
                         f"or {arg('engine', 'vllm@' + str(hma_from).lstrip('v'))} or newer",
                         param="cpu_offload", related=("hybrid_manager", "engine"))
    if backend == "lmcache" and release >= LMCACHE_MP:
        raise UsageError(f"vLLM {release}'s {arg('offload_backend', 'lmcache')} starts "
                         f"LMCacheMPConnector and passes it no size (PR #42865, v0.25): the "
                         f"LMCache server sizes its own store; {arg('cpu_offload')} sizes "
                         f"LMCache as {arg('engine', 'vllm@0.24')} and older gave it "
                         f"(LMCacheConnectorV1, a share per GPU)", param="offload_backend",
                         related=("engine", "cpu_offload"))


@dataclass(frozen=True)
class OffloadTier:
    """Host memory holding KV blocks the GPU evicted, reloaded instead of recomputed."""

    backend: str  # native or lmcache
    size_bytes: int  # host memory given, all GPUs together
    ranks: int  # GPUs (tp x pp), each holding its share of every token
    block_tokens: int  # tokens per host block: the GPU block (native), the chunk (LMCache)
    block_bytes: int  # one block's share on one GPU (LMCache: aligned to 4 KiB)
    blocks: int
    copies: int = 0  # the shares a host block stores: ranks, or 1 (replicated MLA); 0: ranks
    row_bytes: int = 0  # host bytes per block, every share and padding; 0: block x copies
    groups: tuple[HostGroup, ...] = ()  # a hybrid cache's groups (empty: one full group)

    def __post_init__(self) -> None:
        if not self.copies:
            object.__setattr__(self, "copies", self.ranks)
        if not self.row_bytes:
            object.__setattr__(self, "row_bytes", self.block_bytes * self.copies)

    @property
    def hybrid(self) -> bool:
        """Groups that keep different blocks of a request (a hybrid cache, or sliding layers
        only, which keep their window): blocks and tokens are then counted per request."""
        return bool(self.groups)

    def request_blocks(self, context: int) -> int:
        """Host blocks one ``context``-token request keeps, all groups together."""
        if not self.hybrid:
            return -(-context // self.block_tokens)
        return HostLayout(self.block_bytes, self.groups).blocks(context)

    @property
    def tokens(self) -> int:
        """The tokens its blocks hold (a hybrid's blocks are shared by its groups: tokens_at)."""
        return self.blocks * self.block_tokens

    def tokens_at(self, max_model_len: int) -> int:
        """Tokens the tier holds: its blocks' tokens; a hybrid's as vLLM counts them for
        requests of ``max_model_len`` (v0.33's cpu_kv_cache_size_tokens,
        vllm/v1/kv_offload/cpu/common.py: chunks x max_model_len // chunks per request)."""
        if not self.hybrid:
            return self.tokens
        return self.blocks * max_model_len // self.request_blocks(max_model_len)

    def sequences(self, context: int) -> int:
        """Whole ``context``-token sequences the tier holds."""
        return self.blocks // self.request_blocks(context)

    def to_dict(self, contexts: tuple[int, ...]) -> dict[str, Any]:
        data = {"backend": self.backend, "size_bytes": self.size_bytes, "ranks": self.ranks,
                "block_tokens": self.block_tokens, "block_bytes_per_gpu": self.block_bytes,
                "copies": self.copies, "block_bytes_host": self.row_bytes,
                "blocks": self.blocks, "tokens": self.tokens_at(max(contexts)),
                "sequences": {str(c): self.sequences(c) for c in contexts}}
        if self.hybrid:
            data["groups"] = [{"block_tokens": g.block_size, "blocks_kept": g.kept}
                              for g in self.groups]
            data["blocks_per_request"] = {str(c): self.request_blocks(c) for c in contexts}
        return data


def offload_tier(size: int, backend: str, dep: Deployment, *, block: int,
                 release: Release | None = None, hybrid_manager: bool = True,
                 host: HostLayout | None = None) -> OffloadTier:
    """The host tier of ``size`` bytes for ``dep``'s cache (its fullest pipeline stage per GPU,
    over tp x pp GPUs) in GPU blocks of ``block`` tokens, as vLLM ``release`` (None: the newest
    modelled) sizes it (``KvRequest`` has refused what ``check_offload`` refuses); ``host``:
    the engine's block ids and groups (vLLM's plan), which a hybrid cache needs."""
    hybrid = _check_layout(backend, dep, release, hybrid_manager, host)
    if backend == "native":
        return _native(size, dep, block, release, host, hybrid)
    # LMCache's LocalCPUBackend (read in lmcache 0.3.13): max_local_cpu_size x 2**30 bytes per
    # rank, chunks of kv_size (1 for MLA, else 2) x layers x chunk_size x heads x head_size x
    # the cache dtype's itemsize, each aligned to 4 KiB (local_cpu_backend.py
    # get_full_chunk_size, calculate_chunk_budget). kv_shape is the rank's: its stage's
    # layers, its TP share of the KV heads (integration/vllm/utils.py). It has no room for
    # DeepSeek-V3.2's indexer keys, which vLLM keeps beside the latent.
    stage, ranks = dep.stage_layout, dep.layout.tp * dep.pp
    mla_layers = sum(1 for kind in stage.layers if kind == "mla")
    per_token = stage.bytes_per_token - stage.indexer_bytes * mla_layers
    chunk = -(-LMCACHE_CHUNK * per_token // LMCACHE_ALIGN) * LMCACHE_ALIGN
    return OffloadTier(backend, size, ranks, LMCACHE_CHUNK, chunk, size // ranks // chunk)


def _check_layout(backend: str, dep: Deployment, release: Release | None,
                  hybrid_manager: bool, host: HostLayout | None) -> bool:
    """Refuse a layout the backend of ``release`` does not offload; whether it is hybrid
    (groups that keep different blocks of a request)."""
    stage, model = dep.stage_layout, dep.model
    if dep.dcp > 1 and (backend != "native" or host is None
                        or (release is not None and release < DCP)):
        raise UsageError(f"{arg('cpu_offload')} with decode context parallel is modelled for "
                         f"vLLM's native offload from v0.21 (a host block spans block x dcp "
                         f"tokens there); drop {arg('dcp')}" + (
                             f" or use {arg('engine', 'vllm@0.21')} or newer"
                             if backend == "native" else ""),
                         param="cpu_offload", related=("dcp", "engine"))
    kinds_here = set(stage.layers)
    # --disable-hybrid-kv-cache-manager caches a sliding layer beside full ones as a full one
    # (vllm/v1/core/kv_cache_utils.py unify_hybrid_kv_cache_specs): one group, every token.
    unified = (not hybrid_manager and not stage.chunked and "sliding" in kinds_here
               and kinds_here <= {"full", "sliding", "mla"} and len(kinds_here) > 1)
    hybrid = not stage.uniform and not unified
    if hybrid and (backend != "native" or host is None
                   or (release is not None and release < HYBRID)):
        kinds = sorted({k for k in stage.layers if k not in ("full", "mla")})
        why = ("vLLM's CPU offload takes one KV cache group" if release is not None
               and release < HYBRID else "LMCache's connector takes one KV cache group"
               if backend != "native" else "this engine's groups are not known")
        if "sliding" in kinds_here and not stage.chunked and len(kinds_here) > 1:
            why += f"; with {arg('hybrid_manager', False)} its sliding layers are full ones"
        raise UsageError(f"{arg('cpu_offload')} sizes the host tier of full-attention and MLA "
                         f"caches here ({why}); {model} has {', '.join(kinds)} layers"
                         + (f" (vLLM's native offload takes them from v0.21: "
                            f"{arg('engine', 'vllm@0.21')} or newer)" if backend == "native"
                            else ""),
                         param="cpu_offload", related=("hybrid_manager", "engine"))
    if hybrid and stage.chunked and release is not None and release < CHUNKED:
        raise UsageError(f"vLLM {release}'s native offload stops at start-up on {model}'s "
                         "chunked local attention (get_sliding_window_size_in_blocks asserts a "
                         "FullAttentionSpec; the chunk is read from v0.28, kv_connector/v1/"
                         f"offloading/scheduler.py): use {arg('engine', 'vllm@0.28')} or newer",
                         param="cpu_offload", related=("engine",))
    return hybrid


def _native(size: int, dep: Deployment, block: int, release: Release | None,
            host: HostLayout | None, hybrid: bool) -> OffloadTier:
    """vLLM's native tier: one GPU block id's bytes per host block, a copy per rank."""
    stage, tp, pp = dep.stage_layout, dep.layout.tp, dep.pp
    rocm = dep.gpu is not None and (dep.gpu.architecture or "").startswith("cdna")
    ranks = tp * pp
    # CPUOffloadingSpec (vllm/v1/kv_offload/cpu.py, cpu/spec.py from v0.19): num_blocks =
    # cpu_bytes_to_use // (page_size_bytes x len(kv_cache_tensors) x world_size x
    # block_size_factor); v0.20 (PR #39617) reads the same bytes as the GPU tensors' size
    # // num_blocks. One tensor per layer; the offloaded block is the GPU block (factor 1:
    # kv_connector_extra_config "block_size" unset). The scheduler's KVCacheConfig is the first
    # worker's (kv_cache_utils.py generate_scheduler_kv_cache_config: kv_cache_configs[0]),
    # whose tensors are the first pipeline stage's layers: they set the row for every stage.
    page = (block * dep.layout.take(dep.stages[0]).bytes_per_token if host is None
            else host.block_bytes)
    copies, align = ranks, 1
    if release is None or release >= SHARED_REGION:
        align = PAGE_ALIGN  # round_up(kv_bytes_per_chunk, BLOCK_SIZE_ALIGNMENT)
        # kv_connector/v1/offloading/config.py replicated_layout: use_mla, TP > 1, PP = PCP
        # = DCP = 1, world_size = tp, one node (mp executor); then num_copies = 1 on CUDA's
        # shared region. v0.27-v0.30 also ask for one bare MLAAttentionSpec group, which
        # DeepSeek-V3.2's indexer cache breaks; from v0.31 it is kv_tp_replicas == tp
        # (kv_cache_utils.py kv_cache_groups_tp_replicas), and the indexer's spec has
        # max_tp_shards=1 like MLA's (models/deepseek_v2.py), so it counts as replicated.
        indexer_ok = not stage.indexer_bytes or release is None or release >= TP_REPLICAS
        mla = set(stage.layers) == {"mla"} and indexer_ok
        # _uses_shared_region: CUDA (not ROCm) or XPU; ROCm keeps a private tensor per rank.
        if mla and tp > 1 and pp == 1 and dep.dcp == 1 and not rocm:
            copies = 1
    row = -(-page * copies // align) * align
    # From v0.21 each group keeps what get_sliding_window_size_in_blocks bounds: a
    # sliding-only cache (one group) its window too; before, every block (one group)
    groups: tuple[HostGroup, ...] = ()
    if host is not None and (release is None or release >= HYBRID) and (
            hybrid or any(g.kept is not None for g in host.groups)):
        groups = host.groups
    # a host block spans block x dcp tokens (DCP above)
    return OffloadTier("native", size, ranks, block * dep.dcp, page, size // row, copies, row,
                       groups)
