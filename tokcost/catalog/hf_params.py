"""A checkpoint's parameters and weight bytes from its config.json alone, tensor by tensor as
transformers' modeling files define them (docs/models.md); safetensors headers, where present,
stay authoritative. Like them, it leaves out speculative-decoding (MTP) layers."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from tokcost.catalog import schema as s
from tokcost.catalog.hf_config import ConfigFields, layer_kinds
from tokcost.catalog.hf_weights import WeightsSummary
from tokcost.errors import InputError

# tie_word_embeddings where config.json leaves it out: each configuration class's default
# (LlamaConfig ... Phi3Config: False; GemmaConfig, Gemma2Config, Gemma3TextConfig: True).
# A model_type not listed has no rule here: its weights stay unknown without shards.
_TIED = {"llama": False, "mistral": False, "mixtral": False, "qwen2": False, "qwen2_moe": False,
         "qwen3": False, "qwen3_moe": False, "qwen3_next": False, "deepseek_v2": False,
         "deepseek_v3": False, "gpt_oss": False, "phi3": False, "gemma": True, "gemma2": True,
         "gemma3_text": True, "gemma4_text": True, "mimo_v2_flash": False,
         # Kimi-K2 (DeepseekV3ForCausalLM), DeepseekV32Config, Glm4MoeConfig, Llama4TextConfig,
         # Qwen3_5MoeTextConfig: untied by default (transformers 5.25 configuration_*.py)
         "kimi_k2": False, "deepseek_v32": False, "glm4_moe": False, "llama4_text": False,
         "qwen3_5_moe_text": False,
         # GraniteMoeHybridConfig, FalconH1Config, MiniMaxConfig (and MiniMax's remote-code
         # MiniMaxText01 / MiniMaxM1 types, the same tensors): untied unless the config says so
         "granitemoehybrid": False, "falcon_h1": False, "minimax": False,
         "MiniMaxText01": False, "MiniMaxM1": False, "jamba": False,
         "minimax_m2": False, "gemma3n_text": True, "nemotron_h": False}
_MINIMAX = frozenset({"minimax", "MiniMaxText01", "MiniMaxM1"})
# DeepSeek-V3's layout: MLA, first_k_dense_replace dense layers, routed and shared experts, a
# sigmoid router with e_score_correction_bias (float32 in the checkpoint). Kimi-K2 ships as
# DeepseekV3ForCausalLM; DeepSeek-V3.2 adds the sparse-attention indexer; GLM-4.5
# (Glm4MoeDecoderLayer: layer_idx >= first_k_dense_replace) has GQA in place of MLA.
_DEEPSEEK_MOE = frozenset({"deepseek_v2", "deepseek_v3", "kimi_k2", "deepseek_v32", "glm4_moe"})
_NOAUX_BIAS = frozenset({"deepseek_v3", "kimi_k2", "deepseek_v32", "glm4_moe", "minimax_m2"})
# What block-fp8 checkpoints may leave unquantized (MiniMax-M2's modules_to_not_convert): the
# router, its bias and the head, which the rules here hold in 16 bits (or float32) anyway.
_FP8_SKIPPABLE = frozenset({"gate", "e_score_correction_bias", "lm_head"})
# Kimi-K2-Thinking's quantization_config ignore list (compressed-tensors): every Linear but the
# routed experts' stays bf16. Its names are Kimi-K2's (DeepseekV3) modules: kimi_k2 alone reads it
# (Kimi-K2.5's text_config is kimi_k2 too).
_KIMI_INT4_IGNORE = frozenset({"lm_head", "re:.*self_attn.*", "re:.*shared_experts.*",
                               r"re:.*mlp\.(gate|up|gate_up|down)_proj.*"})
_KIMI_INT4_TYPES = frozenset({"kimi_k2"})
# Gated DeltaNet + gated attention + MoE with a gated shared expert (Qwen3-Next, Qwen3.5)
_QWEN_NEXT = frozenset({"qwen3_next", "qwen3_5_moe_text"})
# Encoders no rule here sizes: left out and said, never guessed. Gemma-3n's vision tower is
# timm's MobileNetV5 (vision_config names the timm architecture, not its shapes); its audio
# tower has no rule yet.
_UNSIZED_ENCODERS = {"gemma3n_text": ("vision_config", "audio_config")}
_ENCODER_NAMES = {"vision_config": "vision", "audio_config": "audio"}
_QK_NORM = frozenset({"qwen3", "qwen3_moe", "qwen3_next", "qwen3_5_moe_text",
                      "gemma3_text"})  # q_norm, k_norm
# pre/post attention and feed-forward norms
_FOUR_NORMS = frozenset({"gemma2", "gemma3_text", "gemma4_text"})
_QKV_BIAS = frozenset({"qwen2", "qwen2_moe"})  # Qwen2Attention: q/k/v bias=True, o without


@dataclass(frozen=True)
class Part:
    """``count`` tensors of ``rows`` x ``cols`` elements."""

    rows: int
    cols: int = 1
    count: int = 1
    linear: bool = False  # a projection matrix: what fp8 / mxfp4 checkpoints quantize
    expert: bool = False  # a routed expert's
    fp32: bool = False  # stored in float32 whatever the dtype (DeepSeek-V3's router bias)
    encoder: bool = False  # a vision (audio) encoder's or its projector's

    @property
    def elements(self) -> int:
        return self.rows * self.cols * self.count


def config_weights(config: Mapping[str, Any], where: str) -> WeightsSummary | str:
    """The weights ``config`` describes, or why they cannot be told from it."""
    f = ConfigFields(config, where)
    if f.model_type not in _TIED:
        return f"tokcost has no parameter rules for model_type {f.model_type or '(none)'}"
    bytes_of = _byte_rule(f)
    if isinstance(bytes_of, str):
        return bytes_of
    # Encoders with no rule here (Gemma-3n's): left out and said, their size not guessed; so is
    # a tower whose config lacks a field its rule needs. Other families' towers are refused.
    unsized = [key for key in _UNSIZED_ENCODERS.get(f.model_type, ())
               if isinstance(config.get(key), Mapping)]
    encoder: list[Part] = []
    try:
        parts = list(_parts(f))
        for key in _ENCODER_NAMES:
            tower = config.get(key)
            if tower not in (None, {}) and not isinstance(tower, Mapping):
                unsized.append(key)  # a tower given as a string or list: said, not dropped
            elif isinstance(tower, Mapping) and key not in unsized:
                try:
                    encoder += [replace(p, encoder=True) for p in _encoder(key, tower, f, where)]
                except _Unsized:
                    unsized.insert(0 if key == "vision_config" else len(unsized), key)
        parts += encoder
        total = sum(bytes_of(p) for p in parts)
    except (_Unsupported, InputError) as exc:  # KV sizes need none of these fields
        return str(exc)
    routed = [p for p in parts if p.expert]
    return WeightsSummary(total, sum(p.elements for p in parts), sum(map(bytes_of, routed)),
                          sum(p.elements for p in routed), tensors=0,
                          unsized=tuple(f"the {_ENCODER_NAMES[key]} encoder ({key})"
                                        for key in unsized),
                          encoder_params=sum(p.elements for p in encoder))


def _byte_rule(f: ConfigFields) -> Callable[[Part], int] | str:
    """Bytes of a part under the config's quantization; a string: one tokcost cannot size."""
    q = f.quantization
    method = str(q.get("quant_method", "")).lower() if q else ""
    if not method:  # 16-bit: vLLM serves a float32 checkpoint in bfloat16 (dtype auto)
        return lambda p: p.elements * (4 if p.fp32 else 2)
    if method == "mxfp4":
        # gpt-oss: routed experts as 4-bit blocks (16 B per 32 values) and one U8 scale per 32;
        # attention, router, embeddings stay bf16 (its modules_to_not_convert).
        return lambda p: (p.elements // 2 + p.elements // 32 if p.linear and p.expert
                          else p.elements * 2)
    block = q.get("weight_block_size") if q else None
    skipped = q.get("modules_to_not_convert") if q else None
    if (method == "fp8" and isinstance(block, list) and len(block) == 2
            and all(isinstance(b, int) and not isinstance(b, bool) and 0 < b <= s.MAX_WIDTH
                    for b in block)
            and (not skipped or (isinstance(skipped, list) and set(skipped) <= _FP8_SKIPPABLE))):
        # DeepSeek-V3: e4m3 weights, a float32 scale (weight_scale_inv) per 128 x 128 block.
        rows, cols = int(block[0]), int(block[1])

        def fp8(p: Part) -> int:
            if not p.linear:
                return p.elements * (4 if p.fp32 else 2)
            return p.count * (p.rows * p.cols + 4 * -(-p.rows // rows) * -(-p.cols // cols))
        return fp8
    if method == "compressed-tensors":
        return _int4_experts(f, q or {})
    return (f"its quantization ({method}) is not sized from config.json (tokcost derives "
            "16-bit, block fp8, mxfp4 and Kimi-K2's int4 weights)")


def _int4_experts(f: ConfigFields, q: Mapping[str, Any]) -> Callable[[Part], int] | str:
    """Kimi-K2-Thinking's compressed-tensors ``pack-quantized`` int4 (its quantization_config):
    one group of symmetric 4-bit integers in groups of ``group_size`` along each Linear's input,
    and an ignore list that leaves attention, the shared experts, the dense MLP and the head in
    bf16, so the routed experts alone are packed. compressed-tensors 0.12's PackedQuantization
    Compressor stores each as ``weight_packed`` (eight values an int32: 1/2 B a value),
    ``weight_scale`` (one bf16 a group) and ``weight_shape`` (two int32s). Any other layout (other
    bits, asymmetric zero points, activations, another ignore list) is said, not guessed."""
    groups = q.get("config_groups")
    group = next(iter(groups.values()), None) if isinstance(groups, Mapping) else None
    w = group.get("weights") if isinstance(group, Mapping) else None
    size = w.get("group_size") if isinstance(w, Mapping) else None
    if not (f.model_type in _KIMI_INT4_TYPES and q.get("format") == "pack-quantized"
            and isinstance(groups, Mapping) and len(groups) == 1 and isinstance(group, Mapping)
            and group.get("targets") == ["Linear"] and not group.get("input_activations")
            and isinstance(w, Mapping) and w.get("num_bits") == 4 and w.get("type") == "int"
            and w.get("symmetric") is True and w.get("strategy") == "group"
            and isinstance(size, int) and not isinstance(size, bool) and 0 < size <= 1024
            and isinstance(q.get("ignore"), list) and set(q["ignore"]) == _KIMI_INT4_IGNORE):
        return ("its quantization (compressed-tensors) is not sized from config.json (tokcost "
                "derives Kimi-K2-Thinking's int4 layout: routed experts in 4-bit groups, the "
                "rest bf16)")

    def int4(p: Part) -> int:
        if not (p.linear and p.expert):
            return p.elements * (4 if p.fp32 else 2)
        if p.rows % size or p.cols % size:  # a ragged last group: which side is the input?
            raise _Unsupported(f"tokcost has no rule for int4 groups of {size} over a "
                               f"{p.rows} x {p.cols} expert weight ({f.model_type})")
        return p.count * (p.rows * p.cols // 2 + 2 * (p.rows * p.cols // size) + 8)
    return int4


def _parts(f: ConfigFields) -> Iterator[Part]:
    layers = _need(f, "num_hidden_layers", "the number of layers", cap=s.MAX_LAYERS)
    hidden = _need(f, "hidden_size", "the hidden size")
    vocab = _need(f, "vocab_size", "the vocabulary size", cap=s.MAX_VOCAB)
    tied = f.raw("tie_word_embeddings")
    yield Part(vocab, hidden, 1 if (tied if isinstance(tied, bool) else _TIED[f.model_type]) else 2)
    yield Part(hidden)  # the final norm
    kinds = layer_kinds(f, layers)
    if f.model_type == "gemma4_text":
        yield from _gemma4(f, kinds, hidden)
        return
    if f.model_type == "gemma3n_text":
        yield from _gemma3n(f, kinds, hidden)
        return
    if f.model_type == "nemotron_h":
        yield from _nemotron_h(f, layers, hidden)
        return
    norms = 4 if f.model_type in _FOUR_NORMS else 2
    for i, kind in enumerate(kinds):
        yield Part(hidden, count=norms)
        if f.model_type == "mimo_v2_flash":
            yield from _mimo_attention(f, hidden, kind)
        elif f.model_type == "falcon_h1":  # FalconH1DecoderLayer: attention beside a mixer
            yield from (*_attention(f, hidden), *_mamba2(f, hidden))
        elif kind == "linear" and f.model_type == "jamba":
            yield from _mamba1(f, hidden)
        elif kind == "linear" and f.model_type == "granitemoehybrid":
            yield from _mamba2(f, hidden)
        elif kind == "linear" and f.model_type in _MINIMAX:
            yield from _lightning(f, hidden)
        else:
            mixer = _mla if kind == "mla" else _delta_net if kind == "linear" else _attention
            yield from mixer(f, hidden)
        yield from _mlp(f, i, hidden)


def _attention(f: ConfigFields, hidden: int) -> Iterator[Part]:
    """q/k/v/o as transformers' LlamaAttention (bias: config.attention_bias), Qwen2Attention
    (q/k/v biased), Qwen3/Gemma3 (q_norm, k_norm), Qwen3NextAttention and Qwen3_5MoeAttention
    (q_proj x 2 for its output gate), GptOssAttention (sinks), Glm4MoeAttention (attention_bias
    on q/k/v only; q_norm, k_norm under use_qk_norm) and Llama4TextAttention (its qk_norm has
    no weight) create them (models/*/modeling_*.py)."""
    heads = _need(f, "num_attention_heads", "the number of attention heads")
    kv = f.count("num_key_value_heads", "the number of kv heads") or heads
    dim = f.count("head_dim", "the attention head size") or hidden // heads
    gated = 2 if f.model_type in _QWEN_NEXT else 1  # q_proj also yields a gate
    bias = f.raw("attention_bias") is True
    yield Part(heads * dim * gated, hidden, linear=True)
    yield Part(kv * dim, hidden, 2, linear=True)
    yield Part(hidden, heads * dim, linear=True)
    if bias or f.model_type in _QKV_BIAS:
        yield Part(heads * dim * gated + 2 * kv * dim)
    if bias and f.model_type != "glm4_moe":
        yield Part(hidden)  # o_proj's
    if f.model_type in _QK_NORM or (f.model_type == "glm4_moe"
                                    and f.raw("use_qk_norm") is True):
        yield Part(dim, count=2)
    if f.model_type == "gpt_oss":
        yield Part(heads)  # attention sinks
    if f.model_type == "minimax_m2":  # MiniMaxM2Attention: q_norm, k_norm over all heads
        if f.raw("qk_norm_type") not in (None, "per_layer"):
            _unsupported(f, f"qk_norm_type {f.raw('qk_norm_type')!r}")
        yield Part((heads + kv) * dim)


def _gemma4(f: ConfigFields, kinds: tuple[str, ...], hidden: int) -> Iterator[Part]:
    """Gemma4TextModel and its decoder layers (transformers models/gemma4/modeling_gemma4.py,
    5.5+; vLLM gemma4.py loads the same): per-layer embeddings (PLE: embed_tokens_per_layer,
    vocab_size_per_layer_input x layers x hidden_size_per_layer_input, their projection and
    norm, and in each layer a gate, a projection and a norm); four norms and a layer_scalar
    per layer; a dense MLP, twice as wide in KV-shared layers under use_double_wide_mlp; with
    enable_moe_block, beside it a router (proj, scale, per_expert_scale), the experts
    (gate_up_proj, down_proj) and three more norms."""
    layers = len(kinds)
    shared = f.count("num_kv_shared_layers", "the KV-shared layers", cap=layers, minimum=0) or 0
    ple = f.count("hidden_size_per_layer_input", "the per-layer input width", minimum=0) or 0
    if ple:
        vocab = _need(f, "vocab_size_per_layer_input", "the per-layer vocabulary",
                      cap=s.MAX_VOCAB)
        yield from (Part(vocab, layers * ple), Part(layers * ple, hidden, linear=True),
                    Part(ple))  # embed_tokens_per_layer, per_layer_model_projection, its norm
    experts = moe = 0
    if f.raw("enable_moe_block") is True:
        experts = _need(f, "num_experts", "the number of experts", cap=s.MAX_EXPERTS)
        moe = _need(f, "moe_intermediate_size", "the expert width")
    width = _need(f, "intermediate_size", "the MLP width")
    double = f.raw("use_double_wide_mlp") is True
    for i, kind in enumerate(kinds):
        reuses = i >= layers - shared  # kv_sharing_modes "reuse": the cache of an earlier layer
        yield from (Part(hidden, count=4), Part(1))  # four norms; layer_scalar
        yield from _gemma4_attention(f, hidden, kind, reuses)
        yield Part(width * (2 if double and reuses else 1), hidden, 3, linear=True)
        if experts:
            yield from (Part(experts, hidden), Part(hidden), Part(experts),  # the router
                        Part(hidden, count=3),  # pre_ 2, post_ 1 and 2 norms
                        Part(moe, hidden, 3 * experts, linear=True, expert=True))
        if ple:  # per_layer_input_gate, per_layer_projection, post_per_layer_input_norm
            yield from (Part(ple, hidden, 2, linear=True), Part(hidden))


# Gemma3nTextConfig's defaults (transformers 5.25 configuration_gemma3n.py): E4B's values.
_GEMMA3N = {"hidden_size_per_layer_input": 256, "vocab_size_per_layer_input": 262_144,
            "altup_num_inputs": 4, "laurel_rank": 64, "intermediate_size": 16_384}


def _gemma3n(f: ConfigFields, kinds: tuple[str, ...], hidden: int) -> Iterator[Part]:
    """Gemma3nTextModel (transformers modeling_gemma3n.py; vLLM gemma3n.py loads the same):
    per-layer embeddings (embed_tokens_per_layer, per_layer_model_projection and its norm),
    AltUp's projections in and out (altup_num_inputs - 1 each); in every layer four norms,
    attention with q_norm and k_norm (v_norm has no weight; a KV-shared layer keeps q_proj,
    q_norm and o_proj only, as transformers 5.25 and vLLM's gemma3n.py build it), an MLP of
    that layer's intermediate_size, AltUp (correct_output_scale, correction and prediction
    coefficients, modality_router, router_norm), LAuReL (linear_left, linear_right, its norm)
    and the per-layer input gate, projection and norm."""
    def size(key: str, what: str, cap: int = s.MAX_WIDTH) -> int:
        return f.count(key, what, cap=cap) or _GEMMA3N[key]
    if f.raw("attention_bias") is True:
        _unsupported(f, "attention_bias")
    layers = len(kinds)
    ple = size("hidden_size_per_layer_input", "the per-layer input width")
    inputs = size("altup_num_inputs", "the AltUp inputs", cap=64)
    rank = size("laurel_rank", "the LAuReL rank")
    widths = f.raw("intermediate_size")  # one width for all layers, or one per layer
    if isinstance(widths, list):
        if len(widths) != layers or not all(
                isinstance(w, int) and not isinstance(w, bool) and 0 < w <= s.MAX_WIDTH
                for w in widths):
            _unsupported(f, "an intermediate_size list that is not one width per layer")
    else:
        widths = [size("intermediate_size", "the MLP width")] * layers
    yield from (Part(size("vocab_size_per_layer_input", "the per-layer vocabulary",
                          cap=s.MAX_VOCAB), layers * ple),
                Part(layers * ple, hidden, linear=True), Part(ple),
                Part(hidden, hidden, 2 * (inputs - 1), linear=True))
    heads = _need(f, "num_attention_heads", "the number of attention heads")
    kv = _need(f, "num_key_value_heads", "the number of kv heads")
    dim = _need(f, "head_dim", "the attention head size")
    shared = f.count("num_kv_shared_layers", "the KV-shared layers", cap=layers, minimum=0) or 0
    for i, width in enumerate(widths):
        yield from (Part(hidden, count=4), Part(heads * dim, hidden, 2, linear=True), Part(dim),
                    Part(width, hidden, 3, linear=True),
                    Part(hidden, count=2), Part(inputs, inputs + inputs * inputs),  # AltUp
                    Part(inputs, hidden, linear=True),
                    Part(rank, hidden, 2, linear=True), Part(hidden),  # LAuReL
                    Part(ple, hidden, 2, linear=True), Part(hidden))  # per-layer input
        if i < layers - shared:
            yield from (Part(kv * dim, hidden, 2, linear=True), Part(dim))


def _gemma4_attention(f: ConfigFields, hidden: int, kind: str, reuses: bool) -> Iterator[Part]:
    """Gemma4TextAttention: a global (full) layer's heads are global_head_dim wide, its kv heads
    num_global_key_value_heads under attention_k_eq_v, which also drops v_proj; q_norm, k_norm
    (v_norm has no weight). A KV-shared layer has q_proj, q_norm and o_proj only: vLLM drops
    the k_proj, v_proj and k_norm its checkpoint still ships (gemma4.py
    _gemma4_layer_weights_mapper), as transformers ignores them."""
    if f.raw("attention_bias") is True:
        _unsupported(f, "attention_bias")
    heads = _need(f, "num_attention_heads", "the number of attention heads")
    kv = _need(f, "num_key_value_heads", "the number of kv heads")
    dim = _need(f, "head_dim", "the attention head size")
    k_eq_v = kind == "full" and f.raw("attention_k_eq_v") is True
    if kind == "full":
        dim = f.count("global_head_dim", "the global head size") or dim
        if k_eq_v:
            kv = f.count("num_global_key_value_heads", "the global kv heads") or kv
    yield from (Part(heads * dim, hidden, linear=True), Part(hidden, heads * dim, linear=True),
                Part(dim))  # q_proj, o_proj, q_norm
    if not reuses:
        yield from (Part(kv * dim, hidden, 1 if k_eq_v else 2, linear=True), Part(dim))


def _mimo_attention(f: ConfigFields, hidden: int, kind: str) -> Iterator[Part]:
    """MiMoV2Attention (vLLM mimo_v2_flash.py, 0.14+; transformers mimo_v2_flash): a sliding
    layer's swa_num_attention_heads and swa_num_key_value_heads, a full layer's own; K heads
    head_dim wide, V heads v_head_dim; o_proj from heads x v_head_dim; one attention sink per
    head where add_swa_attention_sink_bias (add_full_attention_sink_bias) says so."""
    if f.raw("attention_bias") is True:
        _unsupported(f, "attention_bias")
    swa = "swa_" if kind == "sliding" else ""
    heads = _need(f, f"{swa}num_attention_heads", "the number of attention heads")
    kv = _need(f, f"{swa}num_key_value_heads", "the number of kv heads")
    k_dim = _need(f, f"{swa}head_dim", "the attention head size")
    v_dim = f.count(f"{swa}v_head_dim", "the value head size") or k_dim
    yield from (Part(heads * k_dim, hidden, linear=True), Part(kv * k_dim, hidden, linear=True),
                Part(kv * v_dim, hidden, linear=True), Part(hidden, heads * v_dim, linear=True))
    if f.raw(f"add_{'swa' if swa else 'full'}_attention_sink_bias") is True:
        yield Part(heads)


def _mla(f: ConfigFields, hidden: int) -> Iterator[Part]:
    """DeepSeek-V2/V3 attention (DeepseekV3Attention): low-rank q (or a plain q_proj) with its
    norm, kv_a_proj_with_mqa to the latent and rope key, kv_a_layernorm, kv_b_proj, o_proj."""
    heads = _need(f, "num_attention_heads", "the number of attention heads")
    rope = _need(f, "qk_rope_head_dim", "the MLA rotary head size")
    nope = _need(f, "qk_nope_head_dim", "the MLA non-rotary head size")
    v_dim = _need(f, "v_head_dim", "the MLA value head size")
    latent = _need(f, "kv_lora_rank", "the MLA latent rank")
    q_rank = f.count("q_lora_rank", "the MLA query rank")
    if q_rank is None:
        yield Part(heads * (nope + rope), hidden, linear=True)
    else:
        yield from (Part(q_rank, hidden, linear=True), Part(q_rank),
                    Part(heads * (nope + rope), q_rank, linear=True))
    yield from (Part(latent + rope, hidden, linear=True), Part(latent),
                Part(heads * (nope + v_dim), latent, linear=True),
                Part(hidden, heads * v_dim, linear=True))
    if f.raw("attention_bias") is True:
        _unsupported(f, "attention_bias on MLA layers")
    if f.model_type == "deepseek_v32":
        yield from _indexer(f, hidden, q_rank)


def _indexer(f: ConfigFields, hidden: int, q_rank: int | None) -> Iterator[Part]:
    """DeepSeek-V3.2's sparse-attention indexer in every layer (transformers
    DeepseekV32Indexer; vLLM deepseek_v2.py Indexer): wq_b from the query latent, wk, k_norm (a
    LayerNorm: weight and bias), weights_proj. The checkpoint stores wq_b and wk in block fp8,
    weights_proj in bf16 (vLLM 0.34 _try_load_fp8_indexer_wk) and k_norm in float32 (vLLM holds
    it so: LayerNorm(..., dtype=torch.float32))."""
    if q_rank is None:
        _unsupported(f, "an indexer without q_lora_rank")
    heads = _need(f, "index_n_heads", "the indexer heads")
    dim = _need(f, "index_head_dim", "the indexer head size")
    yield from (Part(heads * dim, q_rank or 0, linear=True), Part(dim, hidden, linear=True),
                Part(dim, count=2, fp32=True), Part(heads, hidden))


def _delta_net(f: ConfigFields, hidden: int) -> Iterator[Part]:
    """A Gated DeltaNet layer (Qwen3NextGatedDeltaNet; Qwen3_5MoeGatedDeltaNet splits the same
    in_proj_qkvz and in_proj_ba into in_proj_qkv, _z, _b, _a); other linear layers have no rule."""
    if f.model_type not in _QWEN_NEXT:
        _unsupported(f, "linear-attention (state) layers")
    k_heads = _need(f, "linear_num_key_heads", "the linear-attention key heads")
    v_heads = _need(f, "linear_num_value_heads", "the linear-attention value heads")
    k_dim = _need(f, "linear_key_head_dim", "the linear-attention key head size")
    v_dim = _need(f, "linear_value_head_dim", "the linear-attention value head size")
    kernel = _need(f, "linear_conv_kernel_dim", "the linear-attention convolution width")
    keys, values = k_heads * k_dim, v_heads * v_dim
    yield from (Part(2 * keys + 2 * values, hidden, linear=True),  # in_proj_qkvz
                Part(2 * v_heads, hidden, linear=True),  # in_proj_ba
                Part(2 * keys + values, kernel),  # conv1d, no bias
                Part(v_heads, count=2), Part(v_dim),  # dt_bias, A_log; the gated norm
                Part(hidden, values, linear=True))  # out_proj


def _mamba2(f: ConfigFields, hidden: int) -> Iterator[Part]:
    """A Mamba-2 mixer as GraniteMoeHybridMambaLayer and FalconH1Mixer create it: in_proj to
    the gate, the conv channels (d_inner + 2 x groups x state) and one dt per head; a
    depthwise conv1d (its bias: mamba_conv_bias, default true); dt_bias, A_log, D per head;
    the gated RMSNorm over d_inner (Falcon-H1 only under mamba_rms_norm); out_proj (its bias:
    Granite's mamba_proj_bias, Falcon-H1's projectors_bias). Falcon-H1's d_inner is mamba_d_ssm
    where stated, else mamba_expand x hidden_size."""
    if f.model_type == "nemotron_h":  # NemotronHMamba2Mixer: its own names, use_bias on both
        heads = _need(f, "mamba_num_heads", "the Mamba heads")
        inner = heads * _need(f, "mamba_head_dim", "the Mamba head size")
        groups = f.count("n_groups", "the Mamba groups") or 1
        state = _need(f, "ssm_state_size", "the Mamba state size")
        kernel = _need(f, "conv_kernel", "the Mamba convolution width")
        conv_bias = f.raw("use_conv_bias") is not False
        in_bias = out_bias = f.raw("use_bias") is True
        norm = True
    else:
        heads = _need(f, "mamba_n_heads", "the Mamba heads")
        inner = (f.count("mamba_d_ssm", "the Mamba inner width") if f.model_type == "falcon_h1"
                 else None) or (f.count("mamba_expand", "the Mamba expansion") or 2) * hidden
        groups = f.count("mamba_n_groups", "the Mamba groups") or 1
        state = _need(f, "mamba_d_state", "the Mamba state size")
        kernel = _need(f, "mamba_d_conv", "the Mamba convolution width")
        conv_bias = f.raw("mamba_conv_bias") is not False
        in_bias = f.raw("mamba_proj_bias") is True
        out_bias = in_bias if f.model_type == "granitemoehybrid" else (
            f.raw("projectors_bias") is True)
        norm = f.model_type == "granitemoehybrid" or f.raw("mamba_rms_norm") is True
    conv = inner + 2 * groups * state
    yield from (Part(inner + conv + heads, hidden, linear=True), Part(conv, kernel),
                Part(heads, count=3), Part(hidden, inner, linear=True))
    if conv_bias:
        yield Part(conv)
    if in_bias:
        yield Part(inner + conv + heads)
    if out_bias:
        yield Part(hidden)
    if norm:
        yield Part(inner)


def _nemotron_h(f: ConfigFields, layers: int, hidden: int) -> Iterator[Part]:
    """NemotronHBlock (transformers modeling_nemotron_h.py): one norm and one mixer a layer,
    as hybrid_override_pattern names them: M a Mamba-2 mixer, * attention (q/k/v/o, no bias),
    - an MLP of up_proj and down_proj (relu squared, no gate; their bias: mlp_bias), E a MoE
    layer (Nemotron 3: _nemotron_moe)."""
    pattern = f.raw("hybrid_override_pattern")
    if not isinstance(pattern, str) or len(pattern) != layers:
        _unsupported(f, "layers without a hybrid_override_pattern of one letter each")
    if "E" in str(pattern) and f.raw("mlp_bias") is True:  # vLLM's shared expert has none,
        _unsupported(f, "MoE layers with mlp_bias")  # transformers' has: no one figure
    width = 0
    for kind in str(pattern):
        yield Part(hidden)  # the block's norm
        if kind == "M":
            yield from _mamba2(f, hidden)
        elif kind == "*":
            heads = _need(f, "num_attention_heads", "the number of attention heads")
            kv = f.count("num_key_value_heads", "the number of kv heads") or heads
            dim = f.count("head_dim", "the attention head size") or hidden // heads
            yield from (Part(heads * dim, hidden, 2, linear=True),
                        Part(kv * dim, hidden, 2, linear=True))
        elif kind == "-":
            width = width or _need(f, "intermediate_size", "the MLP width")
            yield Part(width, hidden, 2, linear=True)
            if f.raw("mlp_bias") is True:
                yield Part(width + hidden)
        elif kind == "E":
            yield from _nemotron_moe(f, hidden)
        else:
            _unsupported(f, f"hybrid_override_pattern layers {kind!r}")


def _nemotron_moe(f: ConfigFields, hidden: int) -> Iterator[Part]:
    """A Nemotron 3 MoE layer (transformers NemotronHMoE; vLLM 0.34 nemotron_h.py NemotronHMoE
    loads the same tensors): the router (gate.weight, n_routed_experts x hidden; vLLM's
    GateLinear holds it in bf16 on Hopper and Blackwell, in float32 elsewhere: the former here)
    and its e_score_correction_bias in float32; n_routed_experts experts of up_proj and
    down_proj (relu squared, no gate, no bias), moe_intermediate_size wide over the hidden size
    or, under moe_latent_size (latent MoE, Nemotron 3 Super), over the latent width with
    fc1_latent_proj and fc2_latent_proj between; the shared expert, an MLP of
    moe_shared_expert_intermediate_size x n_shared_experts (vLLM's width; 0 experts: none)."""
    experts = _need(f, "n_routed_experts", "the routed experts", cap=s.MAX_EXPERTS)
    width = _need(f, "moe_intermediate_size", "the expert width")
    latent = f.count("moe_latent_size", "the latent MoE width")
    shared = f.count("n_shared_experts", "the shared experts", minimum=0)
    shared = 1 if shared is None else shared  # NemotronHConfig's default
    shared_width = shared * _need(f, "moe_shared_expert_intermediate_size",
                                  "the shared expert width") if shared else 0
    yield from (Part(experts, hidden), Part(experts, fp32=True),  # gate, its bias
                Part(width, latent or hidden, 2 * experts, linear=True, expert=True))
    if shared_width:
        yield Part(shared_width, hidden, 2, linear=True)
    if latent:
        yield Part(latent, hidden, 2, linear=True)


def _mamba1(f: ConfigFields, hidden: int) -> Iterator[Part]:
    """JambaMambaMixer (transformers modeling_jamba.py): in_proj to 2 x d_inner, a depthwise
    conv1d (its bias: mamba_conv_bias), x_proj to dt_rank + 2 x state, dt_proj with its bias,
    A_log (d_inner x state), D, out_proj (in_proj's and out_proj's bias: mamba_proj_bias) and
    the dt, B and C RMSNorms."""
    inner = (f.count("mamba_expand", "the Mamba expansion") or 2) * hidden
    state = _need(f, "mamba_d_state", "the Mamba state size")
    kernel = _need(f, "mamba_d_conv", "the Mamba convolution width")
    rank = f.raw("mamba_dt_rank")
    rank = -(-hidden // 16) if rank in (None, "auto") else _need(f, "mamba_dt_rank",
                                                                 "the Mamba dt rank")
    yield from (Part(2 * inner, hidden, linear=True), Part(inner, kernel),
                Part(rank + 2 * state, inner, linear=True), Part(inner, rank, linear=True),
                Part(inner), Part(inner, state), Part(inner), Part(hidden, inner, linear=True),
                Part(rank), Part(state, count=2))  # dt_proj bias; A_log; D; the three norms
    if f.raw("mamba_conv_bias") is not False:
        yield Part(inner)
    if f.raw("mamba_proj_bias") is True:
        yield Part(2 * inner + hidden)


def _lightning(f: ConfigFields, hidden: int) -> Iterator[Part]:
    """MiniMax's lightning (linear) attention (transformers MiniMaxLightningAttention; vLLM
    minimax_text_01.py MiniMaxText01LinearAttention): qkv_proj, output_gate, out_proj and an
    RMSNorm over heads x head_dim."""
    heads = _need(f, "num_attention_heads", "the number of attention heads")
    width = heads * (f.count("head_dim", "the attention head size") or hidden // heads)
    yield from (Part(3 * width, hidden, linear=True), Part(width, hidden, 2, linear=True),
                Part(width))


def _mlp(f: ConfigFields, i: int, hidden: int) -> Iterator[Part]:
    """A gated MLP (gate, up, down), or a router and experts: MixtralSparseMoeBlock,
    Qwen2MoeSparseMoeBlock (shared_expert, shared_expert_gate), DeepseekV3MoE (shared_experts;
    DeepseekV3TopkRouter's e_score_correction_bias), GptOssMLP (biased router and experts)."""
    experts, width, shared = _moe(f, i)
    if not experts:
        if f.model_type == "llama4_text":  # Llama4TextMLP(intermediate_size_mlp)
            width = _need(f, "intermediate_size_mlp", "the dense MLP width")
        elif f.model_type == "granitemoehybrid":  # no experts: the shared_mlp alone
            width = _need(f, "shared_intermediate_size", "the shared MLP width")
        else:
            width = _need(f, "intermediate_size", "the MLP width")
        yield Part(width, hidden, 3, linear=True)
        if f.model_type == "falcon_h1" and f.raw("mlp_bias") is True:
            yield Part(2 * width + hidden)  # FalconH1MLP: gate, up, down biased
        return
    # MiMo-V2-Flash: vLLM holds the router in moe_router_dtype, float32 unless the config
    # says otherwise (mimo_v2_flash.py MiMoV2MoE: the gate's params_dtype).
    # MiniMax-M2: vLLM's GateLinear takes params_dtype float32 (minimax_m2.py).
    yield Part(experts, hidden, fp32=f.model_type == "minimax_m2" or (
        f.model_type == "mimo_v2_flash" and str(f.raw("moe_router_dtype") or "float32").lower()
        in ("float32", "fp32")))  # the router
    if f.model_type == "gpt_oss":  # biased router and experts (GptOssExperts)
        yield from (Part(experts), Part(2 * width, hidden, experts, linear=True, expert=True),
                    Part(hidden, width, experts, linear=True, expert=True),
                    Part(2 * width + hidden, count=experts, expert=True))
        return
    if f.model_type in _NOAUX_BIAS or f.raw("topk_method") == "noaux_tc":
        yield Part(experts, fp32=True)  # gate.e_score_correction_bias, float32 in the checkpoint
    yield Part(width, hidden, 3 * experts, linear=True, expert=True)
    if shared:
        yield Part(shared, hidden, 3, linear=True)
        if f.model_type == "qwen2_moe" or f.model_type in _QWEN_NEXT:
            yield Part(1, hidden)  # shared_expert_gate


def _moe(f: ConfigFields, i: int) -> tuple[int, int, int]:
    """Routed experts of layer ``i`` (0: a dense MLP), their width, the shared experts' width."""
    t = f.model_type
    if t == "granitemoehybrid":  # GraniteMoeHybridMoE beside the shared_mlp in every layer
        experts = f.count("num_local_experts", "the number of experts", cap=s.MAX_EXPERTS,
                          minimum=0) or 0
        if not experts:
            return 0, 0, 0
        return (experts, _need(f, "intermediate_size", "the expert width"),
                _need(f, "shared_intermediate_size", "the shared MLP width"))
    if t in _MINIMAX or t == "minimax_m2":  # MiniMax(M2)SparseMoeBlock; vLLM's shared_mlp
        if f.raw("shared_intermediate_size") not in (None, 0):
            _unsupported(f, "MiniMax's shared expert (shared_intermediate_size)")
        experts = _need(f, "num_local_experts", "the number of experts", cap=s.MAX_EXPERTS)
        return experts, _need(f, "intermediate_size", "the expert width"), 0
    if t == "jamba":  # JambaConfig.layers_num_experts: experts where i % period == offset
        experts = f.count("num_experts", "the number of experts", cap=s.MAX_EXPERTS) or 1
        period = f.count("expert_layer_period", "the expert layer period") or 2
        offset = f.count("expert_layer_offset", "the expert layer offset", minimum=0)
        if experts <= 1 or i % period != (1 if offset is None else offset):
            return 0, 0, 0
        return experts, _need(f, "intermediate_size", "the expert width"), 0
    if t in ("mixtral", "gpt_oss"):
        experts = _need(f, "num_local_experts", "the number of experts", cap=s.MAX_EXPERTS)
        return experts, _need(f, "intermediate_size", "the expert width"), 0
    if t in _DEEPSEEK_MOE:
        experts = f.count("n_routed_experts", "the routed experts", cap=s.MAX_EXPERTS) or 0
        first = f.count("first_k_dense_replace", "the dense first layers", minimum=0) or 0
        every = f.count("moe_layer_freq", "the MoE layer period") or 1
        if not experts or i < first or i % every:
            return 0, 0, 0
        width = _need(f, "moe_intermediate_size", "the expert width")
        return experts, width, width * (f.count("n_shared_experts", "the shared experts",
                                                minimum=0) or 0)
    if t == "mimo_v2_flash":  # moe_layer_freq: 1 a MoE layer, 0 a dense one (no shared expert)
        listed = f.raw("moe_layer_freq")
        if not isinstance(listed, list) or len(listed) <= i or listed[i] not in (0, 1):
            _unsupported(f, "MoE layers without a 0/1 moe_layer_freq list")
        if not listed[i]:
            return 0, 0, 0
        return (_need(f, "n_routed_experts", "the number of experts", cap=s.MAX_EXPERTS),
                _need(f, "moe_intermediate_size", "the expert width"), 0)
    if t == "llama4_text":  # Llama4TextConfig.moe_layers, else every interleave_moe_layer_step-th
        experts = _need(f, "num_local_experts", "the number of experts", cap=s.MAX_EXPERTS)
        listed = f.raw("moe_layers")
        step = f.count("interleave_moe_layer_step", "the MoE layer step") or 1
        if not (i in listed if isinstance(listed, list) else (i + 1) % step == 0):
            return 0, 0, 0
        width = _need(f, "intermediate_size", "the expert width")  # Llama4TextMoe.shared_expert
        return experts, width, width  # is a Llama4TextMLP of intermediate_size too
    if t in ("qwen2_moe", "qwen3_moe", "qwen3_next", "qwen3_5_moe_text"):
        experts = f.count("num_experts", "the number of experts", cap=s.MAX_EXPERTS) or 0
        step = f.count("decoder_sparse_step", "the MoE layer step") or 1
        dense = f.raw("mlp_only_layers")
        if not experts or (i + 1) % step or (isinstance(dense, list) and i in dense):
            return 0, 0, 0
        shared = f.count("shared_expert_intermediate_size", "the shared expert width",
                         minimum=0) or 0
        return experts, _need(f, "moe_intermediate_size", "the expert width"), shared
    return 0, 0, 0


def _encoder(key: str, tower: Mapping[str, Any], text: ConfigFields,
             where: str) -> Iterator[Part]:
    """A vision (audio) tower and its projector into the text model, as vLLM loads them with
    the text model (mllama4.py, gemma3_mm.py, gemma4_mm.py, qwen3_5.py); a family with no rule
    here is refused, a config without a field its rule needs is left out and said."""
    v = ConfigFields(tower, f"{where} {key}")
    hidden = _need(text, "hidden_size", "the hidden size")
    if key == "audio_config":
        if text.model_type != "gemma4_text":
            raise _Unsupported(f"tokcost has no parameter rules for an audio tower "
                               f"({text.model_type})")
        return _gemma4_audio(v, hidden)
    rule = {"gemma3_text": _siglip, "llama4_text": _llama4_vision,
            "gemma4_text": _gemma4_vision,
            "qwen3_5_moe_text": _qwen35_vision}.get(text.model_type or "")
    if rule is None:
        raise _Unsupported(f"tokcost has no parameter rules for a vision tower "
                           f"({text.model_type})")
    return rule(v, hidden)


def _siglip(v: ConfigFields, text_hidden: int) -> Iterator[Part]:
    """Gemma 3's SigLIP vision tower (SiglipVisionEmbeddings: patch conv with bias, positions;
    SiglipEncoderLayer; post_layernorm) and Gemma3MultiModalProjector (mm_input_projection_weight,
    mm_soft_emb_norm): vLLM loads both."""
    width = _vneed(v, "hidden_size", "the vision width")
    mlp = _vneed(v, "intermediate_size", "the vision MLP width")
    patch = _vneed(v, "patch_size", "the patch size")
    channels = v.count("num_channels", "the image channels") or 3
    patches = (_vneed(v, "image_size", "the image size") // patch) ** 2
    layers = _vneed(v, "num_hidden_layers", "the vision layers", cap=s.MAX_LAYERS)
    yield from (Part(width, channels * patch * patch), Part(width),  # patch embedding
                Part(patches, width), Part(width, count=2))  # positions; post_layernorm
    yield from (Part(width, width, 4 * layers), Part(width, count=4 * layers),  # q k v o
                Part(width, count=4 * layers),  # two layer norms, weight and bias
                Part(mlp, width, 2 * layers), Part(mlp + width, count=layers))  # fc1, fc2
    yield from (Part(width, text_hidden), Part(width))


def _llama4_vision(v: ConfigFields, text_hidden: int) -> Iterator[Part]:
    """Llama4VisionModel (transformers models/llama4/modeling_llama4.py): an unfold patch
    embedding (a Linear over channels x patch x patch, no bias), class_embedding,
    positional_embedding_vlm over (image_size / patch)^2 + 1 positions, layernorm_pre and
    layernorm_post; per layer q/k/v/o with bias, fc1/fc2 with bias and two LayerNorms; the
    vision_adapter (pixel shuffle, then fc1 intermediate_size -> projector_input_dim and fc2
    projector_output_dim squared, no bias); Llama4MultiModalProjector (vision_output_dim ->
    the text hidden size, no bias)."""
    width = _vneed(v, "hidden_size", "the vision width")
    mlp = _vneed(v, "intermediate_size", "the vision MLP width")
    patch = _vneed(v, "patch_size", "the patch size")
    channels = v.count("num_channels", "the image channels") or 3
    positions = (_vneed(v, "image_size", "the image size") // patch) ** 2 + 1
    layers = _vneed(v, "num_hidden_layers", "the vision layers", cap=s.MAX_LAYERS)
    adapter_in = _vneed(v, "projector_input_dim", "the vision adapter's input width")
    adapter_out = _vneed(v, "projector_output_dim", "the vision adapter's output width")
    yield from (Part(width, channels * patch * patch), Part(width),  # patch linear; class
                Part(positions, width), Part(width, count=4))  # positions; pre and post norms
    yield from (Part(width, width, 4 * layers), Part(width, count=4 * layers),  # q k v o
                Part(mlp, width, 2 * layers), Part(mlp + width, count=layers),  # fc1, fc2
                Part(width, count=4 * layers))  # two LayerNorms, weight and bias
    yield from (Part(adapter_in, mlp), Part(adapter_out, adapter_out),  # vision_adapter
                Part(text_hidden, _vneed(v, "vision_output_dim", "the vision output width")))


def _gemma4_vision(v: ConfigFields, text_hidden: int) -> Iterator[Part]:
    """Gemma4VisionModel (transformers models/gemma4/modeling_gemma4.py): patch_embedder
    (input_proj 3 x patch^2 -> width, no bias; position_embedding_table 2 x
    position_embedding_size x width); per layer q/k/v/o (Gemma4ClippableLinear: no bias, and
    under use_clipped_linears four scalar clamp bounds each), q_norm and k_norm over head_dim
    (v_norm has no weight), four RMSNorms and a gated MLP; std_bias and std_scale under
    standardize; then Gemma4MultimodalEmbedder (embedding_projection width -> text hidden; its
    norm has no weight)."""
    width = _vneed(v, "hidden_size", "the vision width")
    mlp = _vneed(v, "intermediate_size", "the vision MLP width")
    patch = _vneed(v, "patch_size", "the patch size")
    table = _vneed(v, "position_embedding_size", "the position table size")
    layers = _vneed(v, "num_hidden_layers", "the vision layers", cap=s.MAX_LAYERS)
    heads = _vneed(v, "num_attention_heads", "the vision heads")
    kv = v.count("num_key_value_heads", "the vision kv heads") or heads
    dim = _vneed(v, "head_dim", "the vision head size")
    clipped = 4 * 7 * layers if v.raw("use_clipped_linears") is True else 0
    yield from (Part(width, 3 * patch * patch), Part(2 * table, width))
    yield from (Part(heads * dim, width, 2 * layers), Part(kv * dim, width, 2 * layers),
                Part(dim, count=2 * layers), Part(width, count=4 * layers),
                Part(mlp, width, 3 * layers))
    if clipped:
        yield Part(clipped)
    if v.raw("standardize") is True:
        yield Part(width, count=2)
    yield Part(text_hidden, width)


def _gemma4_audio(a: ConfigFields, text_hidden: int) -> Iterator[Part]:
    """Gemma4AudioModel (transformers models/gemma4/modeling_gemma4.py; vLLM's gemma4_mm.py
    builds it with AutoModel): the subsampling projection (two 3 x 3 convolutions without bias,
    1 -> c0 -> c1 channels, each with a LayerNorm of weight only, then input_proj_linear from
    c0 / 4 x c1); per layer two feed-forward blocks (hidden -> 4 x hidden -> hidden, two
    RMSNorms), attention (q, k, v, post, relative_k_proj, per_dim_scale over the head), a light
    conv (linear_start to 2 x hidden, a depthwise conv1d of conv_kernel_size without bias,
    linear_end, two RMSNorms) and three RMSNorms, every Gemma4ClippableLinear with four scalar
    clamp bounds under use_clipped_linears (the default); output_proj (bias) to
    output_proj_dims; embed_audio's projection to the text hidden size. Gemma4AudioConfig's
    defaults where the file is silent."""
    hidden = a.count("hidden_size", "the audio width") or 1024
    layers = a.count("num_hidden_layers", "the audio layers", cap=s.MAX_LAYERS) or 12
    heads = a.count("num_attention_heads", "the audio heads") or 8
    kernel = a.count("conv_kernel_size", "the audio convolution width") or 5
    out = a.count("output_proj_dims", "the audio output width") or 1536
    channels = a.raw("subsampling_conv_channels")
    channels = [128, 32] if channels is None else channels
    if not (isinstance(channels, list) and len(channels) == 2 and all(
            isinstance(c, int) and not isinstance(c, bool) and 0 < c <= s.MAX_WIDTH
            for c in channels)) or hidden % heads:
        raise _Unsized(f"{a.where} has subsampling_conv_channels or heads no rule here reads")
    c0, c1 = channels
    clip = 4 if a.raw("use_clipped_linears") is not False else 0
    yield from (Part(c0, 9), Part(c0), Part(c1, 9 * c0), Part(c1),  # subsampling convs
                Part(hidden, c0 // 4 * c1))  # input_proj_linear
    yield from (Part(4 * hidden, hidden, 4 * layers), Part(hidden, count=4 * layers),  # two FFs
                Part(hidden, hidden, 5 * layers), Part(hidden // heads, count=layers),  # attn
                Part(3 * hidden, hidden, layers), Part(hidden, kernel, layers),  # light conv
                Part(hidden, count=5 * layers))  # its two norms, the layer's three
    if clip:
        yield Part(clip * 10 * layers)  # 4 FF, 4 attention, 2 light-conv linears a layer
    yield from (Part(out, hidden + 1), Part(text_hidden, out))  # output_proj; embed_audio


def _qwen35_vision(v: ConfigFields, text_hidden: int) -> Iterator[Part]:
    """Qwen3_5MoeVisionModel (transformers models/qwen3_5_moe/modeling_qwen3_5_moe.py): a Conv3d
    patch embedding (in_channels x temporal_patch_size x patch^2 -> width, with bias), pos_embed
    (num_position_embeddings x width); per block two LayerNorms, qkv and proj with bias, and
    linear_fc1/linear_fc2 with bias; the merger (LayerNorm over width, then fc1 and fc2 over
    width x spatial_merge_size^2 -> out_hidden_size, with bias). It builds no deepstack
    mergers: a non-empty deepstack_visual_indexes (Qwen3-VL's) is left out and said."""
    if v.raw("deepstack_visual_indexes") not in (None, []):
        raise _Unsized(f"{v.where} has deepstack_visual_indexes, which no rule here sizes")
    width = _vneed(v, "hidden_size", "the vision width")
    mlp = _vneed(v, "intermediate_size", "the vision MLP width")
    patch = _vneed(v, "patch_size", "the patch size")
    frames = _vneed(v, "temporal_patch_size", "the temporal patch size")
    channels = v.count("in_channels", "the image channels") or 3
    layers = _vneed(v, "depth", "the vision layers", cap=s.MAX_LAYERS)
    merged = width * _vneed(v, "spatial_merge_size", "the spatial merge size") ** 2
    out = _vneed(v, "out_hidden_size", "the vision output width")  # the text hidden size
    yield from (Part(width, channels * frames * patch * patch), Part(width),  # patch_embed
                Part(_vneed(v, "num_position_embeddings", "the vision positions"), width))
    yield from (Part(width, count=4 * layers),  # norm1, norm2: weight and bias
                Part(3 * width, width + 1, layers), Part(width, width + 1, layers),  # qkv, proj
                Part(mlp, width, 2 * layers), Part(mlp + width, count=layers))  # fc1, fc2
    yield from (Part(width, count=2), Part(merged, merged + 1), Part(out, merged + 1))


class _Unsupported(Exception):
    """What ``config_weights`` cannot size, in words."""


class _Unsized(_Unsupported):
    """An encoder whose config lacks what its rule needs: left out of the weights and said."""


def _vneed(v: ConfigFields, key: str, what: str, *, cap: int = s.MAX_WIDTH) -> int:
    value = v.count(key, what, cap=cap)
    if value is None:
        raise _Unsized(f"{v.where} has no {key} ({what})")
    return value


def _unsupported(f: ConfigFields, what: str) -> None:
    raise _Unsupported(f"tokcost has no parameter rules for {what} ({f.model_type})")


def _need(f: ConfigFields, key: str, what: str, *, cap: int = s.MAX_WIDTH) -> int:
    value = f.count(key, what, cap=cap)
    if value is None:
        raise _Unsupported(f"{f.where} has no {key} ({what}), which its parameters need")
    return value
