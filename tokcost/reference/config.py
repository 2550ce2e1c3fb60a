"""The shape of a reference model (nanoGPT's ``GPTConfig``), how it caches keys and values, and the
reference path's errors (each says what to do next)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tokcost.errors import TokcostError, UsageError, arg
from tokcost.reference.request import as_int

Array = NDArray[np.float32]  # the reference's tensors


class ModelTooLarge(UsageError):
    """The catalog model is far too large for a numpy reference run."""


class PromptTooLong(UsageError):
    """The prompt plus the new tokens do not fit the model's context window."""


class WeightsMismatch(TokcostError):
    """A weights file does not match the architecture the catalog describes."""


class CacheFull(TokcostError):
    """The paged cache's block pool ran out of free blocks."""


# numpy runs a model this size at well under a second per token on a laptop core.
MAX_PARAMS = 200_000_000


class CacheMode(str, Enum):
    """How generation keeps keys and values (docs/generate.md, "Three caches, one answer")."""

    NONE = "none"
    CONTIGUOUS = "contiguous"
    PAGED = "paged"


@dataclass(frozen=True, kw_only=True)
class CacheSpec:
    """The KV cache of a generation: its mode and the paged cache's block size in tokens."""

    cache: CacheMode = CacheMode.PAGED
    block_size: int = 16

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "cache", CacheMode(self.cache))
        except ValueError:
            choices = ", ".join(m.value for m in CacheMode)
            raise UsageError(f"unknown {arg('cache')} {self.cache!r}; use one of: {choices}",
                             param="cache", value=self.cache) from None
        block = as_int(self.block_size, "block_size")
        if block < 1:
            raise UsageError(f"{arg('block_size')} must be >= 1, got {block}",
                             param="block_size", value=block)
        object.__setattr__(self, "block_size", block)


@dataclass(frozen=True)
class RopeScaling:
    """transformers' ``rope_scaling``: ``linear`` divides every frequency by ``factor``;
    ``llama3`` only the low ones, blending between the two wavelength bounds."""

    kind: str = "linear"  # "linear" or "llama3"
    factor: float = 1.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_position_embeddings: int = 8192


_SIZES = ("layers", "hidden_size", "attention_heads", "kv_heads", "head_dim", "vocab_size",
          "context_window")


@dataclass(frozen=True)
class RefConfig:
    """Decoder-only transformer shape: RMSNorm, RoPE, grouped-query attention, SwiGLU; the
    switches after ``kv_dtype`` describe the Hugging Face families (hf_checkpoint.py)."""

    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    vocab_size: int
    context_window: int
    intermediate_size: int | None = None
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    tie_embeddings: bool = True
    kv_dtype: str = "fp32"  # the cache's float32, as `kvmem estimate` must count it
    qkv_bias: bool = False  # Qwen2: biases on the q, k and v projections
    qk_norm: bool = False  # Qwen3, Gemma-3: RMSNorm over each head's q and k before RoPE
    post_norms: bool = False  # Gemma-2/3: norms after attention and after the MLP too
    activation: str = "silu"  # SwiGLU, or "gelu_tanh" (Gemma's GeGLU)
    # Per layer "full" or "sliding" (a query sees its `sliding_window` newest positions).
    layer_types: tuple[str, ...] | None = None
    sliding_window: int | None = None
    rope_local_theta: float | None = None  # Gemma-3: RoPE base of the sliding layers
    rope_scaling: RopeScaling | None = None
    attn_softcap: float | None = None  # Gemma-2: tanh soft-capping of scores and logits
    final_softcap: float | None = None
    # Gemma: embeddings times sqrt(hidden_size); scores times query_scale (None: hs^-0.5).
    embed_scale: float | None = None
    query_scale: float | None = None

    def __post_init__(self) -> None:
        small = [name for name in _SIZES if getattr(self, name) < 1]
        if small:
            raise ValueError(f"{small[0]} must be >= 1, got {getattr(self, small[0])}")
        if self.attention_heads % self.kv_heads:
            raise ValueError(f"attention_heads ({self.attention_heads}) must be a multiple of "
                             f"kv_heads ({self.kv_heads}) for grouped-query attention")
        if self.head_dim % 2:
            raise ValueError(f"head_dim must be even for RoPE, got {self.head_dim}")
        if self.activation not in ("silu", "gelu_tanh"):
            raise ValueError(f"activation must be silu or gelu_tanh, got {self.activation!r}")
        kinds = self.layer_types
        if kinds is not None and (len(kinds) != self.layers or set(kinds) - {"full", "sliding"}):
            raise ValueError(f"layer_types must list full/sliding for {self.layers} layers")
        if kinds is not None and "sliding" in kinds and not self.sliding_window:
            raise ValueError("sliding layers need a sliding_window >= 1")

    def sliding(self, layer: int) -> bool:
        return self.layer_types is not None and self.layer_types[layer] == "sliding"

    @property
    def slides(self) -> bool:
        return self.layer_types is not None and "sliding" in self.layer_types

    @property
    def group(self) -> int:
        """Query heads per KV head (1 = multi-head, attention_heads = multi-query)."""
        return self.attention_heads // self.kv_heads

    @property
    def ffn_hidden(self) -> int:
        """SwiGLU width: given, or LLaMA's 8/3 x hidden rounded up to a multiple of 64."""
        return self.intermediate_size or -(-int(8 * self.hidden_size / 3) // 64) * 64

    @property
    def kv_bytes_per_token(self) -> int:
        return 2 * self.layers * self.kv_heads * self.head_dim * 4

    @property
    def params(self) -> int:
        """Parameter count (embeddings counted once when tied)."""
        c, hs = self.hidden_size, self.head_dim
        attn = c * self.attention_heads * hs * 2 + c * self.kv_heads * hs * 2
        if self.qkv_bias:
            attn += (self.attention_heads + 2 * self.kv_heads) * hs
        per_layer = attn + 3 * c * self.ffn_hidden + (4 if self.post_norms else 2) * c
        per_layer += 2 * hs if self.qk_norm else 0
        return self.layers * per_layer + self.vocab_size * c * (2 - self.tie_embeddings) + c

    @classmethod
    def from_architecture(cls, model_id: str, arch: Any, context_window: int | None) -> RefConfig:
        """Build from a catalog ``Architecture``; ModelTooLarge for one numpy cannot run."""
        heads, hidden = arch.attention_heads, arch.hidden_size
        head_dim: int = arch.head_dim or (hidden // heads if hidden and heads else 0)
        shape = {"layers": arch.layers, "hidden_size": hidden, "attention_heads": heads,
                 "head_dim": head_dim, "vocab_size": arch.vocab_size}
        missing = [name for name, value in shape.items() if not value]
        if missing:
            raise ModelTooLarge(
                f"model '{model_id}' has no {', '.join(missing)} in the catalog, so the "
                "reference path cannot build it; use tiny-ref instead or add the fields")
        cfg = cls(layers=int(arch.layers), hidden_size=int(hidden), attention_heads=int(heads),
                  kv_heads=int(arch.kv_heads or heads), head_dim=head_dim,
                  vocab_size=int(arch.vocab_size), context_window=int(context_window or 2048),
                  intermediate_size=getattr(arch, "intermediate_size", None))
        total = getattr(arch, "params_total", None) or cfg.params
        if total > MAX_PARAMS:
            raise ModelTooLarge(
                f"model '{model_id}' has about {total / 1e9:.1f}B parameters; the numpy "
                f"reference path runs models up to {MAX_PARAMS / 1e6:.0f}M. Size its KV "
                f"cache instead: tokcost kvmem estimate -m {model_id}")
        return cfg
