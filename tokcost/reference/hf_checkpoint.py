"""A Hugging Face model folder as a reference model: config.json to ``RefConfig``, safetensors
tensors to the reference's weight names (docs/generate.md, "Real checkpoints")."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tokcost.errors import InputError, UsageError
from tokcost.limits import loads_json
from tokcost.reference.config import Array, RefConfig, RopeScaling, WeightsMismatch

FAMILIES = ("llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3_text")
_GEMMA = frozenset({"gemma2", "gemma3_text"})
_ACTIVATIONS = {"silu": "silu", "swish": "silu", "gelu_pytorch_tanh": "gelu_tanh",
                "gelu_tanh": "gelu_tanh"}
# Linear layers are stored (out, in); the reference multiplies x @ W, so they turn.
_LAYER_NAMES = {"input_layernorm.weight": "attn_norm", "self_attn.o_proj.weight": "wo",
                **{f"self_attn.{x}_proj.weight": f"w{x}" for x in "qkv"},
                **{f"self_attn.{x}_proj.bias": f"b{x}" for x in "qkv"},
                **{f"self_attn.{x}_norm.weight": f"{x}_norm" for x in "qk"},
                **{f"mlp.{x}_proj.weight": f"w_{x}" for x in ("gate", "up", "down")}}
_TOP_NAMES = {"model.embed_tokens.weight": "tok_emb", "model.norm.weight": "norm",
              "lm_head.weight": "lm_head"}
# Llama's post_attention_layernorm is the MLP's norm; Gemma's normalizes attention's output.
_LLAMA_NORMS = {"post_attention_layernorm.weight": "mlp_norm"}
_GEMMA_NORMS = {"post_attention_layernorm.weight": "post_attn_norm",
                "pre_feedforward_layernorm.weight": "mlp_norm",
                "post_feedforward_layernorm.weight": "post_mlp_norm"}
# Multimodal checkpoints keep the language model under a prefix (v4 and v5 layouts).
_PREFIXES = (("model.language_model.", "model."), ("language_model.model.", "model."),
             ("language_model.lm_head.", "lm_head."))
_SKIPPED = ("vision_tower.", "model.vision_tower.", "multi_modal_projector.",
            "model.multi_modal_projector.")


@dataclass(frozen=True)
class HfCheckpoint:
    folder: Path
    model_type: str
    cfg: RefConfig


def family(config: Mapping[str, Any], where: str) -> str:
    """The config's ``model_type`` if the reference path runs it."""
    from tokcost.catalog.hf_config import ConfigFields
    kind = ConfigFields(config, where).model_type
    if kind == "gemma3":  # a text_config without its own model_type
        kind = "gemma3_text"
    if kind not in FAMILIES:
        raise UsageError(
            f"{where}: model_type '{kind or '(none)'}' is not one the reference path runs; "
            f"it runs {', '.join(FAMILIES)} (size other models with kvmem estimate)")
    return kind


def config_from_hf(config: Mapping[str, Any], where: str = "config.json") -> RefConfig:
    from tokcost.catalog.hf_config import ConfigFields, layer_kinds
    kind, fields = family(config, where), ConfigFields(config, where)
    c = fields.text

    def need(key: str) -> Any:
        value = c.get(key)
        if value is None:
            raise InputError(f"{where} has no {key}; the reference model needs it")
        return value

    layers, hidden = int(need("num_hidden_layers")), int(need("hidden_size"))
    heads = int(need("num_attention_heads"))
    gemma = kind in _GEMMA
    act_name = c.get("hidden_activation") or c.get("hidden_act") or (
        "gelu_pytorch_tanh" if gemma else "silu")
    activation = _ACTIVATIONS.get(str(act_name))
    if activation is None:
        raise UsageError(f"{where}: hidden_act '{act_name}' is not one the reference path "
                         f"implements ({', '.join(sorted(_ACTIVATIONS))})")
    if c.get("mlp_bias") or (kind != "qwen2" and c.get("attention_bias")):
        raise UsageError(f"{where}: attention_bias/mlp_bias biases are not implemented by "
                         "the reference path")
    sliding = tuple("sliding" if k == "sliding" else "full" for k in layer_kinds(fields, layers))
    window = c.get("sliding_window") if "sliding" in sliding else None
    theta, scaling, local_theta = _rope(c, kind, where)
    scalar = c.get("query_pre_attn_scalar")
    # transformers' default, where a config leaves it out, ties only Gemma's embeddings.
    tied = config.get("tie_word_embeddings", c.get("tie_word_embeddings", kind in _GEMMA))
    return RefConfig(
        layers=layers, hidden_size=hidden, attention_heads=heads,
        kv_heads=int(c.get("num_key_value_heads") or heads),
        head_dim=int(c.get("head_dim") or hidden // heads), vocab_size=int(need("vocab_size")),
        context_window=int(c.get("max_position_embeddings") or 2048),
        intermediate_size=int(need("intermediate_size")), rope_theta=theta,
        norm_eps=float(c.get("rms_norm_eps") or 1e-6), tie_embeddings=bool(tied),
        qkv_bias=kind == "qwen2", qk_norm=kind in ("qwen3", "gemma3_text"), post_norms=gemma,
        activation=activation, layer_types=sliding if window else None,
        sliding_window=int(window) if window else None, rope_local_theta=local_theta,
        rope_scaling=scaling, attn_softcap=_float(c.get("attn_logit_softcapping")),
        final_softcap=_float(c.get("final_logit_softcapping")),
        embed_scale=math.sqrt(hidden) if gemma else None,
        query_scale=float(scalar) ** -0.5 if gemma and scalar else None)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _rope(c: Mapping[str, Any], kind: str, where: str
          ) -> tuple[float, RopeScaling | None, float | None]:
    """(theta, scaling of the full layers, theta of Gemma-3's sliding layers)."""
    params = c.get("rope_parameters")
    local: float | None = None
    if isinstance(params, Mapping) and "full_attention" in params:  # v5, per layer type
        full = params["full_attention"]
        local = _float((params.get("sliding_attention") or {}).get("rope_theta"))
    elif isinstance(params, Mapping):
        full = params
    else:
        full = dict(c.get("rope_scaling") or {})
        full.setdefault("rope_theta", c.get("rope_theta"))
    if kind == "gemma3_text" and local is None:
        local = float(c.get("rope_local_base_freq") or 10000.0)
    theta = float(full.get("rope_theta") or c.get("rope_theta") or 10000.0)
    rope_type = str(full.get("rope_type") or full.get("type") or "default")
    if rope_type == "default":
        return theta, None, local
    if rope_type not in ("linear", "llama3"):
        raise UsageError(f"{where}: rope_scaling type '{rope_type}' is not implemented by the "
                         "reference path (it implements default, linear and llama3)")
    scaling = RopeScaling(
        kind=rope_type, factor=float(full.get("factor") or 1.0),
        low_freq_factor=float(full.get("low_freq_factor") or 1.0),
        high_freq_factor=float(full.get("high_freq_factor") or 4.0),
        original_max_position_embeddings=int(full.get("original_max_position_embeddings") or 8192))
    return theta, scaling, local


def read_tensors(path: Path) -> Iterator[tuple[str, Array]]:
    try:
        with open(path, "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            header = loads_json(f.read(n))
        data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {path} as safetensors ({exc}); download it again") from None
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        yield name, _float32(data[begin:end], str(info["dtype"]), tuple(info["shape"]),
                             f"{path.name}: {name}")


def _float32(raw: NDArray[np.uint8], dtype: str, shape: tuple[int, ...], where: str) -> Array:
    if dtype == "BF16":  # bfloat16 is float32's top 16 bits
        return (raw.view("<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
    if dtype not in ("F16", "F32"):
        raise WeightsMismatch(f"{where} is {dtype}; the reference path reads BF16, F16 and F32 "
                              "checkpoints (not quantized ones)")
    return raw.view("<f2" if dtype == "F16" else "<f4").astype(np.float32).reshape(shape)


def reference_name(name: str, kind: str) -> str | None:
    """The reference's name for a checkpoint tensor (None: not part of the text model)."""
    for old, new in _PREFIXES:
        if name.startswith(old):
            name = new + name[len(old):]
    if name.startswith(_SKIPPED) or name.endswith("rotary_emb.inv_freq"):
        return None
    if name in _TOP_NAMES:
        return _TOP_NAMES[name]
    parts = name.split(".", 3)
    if len(parts) == 4 and parts[:2] == ["model", "layers"] and parts[2].isdigit():
        table = {**_LAYER_NAMES, **(_GEMMA_NORMS if kind in _GEMMA else _LLAMA_NORMS)}
        short = table.get(parts[3])
        if short is not None:
            return f"layers.{parts[2]}.{short}"
    raise WeightsMismatch(f"tensor '{name}' is not one the reference path knows for "
                          f"{kind}; the checkpoint has a feature it does not implement")


def load_weights(folder: Path, kind: str, cfg: RefConfig) -> dict[str, Array]:
    """The checkpoint's tensors (its index's shards, else its one file), reference names."""
    from tokcost.catalog.safetensors_meta import shard_names
    names = shard_names(folder)
    if not names:
        raise UsageError(f"'{folder}' has no model.safetensors (or index); give a folder "
                         "with the checkpoint's safetensors shards")
    missing = [n for n in names if not (folder / n).is_file()]
    if missing:
        raise InputError(f"'{folder}' lacks shard {missing[0]} that its index names; "
                         "download the checkpoint again")
    weights: dict[str, Array] = {}
    for path in (folder / n for n in names):
        for name, tensor in read_tensors(path):
            short = reference_name(name, kind)
            if short is None or (short == "lm_head" and cfg.tie_embeddings):
                continue
            if kind in _GEMMA and short.endswith("norm"):
                tensor = tensor + np.float32(1.0)  # Gemma's RMSNorm scales by 1 + w
            weights[short] = tensor.T if tensor.ndim == 2 and short != "tok_emb" else tensor
    if not cfg.tie_embeddings and "lm_head" not in weights:
        raise WeightsMismatch(f"'{folder}' has no lm_head.weight but its config unties the "
                              "embeddings (tie_word_embeddings false)")
    return weights


def open_checkpoint(folder: str | Path) -> HfCheckpoint:
    """The folder's family and shape, refused before any tensor is read."""
    from tokcost.catalog.hf_model import read_config_json
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise UsageError(f"'{path}' is not a folder; give a Hugging Face model folder "
                         "(config.json, *.safetensors, tokenizer.json)")
    where = str(path / "config.json")
    if not (path / "config.json").is_file():
        raise UsageError(f"'{path}' has no config.json; give a Hugging Face model folder")
    config = read_config_json(path / "config.json", where)
    return HfCheckpoint(path, family(config, where), config_from_hf(config, where))
