"""How fast a model runs on a GPU, per GPU: a pass (a decode step, prefill) takes the longer of
bytes over bandwidth and FLOPs over peak FLOP/s, each x ``efficiency``, plus under tensor
parallelism the least its all-reduces move over the GPU's interconnect, overlapped (docs/kvmem.md).
Every time is a floor, so every rate is an upper bound."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, TypeVar

from tokcost.catalog.schema import Architecture, Gpu
from tokcost.errors import Note, UsageError, arg
from tokcost.memory.kv import KvLayout, attention_shape
from tokcost.units import weight_bits

if TYPE_CHECKING:
    from tokcost.memory.request import RooflineSpec

__all__ = ["DecodeStep", "ExpertWeights", "Peaks", "Prefill", "Roofline", "WeightsRead",
           "attention_flops", "decode_step", "expected_experts", "expert_weights", "gpu_peaks",
           "read_weights", "roofline_notes", "weights_bytes"]


def _total_bytes(arch: Architecture, dtype: str | None, model: str) -> int:
    if arch.params_total is None:
        raise UsageError(
            f"model '{model}' lacks architecture field params needed for the weights' size; "
            f"add it to its catalog entry, or pass {arg('kv_memory', 'SIZE')}", param="kv_memory")
    if arch.weights_bytes is not None and dtype is None:
        return arch.weights_bytes
    return math.ceil(Decimal(arch.params_total) * weight_bits(dtype or arch.weights_dtype) / 8)


def expected_experts(experts: int, per_token: int, tokens: int) -> float:
    """Distinct experts ``tokens`` tokens touch in one MoE layer with uniform routing:
    ``E x (1 - (1 - k/E)^n)`` (Qwen3-30B-A3B at batch 16: 82.42)."""
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


def expert_weights(arch: Architecture, *, dtype: str | None = None,
                   model: str = "?") -> ExpertWeights | None:
    """The dense / routed split of a MoE model (None: dense, or experts not stated): the
    catalog's ``expert_weights_bytes``, else from ``params`` (total - active = (E - k) experts)."""
    e, k = arch.experts, arch.experts_per_token
    if not arch.is_moe or e is None or k is None:
        return None
    if k >= e:
        raise UsageError(
            f"model '{model}' states experts_per_token {k} of only {e} experts; fix its "
            "catalog entry from config.json (num_experts_per_tok, num_experts)")
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
            "in all; fix expert_weights_bytes or params in its catalog entry")
    return ExpertWeights(total - routed, routed / e, e, k)


@dataclass(frozen=True)
class WeightsRead:
    """Weight bytes one pass over ``tokens`` tokens reads (whole model)."""

    bytes: int
    experts_touched: float | None  # per MoE layer; None for dense models


def read_weights(arch: Architecture, *, tokens: int, dtype: str | None = None,
                 model: str = "?") -> WeightsRead:
    """What a pass over ``tokens`` tokens reads (a MoE without experts: one token's share)."""
    moe = expert_weights(arch, dtype=dtype, model=model)
    if moe is not None:
        touched = moe.touched(tokens)
        return WeightsRead(math.ceil(moe.dense_bytes + touched * moe.expert_bytes), touched)
    total = _total_bytes(arch, dtype, model)
    if arch.is_moe:
        assert arch.params_total is not None and arch.params_active is not None
        return WeightsRead(math.ceil(Decimal(total) * arch.params_active / arch.params_total), None)
    return WeightsRead(total, None)


def weights_bytes(arch: Architecture, *, dtype: str | None = None, active: bool = False,
                  model: str = "?") -> int:
    """Bytes of the weights, or of the ``active`` ones one token reads (the checkpoint's own
    unless another ``dtype`` is asked for)."""
    if active:
        return read_weights(arch, tokens=1, dtype=dtype, model=model).bytes
    return _total_bytes(arch, dtype, model)


def _keys(new: int, past: int, window: int | None) -> int:
    """Keys ``new`` causal queries after ``past`` attend to, ``min(t, window)`` at position t."""
    lo, hi = past + 1, past + new
    if window is None or hi <= window:
        return (lo + hi) * new // 2
    if lo > window:
        return new * window
    return (lo + window) * (window - lo + 1) // 2 + (hi - window) * window


def attention_flops(arch: Architecture, *, new_tokens: int, past_tokens: int = 0) -> int:
    """Attention FLOPs (scores, weighted sum; whole model): ``new_tokens`` after ``past_tokens``."""
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
            per_key = 4 * heads * attention_shape(arch)[1]
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
    interconnect_bytes_per_s: int | None = None  # GPU to GPU, both directions; None: unknown


def gpu_peaks(gpu: Gpu | None, spec: RooflineSpec | None = None, *,
              weights_dtype: str) -> Peaks | None:
    """The GPU's (or ``spec``'s) bandwidth, peak FLOP/s for ``weights_dtype``; None without one."""
    bandwidth, flops = (spec.bandwidth, spec.flops) if spec is not None else (None, None)
    bw = bandwidth or (gpu.bandwidth_bytes_per_s if gpu is not None else None)
    if bw is None:
        return None
    fp8 = weights_dtype.lower() == "fp8"  # fp8 matmuls (W8A8) where the GPU has them
    dtype, peak, fallback = "bf16", flops, False
    if peak is None and gpu is not None:
        if fp8 and gpu.fp8_flops:
            dtype, peak = "fp8", gpu.fp8_flops
        else:
            peak = gpu.bf16_flops or None
            fallback = fp8 and peak is not None
    elif fp8:
        dtype = "fp8"
    return Peaks(bw, peak, 1.0 if spec is None else spec.efficiency, dtype, fallback,
                 gpu.interconnect_bytes_per_s if gpu is not None else None)


def _ms(seconds: float | None, digits: int = 4) -> float | None:
    return None if seconds is None else round(seconds * 1000, digits)


@dataclass(frozen=True, kw_only=True)
class _Limits:
    """One pass's floors (bandwidth, compute, tensor-parallel interconnect) and which binds."""

    weights_bytes: int
    kv_bytes: int  # decode: every sequence's cache, read; prefill: the prompt's, written
    bandwidth_bytes_per_s: int
    flops: int = 0
    peak_flops_per_s: float | None = None
    efficiency: float = 1.0
    experts_touched: float | None = None  # per MoE layer, for the pass's tokens
    allreduce_bytes: int = 0  # tensor parallel: the least each GPU sends in the all-reduces
    interconnect_bytes_per_s: int | None = None  # both directions, as datasheets state it

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
    def allreduce_seconds(self) -> float | None:
        """Sent and received at once: half the two-way figure each way."""
        if not self.allreduce_bytes or self.interconnect_bytes_per_s is None:
            return None
        return self.allreduce_bytes / (self.interconnect_bytes_per_s / 2 * self.efficiency)

    @property
    def seconds(self) -> float:
        # A floor: engines overlap the all-reduces with other work (SGLang's two-batch
        # overlap, vLLM's dual-batch overlap), so at best they hide behind the slower roof.
        return max(self.bandwidth_seconds, self.compute_seconds or 0.0,
                   self.allreduce_seconds or 0.0)

    @property
    def bound(self) -> str:
        times = {"bandwidth": self.bandwidth_seconds, "compute": self.compute_seconds or 0.0,
                 "interconnect": self.allreduce_seconds or 0.0}
        return max(times, key=lambda k: times[k])  # ties: bandwidth, then compute

    def _times(self) -> dict[str, object]:
        touched = self.experts_touched
        return {"experts_touched": None if touched is None else round(touched, 2),
                "bandwidth_ms": _ms(self.bandwidth_seconds),
                "compute_ms": _ms(self.compute_seconds), "allreduce_bytes": self.allreduce_bytes,
                "allreduce_ms": _ms(self.allreduce_seconds), "bound": self.bound}


@dataclass(frozen=True, kw_only=True)
class DecodeStep(_Limits):
    """One decode step on one GPU: ``batch`` sequences each produce a token."""

    batch: int

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
        return {"weights_bytes": self.weights_bytes, "kv_bytes": self.kv_bytes,
                "step_bytes": self.step_bytes, "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s,
                "flops": self.flops, "peak_flops_per_s": self.peak_flops_per_s,
                "efficiency": self.efficiency, **self._times(), "step_ms": _ms(self.step_seconds),
                "tokens_per_s_per_sequence_upper_bound": round(self.tokens_per_s_per_sequence, 2),
                "tokens_per_s_upper_bound": round(self.tokens_per_s, 2)}


@dataclass(frozen=True, kw_only=True)
class Prefill(_Limits):
    """The prompt's forward pass on one GPU: its time is the time to first token."""

    prompt_tokens: int

    @property
    def ttft_seconds(self) -> float:
        return self.seconds

    def to_dict(self) -> dict[str, object]:
        return {"prompt_tokens": self.prompt_tokens, "weights_bytes": self.weights_bytes,
                "kv_bytes": self.kv_bytes, "flops": self.flops, **self._times(),
                "ttft_ms": _ms(self.ttft_seconds)}


_P = TypeVar("_P", bound=_Limits)
_ACTIVATION_BYTES = 2  # hidden states travel in bf16 whatever the weights' dtype


def decode_step(layout: KvLayout, *, active_weights: int, context: int, batch: int,
                bandwidth: int) -> DecodeStep:
    """A bandwidth-bound decode step: ``active_weights`` and every sequence's cache, read once."""
    return DecodeStep(weights_bytes=active_weights, kv_bytes=batch * layout.sequence_bytes(context),
                      bandwidth_bytes_per_s=bandwidth, batch=batch)


@dataclass(frozen=True)
class Roofline:
    """One model on one GPU: decode steps and prefill (numbers per GPU under the layout's tp)."""

    arch: Architecture
    layout: KvLayout
    peaks: Peaks
    weights_dtype: str | None = None  # None: the checkpoint's own
    model: str = "?"

    def _active_params(self) -> int:
        params = self.arch.params_active or self.arch.params_total
        if params is None:  # _total_bytes names the missing field
            _total_bytes(self.arch, None, self.model)
        return params or 0

    def _allreduce_bytes(self, tokens: int) -> int:
        """The least each GPU sends per pass under tensor parallelism: two all-reduces a layer
        (after attention, after the MLP; Megatron-LM, Shoeybi et al. 2019, §3) of the tokens'
        bf16 hidden states, (n-1)/n of them each: the share it does not reduce itself, with
        as much received. A ring sends twice that (2(n-1)/n, NCCL's bus bandwidth:
        https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md); a switch that
        reduces in the network (NVLink SHARP, NCCL's NVLS) comes nearer the floor."""
        tp, hidden = self.layout.tp, self.arch.hidden_size
        if tp < 2 or not hidden:
            return 0
        return 2 * self.arch.layers * (tp - 1) * tokens * hidden * _ACTIVATION_BYTES // tp

    def _pass(self, kind: type[_P], tokens: int, flops: int, kv_bytes: int, **own: int) -> _P:
        read, p = read_weights(self.arch, tokens=tokens, dtype=self.weights_dtype,
                               model=self.model), self.peaks
        tp = self.layout.tp
        return kind(weights_bytes=-(-read.bytes // tp), kv_bytes=kv_bytes,
                    bandwidth_bytes_per_s=p.bandwidth_bytes_per_s, flops=-(-flops // tp),
                    peak_flops_per_s=p.flops_per_s, efficiency=p.efficiency,
                    experts_touched=read.experts_touched,
                    allreduce_bytes=self._allreduce_bytes(tokens),
                    interconnect_bytes_per_s=p.interconnect_bytes_per_s, **own)

    def decode(self, context: int, batch: int) -> DecodeStep:
        per_token = 2 * self._active_params() + attention_flops(
            self.arch, new_tokens=1, past_tokens=context - 1)
        kv = batch * self.layout.sequence_bytes(context)
        return self._pass(DecodeStep, batch, batch * per_token, kv, batch=batch)

    def prefill(self, prompt: int) -> Prefill | None:
        """The pass over a ``prompt``-token prompt; None without a peak FLOP/s (compute binds)."""
        if self.peaks.flops_per_s is None:
            return None
        flops = 2 * self._active_params() * prompt + attention_flops(self.arch, new_tokens=prompt)
        kv = self.layout.sequence_bytes(prompt)
        return self._pass(Prefill, prompt, flops, kv, prompt_tokens=prompt)


def roofline_notes(arch: Architecture, peaks: Peaks, *, batch: int, gpu: str | None,
                   weights_dtype: str | None = None, model: str = "?",
                   tp: int = 1) -> list[Note]:
    at = arg("efficiency", f"{peaks.efficiency:g}")
    notes = [Note(
        f"decode and prefill times are the roofline at {at} of the datasheet bandwidth and "
        "FLOP/s (1 = the bound no engine beats; give the fraction an engine reaches as "
        f"{arg('efficiency', 'F')}): tok/s are upper bounds, not predictions")]
    if tp > 1:
        notes.append(_allreduce_note(arch, peaks, tp=tp, gpu=gpu))
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
            "decode reads only one token's share of the experts (the model states no experts and "
            "experts_per_token); a batch touches more, so read it as an upper bound"))
    return notes


def _allreduce_note(arch: Architecture, peaks: Peaks, *, tp: int, gpu: str | None) -> Note:
    link = peaks.interconnect_bytes_per_s
    if link is None or not arch.hidden_size:
        why = (f"{gpu or 'the GPU'} states no interconnect bandwidth" if link is None
               else "the model states no hidden_size")
        return Note(f"tensor parallelism ({arg('tp', tp)}): the all-reduces between GPUs are "
                    f"not modelled ({why}); the bounds hold, looser")
    return Note(
        f"tensor parallelism ({arg('tp', tp)}): each pass moves two all-reduces per layer of "
        f"the tokens' hidden states ({arch.hidden_size:,} x 2 bytes a token) over {gpu}'s "
        f"{link / 1e9:,.0f} GB/s interconnect, at least (n-1)/n of them each way (a ring "
        "moves twice that), overlapped at best: a third floor beside bandwidth and compute; "
        "their latency (microseconds each, twice per layer) is not modelled")
