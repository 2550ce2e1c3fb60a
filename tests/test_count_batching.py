"""Batched counting stays exact (issue 13 item 3): many small files in one backend call,
one file's blocks spread over calls and threads, specials kept whole across a split.

Every count is compared with tiktoken's own (``encode_ordinary``, or ``encode`` with
``allowed_special="all"``), with auto's backends (gigatoken, toktok-rs) counting where they
are installed and with them hidden (tiktoken counts then): one token of difference fails.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tokcost
from tokcost.adapters import fast_count, registry, tiktoken_enc
from tokcost.adapters.openai_encodings import ENCODINGS
from tokcost.app.check import AdhocBudget
from tokcost.counting import Inputs, Reader, count_paths, local
from tokcost.runner import LocalRunner, RunConfig, available_cpus

PIECES = ["a", "Hello", " ", "  ", "\n", "\r\n", "\t", "don't", "'s", "é", "e\u0301", "日本語",
          "Привет", "12", "3.5", ",", "!", "<|endoftext|>", "<|", "|>", "🙂", "👍🏽", "x=1;",
          "\u00a0", "\ufffd"]
texts = st.lists(st.sampled_from(PIECES) | st.text(max_size=4), max_size=50).map("".join)
# A NUL byte makes a file binary (skipped): files hold the rest.
file_texts = texts.map(lambda t: t.replace("\x00", ""))
CHECKS = settings(max_examples=60, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow,
                                         HealthCheck.function_scoped_fixture])


@cache
def oracle(name: str) -> Any:
    return tiktoken_enc.load_named(ENCODINGS[name])


def want(name: str, text: str, allow_special: bool = False) -> int:
    enc = oracle(name)
    if allow_special:
        return len(enc.encode(text, allowed_special="all"))
    return len(enc.encode_ordinary(text))


AUTO_MODULES = [fast_count.BACKENDS[name].module for name in fast_count.AUTO_ORDER]


@pytest.fixture(params=["default", "no-fast"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Each test twice: with the default backend, and with auto's backends unimportable."""
    monkeypatch.delenv(fast_count.BACKEND_ENV, raising=False)
    if request.param == "no-fast":
        for module in AUTO_MODULES:
            monkeypatch.setitem(sys.modules, module, None)
    registry._get_tokenizer.cache_clear()
    yield str(request.param)
    registry._get_tokenizer.cache_clear()


_BUILT: dict[bool, dict[str, tiktoken_enc.TiktokenTokenizer]] = {}


def tokenizers() -> dict[str, tiktoken_enc.TiktokenTokenizer]:
    """The two encodings under the backend in force, built once per backend: building
    tiktoken's encodings for every example was most of these tests' time."""
    hidden = sys.modules.get(AUTO_MODULES[0], False) is None
    if hidden not in _BUILT:
        _BUILT[hidden] = {"o200k": tiktoken_enc.load("o200k_base"),
                          "cl100k": tiktoken_enc.load("cl100k_base")}
    return _BUILT[hidden]


@CHECKS
@given(batch=st.lists(st.tuples(st.sampled_from(["o200k", "cl100k"]), texts), max_size=12),
       allow_special=st.booleans())
def test_a_batch_counts_as_each_text_alone(
    backend: str, batch: list[tuple[str, str]], allow_special: bool
) -> None:
    toks = tokenizers()
    if backend == "no-fast":
        assert all(t.count_backend == "tiktoken" for t in toks.values())
    names = {"o200k": "o200k_base", "cl100k": "cl100k_base"}
    got = local._count_batch(toks, batch, allow_special)
    assert got == [want(names[spec], text, allow_special) for spec, text in batch]


def test_count_many_is_one_call_for_the_fast_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    class Many:
        name, exact, streamable, releases_gil = "many", True, True, True

        def count(self, text: str, *, allow_special: bool = False) -> int:
            raise AssertionError("count_many should have been used")

        def count_many(self, texts: list[str], *, allow_special: bool = False,
                       threads: int = 1) -> list[int]:
            calls.append(len(texts))
            return [len(t) for t in texts]

    assert local._count_batch({"m": Many()}, [("m", "ab"), ("m", "c"), ("m", "")],  # type: ignore[dict-item]
                              False) == [2, 1, 0]
    assert calls == [3]


@CHECKS
@given(files=st.lists(file_texts, min_size=1, max_size=8), block=st.sampled_from([16, 97, 4096]),
       batch_chars=st.sampled_from([1, 40, 1 << 20]), jobs=st.sampled_from([1, 2]))
def test_files_batched_across_calls_count_exactly(
    backend: str, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
    files: list[str], block: int, batch_chars: int, jobs: int,
) -> None:
    # Small batches (a file's chunks in several calls) and large ones (many files in one).
    monkeypatch.setattr(local, "BATCH_CHARS", batch_chars)
    folder = tmp_path_factory.mktemp("files")
    for i, text in enumerate(files):
        (folder / f"{i:03d}.txt").write_bytes(text.encode("utf-8", "surrogatepass"))
    report = count_paths(Inputs(paths=[str(folder)]), tokenizers(), run=RunConfig(jobs=jobs),
                         block_bytes=block)
    by_name = {Path(f.path).name: f for f in report.files}
    for i, raw in enumerate(files):
        text = raw.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
        counted = by_name[f"{i:03d}.txt"]
        assert counted.tokens == {"o200k": want("o200k_base", text),
                                  "cl100k": want("cl100k_base", text)}, (block, batch_chars)


@pytest.mark.parametrize("block", [7, 64, 1000, 4096])
def test_one_file_split_at_every_block_size(backend: str, tmp_path: Path, block: int,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local, "BATCH_CHARS", 3 * block)
    text = "".join(PIECES[(i * 7) % len(PIECES)] for i in range(3000))
    path = tmp_path / "one.txt"
    path.write_bytes(text.encode())
    report = count_paths(Inputs(paths=[str(path)]), tokenizers(), run=RunConfig(jobs=2),
                         block_bytes=block)
    assert report.files[0].tokens == {"o200k": want("o200k_base", text),
                                      "cl100k": want("cl100k_base", text)}


@pytest.fixture
def spaced_specials(tmp_path: Path) -> str:
    """``tiktoken:PATH`` with specials holding a space and digits (a sidecar, as ``bpe
    export`` writes it)."""
    tokens = [bytes([b]) for b in range(256)] + [b"im", b"start", b"42"]
    path = tmp_path / "spaced.tiktoken"
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(tokens)))
    specials = {"<|im start|>": len(tokens), "<|tool 42|>": len(tokens) + 1}
    (tmp_path / "spaced.tiktoken.json").write_text(
        json.dumps({"pattern": "o200k", "special_tokens": specials}), encoding="utf-8")
    return f"tiktoken:{path}"


@pytest.mark.parametrize("block", [5, 13, 100])
def test_specials_with_spaces_stay_whole_across_batches(
    spaced_specials: str, tmp_path: Path, block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local, "BATCH_CHARS", block)
    tok = tokcost.get_tokenizer(spaced_specials)
    text = "<|im start|>" * 500 + " a b <|tool 42|> 4 2 " * 50
    path = tmp_path / "chat.txt"
    path.write_text(text, encoding="utf-8")
    report = count_paths(Inputs(paths=[str(path)]), {"t": tok}, allow_special=True,
                         run=RunConfig(jobs=2), block_bytes=block)
    assert report.files[0].tokens["t"] == tok.count(text, allow_special=True)
    assert tok.count("<|im start|>" * 500, allow_special=True) == 500


def test_check_counts_on_a_thread_per_cpu_by_default(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # As count: no jobs given means a thread per CPU, and the report is the same.
    for i in range(5):
        (tmp_path / f"p{i}.txt").write_text("hello world " * (i + 1), encoding="utf-8")
    seen: list[Any] = []
    real = local.runner_for

    def spy(run: RunConfig, *, threads: bool) -> Any:
        runner = real(run, threads=threads)
        seen.append(runner)
        return runner

    monkeypatch.setattr(local, "runner_for", spy)
    monkeypatch.chdir(tmp_path)  # ad-hoc paths lie under the cwd
    limits = {"max_tokens_per_file": 8}
    adhoc = AdhocBudget(paths=[str(tmp_path)], limits=limits)
    default = tokcost.check(tokcost.CheckRequest(adhoc=adhoc))
    one = tokcost.check(tokcost.CheckRequest(adhoc=adhoc, jobs=1))
    assert seen == [LocalRunner(available_cpus()), LocalRunner(1)]
    assert default.to_dict() == one.to_dict()
    assert default.exit_code == 1  # p2..p4 exceed 8 tokens: the check still judges


# --- a file smaller than a block: read whole in one call -------------------------------

raw_bytes = st.lists(st.sampled_from([b"a", b" ", b"\n", b"\xc3\xa9", b"\xe6\x97\xa5", b"\xff",
                                      b"\xc3", b"\xe6\x97", b"\xf0\x9f\x99\x82", b"\r\n",
                                      b"<|endoftext|>", b"12", b"."]),
                     max_size=40).map(b"".join)


@CHECKS
@given(data=raw_bytes)
def test_small_files_count_as_the_stream_counts(
    backend: str, tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    # Whole (block larger than the file) and streamed (blocks of 3 bytes) agree on every
    # figure, invalid UTF-8 (a cut-off character at the end too) and progress included.
    path = tmp_path_factory.mktemp("small") / "f.txt"
    path.write_bytes(data)
    results = []
    for block in (1 << 20, 3):
        ticks: list[int] = []
        report = count_paths(Inputs(paths=[str(path)]), tokenizers(), block_bytes=block,
                             progress=lambda stage, done, total, ticks=ticks: ticks.append(done))
        f = report.files[0]
        results.append((f.bytes, f.chars, f.invalid_utf8_bytes, f.tokens, ticks[-1:]))
    assert results[0] == results[1]
    text = data.decode("utf-8", "replace")
    assert results[0][3]["o200k"] == want("o200k_base", text)


def _reading(toks: dict[str, Any], block: int = 1 << 20) -> Any:
    """A local count's reading thread, on its own."""
    return local._Reading(Reader(toks, block), local.CountReport(list(toks)),
                          local.ByteMeter(None), None)


def test_a_file_that_grew_since_it_was_listed_is_streamed(backend: str, tmp_path: Path) -> None:
    text = "one two three. " * 40
    path = tmp_path / "grew.txt"
    path.write_text(text, encoding="utf-8")
    toks = tokenizers()
    reading = _reading(toks, 64)
    listed = local.Source(str(path), path.name, 10)  # as small as it was when walked
    for target, spec, chunk in reading._source(listed):
        target.tokens[spec] += toks[spec].count(chunk)
    [counted] = reading.report.files
    assert not reading.report.skipped
    assert counted.bytes == len(text) and counted.tokens["o200k"] == want("o200k_base", text)


def test_small_binary_and_missing_files_are_skipped_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "bin.dat").write_bytes(b"GIF89a\x00\x01")
    (tmp_path / "ok.txt").write_text("hello world", encoding="utf-8")
    report = count_paths(Inputs(paths=[str(tmp_path)]), tokenizers())
    assert [(s.path.endswith("bin.dat"), s.reason) for s in report.skipped] == [
        (True, "binary (NUL byte at offset 6)")]
    assert [f.tokens["o200k"] for f in report.files] == [2]
    reading = _reading(tokenizers())
    gone = local.Source(str(tmp_path / "gone.txt"), "gone.txt", 3)
    assert list(reading._source(gone)) == [] and not reading.report.files
    assert [(s.path, s.reason) for s in reading.report.skipped] == [
        ("gone.txt", "unreadable (No such file or directory)")]
