"""The one paged-KV block allocator: a free list of block ids with reference counts.

vLLM's block manager in miniature. A sequence's block table lists the ids it reads;
parallel samples of one prompt list the same ids (one reference each), and a sample
about to write into a block it shares gets a private copy first (copy-on-write).
The reference cache (tokcost.reference.cache) stores real keys and values in these
blocks; the serving simulation (tokcost.memory.simulate) only counts them. Pure
Python, so ``kvmem`` never imports numpy through it.
"""

from __future__ import annotations

from tokcost.errors import TokcostError

__all__ = ["BlockAllocator", "OutOfBlocks"]


class OutOfBlocks(TokcostError):
    """Every block of the pool is in use."""


class BlockAllocator:
    """``num_blocks`` block ids, handed out lowest first, freed when no one holds them.

    >>> a = BlockAllocator(3)
    >>> b = a.allocate(); a.incref(b); a.refcount(b)
    2
    >>> a.copy_on_write(b) != b, a.refcount(b), a.num_free  # the writer gets its own copy
    (True, 1, 1)
    >>> a.decref(b); a.num_free
    2
    """

    def __init__(self, num_blocks: int) -> None:
        self.num_blocks = num_blocks
        # Pop from the end, so block 0 is handed out first.
        self._free = list(range(num_blocks - 1, -1, -1))
        self._refs = [0] * num_blocks

    def _exhausted(self) -> TokcostError:
        """The error ``allocate`` raises on an empty pool (a caller may speak its own words)."""
        return OutOfBlocks(f"all {self.num_blocks} KV blocks are in use")

    def allocate(self) -> int:
        """A free block, now held once."""
        if not self._free:
            raise self._exhausted()
        block = self._free.pop()
        self._refs[block] = 1
        return block

    def incref(self, block: int, count: int = 1) -> None:
        """``count`` more holders of a live block (e.g. the other samples of a fork)."""
        if self._refs[block] < 1:
            raise ValueError(f"block {block} is free")
        self._refs[block] += count

    def decref(self, block: int) -> None:
        """One holder lets go; the last one returns the block to the free list."""
        if self._refs[block] < 1:
            raise ValueError(f"block {block} is already free")
        self._refs[block] -= 1
        if self._refs[block] == 0:
            self._free.append(block)

    def copy_on_write(self, block: int) -> int:
        """The block a holder of ``block`` may write: ``block`` itself when it is the only
        holder, else a newly allocated one (the caller copies the contents) while ``block``
        keeps its other holders."""
        if self._refs[block] < 2:
            return block
        fresh = self.allocate()
        self.decref(block)
        return fresh

    def refcount(self, block: int) -> int:
        return self._refs[block]

    @property
    def num_free(self) -> int:
        return len(self._free)

    @property
    def num_used(self) -> int:
        return self.num_blocks - len(self._free)
