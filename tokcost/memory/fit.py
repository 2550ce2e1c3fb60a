"""How much KV cache fits on a GPU, the way vLLM computes it (docs/kvmem.md: the budget),
with a stated ``reserve`` for the activation peak vLLM profiles. Numbers per GPU."""

from __future__ import annotations

import math
from dataclasses import dataclass

from tokcost.errors import UsageError, arg
from tokcost.memory.kv import KvLayout

DEFAULT_RESERVE = 2 * 2**30  # activations, CUDA graphs, NCCL buffers, per GPU
DEFAULT_UTIL = 0.9
DEFAULT_BLOCK = 16
GiB = 2**30


class DoesNotFit(UsageError):
    """The weights alone exceed the memory budget."""

    exit_code = 1


@dataclass(frozen=True)
class GpuFit:
    """The cache budget on one GPU and what it holds."""

    memory_bytes: int | None  # None when kv_memory was given directly
    util: float | None
    weights_bytes: int  # per GPU
    reserve_bytes: int
    available_bytes: int
    block_size: int
    page_bytes: int  # one block across all cache layers
    num_blocks: int
    cache_tokens: int  # num_blocks x block_size
    margin_bytes: int | None = None  # vLLM v0.34: kept free of the device's memory


def gpu_fit(layout: KvLayout, *, memory_bytes: int | None = None, util: float = DEFAULT_UTIL,
            weights: int = 0, reserve: int = DEFAULT_RESERVE, kv_memory: int | None = None,
            block_size: int = DEFAULT_BLOCK, margin: int | None = None) -> GpuFit:
    """Blocks of ``block_size`` tokens that fit, as vLLM's ``determine_num_available_blocks``.
    With ``margin`` (vLLM v0.34's extensible KV cache, measure_kv_cache_bytes): the budget is
    min(ceil(memory x util), memory - margin) - weights - reserve."""
    if kv_memory is not None:
        available, mem, used_util = kv_memory, None, None
    else:
        if memory_bytes is None:
            raise UsageError("give the GPU's memory_bytes, or the kv_memory it leaves")
        if not 0 < util <= 1:
            raise UsageError(f"{arg('gpu_util')} must be in (0, 1], got {util}", param="gpu_util")
        if reserve < 0:
            raise UsageError(f"{arg('reserve')} must not be negative, got {reserve}",
                             param="reserve")
        available = int(memory_bytes * util) - weights - reserve
        if margin is not None:
            available = min(math.ceil(memory_bytes * util),
                            memory_bytes - margin) - weights - reserve
        mem, used_util = memory_bytes, util
        if available <= 0:
            usable = min(memory_bytes * util, memory_bytes - (margin or 0))
            kept = "" if margin is None else f", less a margin of {margin / GiB:.1f} GiB"
            raise DoesNotFit(
                f"nothing is left for the KV cache: {usable / GiB:.1f} GiB usable "
                f"({util:g} x {memory_bytes / GiB:.1f} GiB{kept}) minus {weights / GiB:.1f} GiB "
                f"weights and {reserve / GiB:.1f} GiB reserve; use more GPUs ({arg('tp')}), "
                "a smaller weights dtype, or a larger GPU", param="tp")
    # A page: a block in every token-caching layer (v0's cache_block_size; v1 counts the same).
    page = block_size * layout.bytes_per_token
    if page <= 0:
        raise UsageError("this model caches no tokens (only fixed-state layers)")
    blocks = available // page
    given = kv_memory is not None
    return GpuFit(mem, used_util, 0 if given else weights, 0 if given else reserve, available,
                  block_size, page, blocks, blocks * block_size,
                  None if given else margin)
