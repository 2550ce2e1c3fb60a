"""``tokcost generate``: the CLI over the reference path (CliRunner on tokcost.cli.app.app)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tokcost.catalog import load_catalog
from tokcost.cli.app import app
from tokcost.memory import kv_cache_bytes
from tokcost.reference.from_catalog import config_for, shipped_weights

runner = CliRunner()
PROMPT = "Every morning the small bakery"


def run_json(*args: str) -> dict[str, object]:
    res = runner.invoke(app, ["generate", PROMPT, "--max-new-tokens", "6", "--json", *args])
    assert res.exit_code == 0, res.output
    data: dict[str, object] = json.loads(res.stdout)
    return data


@pytest.mark.parametrize(
    "sampling",
    [
        pytest.param([], id="greedy"),
        pytest.param(["--temperature", "0.9", "--top-k", "40", "--seed", "11"], id="top-k"),
        pytest.param(
            ["--temperature", "1.0", "--top-p", "0.9", "--seed", "5", "--n", "3"], id="top-p-n3"
        ),
    ],
)
def test_cache_modes_give_the_same_text(sampling: list[str]) -> None:
    outs = {m: run_json("--cache", m, *sampling) for m in ("none", "contiguous", "paged")}
    assert outs["none"]["samples"] == outs["contiguous"]["samples"] == outs["paged"]["samples"]


def test_json_cache_bytes_equal_kvmem_estimate() -> None:
    arch = load_catalog().resolve("tiny-ref").architecture
    assert arch is not None
    data = run_json("--cache", "paged", "--block-size", "4")
    kv = data["kv_cache"]
    assert isinstance(kv, dict)
    assert kv["matches"] is True
    assert (
        kv["bytes"]
        == kv["estimate_bytes"]
        == kv_cache_bytes(arch, kv["tokens"], "fp32", block_size=4)
    )
    assert kv["tokens"] == data["prompt_tokens"] + 5  # type: ignore[operator]
    contiguous = run_json("--cache", "contiguous")["kv_cache"]
    assert isinstance(contiguous, dict)
    assert contiguous["matches"] is True
    assert contiguous["bytes"] == kv_cache_bytes(arch, contiguous["tokens_reserved"], "fp32")


def test_parallel_samples_share_blocks_in_json() -> None:
    data = run_json(
        "--cache", "paged", "--block-size", "2", "--n", "4", "--temperature", "1", "--seed", "3"
    )
    kv = data["kv_cache"]
    assert isinstance(kv, dict)
    assert kv["blocks"] < kv["logical_blocks"]
    assert kv["saved_by_sharing"] > 0 and kv["matches"] is True
    assert len(data["samples"]) == 4  # type: ignore[arg-type]


def test_fixed_seed_reproduces_output() -> None:
    args = ("--temperature", "1.0", "--seed", "42")
    assert run_json(*args)["samples"] == run_json(*args)["samples"]


def test_streamed_text_starts_with_prompt_and_reports_cache_on_stderr() -> None:
    res = runner.invoke(app, ["generate", PROMPT, "--max-new-tokens", "4"])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith(PROMPT)
    assert "kvmem estimate" in res.stderr


def test_explain_shows_each_step() -> None:
    res = runner.invoke(
        app, ["generate", PROMPT, "--max-new-tokens", "2", "--explain", "--block-size", "4"]
    )
    assert res.exit_code == 0, res.output
    text = res.stdout
    for needle in (
        "prompt:",
        "step 1:",
        "step 2:",
        "█",
        "cache:",
        "blocks of 4",
        "kvmem estimate",
        "attention L0: h0→",
        "attention L3:",
    ):
        assert needle in text, needle


def test_explain_json_has_steps() -> None:
    data = run_json("--explain", "--top", "3")
    steps = data["steps"]
    assert isinstance(steps, list) and len(steps) == 6
    assert len(steps[0]["top"]) == 3
    assert {"layer", "head", "position", "weight"} <= set(steps[0]["attention"][0])


def test_stdin_prompt() -> None:
    res = runner.invoke(app, ["generate", "-", "--max-new-tokens", "2", "--json"], input=PROMPT)
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["prompt"] == PROMPT


@pytest.mark.parametrize(
    "args, code, message",
    [
        pytest.param(["-m", "opt-13b"], 2, "kvmem estimate -m opt-13b", id="too-large"),
        pytest.param(["-m", "gpt-4o"], 2, "no architecture", id="no-architecture"),
        pytest.param(["--max-new-tokens", "5000"], 2, "context window is 1024", id="too-long"),
        pytest.param(["--cache", "ring"], 2, "unknown --cache", id="bad-cache"),
        pytest.param(["--top-p", "0"], 2, "--top-p", id="bad-top-p"),
        pytest.param(["-m", "no-such-model"], 2, "no-such-model", id="unknown-model"),
    ],
)
def test_bad_input(args: list[str], code: int, message: str) -> None:
    res = runner.invoke(app, ["generate", PROMPT, *args])
    assert res.exit_code == code, res.output
    assert message in res.output
    assert "Traceback" not in res.output


def test_weights_file_with_wrong_shapes(tmp_path: Path) -> None:
    bad = tmp_path / "bad.npz"
    np.savez(bad, __format__=np.array("tokcost-ref v1"), tok_emb=np.zeros((10, 3)))
    res = runner.invoke(app, ["generate", PROMPT, "--weights", str(bad)])
    assert res.exit_code == 1
    assert "tok_emb" in res.output and "(1024, 128)" in res.output


def test_shipped_weights_and_tokenizer_match_the_catalog() -> None:
    entry = load_catalog().resolve("tiny-ref")
    cfg = config_for(entry)
    if not shipped_weights("tiny-ref").exists():
        pytest.skip("tiny-ref weights not trained yet")
    from tokcost.reference import load_weights

    load_weights(shipped_weights("tiny-ref"), cfg)  # raises on any mismatch
    assert entry.tokenizer is not None
    # {tokcost} in the catalog resolves to the installed package, from any folder.
    assert Path(entry.tokenizer.partition(":")[2]).is_file()


# Greedy continuation of PROMPT by the shipped tiny-ref weights: pinned so that a
# change of weights, tokenizer or forward pass shows up here.
GOLDEN_PROMPT_IDS = [36, 881, 88, 285, 289, 77, 543, 448, 275, 76, 320, 75, 293, 386, 262, 88]
GOLDEN_NEW_IDS = [288, 67, 67, 81, 850, 645, 448, 293]  # " address and the b"


def test_golden_greedy_continuation_of_shipped_model() -> None:
    if not shipped_weights("tiny-ref").exists():
        pytest.skip("tiny-ref weights not trained yet")
    data = run_json("--max-new-tokens", "8", "--cache", "paged")
    assert data["prompt_ids"] == GOLDEN_PROMPT_IDS
    assert data["samples"][0]["token_ids"] == GOLDEN_NEW_IDS  # type: ignore[index]


def test_shipped_model_is_trained() -> None:
    """Perplexity on a corpus sentence is far below the uniform 1024."""
    if not shipped_weights("tiny-ref").exists():
        pytest.skip("tiny-ref weights not trained yet")
    from tokcost.reference.from_catalog import load_model, load_tokenizer

    entry = load_catalog().resolve("tiny-ref")
    model = load_model(entry).model
    ids = load_tokenizer(entry, model.cfg).encode(
        "Every morning the small bakery on the corner opens at six o'clock."
    )
    logits = model.forward(np.asarray([ids[:-1]])).logits[0].astype(np.float64)  # (T, V)
    logz = np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1)) + logits.max(-1)
    nll = float(np.mean(logz - logits[np.arange(len(ids) - 1), ids[1:]]))
    assert np.exp(nll) < 100


def test_other_catalog_model_runs_on_seeded_weights(tmp_path: Path) -> None:
    cat = tmp_path / "models.yaml"
    cat.write_text(
        "version: 1\n"
        "models:\n"
        "  - id: mini\n"
        "    tokenizer: hf:tokcost/reference/data/tiny_ref_tokenizer.json\n"
        "    context_window: 64\n"
        "    architecture: {layers: 1, hidden_size: 32, attention_heads: 2, kv_heads: 1,\n"
        "                   head_dim: 16, vocab_size: 1024}\n"
        "gpus: []\n"
    )
    args = ["generate", "Hello", "-m", "mini", "--catalog", str(cat), "--max-new-tokens", "3"]
    res = runner.invoke(app, [*args, "--seed", "1"])
    assert res.exit_code == 0, res.output
    assert "random (seed 1)" in res.stderr
    data = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert data["weights"] == "random (seed 0)"
    assert data["kv_cache"]["bytes"] == 2 * 1 * 16 * 4 * 16  # one 16-token block, fp32
