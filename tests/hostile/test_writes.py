"""Writes go where they belong (issue 26, part 1): never onto a device, FIFO or socket,
through a symlink rather than over it, and a baseline only over a baseline inside its
repository."""

from __future__ import annotations

import json
import os
import stat

import pytest

from .conftest import Sandbox

CORPUS = "the ferry left at noon and the gulls followed it out of the harbour\n" * 50
TRAIN = ("bpe", "train", "corpus.txt", "--vocab-size", "270")


@pytest.fixture
def corpus(sandbox: Sandbox) -> Sandbox:
    (sandbox.repo / "corpus.txt").write_text(CORPUS)
    return sandbox


def test_force_never_replaces_a_fifo(corpus: Sandbox) -> None:
    os.mkfifo(corpus.repo / "out.bpe")
    line = corpus.one_error(*TRAIN, "-o", "out.bpe", "--force", code=2)
    assert "not a regular file" in line
    assert stat.S_ISFIFO(os.lstat(corpus.repo / "out.bpe").st_mode)


def test_force_writes_through_a_symlink(corpus: Sandbox) -> None:
    (corpus.repo / "real.bpe").write_text("old")
    (corpus.repo / "link.bpe").symlink_to("real.bpe")
    ran = corpus.run(*TRAIN, "-o", "link.bpe", "--force")
    assert ran.code == 0, ran.stderr
    assert os.readlink(corpus.repo / "link.bpe") == "real.bpe"
    assert (corpus.repo / "real.bpe").read_text() != "old"


CONFIG = ("version: 1\ntokenizer: cl100k_base\nbudgets:\n  - name: all\n    paths: ['*.txt']\n"
          "    max_growth_percent: 50\n")


def test_a_baseline_never_replaces_the_config(corpus: Sandbox) -> None:
    (corpus.repo / "tokcost.yaml").write_text(CONFIG)
    line = corpus.one_error("check", "--update-baseline", "--baseline", "tokcost.yaml", code=2)
    assert "not a tokcost baseline" in line
    assert (corpus.repo / "tokcost.yaml").read_text() == CONFIG


@pytest.mark.parametrize("where", ["../outside/victim.txt", "../outside/new.json"])
def test_a_config_cannot_aim_its_baseline_outside(corpus: Sandbox, where: str) -> None:
    (corpus.repo / "tokcost.yaml").write_text(CONFIG + f"baseline: {where}\n")
    line = corpus.one_error("check", "--update-baseline", code=2)
    assert "outside" in line and "--force" in line


def test_a_baseline_is_replaced_by_a_baseline(corpus: Sandbox) -> None:
    (corpus.repo / "tokcost.yaml").write_text(CONFIG)
    assert corpus.run("check", "--update-baseline").code == 0
    first = json.loads((corpus.repo / ".tokcost-baseline.json").read_text())
    (corpus.repo / "more.txt").write_text("more words\n")
    assert corpus.run("check", "--update-baseline").code == 0
    assert json.loads((corpus.repo / ".tokcost-baseline.json").read_text()) != first


def test_models_import_escapes_its_source_in_the_header(sandbox: Sandbox) -> None:
    import shutil
    from pathlib import Path

    import yaml

    folder = sandbox.repo / "m\nevil: 1"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures" / "hf_tiny" / "llama", folder)
    ran = sandbox.run("models", "import", "m\nevil: 1")
    assert ran.code == 0, ran.stderr
    assert ran.stdout.startswith("# tokcost models import m\\nevil: 1\n")
    assert "evil" not in yaml.safe_load(ran.stdout)
