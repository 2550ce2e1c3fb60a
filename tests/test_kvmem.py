"""KV-cache memory model: published anchors, layer patterns, vLLM block accounting, CLI."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tokcost.catalog import Architecture, Attention, load_catalog
from tokcost.cli.app import app
from tokcost.errors import TokcostError, UsageError
from tokcost.memory import KvRequest, estimate_kv, kv_bytes_per_token, kv_cache_bytes, kv_layout
from tokcost.memory.engines.ideal import IdealPlan
from tokcost.memory.fit import GpuFit, gpu_fit
from tokcost.memory.kv import ArchitectureIncomplete, KvLayout
from tokcost.memory.roofline import decode_step
from tokcost.units import parse_context_list, parse_size

runner = CliRunner()
GiB = 2**30


@pytest.fixture(autouse=True)
def _shipped_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOKCOST_CATALOG", raising=False)


def max_concurrency(layout: KvLayout, fit: GpuFit, context: int) -> float | None:
    """The ideal profile's concurrency (fit.max_concurrency before engine profiles)."""
    return IdealPlan(layout, fit.block_size, fit).max_concurrency(context)


def largest_context(layout: KvLayout, fit: GpuFit, *, batch: int, limit: int) -> int | None:
    """The ideal profile's longest context (fit.largest_context before engine profiles)."""
    return IdealPlan(layout, fit.block_size, fit).largest_context(batch, limit)


def arch(model: str) -> Architecture:
    a = load_catalog().resolve(model).architecture
    assert a is not None
    return a


# --- anchors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "dtype", "expected"),
    [
        pytest.param("opt-13b", "fp16", 2 * 5120 * 40 * 2, id="opt-13b-800KB"),
        pytest.param("llama-3.1-8b", "bf16", 128 * 1024, id="llama-3.1-8b-128KiB"),
        pytest.param("llama-3.1-70b", "bf16", 320 * 1024, id="llama-3.1-70b-320KiB"),
        pytest.param("qwen3-32b", "bf16", 256 * 1024, id="qwen3-32b-256KiB"),
        pytest.param("deepseek-v3", "bf16", 70_272, id="deepseek-v3-mla"),
        pytest.param("llama-3.1-405b", "bf16", 2 * 8 * 128 * 2 * 126, id="llama-3.1-405b"),
        pytest.param("phi-3-mini", "bf16", 2 * 32 * 96 * 2 * 32, id="phi-3-head-dim-96"),
    ],
)
def test_bytes_per_token_anchors(model: str, dtype: str, expected: int) -> None:
    assert kv_bytes_per_token(arch(model), dtype) == expected


def test_opt_13b_pagedattention_example() -> None:
    # PagedAttention §3: 800 KB per token, up to 1.6 GB for a 2048-token request.
    assert kv_bytes_per_token(arch("opt-13b"), "fp16") == 800 * 1024
    total = kv_cache_bytes(arch("opt-13b"), 2048, "fp16")
    assert total == 800 * 1024 * 2048 == 1_677_721_600
    assert 1.6e9 < total < 1.7e9


def test_deepseek_mla_formula() -> None:
    # (kv_lora_rank 512 + qk_rope_head_dim 64) x 61 layers x 2 bytes, no factor 2.
    assert kv_bytes_per_token(arch("deepseek-v3")) == (512 + 64) * 61 * 2
    # MLA's latent is not split by tensor parallelism.
    assert kv_bytes_per_token(arch("deepseek-v3"), tp=8) == 70_272


# --- layer patterns --------------------------------------------------------------------


def test_mistral_sliding_window_caps_every_layer() -> None:
    a = arch("mistral-7b-v0.1")
    per = 2 * 8 * 128 * 2
    assert kv_cache_bytes(a, 2000) == 32 * 2000 * per
    assert kv_cache_bytes(a, 32_000) == kv_cache_bytes(a, 4096) == 32 * 4096 * per


def test_gemma2_alternating_layers() -> None:
    a = arch("gemma-2-9b")
    assert a.attention.layer_kinds(4) == ("sliding", "full", "sliding", "full")
    per = 2 * 8 * 256 * 2
    assert kv_cache_bytes(a, 8192) == 21 * 8192 * per + 21 * 4096 * per


def test_gemma3_five_local_one_global() -> None:
    kinds = arch("gemma-3-27b").attention.layer_kinds(62)
    assert kinds.count("full") == 10 and kinds.count("sliding") == 52
    assert kinds[5] == "full" and kinds[4] == "sliding"  # (i + 1) % 6 == 0 is global
    per = 2 * 16 * 128 * 2
    assert kv_cache_bytes(arch("gemma-3-27b"), 100_000) == (10 * 100_000 + 52 * 1024) * per


def test_gpt_oss_alternating_128_token_windows() -> None:
    a = arch("gpt-oss-120b")
    per = 2 * 8 * 64 * 2
    assert kv_cache_bytes(a, 100) == 36 * 100 * per  # shorter than the window
    assert kv_cache_bytes(a, 10_000) == (18 * 10_000 + 18 * 128) * per


def test_linear_layers_hold_fixed_state() -> None:
    a = arch("qwen3-next-80b-a3b")
    layout = kv_layout(a)
    assert layout.counts["linear"] == 36 and layout.counts["full"] == 12
    assert layout.state_bytes == 548_864 * 2
    assert layout.bytes_per_token == 12 * 2 * 2 * 256 * 2
    grow = kv_cache_bytes(a, 2000) - kv_cache_bytes(a, 1000)
    assert grow == 1000 * layout.bytes_per_token  # the state does not grow
    assert kv_cache_bytes(a, 1) == 36 * layout.state_bytes + layout.bytes_per_token


def test_quantized_dtypes_add_group_scales() -> None:
    a = arch("llama-3.1-8b")
    # per head vector of 128: fp8 128 B; int8 128 + 2 groups x 4 B; int4 64 + 8.
    assert kv_bytes_per_token(a, "fp8") == 2 * 8 * 128 * 32
    assert kv_bytes_per_token(a, "int8") == 2 * 8 * 136 * 32
    assert kv_bytes_per_token(a, "int4") == 2 * 8 * 72 * 32
    assert kv_bytes_per_token(a, "int4", group=32) == 2 * 8 * (64 + 4 * 4) * 32
    assert kv_bytes_per_token(a, "fp32") == 2 * kv_bytes_per_token(a, "bf16")


def test_paged_block_rounding() -> None:
    a = arch("llama-3.1-8b")
    assert kv_cache_bytes(a, 17, block_size=16) == 32 * kv_bytes_per_token(a)
    assert kv_cache_bytes(a, 16, block_size=16) == 16 * kv_bytes_per_token(a)
    # A sliding layer keeps at most ceil((window - 1) / block) + 1 blocks.
    m = arch("mistral-7b-v0.1")
    per_layer = 2 * 8 * 128 * 2
    assert kv_cache_bytes(m, 10_000, block_size=16) == 32 * 257 * 16 * per_layer


@pytest.mark.parametrize(
    ("tp", "expected_heads"),
    [pytest.param(1, 8, id="tp1"), pytest.param(4, 2, id="tp4"), pytest.param(16, 1, id="tp16")],
)
def test_tensor_parallel_splits_kv_heads(tp: int, expected_heads: int) -> None:
    layout = kv_layout(arch("llama-3.1-70b"), tp=tp)
    assert layout.kv_heads_per_gpu == expected_heads
    assert layout.bytes_per_token == 2 * expected_heads * 128 * 2 * 80


def test_tensor_parallel_must_divide_heads() -> None:
    with pytest.raises(UsageError, match="tp=3 must divide"):
        kv_layout(arch("llama-3.1-70b"), tp=3)


# --- vLLM block accounting -------------------------------------------------------------


def test_vllm_worked_example_h100() -> None:
    layout = kv_layout(arch("llama-3.1-8b"))
    weights = 16_060_000_000  # 8.03B params x 2 bytes
    fit = gpu_fit(layout, memory_bytes=80 * GiB, util=0.9, weights=weights, reserve=2 * GiB)
    assert fit.available_bytes == int(80 * GiB * 0.9) - weights - 2 * GiB == 59_101_927_680
    assert fit.page_bytes == 16 * 4096 * 32 == 2_097_152
    assert fit.num_blocks == 59_101_927_680 // 2_097_152 == 28_181
    assert fit.cache_tokens == 28_181 * 16
    # vLLM: "Maximum concurrency for 8192 tokens per request: 55.04x"
    assert max_concurrency(layout, fit, 8192) == pytest.approx(28_181 / 512)
    assert max_concurrency(layout, fit, 8200) == pytest.approx(28_181 / 513)


def test_kv_memory_as_vllm_logs_it() -> None:
    layout = kv_layout(arch("llama-3.1-8b"))
    fit = gpu_fit(layout, kv_memory=10 * GiB)
    assert fit.num_blocks == 5120 and fit.cache_tokens == 81_920
    assert max_concurrency(layout, fit, 2048) == 40
    assert largest_context(layout, fit, batch=1, limit=10**6) == 81_920
    assert largest_context(layout, fit, batch=4, limit=10**6) == 20_480
    assert largest_context(layout, fit, batch=1, limit=50_000) == 50_000


def test_weights_larger_than_gpu() -> None:
    layout = kv_layout(arch("llama-3.1-70b"))
    with pytest.raises(TokcostError, match="nothing is left for the KV cache"):
        gpu_fit(layout, memory_bytes=80 * GiB, weights=141 * 10**9)


def test_decode_step_is_bandwidth_bound() -> None:
    layout = kv_layout(arch("llama-3.1-8b"))
    step = decode_step(
        layout, active_weights=16_060_000_000, context=8192, batch=4, bandwidth=3_350 * 10**9
    )
    assert step.kv_bytes == 4 * 8192 * 131_072
    assert step.step_bytes == 16_060_000_000 + 4 * GiB
    assert step.tokens_per_s == pytest.approx(4 * 3.35e12 / step.step_bytes)


def test_estimate_uses_active_params_for_moe() -> None:
    cat = load_catalog()
    e = estimate_kv(cat.resolve("qwen3-30b-a3b"),
                    KvRequest.of(gpu=cat.resolve_gpu("H100"), contexts=[4096]))
    step = e.rows[0].decode
    assert step is not None
    # dense 61.0e9 - 57,982,058,496 expert bytes, plus 8 of 128 experts (452,984,832 B each)
    assert step.weights_bytes == 61_000_000_000 - 57_982_058_496 + 8 * 452_984_832
    assert step.experts_touched == 8
    assert any("experts a batch touches" in n for n in e.notes)
    assert e.fit is not None and e.fit.weights_bytes == 30_500_000_000 * 2


# --- sizes and bad input ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("80GB", 80 * 10**9, id="GB"),
        pytest.param("80GiB", 80 * GiB, id="GiB"),
        pytest.param("80 gib", 80 * GiB, id="spaced-lower"),
        pytest.param("1.5TB", 1_500_000_000_000, id="fraction"),
        pytest.param("512MiB", 512 * 2**20, id="MiB"),
        pytest.param("4KiB", 4096, id="KiB"),
        pytest.param("85899345920", 80 * GiB, id="bare-byte-count"),
        # vLLM's --kv-cache-memory in bytes, as its log prints them (issue 25)
        pytest.param("7240417280B", 7240417280, id="B-is-bytes"),
        pytest.param("4096 B", 4096, id="B-is-bytes-small"),
    ],
)
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("80G", "ambiguous", id="bare-G"),
        pytest.param("80", "has no unit", id="no-unit"),
        pytest.param("80GG", "unknown unit", id="typo"),
        pytest.param("80Gibs", "unknown unit", id="typo-2"),
        pytest.param("-5GB", "must not be negative", id="negative"),
        pytest.param("0GB", "greater than zero", id="zero"),
        pytest.param("lots", "not a size", id="words"),
    ],
)
def test_parse_size_errors(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_size(text)


def test_context_list() -> None:
    assert parse_context_list("1k,8k,32k,128k") == [1000, 8000, 32000, 128000]
    assert parse_context_list("128Ki, 4096") == [131072, 4096]
    with pytest.raises(UsageError):
        parse_context_list("8q")


def test_missing_architecture_fields_are_named() -> None:
    bare = Architecture(layers=4, attention=Attention())
    with pytest.raises(ArchitectureIncomplete, match=r"'toy' lacks architecture fields kv_heads"):
        kv_layout(bare, model="toy")


def test_hf_defaults_for_absent_kv_heads_and_head_dim() -> None:
    # OPT's config states neither: MHA with hidden / heads per head.
    opt_like = Architecture(layers=40, hidden_size=5120, attention_heads=40)
    assert kv_bytes_per_token(opt_like, "fp16") == 800 * 1024


def test_bad_kv_dtype_suggests() -> None:
    with pytest.raises(UsageError, match="did you mean: fp8"):
        kv_layout(arch("llama-3.1-8b"), "fp9")


def test_every_architecture_sizes() -> None:
    for entry in load_catalog().models:
        if entry.architecture is not None:
            layout = kv_layout(entry.architecture, model=entry.id)
            assert layout.bytes_per_token > 0
            assert kv_cache_bytes(entry.architecture, 1000, block_size=16) > 0


# --- CLI -------------------------------------------------------------------------------


def test_cli_table() -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--context", "8k"])
    assert result.exit_code == 0, result.output
    assert "131,072 B (128 KiB)" in result.output
    assert "8,000" in result.output


@pytest.mark.parametrize(("engine", "blocks", "concurrency"), [
    # H100-SXM as nvidia-smi reports it: int(81,559 MiB x 0.92) - 16.06e9 - 2 GiB
    # = 60,471,661,537 B -> 28,835 blocks of 16 x 131,072 B; 8Ki needs 512 of them: 56.32x
    ("vllm@0.21", "28,835", "56.32x"),
    # v0.34 (the default): min(85,520,809,984 x 1.0, that - margin max(1, 0.75 x 2) GiB)
    # - 16.06e9 - 2 GiB = 65,702,713,600 B -> 7,832 blocks of 64 x 131,072 = 8,388,608 B
    # (32 layer segments of 7,832 x 256 KiB = 979 whole 2 MiB granules each); 8Ki needs 128
    # of them: 61.19x
    ("vllm", "7,832", "61.19x"),
    # before v0.21 the default utilization is 0.9: 58,761,245,337 B -> 28,019 blocks, 54.72x
    ("vllm@0.20", "28,019", "54.72x")])
def test_cli_gpu_fit_table(engine: str, blocks: str, concurrency: str) -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--gpu", "h100",
                                 "--context", "8Ki", "--engine", engine])
    assert result.exit_code == 0, result.output
    assert blocks in result.output and concurrency in result.output
    assert "largest context" in result.output


def test_cli_json_keys() -> None:
    result = runner.invoke(
        app,
        [
            "kvmem",
            "estimate",
            "-m",
            "deepseek-v3",
            "--context",
            "1k,32k",
            "--kv-memory",
            "40GiB",
            "--engine",
            "vllm@0.21",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["bytes_per_token"] == 70_272
    assert [r["context"] for r in data["contexts"]] == [1000, 32000]
    # vLLM v0.21 on Hopper (assumed without --gpu), bf16 cache: FlashAttention MLA takes the
    # default 16-token blocks (PR #35122; FlashMLA's forced 64 to v0.17): a page is
    # 16 x 576 x 2 B = 18,432 B per layer, and a block id spans all 61 layers.
    assert data["block_size"] == data["engine"]["block_size"] == 16
    assert data["gpu"]["num_blocks"] == (40 * GiB) // 18_432 // 61 == 38_199
    row = data["contexts"][1]
    assert row["paged_sequence_bytes"] == 500 * 64 * 70_272 == 2000 * 16 * 70_272
    assert set(row) >= {"sequence_bytes", "batch_bytes", "max_concurrency", "fits", "decode"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["-m", "llama-3.1-8x"], "did you mean", id="unknown-model"),
        pytest.param(["-m", "llama-3.1-8b", "--gpu", "H1000"], "did you mean", id="unknown-gpu"),
        pytest.param(["-m", "llama-3.1-8b", "--gpu-memory", "80G"], "ambiguous", id="unit"),
        pytest.param(["-m", "llama-3.1-8b", "--gpu-memory", "0GB"], "greater than zero", id="zero"),
        pytest.param(["-m", "llama-3.1-8b", "--context", "0"], "positive", id="zero-context"),
        pytest.param(["-m", "llama-3.1-8b", "--batch", "-1"], "--batch", id="neg-batch"),
        pytest.param(["-m", "llama-3.1-8b", "--block-size", "0"], "--block-size", id="block"),
        pytest.param(["-m", "gpt-4o"], "no architecture", id="no-arch"),
        pytest.param(["-m", "llama-3.1-8b", "--weights-dtype", "bf61"], "did you mean", id="wdt"),
        pytest.param(["-m", "llama-3.1-8b", "--tp", "0"], "--tp", id="tp0"),
        pytest.param(
            ["-m", "llama-3.1-8b", "--gpu", "h100", "--gpu-memory", "80GB"],
            "not both",
            id="gpu-twice",
        ),
        pytest.param(
            ["-m", "llama-3.1-8b", "--gpu", "h100", "--gpu-util", "1.5"], "--gpu-util", id="util"
        ),
        pytest.param(["-m", "llama-3.1-8b", "--gpu", "h100", "--flops", "1"],
                     "--flops 1 is below 1e9: peak FLOP/s runs from 1e9", id="flops-1"),
        pytest.param(["-m", "llama-3.1-8b", "--gpu", "h100", "--flops", "1e19"],
                     "beyond 10^18", id="flops-huge"),
        pytest.param(["-m", "llama-3.1-8b", "--context", "1k,,2k"],
                     "--context '1k,,2k' has an empty item", id="context-empty-item"),
        pytest.param(["-m", "llama-3.1-8b", "--context", "1k,"],
                     "has an empty item", id="context-trailing-comma"),
    ],
)
def test_cli_bad_input_one_line(args: list[str], message: str) -> None:
    result = runner.invoke(app, ["kvmem", "estimate", *args])
    assert result.exit_code in (1, 2)
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_cli_plot(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "mem.png"
    args = [
        "kvmem",
        "estimate",
        "-m",
        "gemma-3-27b",
        "--context",
        "1k,32k",
        "--gpu",
        "H100",
        "--plot",
        str(target),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    again = runner.invoke(app, args)
    assert again.exit_code == 2 and "--force" in again.stderr
    assert runner.invoke(app, [*args, "--force"]).exit_code == 0
    assert [p.name for p in tmp_path.iterdir()] == ["mem.png"]  # no temp file left


def test_kvmem_loads_no_tokenizer_library() -> None:
    code = (
        "import sys\n"
        "from tokcost.cli.app import app\n"
        "app(['kvmem', 'estimate', '-m', 'llama-3.1-8b'], standalone_mode=False)\n"
        "heavy = {'numpy', 'tiktoken', 'tokenizers', 'sentencepiece', 'matplotlib', 'regex'}\n"
        "print('LOADED', sorted(heavy & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "LOADED []" in done.stdout


def test_gpu_catalog_units() -> None:
    cat = load_catalog()
    assert cat.resolve_gpu("H100").memory_bytes == 81_559 * 2**20  # as nvidia-smi reports
    assert cat.resolve_gpu("l4").memory_bytes == 23_034 * 2**20
    assert cat.resolve_gpu("rtx 4090").bandwidth_bytes_per_s == 1008 * 10**9
    assert math.isclose(cat.resolve_gpu("h100").bf16_flops or 0, 989e12)


# --- properties ------------------------------------------------------------------------

MODELS = ["llama-3.1-8b", "gemma-2-9b", "gpt-oss-20b", "deepseek-v3", "qwen3-next-80b-a3b"]


@settings(max_examples=60, deadline=None)
@given(
    model=st.sampled_from(MODELS),
    n=st.integers(1, 300_000),
    block=st.sampled_from([1, 8, 16, 32]),
)
def test_paged_cache_properties(model: str, n: int, block: int) -> None:
    a = arch(model)
    layout = kv_layout(a)
    exact = kv_cache_bytes(a, n)
    paged = kv_cache_bytes(a, n, block_size=block)
    # paging never holds less, and at most one extra block per token-caching layer
    # (two for sliding layers, whose window straddles block edges)
    assert exact <= paged <= exact + 2 * block * layout.bytes_per_token
    # more tokens never need less memory
    assert kv_cache_bytes(a, n + 1, block_size=block) >= paged
    if block == 1:
        assert paged == exact


@settings(max_examples=40, deadline=None)
@given(kv_gib=st.integers(1, 200), context=st.integers(1, 200_000))
def test_concurrency_matches_vllm_formula(kv_gib: int, context: int) -> None:
    layout = kv_layout(arch("llama-3.1-70b"))
    fit = gpu_fit(layout, kv_memory=kv_gib * GiB)
    assert fit.num_blocks == (kv_gib * GiB) // (16 * 327_680)
    assert max_concurrency(layout, fit, context) == fit.num_blocks / math.ceil(context / 16)
    best = largest_context(layout, fit, batch=1, limit=10**8)
    assert best == fit.cache_tokens  # uniform models: the pool is the limit


def test_zero_reserve_is_allowed() -> None:
    result = runner.invoke(
        app,
        [
            "kvmem",
            "estimate",
            "-m",
            "llama-3.1-8b",
            "--gpu-memory",
            "80GiB",
            "--reserve",
            "0",
            "--engine",
            "vllm@0.21",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    gpu = json.loads(result.stdout)["gpu"]
    assert gpu["reserve_bytes"] == 0
    assert gpu["available_kv_bytes"] == int(80 * GiB * 0.92) - 16_060_000_000  # v0.21's 0.92
