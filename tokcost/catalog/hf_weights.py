"""A checkpoint's tensors as a serving engine holds them: bytes, parameters, experts.

Bytes are the headers' own (``tokcost.catalog.safetensors_meta``), with the two
changes vLLM makes when it loads a Hugging Face checkpoint for plain serving:

* tensors of the speculative-decoding (multi-token prediction) layers are skipped:
  ``model.layers.N...`` with N >= ``num_hidden_layers`` (DeepSeek-V3's layer 61) and
  ``mtp.*`` (Qwen3-Next); vllm/model_executor/models/deepseek_v2.py ``load_weights``
  (``get_spec_layer_idx_from_weight_name``: "skip spec decode layers for main model")
  and qwen3_next.py ``load_weights`` (``name.startswith("mtp.")``);
* a float32 checkpoint (``torch_dtype`` float32, or none stated) is cast to 16 bits:
  vLLM's ``dtype="auto"`` serves float32 models in float16, bfloat16 since v0.10.1
  (vllm/config/model.py ``_get_and_verify_dtype``: "we use float16 for float32 models").
  Gemma-2-9B ships float32 (36.97 GB on disk) and runs in 18.5 GB.

Routed experts are the tensors with an ``experts`` component in their name
(``mlp.experts.7.down_proj.weight``, ``block_sparse_moe.experts.0.w1.weight``,
gpt-oss's fused ``mlp.experts.gate_up_proj_blocks``); ``shared_experts`` /
``shared_expert`` run for every token and stay outside. Their bytes are kept apart
(``expert_weights_bytes``) so a decode step reads ``k / E`` of them exactly, whatever
their dtype: gpt-oss's mxfp4 experts beside bf16 attention.

Parameters count logical weights: packed formats unpack (mxfp4 ``*_blocks`` hold two
values a byte; GPTQ/AWQ ``qweight`` and compressed-tensors ``weight_packed`` hold
32 / bits values per int32) and scales, zero points and group indices are not weights.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tokcost.catalog.safetensors_meta import TensorMeta

_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")
_EXPERT = re.compile(r"(?:^|\.)experts(?:\.|$)")
_FLOATS_CAST = frozenset({"F32", "F64"})
# Quantization side tensors (the last part of their name): memory, not model parameters.
_NOT_WEIGHTS = frozenset({
    "scales", "qzeros", "g_idx", "weight_scale", "weight_scale_inv", "weight_scale_2",
    "weight_global_scale", "input_scale", "input_scale_inv", "input_global_scale",
    "k_scale", "v_scale", "q_scale", "weight_zero_point", "weight_g_idx", "weight_shape",
    "absmax", "quant_map", "nested_absmax", "nested_quant_map", "SCB",
})
_PACKED_INT32 = frozenset({"qweight", "weight_packed"})


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

    def active_params(self, experts: int | None, per_token: int | None) -> int:
        """Parameters one token uses: all but the routed experts, and ``per_token`` of them.

        >>> WeightsSummary(0, 100, 0, 80, 1).active_params(8, 2)
        40
        """
        if not experts or not per_token or not self.expert_params:
            return self.params
        return self.params - self.expert_params + self.expert_params * per_token // experts


def summarize(
    tensors: Iterable[TensorMeta],
    *,
    layers: int,
    config_dtype: str | None,
    quantization: Mapping[str, Any] | None = None,
) -> WeightsSummary:
    """What the engine loads of ``tensors`` for a model of ``layers`` layers.

    ``config_dtype`` is the checkpoint's ``torch_dtype`` (or ``dtype``) as config.json
    writes it; ``quantization`` its ``quantization_config``.

    >>> t = [TensorMeta("model.layers.0.mlp.experts.0.w1.weight", "BF16", (4, 8), 64),
    ...      TensorMeta("model.layers.0.self_attn.q_proj.weight", "BF16", (8, 8), 128),
    ...      TensorMeta("model.layers.1.eh_proj.weight", "BF16", (8, 8), 128)]
    >>> s = summarize(t, layers=1, config_dtype="bfloat16")
    >>> (s.bytes, s.params, s.expert_bytes, s.skipped_tensors)
    (192, 96, 64, 1)
    """
    packing = _packing(quantization)
    cast = config_dtype is None or config_dtype.lower() in ("float32", "float", "fp32")
    total = params = expert_bytes = expert_params = count = skipped = skipped_bytes = 0
    cast_any = False
    for t in tensors:
        if _speculative(t.name, layers):
            skipped += 1
            skipped_bytes += t.nbytes
            continue
        nbytes = t.nbytes
        if cast and t.dtype in _FLOATS_CAST:
            nbytes = t.elements * 2
            cast_any = True
        n = _params(t, packing)
        count += 1
        total += nbytes
        params += n
        if _EXPERT.search(t.name):
            expert_bytes += nbytes
            expert_params += n
    return WeightsSummary(total, params, expert_bytes, expert_params, count, skipped,
                          skipped_bytes, cast_any)


def _speculative(name: str, layers: int) -> bool:
    if name.startswith("mtp."):
        return True
    found = _LAYER.search(name)
    # Only the language model's own stack: a vision tower's "layers.N" counts its own.
    return (found is not None and int(found.group(1)) >= layers
            and not any(part in name for part in ("vision", "visual", "audio")))


def _params(t: TensorMeta, packing: tuple[int | None, bool]) -> int:
    int32_bits, nibbles = packing
    parts = t.name.split(".")
    last = parts[-1]
    if last in _NOT_WEIGHTS or last.endswith("_scales") or any(
        p.startswith("quant_state") for p in parts
    ):
        return 0
    if last.endswith("_blocks") and t.dtype == "U8":  # mxfp4: two 4-bit values a byte
        return t.elements * 2
    if last in _PACKED_INT32 and t.dtype == "I32" and int32_bits:
        return t.elements * (32 // int32_bits)
    if nibbles and last == "weight" and t.dtype == "U8":  # bitsandbytes 4-bit
        return t.elements * 2
    return t.elements


def _packing(quantization: Mapping[str, Any] | None) -> tuple[int | None, bool]:
    """Bits per value packed into an int32 (GPTQ/AWQ ``bits``, compressed-tensors
    ``num_bits``), and whether uint8 weights hold two 4-bit values (bitsandbytes)."""
    if not quantization:
        return None, False
    nibbles = quantization.get("quant_method") == "bitsandbytes" and bool(
        quantization.get("load_in_4bit")
    )
    return _quant_bits(quantization), nibbles


def _quant_bits(quantization: Mapping[str, Any]) -> int | None:
    bits = quantization.get("bits") or quantization.get("w_bit")
    if isinstance(bits, int) and bits in (2, 3, 4, 8):
        return bits
    groups = quantization.get("config_groups")
    if isinstance(groups, dict):
        for group in groups.values():
            weights = group.get("weights") if isinstance(group, dict) else None
            found = weights.get("num_bits") if isinstance(weights, dict) else None
            if isinstance(found, int) and found in (2, 4, 8):
                return found
    return None
