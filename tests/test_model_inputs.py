"""A Hugging Face checkpoint gets its prompt as transformers gives it: with the BOS (or
whatever else) the tokenizer's post-processor adds, except through a chat template, whose
text already carries it. Counting leaves those tokens out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import tokcost
from tokcost.cli.app import app

FIXTURE = Path(__file__).parent / "fixtures" / "hf_tiny" / "llama"
PROMPT = "The baker knows"


def _with_bos(tmp_path: Path) -> tuple[Path, int]:
    """The llama fixture with Llama's post-processor: "<s>" before every text."""
    folder = tmp_path / "llama-bos"
    shutil.copytree(FIXTURE, folder)
    path = folder / "tokenizer.json"
    doc = json.loads(path.read_text())
    bos = next(t for t in doc["added_tokens"] if t["content"] == "<s>")["id"]
    doc["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                 {"Sequence": {"id": "A", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [bos], "tokens": ["<s>"]}},
    }
    path.write_text(json.dumps(doc))
    return folder, bos


def test_generate_and_attention_prepend_what_the_post_processor_adds(tmp_path: Path) -> None:
    from tokenizers import Tokenizer

    folder, bos = _with_bos(tmp_path)
    want = Tokenizer.from_file(str(folder / "tokenizer.json")).encode(PROMPT).ids  # transformers'
    assert want[0] == bos
    result = tokcost.generate(tokcost.GenerateRequest.of(prompt=PROMPT, model_dir=folder, max_new_tokens=2))
    assert list(result.prompt_ids) == want
    att = tokcost.attention(tokcost.AttentionRequest.of(prompt=PROMPT, model_dir=folder))
    assert list(att.prompt_ids) == want
    # Counting the same text with the same tokenizer leaves the BOS out.
    tok = tokcost.get_tokenizer(f"hf:{folder / 'tokenizer.json'}")
    assert tok.count(PROMPT) == len(want) - 1


def test_a_post_processor_that_adds_nothing_changes_nothing() -> None:
    from tokenizers import Tokenizer

    want = Tokenizer.from_file(str(FIXTURE / "tokenizer.json")).encode(
        PROMPT, add_special_tokens=False).ids
    result = tokcost.generate(tokcost.GenerateRequest.of(prompt=PROMPT, model_dir=FIXTURE, max_new_tokens=1))
    assert list(result.prompt_ids) == want


@pytest.mark.parametrize("cache", ["contiguous", "paged"])
def test_the_cli_runs_with_the_bos(tmp_path: Path, cache: str) -> None:
    folder, bos = _with_bos(tmp_path)
    res = CliRunner().invoke(app, ["generate", PROMPT, "--model-dir", str(folder),
                                   "--max-new-tokens", "3", "--cache", cache, "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["prompt_ids"][0] == bos
