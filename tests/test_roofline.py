"""The decode and prefill roofline: both limits, MoE experts a batch touches, exact
mixed-dtype bytes, efficiency, and what ``kvmem estimate`` prints and answers.

Every expected number is worked out by hand in the test's docstring from the catalog's
own figures (H100-SXM: 3.35 TB/s, 989 TFLOP/s bf16; Llama-3.1-8B: 8.03B params, bf16,
32 layers x 32 query heads x 128 head_dim, 131,072 KV bytes per token).
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from tokcost.catalog import Architecture, load_catalog
from tokcost.cli.app import app
from tokcost.errors import UsageError
from tokcost.memory import KvRequest, estimate_kv, kv_layout
from tokcost.memory.request import RooflineSpec
from tokcost.memory.roofline import (
    Roofline,
    _keys,
    attention_flops,
    expected_experts,
    expert_weights,
    gpu_peaks,
    read_weights,
    weights_bytes,
)

runner = CliRunner()
H100_BW, H100_BF16 = 3_350 * 10**9, 989e12
LLAMA_WEIGHTS = 8_030_000_000 * 2  # 8.03B params x 2 bytes


@pytest.fixture(autouse=True)
def _shipped_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOKCOST_CATALOG", raising=False)


def arch(model: str) -> Architecture:
    a = load_catalog().resolve(model).architecture
    assert a is not None
    return a


def llama_on_h100(efficiency: float = 1.0) -> Roofline:
    a = arch("llama-3.1-8b")
    peaks = gpu_peaks(load_catalog().resolve_gpu("H100-SXM"),
                      RooflineSpec(efficiency=efficiency), weights_dtype="bf16")
    assert peaks is not None
    return Roofline(a, kv_layout(a), peaks, model="llama-3.1-8b")


# --- the two limits ----------------------------------------------------------------------


def test_decode_bandwidth_bound_worked_example() -> None:
    """Llama-3.1-8B, one sequence at 8,192 tokens, H100-SXM::

        bytes = 16,060,000,000 weights + 8,192 x 131,072 KV = 17,133,741,824
              -> / 3.35e12 = 5.1145 ms
        FLOPs = 2 x 8.03e9 + 32 layers x 4 x 32 heads x 128 x 8,192 keys
              = 16,060,000,000 + 4,294,967,296 = 20,354,967,296 -> / 989e12 = 0.0206 ms
        bandwidth binds: 1 / 5.1145 ms = 195.52 tokens/s
    """
    step = llama_on_h100().decode(8192, 1)
    assert step.weights_bytes == LLAMA_WEIGHTS
    assert step.kv_bytes == 8192 * 131_072
    assert step.step_bytes == 17_133_741_824
    assert step.flops == 20_354_967_296
    assert step.bandwidth_seconds == pytest.approx(17_133_741_824 / 3.35e12)
    assert step.compute_seconds == pytest.approx(20_354_967_296 / 989e12)
    assert step.bound == "bandwidth"
    assert step.tokens_per_s == pytest.approx(195.52, abs=0.01)


def test_decode_compute_bound_worked_example() -> None:
    """Llama-3.1-8B, 512 sequences at 16 tokens, H100-SXM::

        bytes = 16,060,000,000 + 512 x 16 x 131,072 = 17,133,741,824 -> 5.1145 ms
        FLOPs = 512 x (16,060,000,000 + 32 x 4 x 32 x 128 x 16 = 8,388,608)
              = 512 x 16,068,388,608 = 8,227,014,967,296 -> / 989e12 = 8.3185 ms
        compute binds: 512 / 8.3185 ms = 61,549 tokens/s
    """
    step = llama_on_h100().decode(16, 512)
    assert step.step_bytes == 17_133_741_824
    assert step.flops == 8_227_014_967_296
    assert step.bound == "compute"
    assert step.step_seconds == pytest.approx(8_227_014_967_296 / 989e12)
    assert step.tokens_per_s == pytest.approx(512 / (8_227_014_967_296 / 989e12))
    assert round(step.tokens_per_s) == 61_549


def test_prefill_time_to_first_token_worked_example() -> None:
    """An 8,192-token prompt on Llama-3.1-8B, H100-SXM::

        matmuls   = 2 x 8.03e9 x 8,192                    = 131,563,520,000,000
        attention = 32 x 4 x 32 x 128 x (8,192 x 8,193 / 2) = 17,594,333,528,064
        FLOPs     = 149,157,853,528,064 -> / 989e12 = 150.82 ms
        bytes     = 16,060,000,000 + 8,192 x 131,072 written -> 5.11 ms
        compute binds: time to first token 150.82 ms
    """
    first = llama_on_h100().prefill(8192)
    assert first is not None
    assert attention_flops(arch("llama-3.1-8b"), new_tokens=8192) == 17_594_333_528_064
    assert first.flops == 149_157_853_528_064
    assert first.kv_bytes == 8192 * 131_072
    assert first.bound == "compute"
    assert first.ttft_seconds * 1000 == pytest.approx(150.8168, abs=1e-4)


def test_efficiency_scales_both_limits() -> None:
    """At efficiency 0.5 every time doubles and the binding limit stays the same."""
    full, half = llama_on_h100(1.0), llama_on_h100(0.5)
    for ctx, batch in ((8192, 1), (16, 512)):
        a, b = full.decode(ctx, batch), half.decode(ctx, batch)
        assert b.step_seconds == pytest.approx(2 * a.step_seconds)
        assert a.bound == b.bound


@pytest.mark.parametrize("value", [0.0, -0.1, 1.01, math.nan])
def test_efficiency_must_be_a_fraction(value: float) -> None:
    with pytest.raises(UsageError, match=r"efficiency must be in \(0, 1\]"):
        gpu_peaks(None, RooflineSpec(bandwidth=H100_BW, efficiency=value), weights_dtype="bf16")


def test_fp8_weights_use_the_fp8_peak() -> None:
    """DeepSeek-V3's fp8 checkpoint on an H200 runs at 1,979 TFLOP/s; on an A100 (no
    fp8 tensor cores) it falls back to the bf16 peak and says so."""
    cat = load_catalog()
    h200 = gpu_peaks(cat.resolve_gpu("H200"), weights_dtype="fp8")
    a100 = gpu_peaks(cat.resolve_gpu("A100-80GB"), weights_dtype="fp8")
    bf16 = gpu_peaks(cat.resolve_gpu("H200"), weights_dtype="bf16")
    assert h200 is not None and a100 is not None and bf16 is not None
    assert (h200.flops_dtype, h200.flops_per_s) == ("fp8", 1979e12)
    assert (a100.flops_per_s, a100.fp8_fallback) == (312e12, True)
    assert bf16.flops_per_s == 989e12
    e = estimate_kv(cat.resolve("deepseek-v3"), KvRequest.of(
        gpu=cat.resolve_gpu("A100-80GB"), kv_memory=10 * 2**30, contexts=[1000]))
    assert any("no fp8 peak" in n for n in e.notes)


# --- attention FLOPs by layer kind -------------------------------------------------------


@given(new=st.integers(1, 3000), past=st.integers(0, 3000),
       window=st.one_of(st.none(), st.integers(1, 2000)))
def test_causal_keys_match_the_sum(new: int, past: int, window: int | None) -> None:
    """The closed form is sum(min(t, window) for t in past+1..past+new)."""
    cap = window if window is not None else 10**9
    assert _keys(new, past, window) == sum(min(t, cap) for t in range(past + 1, past + new + 1))


def test_attention_flops_per_layer_kind() -> None:
    """One decode token at context 100,000:

    gpt-oss-120b (64 heads x 64): 18 full layers x 4 x 64 x 64 x 100,000 keys plus
        18 sliding layers x 4 x 64 x 64 x 128 keys (the window) = 29,528,948,736.
    DeepSeek-V3 (MLA, absorbed): 61 x 2 x 128 heads x (2 x 512 + 64) x 100,000
        = 1,699,020,800,000.
    Qwen3-Next (36 linear layers of 548,864 state elements, 12 full of 16 x 256):
        36 x 6 x 548,864 + 12 x 4 x 16 x 256 x 100,000 = 19,779,354,624.
    """
    one = {"new_tokens": 1, "past_tokens": 99_999}
    assert attention_flops(arch("gpt-oss-120b"), **one) == (
        18 * 4 * 64 * 64 * 100_000 + 18 * 4 * 64 * 64 * 128) == 29_528_948_736
    assert attention_flops(arch("deepseek-v3"), **one) == 1_699_020_800_000
    assert attention_flops(arch("qwen3-next-80b-a3b"), **one) == 19_779_354_624


# --- mixture of experts -------------------------------------------------------------------


MOE = ["mixtral-8x7b", "qwen3-30b-a3b", "qwen3-next-80b-a3b", "deepseek-v3", "gpt-oss-20b",
       "gpt-oss-120b"]


@pytest.mark.parametrize("model", MOE)
def test_one_token_touches_its_own_experts(model: str) -> None:
    """D(1) = E x (1 - (1 - k/E)) = k for every catalog MoE model, and its bytes are
    dense + k experts."""
    a = arch(model)
    moe = expert_weights(a, model=model)
    assert moe is not None and a.experts_per_token is not None
    assert expected_experts(moe.experts, moe.per_token, 1) == a.experts_per_token
    assert read_weights(a, tokens=1).experts_touched == a.experts_per_token
    assert weights_bytes(a, active=True) == math.ceil(
        moe.dense_bytes + a.experts_per_token * moe.expert_bytes)


def test_distinct_experts_worked_example() -> None:
    """Qwen3-30B-A3B (128 experts, 8 per token), a batch of 16:
    128 x (1 - (120/128)^16) = 128 x (1 - 0.356074) = 82.42 experts per layer; a batch
    of 256 touches all but 128 x 0.9375^256 = 8.3e-6 of them."""
    assert expected_experts(128, 8, 16) == pytest.approx(82.4225, abs=1e-4)
    assert expected_experts(128, 8, 256) == pytest.approx(128, abs=1e-4)


@given(experts=st.integers(2, 512), data=st.data())
def test_distinct_experts_grow_to_all(experts: int, data: st.DataObject) -> None:
    k = data.draw(st.integers(1, experts - 1))
    n = data.draw(st.integers(1, 4096))
    d = expected_experts(experts, k, n)
    assert k - 1e-9 <= d <= min(experts, n * k) + 1e-9
    assert expected_experts(experts, k, n + 1) >= d


def test_gpt_oss_active_bytes_are_exact() -> None:
    """gpt-oss-120b: mxfp4 experts beside bf16 attention. Per expert and layer:
    (5,760 + 2,880) x 90 x 16 blocks + (5,760 + 2,880) x 90 scales + (5,760 + 2,880) x 2
    bias = 13,236,480 B; x 128 x 36 = 60,993,699,840 B of experts in the 65,248,815,744.
    One token: 4,255,115,904 dense + 4 x 476,513,280 = 6,161,169,024 B, where scaling the
    checkpoint by 5.1B / 116.8B active parameters gave 2,849,049,318 B (2.16x too few)."""
    a = arch("gpt-oss-120b")
    assert a.expert_weights_bytes == 13_236_480 * 128 * 36
    assert weights_bytes(a, active=True) == 6_161_169_024
    scaled = math.ceil(65_248_815_744 * 5.1 / 116.8)
    assert weights_bytes(a, active=True) / scaled == pytest.approx(2.16, abs=0.01)


def test_a_batch_reads_more_experts() -> None:
    """gpt-oss-120b at batch 64: 128 x (1 - (124/128)^64) = 111.2 experts per layer, so
    the step reads 4,255,115,904 + 111.2 x 476,513,280 B of weights."""
    cat = load_catalog()
    e = estimate_kv(cat.resolve("gpt-oss-120b"), KvRequest.of(
        gpu=cat.resolve_gpu("H200"), batch=64, contexts=[8000]))
    step = e.rows[0].decode
    assert step is not None and step.experts_touched is not None
    touched = 128 * (1 - (124 / 128) ** 64)
    assert step.experts_touched == pytest.approx(touched)
    assert step.weights_bytes == math.ceil(4_255_115_904 + touched * 476_513_280)
    assert any("111.2 of 128 at batch 64" in n for n in e.notes)


def test_moe_without_experts_is_an_upper_bound() -> None:
    """A MoE entry that states no experts reads one token's share (active / total) and
    the estimate says to read the rate as an upper bound."""
    a = dataclasses.replace(arch("qwen3-30b-a3b"), experts=None, experts_per_token=None,
                            expert_weights_bytes=None)
    assert weights_bytes(a, active=True) == math.ceil(61_000_000_000 * 3.3 / 30.5)
    entry = dataclasses.replace(load_catalog().resolve("qwen3-30b-a3b"), architecture=a)
    e = estimate_kv(entry, KvRequest.of(bandwidth=H100_BW, contexts=[4096]))
    assert any("upper bound" in n for n in e.notes)


def test_weights_dtype_override_derives_expert_bytes_from_params() -> None:
    """Mixtral in int4: one expert is (46.7B - 12.9B) / (8 - 2) = 5.633B params; eight of
    them at 4 bits are 22,533,333,333 B of the 23,350,000,000 B checkpoint."""
    moe = expert_weights(arch("mixtral-8x7b"), dtype="int4")
    assert moe is not None
    assert moe.dense_bytes == 23_350_000_000 - 22_533_333_333


# --- kvmem estimate --------------------------------------------------------------------


def _one_line_error(result: Any, code: int, fragment: str) -> None:
    output = result.output
    assert result.exit_code == code, output
    assert "Traceback" not in output
    assert fragment in output
    assert len(output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        pytest.param(["--gpu", "h100", "--efficiency", "0"], 2, "--efficiency must be in (0, 1]",
                     id="efficiency-zero"),
        pytest.param(["--gpu", "h100", "--efficiency", "1.5"], 2, "--efficiency must be in",
                     id="efficiency-above-1"),
        pytest.param(["--gpu", "h100", "--efficiency", "nan"], 2, "--efficiency must be in",
                     id="efficiency-nan"),
        pytest.param(["--efficiency", "0.7"], 2, "give --gpu or --bandwidth",
                     id="efficiency-without-gpu"),
        pytest.param(["-i", "8k"], 2, "give --gpu or --bandwidth", id="prompt-without-gpu"),
        pytest.param(["--flops", "989T"], 2, "give --gpu or --bandwidth", id="flops-without-gpu"),
        pytest.param(["--gpu", "h100", "-i", "0"], 2, "--input-tokens must be positive",
                     id="prompt-zero"),
        pytest.param(["--gpu", "h100", "--flops", "0"], 2, "--flops 0 is below 1e9",
                     id="flops-zero"),
        pytest.param(["--gpu", "h100", "--flops", "fast"], 2, "--flops", id="flops-typo"),
        pytest.param(["--gpu", "RTX-5090", "-i", "8k"], 2, "RTX-5090 states none: give --flops",
                     id="prompt-needs-flops"),
        pytest.param(["--bandwidth", "1TB", "-i", "8k"], 2, "give --flops", id="custom-gpu-flops"),
    ],
)
def test_roofline_flag_errors(args: list[str], code: int, fragment: str) -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", *args])
    _one_line_error(result, code, fragment)


def test_table_says_which_limit_binds_and_the_ttft() -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--gpu", "H100",
                                 "--context", "8192", "--batch", "1"])
    assert result.exit_code == 0, result.output
    header = next(line for line in result.output.splitlines() if "context" in line)
    assert "bound" in header and "TTFT" in header
    assert "bandwidth bound: at most 195.5 tok/s per sequence" in result.output
    assert "decode tok/s (upper bound)" in header
    assert "compute bound: time to first token 150.8 ms" in result.output
    assert "efficiency 1" in result.output  # the assumption is stated


def test_prompt_flag_sets_the_prefill() -> None:
    """-i 8Ki on a 32k context: the TTFT is the 8,192-token prompt's (150.8 ms)."""
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--gpu", "H100",
                                 "--context", "32k", "-i", "8Ki", "--json"])
    assert result.exit_code == 0, result.output
    row = json.loads(result.stdout)["contexts"][0]
    assert row["prefill"]["prompt_tokens"] == 8192
    assert row["prefill"]["ttft_ms"] == pytest.approx(150.8168, abs=1e-4)
    assert row["prefill"]["bound"] == "compute"


def test_json_decode_keys() -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--gpu", "H100",
                                 "--context", "16", "--batch", "512", "--efficiency", "0.5",
                                 "--json"])
    assert result.exit_code == 0, result.output
    decode = json.loads(result.stdout)["contexts"][0]["decode"]
    assert set(decode) == {
        "weights_bytes", "kv_bytes", "step_bytes", "bandwidth_bytes_per_s", "flops",
        "peak_flops_per_s", "efficiency", "experts_touched", "bandwidth_ms", "compute_ms",
        "allreduce_bytes", "allreduce_ms", "bound", "step_ms",
        "tokens_per_s_per_sequence_upper_bound", "tokens_per_s_upper_bound",
    }
    assert decode["bound"] == "compute" and decode["efficiency"] == 0.5
    assert decode["step_ms"] == pytest.approx(2 * 8.3185, abs=1e-3)


def test_no_peak_flops_is_bandwidth_only() -> None:
    """The RTX-5090 entry states no FLOP/s: decode is bandwidth bound by construction,
    no TTFT is given, and the note says how to add the peak."""
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--gpu", "RTX-5090",
                                 "--context", "4k", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    row = doc["contexts"][0]
    assert row["decode"]["compute_ms"] is None and row["decode"]["bound"] == "bandwidth"
    assert row["prefill"] is None
    assert any("states no bf16 FLOP/s" in n for n in doc["notes"])
    with_flops = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--gpu",
                                     "RTX-5090", "--context", "4k", "--flops", "209.5T",
                                     "--json"])
    assert json.loads(with_flops.stdout)["contexts"][0]["prefill"]["bound"] == "compute"


@pytest.mark.parametrize(("args", "bound", "note"), [
    (["--bandwidth", "3TB"], "bandwidth (no FLOP/s)",
     "no --gpu or --flops given: compute not checked"),
    (["--gpu", "RTX-5090"], "bandwidth (no FLOP/s)", "RTX-5090 states no bf16 FLOP/s"),
    (["--gpu", "H100"], "bandwidth", "roofline at --efficiency 1"),
])
def test_bound_cell_says_when_compute_was_not_checked(args: list[str], bound: str,
                                                      note: str) -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--context", "8k",
                                 *args])
    assert result.exit_code == 0, result.output
    row = next(ln for ln in result.stdout.splitlines() if ln.strip().startswith("8,000"))
    assert f" {bound} " in f"{row} "
    assert note in result.stderr
    assert ("(no FLOP/s)" in row) == ("no FLOP/s" in bound)
    assert "this GPU states" not in result.stderr


def test_tensor_parallel_all_reduces_are_a_third_floor() -> None:
    """DeepSeek-V3 (61 layers, hidden 7,168) on 8 H200s (NVLink 900 GB/s both ways): one
    token's step sends at least 2 all-reduces x 61 layers x 7/8 x 7,168 x 2 B = 1,530,368 B
    from each GPU at 450 GB/s, overlapped at best: the step is the slowest of three floors, so
    its rate stays an upper bound (a ring's 2(n-1)/n, added, made it an estimate)."""
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "deepseek-v3", "--gpu", "H200",
                                 "--tp", "8", "--context", "32k", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    decode, prefill = doc["contexts"][0]["decode"], doc["contexts"][0]["prefill"]
    assert decode["allreduce_bytes"] == 2 * 61 * 7 * 7168 * 2 // 8 == 1_530_368
    assert decode["allreduce_ms"] == pytest.approx(1_530_368 / 450e9 * 1000, abs=1e-4)
    assert decode["step_ms"] == pytest.approx(
        max(decode["bandwidth_ms"], decode["compute_ms"], decode["allreduce_ms"]), abs=1e-3)
    assert decode["tokens_per_s_upper_bound"] == pytest.approx(1000 / decode["step_ms"], rel=1e-3)
    assert prefill["allreduce_bytes"] == 32_000 * 1_530_368
    assert any("two all-reduces per layer" in n for n in doc["notes"])


def test_the_interconnect_can_bind() -> None:
    from tokcost.memory.roofline import DecodeStep
    step = DecodeStep(weights_bytes=10**6, kv_bytes=0, bandwidth_bytes_per_s=10**12, flops=10**9,
                      peak_flops_per_s=10**15, allreduce_bytes=10**7,
                      interconnect_bytes_per_s=10**11, batch=1)
    assert step.bound == "interconnect" and step.seconds == pytest.approx(10**7 / (10**11 / 2))
    assert step.seconds == step.allreduce_seconds > step.bandwidth_seconds


def test_one_gpu_moves_nothing_and_an_unknown_link_is_said() -> None:
    one = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--gpu", "H100",
                              "--context", "1k", "--json"])
    assert json.loads(one.stdout)["contexts"][0]["decode"]["allreduce_bytes"] == 0
    bare = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-70b", "--bandwidth", "3TB",
                               "--kv-memory", "20GiB", "--tp", "4", "--context", "1k"])
    assert bare.exit_code == 0, bare.output
    assert "all-reduces between GPUs are not modelled" in bare.output
