"""A decoder-only transformer in numpy: RMSNorm, RoPE, grouped-query attention, SwiGLU.

Shapes follow nanoGPT's notation: B batch, T new tokens, S tokens attended to
(cached + new), C hidden size, nh query heads, nkv key/value heads, g = nh / nkv
query heads per KV head, hs head size, V vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from tokcost.reference.weights import check_weights

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from tokcost.reference.cache import KVCache
    from tokcost.reference.config import RefConfig

    Array = NDArray[np.float32]


@dataclass
class ForwardOutput:
    """Logits for every new position, and (if asked) what the last position attended to
    (``attention=True``) or every new position (``attention="full"``)."""

    logits: Array  # (B, T, V)
    attention: list[Array] | None  # per layer (B, nh, S) last query; "full": (B, nh, T, S)


def rms_norm(x: Array, weight: Array, eps: float) -> Array:
    """x / sqrt(mean(x^2) + eps) * weight, over the last axis."""
    ms = np.mean(x * x, axis=-1, keepdims=True)  # (..., 1)
    out: Array = (x / np.sqrt(ms + eps) * weight).astype(np.float32)
    return out


def softmax(x: Array, axis: int = -1) -> Array:
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    out: Array = (e / np.sum(e, axis=axis, keepdims=True)).astype(np.float32)
    return out


def rope_tables(head_dim: int, length: int, theta: float) -> tuple[Array, Array]:
    """cos and sin, each (length, hs/2), for rotating pairs (i, i + hs/2)."""
    inv = 1.0 / theta ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)  # (hs/2,)
    angles = np.outer(np.arange(length, dtype=np.float64), inv)  # (length, hs/2)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def apply_rope(x: Array, cos: Array, sin: Array) -> Array:
    """Rotate x (B, h, T, hs) by its positions' angles; cos/sin are (T, hs/2).

    The "rotate half" layout of LLaMA in Hugging Face transformers: the first half
    of each head pairs with the second half.
    """
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]  # (B, h, T, hs/2)
    return np.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


class Transformer:
    """The model: weights plus a forward pass that reads and writes a KV cache.

    >>> from tokcost.reference.config import RefConfig
    >>> from tokcost.reference.weights import init_weights
    >>> cfg = RefConfig(layers=1, hidden_size=16, attention_heads=2, kv_heads=1,
    ...                 head_dim=8, vocab_size=11, context_window=32)
    >>> Transformer(cfg, init_weights(cfg, seed=0)).forward(np.array([[1, 2, 3]])).logits.shape
    (1, 3, 11)
    """

    def __init__(self, cfg: RefConfig, weights: dict[str, Array]) -> None:
        check_weights(cfg, weights)
        self.cfg = cfg
        self.w = {name: np.asarray(a, dtype=np.float32) for name, a in weights.items()}
        self.cos, self.sin = rope_tables(cfg.head_dim, cfg.context_window, cfg.rope_theta)

    def forward(
        self, ids: NDArray[np.int64], cache: KVCache | None = None, *,
        attention: bool | Literal["full"] = False,
    ) -> ForwardOutput:
        """Logits for ``ids`` (B, T), which follow the ``cache.length`` tokens cached."""
        cfg, w = self.cfg, self.w
        start = cache.length if cache is not None else 0
        t = ids.shape[1]
        x = w["tok_emb"][ids]  # (B, T, C)
        cos, sin = self.cos[start : start + t], self.sin[start : start + t]  # (T, hs/2)
        maps: list[Array] = []
        for i in range(cfg.layers):
            p = f"layers.{i}."
            h = rms_norm(x, w[p + "attn_norm"], cfg.norm_eps)  # (B, T, C)
            y, att = self._attention(i, h, cos, sin, start, cache)
            x = x + y @ w[p + "wo"]  # (B, T, C)
            if attention:
                maps.append(att if attention == "full" else att[:, :, -1, :])
            h = rms_norm(x, w[p + "mlp_norm"], cfg.norm_eps)  # (B, T, C)
            gate = h @ w[p + "w_gate"]  # (B, T, F)
            up = h @ w[p + "w_up"]  # (B, T, F)
            silu = gate / (1.0 + np.exp(-gate))  # (B, T, F)
            x = x + (silu * up) @ w[p + "w_down"]  # (B, T, C)
        if cache is not None:
            cache.advance(t)
        x = rms_norm(x, w["norm"], cfg.norm_eps)  # (B, T, C)
        head = w["lm_head"] if "lm_head" in w else w["tok_emb"].T  # (C, V)
        logits = (x @ head).astype(np.float32)  # (B, T, V)
        return ForwardOutput(logits=logits, attention=maps if attention else None)

    def _attention(
        self, layer: int, h: Array, cos: Array, sin: Array, start: int, cache: KVCache | None
    ) -> tuple[Array, Array]:
        cfg, w = self.cfg, self.w
        p = f"layers.{layer}."
        b, t, _ = h.shape
        nh, nkv, hs, g = cfg.attention_heads, cfg.kv_heads, cfg.head_dim, cfg.group
        q = (h @ w[p + "wq"]).reshape(b, t, nh, hs).transpose(0, 2, 1, 3)  # (B, nh, T, hs)
        k = (h @ w[p + "wk"]).reshape(b, t, nkv, hs).transpose(0, 2, 1, 3)  # (B, nkv, T, hs)
        v = (h @ w[p + "wv"]).reshape(b, t, nkv, hs).transpose(0, 2, 1, 3)  # (B, nkv, T, hs)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        if cache is not None:
            k, v = cache.update(layer, k, v)  # (B, nkv, S, hs)
        s = k.shape[2]
        # Grouped-query attention: g query heads share each KV head, no copies of K/V.
        qg = q.reshape(b, nkv, g, t, hs)  # (B, nkv, g, T, hs)
        scores = qg @ k[:, :, None].transpose(0, 1, 2, 4, 3) / np.sqrt(hs)  # (B, nkv, g, T, S)
        # Query at position start+i sees keys at positions <= start+i.
        causal = np.arange(s)[None, :] > (start + np.arange(t))[:, None]  # (T, S)
        scores = np.where(causal, -np.inf, scores)
        att = softmax(scores)  # (B, nkv, g, T, S)
        y = att @ v[:, :, None]  # (B, nkv, g, T, hs)
        y = y.reshape(b, nh, t, hs).transpose(0, 2, 1, 3).reshape(b, t, nh * hs)  # (B, T, C')
        return y, att.reshape(b, nh, t, s)
