"""The shape of a reference model, as a frozen dataclass (nanoGPT's ``GPTConfig``)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from tokcost.errors import UsageError
from tokcost.reference.errors import ModelTooLarge


class CacheMode(str, Enum):
    """How generation keeps keys and values: ``none`` recomputes them every step,
    ``contiguous`` reserves prompt + new tokens per sequence up front, ``paged``
    allocates blocks on demand and shares the prompt's blocks between samples.

    >>> CacheMode.parse("paged") is CacheMode.PAGED
    True
    """

    NONE = "none"
    CONTIGUOUS = "contiguous"
    PAGED = "paged"

    @classmethod
    def parse(cls, value: CacheMode | str) -> CacheMode:
        """``value`` as a mode; a UsageError names the ``cache`` parameter."""
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(m.value for m in cls)
            raise UsageError(
                f"unknown cache {value!r}; use one of: {choices}", param="cache"
            ) from None

# numpy runs a forward pass of a model this size in well under a second per token
# on a laptop core; beyond it the reference path is the wrong tool.
MAX_PARAMS = 200_000_000


@dataclass(frozen=True)
class RopeScaling:
    """How a checkpoint stretches RoPE past its training length (transformers'
    ``rope_scaling``): ``linear`` divides every frequency by ``factor``; ``llama3``
    (Llama-3.1/3.2, SmolLM2-style configs) divides only the low frequencies, blending
    between ``low_freq_factor`` and ``high_freq_factor`` wavelengths of
    ``original_max_position_embeddings``."""

    kind: str = "linear"  # "linear" or "llama3"
    factor: float = 1.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_position_embeddings: int = 8192


@dataclass(frozen=True)
class RefConfig:
    """Decoder-only transformer shape: RMSNorm, RoPE, grouped-query attention, SwiGLU.

    The switches after ``kv_dtype`` describe the Hugging Face families
    (tokcost.reference.hf_checkpoint); their defaults are tiny-ref's plain LLaMA.

    >>> cfg = RefConfig(layers=4, hidden_size=128, attention_heads=4, kv_heads=2,
    ...                 head_dim=32, vocab_size=512, context_window=1024)
    >>> cfg.group, cfg.ffn_hidden, cfg.kv_bytes_per_token
    (2, 384, 2048)
    """

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
    # The cache holds float32 keys and values: the dtype `kvmem estimate` must use.
    kv_dtype: str = "fp32"
    # Qwen2: biases on the q, k and v projections.
    qkv_bias: bool = False
    # Qwen3, Gemma-3: an RMSNorm over each head's query and key before RoPE.
    qk_norm: bool = False
    # Gemma-2/3: norms after attention and after the MLP too ("sandwich" norms).
    post_norms: bool = False
    # "silu" (SwiGLU) or "gelu_tanh" (Gemma's GeGLU, gelu_pytorch_tanh).
    activation: str = "silu"
    # Per layer "full" or "sliding" (None: all full); a sliding layer's query sees
    # the ``sliding_window`` newest positions, itself included.
    layer_types: tuple[str, ...] | None = None
    sliding_window: int | None = None
    # Gemma-3: RoPE base of the sliding layers (None: rope_theta everywhere).
    rope_local_theta: float | None = None
    rope_scaling: RopeScaling | None = None
    # Gemma-2: tanh soft-capping of attention scores and of the final logits.
    attn_softcap: float | None = None
    final_softcap: float | None = None
    # Gemma: embeddings times sqrt(hidden_size); scores times query_scale (None: hs^-0.5).
    embed_scale: float | None = None
    query_scale: float | None = None

    def __post_init__(self) -> None:
        for name in (
            "layers",
            "hidden_size",
            "attention_heads",
            "kv_heads",
            "head_dim",
            "vocab_size",
            "context_window",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.attention_heads % self.kv_heads:
            raise ValueError(
                f"attention_heads ({self.attention_heads}) must be a multiple of "
                f"kv_heads ({self.kv_heads}) for grouped-query attention"
            )
        if self.head_dim % 2:
            raise ValueError(f"head_dim must be even for RoPE, got {self.head_dim}")
        if self.activation not in ("silu", "gelu_tanh"):
            raise ValueError(f"activation must be silu or gelu_tanh, got {self.activation!r}")
        if self.layer_types is not None:
            if len(self.layer_types) != self.layers or not set(self.layer_types) <= {
                "full", "sliding"
            }:
                raise ValueError(f"layer_types must list full/sliding for {self.layers} layers")
            if "sliding" in self.layer_types and not self.sliding_window:
                raise ValueError("sliding layers need a sliding_window >= 1")

    def sliding(self, layer: int) -> bool:
        """Does ``layer`` attend to a window of recent positions only?"""
        return self.layer_types is not None and self.layer_types[layer] == "sliding"

    @property
    def group(self) -> int:
        """Query heads per KV head (1 = multi-head, attention_heads = multi-query)."""
        return self.attention_heads // self.kv_heads

    @property
    def ffn_hidden(self) -> int:
        """SwiGLU width: given, or LLaMA's 8/3 x hidden rounded up to a multiple of 64."""
        if self.intermediate_size:
            return self.intermediate_size
        raw = int(8 * self.hidden_size / 3)
        return -(-raw // 64) * 64

    @property
    def kv_bytes_per_token(self) -> int:
        """2 (K and V) x layers x kv_heads x head_dim x 4 bytes (float32)."""
        return 2 * self.layers * self.kv_heads * self.head_dim * 4

    @property
    def params(self) -> int:
        """Parameter count (embeddings counted once when tied)."""
        c, hs = self.hidden_size, self.head_dim
        attn = c * self.attention_heads * hs * 2 + c * self.kv_heads * hs * 2
        if self.qkv_bias:
            attn += (self.attention_heads + 2 * self.kv_heads) * hs
        mlp = 3 * c * self.ffn_hidden
        per_layer = attn + mlp + (4 if self.post_norms else 2) * c
        per_layer += 2 * hs if self.qk_norm else 0
        emb = self.vocab_size * c * (1 if self.tie_embeddings else 2)
        return self.layers * per_layer + emb + c

    @classmethod
    def from_architecture(
        cls, model_id: str, arch: Any, context_window: int | None, **overrides: Any
    ) -> RefConfig:
        """Build from a catalog ``Architecture`` (or any object/dict with its fields).

        Raises ModelTooLarge for models numpy cannot run, naming ``kvmem estimate``.
        """

        def field(name: str, default: Any = None) -> Any:
            if isinstance(arch, dict):
                return arch.get(name, default)
            return getattr(arch, name, default)

        layers, hidden = field("layers"), field("hidden_size")
        heads = field("attention_heads")
        kv_heads = field("kv_heads") or heads
        head_dim = field("head_dim") or (hidden // heads if hidden and heads else None)
        vocab = field("vocab_size")
        missing = [
            n
            for n, v in (
                ("layers", layers),
                ("hidden_size", hidden),
                ("attention_heads", heads),
                ("head_dim", head_dim),
                ("vocab_size", vocab),
            )
            if not v
        ]
        if missing:
            raise ModelTooLarge(
                f"model '{model_id}' has no {', '.join(missing)} in the catalog, so the "
                "reference path cannot build it; use tiny-ref instead or add the fields"
            )
        cfg = cls(
            layers=int(layers),
            hidden_size=int(hidden),
            attention_heads=int(heads),
            kv_heads=int(kv_heads),
            head_dim=int(head_dim or 0),
            vocab_size=int(vocab),
            context_window=int(context_window or 2048),
            intermediate_size=field("intermediate_size"),
            **overrides,
        )
        total = _total_params(field("params_total")) or _total_params(field("params"))
        total = total or cfg.params
        if total > MAX_PARAMS:
            raise ModelTooLarge(
                f"model '{model_id}' has about {total / 1e9:.1f}B parameters; the numpy "
                f"reference path runs models up to {MAX_PARAMS / 1e6:.0f}M. Size its KV "
                f"cache instead: tokcost kvmem estimate -m {model_id}"
            )
        return cfg


def _total_params(params: Any) -> int:
    """``params`` may be a number, or a mapping/object with ``total``."""
    if params is None:
        return 0
    if isinstance(params, (int, float)):
        return int(params)
    if isinstance(params, dict):
        return int(params.get("total") or 0)
    return int(getattr(params, "total", 0) or 0)
