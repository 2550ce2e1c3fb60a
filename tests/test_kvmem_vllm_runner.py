"""vLLM rules that hang on what the engine picks for the model (issue 28): the model runner, which
sets the batches a sliding or chunked group reserves for (v0.26 on), and the TRITON_FLASHINFER
backend of multimodal Gemma on Blackwell, which sets the block (v0.30 on). Sources are cited in
tokcost/memory/engines/vllm/plan.py (v1_model_runner) and blocks.py (mm_prefix_composite).
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
from tokcost.memory.engines.vllm import resolve_block_size
from tokcost.memory.engines.vllm.plan import v1_model_runner
from tokcost.memory.kv import kv_layout

if TYPE_CHECKING:
    from tokcost.catalog.schema import Gpu

runner = CliRunner()
FIXTURES = Path(__file__).parent / "fixtures"


def estimate(**fields: object) -> tokcost.KvResult:
    return tokcost.estimate_memory(tokcost.KvRequest.of(**fields))


# --- the model runner: max_concurrent_batches (vllm/config/vllm.py) ------------------------------

@pytest.mark.parametrize(("engine", "pp", "sliding_blocks"), [
    # GPT-OSS-120B: 36 layers, alternating 128-token sliding and full: one full group of 18 and
    # one sliding group; 131,072 tokens take 8,192 blocks of 16 in the full group, and a sliding
    # group cdiv(127 + batches x 8,192, 16) + 1.
    ("vllm@0.25", 1, 521),  # one batch: cdiv(8,319, 16) + 1 = 520 + 1
    ("vllm@0.25", 4, 521),
    # v0.26: 2 batches on one stage whatever the runner: cdiv(16,511, 16) + 1 = 1,032 + 1
    ("vllm@0.26", 1, 1033),
    # MoE (128 experts) keeps the V1 runner in v0.26 to v0.28: pp batches on more stages
    ("vllm@0.26", 2, 1033),  # 2 stages: 2 batches
    ("vllm@0.26", 4, 2057),  # 4 batches: cdiv(32,895, 16) + 1 = 2,056 + 1
    ("vllm@0.28", 4, 2057),
    # v0.29 runs every model on V2: pp + 1
    ("vllm@0.29", 2, 1545),  # 3 batches: cdiv(24,703, 16) + 1 = 1,544 + 1
    ("vllm@0.29", 4, 2569),  # 5 batches: cdiv(41,087, 16) + 1 = 2,568 + 1
    ("vllm", 4, 2569)])
def test_moe_models_keep_the_v1_runner_batches_in_v0_26_to_v0_28(
        engine: str, pp: int, sliding_blocks: int) -> None:
    r = estimate(model="gpt-oss-120b", kv_memory="40GiB", contexts="131072", engine=engine,
                 max_num_batched_tokens=8192, block_size=16, pp=pp)
    assert r.engine.settings["blocks_per_request"] == 8192 + sliding_blocks


def test_a_dense_model_has_the_v2_runner_from_v0_26() -> None:
    """Gemma-3-27B (no experts): pp + 1 = 3 batches on two stages in v0.26 already; 6 sliding
    groups of cdiv(1,023 + 24,576, 16) + 1 = 1,601 blocks beside the full group's 8,192."""
    r = estimate(model="gemma-3-27b", kv_memory="40GiB", contexts="131072", engine="vllm@0.27",
                 max_num_batched_tokens=8192, block_size=16, pp=2)
    assert r.engine.settings["blocks_per_request"] == 8192 + 6 * 1601


@pytest.mark.parametrize(("release", "moe", "hybrid", "v1"), [
    (Release(0, 25), True, False, False),  # no in-flight reserve yet: the runner is not read
    (Release(0, 26), True, False, True), (Release(0, 26), False, True, True),
    (Release(0, 26), False, False, False), (Release(0, 28), False, True, True),
    (Release(0, 29), True, True, False), (Release(0, 34), True, False, False)])
def test_runner_by_release(release: Release, moe: bool, hybrid: bool, v1: bool) -> None:
    assert v1_model_runner(release, moe, hybrid) is v1


def test_the_v1_runner_is_named_where_it_changes_the_reserve() -> None:
    args = ["kvmem", "estimate", "-m", "gpt-oss-120b", "--gpu", "H100", "--context", "131072",
            "--max-num-batched-tokens", "8192"]
    on = runner.invoke(app, [*args, "--engine", "vllm@0.26", "--pp", "2"])
    off = runner.invoke(app, [*args, "--engine", "vllm@0.29", "--pp", "2"])
    assert on.exit_code == 0 and off.exit_code == 0, on.output + off.output
    assert "2 x max_num_batched_tokens (batches in flight: pp on the V1 model runner" in on.output
    assert "3 x max_num_batched_tokens, padding" in off.output
    assert "V1 model runner" not in off.output


# --- TRITON_FLASHINFER: multimodal Gemma on Blackwell (v0.30 on) ------------------------------

@pytest.mark.parametrize(("model", "gpu", "engine", "kv", "block"), [
    # Gemma-4 (use_bidirectional_attention "vision", head_dim 256) on a B200 (SM 10.0): the
    # composite's only kernel block is 64, and 16 is no multiple of it
    ("gemma-4-31b", "B200", "vllm@0.30", "auto", 64),
    ("gemma-4-26b-a4b", "B200", "vllm@0.33", "fp8", 64),
    ("gemma-4-31b", "B200", "vllm@0.29", "auto", 16),  # no composite yet: FLASH_ATTN's 16
    ("gemma-4-31b", "B200", "vllm@0.30", "nvfp4", 16),  # Triton takes no nvfp4: FlashInfer
    ("gemma-4-31b", "H100", "vllm@0.30", "auto", 16),  # Hopper: FLASH_ATTN
    ("gemma-4-31b", "RTX-5090", "vllm@0.30", "auto", 16),  # SM 12.0: the Hopper-side order
    ("gemma-3-27b", "B200", "vllm@0.30", "auto", 16),  # head_dim 128: not the composite's
    ("gemma-3n-e4b", "B200", "vllm@0.30", "auto", 16),  # model_type gemma3n: no mm prefix
    ("gemma-4-31b", "B200", "vllm", "auto", 64)])  # v0.34's default is 64 anyway
def test_multimodal_gemma_takes_the_composites_block_on_blackwell(
        model: str, gpu: str, engine: str, kv: str, block: int) -> None:
    r = estimate(model=model, gpu=gpu, contexts="8192", engine=engine, kv_dtype=kv,
                 tp=4 if gpu == "RTX-5090" else 1)
    assert r.engine.block_size == block
    if block == 64 and engine != "vllm":
        assert "TRITON_FLASHINFER" in r.engine.block_size_reason.template


def test_a_given_block_is_kept() -> None:
    r = estimate(model="gemma-4-31b", gpu="B200", contexts="8192", engine="vllm@0.30",
                 block_size=16)
    assert r.engine.block_size == 16


def _gemma3_12b(family: str) -> Deployment:
    """Gemma-3-27B's config with Gemma-3-12B's head_dim of 256 (the 4B and 12B have it)."""
    config = json.loads((FIXTURES / "hf_configs" / "gemma-3-27b" / "config.json").read_text())
    config["text_config"]["head_dim"] = 256
    arch = architecture_from_config(config, where="config.json")
    b200 = cast("Gpu", SimpleNamespace(architecture="blackwell", name="B200"))
    return Deployment(layout=kv_layout(arch, "bf16"), gpu=b200, head_dim=256, family=family)


@pytest.mark.parametrize(("release", "family", "starts"), [
    # v0.12 and v0.13 pick FlashInfer on Blackwell, which asserts against 16-token blocks at
    # head_dim 256 (PR #27994)
    (Release(0, 13), "gemma-3", False),
    # from v0.14 the multimodal Gemma-3 is mm-prefix and only Triton takes that: 16
    (Release(0, 14), "gemma-3", True), (Release(0, 17), "gemma-3", True),
    # a text-only model_type is not: FlashInfer, the assert
    (Release(0, 14), "gemma3_text", False)])
def test_flashinfer_head_dim_256_assert_skips_mm_prefix_models(
        release: Release, family: str, starts: bool) -> None:
    dep = _gemma3_12b(family)
    if starts:
        assert resolve_block_size(dep.layout, dep, release)[0] == 16
    else:
        with pytest.raises(UsageError, match="FlashInfer asserts against 16-token blocks"):
            resolve_block_size(dep.layout, dep, release)


def test_a_gemma4_config_is_read_as_multimodal() -> None:
    """--config of Gemma-4-26B-A4B (text model_type gemma4_text; "vision" bidirectional
    attention): the composite's 64 on a B200 in v0.30, FLASH_ATTN's 16 in v0.29."""
    folder = str(FIXTURES / "hf_configs_families" / "gemma-4-26b-a4b")
    blocks = {}
    for engine in ("vllm@0.29", "vllm@0.30"):
        result = runner.invoke(app, ["kvmem", "estimate", "--config", folder, "--gpu", "B200",
                                     "--engine", engine, "--context", "8192", "--json"])
        assert result.exit_code == 0, result.output
        blocks[engine] = json.loads(result.stdout)["engine"]["block_size"]
    assert blocks == {"vllm@0.29": 16, "vllm@0.30": 64}
