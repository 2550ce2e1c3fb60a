"""How much KV cache fits on a GPU, computed the way vLLM does it.

vLLM sizes its cache after loading the weights and profiling one forward pass::

    available = memory x gpu_memory_utilization - weights - activation/overhead peak
    num_blocks = floor(available / (block_size x bytes_per_token_per_layer x layers))

It logs ``available`` as "Available KV cache memory"; ``kv_memory`` takes that figure
instead. tokcost cannot profile, so the activation peak is a stated ``reserve`` (2 GiB per
GPU by default). Under tensor parallelism every number is per GPU.
"""

from __future__ import annotations

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


def gpu_fit(layout: KvLayout, *, memory_bytes: int | None = None, util: float = DEFAULT_UTIL,
            weights: int = 0, reserve: int = DEFAULT_RESERVE, kv_memory: int | None = None,
            block_size: int = DEFAULT_BLOCK) -> GpuFit:
    """Blocks of ``block_size`` tokens that fit, as vLLM's ``determine_num_available_blocks``.

    Llama-3.1-8B, bf16, one 80 GiB GPU at 0.9, 2 GiB reserve: 77,309,411,328 - 16.06e9
    weights - 2,147,483,648 = 59,101,927,680 B; a block is 16 x 131,072 B = 2 MiB, so
    28,181 blocks hold 450,896 tokens.
    """
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
        mem, used_util = memory_bytes, util
        if available <= 0:
            raise DoesNotFit(
                f"nothing is left for the KV cache: {memory_bytes * util / GiB:.1f} GiB usable "
                f"({util:g} of {memory_bytes / GiB:.1f} GiB) minus {weights / GiB:.1f} GiB "
                f"weights and {reserve / GiB:.1f} GiB reserve; use more GPUs ({arg('tp')}), "
                "a smaller weights dtype, or a larger GPU", param="tp"
            )
    # One page = a block of tokens in every layer that caches tokens (vLLM v0's
    # cache_block_size; v1 gets the same count from per-layer pages).
    page = block_size * layout.bytes_per_token
    if page <= 0:
        raise UsageError("this model caches no tokens (only fixed-state layers)")
    blocks = available // page
    given = kv_memory is not None
    return GpuFit(mem, used_util, 0 if given else weights, 0 if given else reserve, available,
                  block_size, page, blocks, blocks * block_size)
