"""vLLM releases refuse a model whose class their model registry does not list.

Oracle: vllm/model_executor/models/registry.py of each release's sdist (the v0.15.0 wheel),
the lines quoted beside each case; the table is tokcost/memory/engines/vllm/releases.py
SERVED_FROM / SERVED_UNTIL.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import tokcost
from tokcost.catalog import ModelEntry, load_catalog
from tokcost.cli.app import app
from tokcost.errors import UsageError
from tokcost.memory.engines.base import Release
from tokcost.memory.engines.vllm import Vllm, plan_vllm
from tokcost.memory.engines.vllm.releases import SERVED_FROM, SERVED_UNTIL, check_served
from tokcost.memory.kv import kv_layout

FIXTURES = Path(__file__).parent / "fixtures"
runner = CliRunner()


def estimate(**fields: object) -> tokcost.KvResult:
    return tokcost.estimate_memory(tokcost.KvRequest.of(kv_memory="20GiB", **fields))


# (catalog model, the last release that refuses it, the first that serves it), from the
# registries:
# - gemma-4-31b, Gemma4ForConditionalGeneration: v0.19.0 _MULTIMODAL_MODELS
#   '"Gemma4ForConditionalGeneration": ("gemma4_mm", "Gemma4ForConditionalGeneration"),';
#   no Gemma4 line in v0.18.0.
# - mimo-v2-flash, MiMoV2FlashForCausalLM: v0.14.0 _TEXT_GENERATION_MODELS
#   '"MiMoV2FlashForCausalLM": ("mimo_v2_flash", "MiMoV2FlashForCausalLM"),'; none in v0.13.0.
# - qwen3.6-35b-a3b, Qwen3_5MoeForConditionalGeneration: v0.17.0 _MULTIMODAL_MODELS
#   '"Qwen3_5MoeForConditionalGeneration": ("qwen3_5", "Qwen3_5MoeForConditionalGeneration"),'
#   (split over lines); none in v0.16.0.
FIRST_SERVED = [("gemma-4-31b", "0.18", "0.19"), ("gemma-4-26b-a4b", "0.11", "0.19"),
                ("mimo-v2-flash", "0.13", "0.14"), ("qwen3.6-35b-a3b", "0.16", "0.17")]


@pytest.mark.parametrize(("model", "before", "first"), FIRST_SERVED)
def test_refused_before_the_first_release_that_lists_the_class(model: str, before: str,
                                                              first: str) -> None:
    with pytest.raises(UsageError) as refused:
        estimate(model=model, engine=f"vllm@{before}")
    text = str(refused.value)
    assert refused.value.param == "engine"
    assert f"vLLM v{before} cannot serve {model}" in text
    assert f"which came in v{first}" in text and f"vllm@{first}" in text
    served = estimate(model=model, engine=f"vllm@{first}")
    assert served.engine is not None


def test_minimax_text_01_is_served_up_to_v0_23_and_refused_after() -> None:
    """v0.23.0 _TEXT_GENERATION_MODELS: '"MiniMaxText01ForCausalLM": ("minimax_text_01",
    "MiniMaxText01ForCausalLM"),'; v0.24.0 _PREVIOUSLY_SUPPORTED_MODELS:
    '"MiniMaxText01ForCausalLM": "0.23.0",' (vLLM raises "was supported in vLLM until
    v0.23.0"). So the default (the newest release tokcost models) refuses it."""
    assert estimate(model="minimax-text-01", engine="vllm@0.23", tp=8).engine is not None
    for engine in ("vllm@0.24", "vllm"):
        with pytest.raises(UsageError, match=r"MiniMaxText01ForCausalLM was dropped after v0\.23 "
                                             r"\(PR #45993\); use .*vllm@0\.23.* or earlier"):
            estimate(model="minimax-text-01", engine=engine, tp=8)


def test_the_cli_says_it_in_one_line() -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "gemma-4-31b", "--engine", "vllm@0.11",
                                 "--gpu", "H100"])
    assert result.exit_code == 2
    assert result.output == (
        "error: vLLM v0.11 cannot serve gemma-4-31b: its model registry has no "
        "Gemma4ForConditionalGeneration, which came in v0.19 (PR #38826); use --engine "
        "vllm@0.19 or later\n")


def test_other_engines_and_served_models_are_untouched() -> None:
    # Llama, Qwen3-Next and gpt-oss: every modelled release lists them (v0.11.0's registry has
    # LlamaForCausalLM, Qwen3NextForCausalLM, GptOssForCausalLM).
    for model in ("llama-3.1-8b", "qwen3-next-80b-a3b", "gpt-oss-20b"):
        assert estimate(model=model, engine="vllm@0.11").engine is not None
    assert estimate(model="gemma-4-31b", engine="sglang").engine is not None
    assert estimate(model="gemma-4-31b", engine="ideal").engine is not None


def test_a_config_json_is_refused_by_its_architectures(tmp_path: Path) -> None:
    config = json.loads((FIXTURES / "hf_configs_families" / "gemma-4-31b" / "config.json")
                        .read_text())
    (tmp_path / "named").mkdir()
    (tmp_path / "named" / "config.json").write_text(json.dumps(config))
    with pytest.raises(UsageError, match="has no Gemma4ForConditionalGeneration"):
        estimate(config=tmp_path / "named", engine="vllm@0.18")
    # Without architectures the class is not known: no refusal (the shapes are Gemma-4's).
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "config.json").write_text(json.dumps(
        {k: v for k, v in config.items() if k != "architectures"}))
    assert estimate(config=tmp_path / "bare", engine="vllm@0.18").engine is not None


@pytest.mark.parametrize("bad", [5, "Gemma4ForConditionalGeneration", [1], [""]])
def test_a_bad_architectures_field_is_one_line(tmp_path: Path, bad: Any) -> None:
    config = json.loads((FIXTURES / "hf_configs" / "llama-3.1-8b" / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "architectures": bad}))
    result = runner.invoke(app, ["kvmem", "estimate", "--config", str(tmp_path),
                                 "--kv-memory", "4GiB"])
    assert result.exit_code == 1 and "architectures is" in result.output
    assert "expected a list of model class names" in result.output
    assert "Traceback" not in result.output


def test_a_hand_made_model_is_not_refused() -> None:
    """An entry without a model class (ModelEntry by hand, Architecture without model_class)
    and a bare layout: the class is not known, so every release plans it."""
    entry = load_catalog().resolve("gemma-4-31b")
    assert entry.architecture is not None
    arch = dataclasses.replace(entry.architecture, model_class=None)
    hand = ModelEntry(id="my-gemma", architecture=arch, context_window=8192)
    assert estimate(model=hand, engine="vllm@0.11").engine is not None
    plan = plan_vllm(kv_layout(arch), available=2**30, release=Release(0, 11))
    assert plan.num_blocks


def test_check_served_keeps_to_the_table() -> None:
    check_served("m", None, Release(0, 11))  # not known: served
    check_served("m", "LlamaForCausalLM", Release(0, 11))  # not in the table: every release
    for cls, (first, _) in SERVED_FROM.items():
        check_served("m", cls, first)
        with pytest.raises(UsageError):
            check_served("m", cls, Release(first.major, first.minor - 1))
    for cls, (last, _) in SERVED_UNTIL.items():
        check_served("m", cls, last)
        with pytest.raises(UsageError):
            check_served("m", cls, Release(last.major, last.minor + 1))


def _fixture_classes() -> dict[str, str]:
    found = {}
    for folder in ("hf_configs", "hf_configs_families"):
        for config in sorted((FIXTURES / folder).glob("*/config.json")):
            found[config.parent.name] = json.loads(config.read_text())["architectures"][0]
    return found


def test_catalog_model_classes_are_their_config_json() -> None:
    """Each catalog entry with a fixture names the class its config.json names first, and every
    entry with an architecture from a config.json names one."""
    classes = _fixture_classes()
    checked = 0
    for entry in load_catalog().models:
        arch = entry.architecture
        if arch is None or not (arch.source or "").endswith("config.json"):
            continue
        assert arch.model_class, entry.id
        if entry.id in classes:
            assert arch.model_class == classes[entry.id], entry.id
            checked += 1
    assert checked >= 20


# The class of each model a published vLLM log names (its config.json's architectures; the
# catalog's where the log names a catalog id). Logs without a model, and Qwen3.8-27B (repo not
# linked), are left out.
LOG_CLASSES = {
    "Qwen/Qwen3-235B-A22B-FP8": "Qwen3MoeForCausalLM",
    "neuralmagic/Meta-Llama-3.1-70B-Instruct-quantized.w8a8": "LlamaForCausalLM",
    "Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8": "Qwen3MoeForCausalLM",
    "moonshotai/Kimi-K2-Thinking": "DeepseekV3ForCausalLM",
    "nvidia/Qwen3.6-35B-A3B-NVFP4": "Qwen3_5MoeForConditionalGeneration",
    "Qwen/Qwen3.5-27B": "Qwen3_5ForConditionalGeneration",
    "Qwen/Qwen3.6-27B-FP8": "Qwen3_5ForConditionalGeneration",
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": "Llama4ForConditionalGeneration",
    "MiniMaxAI/MiniMax-M2.7 (AWQ)": "MiniMaxM2ForCausalLM",
    "google/gemma-4-31B-it": "Gemma4ForConditionalGeneration",
    # Granite-4.0-H: model_type granitemoehybrid, the catalog's granite-4.0-h-small class
    "ibm-granite/granite-4.0-h-1b": "GraniteMoeHybridForCausalLM",
    "ibm-granite/granite-4.0-h-350m": "GraniteMoeHybridForCausalLM",
    # Nemotron-3-Nano and its post-trained Cascade-2: model_type nemotron_h
    "chankhavu/Nemotron-Cascade-2-30B-A3B-NVFP4": "NemotronHForCausalLM",
    "nvidia/NVIDIA-Nemotron-3-Nano-4B-FP8": "NemotronHForCausalLM",
}
LOGS = [e for e in yaml.safe_load((FIXTURES / "engine_logs.yaml").read_text(encoding="utf-8"))
        if e["engine"] == "vllm" and e.get("model") and e["model"] != "Qwen3.8-27B-FP8"]


@pytest.mark.parametrize("entry", LOGS, ids=lambda e: f"{e['model']}@{e.get('release')}")
def test_every_published_log_ran_on_a_release_that_serves_its_model(entry: dict[str, Any]
                                                                     ) -> None:
    """The logs are pinned to the releases that ran them (no release: the newest rules): each
    such release must list the model's class."""
    model = entry["model"]
    if model in LOG_CLASSES:
        cls: str | None = LOG_CLASSES[model]
    else:
        arch = load_catalog().resolve(model).architecture
        cls = arch.model_class if arch is not None else None
    assert cls is not None, model
    release = Vllm.release_of(str(entry["release"])) if "release" in entry else Vllm().release
    check_served(model, cls, release)
