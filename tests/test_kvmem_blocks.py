"""vLLM block sizes by release that hang on the backend vLLM selects (issue 28): DeepSeek-V3.2's
sparse MLA backends on Blackwell. Each expected block is worked from the release's source,
cited in tokcost/memory/engines/vllm/blocks.py (_sparse_block): _get_backend_priorities in
vllm/platforms/cuda.py orders the sparse backends by the MLA layer's heads (the model's 128 query
heads // tp) and the cache dtype; the block is vLLM's default 16 if the backend's kernels take it,
else their smallest (get_preferred_block_size, vllm/v1/attention/backend.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, cast

import pytest
from typer.testing import CliRunner

from tokcost.catalog.hf_config import architecture_from_config
from tokcost.cli.app import app
from tokcost.memory.engines.base import Deployment
from tokcost.memory.engines.vllm import Vllm, resolve_block_size
from tokcost.memory.kv import kv_layout

if TYPE_CHECKING:
    from tokcost.catalog.schema import Architecture, Gpu

GiB = 2**30
V32 = Path(__file__).parent / "fixtures" / "hf_configs_families" / "deepseek-v3.2-exp"


def _v32() -> Architecture:
    return architecture_from_config(json.loads((V32 / "config.json").read_text()),
                                    where="config.json")


def _deployment(dtype: str, tp: int, gpu: str = "blackwell", *, heads: int | None = 128,
                block: int | None = None) -> Deployment:
    return Deployment(layout=kv_layout(_v32(), dtype, tp=tp), attention_heads=heads,
                      gpu=cast("Gpu", SimpleNamespace(architecture=gpu, name="B200")),
                      block_size=block)


@pytest.mark.parametrize(("release", "dtype", "tp", "block", "why"), [
    # to v0.17 check_and_update_config forces FlashMLASparse's 64 (PR #25896)
    ("0.17", "bf16", 8, 64, "FlashMLASparse"),
    # v0.18: FlashInfer MLA sparse first at <= 16 heads per GPU (128 // 8 = 16): [32, 64] -> 32
    ("0.18", "bf16", 8, 32, "16 heads per GPU, 16 or fewer"),
    ("0.18", "fp8", 8, 32, "16 heads per GPU"),
    # 128 // 4 = 32 heads: FlashMLASparse first (it stores fp8 as fp8_ds_mla)
    ("0.18", "bf16", 4, 64, "FlashMLASparse"),
    ("0.18", "fp8", 4, 64, "as fp8_ds_mla"),
    # v0.19 (PR #37252): an fp8 cache puts FlashInfer MLA sparse first whatever the heads
    ("0.19", "fp8", 1, 32, "an fp8 cache, from v0.19"),
    ("0.19", "bf16", 1, 64, "FlashMLASparse"),
    # FlashInfer MLA sparse takes no fp8_ds_mla cache: FlashMLASparse, 64, at any heads
    ("0.19", "fp8_ds_mla", 8, 64, "FlashMLASparse"),
    ("0.32", "bf16", 8, 32, "FlashInfer MLA sparse"),
    # v0.33: FA4 sparse (MultipleOf(64)) first for bf16 at 8 or 16 heads per GPU
    ("0.33", "bf16", 8, 64, "FA4 sparse MLA"),
    ("0.33", "bf16", 16, 64, "FA4 sparse MLA"),  # 128 // 16 = 8 heads
    # 4 heads: FA4 takes 8, 16, 32, 64 or 128 only -> FlashInfer MLA sparse, 32
    ("0.33", "bf16", 32, 32, "FlashInfer MLA sparse"),
    ("0.33", "fp8", 8, 32, "FlashInfer MLA sparse"),  # FA4 takes bf16 caches only
])
def test_deepseek_v32_block_on_blackwell(release: str, dtype: str, tp: int, block: int,
                                         why: str) -> None:
    dep = _deployment(dtype, tp)
    got, reason = resolve_block_size(dep.layout, dep, Vllm.release_of(release))
    assert got == block, reason
    assert why in str(reason)


@pytest.mark.parametrize("release", ["0.18", "0.21", "0.33"])
def test_deepseek_v32_is_64_on_hopper(release: str) -> None:
    """FlashMLASparse ([64]) on Hopper (from v0.30 FlashAttention MLA sparse first for bf16:
    MultipleOf(64), 64 too), at any heads."""
    for dtype in ("bf16", "fp8_ds_mla"):
        dep = _deployment(dtype, 8, "hopper")
        assert resolve_block_size(dep.layout, dep, Vllm.release_of(release))[0] == 64


def test_unknown_heads_say_what_would_change() -> None:
    dep = _deployment("bf16", 8, heads=None)
    got, reason = resolve_block_size(dep.layout, dep, Vllm.release_of("0.21"))
    assert got == 64 and "attention heads are not known" in str(reason)


def test_a_given_block_is_kept() -> None:
    dep = _deployment("bf16", 8, block=64)
    assert resolve_block_size(dep.layout, dep, Vllm.release_of("0.21"))[0] == 64


def test_the_block_sizes_the_pool() -> None:
    """bf16, TP8 on Blackwell, v0.21: 32-token blocks of 61 MLA layers x (2 x 576 + 132 B of
    indexer) a token: page 32 x 1,284 = 41,088 B; 20 GiB // 41,088 // 61 = 8,568 blocks."""
    dep = _deployment("bf16", 8)
    plan = Vllm(release=Vllm.release_of("0.21")).pool(dep, 20 * GiB)
    assert plan.block_size == 32 and plan.page_bytes == 32 * 1284
    assert plan.num_blocks == 20 * GiB // (32 * 1284) // 61 == 8568


@pytest.mark.parametrize(("engine", "gpu", "given", "block"), [
    # v0.11: block_size != 64 -> 64 (FlashMLA), != 128 -> 128 (CUTLASS MLA)
    ("vllm@0.11", "H100", 128, 64), ("vllm@0.11", "B200", 256, 128),
    # v0.12 on: block_size % 64 / % 128 -> a multiple is kept
    ("vllm@0.12", "H100", 128, 128), ("vllm@0.12", "B200", 256, 256)])
def test_v0_11_forces_the_kernel_block_itself(engine: str, gpu: str, given: int,
                                              block: int) -> None:
    """DeepSeek-V3 with --block-size given: vllm/platforms/cuda.py check_and_update_config of
    v0.11 compares with != where v0.12's takes the remainder."""
    result = CliRunner().invoke(app, ["kvmem", "estimate", "-m", "deepseek-v3", "--gpu", gpu,
                                      "--block-size", str(given), "--engine", engine,
                                      "--kv-memory", "20GiB", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["engine"]["block_size"] == block


# --- pages that do not divide (v0.24, PR #45181) and skip layers (v0.25, PR #42890) ------------

def _estimate(model: str, engine: str, **options: object) -> dict[str, object]:
    args = [f"--{k.replace('_', '-')}={v}" for k, v in options.items()]
    result = CliRunner().invoke(app, ["kvmem", "estimate", "-m", model, "--engine", engine,
                                      "--kv-memory", "20GiB", "--context", "131072", *args,
                                      "--json"])
    assert result.exit_code == 0, result.output
    engine_out: dict[str, object] = json.loads(result.stdout)["engine"]
    return engine_out


def _groups(e: dict[str, object]) -> list[tuple[str, int, int]]:
    groups = cast("list[dict[str, int | str]]", e["groups"])
    return [(str(g["kind"]), int(g["block_size"]), int(g["page_bytes"])) for g in groups]


def test_gpt_oss_nvfp4_with_bf16_sliding_layers_by_release() -> None:
    """GPT-OSS-120B, nvfp4 with --kv-skip-layers sliding_window: 8 kv heads of 64, so a token is
    8 x 2 x (32 + 4) = 576 B in a full layer (nvfp4) and 8 x 2 x 64 x 2 = 2,048 B in a sliding
    one (bf16); 18 layers of each, window 128, 8,192 tokens a step.
    v0.24 (PR #45181): 16-token pages of 9,216 and 32,768 B do not divide, so the full page is
    padded to 32,768: floor(20 GiB / 32,768 / 18) = 36,408 blocks; a request holds
    cdiv(131,072, 16) = 8,192 full blocks + cdiv(min(127 + 8,192, 131,072), 16) + 1 = 521.
    v0.25 (PR #42890): block 16 x cdiv(2,048 x 16, 16 x 576) = 64, shared page 64 x 576 =
    36,864 B; the sliding layers take FlashInfer's largest kernel block whose bf16 page fits it,
    16 (32 x 2,048 > 36,864), padded to 36,864: floor(20 GiB / 36,864 / 18) = 32,363 blocks, a
    request 2,048 + 521 = 2,569."""
    old = _estimate("gpt-oss-120b", "vllm@0.24", kv_dtype="nvfp4",
                    kv_skip_layers="sliding_window")
    assert old["block_size"] == 16
    assert sorted(_groups(old)) == [("full", 16, 32_768), ("sliding", 16, 32_768)]
    assert old["num_blocks"] == 20 * GiB // 32_768 // 18 == 36_408
    assert old["blocks_per_request"] == 8_192 + 521
    # from v0.26 (PR #47728) a sliding group reserves window - 1 + 2 x 8,192 tokens:
    # cdiv(127 + 16,384, 16) + 1 = 1,033 blocks
    for engine, sliding in (("vllm@0.25", 521), ("vllm@0.30", 1_033)):
        new = _estimate("gpt-oss-120b", engine, kv_dtype="nvfp4",
                        kv_skip_layers="sliding_window")
        assert new["block_size"] == 64 and "PR #42890" in str(new["block_size_reason"])
        assert sorted(_groups(new)) == [("full", 64, 36_864), ("sliding", 16, 36_864)]
        assert new["num_blocks"] == 20 * GiB // 36_864 // 18 == 32_363
        assert new["blocks_per_request"] == 2_048 + sliding


@pytest.mark.parametrize(("engine", "block"), [("vllm@0.24", 16), ("vllm@0.25", 32)])
def test_skip_layers_raise_a_full_attention_block_from_v0_25(engine: str, block: int) -> None:
    """Llama-3.1-8B, fp8 (2,048 B a token a layer) with layers 0 and 31 in bf16 (4,096 B): from
    v0.25 the block is 16 x cdiv(4,096 x 16, 16 x 2,048) = 32; one group of summed pages
    (UniformTypeKVCacheSpecs) either way: block x (30 x 2,048 + 2 x 4,096) B."""
    e = _estimate("llama-3.1-8b", engine, kv_dtype="fp8", kv_skip_layers="0,31")
    assert e["block_size"] == block
    assert e["num_blocks"] == 20 * GiB // (block * (30 * 2048 + 2 * 4096))


def test_without_skip_layers_v0_25_changes_nothing() -> None:
    """Sliding layers pick their own block from v0.25, FlashAttention's smallest (16), which
    unify scales to the full layers' block when the pages divide: GPT-OSS in bf16, block 64."""
    for engine in ("vllm@0.24", "vllm@0.25", "vllm@0.30"):
        e = _estimate("gpt-oss-120b", engine, block_size=64)
        assert sorted(_groups(e)) == [("full", 64, 64 * 2048), ("sliding", 64, 64 * 2048)]


@pytest.mark.parametrize("engine", ["vllm@0.11", "vllm@0.17", "vllm@0.18", "vllm"])
def test_deepseek_v32_fp8_is_fp8_ds_mla_where_vllm_makes_it_so(engine: str) -> None:
    """v0.11 to v0.17 DeepseekV32ForCausalLM turns any fp8 cache into fp8_ds_mla; from v0.18
    FlashMLASparse does (mla_attention.py), the backend on Hopper (assumed without --gpu): sized
    so, 61 x (656 + 132) = 48,068 B a token, 20 GiB // (64 x 48,068) = 6,980 blocks, and said."""
    result = CliRunner().invoke(app, ["kvmem", "estimate", "--config", str(V32), "--kv-dtype",
                                      "fp8", "--engine", engine, "--kv-memory", "20GiB"])
    assert result.exit_code == 0, result.output
    assert "KV fp8_ds_mla" in result.output and "= 6,980 blocks" in result.output
    assert "note: --kv-dtype fp8: vLLM" in result.output


@pytest.mark.parametrize(("release", "tp", "starts"), [
    ("0.18", 8, True), ("0.18", 4, False), ("0.19", 1, True), ("0.17", 8, False)])
def test_flashinfer_mla_sparse_keeps_a_plain_fp8_cache(release: str, tp: int,
                                                       starts: bool) -> None:
    """On Blackwell FlashInfer MLA sparse takes fp8 as it is (61 x (576 + 132) B a token): at
    16 heads per GPU or fewer in v0.18, at any heads from v0.19 (PR #37252); elsewhere vLLM
    caches it as fp8_ds_mla (656 + 132 B a token a layer) in FlashMLASparse's 64-token blocks."""
    dep = _deployment("fp8", tp)
    plan = Vllm(release=Vllm.release_of(release)).pool(dep, 20 * GiB)
    if starts:
        assert (plan.block_size, plan.page_bytes) == (32, 32 * (576 + 132))
    else:
        assert (plan.block_size, plan.page_bytes) == (64, 64 * (656 + 132))


@pytest.mark.parametrize(("engine", "args", "refused"), [
    ("vllm@0.11", [], False), ("vllm@0.12", [], True), ("vllm@0.17", [], True),
    ("vllm@0.17", ["--block-size", "32"], False), ("vllm@0.18", [], False),
    ("vllm@0.17", ["--gpu", "H100"], False)])
def test_flashinfer_refuses_16_token_blocks_for_head_dim_256_on_blackwell(
        engine: str, args: list[str], refused: bool) -> None:
    """Gemma-2-9B (head_dim 256), FlashInfer first on Blackwell: FlashInferMetadataBuilder
    asserts block_size != 16 for head size 256 on SM 10.x from v0.12 to v0.17 (PR #27994)."""
    gpu = [] if "--gpu" in args else ["--gpu", "B200"]
    result = CliRunner().invoke(app, ["kvmem", "estimate", "-m", "gemma-2-9b", *gpu, *args,
                                      "--engine", engine])
    lines = [line for line in result.output.splitlines() if line.strip()]
    if refused:
        assert result.exit_code == 2 and len(lines) == 1, result.output
        assert "give --block-size 32 or 64" in lines[0]
    else:
        assert result.exit_code == 0, result.output


@pytest.mark.parametrize(("gpu", "block", "why"), [
    # v0.18 on SM 10.x: FlashInfer MLA first, kernel blocks [32, 64] -> 32
    ("B200", 32, "FlashInfer MLA"),
    # SM 12.x (vllm/platforms/cuda.py _get_backend_priorities: device_capability.major == 12 puts
    # TRITON_MLA first for dense MLA): no kernel limit, vLLM's default 16 kept
    ("RTX-5090", 16, "Triton MLA"),
])
def test_geforce_blackwell_takes_the_sm12_order(gpu: str, block: int, why: str) -> None:
    result = CliRunner().invoke(app, ["kvmem", "estimate", "-m", "deepseek-v3", "--gpu", gpu,
                                      "--kv-memory", "4GiB", "--context", "4096",
                                      "--kv-dtype", "bf16", "--engine", "vllm@0.18"])
    assert result.exit_code == 0, result.output
    line = next(x for x in result.stdout.splitlines() if x.startswith(f"block {block}"))
    assert why in line
