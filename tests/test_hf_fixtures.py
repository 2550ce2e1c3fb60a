"""Every tiny checkpoint in tests/fixtures/hf_tiny/ is a whole Hugging Face model folder
(tokenizer and chat template included), and ``-m hf:ORG/REPO`` finds one in a real hub
cache layout.

The tokenizers are written by scripts/make_hf_goldens.py (``--tokenizers-only``); the
hub cache is laid out as huggingface_hub writes it (blobs named by their hash, relative
symlinks from ``snapshots/<commit>/``, ``refs/main``), checked with huggingface_hub's
own ``scan_cache_dir``, and read by a ``tokcost`` process with ``HF_HOME`` or
``HF_HUB_CACHE`` pointing at it and ``HF_HUB_OFFLINE=1``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tokcost.cli.app import app
from tokcost.reference.hf_checkpoint import FAMILIES
from tokcost.reference.request import read_template, render

TINY = Path(__file__).parent / "fixtures" / "hf_tiny"
ROOT = Path(__file__).parent.parent
COMMIT = "0123456789abcdef0123456789abcdef01234567"
WITH_TEMPLATE = [f for f in FAMILIES if (TINY / f / "chat_golden.json").exists()]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_fixture_has_a_tokenizer_of_its_vocabulary(family: str) -> None:
    from tokenizers import Tokenizer

    folder = TINY / family
    config = json.loads((folder / "config.json").read_text())
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    assert tok.get_vocab_size() == config["vocab_size"]
    tok_config = json.loads((folder / "tokenizer_config.json").read_text())
    # The special tokens sit at the ids the model's config names.
    for field in ("bos_token", "eos_token", "pad_token"):
        want = config.get(field + "_id")
        if want is not None and tok_config.get(field) is not None:
            assert tok.token_to_id(tok_config[field]) == want, field


def test_chat_templates_where_the_families_have_them() -> None:
    # Base Mistral-7B-v0.1 ships no chat template; the other families' models do.
    assert sorted(WITH_TEMPLATE) == sorted(set(FAMILIES) - {"mistral"})


@pytest.mark.parametrize("family", WITH_TEMPLATE)
def test_chat_template_renders_as_transformers(family: str) -> None:
    golden = json.loads((TINY / family / "chat_golden.json").read_text())
    template, specials = read_template(TINY / family)
    assert render(template, golden["messages"], specials=specials) == golden["text"]


@pytest.mark.parametrize("family", FAMILIES)
def test_generate_runs_every_family_folder(family: str) -> None:
    args = ["generate", "The baker opens the shop", "--model-dir", str(TINY / family),
            "--max-new-tokens", "5", "--seed", "3", "--json"]
    if family in WITH_TEMPLATE:
        args.append("--chat-template")
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    doc = json.loads(result.output[result.output.index("{"):])
    sample = doc["samples"][0]
    assert len(sample["token_ids"]) == 5 and isinstance(sample["text"], str)
    assert doc["kv_cache"]["matches"] is True
    if family.startswith("qwen"):
        assert doc["prompt"].startswith("<|im_start|>user\nThe baker")
    elif family.startswith("gemma"):
        assert doc["prompt"].startswith("<bos><start_of_turn>user\nThe baker")
        assert doc["prompt_ids"][0] == 2  # <bos>, parsed as the special token


def test_attention_runs_a_gemma_folder_with_its_own_tokenizer() -> None:
    result = CliRunner().invoke(app, ["attention", "the baker opens the shop and sells bread",
                                      "--model-dir", str(TINY / "gemma2"), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output[result.output.index("{"):])
    assert doc["layers"] == 2 and doc["prompt_tokens"] > 8
    assert doc["tokenizer"]


def _git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _hub_cache(cache: Path, repo: str, source: Path) -> Path:
    """``source``'s files in ``cache`` as huggingface_hub's downloads leave them: LFS
    files (the weights) in blobs/ named by their sha256, the others by their git blob
    sha1, linked from snapshots/<commit>/ by relative symlinks; refs/main names it."""
    root = cache / f"models--{repo.replace('/', '--')}"
    snapshot = root / "snapshots" / COMMIT
    for d in (root / "blobs", snapshot, root / "refs"):
        d.mkdir(parents=True, exist_ok=True)
    (root / "refs" / "main").write_text(COMMIT)  # no newline, as huggingface_hub writes it
    for f in sorted(source.iterdir()):
        data = f.read_bytes()
        lfs = f.suffix in (".safetensors", ".npy")
        name = hashlib.sha256(data).hexdigest() if lfs else _git_blob_sha1(data)
        (root / "blobs" / name).write_bytes(data)
        (snapshot / f.name).symlink_to(Path("..", "..", "blobs", name))
    return snapshot


def _tokcost(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    base["PYTHONPATH"] = os.pathsep.join([str(ROOT), base.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "tokcost", *args], env={**base, **env},
                          capture_output=True, text=True, timeout=300, check=False)


def test_hf_repo_reads_a_real_hub_cache_offline(tmp_path: Path) -> None:
    pytest.importorskip("huggingface_hub")
    from huggingface_hub import scan_cache_dir

    home = tmp_path / "hf_home"
    cache = home / "hub"
    repo = "tiny-org/tiny-gemma2"
    snapshot = _hub_cache(cache, repo, TINY / "gemma2")
    # huggingface_hub itself reads the layout as one of its cached repos.
    info = scan_cache_dir(cache)
    assert not info.warnings, info.warnings
    (found,) = info.repos
    assert found.repo_id == repo and found.repo_type == "model"
    (revision,) = found.revisions
    assert revision.commit_hash == COMMIT and revision.refs == frozenset({"main"})
    assert {f.file_name for f in revision.files} == {p.name for p in snapshot.iterdir()}
    assert all(f.blob_path.parent == cache / f"models--{repo.replace('/', '--')}" / "blobs"
               for f in revision.files)

    offline = {"HF_HUB_OFFLINE": "1"}
    gen = _tokcost(["generate", "The baker opens", "-m", f"hf:{repo}", "--max-new-tokens",
                    "4", "--seed", "1", "--json"], {**offline, "HF_HOME": str(home)})
    assert gen.returncode == 0, gen.stderr
    assert "Traceback" not in gen.stderr
    doc = json.loads(gen.stdout)
    assert len(doc["samples"][0]["token_ids"]) == 4
    assert doc["model"] == "tiny-gemma2"

    att = _tokcost(["attention", "the baker opens the shop and sells bread", "-m",
                    f"hf:{repo}", "--json"], {**offline, "HF_HUB_CACHE": str(cache)})
    assert att.returncode == 0, att.stderr
    heads = json.loads(att.stdout)["heads"]
    assert len(heads) == 2 * 4


def test_hf_repo_missing_from_the_cache_offline_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("huggingface_hub")
    cache = tmp_path / "hub"
    _hub_cache(cache, "tiny-org/tiny-gemma2", TINY / "gemma2")
    run = _tokcost(["generate", "hi", "-m", "hf:tiny-org/not-cached"],
                   {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache)})
    assert run.returncode != 0
    assert "Traceback" not in run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "HF_HUB_OFFLINE" in lines[0], run.stderr
