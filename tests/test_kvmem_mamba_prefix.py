"""vLLM prefix caching on linear (Mamba-family) hybrids, release by release: mamba_cache_mode
"all" for the Mamba1/Mamba2 families to v0.27 and "align" for the others (PR #30877, v0.15 on),
on by default and "align" for every hybrid from v0.28 (PR #50991), a Mamba2 prefill checkpoint
block from v0.32, FlashInfer GDN's checkpoint block and 64-token grid on Hopper from v0.33; and
--kv-skip-layers refused on hybrids with vLLM's reason. Each case pins its release (vllm@0.X);
the oracles are vLLM's arithmetic (MambaSpec.max_memory_usage_bytes, the hybrid block
alignment in vllm/platforms/interface.py), written in each docstring."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from tokcost.cli.app import app

runner = CliRunner()
FIXTURES = Path(__file__).parent / "fixtures"
JAMBA = str(FIXTURES / "hf_configs" / "jamba-1.5-mini")
GRANITE = str(FIXTURES / "hf_configs_families" / "granite-4.0-h-small")
QWEN36 = str(FIXTURES / "hf_configs_families" / "qwen3.6-35b-a3b")


def engine(*args: str) -> dict[str, Any]:
    r = runner.invoke(app, ["kvmem", "estimate", *args, "--kv-memory", "4GiB", "--context",
                            "32000", "--json"])
    assert r.exit_code == 0, r.output
    out: dict[str, Any] = json.loads(r.stdout)["engine"]
    return out


def test_jamba_all_mode_to_v0_27_then_align() -> None:
    """Jamba-1.5-mini (Mamba1, no chunk in its config: 2,048), bf16: a full layer's token is
    8 x 128 x 2 x 2 = 4,096 B, a state 311,296 B. "all": block lcm(2,048, 16) x cdiv(cdiv(311,296,
    4,096) = 76, 2,048) = 2,048, a state block per 2,048 tokens: cdiv(32,000, 2,048) = 16 per
    linear group; 4 GiB // (4 x 2,048 x 4,096) = 128 blocks; 8 groups x 16 = 128 per request,
    1.00x. v0.28 "align": block 16 x cdiv(311,296, 16 x 4,096) = 80, 2 state blocks per group:
    cdiv(32,000, 80) = 400 + 7 x 2 = 414."""
    for release in ("0.21", "0.27"):
        e = engine("--config", JAMBA, "--engine", f"vllm@{release}", "--enable-prefix-caching")
        assert (e["mamba_cache_mode"], e["block_size"], e["state_blocks_per_request"]) == (
            "all", 2048, 16)
        assert (e["num_blocks"], e["blocks_per_request"]) == (128, 128)
        assert "Maximum concurrency for 32,000 tokens per request: 1.00x" in e["logged_lines"]
    e = engine("--config", JAMBA, "--engine", "vllm@0.28", "--enable-prefix-caching")
    assert (e["mamba_cache_mode"], e["block_size"], e["blocks_per_request"]) == ("align", 80, 414)


def test_prefix_caching_on_by_default_from_v0_28() -> None:
    """Qwen3.6-35B-A3B bf16: block 1,056 (2,146,304 B state over 2,048 B tokens, steps of 16),
    198 blocks of 10 slots. v0.27 leaves prefix caching off for hybrids: cdiv(32,000, 1,056) =
    31 + 3 = 34 per request; v0.28 turns it on ("align"): 31 + 3 x 2 = 37; the flag still turns
    it off."""
    old = engine("--config", QWEN36, "--engine", "vllm@0.27")
    new = engine("--config", QWEN36, "--engine", "vllm@0.28")
    off = engine("--config", QWEN36, "--engine", "vllm@0.28", "--no-enable-prefix-caching")
    assert all(e["block_size"] == 1056 and e["num_blocks"] == 198 for e in (old, new, off))
    assert (old["blocks_per_request"], "mamba_cache_mode" in old) == (34, False)
    assert (new["blocks_per_request"], new["mamba_cache_mode"]) == (37, "align")
    assert (off["blocks_per_request"], "mamba_cache_mode" in off) == (34, False)


def test_mamba2_prefill_checkpoint_block_from_v0_32() -> None:
    """Granite-4.0-H-Small (Mamba2), "align" by default: block 528, 4 full + 36 linear in 9 groups
    of 4. v0.31: cdiv(32,000, 528) = 61 + 9 x 2 = 79; v0.32 adds the checkpoint block
    (mamba_mixer2.py num_prefill_checkpoint_blocks 1): 61 + 9 x 3 = 88."""
    v31, v32 = (engine("--config", GRANITE, "--engine", f"vllm@{v}") for v in ("0.31", "0.32"))
    assert v31["block_size"] == v32["block_size"] == 528
    assert (v31["state_blocks_per_request"], v31["blocks_per_request"]) == (2, 79)
    assert (v32["state_blocks_per_request"], v32["blocks_per_request"]) == (3, 88)


def test_flashinfer_gdn_checkpoint_on_hopper_from_v0_33() -> None:
    """Qwen3-Next bf16, "align" by default: state 1,097,728 B over 2,048 B tokens. On Hopper
    (FlashInfer GDN prefill) v0.33 aligns the block to lcm(16, 64): 64 x cdiv(1,097,728,
    131,072) = 576, and adds a checkpoint block: 4 GiB // (12 x 576 x 2,048) = 303 blocks,
    cdiv(32,000, 576) = 56 + 3 x 3 = 65. On an A100 (Triton) or at v0.32: block 544,
    cdiv(32,000, 544) = 59 + 3 x 2 = 65, 321 blocks."""
    base = ("-m", "qwen3-next-80b-a3b")
    hopper = engine(*base, "--engine", "vllm@0.33", "--gpu", "H100")
    assert (hopper["block_size"], hopper["num_blocks"], hopper["state_blocks_per_request"]) == (
        576, 303, 3)
    assert "FlashInfer GDN's prefill checkpoint grid of 64" in hopper["block_size_reason"]
    for e in (engine(*base, "--engine", "vllm@0.33", "--gpu", "A100-80GB"),
              engine(*base, "--engine", "vllm@0.32", "--gpu", "H100")):
        assert (e["block_size"], e["num_blocks"], e["state_blocks_per_request"]) == (544, 321, 2)


def test_prefix_caching_before_v0_15_is_refused() -> None:
    r = runner.invoke(app, ["kvmem", "estimate", "--config", JAMBA, "--kv-memory", "4GiB",
                            "--engine", "vllm@0.14", "--enable-prefix-caching"])
    assert r.exit_code == 2 and "vllm@0.15" in r.output and "Traceback" not in r.output


def test_skip_layers_on_a_hybrid_gives_vllms_reason() -> None:
    """v0.19-v0.24: the Mamba page is padded to the fp8 attention page and cannot grow to the
    bf16 skipped layer's (an AssertionError in unify_kv_cache_spec_page_size); v0.25 aligns them
    (_align_heterogeneous_kv_block_size), which tokcost does not model."""
    out = {}
    for release in ("0.24", "0.25"):
        r = runner.invoke(app, ["kvmem", "estimate", "--config", QWEN36, "--kv-memory", "4GiB",
                                "--kv-dtype", "fp8", "--kv-skip-layers", "3", "--engine",
                                f"vllm@{release}"])
        assert r.exit_code == 2 and "Traceback" not in r.output
        out[release] = " ".join(r.output.split())
    assert "vLLM v0.24 fails to start" in out["0.24"] and "--kv-dtype attention page" in out["0.24"]
    assert "from v0.25 vLLM raises the block" in out["0.25"] and "does not model" in out["0.25"]
