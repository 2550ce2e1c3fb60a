"""A Hugging Face ``config.json`` read into the catalog's ``Architecture`` (DESIGN §4, §5).

The fields mean what transformers' configuration classes say
(src/transformers/models/<family>/configuration_<family>.py):

* shape: ``num_hidden_layers``, ``hidden_size``, ``num_attention_heads``,
  ``num_key_value_heads`` (absent: one kv head per attention head, i.e. MHA, as in
  LlamaConfig), ``head_dim`` (absent or null: ``hidden_size // num_attention_heads``,
  LlamaConfig's rule; stated, it wins: Qwen3-32B 128, not 5120 / 64), ``vocab_size``,
  ``max_position_embeddings`` (the context window);
* layer kinds, the first rule that applies: an explicit ``layer_types`` list
  (``full_attention``, ``sliding_attention``, ``linear_attention``, ``mamba``...);
  NemotronH's ``hybrid_override_pattern`` (``M`` Mamba2, ``*`` attention; ``-`` MLP and
  ``E`` MoE layers hold no cache and are left out); Jamba's ``attn_layer_period`` /
  ``attn_layer_offset``; ``full_attention_interval`` (Qwen3-Next: layer i is
  ``linear_attention`` unless ``(i + 1) % interval == 0``); then the sliding window:
  Qwen2/Qwen3 slide only with ``use_sliding_window`` and from layer
  ``max_window_layers`` on; ``sliding_window_pattern`` (Gemma-3: layer i slides unless
  ``(i + 1) % pattern == 0``); Gemma-2 and gpt-oss alternate, sliding first; any other
  config with a ``sliding_window`` slides on every layer (Mistral-7B-v0.1, Phi-3);
* MLA (DeepSeek-V2/V3): ``kv_lora_rank`` and ``qk_rope_head_dim``;
* recurrent state per linear layer and sequence, in elements, as vLLM allocates it
  (vllm/model_executor/layers/mamba/mamba_utils.py, ``MambaStateShapeCalculator``):
  Gated DeltaNet ``(conv_kernel - 1) x (2 x k_heads x k_dim + v_heads x v_dim)`` conv
  state plus ``v_heads x k_dim x v_dim``; Mamba2 ``(conv_kernel - 1) x (intermediate +
  2 x n_groups x state)`` plus ``heads x head_dim x state``; Mamba1
  ``intermediate x (conv_kernel - 1 + state)``;
* mixture of experts: ``num_local_experts`` (Mixtral, gpt-oss), ``n_routed_experts``
  (DeepSeek), ``num_experts`` (Qwen3-MoE, Qwen3-Next, Jamba); ``num_experts_per_tok``;
* dtype: ``quantization_config.quant_method`` first (mxfp4, fp8, GPTQ/AWQ bits...),
  else ``torch_dtype`` (``dtype`` in transformers v5).

Multimodal configs keep the language model in ``text_config`` (Gemma-3); the text
fields are read there, ``torch_dtype`` and ``quantization_config`` at the top as well.
Where a family's real configs leave a field to the class default, that default is
used (``_DEFAULTS``, cited); a field the estimate needs and no default supplies is
an ``InputError`` naming it. tokcost never guesses a model's shape.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tokcost.catalog.hf_weights import WeightsSummary
from tokcost.catalog.schema import (
    MAX_EXPERTS,
    MAX_LAYERS,
    MAX_STATE_ELEMENTS,
    MAX_TOKENS,
    MAX_VOCAB,
    MAX_WIDTH,
    Architecture,
    Attention,
    AttentionType,
    LayerKind,
)
from tokcost.errors import InputError

# Class defaults of fields that real configs of a family leave out. Gemma-3's
# config.json (google/gemma-3-27b-it) states neither its vocabulary, nor its window
# of positions, nor the 5:1 pattern (Gemma3TextConfig: vocab_size=262_208,
# max_position_embeddings=131_072, sliding_window_pattern=6). MistralConfig's
# sliding_window defaults to 4096 and Qwen3NextConfig's full_attention_interval to 4.
_DEFAULTS: dict[str, dict[str, int]] = {
    "gemma3_text": {"vocab_size": 262_208, "max_position_embeddings": 131_072,
                    "sliding_window_pattern": 6},
    "mistral": {"sliding_window": 4096},
    "qwen3_next": {"full_attention_interval": 4},
}
# Families whose sliding layers alternate with full ones, layer 0 sliding, when the
# config has no layer_types (Gemma2Config, GptOssConfig: ``(i + 1) % 2``).
_ALTERNATING = frozenset({"gemma2", "gpt_oss"})
# Families whose attention tokcost cannot describe: a wrong estimate is worse than none.
_UNSUPPORTED = {
    "falcon_h1": "runs attention and Mamba side by side in every layer",
    "llama4": "uses chunked local attention (attention_chunk_size)",
    "llama4_text": "uses chunked local attention (attention_chunk_size)",
}
# GPT-2-style names (transformers' attribute_map).
_ALIASES = {
    "num_hidden_layers": ("n_layer", "num_layers"),
    "num_attention_heads": ("n_head",),
    "hidden_size": ("n_embd", "d_model"),
    "max_position_embeddings": ("n_positions", "max_sequence_length", "seq_length"),
}
_LAYER_TYPES: dict[str, LayerKind | None] = {
    "full_attention": "full", "attention": "full", "global": "full",
    "sliding_attention": "sliding", "local": "sliding",
    "linear_attention": "linear", "mamba": "linear", "mamba2": "linear",
}
FULL: LayerKind = "full"
SLIDING: LayerKind = "sliding"
LINEAR: LayerKind = "linear"
MLA: LayerKind = "mla"
_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "bf16",
           "float": "bf16", "float8_e4m3fn": "fp8"}


class ConfigFields:
    """Typed reads from one (text) config, every error naming the field and the file."""

    def __init__(self, config: Mapping[str, Any], where: str) -> None:
        self.where = where
        text = config.get("text_config")
        self.top = config
        self.text: Mapping[str, Any] = text if isinstance(text, Mapping) else config
        self.model_type = str(self.text.get("model_type") or config.get("model_type") or "")
        self.defaults = _DEFAULTS.get(self.model_type, {})

    def raw(self, key: str) -> Any:
        for name in (key, *_ALIASES.get(key, ())):
            if name in self.text:  # a stated null is a value (Mistral v0.3: no window)
                return self.text[name]
        return self.defaults.get(key)

    def has(self, key: str) -> bool:
        return self.raw(key) is not None

    def count(self, key: str, *, cap: int, what: str, minimum: int = 1) -> int | None:
        value = self.raw(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= cap:
            raise InputError(f"{self.where}: {key} is {value!r}; expected {what}, a whole "
                             f"number from {minimum} to {cap:,}")
        return value

    def need(self, key: str, *, cap: int, what: str, minimum: int = 1) -> int:
        value = self.count(key, cap=cap, what=what, minimum=minimum)
        if value is None:
            raise InputError(f"{self.where} has no {key} ({what}), which KV-cache sizes "
                             "need; add it to the config")
        return value

    def dtype(self) -> str | None:
        for config in (self.top, self.text):
            for key in ("torch_dtype", "dtype"):
                value = config.get(key)
                if isinstance(value, str):
                    return value
        return None

    def quantization(self) -> Mapping[str, Any] | None:
        for config in (self.top, self.text):
            value = config.get("quantization_config")
            if isinstance(value, Mapping):
                return value
        return None


def architecture_from_config(
    config: Mapping[str, Any],
    *,
    where: str,
    weights: WeightsSummary | None = None,
    source: str | None = None,
) -> Architecture:
    """The ``Architecture`` a config.json describes; ``weights`` (from the checkpoint's
    safetensors headers) gives the exact bytes and parameter counts."""
    f = ConfigFields(config, where)
    if f.model_type in _UNSUPPORTED:
        raise InputError(f"{where}: model_type {f.model_type} {_UNSUPPORTED[f.model_type]}, "
                         "which tokcost does not model; size it from a catalog entry instead")
    if f.text.get("is_encoder_decoder") is True:
        raise InputError(f"{where}: an encoder-decoder model; tokcost sizes decoder-only "
                         "models' KV caches")
    layers = f.need("num_hidden_layers", cap=MAX_LAYERS, what="the number of layers")
    kinds = layer_kinds(f, layers)
    attention = _attention(f, kinds)
    heads = f.count("num_attention_heads", cap=MAX_WIDTH, what="the number of attention heads")
    hidden = f.count("hidden_size", cap=MAX_WIDTH, what="the hidden size")
    head_dim = f.count("head_dim", cap=MAX_WIDTH, what="the attention head size")
    kv_heads = f.count("num_key_value_heads", cap=MAX_WIDTH, what="the number of kv heads")
    if any(k in ("full", "sliding") for k in kinds):
        if heads is None:
            f.need("num_attention_heads", cap=MAX_WIDTH, what="the number of attention heads")
        if head_dim is None and hidden is None:
            f.need("head_dim", cap=MAX_WIDTH, what="the attention head size, or hidden_size")
    if heads is not None:
        kv_heads = heads if kv_heads is None else kv_heads
        # MLA caches a latent, not heads: its head size stays as written (none).
        if head_dim is None and hidden is not None and "mla" not in kinds:
            head_dim = hidden // heads
        if heads % kv_heads:
            raise InputError(f"{where}: num_attention_heads {heads} is not a multiple of "
                             f"num_key_value_heads {kv_heads}; check the config")
    experts = _first_count(f, ("num_local_experts", "n_routed_experts", "num_experts"))
    per_token = _first_count(f, ("num_experts_per_tok", "experts_per_token"))
    if experts is not None and experts <= 1:
        experts = per_token = None  # a dense model that states the field
    elif experts is None:
        per_token = None
    params_total = params_active = weights_bytes = expert_bytes = None
    if weights is not None:
        params_total = weights.params or None
        params_active = weights.active_params(experts, per_token) or None
        weights_bytes = weights.bytes or None
        expert_bytes = weights.expert_bytes if experts and weights.expert_bytes else None
    return Architecture(
        layers=len(kinds),
        hidden_size=hidden,
        attention_heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        vocab_size=f.count("vocab_size", cap=MAX_VOCAB, what="the vocabulary size"),
        params_total=params_total,
        params_active=params_active,
        weights_dtype=weights_dtype(f.dtype(), f.quantization()),
        weights_bytes=weights_bytes,
        experts=experts,
        experts_per_token=per_token,
        expert_weights_bytes=expert_bytes,
        attention=attention,
        source=source,
    )


def context_window(config: Mapping[str, Any], *, where: str) -> int | None:
    """``max_position_embeddings`` of the (text) config: the longest context it serves.

    >>> context_window({"max_position_embeddings": 131072}, where="config.json")
    131072
    """
    return ConfigFields(config, where).count(
        "max_position_embeddings", cap=MAX_TOKENS, what="the context window in tokens"
    )


def model_type(config: Mapping[str, Any]) -> str | None:
    """The (text) config's ``model_type``: ``llama``, ``gemma3_text``, ``deepseek_v3``..."""
    return ConfigFields(config, "").model_type or None


def _first_count(f: ConfigFields, keys: Sequence[str]) -> int | None:
    for key in keys:
        value = f.count(key, cap=MAX_EXPERTS, what="a number of experts", minimum=0)
        if value is not None:
            return value
    return None


def layer_kinds(f: ConfigFields, layers: int) -> tuple[LayerKind, ...]:
    """The cache kind of each layer, by the first rule of the module docstring that applies."""
    if f.count("kv_lora_rank", cap=MAX_WIDTH, what="the MLA latent rank") is not None:
        return (MLA,) * layers
    listed = f.text.get("layer_types")
    if listed is not None:
        return _listed(f, listed, layers)
    pattern = f.text.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        if len(pattern) != layers:
            raise InputError(f"{f.where}: hybrid_override_pattern has {len(pattern)} "
                             f"characters for {layers} layers; check the config")
        kept = [c for c in pattern if c in "M*"]
        return tuple(LINEAR if c == "M" else FULL for c in kept)
    period = f.count("attn_layer_period", cap=MAX_LAYERS, what="the attention layer period")
    if period is not None:
        offset = f.count("attn_layer_offset", cap=MAX_LAYERS, what="the attention layer "
                         "offset", minimum=0) or 0
        return tuple(FULL if i % period == offset else LINEAR for i in range(layers))
    interval = f.count("full_attention_interval", cap=MAX_LAYERS,
                       what="the full attention interval")
    if interval is not None:
        return tuple(LINEAR if (i + 1) % interval else FULL for i in range(layers))
    return _sliding(f, layers)


def _listed(f: ConfigFields, listed: object, layers: int) -> tuple[LayerKind, ...]:
    if not isinstance(listed, list) or len(listed) != layers:
        size = len(listed) if isinstance(listed, list) else "no"
        raise InputError(f"{f.where}: layer_types has {size} entries for {layers} layers "
                         "(num_hidden_layers); check the config")
    kinds: list[LayerKind] = []
    for value in listed:
        kind = _LAYER_TYPES.get(str(value))
        if kind is None:
            known = ", ".join(k for k in _LAYER_TYPES)
            raise InputError(f"{f.where}: layer_types holds {value!r}, a layer kind tokcost "
                             f"does not model (it knows {known})")
        kinds.append(kind)
    return tuple(kinds)


def _sliding(f: ConfigFields, layers: int) -> tuple[LayerKind, ...]:
    window = f.raw("sliding_window")
    if window is None:
        return (FULL,) * layers
    if "use_sliding_window" in f.text:  # Qwen2/Qwen3: off unless asked, then from a layer on
        if f.text.get("use_sliding_window") is not True:
            return (FULL,) * layers
        start = f.count("max_window_layers", cap=MAX_LAYERS, what="the first sliding layer",
                        minimum=0) or 0
        return tuple(SLIDING if i >= start else FULL for i in range(layers))
    every = f.count("sliding_window_pattern", cap=MAX_LAYERS, what="the sliding pattern")
    if every is None and f.model_type in _ALTERNATING:
        every = 2
    if every is not None:
        return tuple(SLIDING if (i + 1) % every else FULL for i in range(layers))
    return (SLIDING,) * layers


def _attention(f: ConfigFields, kinds: Sequence[LayerKind]) -> Attention:
    present = set(kinds)
    if present == {"mla"}:
        return Attention(
            "mla",
            kv_lora_rank=f.need("kv_lora_rank", cap=MAX_WIDTH, what="the MLA latent rank"),
            qk_rope_head_dim=f.need("qk_rope_head_dim", cap=MAX_WIDTH,
                                    what="the MLA rotary head size"),
        )
    window = None
    if "sliding" in present:
        window = f.need("sliding_window", cap=MAX_TOKENS, what="the sliding window in tokens")
    state = linear_state_elements(f) if "linear" in present else None
    if not kinds:
        raise InputError(f"{f.where}: no layer holds a KV cache or state; check the config")
    if present == {"full"}:
        return Attention()
    pattern = shortest_period(kinds)
    kind: AttentionType = "hybrid" if "linear" in present else "sliding"
    return Attention(kind, pattern, window, linear_state_elements=state)


def shortest_period(kinds: Sequence[LayerKind]) -> tuple[LayerKind, ...]:
    """The shortest pattern that, repeated from layer 0, gives ``kinds``.

    >>> shortest_period(["sliding"] * 5 + ["full"] + ["sliding"] * 5 + ["full", "sliding"])
    ('sliding', 'sliding', 'sliding', 'sliding', 'sliding', 'full')
    """
    n = len(kinds)
    for p in range(1, n + 1):
        if all(kinds[i] == kinds[i % p] for i in range(n)):
            return tuple(kinds[:p])
    return tuple(kinds)  # pragma: no cover - p = n always matches


def linear_state_elements(f: ConfigFields) -> int:
    """Elements of one linear layer's state for one sequence (vLLM's state shapes)."""
    def need(key: str, what: str) -> int:
        return f.need(key, cap=MAX_WIDTH, what=what)

    if f.has("linear_num_value_heads"):  # Gated DeltaNet (Qwen3-Next, Qwen3.5)
        k_heads = need("linear_num_key_heads", "the linear-attention key heads")
        v_heads = need("linear_num_value_heads", "the linear-attention value heads")
        k_dim = need("linear_key_head_dim", "the linear-attention key head size")
        v_dim = need("linear_value_head_dim", "the linear-attention value head size")
        kernel = need("linear_conv_kernel_dim", "the linear-attention convolution width")
        total = (kernel - 1) * (2 * k_heads * k_dim + v_heads * v_dim) + v_heads * k_dim * v_dim
    elif f.has("mamba_num_heads") or f.has("mamba_n_heads"):  # Mamba2 (NemotronH, Granite-4)
        nemotron = f.has("mamba_num_heads")
        heads = need("mamba_num_heads" if nemotron else "mamba_n_heads", "the Mamba heads")
        head_dim = need("mamba_head_dim" if nemotron else "mamba_d_head", "the Mamba head size")
        state = need("ssm_state_size" if nemotron else "mamba_d_state", "the SSM state size")
        groups = need("n_groups" if nemotron else "mamba_n_groups", "the Mamba groups")
        kernel = need("conv_kernel" if nemotron else "mamba_d_conv", "the Mamba conv width")
        inner = heads * head_dim
        total = (kernel - 1) * (inner + 2 * groups * state) + heads * head_dim * state
    elif f.has("mamba_d_state"):  # Mamba1 (Jamba)
        hidden = need("hidden_size", "the hidden size")
        expand = need("mamba_expand", "the Mamba expansion factor")
        state = need("mamba_d_state", "the SSM state size")
        kernel = need("mamba_d_conv", "the Mamba conv width")
        inner = expand * hidden
        total = inner * (kernel - 1) + inner * state
    else:
        raise InputError(f"{f.where} has linear layers but no state size (linear_num_value_heads"
                         ", mamba_num_heads or mamba_d_state); check the config")
    if total > MAX_STATE_ELEMENTS:
        raise InputError(f"{f.where}: a linear layer's state of {total:,} elements is beyond "
                         f"{MAX_STATE_ELEMENTS:,}; check the config")
    return total


def weights_dtype(dtype: str | None, quantization: Mapping[str, Any] | None) -> str:
    """The catalog's dtype name for the weights: the quantization's, else ``torch_dtype``'s.

    float32 checkpoints are served in 16 bits (vLLM's ``dtype="auto"``; see
    tokcost.catalog.hf_weights), so they read ``bf16``.

    >>> weights_dtype("bfloat16", {"quant_method": "mxfp4"}), weights_dtype("float16", None)
    ('mxfp4', 'fp16')
    """
    if quantization:
        method = str(quantization.get("quant_method", "")).lower()
        if method == "mxfp4":
            return "mxfp4"
        algo = str(quantization.get("quant_algo", "")).lower()  # ModelOpt's FP8
        if method in ("fp8", "fbgemm_fp8") or "fp8" in algo:
            return "fp8"
        if method == "bitsandbytes":
            return "int4" if quantization.get("load_in_4bit") else "int8"
        bits = quantization.get("bits") or quantization.get("w_bit")
        groups = quantization.get("config_groups")
        if bits is None and isinstance(groups, Mapping):
            for group in groups.values():
                w = group.get("weights") if isinstance(group, Mapping) else None
                if isinstance(w, Mapping) and w.get("num_bits") is not None:
                    bits = w.get("num_bits")
                    if bits == 8 and w.get("type") == "float":
                        return "fp8"
                    break
        if bits in (4, 8):
            return "int4" if bits == 4 else "int8"
    return _DTYPES.get((dtype or "float32").lower(), "bf16")
