"""tokcost attention on real Hugging Face checkpoints (--model-dir, -m hf:), issue 16 gap 1.

The random checkpoints in tests/fixtures/hf_tiny/ each ship their family's tokenizer
(scripts/make_hf_goldens.py); the tests read copies under tmp_path.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import tokcost
from tokcost.cli.app import app
from tokcost.reference.hf_checkpoint import open_checkpoint

TINY = Path(__file__).parent / "fixtures" / "hf_tiny"
# Longer than the fixtures' sliding windows (8 tokens for gemma2).
PROMPT = "the baker opens the shop and the baker sells bread to the town every day"
KEYS = {"model", "weights", "tokenizer", "prompt_tokens", "prompt_ids", "tokens", "layers",
        "attention_heads", "kv_heads", "thresholds", "heads", "notable", "plot", "plotted",
        "layer_kinds", "sliding_window"}


def _folder(tmp_path: Path, family: str) -> Path:
    folder = tmp_path / family
    shutil.copytree(TINY / family, folder)
    assert (folder / "tokenizer.json").is_file()
    return folder


def _json(args: list[str]) -> dict[str, object]:
    result = CliRunner().invoke(app, ["attention", PROMPT, *args, "--json"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    doc: dict[str, object] = json.loads(result.output[result.output.index("{"):])
    return doc


@pytest.mark.parametrize("family", ["llama", "gemma2", "mistral"])
def test_the_cli_runs_a_model_folder(tmp_path: Path, family: str) -> None:
    folder = _folder(tmp_path, family)
    doc = _json(["--model-dir", str(folder)])
    assert set(doc) == KEYS
    cfg = json.loads((folder / "config.json").read_text())
    assert doc["layers"] == cfg["num_hidden_layers"]
    assert doc["attention_heads"] == cfg["num_attention_heads"]
    heads = doc["heads"]
    assert isinstance(heads, list) and len(heads) == doc["layers"] * doc["attention_heads"]
    ck = open_checkpoint(folder).cfg
    window = ck.sliding_window
    sliding = [h for h in heads if ck.sliding(h["layer"])]
    if family == "llama":
        assert not sliding and window is None
        return
    assert sliding and window is not None and doc["prompt_tokens"] > window
    # A sliding head reaches back at most window - 1 tokens, so its mean distance does too.
    assert all(h["mean_distance"] <= window - 1 for h in sliding)
    # The document names the sliding layers, whose scores are over their window.
    assert doc["sliding_window"] == window
    kinds = doc["layer_kinds"]
    assert isinstance(kinds, list) and len(kinds) == doc["layers"]
    assert {h["layer"] for h in sliding} == {i for i, k in enumerate(kinds) if k == "sliding"}


def test_hf_spec_names_the_same_folder(tmp_path: Path) -> None:
    folder = _folder(tmp_path, "gemma2")
    by_dir = _json(["--model-dir", str(folder)])
    by_spec = _json(["-m", f"hf:{folder}"])
    assert by_spec["heads"] == by_dir["heads"]


@pytest.mark.parametrize("family", ["gemma2", "mistral", "gemma3_text"])
def test_a_sliding_layer_puts_no_mass_beyond_its_window(tmp_path: Path, family: str) -> None:
    result = tokcost.attention(tokcost.AttentionRequest.of(prompt=PROMPT, model_dir=_folder(tmp_path, family)))
    window = result.sliding_window
    assert window is not None
    t = len(result.prompt_ids)
    assert t > window + 2
    distance = np.arange(t)[:, None] - np.arange(t)[None, :]  # (T, T): query i, key j
    for layer, kind in enumerate(result.layer_kinds):
        att = result.maps[layer]  # (nh, T, T)
        beyond = att[:, distance >= window].sum()
        if kind == "sliding":
            assert beyond == 0.0
        else:
            assert beyond > 0.0  # a full layer does look that far: the check can fail
        assert np.allclose(att.sum(axis=-1), 1.0, atol=1e-5)


@pytest.mark.parametrize(("args", "code", "fragment"), [
    (["--model-dir", "{llama}", "--weights", "w.npz"], 2, "--weights cannot replace"),
    (["--model-dir", "{missing}"], 2, "is not a folder"),
    (["--model-dir", "{gpt2}"], 2, "model_type 'gpt2'"),
])
def test_bad_checkpoints_are_one_line(tmp_path: Path, args: list[str], code: int,
                                      fragment: str) -> None:
    (tmp_path / "gpt2").mkdir()
    (tmp_path / "gpt2" / "config.json").write_text(json.dumps({"model_type": "gpt2"}))
    paths = {"llama": str(TINY / "llama"), "missing": str(tmp_path / "nope"),
             "gpt2": str(tmp_path / "gpt2")}
    result = CliRunner().invoke(app, ["attention", PROMPT, *[a.format(**paths) for a in args]])
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    assert fragment in result.output
    assert len(result.output.strip().splitlines()) == 1
