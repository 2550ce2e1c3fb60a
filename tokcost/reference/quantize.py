"""Low-precision storage for cached keys and values: fp8 e4m3 and KIVI's asymmetric intN, in the
bytes ``tokcost.memory.cache_policy`` counts (docs/generate.md, "Inside the reference path")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from tokcost.reference.config import Array

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
    """The e4m3 code nearest to each value (ties to the even code), saturating at 448.

    >>> fp8_decode(fp8_encode(np.array([0.3, -1.0, 500.0, 1e-9], dtype=np.float32))).tolist()
    [0.3125, -1.0, 448.0, 0.0]
    """
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
        """Two per-token blocks as one, ``more``'s tokens after these.

        >>> x = np.arange(32, dtype=np.float32).reshape(1, 1, 2, 16)
        >>> a, b = (int_encode(x[:, :, i:i + 1], bits=8, axis=-1, group=16) for i in (0, 1))
        >>> bool(np.allclose(a.join(b).decode(), int_decode(int_encode(x, bits=8, axis=-1,
        ...      group=16))))
        True
        """
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
    or per ``group`` channels of each token (``axis=-1``, KIVI's values).

    >>> x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(1, 1, 4, 16)
    >>> b = int_encode(x, bits=4, axis=-1, group=16)
    >>> b.nbytes  # 4 tokens x 16 nibbles = 32 B of codes, 4 groups x (2 + 2) B
    48
    """
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
