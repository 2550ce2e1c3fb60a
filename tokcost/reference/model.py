"""A decoder-only transformer in numpy: RMSNorm, RoPE, grouped-query attention, SwiGLU. Shapes
(nanoGPT's notation): B batch, T new tokens, S keys attended to, C hidden, nh query heads, nkv KV
heads, g = nh / nkv, hs head size, V vocabulary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from tokcost.errors import UsageError, arg
from tokcost.reference.cache import KVCache
from tokcost.reference.config import Array, RefConfig, RopeScaling
from tokcost.reference.weights import check_weights


@dataclass
class ForwardOutput:
    """Logits of the new positions, and (if asked) their attention weights."""

    logits: Array  # (B, T, V); logits="last": (B, 1, V)
    attention: list[Array] | None  # per layer (B, nh, S) last query; "full": (B, nh, T, S)


def rms_norm(x: Array, weight: Array, eps: float) -> Array:
    ms = np.mean(x * x, axis=-1, keepdims=True)  # (..., 1)
    out: Array = (x / np.sqrt(ms + eps) * weight).astype(np.float32)
    return out


def softmax(x: NDArray[Any], axis: int = -1) -> Array:
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    out: Array = (e / np.sum(e, axis=axis, keepdims=True)).astype(np.float32)
    return out


def rope_frequencies(head_dim: int, theta: float, scaling: RopeScaling | None = None) -> Array:
    """RoPE's inverse frequencies (hs/2,) in float32, stretched by ``scaling`` (llama3: as
    ``_compute_llama3_parameters`` in transformers' modeling_rope_utils.py)."""
    exponent = np.arange(0, head_dim, 2, dtype=np.float32) / head_dim  # (hs/2,)
    inv: Array = (1.0 / theta**exponent).astype(np.float32)
    if scaling is None or (scaling.factor == 1.0 and scaling.kind == "linear"):
        return inv
    if scaling.kind == "linear":
        return (inv / scaling.factor).astype(np.float32)
    old, low, high = (scaling.original_max_position_embeddings, scaling.low_freq_factor,
                      scaling.high_freq_factor)
    low_wavelen, high_wavelen = old / low, old / high
    wavelen = 2 * np.pi / inv
    scaled = np.where(wavelen > low_wavelen, inv / scaling.factor, inv)
    smooth = (old / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / scaling.factor + smooth * scaled
    medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
    return np.where(medium, smoothed, scaled).astype(np.float32)


def rope_at(inv: Array, positions: NDArray[np.int64]) -> tuple[Array, Array]:
    """cos and sin, each (T, hs/2), of ``positions`` (T,); per call, as a real model's
    window (131k positions x 256 dims) is too large to tabulate."""
    angles = positions.astype(np.float32)[:, None] * inv[None, :]  # (T, hs/2)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def rope_tables(head_dim: int, length: int, theta: float) -> tuple[Array, Array]:
    return rope_at(rope_frequencies(head_dim, theta), np.arange(length, dtype=np.int64))


def apply_rope(x: Array, cos: Array, sin: Array) -> Array:
    """Rotate x (B, h, T, hs) by cos/sin (T, hs/2), LLaMA's "rotate half" layout."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]  # (B, h, T, hs/2)
    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


def gelu_tanh(x: Array) -> Array:
    """GELU's tanh approximation (PyTorch's ``gelu(approximate="tanh")``)."""
    out: Array = 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))
    return out.astype(np.float32)


def soft_cap(x: Array, cap: float | None) -> Array:
    """Gemma-2's cap * tanh(x / cap): scores and logits bounded by +-cap."""
    return x if cap is None else (np.tanh(x / cap) * cap).astype(np.float32)


class Transformer:
    """Weights plus a forward pass that reads and writes a KV cache."""

    def __init__(self, cfg: RefConfig, weights: dict[str, Array]) -> None:
        check_weights(cfg, weights)
        self.cfg = cfg
        self.w = {name: np.asarray(a, dtype=np.float32) for name, a in weights.items()}
        self.inv_freq = rope_frequencies(cfg.head_dim, cfg.rope_theta, cfg.rope_scaling)
        # Gemma-3's sliding layers keep plain RoPE at their own base.
        self.inv_freq_local = self.inv_freq if cfg.rope_local_theta is None else (
            rope_frequencies(cfg.head_dim, cfg.rope_local_theta))

    def forward(self, ids: NDArray[np.int64], cache: KVCache | None = None, *,
        attention: bool | Literal["full"] = False, logits: Literal["all", "last"] = "all"
    ) -> ForwardOutput:
        """Logits for ``ids`` (B, T) after the ``cache.length`` tokens cached; ``"last"``:
        (B, 1, V), all a prefill needs ((T, V) rows are 100 MB at 512 tokens of 49k)."""
        if logits not in ("all", "last"):
            raise UsageError(f"{arg('logits', repr(logits))} must be 'all' or 'last'",
                             param="logits", value=logits)
        cfg, w = self.cfg, self.w
        start = cache.length if cache is not None else 0
        t = ids.shape[1]
        x = w["tok_emb"][ids]  # (B, T, C)
        if cfg.embed_scale is not None:
            x = x * np.float32(cfg.embed_scale)
        pos = np.arange(start, start + t, dtype=np.int64)  # (T,)
        rope = {"full": rope_at(self.inv_freq, pos)}  # cos, sin: (T, hs/2) each
        rope["sliding"] = (rope["full"] if cfg.rope_local_theta is None
                           else rope_at(self.inv_freq_local, pos))
        maps: list[Array] = []
        for i in range(cfg.layers):
            p = f"layers.{i}."
            h = rms_norm(x, w[p + "attn_norm"], cfg.norm_eps)  # (B, T, C)
            cos, sin = rope["sliding" if cfg.sliding(i) else "full"]  # (T, hs/2)
            y, att, held = self._attention(i, h, cos, sin, start, cache)
            y = y @ w[p + "wo"]  # (B, T, C)
            if cfg.post_norms:
                y = rms_norm(y, w[p + "post_attn_norm"], cfg.norm_eps)
            x = x + y
            if attention:
                if held is not None:
                    att = _by_position(att, held, start + t)
                maps.append(att if attention == "full" else att[:, :, -1, :])
            h = rms_norm(x, w[p + "mlp_norm"], cfg.norm_eps)  # (B, T, C)
            gate = h @ w[p + "w_gate"]  # (B, T, F)
            up = h @ w[p + "w_up"]  # (B, T, F)
            act = gelu_tanh(gate) if cfg.activation == "gelu_tanh" else gate / (1.0 + np.exp(-gate))
            y = (act * up) @ w[p + "w_down"]  # (B, T, C)
            if cfg.post_norms:
                y = rms_norm(y, w[p + "post_mlp_norm"], cfg.norm_eps)
            x = x + y
        if cache is not None:
            cache.advance(t)
        if logits == "last":
            x = x[:, -1:]  # (B, 1, C): the norm and the head work per position
        x = rms_norm(x, w["norm"], cfg.norm_eps)  # (B, T, C)
        head = w["lm_head"] if "lm_head" in w else w["tok_emb"].T  # (C, V)
        out = soft_cap((x @ head).astype(np.float32), cfg.final_softcap)  # (B, T, V)
        return ForwardOutput(logits=out, attention=maps if attention else None)

    def _attention(self, layer: int, h: Array, cos: Array, sin: Array, start: int,
        cache: KVCache | None) -> tuple[Array, Array, NDArray[np.int64] | None]:
        """Output (B, T, C'), weights (B, nh, T, S), key positions (B, nkv, S) or None."""
        cfg, w = self.cfg, self.w
        p = f"layers.{layer}."
        b, t, _ = h.shape
        nh, nkv, hs, g = cfg.attention_heads, cfg.kv_heads, cfg.head_dim, cfg.group
        q, k, v = h @ w[p + "wq"], h @ w[p + "wk"], h @ w[p + "wv"]  # (B, T, nh*hs | nkv*hs)
        if cfg.qkv_bias:
            q, k, v = q + w[p + "bq"], k + w[p + "bk"], v + w[p + "bv"]
        q = q.reshape(b, t, nh, hs)  # (B, T, nh, hs)
        k = k.reshape(b, t, nkv, hs)  # (B, T, nkv, hs)
        if cfg.qk_norm:
            q = rms_norm(q, w[p + "q_norm"], cfg.norm_eps)
            k = rms_norm(k, w[p + "k_norm"], cfg.norm_eps)
        q = q.transpose(0, 2, 1, 3)  # (B, nh, T, hs)
        k = k.transpose(0, 2, 1, 3)  # (B, nkv, T, hs)
        v = v.reshape(b, t, nkv, hs).transpose(0, 2, 1, 3)  # (B, nkv, T, hs)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        positions = None
        if cache is not None:
            k, v = cache.update(layer, k, v)  # (B, nkv, S, hs)
            positions = cache.positions(layer)  # (B, nkv, S) when keys were evicted
        s = k.shape[2]
        kpos = np.arange(s)  # (S,)
        qpos = start + np.arange(t)  # (T,)
        scale = cfg.query_scale if cfg.query_scale is not None else 1.0 / np.sqrt(hs)
        # Grouped-query attention: g query heads share each KV head, no copies of K/V.
        qg = q.reshape(b, nkv, g, t, hs)  # (B, nkv, g, T, hs)
        scores = qg @ k[:, :, None].transpose(0, 1, 2, 4, 3) * np.float32(scale)  # (B,nkv,g,T,S)
        scores = soft_cap(scores, cfg.attn_softcap)
        # Causal, and on a sliding layer q - k < window (transformers' mask), by key position.
        keys = kpos[None, :] if positions is None else positions[:, :, None, None, :]
        hidden = keys > qpos[:, None]  # (T, S), or (B, nkv, 1, T, S) with positions
        if cfg.sliding(layer):
            assert cfg.sliding_window is not None
            hidden = hidden | (qpos[:, None] - keys >= cfg.sliding_window)
        scores = np.where(hidden, -np.inf, scores)
        att = softmax(scores)  # (B, nkv, g, T, S)
        if cache is not None:
            cache.observe(layer, att)
        y = att @ v[:, :, None]  # (B, nkv, g, T, hs)
        y = y.reshape(b, nh, t, hs).transpose(0, 2, 1, 3).reshape(b, t, nh * hs)  # (B, T, C')
        return y, att.reshape(b, nh, t, s), positions


def _by_position(att: Array, positions: NDArray[np.int64], length: int) -> Array:
    """Weights (B, nh, T, S) over keys at ``positions`` (B, nkv, S) as (B, nh, T, length)."""
    b, nh, t, _ = att.shape
    nkv = positions.shape[1]
    out = np.zeros((b, nh, t, length), dtype=att.dtype)
    idx = np.repeat(positions, nh // nkv, axis=1)[:, :, None, :]  # (B, nh, 1, S)
    np.put_along_axis(out, np.broadcast_to(idx, att.shape), att, axis=3)
    return out
