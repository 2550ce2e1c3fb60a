"""vLLM's --kv-cache-dtype-skip-layers (issue 28, part 2): the listed layers cache in the model's
dtype ("auto", vllm/model_executor/layers/attention/attention.py, PR #33695, v0.19 on). Pages
that differ in layers of one type make one group whose page is the sum of the layers' own
(UniformTypeKVCacheSpecs); otherwise smaller pages grow by whole blocks
(unify_kv_cache_spec_page_size, vllm/v1/core/kv_cache_utils.py). Expected figures are worked
out here from the heads and head sizes of each config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import tokcost
from tokcost.cli.app import app
from tokcost.errors import UsageError
from tokcost.memory.engines.vllm import VllmPlan

runner = CliRunner()
GiB = 1024**3
BUDGET = 20 * GiB
FIXTURES = Path(__file__).parent / "fixtures" / "hf_configs_families"


def estimate(model: str, **options: Any) -> tokcost.KvResult:
    options.setdefault("engine", "vllm@0.21")  # the block sizes below are v0.21's (16)
    return tokcost.estimate_memory(tokcost.KvRequest.of(model=model, kv_memory="20GiB",
                                                        **options))


def test_llama_8b_keeps_its_first_and_last_layers_in_bf16() -> None:
    """Llama-3.1-8B: 8 kv heads x 128 x (K + V) = 2,048 B per layer in fp8, 4,096 B in bf16."""
    r = estimate("llama-3.1-8b", kv_dtype="fp8", kv_cache_dtype_skip_layers="0,31",
                 contexts="8k")
    assert r.bytes_per_token == 30 * 2048 + 2 * 4096 == 69_632
    block = 16 * 69_632  # one group; a block id spans every layer's own page
    assert isinstance(r.plan, VllmPlan) and r.plan.block_bytes == block == 1_114_112
    assert [(g.kind, g.layers, g.block_size) for g in r.engine.groups] == [("full", 32, 16)]
    blocks = BUDGET // block
    assert r.engine.num_blocks == blocks == 19_275
    assert r.fit is not None and r.fit.page_bytes == block
    assert r.engine.cache_tokens == int(blocks / 500 * 8000) == 308_400  # 500 blocks of 16
    plain = estimate("llama-3.1-8b", kv_dtype="fp8", contexts="8k")
    assert plain.engine.num_blocks == BUDGET // (32 * 16 * 2048) == 20_480


def test_skipping_into_the_same_dtype_changes_nothing() -> None:
    skip = estimate("llama-3.1-8b", kv_dtype="bf16", kv_cache_dtype_skip_layers="0 31")
    plain = estimate("llama-3.1-8b", kv_dtype="bf16")
    assert skip.engine.num_blocks == plain.engine.num_blocks
    assert skip.bytes_per_token == plain.bytes_per_token
    assert skip.engine.groups == plain.engine.groups


def test_gemma3_sliding_layers_in_bf16_double_the_full_block() -> None:
    """gemma-3-27b: 16 kv heads x 128: 4,096 B per layer in fp8, 8,192 B in bf16. Its 52
    sliding pages (16 x 8,192) are twice the 10 full ones (16 x 4,096): the full layers' block
    grows to 32, one page of 131,072 B; groups as in bf16 (52 sliding + 8 padding, 10 full)."""
    r = estimate("gemma-3-27b", kv_dtype="fp8", kv_cache_dtype_skip_layers="sliding_window",
                 contexts="32k")
    assert r.bytes_per_token == 10 * 4096 + 52 * 8192 == 466_944
    groups = [(g.kind, g.slots, g.block_size, g.page_bytes) for g in r.engine.groups]
    assert groups == [("sliding", 10, 16, 131_072)] * 6 + [("full", 10, 32, 131_072)]
    assert sum(g.layers for g in r.engine.groups if g.kind == "sliding") == 52
    assert r.engine.num_blocks == BUDGET // (131_072 * 10) == 16_384
    # per request: full cdiv(32,000, 32) = 1,000; sliding 6 x (cdiv(1,023 + 8,192, 16) + 1)
    assert r.engine.settings["blocks_per_request"] == 1000 + 6 * 577
    assert r.plan is not None and r.plan.block_size == 16


def test_gpt_oss_sliding_window() -> None:
    """gpt-oss-120b: 8 kv heads x 64: 1,024 B per layer in fp8, 2,048 B in bf16; 18 + 18."""
    r = estimate("gpt-oss-120b", kv_dtype="fp8", kv_cache_dtype_skip_layers="sliding_window",
                 contexts="128k")
    assert r.bytes_per_token == 18 * 1024 + 18 * 2048 == 55_296
    assert [(g.kind, g.layers, g.block_size, g.page_bytes) for g in r.engine.groups] == [
        ("sliding", 18, 16, 32_768), ("full", 18, 32, 32_768)]
    assert r.engine.num_blocks == BUDGET // (32_768 * 18) == 36_408


def test_one_full_layer_in_bf16_splits_gemma3_into_one_layer_groups() -> None:
    """Layer 5 (full) in bf16 beside fp8 full layers: two full specs (block 16 and, after
    unifying, 32) and the sliding one; the smallest spec has one layer, so vLLM's groups have
    one layer each (_get_kv_cache_groups_uniform_page_size)."""
    r = estimate("gemma-3-27b", kv_dtype="fp8", kv_cache_dtype_skip_layers="5", contexts="32k")
    assert len(r.engine.groups) == 62 and {g.slots for g in r.engine.groups} == {1}
    assert {g.block_size for g in r.engine.groups if g.kind == "full"} == {16, 32}


def test_hybrid_manager_off_makes_one_group_of_mixed_pages() -> None:
    r = estimate("gemma-3-27b", kv_dtype="fp8", kv_cache_dtype_skip_layers="sliding_window",
                 hybrid_manager=False, contexts="32k")
    assert [(g.kind, g.layers) for g in r.engine.groups] == [("full", 62)]
    assert r.engine.num_blocks == BUDGET // (16 * 466_944)


def test_pipeline_stages_sum_their_own_layers() -> None:
    """pp 2: layers 0-15 (0, 1, 2 in bf16) and 16-31 (31); the first stage sets the pool."""
    r = estimate("llama-3.1-8b", kv_dtype="fp8", kv_cache_dtype_skip_layers="0,1,2,31", pp=2)
    first = 16 * (13 * 2048 + 3 * 4096)
    assert isinstance(r.plan, VllmPlan) and r.plan.block_bytes == first
    assert r.engine.num_blocks == BUDGET // first
    # Per GPU: the first stage's 13 fp8 + 3 bf16 layers (the whole model's would be
    # 28 x 2,048 + 4 x 4,096 = 73,728; review finding 2)
    assert r.bytes_per_token == 13 * 2048 + 3 * 4096 == first // 16


def test_the_note_names_the_layers_kept_in_the_model_dtype() -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--kv-dtype", "fp8",
                                 "--kv-cache-dtype-skip-layers", "31,0", "--context", "8k"])
    assert result.exit_code == 0, result.output
    assert ("note: --kv-skip-layers: layers 0, 31 cache in bf16 (the model's dtype), the other "
            "30 in fp8") in result.output
    assert "bytes per token: 69,632 B" in result.output
    sliding = runner.invoke(app, ["kvmem", "estimate", "-m", "gemma-3-27b", "--kv-dtype", "fp8",
                                  "--kv-skip-layers", "sliding_window", "--context", "8k"])
    assert "its 52 sliding-window layers cache in bf16" in sliding.output, sliding.output


def test_releases_before_v0_19_refuse_the_flag() -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--kv-dtype", "fp8",
                                 "--engine", "vllm@0.18", "--kv-skip-layers", "0"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "came in v0.19 (PR #33695)" in lines[0], result.output
    assert "vllm@0.19" in lines[0]
    ok = estimate("llama-3.1-8b", kv_dtype="fp8", kv_cache_dtype_skip_layers="0",
                  engine="vllm@0.19")
    assert ok.bytes_per_token == 31 * 2048 + 4096


def test_mla_layers_read_the_list_from_v0_26() -> None:
    """DeepSeek-V3 (PR #47309, MLAAttention): 61 layers of kv_lora_rank 512 + rope 64 = 576
    values a token: 576 B in fp8, 1,152 B for the listed layers in bf16; every spec is MLA with
    one block, so one group of summed pages. The block: FlashMLA's 64 for the fp8 cache on
    Hopper, raised by _align_heterogeneous_kv_block_size (PR #42890, v0.25 on): a token is
    2 x 576 x 1 B in fp8 and 2 x 576 x 2 B in bf16 (FullAttentionSpec of one 576-wide head), so
    64 x cdiv(2,304 x 64, 64 x 1,152) = 64 x 2 = 128."""
    r = estimate("deepseek-v3", kv_dtype="fp8", kv_cache_dtype_skip_layers="0,1,2",
                 engine="vllm@0.26", contexts="8k")
    assert r.bytes_per_token == 58 * 576 + 3 * 1152 == 36_864
    block = 128 * 36_864
    assert isinstance(r.plan, VllmPlan) and r.plan.block_size == 128
    assert r.plan.block_bytes == block == 4_718_592
    assert [(g.kind, g.layers, g.block_size) for g in r.engine.groups] == [("mla", 61, 128)]
    assert r.engine.num_blocks == BUDGET // block == 4_551
    # v0.21 on: int(concurrency x max_model_len), a request of 8,000 tokens holding cdiv(8,000,
    # 128) = 63 blocks
    assert r.engine.cache_tokens == int(4_551 / 63 * 8000) == 577_904
    plain = estimate("deepseek-v3", kv_dtype="fp8", engine="vllm@0.26", contexts="8k")
    assert plain.engine.num_blocks == BUDGET // (64 * 61 * 576) == 9_549


def test_a_skipped_fp8_ds_mla_layer_is_paged_in_bf16_beside_its_indexer() -> None:
    """DeepSeek-V3.2: a listed layer's spec gets cache_dtype_str "auto" (PR #47309), so 576 x 2
    = 1,152 B instead of fp8_ds_mla's 656; the indexer cache (132 B) is its own layer and stays.
    The block: FlashMLASparse's 64, raised to 128 as for DeepSeek-V3 (fp8_ds_mla counts as one
    byte a value in _align_heterogeneous_kv_block_size's FullAttentionSpec)."""
    folder = str(FIXTURES / "deepseek-v3.2-exp")
    result = runner.invoke(app, ["kvmem", "estimate", "--config", folder, "--kv-dtype",
                                 "fp8_ds_mla", "--kv-skip-layers", "0,1,2", "--engine", "vllm@0.26",
                                 "--kv-memory", "20GiB", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["bytes_per_token"] == 58 * (656 + 132) + 3 * (1152 + 132) == 49_556
    assert len(out["engine"]["groups"]) == 1 and out["engine"]["block_size"] == 128
    assert out["engine"]["num_blocks"] == BUDGET // (128 * 49_556) == 3_385


@pytest.mark.parametrize("engine", ["vllm@0.21", "vllm@0.25"])
def test_releases_before_v0_26_refuse_it_for_mla(engine: str) -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "deepseek-v3", "--kv-dtype", "fp8",
                                 "--engine", engine, "--kv-skip-layers", "0,1,2"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "PR #47309" in lines[0], result.output
    assert "use --engine vllm@0.26 or later" in lines[0]


def test_mla_layers_do_not_read_sliding_window() -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "deepseek-v3", "--kv-dtype", "fp8",
                                 "--engine", "vllm@0.26", "--kv-skip-layers", "sliding_window"])
    assert result.exit_code == 2 and "no sliding-window layers" in result.output, result.output


@pytest.mark.parametrize(("model", "args", "fragment"), [
    ("llama-3.1-8b", ["--kv-skip-layers", "32"], "has no layer 32 (its cached layers are 0 to 31"),
    ("llama-3.1-8b", ["--kv-skip-layers", "sliding_window"], "no sliding-window layers"),
    ("llama-3.1-8b", ["--kv-skip-layers", "0,first"], "give layer indices and/or sliding_window"),
    ("llama-3.1-8b", ["--kv-skip-layers", ","], "give layer indices and/or sliding_window"),
    ("deepseek-v3", ["--kv-skip-layers", "0", "--engine", "vllm@0.25"],
     "MLA layers (vLLM reads the list for them from "
     "PR #47309"),
    ("llama-3.1-8b", ["--kv-skip-layers", "0", "--engine", "sglang"], "vLLM's setting"),
    # nvfp4 pages (8 x 2 x 36 B a token) do not divide bf16's (2,048 B): vLLM before v0.24
    # (PR #45181 pads them) cannot unify them
    ("gpt-oss-120b", ["--kv-dtype", "nvfp4", "--kv-skip-layers", "sliding_window", "--engine",
                      "vllm@0.23"], "vLLM pads attention pages from v0.24 (PR #45181)")])
def test_bad_values_are_one_line(model: str, args: list[str], fragment: str) -> None:
    dtype = [] if "--kv-dtype" in args else ["--kv-dtype", "fp8"]
    result = runner.invoke(app, ["kvmem", "estimate", "-m", model, *dtype, *args,
                                 "--kv-memory", "20GiB"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0], result.output


def test_nvfp4_full_attention_needs_no_common_multiple() -> None:
    """Llama: nvfp4 pages (8 x 2 x 72 B) beside bf16 ones do not divide, but one group holds
    them (UniformTypeKVCacheSpecs), so vLLM starts."""
    r = estimate("llama-3.1-8b", kv_dtype="nvfp4", kv_cache_dtype_skip_layers="0")
    assert r.engine.num_blocks == BUDGET // (16 * (31 * 1152 + 4096))


def test_the_library_refuses_a_typo_on_construction() -> None:
    with pytest.raises(UsageError, match="sliding_window"):
        tokcost.KvRequest.of(model="llama-3.1-8b", kv_cache_dtype_skip_layers="sliding")


def test_an_engine_without_skip_layers_survives_replace() -> None:
    """dataclasses.replace re-runs the checks on the converted (empty) value."""
    import dataclasses

    from tokcost.memory.engines.vllm import Vllm

    engine = dataclasses.replace(Vllm(), kv_cache_dtype_skip_layers=())
    assert engine.kv_cache_dtype_skip_layers == ()
    assert dataclasses.replace(engine).kv_cache_dtype_skip_layers == ()
