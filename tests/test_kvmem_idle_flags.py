"""Flags that change nothing for the model and engine given say so (review finding 6), and a
--kv-dtype given to llama.cpp, whose cells take --cache-type-k/-v, is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import tokcost
from tokcost.cli.app import app
from tokcost.errors import UsageError

LLAMA4 = Path(__file__).parent / "fixtures" / "hf_configs_families" / "llama-4-scout"
runner = CliRunner()


def notes(**fields: object) -> list[str]:
    return [str(n) for n in tokcost.estimate_memory(tokcost.KvRequest.of(**fields)).notes]


def has(found: list[str], fragment: str) -> bool:
    return any(fragment in n for n in found)


@pytest.mark.parametrize(("fields", "fragment"), [
    # llama-3.1-8b: 32 full layers, no attention_chunk_size, no sliding window
    ({"chunked_hybrid": True}, "chunked_hybrid=True has no effect: llama-3.1-8b has no chunked"),
    ({"engine": "sglang", "swa_full_tokens_ratio": 0.5},
     "swa_full_tokens_ratio has no effect: llama-3.1-8b has no sliding-window layers"),
    ({"engine": "llama.cpp", "swa_full": True},
     "swa_full has no effect: llama-3.1-8b has no separate sliding-window cache"),
    # the model's dtype is bf16 and so is the cache: the two skipped layers stay bf16
    ({"kv_cache_dtype_skip_layers": "0,31"},
     "kv_cache_dtype_skip_layers has no effect: the cache is already in the model's dtype")])
def test_a_flag_without_effect_says_so(fields: dict[str, object], fragment: str) -> None:
    found = notes(model="llama-3.1-8b", contexts="8k", **fields)
    assert has(found, fragment), found
    plain = {k: v for k, v in fields.items() if k == "engine"}
    assert not has(notes(model="llama-3.1-8b", contexts="8k", **plain), "has no effect")


def test_chunked_hybrid_with_the_manager_off_says_so() -> None:
    found = notes(config=LLAMA4, contexts="8k", chunked_hybrid=True, hybrid_manager=False)
    assert has(found, "has no effect with hybrid_manager=False"), found
    # with the manager on it decides whether vLLM keeps it (not said to be idle)
    assert not has(notes(config=LLAMA4, contexts="8k", chunked_hybrid=True), "has no effect")


def test_flags_that_work_are_not_called_idle() -> None:
    """gemma-3-27b has a sliding pool under SGLang v0.4.10 (SWA_BY_WINDOW); fp8 keeps the
    skipped layers in bf16, which does change the bytes."""
    assert not has(notes(model="gemma-3-27b", contexts="8k", engine="sglang@0.4.10",
                         swa_full_tokens_ratio=0.5), "has no effect")
    found = notes(model="llama-3.1-8b", contexts="8k", kv_dtype="fp8",
                  kv_cache_dtype_skip_layers="0,31")
    assert has(found, "layers 0, 31 cache in bf16 (the model's dtype), the other 30 in fp8")
    assert not has(found, "has no effect")


def test_sglang_ratio_without_a_sliding_pool_in_that_release() -> None:
    found = notes(model="gemma-3-27b", contexts="8k", engine="sglang", swa_full_tokens_ratio=0.5)
    assert has(found, "keeps its sliding-window layers in the full pool under SGLang v0.5.23")


@pytest.mark.parametrize("dtype", ["bf16", "fp16", "auto"])
def test_llamacpp_refuses_a_given_kv_dtype(dtype: str) -> None:
    with pytest.raises(UsageError, match="bf16 too: cache_type_k=bf16"):
        tokcost.KvRequest.of(model="llama-3.1-8b", engine="llama.cpp", kv_dtype=dtype)
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--engine",
                                 "llama.cpp", "--kv-dtype", dtype, "--context", "8k"])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "--kv-dtype is not llama.cpp's" in result.output
    assert "bf16 too: --cache-type-k bf16 --cache-type-v bf16" in result.output


def test_llamacpp_bf16_cells_are_bf16() -> None:
    """-ctk bf16 -ctv bf16 (a ggml cache type: 2 bytes an element) is what the log names."""
    r = tokcost.estimate_memory(tokcost.KvRequest.of(
        model="llama-3.1-8b", engine="llama.cpp", contexts="32k", cache_type_k="bf16",
        cache_type_v="bf16"))
    assert any("K (bf16)" in line for line in r.engine.lines), r.engine.lines


def test_estimate_help_at_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """The review's --help items: no name cut across lines, the releases plain names follow,
    v0.28's 16,384 tier (arg_utils.py get_batch_defaults), one default for --kv-dtype."""
    monkeypatch.setenv("COLUMNS", "80")
    out = runner.invoke(app, ["kvmem", "estimate", "--help"]).output
    cells = " ".join(line.strip("│ ").split("  ")[-1].strip(" │") for line in out.splitlines())
    assert "VLLM_ALLOW_CHUNKED" not in out or "VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE" \
        in out, "the variable's name is cut"
    assert "│ vLLM: " not in out and "vLLM:  " not in out
    assert "vLLM v0.34's" in cells and "SGLang v0.5.23's" in cells, cells
    assert "b8643 to b10107" in cells and "TensorRT-LLM 1.1's" in cells
    assert "16,384 on GPUs of 160 GiB or more from v0.28" in cells
    kv = out[out.index("--kv-dtype,"):out.index("--kv-group-size")]
    assert "[default: bf16]" not in kv and "bf16 (the default" in kv
