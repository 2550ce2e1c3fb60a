"""How much KV cache fits on a GPU, computed the way vLLM does it.

vLLM sizes its cache after loading the weights and profiling one forward pass::

    available = memory x gpu_memory_utilization - weights - activation/overhead peak
    num_blocks = floor(available / (block_size x bytes_per_token_per_layer x layers))
    max concurrency for L-token requests = num_blocks / ceil(L / block_size)

It logs ``available`` as "Available KV cache memory"; pass that with ``kv_memory``
to skip the estimate. tokcost cannot profile, so the activation peak is a stated
``reserve`` (default 2 GiB per GPU). Under tensor parallelism every number is per GPU:
weights and kv heads are split ``tp`` ways.

Decode and prefill speed (the roofline: the slower of bandwidth and compute) live in
``tokcost.memory.roofline``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tokcost.errors import UsageError
from tokcost.memory.kv import KvLayout

DEFAULT_RESERVE = 2 * 2**30  # activations, CUDA graphs, NCCL buffers, per GPU
DEFAULT_UTIL = 0.9
DEFAULT_BLOCK = 16


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

    def blocks_per_request(self, context: int) -> int:
        return math.ceil(context / self.block_size)


def gpu_fit(
    layout: KvLayout,
    *,
    memory_bytes: int | None = None,
    util: float = DEFAULT_UTIL,
    weights: int = 0,
    reserve: int = DEFAULT_RESERVE,
    kv_memory: int | None = None,
    block_size: int = DEFAULT_BLOCK,
) -> GpuFit:
    """Blocks of ``block_size`` tokens that fit, as vLLM's ``determine_num_available_blocks``.

    Worked example (Llama-3.1-8B, bf16, one 80 GiB GPU at 0.9, 2 GiB reserve)::

        available  = 77,309,411,328 - 16,060,000,000 weights - 2,147,483,648
                   = 59,101,927,680 B
        page bytes = 16 tokens x 4,096 B x 32 layers = 2,097,152 B
        num_blocks = floor(59,101,927,680 / 2,097,152) = 28,181 -> 450,896 tokens
        8k requests: 28,181 / ceil(8192 / 16) = 55.04 at once
    """
    if block_size <= 0:
        raise UsageError(f"block_size must be a positive integer, got {block_size}",
                         param="block_size")
    if kv_memory is not None:
        available, mem, used_util = kv_memory, None, None
    else:
        if memory_bytes is None:
            raise UsageError("give the GPU's memory_bytes, or the kv_memory it leaves")
        if not 0 < util <= 1:
            raise UsageError(f"gpu_util must be in (0, 1], got {util}", param="gpu_util")
        if reserve < 0:
            raise UsageError(f"reserve must not be negative, got {reserve}", param="reserve")
        budget = int(memory_bytes * util)
        available = budget - weights - reserve
        mem, used_util = memory_bytes, util
        if available <= 0:
            raise DoesNotFit(
                f"nothing is left for the KV cache: {memory_bytes * util / 2**30:.1f} GiB usable "
                f"({util:g} of {memory_bytes / 2**30:.1f} GiB) minus {weights / 2**30:.1f} GiB "
                f"weights and {reserve / 2**30:.1f} GiB reserve; use more GPUs (tp), "
                f"a smaller weights dtype, or a larger GPU", param="tp"
            )
    # One page = a block of tokens in every layer that caches tokens (vLLM v0's
    # cache_block_size; v1 gets the same count from per-layer pages).
    page = block_size * layout.bytes_per_token
    if page <= 0:
        raise UsageError("this model caches no tokens (only fixed-state layers)")
    blocks = available // page
    return GpuFit(
        memory_bytes=mem,
        util=used_util,
        weights_bytes=weights if kv_memory is None else 0,
        reserve_bytes=reserve if kv_memory is None else 0,
        available_bytes=available,
        block_size=block_size,
        page_bytes=page,
        num_blocks=blocks,
        cache_tokens=blocks * block_size,
    )


def max_concurrency(layout: KvLayout, fit: GpuFit, context: int) -> float:
    """Requests of ``context`` tokens served at once (vLLM's "Maximum concurrency").

    Uniform models: ``num_blocks / ceil(context / block)``. Models with sliding or
    linear layers need fewer bytes per long request; for them it is
    ``available / paged bytes of one request``.
    """
    if context <= 0:
        raise UsageError(f"context length must be positive, got {context}")
    if layout.uniform:
        return fit.num_blocks / fit.blocks_per_request(context)
    return fit.available_bytes / layout.sequence_bytes(context, fit.block_size)


def largest_context(layout: KvLayout, fit: GpuFit, *, batch: int = 1, limit: int) -> int:
    """Longest context (<= ``limit``) for which ``batch`` sequences fit the budget."""
    if batch <= 0:
        raise UsageError(f"batch must be a positive integer, got {batch}", param="batch")

    def fits(n: int) -> bool:
        return batch * layout.sequence_bytes(n, fit.block_size) <= fit.available_bytes

    if not fits(1):
        return 0
    lo, hi = 1, limit
    if fits(hi):
        return hi
    while lo < hi - 1:  # invariant: fits(lo), not fits(hi)
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo
