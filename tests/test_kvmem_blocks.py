"""vLLM block sizes by release that hang on the backend vLLM selects (issue 28): DeepSeek-V3.2's
sparse MLA backends on Blackwell. Each expected block is worked from the release's source,
cited in tokcost/memory/engines/vllm.py (_sparse_block): _get_backend_priorities in
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
