"""The one paged-KV block allocator (vLLM's block manager in miniature): block ids with
reference counts and copy-on-write, for the reference cache (real keys and values; the serving
simulation counts blocks without ids). Pure Python."""

from __future__ import annotations

from tokcost.errors import TokcostError, UsageError, arg

__all__ = ["MAX_BLOCK_SIZE", "BlockAllocator", "OutOfBlocks", "check_block_size"]

MAX_BLOCK_SIZE = 4096  # tokens in one paged block; engines use 8 to 256


class OutOfBlocks(TokcostError):
    """Every block of the pool is in use."""


class BlockAllocator:
    """``num_blocks`` block ids, handed out lowest first, freed when no one holds them."""

    def __init__(self, num_blocks: int) -> None:
        self.num_blocks = num_blocks
        # Ids from _fresh up are free, unlisted (a billion cost nothing); freed ones reused first.
        self._free: list[int] = []
        self._fresh = 0
        self._refs: dict[int, int] = {}

    def _exhausted(self) -> TokcostError:
        """The error of an empty pool (a subclass may speak its own words)."""
        return OutOfBlocks(f"all {self.num_blocks} KV blocks are in use")

    def allocate(self) -> int:
        if self._free:
            block = self._free.pop()
        elif self._fresh < self.num_blocks:
            block = self._fresh
            self._fresh += 1
        else:
            raise self._exhausted()
        self._refs[block] = 1
        return block

    def incref(self, block: int, count: int = 1) -> None:
        if self._refs.get(block, 0) < 1:
            raise ValueError(f"block {block} is free")
        self._refs[block] += count

    def decref(self, block: int) -> None:
        if self._refs.get(block, 0) < 1:
            raise ValueError(f"block {block} is already free")
        self._refs[block] -= 1
        if self._refs[block] == 0:
            del self._refs[block]
            self._free.append(block)

    def copy_on_write(self, block: int) -> int:
        """The block a holder may write: itself if held once, else a new one (caller copies)."""
        if self._refs[block] < 2:
            return block
        fresh = self.allocate()
        self.decref(block)
        return fresh

    def refcount(self, block: int) -> int:
        return self._refs.get(block, 0)

    @property
    def num_free(self) -> int:
        return len(self._free) + self.num_blocks - self._fresh

    @property
    def num_used(self) -> int:
        return len(self._refs)


def check_block_size(block_size: int, max_len: int | None = None) -> None:
    """Refuse a paged block outside ``[1, min(max_len, MAX_BLOCK_SIZE)]`` (a longer one only
    wastes its tail)."""
    if block_size < 1:
        raise UsageError(f"{arg('block_size')} must be >= 1, got {block_size}", param="block_size")
    top = MAX_BLOCK_SIZE if max_len is None else max(1, min(max_len, MAX_BLOCK_SIZE))
    if block_size > top:
        why = f": at most {arg('max_len', max_len)}, the longest sequence" if top == max_len else ""
        raise UsageError(f"{arg('block_size', block_size)} is out of range; give 1 to {top:,} "
                         f"tokens{why} (serving engines use 8 to 128)",
                         param="block_size", related=("max_len",) if why else ())
