"""Engine releases (issue 28, part 1) and decode-context / data parallelism (part 2).

``--engine vllm`` follows the newest release tokcost models (v0.21); ``vllm@0.20`` the rules
before it. Expected figures are worked from the rules' sources, cited in
tokcost/memory/engines/vllm/releases.py: gpu_memory_utilization 0.9 -> 0.92 (PR #38284), "GPU KV cache
size" as num_blocks // groups x block (v0.20) or int(concurrency x max_model_len) (v0.21), and
each GPU of a DCP group holding every dcp-th token (PR #23734).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import pytest
from typer.testing import CliRunner

import tokcost
from tokcost.catalog.hf_config import architecture_from_config
from tokcost.cli.app import app
from tokcost.errors import UsageError
from tokcost.memory.engines.base import Deployment, Release
from tokcost.memory.engines.sglang import Sglang
from tokcost.memory.engines.vllm import (
    Vllm,
    VllmPlan,
    default_max_num_batched_tokens,
    resolve_block_size,
)
from tokcost.memory.kv import KvLayout, kv_dtype, kv_layout

if TYPE_CHECKING:
    from tokcost.catalog.schema import Gpu

GiB = 2**30
runner = CliRunner()


def estimate(**fields: object) -> tokcost.KvResult:
    return tokcost.estimate_memory(tokcost.KvRequest.of(**fields))


@pytest.mark.parametrize(("given", "release"), [
    ("0.20", Release(0, 20)), ("v0.20.1", Release(0, 20)), ("0.11", Release(0, 11)),
    ("0.27", Release(0, 27)), ("1.0", Release(1, 0))])
def test_release_is_read_as_major_minor(given: str, release: Release) -> None:
    assert Vllm.release_of(given) == release
    assert Vllm(release=given).release == release  # type: ignore[arg-type]


@pytest.mark.parametrize(("engine", "fragment"), [
    ("vllm@0.9", "is older than tokcost models: vLLM v0.11 to v0.34"),
    ("vllm@x", "names no release; write the version as MAJOR.MINOR"),
    ("vllm@", "names no release"),
    ("vllm@0.", "names no release"),
    ("vllm@0.20.x.1", "names no release"),
    ("ideal@0.1", "ideal has no versions"),
    ("sglang@0.3", "is older than tokcost models: SGLang v0.4.6 to v0.5.23 (and later"),
    ("sglang@0.5.x", "write the version as MAJOR.MINOR[.PATCH], e.g. sglang@0.5.23"),
    ("vllmm@0.20", "unknown --engine 'vllmm'")])
def test_bad_release_is_one_line(engine: str, fragment: str) -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--engine", engine])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0], result.output


def test_default_utilization_follows_the_release() -> None:
    """80 GiB, llama-3.1-8b's 16.06e9 B of weights, 2 GiB reserve: x 0.92 from v0.21, x 0.9
    before; a given utilization is the same for both."""
    weights, reserve = 16_060_000_000, 2 * GiB
    new = estimate(model="llama-3.1-8b", gpu_memory="80GiB", engine="vllm@0.21")
    old = estimate(model="llama-3.1-8b", gpu_memory="80GiB", engine="vllm@0.20")
    assert new.fit is not None and old.fit is not None
    assert new.fit.util == 0.92 and old.fit.util == 0.9
    assert new.fit.available_bytes == int(80 * GiB * 0.92) - weights - reserve
    assert old.fit.available_bytes == int(80 * GiB * 0.9) - weights - reserve
    for engine in ("vllm@0.21", "vllm@0.20"):
        given = estimate(model="llama-3.1-8b", gpu_memory="80GiB", engine=engine, gpu_util=0.8)
        assert given.fit is not None
        assert given.fit.available_bytes == int(80 * GiB * 0.8) - weights - reserve


def test_budget_note_says_what_the_release_profiles() -> None:
    new = estimate(model="llama-3.1-8b", gpu="H100", engine="vllm@0.21")
    old = estimate(model="llama-3.1-8b", gpu="H100", engine="vllm@0.20")
    new_note, old_note = str(new.notes[0]), str(old.notes[0])
    assert "CUDA-graph estimate (from v0.21, PR #30515" in new_note
    assert "gpu_memory_utilization 0.92: vLLM's default from v0.21 (PR #38284" in new_note
    assert "not the CUDA graphs (before v0.21 they are captured after" in old_note
    assert "gpu_memory_utilization 0.9: vLLM's default before v0.21" in old_note
    # --kv-memory bypasses the utilization (vLLM's --kv-cache-memory, PR #21489): no note
    assert not [n for n in estimate(model="llama-3.1-8b", kv_memory="20GiB").notes
                if "gpu_memory_utilization" in str(n)]


def test_logged_tokens_follow_the_release() -> None:
    """gemma-3-27b, 20 GiB: 16,384 blocks in 7 groups of 16 tokens -> v0.20 logs
    16,384 // 7 x 16 = 37,440; v0.21 logs int(16,384 / 11,654 x 131,072) = 184,270."""
    kw = {"model": "gemma-3-27b", "kv_memory": "20GiB", "contexts": "131072"}
    new, old = estimate(**kw, engine="vllm@0.21"), estimate(**kw, engine="vllm@0.20")
    assert new.engine.cache_tokens == 184_270 and old.engine.cache_tokens == 37_440
    assert "GPU KV cache size: 184,270 tokens" in new.engine.lines
    assert "GPU KV cache size: 37,440 tokens" in old.engine.lines
    assert new.engine.max_concurrency == old.engine.max_concurrency
    assert new.engine.to_dict()["version"].startswith("vLLM v0.21 (vllm@0.21)")
    assert old.engine.to_dict()["version"].startswith("vLLM v0.20 (vllm@0.20)")


def test_later_release_follows_the_newest_rules_and_says_so() -> None:
    r = estimate(model="llama-3.1-8b", gpu="H100", engine="vllm@0.37")
    assert r.engine.version.startswith("vLLM v0.37 (sized by v0.34's rules: it is newer than "
                                       "v0.34, the newest release tokcost models)")
    assert r.fit is not None and r.fit.util == 1.0


def test_sglang_keeps_its_own_fraction_and_refuses_vllms_utilization() -> None:
    assert Sglang().release == Release(0, 5, 23)
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "gpt-oss-120b", "--gpu", "H100",
                                 "--engine", "sglang", "--gpu-util", "0.9"])
    assert result.exit_code == 2 and "is vLLM's budget" in result.output


def test_cli_prints_the_release() -> None:
    out = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--engine",
                              "vllm@0.19"]).stdout
    assert "engine vllm: vLLM v0.19 (vllm@0.19); v1 KV cache manager" in out


# --- decode context parallel and data parallel -----------------------------------------------

def test_dcp_multiplies_mla_capacity() -> None:
    """DeepSeek-V3 (61 MLA layers, 576 x 2 B each), TP8, 46.8 GiB (the Kimi-K2 log's figure,
    a Nov 2025 nightly, so under v0.11's rules: FlashMLA's forced 64 on Hopper):
    11,173 blocks of 64 x 70,272 B; DCP 8 keeps the blocks and logs 8 x the tokens, and a
    128,000-token request takes cdiv(16,000, 64) = 250 blocks instead of 2,000."""
    kw = {"model": "deepseek-v3", "kv_memory": "46.8GiB", "tp": 8, "contexts": "128000",
          "engine": "vllm@0.11"}
    one, eight = estimate(**kw), estimate(**kw, dcp=8)
    assert one.engine.num_blocks == eight.engine.num_blocks == 11_173
    assert one.engine.cache_tokens == 11_173 * 64 and eight.engine.cache_tokens == 11_173 * 512
    assert eight.engine.settings["blocks_per_request"] == 250
    assert one.engine.settings["blocks_per_request"] == 2_000
    assert eight.engine.max_concurrency == pytest.approx(11_173 / 250)
    assert eight.fit is not None and eight.fit.cache_tokens == 11_173 * 64 * 8
    assert eight.rows[0].paged_sequence_bytes * 8 == one.rows[0].paged_sequence_bytes
    assert any("decode context parallel 8" in str(n) for n in eight.notes)


def test_dcp_for_gqa_needs_copies_of_each_kv_head() -> None:
    """vllm/config/model.py: dcp <= tp // kv heads. Llama-3.1-8B has 8 kv heads: TP8 has one
    copy of each, TP16 would have two (but 32 query heads / 16 GPUs is fine)."""
    with pytest.raises(UsageError, match=r"at most tp // kv heads = 8 // 8 = 1"):
        estimate(model="llama-3.1-8b", kv_memory="4GiB", tp=8, dcp=2)
    two = estimate(model="llama-3.1-8b", kv_memory="4GiB", tp=16, dcp=2, contexts="8192")
    one = estimate(model="llama-3.1-8b", kv_memory="4GiB", tp=16, contexts="8192")
    assert two.engine.settings["blocks_per_request"] * 2 == one.engine.settings[
        "blocks_per_request"]


@pytest.mark.parametrize(("args", "fragment"), [
    (["--tp", "4", "--dcp", "3"], "--dcp 3 must divide --tp 4"),
    (["--tp", "8", "--dcp", "8", "--engine", "sglang"], "modelled for vLLM; use --engine vllm"),
    (["--tp", "8", "--dcp", "8", "--engine", "ideal"], "modelled for vLLM"),
    (["--dcp", "0"], "must be a positive integer")])
def test_dcp_refusals_are_one_line(args: list[str], fragment: str) -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "deepseek-v3", *args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0], result.output


def test_dcp_is_refused_for_sliding_layers() -> None:
    with pytest.raises(UsageError, match="modelled for full-attention and MLA layers"):
        estimate(model="gpt-oss-120b", kv_memory="20GiB", tp=8, dcp=2)


def test_data_parallel_engines_each_hold_a_cache() -> None:
    one = estimate(model="llama-3.1-8b", kv_memory="20GiB", contexts="8192")
    four = estimate(model="llama-3.1-8b", kv_memory="20GiB", contexts="8192", dp=4)
    assert one.engine.max_concurrency == four.engine.max_concurrency  # per engine
    conc = one.engine.max_concurrency
    assert conc is not None
    assert any(f"{4 * conc:,.2f}x requests of 8,192 tokens in all" in str(n)
               for n in four.notes)
    data = json.loads(runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--dp", "4",
                                          "--dcp", "1", "--json"]).stdout)
    assert (data["dp"], data["dcp"]) == (4, 1)


def test_dcp_is_refused_under_a_cache_policy() -> None:
    with pytest.raises(UsageError, match="not under"):
        estimate(model="deepseek-v3", kv_memory="40GiB", tp=8, dcp=8, evict="window:1024")


def test_kv_cache_memory_is_vllms_flag_for_the_budget() -> None:
    """vLLM's --kv-cache-memory (PR #21489) sizes the cache in bytes, whatever the utilization:
    151,519,866,880 B (the value in the PR's own log) // 2 MiB blocks = 72,250."""
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--kv-cache-memory",
                                 "151519866880", "--engine", "vllm@0.21", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["engine"]["num_blocks"] == 151_519_866_880 // 2**21


# --- block sizes and KV dtypes by release (issue 28, part 1) ----------------------------------

def _engine(*args: str) -> dict[str, object]:
    result = runner.invoke(app, ["kvmem", "estimate", *args, "--kv-memory", "20GiB", "--json"])
    assert result.exit_code == 0, result.output
    engine: dict[str, object] = json.loads(result.stdout)["engine"]
    return engine


@pytest.mark.parametrize(("engine", "block", "why"), [
    ("vllm@0.11", 128, "CUTLASS MLA"), ("vllm@0.14", 128, "CUTLASS MLA"),
    ("vllm@0.15", 64, "FlashInfer MLA"), ("vllm@0.17", 64, "FlashInfer MLA")])
def test_blackwell_mla_block_follows_the_default_backend_of_the_release(
        engine: str, block: int, why: str) -> None:
    """vllm/platforms/cuda.py: CUTLASS MLA (128-token blocks, PR #21626) was Blackwell's default
    MLA backend until PR #32615 (merged 2026-01-19) made it FlashInfer MLA (64): v0.15 on.
    DeepSeek-V3 pages are block x 1,152 B per layer, 61 layers."""
    e = _engine("-m", "deepseek-v3", "--gpu", "B200", "--engine", engine)
    assert e["block_size"] == block and why in str(e["block_size_reason"])
    assert e["num_blocks"] == 20 * GiB // (block * 1152) // 61


@pytest.mark.parametrize(("engine", "dtype", "block", "why"), [
    ("vllm@0.11", "bf16", 64, "FlashMLA"), ("vllm@0.17", "bf16", 64, "FlashMLA"),
    ("vllm@0.17", "fp8", 64, "FlashMLA"),
    ("vllm@0.18", "bf16", 16, "FlashAttention MLA"), ("vllm@0.33", "bf16", 16, "FlashAttention MLA"),
    ("vllm@0.18", "fp8", 64, "FlashMLA's kernel block"), ("vllm@0.33", "fp8", 64, "FlashMLA's"),
    ("vllm", "bf16", 64, "DEFAULT_BLOCK_SIZE"), ("vllm", "fp8", 64, "DEFAULT_BLOCK_SIZE")])
def test_hopper_mla_block_by_release_and_cache_dtype(
        engine: str, dtype: str, block: int, why: str) -> None:
    """To v0.17 vLLM forces FlashMLA's 64 on Hopper (PR #14451). From v0.18 (PR #35122) it takes
    the selected backend's block: FlashAttention MLA (first on Hopper, PR #24794; bf16/fp16
    caches only) takes the default 16; an fp8 cache falls to FlashMLA, kernel block 64.
    DeepSeek-V3 pages are block x 576 x (2 or 1) B per layer, 61 layers."""
    e = _engine("-m", "deepseek-v3", "--gpu", "H100", "--kv-dtype", dtype, "--engine", engine)
    assert e["block_size"] == block and why in str(e["block_size_reason"])
    assert e["num_blocks"] == 20 * GiB // (block * 576 * (1 if dtype == "fp8" else 2)) // 61


@pytest.mark.parametrize(("engine", "block"), [("vllm@0.18", 32), ("vllm@0.33", 32), ("vllm@0.30", 32)])
def test_blackwell_mla_block_is_flashinfer_mlas_smallest_from_v0_18(engine: str, block: int) -> None:
    """From v0.18 FlashInfer MLA (kernel blocks [32, 64], mla/flashinfer_mla.py) no longer
    forces 64: the default 16 is not among its kernel blocks, so the smallest, 32, is taken."""
    e = _engine("-m", "deepseek-v3", "--gpu", "B200", "--engine", engine)
    assert e["block_size"] == block and "FlashInfer MLA's smallest" in str(e["block_size_reason"])
    assert e["num_blocks"] == 20 * GiB // (block * 1152) // 61


@pytest.mark.parametrize(("engine", "block"), [("vllm@0.17", 64), ("vllm@0.18", 16), ("vllm", 16)])
def test_a_given_block_is_kept_from_v0_18(engine: str, block: int) -> None:
    """--block-size 16 on Hopper: forced up to FlashMLA's 64 to v0.17; from v0.18
    update_block_size_for_backend keeps a given block and the selector picks a backend whose
    kernels take it (PR #35122)."""
    e = _engine("-m", "deepseek-v3", "--gpu", "H100", "--block-size", "16", "--engine", engine)
    assert e["block_size"] == block


@pytest.mark.parametrize(("model", "gpu", "block"), [
    ("deepseek-v3", "A100-80GB", 16), ("llama-3.1-8b", "H100", 16), ("llama-3.1-8b", "B200", 16)])
def test_other_backends_keep_16_from_v0_18(model: str, gpu: str, block: int) -> None:
    """Triton MLA off Hopper and Blackwell, FlashAttention (MultipleOf(16)) and FlashInfer
    ([16, 32, 64]) for other attention all take vLLM's default 16."""
    assert _engine("-m", model, "--gpu", gpu, "--engine", "vllm@0.33")["block_size"] == block


def test_no_gpu_assumes_hopper_from_v0_18_too() -> None:
    e = _engine("-m", "deepseek-v3", "--kv-dtype", "fp8", "--engine", "vllm@0.33")
    assert e["block_size"] == 64 and "Hopper assumed" in str(e["block_size_reason"])
    assert _engine("-m", "deepseek-v3", "--engine", "vllm@0.33")["block_size"] == 16


V32 = Path(__file__).parent / "fixtures" / "hf_configs_families" / "deepseek-v3.2-exp"


@pytest.mark.parametrize(("release", "block"), [("0.14", 64), ("0.17", 64), ("0.21", 64)])
def test_deepseek_v32_sparse_mla_is_64_on_blackwell(release: str, block: int) -> None:
    """DeepSeek-V3.2 (index_topk) forces FlashMLASparse's 64-token blocks on any GPU before v0.18
    (vllm/platforms/cuda.py, PR #25896), where DeepSeek-V3 on Blackwell gets 128 (v0.14) or 64
    (v0.15); from v0.18 (PR #35122) an fp8_ds_mla cache still gets FlashMLASparse (FlashInfer
    MLA sparse takes no fp8_ds_mla), whose one kernel block is 64."""
    arch = architecture_from_config(json.loads((V32 / "config.json").read_text()),
                                    where="config.json")
    dep = Deployment(layout=kv_layout(arch, "fp8_ds_mla"),
                     gpu=cast("Gpu", SimpleNamespace(architecture="blackwell")))
    got, why = resolve_block_size(dep.layout, dep, Vllm.release_of(release))
    assert got == block
    assert ("FlashMLASparse" in str(why)) == (block == 64)


@pytest.mark.parametrize(("engine", "block"), [
    ("vllm@0.11", 1072), ("vllm@0.12", 1088), ("vllm@0.17", 1088), ("vllm@0.18", 1072),
    ("vllm@0.33", 1072), ("vllm", 1088)])
def test_blackwell_head_dim_256_hybrid_steps_of_32_from_v0_12_to_v0_17(
        engine: str, block: int) -> None:
    """Qwen3-Next, fp8 attention (1,024 B per token per layer), bf16 state of 1,097,728 B: steps of
    16 give 16 x 67 = 1,072; FlashInfer's missing 16-token blocks for head_dim 256 on Blackwell
    (PR #27994, merged 2025-11-05) give 32 x cdiv(1,097,728, 32,768) = 32 x 34 = 1,088, in
    HybridAttentionMambaModelConfig of v0.12 to v0.17 only: v0.18's has no such branch. v0.34's
    default block of 64 steps in 64 (PR #37467's max(kernel block, block)): 64 x 17 = 1,088."""
    e = _engine("-m", "qwen3-next-80b-a3b", "--kv-dtype", "fp8", "--gpu", "B200",
                "--engine", engine)
    assert e["block_size"] == block


@pytest.mark.parametrize(("engine", "given", "block"), [
    ("vllm@0.19", 64, 1072), ("vllm@0.20", 64, 1088), ("vllm", 64, 1088),
    ("vllm@0.19", 32, 1072), ("vllm@0.20", 32, 1088), ("vllm@0.20", 2048, 2048)])
def test_hybrid_block_steps_in_the_given_block_from_v0_20(
        engine: str, given: int, block: int) -> None:
    """Qwen3-Next on H100, fp8 attention (1,024 B a token), state 1,097,728 B, --block-size given:
    to v0.19 HybridAttentionMambaModelConfig steps in 16 whatever the block, 16 x cdiv(1,097,728,
    16,384) = 16 x 67 = 1,072; from v0.20 (PR #37467) _align_hybrid_block_size steps in
    max(FlashAttention's 16, the block): 64 x cdiv(1,097,728, 65,536) = 64 x 17 = 1,088 and
    32 x 34 = 1,088. A block above the need is kept."""
    e = _engine("-m", "qwen3-next-80b-a3b", "--kv-dtype", "fp8", "--gpu", "H100",
                "--block-size", str(given), "--engine", engine)
    assert e["block_size"] == block
    assert ("PR #37467" in str(e["block_size_reason"])) == (block == 1088)


@pytest.mark.parametrize(("dtype", "engine", "fragment"), [
    # vllm/config/cache.py CacheDType: v0.19's literal ends at fp8_ds_mla; v0.20's adds the
    # per-token-head layouts and nvfp4; int4_per_token_head is first listed in v0.25's.
    ("fp8_per_token_head", "vllm@0.19", "is a vLLM cache dtype from v0.20 (PR #38378)"),
    ("int8_per_token_head", "vllm@0.11", "is a vLLM cache dtype from v0.20 (PR #38378)"),
    ("nvfp4", "vllm@0.19", "is a vLLM cache dtype from v0.20 (PR #37332"),
    ("int4_per_token_head", "vllm@0.24", "vLLM v0.24 has no int4_per_token_head KV cache: it is a "
     "vLLM cache dtype from v0.25 (PR #40835); use --engine vllm@0.25 or later"),
    ("int4_per_token_head", "vllm@0.21", "use --engine vllm@0.25 or later")])
def test_a_release_without_the_dtype_refuses_it_in_one_line(
        dtype: str, engine: str, fragment: str) -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--kv-dtype", dtype,
                                 "--engine", engine])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0], result.output


@pytest.mark.parametrize(("dtype", "engine"), [
    ("fp8_per_token_head", "vllm@0.20"), ("int8_per_token_head", "vllm@0.20"),
    ("nvfp4", "vllm@0.20"), ("int4_per_token_head", "vllm@0.25"),
    ("fp8_e5m2", "vllm@0.11"), ("fp8_e4m3", "vllm@0.11")])
def test_a_release_with_the_dtype_accepts_it(dtype: str, engine: str) -> None:
    assert _engine("-m", "llama-3.1-8b", "--kv-dtype", dtype, "--engine", engine)["num_blocks"]


def test_fp8_ds_mla_is_accepted_from_v0_11() -> None:
    """DeepSeek-V3.2's fp8_ds_mla layout came with its support (PR #25896, v0.11)."""
    folder = str(V32)
    assert _engine("--config", folder, "--kv-dtype", "fp8_ds_mla", "--engine", "vllm@0.11")[
        "block_size"] == 64


# --- v0.22 to v0.34 (issue 28 part 1: --engine vllm is v0.34) ---------------------------------

def test_refusal_words_change_in_v0_22() -> None:
    """kv_cache_utils.py _check_enough_kv_cache_memory: v0.21 says "models's" and only names
    gpu_memory_utilization; v0.22 says "model's" and that the flag also controls CPU memory.
    Llama-3.1-8B, 131,072 tokens of 16-token blocks: 8,192 blocks of 2 MiB = 16 GiB needed;
    1 GiB holds 512 blocks = 8,192 tokens."""
    kw = {"model": "llama-3.1-8b", "kv_memory": "1GiB", "contexts": "131072"}
    old = estimate(**kw, engine="vllm@0.21").engine.refusal
    new = estimate(**kw, engine="vllm@0.22").engine.refusal
    assert old is not None and new is not None
    assert old.startswith("To serve at least one request with the models's max seq len (131072)")
    assert new.startswith("To serve at least one request with the model's max seq len (131072), "
                          "(16.0 GiB KV cache is needed, which is larger than the available KV "
                          "cache memory (1.0 GiB). Based on the available memory, the estimated "
                          "maximum model length is 8192. Try increasing `gpu_memory_utilization` "
                          "(which also controls CPU memory on the CPU backend)")


@pytest.mark.parametrize(("engine", "pp", "sliding_blocks"), [
    # v0.25: cdiv(1,023 + 8,192, 16) + 1 = 577 blocks per sliding group
    ("vllm@0.25", 1, 577),
    # v0.26: max_in_flight_tokens = 2 batches (async scheduling) x 8,192:
    # cdiv(1,023 + 16,384, 16) + 1 = 1,088 + 1 = 1,089
    ("vllm@0.26", 1, 1089),
    # two stages: the V2 model runner (v0.26's default for a dense model that is no Mamba
    # hybrid, _is_default_v2_model_runner_model) keeps pp + 1 = 3 batches:
    # cdiv(1,023 + 24,576, 16) + 1 = 1,600 + 1
    ("vllm@0.26", 2, 1601), ("vllm", 2, 1601)])
def test_sliding_groups_reserve_every_batch_in_flight_from_v0_26(
        engine: str, pp: int, sliding_blocks: int) -> None:
    """Gemma-3-27B: 6 sliding groups and 1 full group; a 131,072-token request holds 8,192
    blocks of 16 in the full group (vllm/config/vllm.py max_in_flight_tokens,
    kv_cache_interface.py SlidingWindowSpec.max_admission_blocks_per_request)."""
    r = estimate(model="gemma-3-27b", kv_memory="20GiB", contexts="131072", engine=engine,
                 max_num_batched_tokens=8192, block_size=16, pp=pp)
    assert r.engine.settings["blocks_per_request"] == 8192 + 6 * sliding_blocks


def test_gpus_of_160_gib_get_16k_batched_tokens_from_v0_28() -> None:
    """arg_utils.py get_batch_defaults: v0.28 gives GPUs of >= 160 GiB 16,384 tokens for vllm
    serve too (B200: 183,359 MiB = 179.06 GiB); H200 (140.4 GiB) keeps 8,192; from v0.33 a GB10
    (compute capability 12.1) stays on the small tier whatever its memory."""
    b200, h200 = 183_359 * 2**20, 143_771 * 2**20
    assert default_max_num_batched_tokens("B200", b200, Release(0, 27))[0] == 8192
    assert default_max_num_batched_tokens("B200", b200, Release(0, 28))[0] == 16384
    assert default_max_num_batched_tokens("H200", h200, Release(0, 34))[0] == 8192
    assert default_max_num_batched_tokens("GB10", 119 * GiB, Release(0, 32))[0] == 8192
    assert default_max_num_batched_tokens("GB10", 119 * GiB, Release(0, 33))[0] == 2048
    e = _engine("-m", "llama-3.1-8b", "--gpu", "B200")
    assert e["max_num_batched_tokens"] == 16384


def test_capacity_is_one_log_line_from_v0_28() -> None:
    kw = {"model": "llama-3.1-8b", "kv_memory": "20GiB", "contexts": "8192", "block_size": 16}
    old = estimate(**kw, engine="vllm@0.27").engine.lines
    new = estimate(**kw, engine="vllm@0.28").engine.lines
    # 20 GiB / 2 MiB = 10,240 blocks; 8,192 tokens take 512: 20.00x, 163,840 tokens
    assert old[1:] == ("GPU KV cache size: 163,840 tokens",
                       "Maximum concurrency for 8,192 tokens per request: 20.00x")
    assert new[1:] == ("GPU KV cache size: 163,840 tokens, Maximum concurrency for 8,192 tokens "
                       "per request: 20.00x",)


def test_null_block_is_held_back_from_the_check_from_v0_29() -> None:
    """8,192 tokens in 16-token blocks: 512 blocks x 2 MiB = exactly 1 GiB. v0.28 starts with
    1 GiB; v0.29 checks 1 GiB - one block (the null block) = 511 blocks = 8,176 tokens."""
    kw = {"model": "llama-3.1-8b", "kv_memory": "1GiB", "contexts": "8192", "block_size": 16}
    assert estimate(**kw, engine="vllm@0.28").engine.refusal is None
    refusal = estimate(**kw, engine="vllm@0.29").engine.refusal
    assert refusal is not None and "estimated maximum model length is 8176" in refusal
    assert estimate(**kw, engine="vllm@0.29").engine.num_blocks == 512  # still counted


def test_v0_34_budget_is_measured_with_a_margin() -> None:
    """H100 (81,559 MiB = 85,520,809,984 B), Llama-3.1-8B (16.06e9 B weights):
    gpu_memory_utilization 1.0; reserve 2 GiB -> margin max(1 GiB, 1.5 GiB) = 1.5 GiB:
    min(M, M - 1.5 GiB) - 16.06e9 - 2 GiB = 65,702,713,600 B; reserve 4 GiB -> margin 3 GiB:
    M - 3 GiB - 16.06e9 - 4 GiB = 61,945,929,728 B; --gpu-util 0.9: ceil(0.9 M) =
    76,968,728,986 binds: - 16.06e9 - 2 GiB = 58,761,245,338 B. Pages of 64 x 4,096 B = 256 KiB,
    32 layers: 8 MiB blocks; 7,832 and 7,384 blocks are whole granules per layer (multiples of
    8), 7,004 is not (7,004 x 256 KiB = 1,751 MiB -> 876 granules x 32 layers = 58,787,364,864 B
    > 58,761,245,338 B): 7,000."""
    M, weights = 81_559 * 2**20, 16_060_000_000
    for kw, avail, blocks in [({}, M - 3 * GiB // 2 - weights - 2 * GiB, 7832),
                              ({"reserve": "4GiB"}, M - 3 * GiB - weights - 4 * GiB, 7384),
                              ({"gpu_util": 0.9}, math.ceil(M * 0.9) - weights - 2 * GiB, 7000)]:
        r = estimate(model="llama-3.1-8b", gpu="H100", **kw)
        assert r.fit is not None and r.fit.available_bytes == avail
        assert r.engine.num_blocks == blocks and avail // 2**23 - blocks in (0, 4)
    assert avail == 58_761_245_338
    r = estimate(model="llama-3.1-8b", gpu="H100")
    assert r.fit is not None and r.fit.util == 1.0
    note = str(r.notes[0])
    assert "gpu_memory_utilization 1.0: vLLM's default from v0.34" in note
    assert "margin of max(1 GiB, 0.75 x that peak; 3 GiB on ROCm)" in note


def test_v0_34_commits_whole_2_mib_granules_per_layer() -> None:
    """Llama-3.1-70B TP4 on H100: 35.3e9 B of weights per GPU; M - 1.5 GiB - 35.3e9 - 2 GiB =
    46,462,713,600 B = 8,862.1 blocks of 80 layers x 64 tokens x 1,024 B = 5,242,880 B. Each
    layer's segment of 8,862 x 65,536 B needs 277 granules of 2 MiB: 80 x 277 x 2 MiB =
    46,472,298,496 B > 46,462,713,600 B; 8,832 blocks (276 granules each, 46,304,329,728 B)
    is the most that fits (ExtensibleKVCache.blocks_within)."""
    r = estimate(model="llama-3.1-70b", gpu="H100", tp=4, contexts="8192")
    assert r.fit is not None and r.fit.available_bytes == 46_462_713_600
    assert 46_462_713_600 // 5_242_880 == 8862 and 80 * 277 * 2**21 > 46_462_713_600
    assert 80 * 276 * 2**21 <= 46_462_713_600
    assert r.engine.num_blocks == 8832
    assert r.engine.lines[:2] == (
        "Available KV cache memory: 44.77 GiB",  # the estimate: M - 35.3e9 - 2 GiB
        "Memory after warmup: ... 8832 KV cache blocks (43.12 GiB) fit within the requested "
        "79.65 GiB.")
    assert r.engine.lines[2].startswith("GPU KV cache size: 565,248 tokens, ")  # 8,832 x 64


def test_v0_34_checks_one_request_again_after_warmup() -> None:
    """L4 (23,034 MiB = 24,153,096,192 B), Llama-3.1-8B: the estimate M - 16.06e9 - 2 GiB =
    5,945,612,544 B holds 40,000 tokens (625 blocks x 8 MiB = 5,242,880,000 B, plus the null
    block); measured, M - 1.5 GiB - 16.06e9 - 2 GiB = 4,334,999,808 B = 516.8 blocks of 8 MiB,
    but 516 x 256 KiB per layer is 130 MiB of granules (32 x 130 MiB > the bytes): 512 blocks,
    and (512 - 1) x 8 MiB = 3.99 GiB < 4.88 GiB: vLLM refuses after warmup
    (kv_cache_planning.py shrink_kv_cache_configs)."""
    r = estimate(model="llama-3.1-8b", gpu="L4", contexts="40000")
    assert r.engine.num_blocks == 512
    refusal = r.engine.refusal
    assert refusal is not None and refusal.startswith(
        "To serve at least one request with the model's max seq len (40000), (4.88 GiB KV cache "
        "is needed, which is larger than the available KV cache memory (3.99 GiB).")
    assert ("The extensible KV cache already takes all device memory left after the model, its "
            "activations, CUDA graphs and warmup; decrease") in refusal
    assert any(line.startswith("Memory after warmup: ... 512 KV cache blocks")
               for line in r.engine.lines)
    # 131,072 tokens fail the first check, on the estimate (no warmup yet)
    long = estimate(model="llama-3.1-8b", gpu="L4", contexts="131072").engine
    assert long.refusal is not None and "left after the model and its activations;" in (
        long.refusal)
    assert not any(line.startswith("Memory after warmup") for line in long.lines)


def test_v0_34_kv_cache_memory_keeps_the_v0_33_sizing() -> None:
    """--kv-cache-memory turns the extensible KV cache off (config/cache.py): the bytes given,
    in 64-token blocks (151,519,866,880 // 8 MiB = 18,062), no granules, no warmup line."""
    r = estimate(model="llama-3.1-8b", kv_memory="151519866880", contexts="8192")
    assert r.engine.num_blocks == 151_519_866_880 // 2**23 == 18_062
    assert not any(line.startswith("Memory after warmup") for line in r.engine.lines)


def test_v0_34_default_block_is_64() -> None:
    """config/cache.py DEFAULT_BLOCK_SIZE = 64 (16 to v0.33), which FlashAttention, FlashInfer
    and the MLA backends take; a linear hybrid's attention block then rises in steps of 64
    (platforms/interface.py: kernel_block_alignment_size = max(kernel block, block_size)):
    Qwen3-Next in fp8 on H100, 1,097,728 B of state over 1,024 B per token: v0.33 16 x 67 =
    1,072, v0.34 64 x cdiv(1,097,728, 65,536) = 64 x 17 = 1,088. (v0.33 with prefix caching,
    vllm serve's default from v0.28, steps in 64 too: FlashInfer GDN's checkpoint grid.)"""
    assert _engine("-m", "llama-3.1-8b", "--gpu", "H100")["block_size"] == 64
    assert _engine("-m", "deepseek-v3", "--gpu", "B200")["block_size"] == 64
    assert _engine("-m", "llama-3.1-8b", "--gpu", "H100", "--block-size", "16")["block_size"] == 16
    hybrid = ["-m", "qwen3-next-80b-a3b", "--kv-dtype", "fp8", "--gpu", "H100"]
    assert _engine(*hybrid, "--engine", "vllm@0.33",
                   "--no-enable-prefix-caching")["block_size"] == 1072
    assert _engine(*hybrid, "--engine", "vllm@0.33")["block_size"] == 1088
    assert _engine(*hybrid, "--no-enable-prefix-caching")["block_size"] == 1088


@pytest.mark.parametrize(("engine", "block"), [
    # to v0.26 steps of 64 off Blackwell: 64 x cdiv(1,097,728, 64 x 1,152) = 64 x 15 = 960
    ("vllm@0.26", 960),
    # v0.27 on, a multiple of 128 on every GPU (platforms/interface.py: TRTLLM/FlashInfer MLA
    # decode kernels): 128 x cdiv(1,097,728, 128 x 1,152) = 128 x 8 = 1,024
    ("vllm@0.27", 1024), ("vllm", 1024)])
def test_mla_linear_hybrid_block_is_a_multiple_of_128_from_v0_27(engine: str, block: int) -> None:
    """An MLA + linear-attention hybrid on Hopper (a made-up layout: 4 MLA layers of 576 x 2 B
    a token, 12 linear layers of a 1,097,728 B state)."""
    layout = KvLayout(layers=("mla",) * 4 + ("linear",) * 12, token_bytes={"mla": 1152},
                      window=None, state_bytes=1_097_728, kv_heads_per_gpu=None,
                      dtype=kv_dtype("bf16"), tp=1)
    dep = Deployment(layout=layout, gpu=cast("Gpu", SimpleNamespace(architecture="hopper")))
    assert resolve_block_size(layout, dep, Vllm.release_of(engine.partition("@")[2] or "0.34")
                              )[0] == block


def test_v0_34_margin_floor_is_3_gib_on_rocm() -> None:
    """extensible_kv_cache.py: KV_CACHE_MARGIN_FLOOR_BYTES = 3 GiB on ROCm (1 GiB on CUDA);
    MI300X (206,141,652,992 B), a 2 GiB reserve: max(3 GiB, 1.5 GiB) = 3 GiB of margin, so
    memory - 3 GiB - weights - 2 GiB."""
    r = estimate(model="llama-3.1-8b", gpu="MI300X")
    assert r.fit is not None and r.fit.margin_bytes == 3 * GiB
    assert r.fit.available_bytes == 206_141_652_992 - 3 * GiB - 16_060_000_000 - 2 * GiB


LLAMA4 = str(Path(__file__).parent / "fixtures" / "hf_configs_families" / "llama-4-scout")


@pytest.mark.parametrize(("engine", "flag", "hybrid", "groups"), [
    ("vllm@0.13", None, False, 1), ("vllm@0.13", "--chunked-hybrid", True, 4),
    ("vllm@0.14", None, True, 4), ("vllm@0.14", "--no-chunked-hybrid", False, 1)])
def test_chunked_local_attention_keeps_the_hybrid_manager_from_v0_14(
        engine: str, flag: str | None, hybrid: bool, groups: int) -> None:
    """VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE: "0" to v0.13 (PR #21761: Llama-4's 36
    chunked layers paged as full ones, one group of 48), "1" from v0.14 (PR #29627: 12 full + 36
    chunked layers in 4 groups of 12)."""
    e = _engine("--config", LLAMA4, "--tp", "8", "--engine", engine, *([flag] if flag else []))
    assert e["hybrid_manager"] is hybrid and len(e["groups"]) == groups  # type: ignore[arg-type]


def test_before_v0_14_the_start_up_check_reads_each_layers_own_spec() -> None:
    """Llama-4 at TP 8 (512 B per token and layer), manager off, 20 GiB, 1,048,576 tokens: the pool
    (48 full layers) holds 20 GiB // (48 x 8 KiB) = 54,613 blocks, under the 65,536 one request
    needs (0.83x). v0.13 checks the layers before unifying them: 12 x 1,048,576 x 512 B + 36 x
    1,024 blocks x 8 KiB = 6.28 GiB, so it starts; v0.14 checks the one group: 24.0 GiB, refused."""
    old = _engine("--config", LLAMA4, "--tp", "8", "--engine", "vllm@0.13", "--context", "1Mi",
                  "--max-num-batched-tokens", "8192")
    assert not old["refuses_to_start"] and old["num_blocks"] == 54_613
    assert f"{old['max_concurrency']:.2f}" == "0.83"
    new = _engine("--config", LLAMA4, "--tp", "8", "--engine", "vllm@0.14", "--context", "1Mi",
                  "--max-num-batched-tokens", "8192", "--no-chunked-hybrid")
    assert new["refuses_to_start"] and "(24.0 GiB KV cache is needed" in str(new["refusal"])


@pytest.mark.parametrize(("engine", "full", "sliding", "block", "blocks"), [
    ("vllm@0.14", 768, 1_536, 16, 97_090), ("vllm@0.19", 768, 1_536, 16, 97_090),
    ("vllm@0.20", 640, 1_280, 16, 116_508), ("vllm", 640, 1_280, 64, 29_127)])
def test_mimo_v_heads_padded_to_k_before_v0_20(engine: str, full: int, sliding: int,
                                               block: int, blocks: int) -> None:
    """MiMo-V2-Flash, K 192 and V 128 (v_head_dim), at TP 4: full layers 4 / 4 = 1 kv head,
    sliding 8 / 4 = 2. Up to v0.19 mimo_v2_flash.py pads V to 192 before the Attention layer
    (no head_size_v): 1 x 2 x 192 x 2 B = 768 B, sliding 1,536 B; from v0.20 (PR #40045) V is
    cached at 128: 1 x (192 + 128) x 2 = 640 B, sliding 1,280 B. Per token, 9 full and 39
    sliding layers: 9 x 768 + 39 x 1,536 = 66,816 B before, 9 x 640 + 39 x 1,280 = 55,680 B."""
    r = estimate(model="mimo-v2-flash", tp=4, kv_memory="20GiB", contexts="32000", engine=engine)
    assert r.layout.token_bytes == {"full": full, "sliding": sliding}
    assert r.bytes_per_token == 9 * full + 39 * sliding
    # A sliding layer's page, block x sliding (the full layers' blocks twice as long match it):
    # 16 x 1,536 = 24,576 B before v0.20, 16 x 1,280 = 20,480 B in v0.20, 64 x 1,280 in v0.34.
    # 9 layers per group: 20 GiB // (24,576 x 9) = 97,090 blocks, // (20,480 x 9) = 116,508,
    # // (81,920 x 9) = 29,127.
    plan = r.plan
    assert isinstance(plan, VllmPlan)
    assert (plan.block_size, plan.page_bytes) == (block, block * sliding)
    assert plan.num_blocks == blocks == 20 * GiB // (block * sliding * 9)
    padded = [str(n) for n in r.notes if "caches V heads padded to K's head size" in str(n)]
    assert len(padded) == (full == 768)


def test_mimo_padded_v_in_skipped_layers_too() -> None:
    """v0.19, fp8 with the sliding layers skipped (kept in bf16): full layers 1 x 2 x 192 x 1 B
    = 384 B, sliding 2 x 2 x 192 x 2 B = 1,536 B, both padded; 9 x 384 + 39 x 1,536 = 63,360 B."""
    r = estimate(model="mimo-v2-flash", tp=4, kv_memory="20GiB", contexts="32000",
                 engine="vllm@0.19", kv_dtype="fp8", kv_cache_dtype_skip_layers="sliding_window")
    assert r.bytes_per_token == 9 * 384 + 39 * 1_536 == 63_360


def test_equal_k_and_v_heads_are_not_padded() -> None:
    """Padding applies only to V narrower than K: llama-3.1-8b's layout is the same in v0.19."""
    old, new = (estimate(model="llama-3.1-8b", kv_memory="20GiB", contexts="8192", engine=e)
                for e in ("vllm@0.19", "vllm@0.20"))
    assert old.bytes_per_token == new.bytes_per_token == 32 * 8 * 2 * 128 * 2


@pytest.mark.parametrize(("release", "cache_dtype", "block"), [
    # Nemotron-3-Nano: a Mamba layer's page = conv 18,432 x 2 B + SSM 524,288 x S B; the
    # attention page per token 2 kv heads x 128 x 2 x 2 B = 1,024 B, so the block is the
    # smallest 16-token step with 1,024 x block >= the Mamba page:
    ("0.12", "float32", 1072),  # no NemotronH hook yet: SSM in bf16, 1,085,440 B -> 67 x 16
    ("0.13", "float32", 2096),  # PR #29978: the config's float32, 2,134,016 B -> 131 x 16
    ("0.19", None, 1072),  # no config value: float16, 2 B like bf16
    ("0.20", None, 2096)])  # PR #39032: float32 by default
def test_nemotron_h_ssm_cache_dtype_by_release(release: str, cache_dtype: str | None,
                                               block: int) -> None:
    from tokcost.catalog.hf_config import architecture_from_config
    from tokcost.memory.engines.base import Deployment
    from tokcost.memory.engines.vllm import Vllm
    from tokcost.memory.kv import kv_layout
    config = {"model_type": "nemotron_h", "hidden_size": 2688, "num_hidden_layers": 52,
              "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
              "mamba_num_heads": 64, "mamba_head_dim": 64, "ssm_state_size": 128,
              "n_groups": 8, "conv_kernel": 4, "num_attention_heads": 32,
              "num_key_value_heads": 2, "head_dim": 128}
    if cache_dtype:
        config["mamba_ssm_cache_dtype"] = cache_dtype
    layout = kv_layout(architecture_from_config(config, where="config.json"))
    plan = Vllm(release=Vllm.release_of(release)).pool(
        Deployment(layout=layout, family="nemotron_h"), 10 * 2**30)
    assert plan.block_size == block


@pytest.mark.parametrize(("engine", "before"), [
    ("sglang@0.5.0", "v0.4.10"),  # PyPI: v0.4.10, then v0.5.0rc0 to rc2, then v0.5.1
    ("sglang@0.4.11", "v0.4.10"),  # the 0.4 line ended at v0.4.10 (.post1, .post2)
    ("sglang@0.5.0.post1", "v0.4.10")])
def test_an_unpublished_release_says_whose_rules_it_follows(engine: str, before: str) -> None:
    version = estimate(model="llama-3.1-8b", engine=engine).engine.version
    assert f"no such release was published: read by {before}'s rules" in version, version
    assert "sglang@0.5.14" in estimate(model="llama-3.1-8b", engine="sglang@0.5.14").engine.version


def test_a_huge_release_number_is_not_called_malformed() -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--engine",
                                 "vllm@99999999999999999999999999999.1"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "write the version as" not in result.output
    assert "<a 29-digit number> names no release (their numbers run to 4 digits)" \
        in result.output, result.output
    assert "9999999999" not in result.output
