"""Shared fixtures. Tests never touch the network or the user's files."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tokcost.adapters.openai_encodings import ENCODINGS, candidate_files, read_rank_bytes

# No per-example deadline: on a loaded CI machine a slow example is not a failure (tests never
# assert wall-clock times; speed lives in benchmarks/). Tests' own @settings still apply.
settings.register_profile("tokcost", deadline=None)
settings.load_profile("tokcost")


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    # The user's catalog and tiktoken cache must not change what tests see.
    monkeypatch.delenv("TOKCOST_CATALOG", raising=False)
    monkeypatch.delenv("TOKCOST_TIKTOKEN_DIR", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path_factory.mktemp("empty-tiktoken-cache")))
    monkeypatch.setenv("TOKCOST_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "tokcost-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "200")
    # rich reads COLUMNS when a console is made: made anew for each test, as for each
    # real process, so a width set by one test does not stay for the next
    from tokcost.cli import console

    for lazy in (console.out, console.err):
        monkeypatch.setattr(lazy, "_console", None)


@pytest.fixture(scope="session")
def seeded_tiktoken_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiktoken cache holding cl100k_base and o200k_base, so tiktoken itself runs offline.

    tiktoken names cached files sha1(download address); the bytes are the ones
    tokcost verifies by sha256. This lets tests use tiktoken as the oracle.
    """
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    for name in ("cl100k_base", "o200k_base"):
        enc = ENCODINGS[name]
        for path in candidate_files(enc):
            if path.is_file() and "tiktoken-cache" not in str(path):
                data = read_rank_bytes(path)
                if hashlib.sha256(data).hexdigest() == enc.sha256:
                    (cache / hashlib.sha1(enc.url.encode()).hexdigest()).write_bytes(data)
                    break
        else:
            pytest.skip(f"no local rank file for {name}")
    return cache


@pytest.fixture(scope="session")
def _oracle_encodings() -> dict[str, Any]:
    return {}


@pytest.fixture
def oracle(seeded_tiktoken_cache: Path, monkeypatch: pytest.MonkeyPatch,
           _oracle_encodings: dict[str, Any]) -> Callable[[str], Any]:
    """tiktoken.get_encoding, offline from the seeded cache; each rank file parsed once a run.

    The encodings are kept apart from tiktoken's own registry, which is left as it
    was, so a test that expects tiktoken to find nothing offline still sees that.
    """
    import tiktoken
    import tiktoken.registry

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(seeded_tiktoken_cache))

    def get_encoding(name: str) -> Any:
        if name not in _oracle_encodings:
            saved = dict(tiktoken.registry.ENCODINGS)
            tiktoken.registry.ENCODINGS.clear()
            try:
                _oracle_encodings[name] = tiktoken.get_encoding(name)
            finally:
                tiktoken.registry.ENCODINGS.clear()
                tiktoken.registry.ENCODINGS.update(saved)
        return _oracle_encodings[name]

    return get_encoding


@pytest.fixture(scope="session")
def tiny_hf_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small byte-level BPE trained by Hugging Face tokenizers, saved as tokenizer.json."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_training_lines(), trainer=trainer)
    out = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    tok.save(str(out))
    return out


@pytest.fixture(scope="session")
def tiny_sp_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small SentencePiece BPE model trained in a fixture."""
    import sentencepiece as spm

    folder = tmp_path_factory.mktemp("sp")
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(_training_lines()), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(folder / "tiny"),
        vocab_size=500,
        model_type="bpe",
        byte_fallback=True,
        minloglevel=2,
    )
    return folder / "tiny.model"


def _training_lines() -> list[str]:
    # Our own sentences, a little of several scripts, repeated to give BPE pairs.
    lines = [
        "The kettle whistled while the cat slept on the warm windowsill.",
        "Counting tokens before sending a prompt keeps the monthly bill predictable.",
        "A cache of keys and values grows by one row for every generated token.",
        "Der Zug nach Norden fährt um halb acht vom zweiten Gleis ab.",
        "Le marché du samedi vend des pommes, du fromage et du pain frais.",
        "Мы считаем токены, чтобы знать цену каждого запроса.",
        "東京の朝は静かで、駅の前にパン屋が開いている。",
        "def add(a, b):\n    return a + b  # small and tidy",
    ]
    return lines * 20


@pytest.fixture
def runner():  # type: ignore[no-untyped-def]
    from typer.testing import CliRunner

    return CliRunner()


@pytest.fixture
def refuse_reads(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """``refuse_reads(suffix)``: every open of a path ending in ``suffix`` fails as the
    system refuses a file without read permission (chmod cannot, as root)."""
    import builtins
    import os

    real_open, real_os_open = builtins.open, os.open

    def refuse(suffix: str) -> None:
        def check(path: object) -> None:
            if str(path).endswith(suffix):
                raise PermissionError(13, "Permission denied", str(path))

        def fake_os_open(path, flags, *a, **k):  # type: ignore[no-untyped-def]
            check(path)
            return real_os_open(path, flags, *a, **k)

        def fake_open(path, *a, **k):  # type: ignore[no-untyped-def]
            check(path)
            return real_open(path, *a, **k)

        monkeypatch.setattr(os, "open", fake_os_open)
        monkeypatch.setattr(builtins, "open", fake_open)

    return refuse


@pytest.fixture(scope="session")
def bpe_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small tokcost BPE model trained by ``tokcost bpe train`` (the fuzz tests' seed)."""
    from typer.testing import CliRunner

    from tokcost.cli.app import app

    folder = tmp_path_factory.mktemp("bpe")
    (folder / "c.txt").write_text("the cat sat on the mat; the dog sat on the log.\n" * 20)
    result = CliRunner().invoke(app, ["bpe", "train", str(folder / "c.txt"), "--vocab-size",
                                      "280", "-o", str(folder / "m.bpe")])
    assert result.exit_code == 0, result.output
    return folder / "m.bpe"
