"""How fast a model runs on a GPU: a roofline for a decode step and for prefill.

A pass takes the longer of ``bytes moved / (bandwidth x efficiency)`` and ``FLOPs /
(peak FLOP/s x efficiency)``; that limit *binds*. Numbers are per GPU (weights, FLOPs and
heads split ``tp`` ways). ``efficiency`` 1.0 gives the datasheet bound no engine beats.

**Bytes.** A pass reads every dense weight once (the embedding table whole: the catalog
does not say whether it is tied) and the experts its tokens route to: with ``E`` experts,
``k`` per token and ``n`` tokens routed uniformly, one layer touches ``D(n) = E x (1 - (1 -
k/E)^n)`` experts (``D(1) = k``), each ``expert_weights_bytes / E``, which is exact for
mixed-dtype checkpoints (gpt-oss: mxfp4 experts, bf16 attention). A decode step also reads
every sequence's cache (the tokens held, not the last block's padding); prefill writes it.

**FLOPs.** 2 x active parameters per token, plus attention per layer, query and key:
``4 x heads x head_dim`` (full, sliding), ``2 x heads x (2 x kv_lora_rank + rope dim)``
(MLA, absorbed as vLLM decodes; a conservative prefill bound), ``6 x state`` per token
(linear). A decode token attends to its context (the window on a sliding layer); a causal
prompt of P tokens to ``P (P + 1) / 2`` keys. The peak is the weights dtype's: fp8 weights
run fp8 matmuls where the GPU has them; other dtypes compute in bf16.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from tokcost.catalog.schema import Architecture, Gpu
from tokcost.errors import UsageError, arg
from tokcost.memory.kv import KvLayout
from tokcost.memory.note import Note
from tokcost.units import weight_bits

if TYPE_CHECKING:
    from tokcost.memory.request import RooflineSpec

__all__ = ["DecodeStep", "ExpertWeights", "Peaks", "Prefill", "Roofline", "WeightsRead",
           "attention_flops", "decode_step", "expected_experts", "expert_weights", "gpu_peaks",
           "read_weights", "roofline_notes", "weights_bytes"]

# Weights dtypes that run fp8 matmuls (W8A8) on a GPU with fp8 tensor cores.
_FP8_COMPUTE = frozenset({"fp8"})


def _total_bytes(arch: Architecture, dtype: str | None, model: str) -> int:
    if arch.params_total is None:
        raise UsageError(
            f"model '{model}' lacks architecture field params needed for the weights' size; "
            f"add it to its catalog entry, or pass {arg('kv_memory', 'SIZE')}", param="kv_memory"
        )
    if arch.weights_bytes is not None and dtype is None:
        return arch.weights_bytes
    return math.ceil(Decimal(arch.params_total) * weight_bits(dtype or arch.weights_dtype) / 8)


def expected_experts(experts: int, per_token: int, tokens: int) -> float:
    """Distinct experts ``tokens`` tokens touch in one MoE layer, on average, when each
    picks ``per_token`` of ``experts`` uniformly: ``E x (1 - (1 - k/E)^n)`` (Qwen3-30B-A3B,
    a batch of 16: 128 x (1 - (120/128)^16) = 82.42).

    >>> expected_experts(128, 8, 1), round(expected_experts(128, 8, 16), 2)
    (8.0, 82.42)
    """
    if tokens <= 0:
        return 0.0
    if tokens == 1:  # exactly k, whatever the float rounding of k/E
        return float(per_token)
    return experts * (1.0 - (1.0 - per_token / experts) ** tokens)


@dataclass(frozen=True)
class ExpertWeights:
    """How a mixture-of-experts checkpoint's bytes split (whole model, all GPUs)."""

    dense_bytes: int  # read by every token: attention, embeddings, routers, shared experts
    expert_bytes: float  # one routed expert, summed over the MoE layers
    experts: int  # routed experts per MoE layer (E)
    per_token: int  # experts each token uses (k)

    def touched(self, tokens: int) -> float:
        return expected_experts(self.experts, self.per_token, tokens)

    def bytes_read(self, tokens: int) -> int:
        return math.ceil(self.dense_bytes + self.touched(tokens) * self.expert_bytes)


def expert_weights(arch: Architecture, *, dtype: str | None = None,
                   model: str = "?") -> ExpertWeights | None:
    """The dense / routed split of a MoE model, or None (dense, or experts not stated):
    the catalog's ``expert_weights_bytes`` in the checkpoint's dtype, else from ``params``
    (total - active = (E - k) experts' worth). gpt-oss-120b: 60,993,699,840 of its
    65,248,815,744 B are mxfp4 experts, 476,513,280 B each over its 36 layers.
    """
    e, k = arch.experts, arch.experts_per_token
    if not arch.is_moe or e is None or k is None:
        return None
    if k >= e:
        raise UsageError(
            f"model '{model}' states experts_per_token {k} of only {e} experts; fix its "
            "catalog entry from config.json (num_experts_per_tok, num_experts)"
        )
    total = _total_bytes(arch, dtype, model)
    if arch.expert_weights_bytes is not None and dtype is None:
        routed = arch.expert_weights_bytes
    else:
        assert arch.params_total is not None and arch.params_active is not None  # is_moe
        per_expert = Decimal(arch.params_total - arch.params_active) / (e - k)
        routed = int(per_expert * e * total / arch.params_total)
    if not 0 < routed < total:
        raise UsageError(
            f"model '{model}' states {routed:,} B of experts' weights against {total:,} B "
            "in all; fix expert_weights_bytes or params in its catalog entry"
        )
    return ExpertWeights(total - routed, routed / e, e, k)


@dataclass(frozen=True)
class WeightsRead:
    """Weight bytes one pass over ``tokens`` tokens reads (whole model)."""

    bytes: int
    experts_touched: float | None  # per MoE layer; None for dense models


def read_weights(arch: Architecture, *, tokens: int, dtype: str | None = None,
                 model: str = "?") -> WeightsRead:
    """What a pass over ``tokens`` tokens (a decode batch, or a prompt) reads; a MoE model
    that states no experts reads one token's share (a lower bound on bytes)."""
    moe = expert_weights(arch, dtype=dtype, model=model)
    if moe is not None:
        return WeightsRead(moe.bytes_read(tokens), moe.touched(tokens))
    total = _total_bytes(arch, dtype, model)
    if arch.is_moe:
        assert arch.params_total is not None and arch.params_active is not None
        return WeightsRead(math.ceil(Decimal(total) * arch.params_active / arch.params_total),
                           None)
    return WeightsRead(total, None)


def weights_bytes(arch: Architecture, *, dtype: str | None = None, active: bool = False,
                  model: str = "?") -> int:
    """Bytes of the weights, or of the ``active`` ones one token reads; the checkpoint's
    ``weights_bytes`` wins over params x dtype unless another ``dtype`` is asked for."""
    if active:
        return read_weights(arch, tokens=1, dtype=dtype, model=model).bytes
    return _total_bytes(arch, dtype, model)


def _head_dim(arch: Architecture) -> int:
    if arch.head_dim is not None:
        return arch.head_dim
    if arch.hidden_size is not None and arch.attention_heads:
        return arch.hidden_size // arch.attention_heads
    return 0


def _keys(new: int, past: int, window: int | None) -> int:
    """Keys ``new`` causal query tokens at positions past+1..past+new attend to in all;
    the token at position t sees ``min(t, window)`` of them."""
    lo, hi = past + 1, past + new
    if window is None or hi <= window:
        return (lo + hi) * new // 2
    if lo > window:
        return new * window
    return (lo + window) * (window - lo + 1) // 2 + (hi - window) * window


def attention_flops(arch: Architecture, *, new_tokens: int, past_tokens: int = 0) -> int:
    """FLOPs of attention (scores and the weighted sum, all layers, whole model) for
    ``new_tokens`` query tokens after ``past_tokens`` cached ones (Llama-3.1-8B, one token
    at 8,192: 32 layers x 4 x 32 heads x 128 x 8,192 keys = 4,294,967,296)."""
    att = arch.attention
    heads = arch.attention_heads or arch.kv_heads or 0
    total = 0
    for kind, count in Counter(att.layer_kinds(arch.layers)).items():
        if kind == "linear":
            total += count * 6 * (att.linear_state_elements or 0) * new_tokens
        elif kind == "mla":
            rank, rope = att.kv_lora_rank or 0, att.qk_rope_head_dim or 0
            total += count * 2 * heads * (2 * rank + rope) * _keys(new_tokens, past_tokens, None)
        else:
            window = att.window if kind == "sliding" else None
            per_key = 4 * heads * _head_dim(arch)
            total += count * per_key * _keys(new_tokens, past_tokens, window)
    return total


@dataclass(frozen=True)
class Peaks:
    """The limits a roofline divides by: datasheet peaks and the fraction reached."""

    bandwidth_bytes_per_s: int
    flops_per_s: float | None  # None: compute unknown, only bandwidth bounds
    efficiency: float = 1.0
    flops_dtype: str = "bf16"  # whose peak flops_per_s is: bf16 or fp8
    fp8_fallback: bool = False  # fp8 weights on a GPU without fp8 peak: bf16 used


def gpu_peaks(gpu: Gpu | None, spec: RooflineSpec | None = None, *,
              weights_dtype: str) -> Peaks | None:
    """The GPU's bandwidth and the peak FLOP/s of ``weights_dtype``, or the ``spec``'s
    bandwidth and flops where it gives them; None when no bandwidth is known."""
    bandwidth, flops = (spec.bandwidth, spec.flops) if spec is not None else (None, None)
    bw = bandwidth or (gpu.bandwidth_bytes_per_s if gpu is not None else None)
    if bw is None:
        return None
    fp8 = weights_dtype.lower() in _FP8_COMPUTE
    dtype, peak, fallback = "bf16", flops, False
    if peak is None and gpu is not None:
        if fp8 and gpu.fp8_flops:
            dtype, peak = "fp8", gpu.fp8_flops
        else:
            peak = gpu.bf16_flops or None
            fallback = fp8 and peak is not None
    elif fp8:
        dtype = "fp8"
    return Peaks(bw, peak, 1.0 if spec is None else spec.efficiency, dtype, fallback)


def _ms(seconds: float | None, digits: int = 4) -> float | None:
    return None if seconds is None else round(seconds * 1000, digits)


class _Limits:
    """The two times of one pass and which binds (fields of the dataclasses below)."""

    weights_bytes: int
    kv_bytes: int
    bandwidth_bytes_per_s: int
    flops: int
    peak_flops_per_s: float | None
    efficiency: float
    experts_touched: float | None

    @property
    def step_bytes(self) -> int:
        return self.weights_bytes + self.kv_bytes

    @property
    def bandwidth_seconds(self) -> float:
        return self.step_bytes / (self.bandwidth_bytes_per_s * self.efficiency)

    @property
    def compute_seconds(self) -> float | None:
        if self.peak_flops_per_s is None:
            return None
        return self.flops / (self.peak_flops_per_s * self.efficiency)

    @property
    def seconds(self) -> float:
        return max(self.bandwidth_seconds, self.compute_seconds or 0.0)

    @property
    def bound(self) -> str:
        """``"compute"`` or ``"bandwidth"``: the limit that sets the time."""
        compute = self.compute_seconds
        return "compute" if compute is not None and compute > self.bandwidth_seconds \
            else "bandwidth"

    def _times(self) -> dict[str, object]:
        touched = self.experts_touched
        return {"experts_touched": None if touched is None else round(touched, 2),
                "bandwidth_ms": _ms(self.bandwidth_seconds),
                "compute_ms": _ms(self.compute_seconds), "bound": self.bound}


@dataclass(frozen=True)
class DecodeStep(_Limits):
    """One decode step on one GPU: ``batch`` sequences each produce a token."""

    weights_bytes: int
    kv_bytes: int  # every sequence's cache, read once
    bandwidth_bytes_per_s: int
    batch: int
    flops: int = 0
    peak_flops_per_s: float | None = None
    efficiency: float = 1.0
    experts_touched: float | None = None  # per MoE layer, for the batch

    @property
    def step_seconds(self) -> float:
        return self.seconds

    @property
    def tokens_per_s_per_sequence(self) -> float:
        return 1.0 / self.seconds

    @property
    def tokens_per_s(self) -> float:
        return self.batch / self.seconds

    def to_dict(self) -> dict[str, object]:
        """The ``decode`` object of a context in ``kvmem estimate --json``."""
        times = self._times()
        return {
            "weights_bytes": self.weights_bytes, "kv_bytes": self.kv_bytes,
            "step_bytes": self.step_bytes, "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s,
            "flops": self.flops, "peak_flops_per_s": self.peak_flops_per_s,
            "efficiency": self.efficiency, **times, "step_ms": _ms(self.step_seconds),
            "tokens_per_s_per_sequence": round(self.tokens_per_s_per_sequence, 2),
            "tokens_per_s": round(self.tokens_per_s, 2),
        }


@dataclass(frozen=True)
class Prefill(_Limits):
    """The prompt's forward pass on one GPU: its time is the time to first token."""

    prompt_tokens: int
    weights_bytes: int
    kv_bytes: int  # the prompt's cache, written
    bandwidth_bytes_per_s: int
    flops: int
    peak_flops_per_s: float | None
    efficiency: float = 1.0
    experts_touched: float | None = None

    @property
    def ttft_seconds(self) -> float:
        return self.seconds

    def to_dict(self) -> dict[str, object]:
        """The ``prefill`` object of a context in ``kvmem estimate --json``."""
        return {"prompt_tokens": self.prompt_tokens, "weights_bytes": self.weights_bytes,
                "kv_bytes": self.kv_bytes, "flops": self.flops, **self._times(),
                "ttft_ms": _ms(self.ttft_seconds)}


def decode_step(layout: KvLayout, *, active_weights: int, context: int, batch: int,
                bandwidth: int) -> DecodeStep:
    """A bandwidth-bound decode step: ``active_weights`` read once plus every sequence's
    cache of ``context`` tokens (Llama-3.1-8B on an H100 SXM at 8,192: 16.06e9 + 8,192 x
    131,072 B / 3.35e12 B/s = 5.115 ms)."""
    return DecodeStep(active_weights, batch * layout.sequence_bytes(context), bandwidth, batch)


@dataclass(frozen=True)
class Roofline:
    """One model on one GPU: decode steps and prefill (numbers per GPU under ``tp``)."""

    arch: Architecture
    layout: KvLayout
    peaks: Peaks
    tp: int = 1
    weights_dtype: str | None = None  # None: the checkpoint's own
    model: str = "?"

    def _active_params(self) -> int:
        params = self.arch.params_active or self.arch.params_total
        if params is None:  # _total_bytes names the missing field
            _total_bytes(self.arch, None, self.model)
        return params or 0

    def _read(self, tokens: int) -> WeightsRead:
        return read_weights(self.arch, tokens=tokens, dtype=self.weights_dtype, model=self.model)

    def decode(self, context: int, batch: int) -> DecodeStep:
        """A step in which ``batch`` sequences of ``context`` tokens each add one (512 at
        16 tokens on Llama-3.1-8B, H100 SXM: 8.2e15 FLOPs -> 8.32 ms, compute binds)."""
        read, p = self._read(batch), self.peaks
        per_token = 2 * self._active_params() + attention_flops(
            self.arch, new_tokens=1, past_tokens=context - 1)
        return DecodeStep(-(-read.bytes // self.tp), batch * self.layout.sequence_bytes(context),
                          p.bandwidth_bytes_per_s, batch, -(-batch * per_token // self.tp),
                          p.flops_per_s, p.efficiency, read.experts_touched)

    def prefill(self, prompt: int) -> Prefill | None:
        """The forward pass over a ``prompt``-token prompt; None when no peak FLOP/s is
        known (prefill is compute bound: bandwidth alone would not bound it)."""
        p = self.peaks
        if p.flops_per_s is None:
            return None
        read = self._read(prompt)
        flops = 2 * self._active_params() * prompt + attention_flops(self.arch, new_tokens=prompt)
        return Prefill(prompt, -(-read.bytes // self.tp), self.layout.sequence_bytes(prompt),
                       p.bandwidth_bytes_per_s, -(-flops // self.tp), p.flops_per_s,
                       p.efficiency, read.experts_touched)


def roofline_notes(arch: Architecture, peaks: Peaks, *, batch: int, gpu: str | None,
                   weights_dtype: str | None = None, model: str = "?") -> list[Note]:
    """What the decode and prefill figures assume."""
    at = arg("efficiency", f"{peaks.efficiency:g}")
    notes = [Note(
        f"decode and prefill times are the roofline at {at} of the datasheet bandwidth and "
        "FLOP/s (1 = the bound no engine beats; give the fraction an engine reaches as "
        f"{arg('efficiency', 'F')})")]
    if peaks.flops_per_s is None and gpu is None:
        # A bandwidth alone: compute was never looked up, so no GPU "states" anything.
        notes.append(Note(
            f"no {arg('gpu')} or {arg('flops')} given: compute not checked (decode is bounded "
            "by bandwidth only, and no time to first token is given); give "
            f"{arg('gpu')} or {arg('flops')}"))
    elif peaks.flops_per_s is None:
        notes.append(Note(
            f"{gpu} states no {peaks.flops_dtype} FLOP/s: decode is bounded by bandwidth only "
            f"and no time to first token is given; pass {arg('flops', 'FLOP/s')}"))
    elif peaks.fp8_fallback:
        notes.append(Note(f"{gpu} has no fp8 peak: fp8 weights compute at its bf16 peak"))
    moe = expert_weights(arch, dtype=weights_dtype, model=model)
    if moe is not None:
        notes.append(Note(
            f"MoE decode reads the experts a batch touches, {moe.experts} x (1 - (1 - "
            f"{moe.per_token}/{moe.experts})^batch) per layer with uniform routing: "
            f"{moe.touched(batch):,.1f} of {moe.experts} at batch {batch}"))
    elif arch.is_moe:
        notes.append(Note(
            "decode reads only one token's share of the experts (the model states no "
            "experts and experts_per_token); a batch touches more, so read it as an upper "
            "bound"))
    return notes
