"""Real Hugging Face checkpoints on the reference path (issue 16 items 1-2).

tests/fixtures/hf_tiny/<family>/ holds a 2-layer random checkpoint saved by transformers
and its logits for a fixed 24-id prompt (scripts/make_hf_goldens.py, float64 goldens).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tokcost.catalog.hf_model import load_config
from tokcost.cli.app import app
from tokcost.errors import UsageError
from tokcost.memory import kv_cache_bytes
from tokcost.reference.cache import ContiguousCache, PagedCache
from tokcost.reference.config import RefConfig
from tokcost.reference.hf_checkpoint import (
    FAMILIES,
    _float32,
    config_from_hf,
    load_weights,
    open_checkpoint,
)
from tokcost.reference.model import Transformer
from tokcost.reference.request import read_template, render

TINY = Path(__file__).parent / "fixtures" / "hf_tiny"
SLIDING = ("mistral", "gemma2", "gemma3_text")


def _model(family: str, **changes: object) -> tuple[Transformer, list[int], np.ndarray]:
    folder = TINY / family
    ck = open_checkpoint(folder)
    cfg = RefConfig(**{**ck.cfg.__dict__, **changes}) if changes else ck.cfg
    model = Transformer(cfg, load_weights(folder, ck.model_type, cfg))
    ids = json.loads((folder / "prompt_ids.json").read_text())
    return model, ids, np.load(folder / "golden_logits.npy")


def _logits(model: Transformer, ids: list[int], mode: str) -> np.ndarray:
    """The prompt's logits: in one pass (none), or 10 tokens then one at a time."""
    if mode == "none":
        return model.forward(np.asarray([ids])).logits[0]
    cache = (ContiguousCache(model.cfg, capacity=len(ids)) if mode == "contiguous"
             else PagedCache(model.cfg, block_size=4, num_blocks=8))
    parts = [model.forward(np.asarray([ids[:10]]), cache).logits[0]]
    parts += [model.forward(np.asarray([[i]]), cache).logits[0] for i in ids[10:]]
    return np.concatenate(parts)


def test_every_family_has_a_fixture() -> None:
    assert sorted(p.name for p in TINY.iterdir() if p.is_dir()) == sorted(FAMILIES)


@pytest.mark.parametrize("mode", ["none", "contiguous", "paged"])
@pytest.mark.parametrize("family", FAMILIES)
def test_logits_equal_transformers(family: str, mode: str) -> None:
    model, ids, golden = _model(family)
    got = _logits(model, ids, mode)
    assert got.dtype == np.float32
    assert np.abs(got - golden).max() <= 1e-4


@pytest.mark.parametrize("family", SLIDING)
def test_sliding_window_is_applied_past_the_window(family: str) -> None:
    model, ids, golden = _model(family)
    window = model.cfg.sliding_window
    assert window is not None and len(ids) > window
    # Without the window the same weights give other logits past it: the goldens see it.
    full, _, _ = _model(family, sliding_window=10**6)
    wrong = np.abs(_logits(full, ids, "paged") - golden)
    assert wrong[:window].max() <= 1e-4
    assert wrong[window:].max() > 1e-3


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("mode", ["contiguous", "paged"])
def test_cache_bytes_equal_kvmem_estimate(family: str, mode: str) -> None:
    model, ids, _ = _model(family)
    arch = load_config(TINY / family).entry.architecture
    assert arch is not None
    # Past the 8-token window: sliding layers hold their window only, as the ideal engine
    # counts. Paged: 23 tokens put the window's start (position 15) on a block's last
    # slot, the alignment kvmem estimate's worst case assumes (tests/test_sliding_caches.py
    # checks every length).
    tokens = len(ids) if mode == "contiguous" else len(ids) - 1
    assert tokens > (model.cfg.sliding_window or 0)
    if mode == "contiguous":
        cache: ContiguousCache | PagedCache = ContiguousCache(model.cfg, capacity=tokens)
        expected = kv_cache_bytes(arch, tokens, "fp32")
    else:
        cache = PagedCache(model.cfg, block_size=4, num_blocks=8)
        expected = kv_cache_bytes(arch, tokens, "fp32", block_size=4)
    model.forward(np.asarray([ids[:tokens]]), cache)
    assert cache.nbytes == expected


@pytest.mark.parametrize("family", FAMILIES)
def test_live_transformers(family: str) -> None:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model, ids, _ = _model(family)
    ref = transformers.AutoModelForCausalLM.from_pretrained(
        TINY / family, attn_implementation="eager", dtype=torch.float64
    ).eval()
    with torch.no_grad():
        want = ref(torch.tensor([ids])).logits[0].numpy()
    assert np.abs(_logits(model, ids, "paged") - want).max() <= 1e-4


@pytest.mark.parametrize("mode", ["contiguous", "paged"])
@pytest.mark.parametrize("family", SLIDING)
def test_live_transformers_five_windows_long(family: str, mode: str) -> None:
    """40 tokens, 5 prefilled then one at a time: the caches let go of what the 8-token
    window left and the logits still equal transformers' on the whole sequence."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model, _, _ = _model(family)
    ids = [int(i) for i in np.random.default_rng(0).integers(0, model.cfg.vocab_size, 40)]
    ref = transformers.AutoModelForCausalLM.from_pretrained(
        TINY / family, attn_implementation="eager", dtype=torch.float64
    ).eval()
    with torch.no_grad():
        want = ref(torch.tensor([ids])).logits[0].numpy()
    cache = (ContiguousCache(model.cfg, capacity=40) if mode == "contiguous"
             else PagedCache(model.cfg, block_size=3, num_blocks=16))
    parts = [model.forward(np.asarray([ids[:5]]), cache).logits[0]]
    parts += [model.forward(np.asarray([[i]]), cache).logits[0] for i in ids[5:]]
    assert np.abs(np.concatenate(parts) - want).max() <= 1e-4


def test_bfloat16_bits_widen_exactly() -> None:
    values = np.array([1.0, -2.5, 3.140625, 0.0], dtype=np.float32)
    bf16 = (values.view(np.uint32) >> 16).astype("<u2").view(np.uint8)
    assert _float32(bf16, "BF16", (2, 2), "t").tolist() == [[1.0, -2.5], [3.140625, 0.0]]


def test_transformers_v4_configs_read_as_v5() -> None:
    """Real cached checkpoints are mostly written by transformers v4."""
    v5 = json.loads((TINY / "llama" / "config.json").read_text())
    v4 = {k: v for k, v in v5.items() if k != "rope_parameters"}
    rope = dict(v5["rope_parameters"])
    v4["rope_theta"] = rope.pop("rope_theta")
    v4["rope_scaling"] = rope
    assert config_from_hf(v4) == config_from_hf(v5)
    g5 = json.loads((TINY / "gemma3_text" / "config.json").read_text())
    g4 = {k: v for k, v in g5.items() if k != "rope_parameters"}
    g4.update(rope_theta=1e6, rope_local_base_freq=10000.0)
    assert config_from_hf(g4) == config_from_hf(g5)


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({"model_type": "gpt2"}, "model_type 'gpt2'"),
        ({"model_type": "phi3"}, "model_type 'phi3'"),
        ({}, r"model_type '\(none\)'"),
        ({"model_type": "llama", "num_hidden_layers": 1, "hidden_size": 8,
          "num_attention_heads": 2, "vocab_size": 10, "intermediate_size": 16,
          "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, "'yarn'"),
    ],
)
def test_refused_configs(config: dict[str, object], fragment: str) -> None:
    with pytest.raises(UsageError, match=fragment):
        config_from_hf(config)


def _write(folder: Path, config: dict[str, object]) -> Path:
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        (["--model-dir", "{gpt2}"], 2, "model_type 'gpt2'"),
        (["--model-dir", "{missing}"], 2, "is not a folder"),
        (["--model-dir", "{empty}"], 2, "has no config.json"),
        (["-m", "tiny-ref", "--chat-template"], 2, "--chat-template needs a checkpoint's template"),
        (["--model-dir", "{mistral}", "--chat-template"], 2, "--chat-template needs a template"),
        (["--model-dir", "{llama}", "--weights", "w.npz"], 2, "--weights cannot replace"),
        (["--model-dir", "{llama}", "-m", "llama-3.1-8b"], 2, "--model or --model-dir, not both"),
    ],
)
def test_cli_refusals(tmp_path: Path, args: list[str], code: int, fragment: str) -> None:
    paths = {"gpt2": str(_write(tmp_path / "gpt2", {"model_type": "gpt2"})),
             "missing": str(tmp_path / "nope"), "llama": str(TINY / "llama"),
             "mistral": str(TINY / "mistral")}
    (tmp_path / "empty").mkdir()
    paths["empty"] = str(tmp_path / "empty")
    result = CliRunner().invoke(app, ["generate", "hi", *[a.format(**paths) for a in args]])
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    assert fragment in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_chat_template_renders_as_transformers() -> None:
    golden = json.loads((TINY / "llama" / "chat_golden.json").read_text())
    template, specials = read_template(TINY / "llama")
    assert render(template, golden["messages"], specials=specials) == golden["text"]


def test_generate_a_checkpoint_with_chat_and_matching_cache() -> None:
    result = CliRunner().invoke(app, ["generate", "The baker", "--model-dir",
                                      str(TINY / "llama"), "--chat-template", "--max-new-tokens", "4",
                                      "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output[result.output.index("{"):])
    assert doc["prompt"].startswith("<s><|user|>\nThe baker</s>")
    assert doc["prompt_ids"][0] == 1  # <s> parsed as the special token, as transformers does
    assert doc["kv_cache"]["matches"] is True
    assert len(doc["samples"][0]["token_ids"]) == 4
