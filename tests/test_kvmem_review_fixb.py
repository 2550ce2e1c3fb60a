"""Review findings 2-4 on ``kvmem estimate`` (issue 28): per-GPU figures under --pp, a prompt
longer than its context, llama.cpp's unified cache too small for the batch.

Expected numbers are worked out in each docstring from the engines' arithmetic
(tokcost/memory/engines/*.py cite the source files)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tokcost.cli.app import app

runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["kvmem", "estimate", *args])
    return result.exit_code, result.output


def estimate(*args: str) -> dict:
    code, out = run(*args, "--json")
    assert code == 0, out
    return json.loads(out)


@pytest.mark.parametrize("engine", ["vllm", "vllm@0.21", "sglang", "trtllm", "ideal"])
def test_pp_per_gpu_figures_are_the_fullest_stage(engine: str) -> None:
    """Llama-3.1-8B (32 layers, 8 kv heads x 128 x 2 x bf16 = 4,096 B per layer per token) on
    5 stages: vLLM's get_pp_indices splits 32 as [6, 6, 7, 7, 6], so one GPU holds at most 7
    layers: 7 x 4,096 = 28,672 B per token (not the model's 131,072), and 8,000 tokens take
    8,000 x 28,672 = 229,376,000 B on it, the same as the table's per-sequence column."""
    e = estimate("-m", "llama-3.1-8b", "--pp", "5", "--kv-memory", "20GiB", "--context", "8000",
                 "--engine", engine)
    assert e["per_gpu"] is True
    assert e["bytes_per_token"] == 28_672
    row = e["contexts"][0]
    assert row["sequence_bytes"] == 229_376_000
    assert row["by_layer_kind"] == {"full": 229_376_000}
    assert row["paged_sequence_bytes"] >= row["sequence_bytes"]


def test_pp_vllm_blocks_line_shows_the_stage_slots() -> None:
    """Qwen3-32B, fp8, --tp 4 --pp 2: 64 layers, 2 of 8 kv heads per GPU x 128 x 2 x 1 B =
    512 B per layer per token; a stage holds 32 layers, so 16,384 B per token per GPU. vLLM's
    page is 64 tokens x 512 B = 32,768 B and a block id spans the stage's 32 layer slots:
    floor(12 GiB = 12,884,901,888 / 32,768 / 32) = 12,288 blocks of 1,048,576 B (dividing by the
    model's 64 layers would give 6,144)."""
    code, out = run("-m", "qwen3-32b", "--tp", "4", "--pp", "2", "--kv-dtype", "fp8",
                    "--kv-memory", "12GiB", "--context", "8k")
    assert code == 0, out
    assert "bytes per token per GPU: 16,384 B (16 KiB)" in out
    assert "(32 on the fullest pipeline stage, one GPU)" in out
    assert ("blocks: floor(12,884,901,888 / 32,768 B / 32 layers per group on the fullest "
            "stage) = 12,288 blocks of 1,048,576 B") in out
    e = estimate("-m", "qwen3-32b", "--tp", "4", "--pp", "2", "--kv-dtype", "fp8",
                 "--kv-memory", "12GiB", "--context", "8k")
    assert e["bytes_per_token"] == 16_384 and e["gpu"]["num_blocks"] == 12_288
    row = e["contexts"][0]  # 8,000 tokens x 16,384 B; 125 blocks x 1,048,576 B
    assert row["sequence_bytes"] == row["paged_sequence_bytes"] == 131_072_000


def test_a_prompt_longer_than_every_context_is_refused() -> None:
    """A 1,000,000-token prompt cannot be served at an 8,000-token context: one usage error
    (exit 2) naming both flags, not a 281 s TTFT."""
    code, out = run("-m", "llama-3.1-8b", "-i", "1000000", "--gpu", "H100", "--context", "8k")
    assert code == 2
    assert "--input-tokens 1,000,000 is longer than the longest context, 8,000 tokens" in out
    assert "--context" in out and "Traceback" not in out


def test_a_prompt_longer_than_some_contexts_is_noted() -> None:
    """16,000 prompt tokens fit the 32,000 row but not the 8,000 one: a note names that row."""
    code, out = run("-m", "llama-3.1-8b", "-i", "16000", "--gpu", "H100",
                    "--context", "8k,32k")
    assert code == 0, out
    assert ("note: --input-tokens 16,000 is longer than the context of 8,000: those rows' TTFT "
            "is for a prompt they cannot hold") in out


def test_llamacpp_unified_cache_too_small_for_the_batch_says_why() -> None:
    """llama-server's auto slots (4, one unified cache) with -c = 32,000: the cache holds
    32,000 // 32,000 = 1 request, not 4. The note says so and what holds 4 (-c 128,000, or a
    32,000-cell stream per slot: 4 x 32,000 x 32 layers x 4,096 B = 15.62 GiB), and that the
    largest context is for -c = 4 x it: the largest n with pad(4n, 256) cells of 131,072 B in
    the memory left (test_kvmem_llamacpp_trtllm.py works the H100's out)."""
    args = ("-m", "llama-3.1-8b", "--engine", "llama.cpp", "--batch", "4", "--gpu", "H200",
            "--context", "32k")
    code, out = run(*args)
    assert code == 0, out
    assert ("fits no at 32,000 tokens: the 4 slots share one unified cache of -c cells, and -c "
            "is the context (--context), so it holds 1 request of 32,000 tokens, not 4") in out
    assert "llama-server holds 4 with -c 4 x 32,000 = 128,000, or with --no-kv-unified" in out
    assert "(4 x 32,000 cells = 15.62 GiB, which fits in the memory left)" in out
    e = estimate(*args)
    assert e["contexts"][0]["fits"] is False
    free = e["gpu"]["available_kv_bytes"]
    n = free // (4 * 131_072)
    while -(-4 * n // 256) * 256 * 131_072 > free:
        n -= 1
    n = min(n, 131_072)  # the model's window
    assert e["gpu"]["largest_context"] == n
    assert (f"The largest context for batch 4, {n:,} tokens, is for -c 4 x that context"
            in out)
    streams = estimate(*args, "--no-kv-unified")
    assert streams["contexts"][0]["fits"] is True
    assert streams["gpu"]["largest_context"] == 131_072  # the model's window
    apart = run(*args, "--no-kv-unified")[1]
    assert "unified cache of -c cells, and -c" not in apart
    # the header no longer calls the auto slots unified when --no-kv-unified is given
    assert "4 slots (-np auto: 4), a stream per slot: 32,000 cells per sequence" in apart


def test_llamacpp_batch_past_the_slots_names_parallel() -> None:
    code, out = run("-m", "llama-3.1-8b", "--engine", "llama.cpp", "--batch", "8", "--gpu",
                    "H200", "--context", "32k")
    assert code == 0, out
    assert "8 requests at once need 8 slots, llama-server has 4: give --parallel 8" in out
