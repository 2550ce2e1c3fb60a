"""Review findings on `kvmem estimate` (issue 28): flags an engine does not read are refused,
DeepSeek-V3.2's fp8 cache is sized as vLLM converts it, and messages say what to do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tokcost.cli.app import app

runner = CliRunner()
V32 = str(Path(__file__).parent / "fixtures" / "hf_configs_families" / "deepseek-v3.2-exp")


def _run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["kvmem", "estimate", *args])
    return result.exit_code, result.output


def _json(*args: str) -> dict[str, Any]:
    code, output = _run(*args, "--json")
    assert code == 0, output
    doc: dict[str, Any] = json.loads(output)
    return doc


@pytest.mark.parametrize("engine", ["trtllm", "llama.cpp"])
def test_dcp_is_refused_where_it_is_not_modelled(engine: str) -> None:
    """TensorRT-LLM's check() skipped the base one: --dcp 2 was noted and then ignored."""
    code, output = _run("-m", "llama-3.1-8b", "--engine", engine, "--tp", "2", "--dcp", "2",
                        "--gpu", "H100", "--context", "32k")
    assert code == 2
    assert "--dcp (decode context parallel) is modelled for vLLM; use --engine vllm" in output


def test_the_ideal_block_says_where_it_came_from() -> None:
    default = _json("-m", "llama-3.1-8b", "--engine", "ideal", "--context", "8k")["engine"]
    assert default["block_size_reason"].startswith("16 (tokcost's default; block_size sets it")
    given = _json("-m", "llama-3.1-8b", "--engine", "ideal", "--block-size", "32",
                  "--context", "8k")["engine"]
    assert given["block_size_reason"] == "32 (as given)"


def test_the_dcp_note_has_no_2th() -> None:
    # 8 kv heads: vLLM takes --dcp up to tp // 8, so tp 16 for dcp 2
    code, output = _run("-m", "llama-3.1-8b", "--tp", "16", "--dcp", "2", "--kv-memory", "10GiB",
                        "--context", "8k")
    assert code == 0, output
    assert "holds one token in 2 of a sequence" in output and "2th" not in output


def test_the_group_line_reads_groups_each_of_slots() -> None:
    code, output = _run("-m", "gpt-oss-120b", "--kv-memory", "10GiB", "--context", "8k")
    assert code == 0, output
    assert "vLLM groups: 2, each of 18 layer slots:" in output.replace("\n", " ")


def test_a_release_past_the_newest_says_whose_rules() -> None:
    version = _json("-m", "llama-3.1-8b", "--engine", "vllm@0.99")["engine"]["version"]
    assert version.startswith("vLLM v0.99 (sized by v0.34's rules: it is newer than v0.34, the "
                              "newest release tokcost models)")


def test_the_nsa_refusal_reads_as_a_sentence() -> None:
    code, output = _run("--config", V32, "--engine", "sglang", "--kv-dtype", "fp8_ds_mla",
                        "--kv-memory", "40GiB")
    flat = " ".join(output.split())
    assert code == 2 and "size it" not in flat
    assert ("SGLang v0.5.23 is not modelled for deepseek-v3.2-exp's sparse-attention indexer "
            "(NSA)") in flat and "--engine sglang@0.5.22" in flat


@pytest.mark.parametrize(("args", "todo"), [
    (("-m", "granite-4.0-h-small", "--num-speculative-tokens", "2"),
     "leave out --num-speculative-tokens"),
    (("-m", "qwen3-next-80b-a3b", "--kv-skip-layers", "3", "--kv-dtype", "fp8"),
     "leave out --kv-skip-layers"),
    # tp // kv heads = 2 // 8 = 0: vLLM needs tp >= dcp x kv heads = 16
    (("-m", "llama-3.1-8b", "--tp", "2", "--dcp", "2"), "give --tp 16 or more, or leave out --dcp"),
    (("-m", "llama-3.1-8b", "--tp", "16", "--dcp", "4"), "give --tp 32 or more, or --dcp 2 or less"),
])
def test_refusals_say_what_to_do(args: tuple[str, ...], todo: str) -> None:
    code, output = _run(*args, "--kv-memory", "10GiB", "--context", "8k")
    assert code == 2 and todo in " ".join(output.split())


def test_gated_deltanet_is_not_called_mamba() -> None:
    code, output = _run("-m", "qwen3-next-80b-a3b", "--kv-skip-layers", "3", "--kv-dtype", "fp8",
                        "--kv-memory", "10GiB")
    assert code == 2 and "linear-attention layers (Mamba, Gated DeltaNet...)" in " ".join(
        output.split())


# DeepSeek-V3.2 in fp8_ds_mla: 61 layers x (656 + the indexer's 128 + 128 // 128 x 4 = 132 B)
# = 48,068 B a token; FlashMLASparse's 64-token blocks: 40 GiB // (64 x 48,068) = 13,961.
@pytest.mark.parametrize("engine", ["vllm@0.11", "vllm@0.17", "vllm@0.18", "vllm"])
def test_deepseek_v32_fp8_is_sized_as_fp8_ds_mla(engine: str) -> None:
    """v0.11-v0.17: DeepseekV32ForCausalLM.verify_and_update_config turns fp8 into fp8_ds_mla;
    from v0.18 MLAAttention does where FlashMLASparse is the backend (Hopper: always)."""
    doc = _json("--config", V32, "--engine", engine, "--kv-dtype", "fp8", "--kv-memory", "40GiB",
                "--context", "8k")
    same = _json("--config", V32, "--engine", engine, "--kv-dtype", "fp8_ds_mla",
                 "--kv-memory", "40GiB", "--context", "8k")
    assert doc["kv_dtype"] == "fp8_ds_mla" and doc["bytes_per_token"] == 61 * 788 == 48_068
    assert doc["engine"]["num_blocks"] == 40 * 2**30 // (64 * 48_068) == 13_961
    assert doc["engine"]["num_blocks"] == same["engine"]["num_blocks"]
    assert doc["contexts"] == same["contexts"]
    assert any(note.startswith("kv_dtype=fp8: vLLM") and "fp8_ds_mla" in note for note in doc["notes"])


def test_deepseek_v32_auto_is_fp8_ds_mla_in_v0_11_only() -> None:
    """v0.11's verify_and_update_config turns "auto" into fp8_ds_mla too (48,068 B a token);
    v0.12's only fp8*: "auto" stays the model's bf16, 61 x (1,152 + 132) = 78,324 B."""
    old = _json("--config", V32, "--engine", "vllm@0.11", "--kv-dtype", "auto",
                "--kv-memory", "40GiB", "--context", "8k")
    assert old["kv_dtype"] == "fp8_ds_mla" and old["bytes_per_token"] == 48_068
    assert any(note.startswith("kv_dtype=auto: vLLM v0.11") for note in old["notes"])
    new = _json("--config", V32, "--engine", "vllm@0.12", "--kv-dtype", "auto",
                "--kv-memory", "40GiB", "--context", "8k")
    assert new["kv_dtype"] == "bf16" and new["bytes_per_token"] == 61 * 1284 == 78_324
    assert not any("fp8_ds_mla" in note for note in new["notes"])


def test_deepseek_v32_fp8_stays_fp8_where_flashinfer_sparse_runs() -> None:
    """v0.21 on Blackwell at 128 // 8 = 16 heads per GPU: FlashInfer MLA sparse keeps plain fp8,
    61 x (576 + 132) = 43,188 B a token; at v0.18 with 128 // 4 = 32 heads FlashMLASparse
    runs and converts it (48,068 B)."""
    kept = _json("--config", V32, "--engine", "vllm@0.21", "--kv-dtype", "fp8", "--gpu", "B200",
                 "--tp", "8", "--context", "8k")
    assert kept["kv_dtype"] == "fp8" and kept["bytes_per_token"] == 61 * 708 == 43_188
    assert not any("fp8_ds_mla" in note for note in kept["notes"])
    converted = _json("--config", V32, "--engine", "vllm@0.18", "--kv-dtype", "fp8", "--gpu",
                      "B200", "--tp", "4", "--context", "8k")
    assert converted["kv_dtype"] == "fp8_ds_mla" and converted["bytes_per_token"] == 48_068


def test_a_kv_shared_refusal_names_gemma_4_too() -> None:
    # Gemma-4-E4B's last 18 layers reuse earlier layers' KV (num_kv_shared_layers), as
    # Gemma-3n's do: SGLang's refusal named Gemma-3n alone for a Gemma-4 config.
    e4b = str(Path(V32).parent / "gemma-4-e4b")
    code, output = _run("--config", e4b, "--engine", "sglang", "--kv-memory", "20GiB")
    assert code == 2, output
    assert "share another layer's KV (Gemma-3n, Gemma-4 E2B/E4B)" in output, output
    assert len([line for line in output.splitlines() if line.strip()]) == 1, output
