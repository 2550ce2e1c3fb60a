"""How fast a model runs on a GPU: a roofline for a decode step and for prefill.

A forward pass takes at least the longer of two times, and that one *binds*::

    bandwidth:  bytes it moves / (bandwidth x efficiency)
    compute:    FLOPs it does  / (peak FLOP/s x efficiency)

``efficiency`` (default 1.0: the datasheet peaks, a bound no engine beats) scales
both. Numbers are per GPU: under tensor parallelism weights, FLOPs and heads split
``tp`` ways, and the KV bytes are the layout's per-GPU bytes.

**Bytes.** A pass reads every dense weight once (the input embedding table too: a
pass gathers only its tokens' rows, but the catalog does not say whether the table
is tied to the output head, so it is counted whole, vocab x hidden x bytes more than
strictly read). A mixture-of-experts layer reads the experts its tokens route to.
With ``E`` experts, ``k`` per token and ``n`` tokens routed uniformly and
independently, the expected number of distinct experts one layer touches is::

    D(n) = E x (1 - (1 - k/E)^n)          D(1) = k;  D(n) -> E as n grows

so a pass reads ``dense bytes + D(n) x bytes per expert``, with bytes per expert =
``expert_weights_bytes / E`` (summed over the MoE layers). That is exact for
mixed-dtype checkpoints (gpt-oss: mxfp4 experts beside bf16 attention), where
scaling the checkpoint by active / total parameters is not. A decode step also reads
every sequence's cache: the tokens held (all of them on full and MLA layers, the
window on sliding ones, the fixed state on linear ones), not the padding of the last
block. Prefill writes the prompt's cache.

**FLOPs.** Matmuls do 2 x active parameters per token (``params.active``: one
token's experts; the input embedding is a gather, and the published active counts
leave it out). Attention, per layer, query token and key it attends to::

    full, sliding:  4 x heads x head_dim             (QK^T and PV, a multiply-add each)
    MLA:            2 x heads x (2 x kv_lora_rank + qk_rope_head_dim)
                    (the absorbed form vLLM decodes with; its prefill expands the
                    latent and does fewer, so MLA prefill is a conservative bound)
    linear:         6 x state elements per token     (read, update and query the state)

A decode step's token attends to its whole context (``min(context, window)`` keys on
a sliding layer); a causal prompt of ``P`` tokens to ``P (P + 1) / 2`` keys in all
(``sum of min(i, window)`` for i = 1..P on a sliding layer). So::

    decode FLOPs  = batch x (2 x active params + attention FLOPs of one token)
    prefill FLOPs = 2 x active params x P + attention FLOPs of the causal prompt

The peak is the weights dtype's: fp8 weights run fp8 matmuls where the GPU has them
(vLLM's W8A8 path on Hopper, Ada, Blackwell, MI300X...); every other dtype computes
in bf16 (int8/int4/mxfp4 weight-only kernels dequantize to bf16). Prefill is one
pass over the whole prompt; chunked prefill re-reads the weights per chunk, which
only matters for prompts short enough to be bandwidth bound.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal

from tokcost.catalog.schema import Architecture, Gpu
from tokcost.errors import UsageError
from tokcost.memory.kv import KvLayout
from tokcost.units import weight_bits

__all__ = [
    "DecodeStep", "ExpertWeights", "Peaks", "Prefill", "Roofline", "WeightsRead",
    "attention_flops", "decode_step", "expected_experts", "expert_weights", "gpu_peaks",
    "read_weights", "roofline_notes", "weights_bytes",
]

# Weights dtypes that run fp8 matmuls (W8A8) on a GPU with fp8 tensor cores.
_FP8_COMPUTE = frozenset({"fp8"})


def _total_bytes(arch: Architecture, dtype: str | None, model: str) -> int:
    if arch.params_total is None:
        raise UsageError(
            f"model '{model}' lacks architecture field params needed for the weights' size; "
            f"add it to its catalog entry, or pass kv_memory=SIZE", param="kv_memory"
        )
    if arch.weights_bytes is not None and dtype is None:
        return arch.weights_bytes
    return math.ceil(Decimal(arch.params_total) * weight_bits(dtype or arch.weights_dtype) / 8)


def expected_experts(experts: int, per_token: int, tokens: int) -> float:
    """Distinct experts ``tokens`` tokens touch in one MoE layer, on average, when each
    picks ``per_token`` of ``experts`` uniformly: ``E x (1 - (1 - k/E)^n)``.

    One token touches its own ``k``; a batch of 16 on Qwen3-30B-A3B (128 experts, 8
    per token): 128 x (1 - (120/128)^16) = 128 x (1 - 0.35607) = 82.42.

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


def expert_weights(
    arch: Architecture, *, dtype: str | None = None, model: str = "?"
) -> ExpertWeights | None:
    """The dense / routed split of a MoE model, or None (dense, or experts not stated).

    ``expert_weights_bytes`` from the catalog when the checkpoint's own dtype is used;
    otherwise (``dtype`` given, or no byte count) one expert's parameters follow from
    ``params``: total - active = (E - k) experts' worth.

    gpt-oss-120b: 65,248,815,744 B in all, 60,993,699,840 B of mxfp4 experts, so
    dense = 4,255,115,904 B and one expert (36 layers) = 476,513,280 B; one token
    reads 4,255,115,904 + 4 x 476,513,280 = 6,161,169,024 B.
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


def read_weights(
    arch: Architecture, *, tokens: int, dtype: str | None = None, model: str = "?"
) -> WeightsRead:
    """What a pass over ``tokens`` tokens (a decode batch, or a prompt) reads.

    A MoE model that states no experts reads one token's share of the weights
    (active / total parameters): a lower bound on bytes, so an upper bound on speed.
    """
    moe = expert_weights(arch, dtype=dtype, model=model)
    if moe is not None:
        return WeightsRead(moe.bytes_read(tokens), moe.touched(tokens))
    total = _total_bytes(arch, dtype, model)
    if arch.is_moe:
        assert arch.params_total is not None and arch.params_active is not None
        return WeightsRead(math.ceil(Decimal(total) * arch.params_active / arch.params_total),
                           None)
    return WeightsRead(total, None)


def weights_bytes(
    arch: Architecture, *, dtype: str | None = None, active: bool = False, model: str = "?"
) -> int:
    """Bytes of the weights: all of them, or the ``active`` ones one token reads.

    An explicit ``weights_bytes`` (checkpoint size) wins over params x dtype unless a
    different ``dtype`` is asked for. A MoE token reads the dense weights and its
    ``experts_per_token`` experts (``expert_weights``).
    """
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
    ``new_tokens`` query tokens after ``past_tokens`` cached ones.

    Llama-3.1-8B, one decode token at context 8,192: 32 layers x 4 x 32 heads x 128 x
    8,192 keys = 4,294,967,296. An 8,192-token prompt: 32 x 16,384 x 8,192 x 8,193 / 2
    = 17,594,333,528,064.
    """
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


def gpu_peaks(
    gpu: Gpu | None,
    *,
    weights_dtype: str,
    bandwidth: int | None = None,
    flops: float | None = None,
    efficiency: float = 1.0,
) -> Peaks | None:
    """The GPU's bandwidth and the peak FLOP/s of ``weights_dtype`` (``bandwidth`` and
    ``flops`` override the catalog's); None when no bandwidth is known."""
    if not 0 < efficiency <= 1:
        raise UsageError(
            f"efficiency must be in (0, 1], got {efficiency}: the fraction of the "
            "datasheet peaks reached (1 = the bound)", param="efficiency"
        )
    if flops is not None and flops <= 0:
        raise UsageError(f"flops must be positive, got {flops:g}", param="flops")
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
    return Peaks(bw, peak, efficiency, dtype, fallback)


class _Limits:
    """The two times of one pass and which binds (fields of the dataclasses below)."""

    weights_bytes: int
    kv_bytes: int
    bandwidth_bytes_per_s: int
    flops: int
    peak_flops_per_s: float | None
    efficiency: float

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
        compute = self.compute_seconds
        return max(self.bandwidth_seconds, compute or 0.0)

    @property
    def bound(self) -> str:
        """``"compute"`` or ``"bandwidth"``: the limit that sets the time."""
        compute = self.compute_seconds
        return "compute" if compute is not None and compute > self.bandwidth_seconds \
            else "bandwidth"


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


def decode_step(
    layout: KvLayout,
    *,
    active_weights: int,
    context: int,
    batch: int,
    bandwidth: int,
    block_size: int | None = None,
    flops: int = 0,
    peak_flops: float | None = None,
    efficiency: float = 1.0,
    experts_touched: float | None = None,
) -> DecodeStep:
    """One decode step: read ``active_weights`` once plus every sequence's cache
    (``block_size`` counts whole blocks; None, the tokens held, as kernels read them).

    Llama-3.1-8B on an H100 SXM, one sequence at 8,192 tokens::

        bytes  = 16,060,000,000 weights + 8,192 x 131,072 KV = 17,133,741,824
        -> 17,133,741,824 / 3.35e12 = 5.115 ms;  FLOPs 20,354,967,296 / 989e12 = 0.021 ms
        -> bandwidth binds: 195.5 tokens/s
    """
    kv = batch * layout.sequence_bytes(context, block_size)
    return DecodeStep(active_weights, kv, bandwidth, batch, flops, peak_flops, efficiency,
                      experts_touched)


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
        arch = self.arch
        params = arch.params_active or arch.params_total
        if params is None:  # _total_bytes names the missing field
            _total_bytes(arch, None, self.model)
        return params or 0

    def decode(self, context: int, batch: int) -> DecodeStep:
        """A step in which ``batch`` sequences of ``context`` tokens each add one.

        Compute-bound example: Llama-3.1-8B on an H100 SXM, 512 sequences at 16 tokens::

            bytes = 16,060,000,000 + 512 x 16 x 131,072 = 17,133,741,824 -> 5.115 ms
            FLOPs = 512 x (2 x 8.03e9 + 32 x 4 x 32 x 128 x 16) = 8,227,014,967,296
                  -> / 989e12 = 8.3185 ms: compute binds, 61,549 tokens/s
        """
        read = read_weights(self.arch, tokens=batch, dtype=self.weights_dtype, model=self.model)
        per_token = 2 * self._active_params() + attention_flops(
            self.arch, new_tokens=1, past_tokens=context - 1
        )
        return decode_step(
            self.layout,
            active_weights=-(-read.bytes // self.tp),
            context=context,
            batch=batch,
            bandwidth=self.peaks.bandwidth_bytes_per_s,
            flops=-(-batch * per_token // self.tp),
            peak_flops=self.peaks.flops_per_s,
            efficiency=self.peaks.efficiency,
            experts_touched=read.experts_touched,
        )

    def prefill(self, prompt: int) -> Prefill | None:
        """The forward pass over a ``prompt``-token prompt; None when no peak FLOP/s is
        known (prefill is compute bound: bandwidth alone would not bound it).

        Llama-3.1-8B on an H100 SXM, an 8,192-token prompt::

            FLOPs = 2 x 8.03e9 x 8,192 + 17,594,333,528,064 = 149,157,853,528,064
                  -> / 989e12 = 150.8 ms;  bytes 17,133,741,824 -> 5.1 ms
            -> compute binds: time to first token 150.8 ms
        """
        if self.peaks.flops_per_s is None:
            return None
        read = read_weights(self.arch, tokens=prompt, dtype=self.weights_dtype,
                            model=self.model)
        flops = 2 * self._active_params() * prompt + attention_flops(
            self.arch, new_tokens=prompt
        )
        return Prefill(
            prompt_tokens=prompt,
            weights_bytes=-(-read.bytes // self.tp),
            kv_bytes=self.layout.sequence_bytes(prompt),
            bandwidth_bytes_per_s=self.peaks.bandwidth_bytes_per_s,
            flops=-(-flops // self.tp),
            peak_flops_per_s=self.peaks.flops_per_s,
            efficiency=self.peaks.efficiency,
            experts_touched=read.experts_touched,
        )


def roofline_notes(
    arch: Architecture,
    peaks: Peaks,
    *,
    batch: int,
    gpu: str | None,
    weights_dtype: str | None = None,
    model: str = "?",
) -> list[str]:
    """What the decode and prefill figures assume, in the API's words."""
    notes = [
        f"decode and prefill times are the roofline at efficiency={peaks.efficiency:g} of "
        "the datasheet bandwidth and FLOP/s (1 = the bound no engine beats; give the "
        "fraction an engine reaches as efficiency=F)"
    ]
    where = gpu or "this GPU"
    if peaks.flops_per_s is None and gpu is None:
        # A bandwidth alone: compute was never looked up, so no GPU "states" anything.
        notes.append("no gpu or flops given: compute not checked (decode is bounded by "
                     "bandwidth only, and no time to first token is given); give gpu or flops")
    elif peaks.flops_per_s is None:
        notes.append(
            f"{where} states no {peaks.flops_dtype} FLOP/s: decode is bounded by bandwidth "
            "only and no time to first token is given; pass flops=FLOP/s"
        )
    elif peaks.fp8_fallback:
        notes.append(f"{where} has no fp8 peak: fp8 weights compute at its bf16 peak")
    moe = expert_weights(arch, dtype=weights_dtype, model=model)
    if moe is not None:
        notes.append(
            f"MoE decode reads the experts a batch touches, {moe.experts} x (1 - (1 - "
            f"{moe.per_token}/{moe.experts})^batch) per layer with uniform routing: "
            f"{moe.touched(batch):,.1f} of {moe.experts} at batch {batch}"
        )
    elif arch.is_moe:
        notes.append(
            "decode reads only one token's share of the experts (the model states no "
            "experts and experts_per_token); a batch touches more, so read it as an upper "
            "bound"
        )
    return notes
