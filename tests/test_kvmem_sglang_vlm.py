"""SGLang's rules for multimodal models (docs/kvmem-engines.md): the default mem_fraction_static
cut for the vision tower (v0.4.9 x 0.90; v0.4.10 on adjust_mem_fraction_for_vlm) and, from
v0.5.18, 100 MiB of the KV budget for the multimodal embedding cache (kv_cache_configurator.py
mm_runtime_reservation_gb, SGLANG_VLM_CACHE_SIZE_MB). Figures worked from the source arithmetic.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from tokcost.cli.app import app
from tokcost.memory.engines.base import Release
from tokcost.memory.engines.sglang import vlm_fraction

runner = CliRunner()
FAMILIES = Path(__file__).parent / "fixtures" / "hf_configs_families"


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["kvmem", "estimate", *args, "--json"])
    return result.exit_code, result.output


def estimate(*args: str) -> dict:
    code, out = run(*args)
    assert code == 0, out
    return json.loads(out)


def test_vision_tower_factor_reproduces_kimi_k25_logged_fraction() -> None:
    """Kimi-K2.5 on 8x MI355X, SGLang v0.5.8 (tests/fixtures/engine_logs.yaml) logged
    mem_fraction_static 0.8260405859375: the default 0.908 (GLM-5-FP8's logged default on the
    same 8x MI355X, a text-only model), then its MoonViT tower of 27 layers
    of 1152: ratio 27 x 1152^2 / (24 x 1024^2) = 1.423828125, factor 1 - 0.1 x 0.423828125 =
    0.9576171875, x 0.95 = 0.909736328125; 0.908 x 0.909736328125 = 0.8260405859375."""
    assert vlm_fraction(0.908, Release(0, 5, 8), (27, 1152))[0] == 0.8260405859375


def test_factor_bounds_and_the_older_rules() -> None:
    """The factor stays in [0.8, 1.05] x 0.95: a 48 x 2048 tower (ratio 8) gets 0.76, a 6 x 512
    one (ratio 1/16) 0.9975; v0.4.9 takes a flat 0.90 (tower or none); v0.4.10 on leaves a model
    without vision_config as it is."""
    assert vlm_fraction(1.0, Release(0, 5, 23), (48, 2048))[0] == 0.95 * 0.8
    assert vlm_fraction(1.0, Release(0, 5, 23), (6, 512))[0] == 0.95 * 1.05
    assert vlm_fraction(0.874, Release(0, 4, 9), None)[0] == 0.874 * 0.90
    assert vlm_fraction(0.874, Release(0, 4, 10), None)[0] == 0.874


def test_catalog_vlm_default_fraction_and_embedding_cache() -> None:
    """Gemma-4-26B-A4B (vision 27 x 1152) on an H100 (81,559 MiB), v0.5.23: no prefill CUDA
    graphs for it (multimodal, not on the breakable allowlist), reserved 512 + 8,192 x 1.5 + 256
    x 2 + 128 = 13,440 MiB, default round((81,559 - 13,440) / 81,559, 3) = 0.835, then
    x 0.909736328125. With --mem-fraction-static 0.8 (no cut): budget
    int(85,520,809,984 x 0.8) - 51,611,872,412 weights = 16,804,775,575 B in v0.5.17, 100 MiB
    (104,857,600 B) less from v0.5.18: 16,699,917,975 B."""
    e = estimate("-m", "gemma-4-26b-a4b", "--gpu", "H100", "--engine", "sglang")["engine"]
    assert e["mem_fraction_static"] == 0.835 * (0.95 * 0.9576171875)  # SGLang's order
    assert "vision tower of 27 layers of 1152" in e["mem_fraction_static_source"]
    budgets = {}
    for engine in ("sglang@0.5.17", "sglang@0.5.18", "sglang"):
        d = estimate("-m", "gemma-4-26b-a4b", "--gpu", "H100", "--engine", engine,
                     "--mem-fraction-static", "0.8")
        assert d["engine"]["mem_fraction_static"] == 0.8
        budgets[engine] = (d["gpu"]["available_kv_bytes"], d["gpu"]["reserve_bytes"])
    assert budgets["sglang@0.5.17"] == (16_804_775_575, 0)
    assert budgets["sglang@0.5.18"] == budgets["sglang"] == (16_699_917_975, 104_857_600)


def test_qwen36_is_multimodal_from_v0_5_9() -> None:
    """Qwen3.6-35B-A3B (Qwen3_5MoeForConditionalGeneration, in multimodal_model_archs from
    v0.5.9) names its vision layers depth, so SGLang reads 24 x 1152: factor 0.95 x (1 - 0.1 x
    0.265625) = 0.924765625 from v0.5.9; v0.5.8 leaves its default alone. 2x H200 (143,771 MiB),
    TP 2: reserved max(512 + 8,192 x 1.5 + 256 (graph bs, tp < 4) x 2 + 2 / 8 x 1,024, 10,240) =
    13,568 MiB (no prefill graphs before v0.5.10), (143,771 - 13,568) / 143,771 = 0.906."""
    old = estimate("-m", "qwen3.6-35b-a3b", "--gpu", "H200", "--tp", "2",
                   "--engine", "sglang@0.5.8")["engine"]["mem_fraction_static"]
    new = estimate("-m", "qwen3.6-35b-a3b", "--gpu", "H200", "--tp", "2",
                   "--engine", "sglang@0.5.9")["engine"]["mem_fraction_static"]
    assert old == 0.906
    assert new == 0.906 * (0.95 * 0.9734375)  # SGLang's order of the products


def test_mm_disabled_models_and_unknown_towers(tmp_path: Path) -> None:
    """Gemma-3 and Llama-4 are in mm_disabled_models (multimodal off by default): no cut, no
    reserve. Gemma-4-31B carries the 26B-A4B's 27 x 1152 tower (its safetensors total says so,
    tests/test_hf_params.py). A multimodal config tokcost has no tower for: the default is
    refused, a given fraction is used (with the 100 MiB reserve)."""
    for model in ("gemma-3-27b", "llama-4-scout"):
        d = estimate("-m", model, "--gpu", "H200", "--tp", "4", "--engine", "sglang")
        assert "vision" not in d["engine"]["mem_fraction_static_source"]
        assert d["gpu"]["reserve_bytes"] == 0
    e = estimate("-m", "gemma-4-31b", "--gpu", "H200", "--engine", "sglang")["engine"]
    assert "vision tower of 27 layers of 1152" in e["mem_fraction_static_source"]
    mine = tmp_path / "my-gemma"
    mine.mkdir()
    (mine / "config.json").write_text((FAMILIES / "gemma-4-31b" / "config.json").read_text())
    code, out = run("--config", str(mine), "--gpu", "H200", "--engine", "sglang")
    assert code != 0 and "vision tower" in out and "Traceback" not in out
    d = estimate("--config", str(mine), "--gpu", "H200", "--engine", "sglang",
                 "--mem-fraction-static", "0.85")
    assert d["gpu"]["reserve_bytes"] == 104_857_600


def test_multimodal_models_lose_the_prefill_graph_reserve() -> None:
    """The prefill CUDA graphs (8 MiB per size, 58 sizes up to 8,192 tokens: 464 MiB in the
    default's reserve) are off for multimodal models from v0.5.10 and, from v0.5.16, back on
    for Qwen3.5/3.6-MoE (breakable allowlist). H200 (143,771 MiB), TP 1: 13,440 MiB reserved
    without them -> 0.907, 13,904 with -> 0.903; Qwen3.6 then x 0.95 x 0.9734375, Gemma-4
    x 0.95 x 0.9576171875."""
    def mfs(model: str, engine: str) -> float:
        return float(estimate("-m", model, "--gpu", "H200", "--engine", engine)["engine"][
            "mem_fraction_static"])
    qwen, gemma = 0.95 * 0.9734375, 0.95 * 0.9576171875
    assert mfs("qwen3.6-35b-a3b", "sglang@0.5.10") == 0.907 * qwen
    assert mfs("qwen3.6-35b-a3b", "sglang@0.5.15") == 0.907 * qwen
    assert mfs("qwen3.6-35b-a3b", "sglang@0.5.16") == 0.903 * qwen
    assert mfs("qwen3.6-35b-a3b", "sglang") == 0.903 * qwen
    assert mfs("gemma-4-26b-a4b", "sglang") == 0.907 * gemma
