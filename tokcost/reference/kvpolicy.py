"""A KV cache under a policy, quantized or evicting, holding the bytes ``policy_bytes`` counts
(docs/generate.md, "Inside the reference path"; the policies: docs/kvmem.md)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from tokcost.errors import UsageError
from tokcost.memory.cache_policy import Eviction, KvQuant, policy_bytes
from tokcost.reference.cache import KVCache
from tokcost.reference.config import Array, RefConfig
from tokcost.reference.quantize import Fp8Block, IntBlock, fp8_encode, int_encode

Block = Fp8Block | IntBlock


class QuantizedCache(KVCache):
    """Tokens before the ``residual`` newest in ``quant``'s blocks, the rest in float32;
    each step dequantizes the blocks for attention, as a fused kernel would."""

    def __init__(self, cfg: RefConfig, quant: KvQuant, batch: int = 1) -> None:
        super().__init__(cfg, batch)
        self.quant = quant
        empty = np.zeros((batch, cfg.kv_heads, 0, cfg.head_dim), dtype=np.float32)
        self.full_k: list[Array] = [empty] * cfg.layers
        self.full_v: list[Array] = [empty] * cfg.layers
        self.blocks: list[list[tuple[Block, Block]]] = [[] for _ in range(cfg.layers)]
        self.start = [0] * cfg.layers  # each layer's oldest position held
        self._held = [0] * cfg.layers  # keys the last update returned, per layer

    def _encode(self, x: Array, axis: str) -> Block:
        if self.quant.format == "fp8":
            return Fp8Block(fp8_encode(x))
        return int_encode(x, bits=self.quant.bits, axis=-2 if axis == "channel" else -1,
                          group=self.quant.group)

    def update(self, layer: int, k: Array, v: Array) -> tuple[Array, Array]:
        self.full_k[layer] = np.concatenate([self.full_k[layer], k], axis=2)
        self.full_v[layer] = np.concatenate([self.full_v[layer], v], axis=2)
        blocks = self.blocks[layer]
        out_k = np.concatenate([*(bk.decode() for bk, _ in blocks), self.full_k[layer]], axis=2)
        out_v = np.concatenate([*(bv.decode() for _, bv in blocks), self.full_v[layer]], axis=2)
        self._held[layer] = out_k.shape[2]
        return out_k, out_v

    def positions(self, layer: int) -> NDArray[np.int64] | None:
        start = self.start[layer]
        return self._broadcast(np.arange(start, start + self._held[layer]) if start else None)

    def advance(self, tokens: int) -> None:
        super().advance(tokens)
        # A per-channel group spans `group` whole tokens; per-token formats take any count.
        q = self.quant
        target = q.quantized_tokens(self.length)
        chunk = q.group if q.grouped and "channel" in (q.keys, q.values) else None
        window = self.cfg.sliding_window
        for layer in range(self.cfg.layers):
            if self.cfg.sliding(layer) and window is not None:
                self._drop(layer, self.length - window)
            done = self.length - self.full_k[layer].shape[2]
            while done < target:
                # A group starts where the last one ended; after a drop it may be short.
                n = min(chunk, target - done) if chunk else target - done
                fk, fv, blocks = self.full_k[layer], self.full_v[layer], self.blocks[layer]
                bk, bv = self._encode(fk[:, :, :n], q.keys), self._encode(fv[:, :, :n], q.values)
                if blocks and chunk is None:  # per-token blocks join: a few arrays, not one a token
                    blocks[-1] = (blocks[-1][0].join(bk), blocks[-1][1].join(bv))
                else:
                    blocks.append((bk, bv))
                self.full_k[layer], self.full_v[layer] = fk[:, :, n:], fv[:, :, n:]
                done += n

    def _drop(self, layer: int, before: int) -> None:
        """Let go of positions < ``before`` (a per-channel group only once wholly out)."""
        start, blocks = self.start[layer], self.blocks[layer]
        while blocks and start < before:
            bk, bv = blocks[0]
            if start + bk.tokens <= before:
                blocks.pop(0)
                start += bk.tokens
                continue
            if bk.per_token and bv.per_token:
                blocks[0] = (bk.skip(before - start), bv.skip(before - start))
                start = before
            break
        if not blocks and start < before:
            cut = min(before - start, self.full_k[layer].shape[2])
            self.full_k[layer] = self.full_k[layer][:, :, cut:]
            self.full_v[layer] = self.full_v[layer][:, :, cut:]
            start += cut
        self.start[layer] = start

    def fork(self, n: int) -> None:
        raise UsageError("a quantized cache runs one sequence; sample with cache=contiguous")

    @property
    def nbytes(self) -> int:
        return sum(int(self.full_k[layer].nbytes + self.full_v[layer].nbytes)
                   + sum(bk.nbytes + bv.nbytes for bk, bv in self.blocks[layer])
                   for layer in range(self.cfg.layers))


class EvictingCache(KVCache):
    """Keeps, per layer and kv head, the tokens ``evict`` chooses, with their positions."""

    def __init__(self, cfg: RefConfig, evict: Eviction, *, prompt: int | None = None,
                 batch: int = 1) -> None:
        super().__init__(cfg, batch)
        self.evict = evict
        self.prompt = prompt
        shape = (batch, cfg.kv_heads, 0)
        self.k: list[Array] = [np.zeros((*shape, cfg.head_dim), np.float32)] * cfg.layers
        self.v: list[Array] = [np.zeros((*shape, cfg.head_dim), np.float32)] * cfg.layers
        self.pos: list[NDArray[np.int64]] = [np.zeros(shape, np.int64)] * cfg.layers
        self.score: list[NDArray[np.float64]] = [np.zeros(shape, np.float64)] * cfg.layers
        # Each layer's keys, values, positions and scores: cut and kept together.
        self._tables: tuple[list[NDArray[Any]], ...] = (self.k, self.v, self.pos, self.score)
        self.compressed = False  # SnapKV: the prompt has been compressed

    def update(self, layer: int, k: Array, v: Array) -> tuple[Array, Array]:
        b, h, t, _ = k.shape
        new_pos = np.broadcast_to(np.arange(self.length, self.length + t), (b, h, t))
        for table, new in zip(self._tables, (k, v, new_pos, np.zeros((b, h, t))), strict=True):
            table[layer] = np.concatenate([table[layer], new], axis=2)
        return self.k[layer], self.v[layer]

    def positions(self, layer: int) -> NDArray[np.int64] | None:
        return self.pos[layer]

    def observe(self, layer: int, att: Array) -> None:
        # H2O sums the attention each key receives; SnapKV scores the prompt by its end, once.
        kind = self.evict.kind
        if kind == "h2o":
            self.score[layer] += att.sum(axis=(2, 3))
        elif kind == "snapkv" and not self.compressed:
            window = self.evict.limits(max(1, att.shape[3]))[2]
            self.score[layer] += att[:, :, :, -max(1, window):].sum(axis=(2, 3))

    def advance(self, tokens: int) -> None:
        super().advance(tokens)
        limits: tuple[int, int, int] | None = self.evict.limits(self.length)
        if self.evict.kind == "snapkv":
            if self.compressed or (self.prompt is not None and self.length < self.prompt):
                limits = None
            else:
                self.compressed = True
        window = self.cfg.sliding_window or 0
        for layer in range(self.cfg.layers):
            if limits is not None:
                self._keep(layer, *limits)
            # A sliding layer keeps its `window` newest keys per head (one array for all).
            if self.cfg.sliding(layer) and (cut := self.k[layer].shape[2] - window) > 0:
                for table in self._tables:
                    table[layer] = table[layer][:, :, cut:]

    def _keep(self, layer: int, sinks: int, chosen: int, recent: int) -> None:
        s = self.k[layer].shape[2]
        if s <= sinks + chosen + recent:
            return
        # Kept: the first `sinks`, the last `recent`, the `chosen` best between, per head.
        keep_edges = np.zeros(s, dtype=bool)
        keep_edges[:sinks] = True
        keep_edges[s - recent:] = True  # recent 0: [s:], nothing
        middle = np.flatnonzero(~keep_edges)
        window = self.cfg.sliding_window if self.cfg.sliding(layer) else None
        too_old = None if window is None else self.pos[layer] < self.length - window
        b, h = self.k[layer].shape[:2]
        idx = np.empty((b, h, sinks + chosen + recent), dtype=np.int64)
        for bi in range(b):
            for hi in range(h):
                scores = self.score[layer][bi, hi, middle]
                if too_old is not None:  # a sliding layer: keys its queries no longer see
                    scores = np.where(too_old[bi, hi, middle], -np.inf, scores)
                # Highest score first; equal scores keep the earlier key (stable).
                top = middle[np.argsort(-scores, kind="stable")[:chosen]] if chosen else middle[:0]
                idx[bi, hi] = np.sort(np.concatenate([np.flatnonzero(keep_edges), top]))
        for table, index in zip(self._tables, (idx[..., None], idx[..., None], idx, idx),
                                strict=True):
            table[layer] = np.take_along_axis(table[layer], index, axis=2)

    def fork(self, n: int) -> None:
        raise UsageError("an evicting cache runs one sequence; sample with cache=contiguous")

    @property
    def nbytes(self) -> int:
        """Key and value bytes held (positions and scores are bookkeeping)."""
        return sum(int(k.nbytes + v.nbytes) for k, v in zip(self.k, self.v, strict=True))


def policy_cache_bytes(cfg: RefConfig, tokens: int, *, quant: KvQuant | None = None,
                       evict: Eviction | None = None, prompt: int | None = None) -> int | None:
    """``policy_bytes`` per layer kind after ``tokens`` (a sliding layer holds at most its
    window); None where per-channel key groups straddle the window's edge."""
    window = cfg.sliding_window
    sliding = sum(cfg.sliding(i) for i in range(cfg.layers))

    def model(held: int, layers: int, *, cut: bool = False) -> int:
        return policy_bytes(held, layers=layers, kv_heads=cfg.kv_heads, head_dim=cfg.head_dim,
                            full_bytes=4, quant=quant, evict=None if cut else evict, prompt=prompt)

    full = model(tokens, cfg.layers - sliding)
    if not sliding or window is None or tokens <= window:
        return full + model(tokens, sliding)
    if evict is not None:
        return full + model(min(evict.held(tokens, prompt=prompt), window), sliding, cut=True)
    if quant is not None and quant.grouped and "channel" in (quant.keys, quant.values):
        return None
    return full + model(window, sliding)


def policy_cache(cfg: RefConfig, *, quant: KvQuant | None = None,
                 evict: Eviction | None = None, prompt: int | None = None) -> KVCache:
    """The cache for a policy: quantized or evicting (not both yet)."""
    if quant is not None and evict is not None:
        raise UsageError("a quantized cache with eviction is not implemented yet; give one "
                         "of them", param="evict")
    if quant is not None:
        return QuantizedCache(cfg, quant)
    if evict is not None:
        return EvictingCache(cfg, evict, prompt=prompt)
    raise UsageError("give a quantization or an eviction policy", param="evict")
