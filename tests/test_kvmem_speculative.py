"""vLLM speculative decoding in kvmem (--num-speculative-tokens, --draft-layers): the drafter's
attention layers join the KV pool, a Gated DeltaNet conv state keeps N more rows, and each linear
group holds N more state blocks per request from v0.15. Every case names its release
(``vllm@0.X``) so that moving the default release leaves it alone. The oracles are vLLM's
arithmetic (vllm/v1/kv_cache_interface.py MambaSpec, mamba_utils.py
gated_delta_net_state_shape, kv_cache_utils.py), written out in each docstring."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tokcost.catalog.hf_config import architecture_from_config
from tokcost.cli.app import app
from tokcost.errors import UsageError
from tokcost.memory.engines.vllm import Vllm

runner = CliRunner()
FAMILIES = Path(__file__).parent / "fixtures" / "hf_configs_families"
CONFIGS = Path(__file__).parent / "fixtures" / "hf_configs"


def engine(*args: str) -> dict[str, Any]:
    r = runner.invoke(app, ["kvmem", "estimate", *args, "--json"])
    assert r.exit_code == 0, r.output
    out: dict[str, Any] = json.loads(r.stdout)["engine"]
    return out


def refused(*args: str) -> str:
    r = runner.invoke(app, ["kvmem", "estimate", *args])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    return " ".join(r.output.split())


def test_config_gives_the_mtp_layers_and_conv_channels() -> None:
    """num_nextn_predict_layers (DeepSeek-V3) and mtp_num_hidden_layers (Qwen3.6) are the MTP
    head's layers; a GDN conv runs over 2 x 16 x 128 + 32 x 128 = 8,192 channels."""
    ds = json.loads((CONFIGS / "deepseek-v3" / "config.json").read_text())
    assert architecture_from_config(ds, where="c").attention.mtp_layers == 1
    q = json.loads((FAMILIES / "qwen3.6-35b-a3b" / "config.json").read_text())
    att = architecture_from_config(q, where="c").attention
    assert (att.mtp_layers, att.linear_conv_channels, att.mamba_chunk_size) == (1, 8192, None)


def test_qwen36_mtp_two_tokens_v0_24() -> None:
    """Qwen3.6-35B-A3B, fp8, TP1, prefix caching, 2 speculative tokens, 6.01 GiB, vllm@0.24.
    State: (3 + 2) x 8,192 x 2 B + 32 x 128 x 128 x 4 B = 2,179,072 B; an fp8 token of a full
    layer 2 x 256 x 2 x 1 = 1,024 B, so the block is 16 x cdiv(2,179,072, 16,384) = 2,128. Groups:
    10 full + 1 MTP layer = 11; 30 linear in 3 groups of 11 (1 padding each). 6.01 GiB //
    (11 x 2,128 x 1,024) = 269 blocks; per request cdiv(131,072, 2,128) = 62 + 3 x (2 + 2) = 74;
    269 / 74 = 3.64x, int(269 / 74 x 131,072) = 476,464."""
    e = engine("--config", str(FAMILIES / "qwen3.6-35b-a3b"), "--kv-memory", "6.01GiB",
               "--engine", "vllm@0.24", "--kv-dtype", "fp8", "--context", "131072",
               "--enable-prefix-caching", "--num-speculative-tokens", "2",
               "--max-num-batched-tokens", "8192")
    assert (e["block_size"], e["num_blocks"], e["blocks_per_request"]) == (2128, 269, 74)
    assert [(g["kind"], g["layers"], g["padding"]) for g in e["groups"]] == [
        ("mamba", 10, 1)] * 3 + [("full", 11, 0)]
    assert (e["state_blocks_per_request"], e["draft_layers"]) == (4, 1)
    assert "GPU KV cache size: 476,464 tokens" in e["logged_lines"]
    assert "Maximum concurrency for 131,072 tokens per request: 3.64x" in e["logged_lines"]


def test_speculative_state_blocks_counted_from_v0_15() -> None:
    """Qwen3-Next (catalog), bf16, 3 speculative tokens, 20 GiB, 128,000 tokens. State
    1,097,728 + 3 x 8,192 x 2 = 1,146,880 B: block 16 x cdiv(1,146,880, 16 x 2,048) = 560; 12 full
    + 1 MTP = 13 slots; 20 GiB // (13 x 560 x 2,048) = 1,440 blocks. Per request: cdiv(128,000,
    560) = 229 attention blocks + 3 linear groups x (1 + 3) = 241 from v0.15 (PR #30877's
    MambaSpec.max_memory_usage_bytes); v0.14 reserves 1 state per group: 229 + 3 = 232."""
    base = ("-m", "qwen3-next-80b-a3b", "--kv-memory", "20GiB", "--context", "128000",
            "--num-speculative-tokens", "3")
    new = engine(*base, "--engine", "vllm@0.15")
    old = engine(*base, "--engine", "vllm@0.14")
    for e in (new, old):
        assert (e["block_size"], e["num_blocks"], e["group_size"]) == (560, 1440, 13)
    assert new["blocks_per_request"] == 241 and new["state_blocks_per_request"] == 4
    assert old["blocks_per_request"] == 232 and "state_blocks_per_request" not in old
    plain = engine("-m", "qwen3-next-80b-a3b", "--kv-memory", "20GiB", "--context", "128000",
                   "--engine", "vllm@0.15")  # 1,097,728 B: block 16 x 34 = 544, 12 slots
    assert (plain["block_size"], plain["group_size"]) == (544, 12)


def test_deepseek_v3_mtp_layer_joins_the_mla_group() -> None:
    """DeepSeek-V3, bf16 MLA: (512 + 64) x 2 = 1,152 B per token and layer, block 16 (v0.24,
    Hopper). 61 layers + the MTP layer = 62: 20 GiB // (16 x 1,152 x 62) = 18,791 blocks; with
    --draft-layers 0 (n-gram) 61: 19,099. No linear layers: no state blocks."""
    base = ("-m", "deepseek-v3", "--kv-memory", "20GiB", "--engine", "vllm@0.24", "--context",
            "32k", "--num-speculative-tokens", "1")
    mtp = engine(*base)
    assert (mtp["num_blocks"], mtp["group_size"], mtp["draft_layers"]) == (18791, 62, 1)
    assert "state_blocks_per_request" not in mtp
    ngram = engine(*base, "--draft-layers", "0")
    assert (ngram["num_blocks"], ngram["group_size"]) == (19099, 61)
    assert "draft_layers" not in ngram


def test_draft_layers_counted_in_the_header() -> None:
    r = runner.invoke(app, ["kvmem", "estimate", "-m", "deepseek-v3", "--kv-memory", "20GiB",
                            "--engine", "vllm@0.24", "--speculative-tokens", "2"])
    assert r.exit_code == 0 and "62 MLA (1 the drafter's) layers" in r.output
    assert "1 drafter attention layer in the pool" in r.output


@pytest.mark.parametrize(("args", "words"), [
    (("-m", "deepseek-v3", "--draft-layers", "2"), "give --num-speculative-tokens N"),
    (("-m", "deepseek-v3", "--num-speculative-tokens", "65"), "must be 0 to 64, got 65"),
    (("-m", "deepseek-v3", "--num-speculative-tokens", "3", "--pp", "2"),
     "--pp with a speculative drafter's layers is not modelled"),
    (("--config", str(FAMILIES / "granite-4.0-h-small"), "--num-speculative-tokens", "2"),
     "modelled for Gated DeltaNet ones"),
    (("-m", "qwen3-next-80b-a3b", "--engine", "sglang", "--num-speculative-tokens", "2"),
     "is vLLM's setting"),
])
def test_refusals_are_one_line(args: tuple[str, ...], words: str) -> None:
    assert words in refused(*args, "--kv-memory", "20GiB")


def test_no_mtp_head_says_how_to_count_a_drafter() -> None:
    """Llama-3.1-8B has no MTP head: nothing joins the pool, and a note names --draft-layers."""
    r = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--kv-memory", "20GiB",
                            "--engine", "vllm@0.24", "--num-speculative-tokens", "3"])
    assert r.exit_code == 0 and "give --draft-layers N" in r.output
    r = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--kv-memory", "20GiB",
                            "--engine", "vllm@0.24", "--num-speculative-tokens", "3",
                            "--draft-layers", "1", "--json"])
    e = json.loads(r.stdout)["engine"]
    assert (e["group_size"], e["draft_layers"]) == (33, 1)  # 32 layers + the EAGLE head's


def test_library_takes_counts_as_text() -> None:
    e = Vllm(num_speculative_tokens="3", draft_layers="1")  # type: ignore[arg-type]
    assert (e.num_speculative_tokens, e.draft_layers) == (3, 1)
    with pytest.raises(UsageError, match="num_speculative_tokens"):
        Vllm(num_speculative_tokens="x")  # type: ignore[arg-type]
