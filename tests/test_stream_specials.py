"""Streaming with allow_special never cuts inside a special token (issue 13 item 6).

A special token's text may hold a space between two letters (``<|im start|>``, which
``bpe train --special`` and ``tiktoken:PATH`` sidecars accept) or digits
(``<|tool 42|>``): both are cut points of the ordinary rule. With ``allow_special``
each special is one token, so the stream, the shard planner and the Dask engine keep
every occurrence whole, and the chunk counts add up to the whole text's count.
"""

from __future__ import annotations

import base64
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import tokcost
from tokcost import get_tokenizer
from tokcost.bpe import TrainerConfig
from tokcost.cli.app import app
from tokcost.counting import CutRule, Inputs, TextStream, count_paths
from tokcost.runner import RunConfig
from tokcost.scale import count_shard, merge_shard_counts, plan_shards

SPECIALS = ["<|im start|>", "<|tool 42|>", "<|endoftext|>", "[INST 7 8]"]
PIECES = [*SPECIALS, "a", "b", " ", "  ", "im", " start", "|>", "<|", "42", "7 8", "\n",
          ".", ",", "'s", "é", "中文", "\r\n", "x=1;", "start|>", "<|im"]
texts = st.lists(st.sampled_from(PIECES), max_size=60).map("".join)
ISSUE = "<|im start|>" * 300_000


@pytest.fixture(scope="module")
def sidecar_spec(tmp_path_factory: pytest.TempPathFactory) -> str:
    """``tiktoken:PATH``: every byte a token, a few merges, o200k's pattern, and specials
    with spaces and digits in a sidecar PATH.json (as ``tokcost bpe export`` writes)."""
    folder = tmp_path_factory.mktemp("ranks")
    tokens = [bytes([b]) for b in range(256)] + [b"im", b"st", b"art", b"start", b"  ", b"42"]
    path = folder / "specials.tiktoken"
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(tokens)))
    specials = {s: len(tokens) + i for i, s in enumerate(SPECIALS)}
    (folder / "specials.tiktoken.json").write_text(
        json.dumps({"pattern": "o200k", "special_tokens": specials}), encoding="utf-8")
    return f"tiktoken:{path}"


@pytest.fixture(scope="module")
def bpe_spec(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tokcost BPE model trained with ``--special '<|im start|>'``-style specials."""
    folder = tmp_path_factory.mktemp("bpe")
    corpus = folder / "corpus.txt"
    corpus.write_text("the im start of the tool 42 and the kettle\n" * 50, encoding="utf-8")
    config = TrainerConfig(vocab_size=300, pattern="o200k",
                                   special_tokens=("<|im start|>", "<|tool 42|>"))
    tokcost.train_bpe(tokcost.BPETrainRequest(files=(corpus,), trainer=config,
                                              output=folder / "tok.bpe"))
    return f"bpe:{folder / 'tok.bpe'}"


class ShortReads:
    """A pipe: each read hands over at most the next of ``sizes`` bytes."""

    def __init__(self, data: bytes, sizes: list[int]) -> None:
        self.data, self.sizes, self.pos, self.i = data, sizes or [1], 0, 0

    def read(self, n: int = -1, /) -> bytes:
        size = self.sizes[self.i % len(self.sizes)]
        self.i += 1
        take = min(size, len(self.data) - self.pos) if n < 0 else min(n, size)
        out = self.data[self.pos : self.pos + take]
        self.pos += len(out)
        return out


def _occurrences(text: str) -> Iterator[tuple[int, int]]:
    for s in SPECIALS:
        at = text.find(s)
        while at >= 0:
            yield at, at + len(s)
            at = text.find(s, at + 1)


def test_the_issue_example_counts_one_token_each(sidecar_spec: str, tmp_path: Path) -> None:
    """``"<|im start|>" * 300_000`` is 300,000 tokens, not 300,033, however it is read."""
    tok = get_tokenizer(sidecar_spec)
    assert tok.count(ISSUE, allow_special=True) == 300_000
    path = tmp_path / "issue.txt"
    path.write_text(ISSUE, encoding="utf-8")
    for run, block in ((None, 1 << 20), (RunConfig(jobs=2), 1 << 20), (None, 4096)):
        report = count_paths(Inputs(paths=[str(path)]), {sidecar_spec: tok}, allow_special=True,
                             run=run, block_bytes=block)
        assert report.files[0].tokens[sidecar_spec] == 300_000, (run, block)
    shards = plan_shards([(str(path), path.stat().st_size)], 1_000_003)
    merged = merge_shard_counts(count_shard(s, [sidecar_spec], allow_special=True)
                                for s in shards)
    assert merged[str(path)].tokens[sidecar_spec] == 300_000


@settings(max_examples=120, deadline=None)
@given(text=texts, block=st.integers(1, 12), reads=st.lists(st.integers(1, 9), max_size=5))
def test_stream_keeps_specials_whole(
    sidecar_spec: str, bpe_spec: str, text: str, block: int, reads: list[int]
) -> None:
    """In blocks and in short reads, no chunk ends inside a special, and the counts with
    allow_special add up exactly for every tokenizer whose specials hold spaces/digits."""
    specs = [sidecar_spec, bpe_spec, "tiktoken:o200k_base"]
    toks = [get_tokenizer(s) for s in specs]
    rule = CutRule.for_tokenizers(toks, allow_special=True)
    data = text.encode()
    for source in (io.BytesIO(data), ShortReads(data, reads)):
        stream = TextStream(source, block_bytes=block, punct=rule.punct, specials=rule.specials)
        chunks = list(stream.chunks())
        assert "".join(chunks) == text
        ends = [sum(map(len, chunks[: i + 1])) for i in range(len(chunks) - 1)]
        assert not [(e, a, b) for e in ends for a, b in _occurrences(text) if a < e < b]
        for tok in toks:
            assert sum(tok.count(c, allow_special=True) for c in chunks) == tok.count(
                text, allow_special=True), tok.name


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, shard_bytes=st.integers(1, 40))
def test_shards_keep_specials_whole(
    sidecar_spec: str, bpe_spec: str, tmp_path: Path, text: str, shard_bytes: int
) -> None:
    """The Dask path's map function: byte-range pieces cut where the stream may cut."""
    path = tmp_path / "t.txt"
    path.write_bytes(text.encode())
    specs = [sidecar_spec, bpe_spec]
    shards = plan_shards([(str(path), len(text.encode()))], shard_bytes)
    part = merge_shard_counts(count_shard(s, specs, allow_special=True) for s in shards)
    for spec in specs:
        assert part[str(path)].tokens[spec] == get_tokenizer(spec).count(text, allow_special=True)


def test_dask_engine_keeps_specials_whole(sidecar_spec: str, tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    from tokcost.scale import DaskRunner

    path = tmp_path / "issue.txt"
    text = ISSUE[: 12 * 30_000] + " tail <|tool 42|>"
    path.write_text(text, encoding="utf-8")
    toks = {sidecar_spec: get_tokenizer(sidecar_spec)}
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None, silence_logs=50) as lc, \
            distributed.Client(lc) as client:
        remote = count_paths(Inputs(paths=[str(path)]), toks, allow_special=True, run=DaskRunner(client=client, shard_bytes=5001))
    assert remote.files[0].tokens[sidecar_spec] == toks[sidecar_spec].count(
        text, allow_special=True) == 30_000 + len(" tail ") + 1


def test_cut_rule_for_tokenizers(sidecar_spec: str) -> None:
    tok = get_tokenizer(sidecar_spec)
    assert CutRule.for_tokenizers([tok], allow_special=False) == CutRule()
    rule = CutRule.for_tokenizers([tok], allow_special=True)
    assert rule.punct and rule.specials is not None
    assert set(rule.specials.texts) == set(SPECIALS) and rule.reach == len("<|endoftext|>") - 1

    class Opaque:  # a streamable tokenizer that cannot list its specials
        streamable = True

    unknown = CutRule.for_tokenizers([tok, Opaque()], allow_special=True)  # type: ignore[list-item]
    assert not unknown.punct and unknown.specials == rule.specials


def test_cli_counts_the_issue_example(sidecar_spec: str, tmp_path: Path) -> None:
    path = tmp_path / "issue.txt"
    path.write_text(ISSUE, encoding="utf-8")
    result: Any = CliRunner().invoke(
        app, ["count", str(path), "-t", sidecar_spec, "--allow-special", "--total"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert result.output.strip().splitlines()[-1] == "300000"
