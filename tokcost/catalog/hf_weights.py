"""A checkpoint's tensors as a serving engine holds them, with vLLM's load-time changes (no MTP
layers: models/deepseek_v2.py, qwen3_next.py; float32 in 16 bits: config/model.py)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tokcost.catalog.safetensors_meta import TensorMeta

_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")
_EXPERT = re.compile(r"(?:^|\.)experts(?:\.|$)")  # not shared_expert(s): those run every token
# Vision and audio encoders and their projectors, as transformers names them (Llama-4's
# vision_model and multi_modal_projector, Gemma-3/3n/4's vision_tower, audio_tower, embed_vision,
# embed_audio, Qwen-VL's visual): they run per image or clip, not per token.
_ENCODER = re.compile(r"^(?:model\.)?(?:vision_model|vision_tower|visual|multi_modal_projector|"
                      r"embed_vision|audio_tower|embed_audio)\.")
# Quantization side tensors (the last part of their name): memory, not model parameters.
_NOT_WEIGHTS = frozenset({
    "scales", "qzeros", "g_idx", "weight_scale", "weight_scale_inv", "weight_scale_2", "k_scale",
    "weight_global_scale", "input_scale", "input_scale_inv", "input_global_scale", "v_scale",
    "q_scale", "weight_zero_point", "weight_g_idx", "weight_shape", "absmax", "quant_map",
    "nested_absmax", "nested_quant_map", "SCB"})


@dataclass(frozen=True)
class WeightsSummary:
    """The weights one serving copy of the model holds (all GPUs together)."""

    bytes: int
    params: int
    expert_bytes: int  # routed experts only
    expert_params: int
    tensors: int  # tensors loaded
    skipped_tensors: int = 0  # speculative-decoding layers, not loaded
    skipped_bytes: int = 0
    cast_float32: bool = False  # float32 tensors counted at 2 bytes (vLLM's auto dtype)
    unsized: tuple[str, ...] = ()  # parts config.json does not size, left out (encoders)
    encoder_params: int = 0  # vision / audio encoders and their projectors

    def active_params(self, experts: int | None, per_token: int | None) -> int:
        """Parameters one token uses: all but the routed experts, and ``per_token`` of them. A
        MoE model's encoders run per image, not per token: left out, as the vendors' "active"
        counts leave them (Llama-4-Scout's "17B active", Gemma-4-26B-A4B's "3.8B")."""
        if not experts or not per_token or not self.expert_params:
            return self.params
        return (self.params - self.encoder_params - self.expert_params
                + self.expert_params * per_token // experts)


def summarize(tensors: Iterable[TensorMeta], *, layers: int, config_dtype: str | None,
              quantization: Mapping[str, Any] | None = None) -> WeightsSummary:
    """What the engine loads of ``tensors`` (the config's ``torch_dtype`` and quantization)."""
    bits = quant_bits(quantization)[0] if quantization else None
    int32_bits = bits if isinstance(bits, int) and bits in (2, 3, 4, 8) else None
    nibbles = bool(quantization and quantization.get("quant_method") == "bitsandbytes"
                   and quantization.get("load_in_4bit"))
    cast = config_dtype is None or config_dtype.lower() in ("float32", "float", "fp32")
    total = params = expert_bytes = expert_params = count = skipped = skipped_bytes = 0
    encoder = 0
    cast_any = False
    for t in tensors:
        if _speculative(t.name, layers):
            skipped += 1
            skipped_bytes += t.nbytes
            continue
        cast_this = cast and t.dtype in ("F32", "F64")
        nbytes = t.elements * 2 if cast_this else t.nbytes
        cast_any = cast_any or cast_this
        n = _params(t, int32_bits, nibbles)
        count += 1
        total += nbytes
        params += n
        if _ENCODER.match(t.name):
            encoder += n
        elif _EXPERT.search(t.name):
            expert_bytes += nbytes
            expert_params += n
    return WeightsSummary(total, params, expert_bytes, expert_params, count, skipped,
                          skipped_bytes, cast_any, encoder_params=encoder)


def _speculative(name: str, layers: int) -> bool:
    if name.startswith("mtp."):
        return True
    found = _LAYER.search(name)
    # Only the language model's own stack: a vision tower's "layers.N" counts its own.
    return (found is not None and int(found.group(1)) >= layers
            and not any(part in name for part in ("vision", "visual", "audio")))


def _params(t: TensorMeta, int32_bits: int | None, nibbles: bool) -> int:
    parts = t.name.split(".")
    last = parts[-1]
    if (last in _NOT_WEIGHTS or last.endswith("_scales")
            or any(p.startswith("quant_state") for p in parts)):
        return 0
    if last.endswith("_blocks") and t.dtype == "U8":  # mxfp4: two 4-bit values a byte
        return t.elements * 2
    if last in ("qweight", "weight_packed") and t.dtype == "I32" and int32_bits:
        return t.elements * (32 // int32_bits)
    if nibbles and last == "weight" and t.dtype == "U8":  # bitsandbytes 4-bit
        return t.elements * 2
    return t.elements


def quant_bits(quantization: Mapping[str, Any]) -> tuple[Any, Any]:
    """Bits per weight (``bits``, else compressed-tensors' first group's) and its ``type``."""
    bits = quantization.get("bits") or quantization.get("w_bit")
    groups = quantization.get("config_groups")
    if bits is None and isinstance(groups, Mapping):
        for group in groups.values():
            w = group.get("weights") if isinstance(group, Mapping) else None
            if isinstance(w, Mapping) and w.get("num_bits") is not None:
                return w["num_bits"], w.get("type")
    return bits, None
