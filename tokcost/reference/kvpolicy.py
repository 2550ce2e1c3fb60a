"""A KV cache under a policy, quantized (fp8 e4m3, KIVI's asymmetric intN) or evicting, holding
the bytes ``policy_bytes`` counts (docs/generate.md, "Inside the reference path"; the policies:
docs/kvmem.md), and what it costs in quality: teacher-forced decoding against the full float32
cache, scored by perplexity, top-1 agreement and mean KL(baseline || policy) (docs/kvmem.md,
"kvmem quality")."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tokcost.errors import TokcostError, UsageError, arg
from tokcost.memory.cache_policy import Eviction, KvQuant, policy_bytes
from tokcost.reference.cache import ContiguousCache, KVCache
from tokcost.reference.config import Array, RefConfig
from tokcost.reference.model import Transformer

E4M3_MAX = 448.0


def _e4m3_table() -> NDArray[np.float32]:
    codes = np.arange(256)
    exp, man = (codes >> 3) & 0xF, codes & 0x7
    value = np.where(exp == 0, man / 8 * 2.0**-6, (1 + man / 8) * 2.0 ** (exp - 7.0))
    value = np.where(codes & 0x80, -1.0, 1.0) * value
    value[(exp == 0xF) & (man == 0x7)] = np.nan  # S.1111.111 is NaN; there is no infinity
    table: NDArray[np.float32] = value.astype(np.float32)
    return table


E4M3_VALUES = _e4m3_table()
# The finite non-negative values in code order (codes 0..126), increasing.
_E4M3_POSITIVE = E4M3_VALUES[:127].astype(np.float64)


def fp8_encode(x: Array) -> NDArray[np.uint8]:
    """The e4m3 code nearest to each value (ties to the even code), saturating at 448."""
    mag = np.minimum(np.abs(x.astype(np.float64)), E4M3_MAX)
    hi = np.clip(np.searchsorted(_E4M3_POSITIVE, mag), 1, 126)
    lo = hi - 1
    d_lo, d_hi = mag - _E4M3_POSITIVE[lo], _E4M3_POSITIVE[hi] - mag
    # Nearest; on a tie the even code (its mantissa's last bit is 0), as IEEE rounds.
    code = np.where((d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0)), hi, lo)
    code = np.where(mag <= 0, 0, code)
    sign = np.where(np.signbit(x) & (code > 0), 0x80, 0)
    signed: NDArray[np.uint8] = (code | sign).astype(np.uint8)
    return signed


def fp8_decode(codes: NDArray[np.uint8]) -> Array:
    return E4M3_VALUES[codes]


@dataclass(frozen=True)
class Fp8Block:
    """fp8 codes of some tokens (..., T, C): any run of them can be dropped or joined."""

    codes: NDArray[np.uint8]
    per_token = True

    @property
    def tokens(self) -> int:
        return int(self.codes.shape[-2])

    @property
    def nbytes(self) -> int:
        return int(self.codes.nbytes)

    def decode(self) -> Array:
        return fp8_decode(self.codes)

    def skip(self, n: int) -> Fp8Block:
        return Fp8Block(self.codes[..., n:, :])

    def join(self, more: Fp8Block | IntBlock) -> Fp8Block:
        assert isinstance(more, Fp8Block)
        return Fp8Block(np.concatenate([self.codes, more.codes], axis=-2))


@dataclass(frozen=True)
class IntBlock:
    """intN codes (the block's shape, int4 packed) with per-group fp16 scales and zeros,
    which broadcast against the unpacked, grouped shape (``_grouped``)."""

    codes: NDArray[np.uint8]
    scale: NDArray[np.float16]
    zero: NDArray[np.float16]
    bits: int
    shape: tuple[int, ...]
    axis: int  # the axis grouped: -2 (tokens, per channel) or -1 (channels, per token)
    group: int

    @property
    def tokens(self) -> int:
        return self.shape[-2]

    @property
    def per_token(self) -> bool:
        return self.axis == -1

    @property
    def nbytes(self) -> int:
        return int(self.codes.nbytes + self.scale.nbytes + self.zero.nbytes)

    def decode(self) -> Array:
        return int_decode(self)

    def skip(self, n: int) -> IntBlock:
        # codes (..., T, C'), scale and zero (..., T, groups, 1): tokens are axis -2 / -3.
        shape = (*self.shape[:-2], self.shape[-2] - n, self.shape[-1])
        return IntBlock(self.codes[..., n:, :], self.scale[..., n:, :, :],
                        self.zero[..., n:, :, :], self.bits, shape, self.axis, self.group)

    def join(self, more: Fp8Block | IntBlock) -> IntBlock:
        """Two per-token blocks as one, ``more``'s tokens after these."""
        assert isinstance(more, IntBlock) and self.per_token and more.per_token
        return IntBlock(
            np.concatenate([self.codes, more.codes], axis=-2),
            np.concatenate([self.scale, more.scale], axis=-3),
            np.concatenate([self.zero, more.zero], axis=-3), self.bits,
            (*self.shape[:-2], self.tokens + more.tokens, self.shape[-1]), -1, self.group)


def _grouped(x: Array, axis: int, group: int) -> Array:
    """``x`` with the grouped axis split: one group of all the tokens, or runs of channels."""
    if axis == -2:
        return x[..., None, :, :]  # (..., 1, T, C): one group over the block's T tokens
    c = x.shape[-1]
    g = min(group, c)
    if c % g:
        raise ValueError(f"channels ({c}) must be a multiple of the group ({g})")
    return x.reshape(*x.shape[:-1], c // g, g)


def int_encode(x: Array, *, bits: int, axis: int, group: int) -> IntBlock:
    """Quantize a block (..., T, C) per channel over its tokens (``axis=-2``, KIVI's keys)
    or per ``group`` channels of each token (``axis=-1``, KIVI's values)."""
    levels = (1 << bits) - 1
    g = _grouped(x.astype(np.float32), axis, group)
    lo, hi = g.min(axis=axis, keepdims=True), g.max(axis=axis, keepdims=True)
    zero = lo.astype(np.float16)
    scale = ((hi - lo) / levels).astype(np.float16)
    scale = np.where(scale == 0, np.float16(1), scale).astype(np.float16)  # a constant group
    codes = np.clip(np.rint((g - zero.astype(np.float32)) / scale.astype(np.float32)), 0, levels)
    flat = codes.astype(np.uint8).reshape(x.shape)
    if bits == 4:
        if flat.shape[-1] % 2:
            flat = np.concatenate([flat, np.zeros((*flat.shape[:-1], 1), np.uint8)], axis=-1)
        flat = (flat[..., 0::2] | (flat[..., 1::2] << 4)).astype(np.uint8)
    return IntBlock(flat, scale, zero, bits, tuple(x.shape), axis, group)


def int_decode(block: IntBlock) -> Array:
    codes = block.codes
    if block.bits == 4:
        codes = np.stack([codes & 0x0F, codes >> 4], axis=-1).reshape(*codes.shape[:-1], -1)
        codes = codes[..., : block.shape[-1]]
    g = _grouped(codes.astype(np.float32), block.axis, block.group)
    out = g * block.scale.astype(np.float32) + block.zero.astype(np.float32)
    return out.reshape(block.shape).astype(np.float32)


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
    def float32_bytes(self) -> int:
        return sum(int(k.nbytes + v.nbytes) for k, v in zip(self.full_k, self.full_v, strict=True))

    @property
    def nbytes(self) -> int:
        return self.float32_bytes + sum(bk.nbytes + bv.nbytes for layer in self.blocks
                                        for bk, bv in layer)


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


@dataclass(frozen=True)
class TeacherForced:
    """One pass over a text: log-probabilities of every next token, and the cache."""

    logprobs: NDArray[np.float64]  # (N, V): log-softmax of each prediction
    targets: NDArray[np.int64]  # (N,): the true next tokens
    cache_bytes: int  # bytes the cache held after the last token
    cache_tokens: int  # tokens it had seen
    float32_bytes: int  # of cache_bytes, those in float32 (the rest quantized)

    @property
    def nll(self) -> float:
        return float(-self.logprobs[np.arange(len(self.targets)), self.targets].mean())

    @property
    def perplexity(self) -> float:
        return math.exp(self.nll)


def teacher_forced(model: Transformer, ids: Sequence[int], *, prompt: int,
                   cache: KVCache | None = None) -> TeacherForced:
    """Predict ``ids[prompt:]`` token by token after the prefill (no ``cache``: the baseline)."""
    n = len(ids)
    if not 1 <= prompt < n:
        raise UsageError(f"{arg('prompt', prompt)} must leave at least one token to predict "
                         f"of the text's {n}", param="prompt", value=prompt)
    if n > model.cfg.context_window:
        raise UsageError(f"the text has {n:,} tokens, past the model's context window "
                         f"({model.cfg.context_window:,}); give a shorter {arg('text')}",
                         param="text")
    # The last token is only ever a target: the cache sees n - 1 tokens.
    cache = cache if cache is not None else ContiguousCache(model.cfg, capacity=n - 1)
    arr = np.asarray(ids, dtype=np.int64)
    rows = [model.forward(arr[None, :prompt], cache).logits[0, -1]]
    rows += [model.forward(arr[None, i : i + 1], cache).logits[0, -1] for i in range(prompt, n - 1)]
    x = np.stack(rows).astype(np.float64)  # (N, V)
    x = x - x.max(axis=-1, keepdims=True)
    logprobs = x - np.log(np.exp(x).sum(axis=-1, keepdims=True))  # log-softmax
    return TeacherForced(logprobs, arr[prompt:], cache.nbytes, cache.length, cache.float32_bytes)


@dataclass(frozen=True)
class PolicyQuality:
    """A policy against the baseline on the same text and predictions."""

    perplexity: float
    baseline_perplexity: float
    top1_agreement: float
    mean_kl: float
    bytes_held: int  # as run: full precision in float32
    baseline_bytes: int
    float32_bytes: int  # of bytes_held, those in full precision
    dtype_bytes: int = 4  # bytes per value in the model's own cache: what shares compare in

    @property
    def perplexity_change(self) -> float:
        """Relative change: 0.05 is 5% worse than the full cache."""
        return self.perplexity / self.baseline_perplexity - 1

    @property
    def bytes_in_dtype(self) -> tuple[int, int]:
        """Bytes held and the full cache's, full precision stored in ``dtype_bytes`` a value."""
        return (self.bytes_held - self.float32_bytes + self.float32_bytes // 4 * self.dtype_bytes,
                self.baseline_bytes // 4 * self.dtype_bytes)

    @property
    def bytes_ratio(self) -> float:
        """The share of the full cache, both in the model's own dtype."""
        held, full = self.bytes_in_dtype
        return held / full


def compare_policy(run: TeacherForced, baseline: TeacherForced) -> PolicyQuality:
    """Score ``run`` against ``baseline`` (the same text, prompt and model)."""
    if run.targets.shape != baseline.targets.shape or not (run.targets == baseline.targets).all():
        raise UsageError("compare a policy with the baseline on the same text and prompt")
    p = np.exp(baseline.logprobs)
    kl = (p * (baseline.logprobs - run.logprobs)).sum(axis=-1)
    agree = run.logprobs.argmax(axis=-1) == baseline.logprobs.argmax(axis=-1)
    return PolicyQuality(perplexity=run.perplexity, baseline_perplexity=baseline.perplexity,
                         top1_agreement=float(agree.mean()), mean_kl=float(max(0.0, kl.mean())),
                         bytes_held=run.cache_bytes, baseline_bytes=baseline.cache_bytes,
                         float32_bytes=run.float32_bytes)


def evaluate(model: Transformer, ids: Sequence[int], *, prompt: int, quant: KvQuant | None = None,
    evict: Eviction | None = None, baseline: TeacherForced | None = None) -> PolicyQuality:
    """One policy's quality on ``ids``, its bytes checked against the memory model's."""
    base = baseline if baseline is not None else teacher_forced(model, ids, prompt=prompt)
    cache = policy_cache(model.cfg, quant=quant, evict=evict, prompt=prompt)
    quality = compare_policy(teacher_forced(model, ids, prompt=prompt, cache=cache), base)
    expected = policy_cache_bytes(model.cfg, len(ids) - 1, quant=quant, evict=evict, prompt=prompt)
    if expected is not None and expected != quality.bytes_held:  # they must agree
        raise TokcostError(f"the cache held {quality.bytes_held:,} B but the memory model "
                           f"says {expected:,} B; please report it")
    return quality
