"""Key/Value caches behind one surface (``update`` then ``advance``): a contiguous slab per
sequence, or vLLM-style paged blocks (docs/generate.md, "Inside the reference path")."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from tokcost.errors import TokcostError
from tokcost.memory import blocks
from tokcost.reference.config import Array, CacheFull, RefConfig

Group = Literal["full", "sliding"]


@dataclass(frozen=True)
class BlockEvent:
    """One change to the paged cache's block tables, in order (``generate --explain`` shows
    each kind). ``sample`` None: the prompt's blocks; ``holders``: references left after."""

    kind: Literal["allocate", "share", "copy_on_write", "free"]
    sample: int | None
    block: int
    physical: int
    position: int  # first position the sample writes (share: the prompt's length)
    source: int | None = None
    holders: int = 1
    group: Group = "full"

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


class KVCache(ABC):
    """What the model needs from a cache; ``length`` tokens are held per sequence."""

    def __init__(self, cfg: RefConfig, batch: int = 1) -> None:
        self.cfg = cfg
        self.batch = batch
        self.length = 0

    @abstractmethod
    def update(self, layer: int, k: Array, v: Array) -> tuple[Array, Array]:
        """Store k, v (B, nkv, T, hs); return the keys and values held, (B, nkv, S, hs)."""

    def advance(self, tokens: int) -> None:
        """Called once every layer has stored ``tokens`` new positions."""
        self.length += tokens

    def positions(self, layer: int) -> NDArray[np.int64] | None:
        """Positions (B, nkv, S) of the keys ``update`` returned, None when 0..S-1."""
        return None

    def observe(self, layer: int, att: Array) -> None:  # noqa: B027 (a hook: most ignore it)
        """This step's attention weights (B, nkv, g, T, S), for policies that score keys."""

    @abstractmethod
    def fork(self, n: int) -> None:
        """Turn a one-sequence cache into ``n`` sequences that share its contents."""

    @property
    @abstractmethod
    def nbytes(self) -> int:
        """Bytes of key/value storage held right now."""

    @property
    def float32_bytes(self) -> int:
        """Of ``nbytes``, those held as float32 (the rest quantized)."""
        return self.nbytes

    def _broadcast(self, pos: NDArray[np.int64] | None) -> NDArray[np.int64] | None:
        return None if pos is None else np.broadcast_to(
            pos, (self.batch, self.cfg.kv_heads, pos.shape[0]))


class ContiguousCache(KVCache):
    """One slab per sequence and layer, reserved up front: ``capacity`` tokens, or on a
    sliding layer a ring of ``min(capacity, window)`` (position p in slot p mod window)."""

    def __init__(self, cfg: RefConfig, capacity: int, batch: int = 1) -> None:
        super().__init__(cfg, batch)
        self.capacity = capacity
        self.slots = [min(capacity, cfg.sliding_window or capacity) if cfg.sliding(i)
                      else capacity for i in range(cfg.layers)]
        shapes = [(batch, cfg.kv_heads, s, cfg.head_dim) for s in self.slots]
        self.k = [np.zeros(shape, dtype=np.float32) for shape in shapes]  # (B, nkv, slots, hs)
        self.v = [np.zeros(shape, dtype=np.float32) for shape in shapes]
        self._pos: list[NDArray[np.int64] | None] = [None] * cfg.layers

    def update(self, layer: int, k: Array, v: Array) -> tuple[Array, Array]:
        t = k.shape[2]
        start, end = self.length, self.length + t
        if end > self.capacity:
            raise CacheFull(f"contiguous cache reserved {self.capacity} tokens but needs "
                            f"{end}; reserve a larger capacity")
        slots, ks, vs = self.slots[layer], self.k[layer], self.v[layer]
        if end <= slots:  # every full layer; a sliding one until the ring wraps
            ks[:, :, start:end], vs[:, :, start:end] = k, v
            self._pos[layer] = None
            return ks[:, :, :end], vs[:, :, :end]  # (B, nkv, S, hs)
        if t == 1:
            # The token overwrites start - window, which its query no longer sees.
            ks[:, :, start % slots], vs[:, :, start % slots] = k[:, :, 0], v[:, :, 0]
            self._pos[layer] = start - (start - np.arange(slots)) % slots  # slot's position
            return ks, vs
        # Several: the first still needs keys the last ones overwrite, so attend to a copy.
        held = min(start, slots)
        ring = np.arange(start - held, start) % slots
        out_k = np.concatenate([ks[:, :, ring], k], axis=2)
        out_v = np.concatenate([vs[:, :, ring], v], axis=2)
        self._pos[layer] = np.arange(start - held, end)
        keep = min(t, slots)
        dest = np.arange(end - keep, end) % slots
        ks[:, :, dest], vs[:, :, dest] = k[:, :, t - keep:], v[:, :, t - keep:]
        return out_k, out_v

    def positions(self, layer: int) -> NDArray[np.int64] | None:
        return self._broadcast(self._pos[layer])

    def fork(self, n: int) -> None:
        if self.batch != 1:
            raise ValueError("fork() needs a one-sequence cache")
        self.k = [np.repeat(k, n, axis=0) for k in self.k]  # (n, nkv, slots, hs)
        self.v = [np.repeat(v, n, axis=0) for v in self.v]
        self.batch = n

    @property
    def nbytes(self) -> int:
        return sum(int(k.nbytes + v.nbytes) for k, v in zip(self.k, self.v, strict=True))

    @property
    def sequence_bytes(self) -> int:
        return self.nbytes // self.batch


class BlockAllocator(blocks.BlockAllocator):
    """tokcost.memory.blocks' allocator, out of blocks in the reference's words."""

    def _exhausted(self) -> TokcostError:
        return CacheFull(f"all {self.num_blocks} KV blocks are in use; allocate a larger pool "
                         "(more blocks) or generate fewer tokens")


FREED = -1  # a block table entry whose block went back to the pool (vLLM's null block)


class _Group:
    """vLLM's ``KVCacheGroupSpec``: the full or the sliding layers, with their own block
    tables, pool and allocator (a sliding layer lets go of blocks a full one keeps)."""

    def __init__(self, cfg: RefConfig, name: Group, block_size: int, num_blocks: int) -> None:
        self.name = name
        self.layers = [i for i in range(cfg.layers) if cfg.sliding(i) == (name == "sliding")]
        self.window = cfg.sliding_window if name == "sliding" else None
        self.allocator = BlockAllocator(num_blocks)
        shape = (len(self.layers), num_blocks, cfg.kv_heads, block_size, cfg.head_dim)
        self.k_pool = np.zeros(shape, dtype=np.float32)  # (layers, nb, nkv, bs, hs)
        self.v_pool = np.zeros(shape, dtype=np.float32)
        # Logical block i of a sequence -> physical block; FREED once it left the window.
        self.tables: list[list[int]] = [[]]
        self.block_bytes = 2 * len(self.layers) * cfg.kv_heads * block_size * cfg.head_dim * 4


class PagedCache(KVCache):
    """vLLM's PagedAttention: blocks of ``block_size`` tokens from a pool, a block table per
    sequence. Each group has its own pool of ``num_blocks`` (their blocks differ in bytes); a
    sliding group frees a block once no later query sees it (``SlidingWindowManager``)."""

    def __init__(self, cfg: RefConfig, block_size: int, num_blocks: int) -> None:
        super().__init__(cfg, batch=1)
        self.block_size = block_size
        groups = (_Group(cfg, name, block_size, num_blocks) for name in ("full", "sliding"))
        self.groups = [g for g in groups if g.layers]
        self._where = {layer: (g, j) for g in self.groups for j, layer in enumerate(g.layers)}
        self._pos: dict[int, NDArray[np.int64] | None] = {}
        self.copies = 0
        self.events: list[BlockEvent] | None = None  # a list records every event

    @property
    def allocator(self) -> BlockAllocator:
        return self.groups[0].allocator  # the only one unless some layers slide

    def _prepare(self, tokens: int) -> None:
        """Give every sequence a private, writable block for each new position."""
        self._release(self.length)
        bs = self.block_size
        for group in self.groups:
            for seq, table in enumerate(group.tables):
                for i in range(self.length // bs, (self.length + tokens - 1) // bs + 1):
                    at = max(self.length, i * bs)  # first position written
                    if i == len(table):
                        table.append(group.allocator.allocate())
                        self._record(BlockEvent("allocate", seq, i, table[i], at, group=group.name))
                        continue
                    # Copy-on-write: a writer into a shared block gets its own copy.
                    old = table[i]
                    new = table[i] = group.allocator.copy_on_write(old)
                    if new != old:
                        group.k_pool[:, new], group.v_pool[:, new] = (group.k_pool[:, old],
                                                                      group.v_pool[:, old])
                        self.copies += 1
                        self._record(BlockEvent("copy_on_write", seq, i, new, at, old,
                                                group.allocator.refcount(old), group.name))

    def _release(self, query: int) -> None:
        """Free the sliding groups' blocks that ``query`` and later queries cannot see."""
        for group in self.groups:
            if group.window is None:
                continue
            # Block i ends at (i + 1) x bs - 1; out of sight when that is < query - w + 1.
            gone = max(0, (query - group.window + 1) // self.block_size)
            for seq, table in enumerate(group.tables):
                for i, block in enumerate(table[:gone]):
                    if block != FREED:
                        group.allocator.decref(block)
                        table[i] = FREED
                        self._record(BlockEvent("free", seq, i, block, query, None,
                                                group.allocator.refcount(block), group.name))

    def advance(self, tokens: int) -> None:
        super().advance(tokens)
        # Between steps a sliding group keeps what the last query saw, as the model counts.
        self._release(self.length - 1)

    def update(self, layer: int, k: Array, v: Array) -> tuple[Array, Array]:
        t, bs = k.shape[2], self.block_size
        if layer == 0:
            self._prepare(t)
        group, j = self._where[layer]
        pos = np.arange(self.length, self.length + t)  # (T,)
        end = self.length + t
        first = next((i for i, b in enumerate(group.tables[0]) if b != FREED),
                     len(group.tables[0]))  # the first block still held (every sequence's)
        self._pos[layer] = np.arange(first * bs, end, dtype=np.int64) if first else None
        ks, vs = [], []
        for b, table in enumerate(group.tables):
            ids = np.asarray(table)[pos // bs]  # (T,)
            # Two index arrays around a slice: the indexed view is (T, nkv, hs).
            group.k_pool[j, ids, :, pos % bs] = k[b].transpose(1, 0, 2)
            group.v_pool[j, ids, :, pos % bs] = v[b].transpose(1, 0, 2)
            held = table[first : -(-end // bs)]
            ks.append(_gather(group.k_pool[j], held, end - first * bs))
            vs.append(_gather(group.v_pool[j], held, end - first * bs))
        return np.stack(ks), np.stack(vs)  # (B, nkv, S, hs)

    def positions(self, layer: int) -> NDArray[np.int64] | None:
        return self._broadcast(self._pos.get(layer))

    def fork(self, n: int) -> None:
        if self.batch != 1:
            raise ValueError("fork() needs a one-sequence cache")
        for group in self.groups:
            for i, block in enumerate(group.tables[0]):
                if block != FREED:
                    group.allocator.incref(block, n - 1)
                    self._record(BlockEvent("share", None, i, block, self.length, None, n,
                                                group.name))
            group.tables = [list(group.tables[0]) for _ in range(n)]
        self.batch = n

    def _record(self, event: BlockEvent) -> None:
        if self.events is not None:
            self.events.append(event)

    def drain_events(self) -> list[BlockEvent]:
        if self.events is None:
            return []
        taken, self.events = self.events, []
        return taken

    def free(self) -> None:
        for group in self.groups:
            for table in group.tables:
                for block in table:
                    if block != FREED:
                        group.allocator.decref(block)
                table.clear()

    @property
    def blocks_used(self) -> int:
        return sum(g.allocator.num_used for g in self.groups)

    @property
    def logical_blocks(self) -> int:
        """Blocks the sequences would hold without sharing."""
        return sum(sum(b != FREED for b in t) for g in self.groups for t in g.tables)

    @property
    def sequence_bytes(self) -> int:
        return sum(sum(b != FREED for b in g.tables[0]) * g.block_bytes for g in self.groups)

    @property
    def nbytes(self) -> int:
        return sum(g.allocator.num_used * g.block_bytes for g in self.groups)


def _gather(pool: Array, ids: list[int], end: int) -> Array:
    """The first ``end`` positions (nkv, S, hs) of blocks ``ids`` of ``pool`` (nb, nkv, bs, hs)."""
    g = pool[ids]  # (nblk, nkv, bs, hs)
    out: Array = g.transpose(1, 0, 2, 3).reshape(g.shape[1], -1, g.shape[3])[:, :end]
    return out
