"""vLLM's own KV cache layouts (issue 28, part 3), sized as vllm/v1/kv_cache_interface.py
pages them: per-token-head scales (a float32 per token and kv head, for K and V), nvfp4
(head_size // 2 + head_size // 16 B per head, vllm/utils/torch_utils.py) and DeepSeek-V3.2's
fp8_ds_mla (656 B per token per MLA layer)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

import tokcost
from tokcost.catalog import load_catalog
from tokcost.catalog.schema import Architecture
from tokcost.cli.app import app
from tokcost.errors import UsageError
from tokcost.memory.kv import kv_dtype, kv_layout

runner = CliRunner()
LLAMA_8B = Architecture(layers=32, attention_heads=32, kv_heads=8, head_dim=128)


@pytest.mark.parametrize(("dtype", "per_head"), [
    ("fp8_per_token_head", 128 + 4),  # 1 B a value + a 4 B scale
    ("int8_per_token_head", 128 + 4),
    ("int4_per_token_head", 128 // 2 + 4),  # INT4_PER_TOKEN_HEAD: head_size // 2
    ("nvfp4", 128 // 2 + 128 // 16),  # nvfp4_kv_cache_full_dim(128) = 72
    ("fp8", 128)])
def test_gqa_page_bytes_per_token(dtype: str, per_head: int) -> None:
    """Llama-3.1-8B: 32 layers x 8 kv heads x (K + V) x the bytes of one head's vector."""
    assert kv_layout(LLAMA_8B, dtype).bytes_per_token == 32 * 8 * 2 * per_head


@given(st.sampled_from([64, 80, 96, 128, 256, 512]))
def test_nvfp4_matches_vllms_packed_dim(head_size: int) -> None:
    assert kv_dtype("nvfp4").vector_bytes(head_size) == head_size // 2 + head_size // 16


def test_fp8_ds_mla_is_656_bytes_per_layer() -> None:
    """DeepSeek-V3 (61 MLA layers, 512 + 64 latent): 61 x 656 = 40,016 B per token, against
    61 x 576 = 35,136 B in plain fp8 and 70,272 B in bf16."""
    arch = load_catalog().resolve("deepseek-v3").architecture
    assert arch is not None
    assert kv_layout(arch, "fp8_ds_mla").bytes_per_token == 61 * 656 == 40_016
    assert kv_layout(arch, "fp8").bytes_per_token == 61 * 576
    assert kv_layout(arch, "bf16").bytes_per_token == 70_272


@pytest.mark.parametrize(("model", "dtype", "fragment"), [
    ("llama-3.1-8b", "fp8_ds_mla", "has no MLA layers"),
    ("deepseek-v3", "nvfp4", "not for MLA's latent"),
    ("deepseek-v3", "fp8_per_token_head", "not for MLA's latent")])
def test_layouts_where_vllm_has_none_are_refused(model: str, dtype: str, fragment: str) -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", model, "--kv-dtype", dtype])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0], result.output


def test_engine_layout_takes_no_group_size_and_sglang_says_whose_it_is() -> None:
    with pytest.raises(UsageError, match="applies to int8/int4 caches"):
        kv_dtype("nvfp4", group=32)
    sg = tokcost.estimate_memory(tokcost.KvRequest.of(
        model="llama-3.1-8b", kv_dtype="fp8_per_token_head", engine="sglang", kv_memory="8GiB"))
    assert any("fp8_per_token_head is vllm's KV cache layout" in str(n) for n in sg.notes)
    vl = tokcost.estimate_memory(tokcost.KvRequest.of(
        model="llama-3.1-8b", kv_dtype="fp8_per_token_head", kv_memory="8GiB"))
    assert not any("layout" in str(n) for n in vl.notes)
