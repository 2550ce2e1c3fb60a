"""A second KV tier in host memory (``kvmem estimate --cpu-offload SIZE``): what vLLM's native
offloading or LMCache's CPU backend holds there, in their blocks; the GPU tier is unchanged.

vLLM (vllm/config/vllm.py ``_post_init_kv_transfer_config``, CacheConfig's
``--kv-offloading-size`` GiB and ``--kv-offloading-backend``, native by default since PR #32421):
``native`` gives the OffloadingConnector ``cpu_bytes_to_use = size x 2**30`` for the whole
engine; ``lmcache`` gave LMCacheConnectorV1 ``lmcache.max_local_cpu_size = size / (tp x pp)``
GiB per rank (newer vLLM starts LMCacheMPConnector and LMCache's own ``max_local_cpu_size``
sets that share)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tokcost.errors import UsageError, arg
from tokcost.memory.kv import KvLayout

__all__ = ["BACKENDS", "OffloadTier", "offload_tier"]

BACKENDS = ("native", "lmcache")
# LMCache: tokens per chunk (lmcache/v1/config.py ``chunk_size`` default 256) and its pinned
# allocator's alignment of a chunk (local_cpu_backend.py ``calculate_chunk_budget``: 4 KiB).
LMCACHE_CHUNK = 256
LMCACHE_ALIGN = 4096


@dataclass(frozen=True)
class OffloadTier:
    """Host memory holding KV blocks the GPU evicted, reloaded instead of recomputed."""

    backend: str  # native or lmcache
    size_bytes: int  # host memory given, all GPUs together
    ranks: int  # GPUs (tp x pp), each holding its share of every token
    block_tokens: int  # tokens per host block: the GPU block (native), the chunk (LMCache)
    block_bytes: int  # one block's share on one GPU (LMCache: aligned to 4 KiB)
    blocks: int

    @property
    def tokens(self) -> int:
        return self.blocks * self.block_tokens

    def sequences(self, context: int) -> int:
        """Whole ``context``-token sequences the tier holds."""
        return self.blocks // -(-context // self.block_tokens)

    def to_dict(self, contexts: tuple[int, ...]) -> dict[str, Any]:
        return {"backend": self.backend, "size_bytes": self.size_bytes, "ranks": self.ranks,
                "block_tokens": self.block_tokens, "block_bytes_per_gpu": self.block_bytes,
                "blocks": self.blocks, "tokens": self.tokens,
                "sequences": {str(c): self.sequences(c) for c in contexts}}


def offload_tier(size: int, backend: str, *, stage: KvLayout, ranks: int, block: int,
                 model: str) -> OffloadTier:
    """The host tier of ``size`` bytes for a cache whose fullest pipeline stage is ``stage``
    (per GPU), over ``ranks`` GPUs (tp x pp), with GPU blocks of ``block`` tokens."""
    if not stage.uniform:
        kinds = sorted({k for k in stage.layers if k not in ("full", "mla")})
        raise UsageError(f"{arg('cpu_offload')} sizes the host tier of full-attention and MLA "
                         f"caches (vLLM's CPU offload takes one KV cache group); {model} has "
                         f"{', '.join(kinds)} layers", param="cpu_offload")
    per_token = stage.bytes_per_token  # one rank's bytes per token, its layers
    if backend == "native":
        # vllm/v1/kv_offload/cpu/spec.py CPUOffloadingSpec: num_blocks = cpu_bytes_to_use //
        # (page_size_bytes x len(kv_cache_tensors) x world_size x block_size_factor); one
        # tensor per layer, and the offloaded block is the GPU block (block_size_factor 1).
        page = block * per_token
        return OffloadTier(backend, size, ranks, block, page, size // (page * ranks))
    # LMCache's LocalCPUBackend: max_local_cpu_size x 2**30 bytes per rank, chunks of
    # chunk_size tokens x the rank's bytes per token, each aligned to 4 KiB.
    chunk = -(-LMCACHE_CHUNK * per_token // LMCACHE_ALIGN) * LMCACHE_ALIGN
    return OffloadTier(backend, size, ranks, LMCACHE_CHUNK, chunk, size // ranks // chunk)
