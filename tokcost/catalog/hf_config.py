"""A Hugging Face ``config.json`` read into the catalog's ``Architecture`` (DESIGN §4, §5), as
transformers' configuration classes define its fields (rules and sources: docs/models.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from tokcost.catalog import schema as s
from tokcost.catalog.hf_weights import WeightsSummary, quant_bits
from tokcost.catalog.schema import Architecture, Attention, AttentionType, LayerKind
from tokcost.errors import InputError

# Class defaults real configs leave out: google/gemma-3-27b-it states none of Gemma3TextConfig's
# three; MistralConfig.sliding_window, Qwen3NextConfig.full_attention_interval, Gemma4TextConfig's
# per-layer embeddings (transformers 5.5+ configuration_gemma4.py).
_DEFAULTS: dict[str, dict[str, int]] = {
    "gemma3_text": {"vocab_size": 262_208, "max_position_embeddings": 131_072,
                    "sliding_window_pattern": 6}, "mistral": {"sliding_window": 4096},
    "qwen3_next": {"full_attention_interval": 4},
    # Gemma4TextConfig: per-layer embeddings unless the config says 0 (E2B/E4B state 256)
    "gemma4_text": {"hidden_size_per_layer_input": 256, "vocab_size_per_layer_input": 262_144}}
# Sliding and full layers alternate, layer 0 sliding (Gemma2Config, GptOssConfig).
_ALTERNATING = frozenset({"gemma2", "gpt_oss"})
# Attention and Mamba side by side in every layer (vLLM falcon_h1.py FalconH1ParallelHybrid).
_PARALLEL_HYBRID = frozenset({"falcon_h1"})
# GPT-2-style names (transformers' attribute_map).
_ALIASES = {"num_hidden_layers": ("n_layer", "num_layers"), "num_attention_heads": ("n_head",),
            "hidden_size": ("n_embd", "d_model"),
            "max_position_embeddings": ("n_positions", "max_sequence_length", "seq_length")}
_LAYER_TYPES: dict[str, LayerKind] = {
    "full_attention": "full", "attention": "full", "global": "full", "sliding_attention": "sliding",
    "local": "sliding", "linear_attention": "linear", "mamba": "linear", "mamba2": "linear"}
_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "bf16",
           "float": "bf16", "float8_e4m3fn": "fp8"}



def _shown(value: Any) -> str:
    """A config value as an error quotes it: a hostile one (a 300-digit number, a megabyte of
    text) is described, not echoed."""
    text = repr(value)
    if isinstance(value, int) and len(text) > 24:
        return f"a {len(text.lstrip('-'))}-digit number"
    return text if len(text) <= 60 else text[:57] + "..."

class ConfigFields:
    """Typed reads from one (text) config, every error naming the field and the file."""

    def __init__(self, config: Mapping[str, Any], where: str) -> None:
        self.where = where
        text = config.get("text_config")
        self.text: Mapping[str, Any] = text if isinstance(text, Mapping) else config
        self.model_type = str(self.text.get("model_type") or config.get("model_type") or "")
        self.defaults = _DEFAULTS.get(self.model_type, {})
        both = (config, self.text)  # torch_dtype and quantization_config may be at the top
        self.dtype: str | None = next((c[k] for c in both for k in ("torch_dtype", "dtype")
                                       if isinstance(c.get(k), str)), None)
        self.quantization: Mapping[str, Any] | None = next(
            (c["quantization_config"] for c in both
             if isinstance(c.get("quantization_config"), Mapping)), None)

    def raw(self, key: str) -> Any:
        for name in (key, *_ALIASES.get(key, ())):
            if name in self.text:  # a stated null is a value (Mistral v0.3: no window)
                return self.text[name]
        return self.defaults.get(key)

    def count(self, key: str, what: str, *, cap: int = s.MAX_WIDTH, minimum: int = 1) -> int | None:
        value = self.raw(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= cap:
            raise InputError(f"{self.where}: {key} is {_shown(value)}; expected {what}, a whole "
                             f"number from {minimum} to {cap:,}")
        return value

    def need(self, key: str, what: str, *, cap: int = s.MAX_WIDTH, minimum: int = 1) -> int:
        value = self.count(key, what, cap=cap, minimum=minimum)
        if value is None:
            raise InputError(f"{self.where} has no {key} ({what}), which KV-cache sizes "
                             "need; add it to the config")
        return value


def architecture_from_config(config: Mapping[str, Any], *, where: str,
    weights: WeightsSummary | None = None, source: str | None = None) -> Architecture:
    """The ``Architecture`` a config.json describes; ``weights``: exact bytes and parameters."""
    f = ConfigFields(config, where)
    if f.text.get("is_encoder_decoder") is True:
        raise InputError(f"{where}: an encoder-decoder model; tokcost sizes decoder-only "
                         "models' KV caches")
    kinds = layer_kinds(f, f.need("num_hidden_layers", "the number of layers", cap=s.MAX_LAYERS))
    attention = _attention(f, kinds)
    mtp = _mtp_layers(f)
    if mtp:
        attention = replace(attention, mtp_layers=mtp)
    heads = f.count("num_attention_heads", "the number of attention heads")
    hidden = f.count("hidden_size", "the hidden size")
    head_dim = f.count("head_dim", "the attention head size")
    kv_heads = sliding_kv_heads(f, set(kinds)) or f.count("num_key_value_heads",
                                                          "the number of kv heads")
    if any(k in ("full", "sliding") for k in kinds):
        if heads is None:
            f.need("num_attention_heads", "the number of attention heads")
        if head_dim is None and hidden is None:
            f.need("head_dim", "the attention head size, or hidden_size")
    if heads is not None:
        kv_heads = heads if kv_heads is None else kv_heads
        # MLA caches a latent, not heads: its head size stays as written (none).
        if head_dim is None and hidden is not None and "mla" not in kinds:
            head_dim = hidden // heads
        if heads % kv_heads:
            raise InputError(f"{where}: num_attention_heads {heads} is not a multiple of "
                             f"num_key_value_heads {kv_heads}; check the config")
    experts = _first_count(f, ("num_local_experts", "n_routed_experts", "num_experts"))
    per_token = _first_count(f, ("num_experts_per_tok", "experts_per_token", "top_k_experts"))
    if experts is None or experts <= 1:
        experts = per_token = None  # a dense model, even one that states the field
    w = weights
    return Architecture(
        layers=len(kinds), hidden_size=hidden, attention_heads=heads, kv_heads=kv_heads,
        head_dim=head_dim, vocab_size=f.count("vocab_size", "the vocabulary size", cap=s.MAX_VOCAB),
        params_total=(w.params or None) if w else None,
        params_active=(w.active_params(experts, per_token) or None) if w else None,
        weights_dtype=weights_dtype(f.dtype, f.quantization),
        weights_bytes=(w.bytes or None) if w else None, experts=experts,
        experts_per_token=per_token,
        expert_weights_bytes=w.expert_bytes if w and experts and w.expert_bytes else None,
        attention=attention, source=source, model_class=model_class(config, where))


def model_class(config: Mapping[str, Any], where: str) -> str | None:
    """The model class a config's ``architectures`` names first (transformers writes the list;
    vLLM's registry tries its names in order), None where the config gives none."""
    names = config.get("architectures")
    if names is None or names == []:
        return None
    if not isinstance(names, list) or not all(
            isinstance(n, str) and n.strip() and len(n) <= 200 for n in names):
        raise InputError(f"{where}: architectures is {_shown(names)}; expected a list of model "
                         "class names such as [\"LlamaForCausalLM\"]")
    return str(names[0]).strip()


def context_window(config: Mapping[str, Any], *, where: str) -> int | None:
    """``max_position_embeddings`` of the (text) config: the longest context it serves."""
    return ConfigFields(config, where).count(
        "max_position_embeddings", "the context window in tokens", cap=s.MAX_TOKENS)


def _first_count(f: ConfigFields, keys: Sequence[str]) -> int | None:
    found = (f.count(k, "a number of experts", cap=s.MAX_EXPERTS, minimum=0) for k in keys)
    return next((v for v in found if v is not None), None)


def layer_kinds(f: ConfigFields, layers: int) -> tuple[LayerKind, ...]:
    """The cache kind of each layer, by the first rule that applies (docs/models.md)."""
    if f.count("kv_lora_rank", "the MLA latent rank") is not None:
        return tuple("mla" for _ in range(layers))
    listed = f.text.get("layer_types")
    if listed is not None:
        if not isinstance(listed, list) or len(listed) != layers:
            size = len(listed) if isinstance(listed, list) else "no"
            raise InputError(f"{f.where}: layer_types has {size} entries for {layers} layers "
                             "(num_hidden_layers); check the config")
        unknown = [v for v in listed if _LAYER_TYPES.get(str(v)) is None]
        if unknown:
            raise InputError(f"{f.where}: layer_types holds {unknown[0]!r}, a layer kind tokcost "
                             f"does not model (it knows {', '.join(_LAYER_TYPES)})")
        return tuple(_LAYER_TYPES[str(v)] for v in listed)
    hybrid = _listed_kinds(f, "hybrid_layer_pattern", layers)
    if hybrid is not None:  # MiMo-V2: 1 a sliding layer, 0 a full one (vLLM mimo_v2_flash.py)
        return tuple("sliding" if v else "full" for v in hybrid)
    if _chunk(f) is not None:
        return _chunked_kinds(f, layers)
    kinds = _listed_kinds(f, "attn_type_list", layers)  # MiniMax: 0 lightning, 1 softmax
    if kinds is not None:
        return tuple("full" if v else "linear" for v in kinds)
    pattern = f.text.get("hybrid_override_pattern")
    if isinstance(pattern, str):
        if len(pattern) != layers:
            raise InputError(f"{f.where}: hybrid_override_pattern has {len(pattern)} "
                             f"characters for {layers} layers; check the config")
        # Nemotron-H's letters (NemotronHConfig, transformers; vLLM nemotron_h.py): M Mamba2,
        # * attention, - MLP, E MoE; any other letter is a block tokcost cannot size.
        bad = next((c for c in pattern if c not in "M*-E"), None)
        if bad is not None:
            raise InputError(f"{f.where}: hybrid_override_pattern holds {bad!r}, a block "
                             "tokcost does not model (it knows M Mamba, * attention, - MLP, "
                             "E MoE); check the config")
        return tuple("linear" if c == "M" else "full" for c in pattern if c in "M*")
    period = f.count("attn_layer_period", "the attention layer period", cap=s.MAX_LAYERS)
    if period is not None:
        offset = f.count("attn_layer_offset", "the attention layer offset", cap=s.MAX_LAYERS,
                         minimum=0) or 0
        return tuple("full" if i % period == offset else "linear" for i in range(layers))
    interval = f.count("full_attention_interval", "the full attention interval", cap=s.MAX_LAYERS)
    if interval is not None:
        return tuple("linear" if (i + 1) % interval else "full" for i in range(layers))
    if f.raw("sliding_window") is None:
        return tuple("full" for _ in range(layers))
    if "use_sliding_window" in f.text:  # Qwen2/Qwen3: off unless asked, then from a layer on
        if f.text.get("use_sliding_window") is not True:
            return tuple("full" for _ in range(layers))
        start = f.count("max_window_layers", "the first sliding layer", cap=s.MAX_LAYERS,
                        minimum=0) or 0
        return tuple("sliding" if i >= start else "full" for i in range(layers))
    every = f.count("sliding_window_pattern", "the sliding pattern", cap=s.MAX_LAYERS)
    if every is None and f.model_type in _ALTERNATING:
        every = 2
    if every is not None:
        return tuple("sliding" if (i + 1) % every else "full" for i in range(layers))
    return tuple("sliding" for _ in range(layers))


def _chunk(f: ConfigFields) -> int | None:
    """Llama-4's attention chunk; MiMo-V2-Flash's config also states attention_chunk_size (128,
    its window), but vLLM's mimo_v2_flash.py reads its layers from hybrid_layer_pattern and its
    window from sliding_window_size: plain sliding layers, not chunks."""
    if f.text.get("hybrid_layer_pattern") is not None:
        return None
    return f.count("attention_chunk_size", "the attention chunk in tokens", cap=s.MAX_TOKENS)


def _chunked_kinds(f: ConfigFields, layers: int) -> tuple[LayerKind, ...]:
    """Llama-4: a layer with RoPE (``no_rope_layers[i]`` 1) attends within its chunk, a NoPE one
    (0) to everything (vLLM llama4.py: ``ChunkedLocalAttention`` unless ``nope``); an empty list
    is every 4th layer NoPE (Llama4TextConfig's ``no_rope_layer_interval`` 4)."""
    listed = _listed_kinds(f, "no_rope_layers", layers)
    if not listed:
        listed = [int((i + 1) % 4 != 0) for i in range(layers)]
    return tuple("sliding" if v else "full" for v in listed)


def _listed_kinds(f: ConfigFields, key: str, layers: int) -> list[int] | None:
    """A 0/1 list of one entry per layer (an empty one: unstated), else a one-line error."""
    listed = f.text.get(key)
    if listed is None or listed == []:
        return None
    if not isinstance(listed, list) or len(listed) != layers or any(
            type(v) is not int or v not in (0, 1) for v in listed):
        raise InputError(f"{f.where}: {key} must list 0 or 1 for each of the {layers} layers "
                         "(num_hidden_layers); check the config")
    return listed


def _attention(f: ConfigFields, kinds: Sequence[LayerKind]) -> Attention:
    present = set(kinds)
    if f.raw("index_topk") is not None and any(k in f.text for k in ("indexer_types",
                                                                     "index_topk_freq")):
        raise InputError(f"{f.where}: model_type {f.model_type} shares its sparse-attention "
                         "indexer across layers (indexer_types), which tokcost does not model")
    if present == {"mla"}:
        return Attention("mla", kv_lora_rank=f.need("kv_lora_rank", "the MLA latent rank"),
                         qk_rope_head_dim=f.need("qk_rope_head_dim", "the MLA rotary head size"),
                         # DeepseekV32ForCausalLM's indexer (index_head_dim, index_topk)
                         indexer_head_dim=f.count("index_head_dim", "the indexer head size")
                         if f.raw("index_topk") is not None else None)
    window = None
    chunk = _chunk(f)
    if "sliding" in present:
        # MiMo-V2's window is sliding_window_size (vLLM mimo_v2_flash.py MiMoV2Attention)
        window = chunk or f.count("sliding_window_size", "the sliding window in tokens",
                                  cap=s.MAX_TOKENS) or f.need(
            "sliding_window", "the sliding window in tokens", cap=s.MAX_TOKENS)
    parallel = f.model_type in _PARALLEL_HYBRID
    state = linear_state_elements(f) if "linear" in present or parallel else None
    if not kinds:
        raise InputError(f"{f.where}: no layer holds a KV cache or state; check the config")
    # Gemma-3n: the last num_kv_shared_layers layers read earlier layers' caches.
    shared = f.count("num_kv_shared_layers", "the kv-shared layers", cap=len(kinds) - 1,
                     minimum=0) or 0
    heads, dim, v_dim = head_shapes(f, present)
    if present == {"full"} and not parallel:
        return Attention(kv_shared_layers=shared, global_kv_heads=heads, global_head_dim=dim,
                         v_head_dim=v_dim)
    kind: AttentionType = "hybrid" if "linear" in present or parallel else "sliding"
    m = mamba2(f) if state is not None else None
    return Attention(kind, shortest_period(kinds), window, linear_state_elements=state,
                     linear_fp32_elements=fp32_state_elements(f) if state is not None else None,
                     chunked=chunk is not None, kv_shared_layers=shared,
                     parallel_linear=parallel, mamba_groups=m[3] if m else None,
                     mamba_group_elements=(m[4] - 1) * 2 * m[2] if m else None,
                     global_kv_heads=heads, global_head_dim=dim, v_head_dim=v_dim,
                     linear_conv_channels=conv_channels(f) if state is not None else None,
                     mamba_chunk_size=mamba_chunk_size(f) if state is not None else None,
                     linear_ssm_elements=ssm_state_elements(f) if state is not None else None,
                     linear_ssm_dtype=_ssm_dtype(f) if state is not None else None,
                     linear_ssm_cache_dtype=_ssm_dtype(f, "mamba_ssm_cache_dtype")
                     if state is not None else None,
                     cacheless_layers=_cacheless_layers(f))


def _mtp_layers(f: ConfigFields) -> int | None:
    """Layers of the model's own multi-token-prediction head: DeepSeek-V3's (and GLM-4.5's)
    num_nextn_predict_layers, Qwen3.5's mtp_num_hidden_layers (the n_predict vLLM's MTP drafter
    is built with, vllm/config/speculative.py); Qwen3-Next's config states none and vLLM's
    drafter takes 1 (qwen3_next_mtp.py: getattr(config, "num_nextn_predict_layers", 1);
    qwen3_5_mtp.py likewise for mtp_num_hidden_layers)."""
    for key in ("num_nextn_predict_layers", "mtp_num_hidden_layers"):
        n = f.count(key, "the multi-token-prediction layers", cap=s.MAX_LAYERS, minimum=0)
        if n is not None:
            return n
    return 1 if f.model_type.startswith(("qwen3_next", "qwen3_5")) else None


def conv_channels(f: ConfigFields) -> int | None:
    """A linear layer's convolution channels, vLLM's conv_dim before the TP split (mamba_utils.py
    gated_delta_net_state_shape, mamba2_state_shape): each speculative token adds a row."""
    if f.raw("linear_num_value_heads") is not None:  # Gated DeltaNet
        return (2 * f.need("linear_num_key_heads", "the linear-attention key heads")
                * f.need("linear_key_head_dim", "the linear-attention key head size")
                + f.need("linear_num_value_heads", "the linear-attention value heads")
                * f.need("linear_value_head_dim", "the linear-attention value head size"))
    if (m := mamba2(f)) is not None:
        heads, head_dim, state, groups, _ = m
        inner = f.count("mamba_d_ssm", "the Mamba intermediate size") or heads * head_dim
        return inner + 2 * groups * state
    return None


def mamba_chunk_size(f: ConfigFields) -> int | None:
    """The chunk a Mamba1/Mamba2 family's prefix caching ("all") aligns blocks to: its config's
    mamba_chunk_size, else chunk_size, else 2048 (vllm/config/model.py get_mamba_chunk_size);
    None for Gated DeltaNet and lightning attention, which vLLM caches in "align" mode only."""
    if f.raw("linear_num_value_heads") is not None or f.raw("attn_type_list") is not None:
        return None
    if mamba2(f) is None and f.raw("mamba_d_state") is None:
        return None
    for key in ("mamba_chunk_size", "chunk_size"):
        n = f.count(key, "the Mamba chunk size", cap=s.MAX_TOKENS)
        if n is not None:
            return n
    return 2048


def head_shapes(f: ConfigFields, present: set[LayerKind]) -> tuple[int | None, ...]:
    """The full layers' own kv heads (Gemma-4's global layers; MiMo-V2's, beside its sliding
    layers' swa_num_key_value_heads) and head size (Gemma-4), and V's head size where it is
    not K's, each None where the config gives none that differs."""
    dim = f.count("global_head_dim", "the global layers' head size")
    # num_global_key_value_heads counts only with attention_k_eq_v (vLLM gemma4.py
    # Gemma4DecoderLayer; transformers' Gemma4TextAttention reads it the same way).
    heads = (f.count("num_global_key_value_heads", "the global layers' kv heads")
             if f.text.get("attention_k_eq_v") is True else None)
    v_dim = f.count("v_head_dim", "the value head size")  # MiMo-V2 (MLA's is read apart)
    for own, common in (("swa_head_dim", "head_dim"), ("swa_v_head_dim", "v_head_dim")):
        if f.raw(own) is not None and f.raw(own) != f.raw(common):
            raise InputError(f"{f.where}: model_type {f.model_type} gives its sliding layers their "
                             f"own {common} ({own}), which tokcost does not model")
    swa = sliding_kv_heads(f, present)
    if "full" not in present:
        heads = dim = None
    elif swa is not None and heads is None:
        # MiMo-V2-Flash: the sliding layers' kv heads are swa_num_key_value_heads (8), the full
        # layers' num_key_value_heads (4) (vLLM mimo_v2_flash.py MiMoV2FlashDecoderLayer).
        heads = f.count("num_key_value_heads", "the number of kv heads")
    same = (swa if swa is not None else f.raw("num_key_value_heads"), f.raw("head_dim"),
            f.raw("head_dim"))
    return (None if heads == same[0] else heads, None if dim == same[1] else dim,
            None if v_dim == same[2] else v_dim)


def sliding_kv_heads(f: ConfigFields, present: set[LayerKind]) -> int | None:
    """swa_num_key_value_heads, the sliding layers' own kv heads, where there are sliding
    layers (MiMo-V2); else None."""
    if "sliding" not in present:
        return None
    return f.count("swa_num_key_value_heads", "the sliding layers' kv heads")


def shortest_period(kinds: Sequence[LayerKind]) -> tuple[LayerKind, ...]:
    """The shortest pattern that, repeated from layer 0, gives ``kinds``."""
    n = len(kinds)
    p = next(p for p in range(1, n + 1) if all(kinds[i] == kinds[i % p] for i in range(n)))
    return tuple(kinds[:p])


def mamba2(f: ConfigFields) -> tuple[int, int, int, int, int] | None:
    """A Mamba2 layer's heads, head size, SSM state, groups and conv width (NemotronH's names,
    else Granite-4's and Falcon-H1's), or None for another state."""
    if f.raw("mamba_num_heads") is None and f.raw("mamba_n_heads") is None:
        return None
    nemotron = f.raw("mamba_num_heads") is not None
    return (f.need("mamba_num_heads" if nemotron else "mamba_n_heads", "the Mamba heads"),
            f.need("mamba_head_dim" if nemotron else "mamba_d_head", "the Mamba head size"),
            f.need("ssm_state_size" if nemotron else "mamba_d_state", "the SSM state size"),
            f.need("n_groups" if nemotron else "mamba_n_groups", "the Mamba groups"),
            f.need("conv_kernel" if nemotron else "mamba_d_conv", "the Mamba conv width"))


def linear_state_elements(f: ConfigFields) -> int:
    """Elements of one linear layer's state for one sequence (vLLM's state shapes)."""
    if f.raw("linear_num_value_heads") is not None:  # Gated DeltaNet (Qwen3-Next, Qwen3.5)
        k_heads = f.need("linear_num_key_heads", "the linear-attention key heads")
        v_heads = f.need("linear_num_value_heads", "the linear-attention value heads")
        k_dim = f.need("linear_key_head_dim", "the linear-attention key head size")
        v_dim = f.need("linear_value_head_dim", "the linear-attention value head size")
        kernel = f.need("linear_conv_kernel_dim", "the linear-attention convolution width")
        total = (kernel - 1) * (2 * k_heads * k_dim + v_heads * v_dim) + v_heads * k_dim * v_dim
    elif (m := mamba2(f)) is not None:
        heads, head_dim, state, groups, kernel = m
        # The conv runs over vLLM's intermediate size: Falcon-H1's mamba_d_ssm, else heads x head
        # size (= mamba_expand x hidden_size in Granite-4's and NemotronH's configs).
        inner = f.count("mamba_d_ssm", "the Mamba intermediate size") or heads * head_dim
        total = (kernel - 1) * (inner + 2 * groups * state) + heads * head_dim * state
    elif f.raw("attn_type_list") is not None:
        # MiniMax's lightning attention: one heads x head_dim x head_dim state in the model dtype
        # (MiniMaxText01LinearAttention.get_state_shape, MambaStateShapeCalculator
        # .linear_attention_state_shape; linear_attention_state_dtype refuses float32).
        total = f.need("num_attention_heads", "the attention heads") * f.need(
            "head_dim", "the attention head size") ** 2
    elif f.raw("mamba_d_state") is not None:  # Mamba1 (Jamba)
        inner = f.need("hidden_size", "the hidden size") * f.need(
            "mamba_expand", "the Mamba expansion factor")
        state = f.need("mamba_d_state", "the SSM state size")
        total = inner * (f.need("mamba_d_conv", "the Mamba conv width") - 1) + inner * state
    else:
        raise InputError(f"{f.where} has linear layers but no state size (linear_num_value_heads"
                         ", mamba_num_heads, attn_type_list or mamba_d_state); check the config")
    if total > s.MAX_STATE_ELEMENTS:
        raise InputError(f"{f.where}: a linear layer's state of {total:,} elements is beyond "
                         f"{s.MAX_STATE_ELEMENTS:,}; check the config")
    return total


def ssm_state_elements(f: ConfigFields) -> int | None:
    """Of a linear layer's state, the SSM (temporal) part: Gated DeltaNet value heads x key size
    x value size, Mamba2 heads x head size x state, Mamba1 inner x state (SGLang's
    Mamba2StateShape temporal, configs/mamba_utils.py); None for lightning attention."""
    if f.raw("linear_num_value_heads") is not None:
        return f.need("linear_num_value_heads", "the linear-attention value heads") * f.need(
            "linear_key_head_dim", "the linear-attention key head size") * f.need(
            "linear_value_head_dim", "the linear-attention value head size")
    if (m := mamba2(f)) is not None:
        return m[0] * m[1] * m[2]
    if f.raw("attn_type_list") is None and f.raw("mamba_d_state") is not None:
        return f.need("hidden_size", "the hidden size") * f.need(
            "mamba_expand", "the Mamba expansion factor") * f.need("mamba_d_state",
                                                                   "the SSM state size")
    return None


_SSM_DTYPES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def _ssm_dtype(f: ConfigFields, key: str = "mamba_ssm_dtype") -> str | None:
    """The config's mamba_ssm_dtype, as SGLang's mamba2_state_dtype reads it (v0.5.9 on; a name
    outside its three is ignored there, a warning, float32), or its mamba_ssm_cache_dtype (vLLM's
    NemotronH hook, model_executor/models/config.py)."""
    return _SSM_DTYPES.get(str(f.raw(key)))


def _cacheless_layers(f: ConfigFields) -> int | None:
    """Nemotron-H's layers that are neither Mamba (M) nor attention (*): MLP (-) and MoE (E)."""
    pattern = f.text.get("hybrid_override_pattern")
    if not isinstance(pattern, str):
        return None
    return sum(1 for c in pattern if c not in "M*") or None


def fp32_state_elements(f: ConfigFields) -> int | None:
    """Of a Gated DeltaNet layer's state, the SSM part vLLM holds in float32: Qwen3.5 (and
    Qwen3.6, the same model_type) set mamba_ssm_cache_dtype from the config's mamba_ssm_dtype
    (vllm/model_executor/models/config.py Qwen3_5ForConditionalGenerationConfig, PR #34489,
    merged 2026-02-12 with the first Qwen3.5 support, PR #34110 of 2026-02-09; the conv state
    keeps the model dtype, mamba_utils.py _mamba_state_dtype). Qwen3-Next has no such rule."""
    if not f.model_type.startswith("qwen3_5") or f.raw("linear_num_value_heads") is None:
        return None
    if str(f.raw("mamba_ssm_dtype")).lower() not in ("float32", "fp32"):
        return None
    heads = f.need("linear_num_value_heads", "the linear-attention value heads")
    return heads * f.need("linear_key_head_dim", "the linear-attention key head size") * f.need(
        "linear_value_head_dim", "the linear-attention value head size")


def weights_dtype(dtype: str | None, quantization: Mapping[str, Any] | None) -> str:
    """The catalog's dtype of the weights: the quantization's, else ``torch_dtype``'s."""
    if quantization:
        method = str(quantization.get("quant_method", "")).lower()
        if method == "mxfp4":
            return "mxfp4"
        algo = str(quantization.get("quant_algo", "")).lower()  # ModelOpt's FP8
        if method in ("fp8", "fbgemm_fp8") or "fp8" in algo:
            return "fp8"
        if method == "bitsandbytes":
            return "int4" if quantization.get("load_in_4bit") else "int8"
        bits, kind = quant_bits(quantization)
        if bits == 8 and kind == "float":
            return "fp8"
        if bits in (4, 8):
            return "int4" if bits == 4 else "int8"
    return _DTYPES.get((dtype or "float32").lower(), "bf16")
