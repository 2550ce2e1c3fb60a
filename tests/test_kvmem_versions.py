"""Engine releases (issue 28, part 1) and decode-context / data parallelism (part 2).

``--engine vllm`` follows the newest release tokcost models (v0.21); ``vllm@0.20`` the rules
before it. Expected figures are worked from the rules' sources, cited in
tokcost/memory/engines/vllm.py: gpu_memory_utilization 0.9 -> 0.92 (PR #38284), "GPU KV cache
size" as num_blocks // groups x block (v0.20) or int(concurrency x max_model_len) (v0.21), and
each GPU of a DCP group holding every dcp-th token (PR #23734).
"""

from __future__ import annotations

import json
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
from tokcost.memory.engines.vllm import Vllm, resolve_block_size
from tokcost.memory.kv import kv_layout

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
    ("vllm@0.9", "is older than tokcost models: vLLM v0.11 to v0.21"),
    ("vllm@x", "names no release; write the version as MAJOR.MINOR"),
    ("vllm@", "names no release"),
    ("vllm@0.", "names no release"),
    ("vllm@0.20.x.1", "names no release"),
    ("ideal@0.1", "ideal has no versions"),
    ("sglang@0.4", "is older than tokcost models: SGLang v0.5 (and later"),
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
    new = estimate(model="llama-3.1-8b", gpu_memory="80GiB")
    old = estimate(model="llama-3.1-8b", gpu_memory="80GiB", engine="vllm@0.20")
    assert new.fit is not None and old.fit is not None
    assert new.fit.util == 0.92 and old.fit.util == 0.9
    assert new.fit.available_bytes == int(80 * GiB * 0.92) - weights - reserve
    assert old.fit.available_bytes == int(80 * GiB * 0.9) - weights - reserve
    for engine in ("vllm", "vllm@0.20"):
        given = estimate(model="llama-3.1-8b", gpu_memory="80GiB", engine=engine, gpu_util=0.8)
        assert given.fit is not None
        assert given.fit.available_bytes == int(80 * GiB * 0.8) - weights - reserve


def test_budget_note_says_what_the_release_profiles() -> None:
    new = estimate(model="llama-3.1-8b", gpu="H100")
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
    new, old = estimate(**kw), estimate(**kw, engine="vllm@0.20")
    assert new.engine.cache_tokens == 184_270 and old.engine.cache_tokens == 37_440
    assert "GPU KV cache size: 184,270 tokens" in new.engine.lines
    assert "GPU KV cache size: 37,440 tokens" in old.engine.lines
    assert new.engine.max_concurrency == old.engine.max_concurrency
    assert new.engine.to_dict()["version"].startswith("vLLM v0.21 (the newest release")
    assert old.engine.to_dict()["version"].startswith("vLLM v0.20 (vllm@0.20)")


def test_later_release_follows_the_newest_rules_and_says_so() -> None:
    r = estimate(model="llama-3.1-8b", gpu="H100", engine="vllm@0.27")
    assert r.engine.version.startswith("vLLM v0.27 (v0.21's rules, the newest release tokcost")
    assert r.fit is not None and r.fit.util == 0.92


def test_sglang_keeps_its_own_fraction_and_refuses_vllms_utilization() -> None:
    assert Sglang().release == Release(0, 5)
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
                                 "151519866880", "--json"])
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
    ("vllm@0.18", "bf16", 16, "FlashAttention MLA"), ("vllm", "bf16", 16, "FlashAttention MLA"),
    ("vllm@0.18", "fp8", 64, "FlashMLA's kernel block"), ("vllm", "fp8", 64, "FlashMLA's")])
def test_hopper_mla_block_by_release_and_cache_dtype(
        engine: str, dtype: str, block: int, why: str) -> None:
    """To v0.17 vLLM forces FlashMLA's 64 on Hopper (PR #14451). From v0.18 (PR #35122) it takes
    the selected backend's block: FlashAttention MLA (first on Hopper, PR #24794; bf16/fp16
    caches only) takes the default 16; an fp8 cache falls to FlashMLA, kernel block 64.
    DeepSeek-V3 pages are block x 576 x (2 or 1) B per layer, 61 layers."""
    e = _engine("-m", "deepseek-v3", "--gpu", "H100", "--kv-dtype", dtype, "--engine", engine)
    assert e["block_size"] == block and why in str(e["block_size_reason"])
    assert e["num_blocks"] == 20 * GiB // (block * 576 * (1 if dtype == "fp8" else 2)) // 61


@pytest.mark.parametrize(("engine", "block"), [("vllm@0.18", 32), ("vllm", 32), ("vllm@0.30", 32)])
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
    assert _engine("-m", model, "--gpu", gpu)["block_size"] == block


def test_no_gpu_assumes_hopper_from_v0_18_too() -> None:
    e = _engine("-m", "deepseek-v3", "--kv-dtype", "fp8")
    assert e["block_size"] == 64 and "Hopper assumed" in str(e["block_size_reason"])
    assert _engine("-m", "deepseek-v3")["block_size"] == 16


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


@pytest.mark.parametrize(("engine", "block"), [("vllm@0.11", 1072), ("vllm@0.12", 1088)])
def test_blackwell_head_dim_256_hybrid_steps_of_32_from_v0_12(engine: str, block: int) -> None:
    """Qwen3-Next, fp8 attention (1,024 B per token per layer), bf16 state of 1,097,728 B: steps of
    16 give 16 x 67 = 1,072; FlashInfer's missing 16-token blocks for head_dim 256 on Blackwell
    (PR #27994, merged 2025-11-05) give 32 x cdiv(1,097,728, 32,768) = 32 x 34 = 1,088."""
    e = _engine("-m", "qwen3-next-80b-a3b", "--kv-dtype", "fp8", "--gpu", "B200",
                "--engine", engine)
    assert e["block_size"] == block


@pytest.mark.parametrize(("dtype", "engine", "fragment"), [
    ("fp8_per_token_head", "vllm@0.18", "came after v0.18 (PR #38378"),
    ("int8_per_token_head", "vllm@0.11", "came after v0.18 (PR #38378"),
    ("nvfp4", "vllm@0.18", "came after v0.18 (PR #37332"),
    ("int4_per_token_head", "vllm", "vLLM v0.21 has no int4_per_token_head KV cache: it came "
     "after v0.23 (PR #40835, merged 2026-06-24); use --engine vllm@0.24 or later")])
def test_a_release_without_the_dtype_refuses_it_in_one_line(
        dtype: str, engine: str, fragment: str) -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--kv-dtype", dtype,
                                 "--engine", engine])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0], result.output


@pytest.mark.parametrize(("dtype", "engine"), [
    ("fp8_per_token_head", "vllm@0.19"), ("nvfp4", "vllm"), ("int4_per_token_head", "vllm@0.24"),
    ("fp8_e5m2", "vllm@0.11"), ("fp8_e4m3", "vllm@0.11")])
def test_a_release_with_the_dtype_accepts_it(dtype: str, engine: str) -> None:
    assert _engine("-m", "llama-3.1-8b", "--kv-dtype", dtype, "--engine", engine)["num_blocks"]


def test_fp8_ds_mla_is_accepted_from_v0_11() -> None:
    """DeepSeek-V3.2's fp8_ds_mla layout came with its support (PR #25896, v0.11)."""
    folder = str(V32)
    assert _engine("--config", folder, "--kv-dtype", "fp8_ds_mla", "--engine", "vllm@0.11")[
        "block_size"] == 64


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
