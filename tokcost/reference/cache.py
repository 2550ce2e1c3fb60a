"""Key/Value caches: the notes each layer keeps about tokens it has already seen.

Three ways to keep them, all behind one small surface (``update`` then ``advance``):

- no cache: the model recomputes every key and value each step (``cache=None``);
- ``ContiguousCache``: one reserved slab per sequence, sized for the longest
  length it may reach (what serving systems did before PagedAttention);
- ``PagedCache``: fixed-size blocks from a shared pool, a block table per
  sequence, the free-list allocator with reference counts that the serving
  simulation uses too (tokcost.memory.blocks), and copy-on-write so parallel
  samples share the prompt's blocks until one of them writes.

Every cache works on a batch of sequences that advance in lockstep (the ``n``
parallel samples of one prompt), so all sequences hold the same number of tokens.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from tokcost.errors import TokcostError
from tokcost.memory import blocks
from tokcost.reference.errors import CacheFull

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from tokcost.reference.config import RefConfig

    Array = NDArray[np.float32]


@dataclass(frozen=True)
class BlockEvent:
    """One change to the paged cache's block tables, in the order it happened.

    ``allocate``: a fresh block from the pool enters ``sequence``'s table at logical
    ``block`` (it holds positions block x block_size ...). ``share``: after the
    prompt is prefilled, the samples fork and every table refers to ``physical``;
    ``holders`` is its reference count. ``copy_on_write``: ``sequence`` is about to
    write ``position`` into the shared block ``source``, so it gets ``physical``, a
    copy, and ``source`` keeps ``holders`` other holders. ``sequence`` is the sample's
    index (None: the prompt's blocks, shared by all samples; ``generate`` marks the
    prefill's allocations so too).
    """

    kind: Literal["allocate", "share", "copy_on_write"]
    sequence: int | None
    block: int
    physical: int
    position: int  # first position the sequence writes (share: the prompt's length)
    source: int | None = None
    holders: int = 1


class KVCache(ABC):
    """What the model needs from a cache. ``length`` tokens are held per sequence."""

    def __init__(self, cfg: RefConfig, batch: int = 1) -> None:
        self.cfg = cfg
        self.batch = batch
        self.length = 0

    @abstractmethod
    def update(self, layer: int, k: Array, v: Array) -> tuple[Array, Array]:
        """Store k, v (B, nkv, T, hs) at positions length..length+T-1 of ``layer``;
        return all keys and values so far, each (B, nkv, length+T, hs)."""

    def advance(self, tokens: int) -> None:
        """Called once after every layer has stored ``tokens`` new positions."""
        self.length += tokens

    def positions(self, layer: int) -> NDArray[np.int64] | None:
        """Positions of the keys ``update`` returned (B, nkv, S), when they are not simply
        0..S-1 (an evicting cache, tokcost.reference.kvpolicy)."""
        return None

    def observe(self, layer: int, att: Array) -> None:  # noqa: B027 (a hook: most ignore it)
        """This step's attention weights (B, nkv, g, T, S), for policies that score keys."""

    @abstractmethod
    def fork(self, n: int) -> None:
        """Turn a one-sequence cache into ``n`` sequences that share its contents."""

    @property
    @abstractmethod
    def nbytes(self) -> int:
        """Bytes of key/value storage the cache holds for its sequences right now."""

    @property
    def token_bytes(self) -> int:
        """Bytes holding real token states: batch x length x bytes per token."""
        return self.batch * self.length * self.cfg.kv_bytes_per_token


class ContiguousCache(KVCache):
    """One slab per sequence, reserved up front for ``capacity`` tokens.

    >>> from tokcost.reference.config import RefConfig
    >>> cfg = RefConfig(layers=2, hidden_size=16, attention_heads=2, kv_heads=1,
    ...                 head_dim=8, vocab_size=10, context_window=64)
    >>> ContiguousCache(cfg, capacity=10).nbytes  # 2 x 2 layers x 1 head x 10 x 8 x 4 B
    1280
    """

    def __init__(self, cfg: RefConfig, capacity: int, batch: int = 1) -> None:
        super().__init__(cfg, batch)
        self.capacity = capacity
        shape = (cfg.layers, batch, cfg.kv_heads, capacity, cfg.head_dim)
        self.k = np.zeros(shape, dtype=np.float32)  # (L, B, nkv, cap, hs)
        self.v = np.zeros(shape, dtype=np.float32)  # (L, B, nkv, cap, hs)

    def update(self, layer: int, k: Array, v: Array) -> tuple[Array, Array]:
        t = k.shape[2]
        end = self.length + t
        if end > self.capacity:
            raise CacheFull(
                f"contiguous cache reserved {self.capacity} tokens but needs {end}; "
                "reserve a larger capacity"
            )
        self.k[layer, :, :, self.length : end] = k
        self.v[layer, :, :, self.length : end] = v
        return self.k[layer, :, :, :end], self.v[layer, :, :, :end]  # (B, nkv, S, hs)

    def fork(self, n: int) -> None:
        if self.batch != 1:
            raise ValueError("fork() needs a one-sequence cache")
        # A contiguous slab cannot be shared: each sample gets its own copy of the prompt.
        self.k = np.repeat(self.k, n, axis=1)  # (L, n, nkv, cap, hs)
        self.v = np.repeat(self.v, n, axis=1)
        self.batch = n

    @property
    def nbytes(self) -> int:
        return int(self.k.nbytes + self.v.nbytes)


class BlockAllocator(blocks.BlockAllocator):
    """The one block allocator (tokcost.memory.blocks), out of blocks in the reference's words.

    >>> a = BlockAllocator(3)
    >>> b = a.allocate(); a.incref(b); a.refcount(b)
    2
    >>> a.decref(b); a.decref(b); a.num_free
    3
    """

    def _exhausted(self) -> TokcostError:
        return CacheFull(
            f"all {self.num_blocks} KV blocks are in use; allocate a larger pool "
            "(more blocks) or generate fewer tokens"
        )


class PagedCache(KVCache):
    """Blocks of ``block_size`` tokens from a pool; a block table maps each
    sequence's logical block i to a physical block id (vLLM's PagedAttention).

    Keys and values of all layers live in one pool indexed by the same block ids,
    so one block table serves every layer.
    """

    def __init__(self, cfg: RefConfig, block_size: int, num_blocks: int) -> None:
        super().__init__(cfg, batch=1)
        if block_size < 1:
            raise ValueError(f"block_size must be >= 1, got {block_size}")
        self.block_size = block_size
        self.allocator = BlockAllocator(num_blocks)
        shape = (cfg.layers, num_blocks, cfg.kv_heads, block_size, cfg.head_dim)
        self.k_pool = np.zeros(shape, dtype=np.float32)  # (L, nb, nkv, bs, hs)
        self.v_pool = np.zeros(shape, dtype=np.float32)  # (L, nb, nkv, bs, hs)
        self.tables: list[list[int]] = [[]]
        self.copies = 0  # copy-on-write events, for generate(explain) and the tests
        # Set to a list to record every BlockEvent (generate's explain drains it).
        self.events: list[BlockEvent] | None = None

    @property
    def block_bytes(self) -> int:
        """2 (K and V) x layers x kv_heads x block_size x head_dim x 4 bytes."""
        return self.cfg.kv_bytes_per_token * self.block_size

    def _prepare(self, tokens: int) -> None:
        """Give every sequence a private, writable block for each new position."""
        first = self.length // self.block_size
        last = (self.length + tokens - 1) // self.block_size
        for seq, table in enumerate(self.tables):
            for i in range(first, last + 1):
                at = max(self.length, i * self.block_size)  # first position written in block i
                if i == len(table):
                    table.append(self.allocator.allocate())
                    self._record("allocate", seq, i, table[i], at)
                else:
                    # Copy-on-write: a sequence about to write into a shared block gets
                    # its own copy; the old block keeps its other holders.
                    old = table[i]
                    new = self.allocator.copy_on_write(old)
                    if new != old:
                        self.k_pool[:, new] = self.k_pool[:, old]
                        self.v_pool[:, new] = self.v_pool[:, old]
                        table[i] = new
                        self.copies += 1
                        self._record("copy_on_write", seq, i, new, at, source=old,
                                     holders=self.allocator.refcount(old))

    def update(self, layer: int, k: Array, v: Array) -> tuple[Array, Array]:
        t = k.shape[2]
        if layer == 0:
            self._prepare(t)
        pos = np.arange(self.length, self.length + t)  # (T,)
        offs = pos % self.block_size  # (T,)
        end = self.length + t
        nblk = -(-end // self.block_size)
        ks, vs = [], []
        for b, table in enumerate(self.tables):
            blocks = np.asarray(table)[pos // self.block_size]  # (T,)
            # Two index arrays around a slice: the indexed view is (T, nkv, hs).
            self.k_pool[layer, blocks, :, offs] = k[b].transpose(1, 0, 2)
            self.v_pool[layer, blocks, :, offs] = v[b].transpose(1, 0, 2)
            ks.append(self._gather(self.k_pool[layer], table[:nblk], end))
            vs.append(self._gather(self.v_pool[layer], table[:nblk], end))
        return np.stack(ks), np.stack(vs)  # (B, nkv, S, hs)

    def _gather(self, pool: Array, blocks: list[int], end: int) -> Array:
        g = pool[blocks]  # (nblk, nkv, bs, hs)
        nkv, hs = g.shape[1], g.shape[3]
        out: Array = g.transpose(1, 0, 2, 3).reshape(nkv, -1, hs)[:, :end]  # (nkv, S, hs)
        return out

    def fork(self, n: int) -> None:
        if self.batch != 1:
            raise ValueError("fork() needs a one-sequence cache")
        for i, block in enumerate(self.tables[0]):
            self.allocator.incref(block, n - 1)
            self._record("share", None, i, block, self.length, holders=n)
        self.tables = [list(self.tables[0]) for _ in range(n)]
        self.batch = n

    def _record(self, kind: Literal["allocate", "share", "copy_on_write"], sequence: int | None,
                block: int, physical: int, position: int, *, source: int | None = None,
                holders: int = 1) -> None:
        if self.events is not None:
            self.events.append(
                BlockEvent(kind, sequence, block, physical, position, source, holders)
            )

    def drain_events(self) -> list[BlockEvent]:
        """The events recorded since the last call (none unless ``events`` is a list)."""
        if self.events is None:
            return []
        taken, self.events = self.events, []
        return taken

    def free(self) -> None:
        """Return every block to the pool."""
        for table in self.tables:
            for block in table:
                self.allocator.decref(block)
            table.clear()

    @property
    def blocks_used(self) -> int:
        """Physical blocks in use (shared blocks counted once)."""
        return self.allocator.num_used

    @property
    def logical_blocks(self) -> int:
        """Blocks the sequences would hold without sharing."""
        return sum(len(t) for t in self.tables)

    @property
    def nbytes(self) -> int:
        return self.blocks_used * self.block_bytes
