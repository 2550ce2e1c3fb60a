"""Training at scale: exact (unbounded) counts, the ``max_pretokens`` cap and its rule,
and the line handling that makes pre-tokenization cheaper (issue 18 part 3)."""

from __future__ import annotations

from collections import Counter
from itertools import chain
from pathlib import Path

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tokcost.bpe import TrainerConfig, train, train_from_counts
from tokcost.bpe.pretokenize import (
    _LINE_SPLIT,
    PATTERNS,
    PretokenizeSpec,
    count_block,
    count_words,
    prune_counts,
    split_text,
)
from tokcost.cli.app import app
from tokcost.errors import UsageError

runner = CliRunner()


def _merged(result: object) -> list[bytes]:
    model = result.model  # type: ignore[attr-defined]
    return [model.decoder[i] for _, _, i in model.merges]


# -- 64-bit (in fact unbounded) counts, from a word-count table, not text ----------

def test_pair_counts_past_2_32_keep_their_order() -> None:
    # "ab" occurs 6e9 times (two words of 3e9 each), "cd" 5e9 times: both past 2**32.
    # 32-bit pair counts (HF's) wrap: ab -> 1_705_032_704, cd -> 705_032_704, and
    # xa, ya (3e9 > 2**31 - 1) go negative and are never queued.
    counts = {"xab": 3_000_000_000, "yab": 3_000_000_000, "cd": 5_000_000_000}
    result = train_from_counts(counts, TrainerConfig(vocab_size=260, pattern="gpt2"))
    assert _merged(result) == [b"ab", b"cd", b"xab", b"yab"]
    assert result.total_pretokens == 11_000_000_000


def test_counts_past_2_64_do_not_wrap() -> None:
    # Past 64 bits too: u64 counts would make ab 1 and cd 0.
    counts = {"ab": 2**64 + 1, "cd": 2**64, "ef": 2**40}
    result = train_from_counts(counts, TrainerConfig(vocab_size=259, pattern="gpt2"))
    assert _merged(result) == [b"ab", b"cd", b"ef"]
    assert result.total_pretokens == 2**65 + 1 + 2**40


def test_a_pair_summed_over_words_past_2_32() -> None:
    # No single word passes 2**31, but the pair "ab" summed over 3 words does (6.4e9),
    # and beats "cd" (4e9) which a wrapped count would put first.
    n = 2**31 - 1
    counts = {"abx": n, "aby": n, "abz": n, "cd": 4_000_000_000}
    result = train_from_counts(counts, TrainerConfig(vocab_size=258, pattern="gpt2"))
    assert _merged(result) == [b"ab", b"cd"]


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.text("abc\u00e9 ", min_size=1, max_size=6), st.integers(1, 9), max_size=30),
    st.integers(256, 300),
)
def test_numpy_pair_counting_equals_the_python_loop(table: dict[str, int], vocab: int) -> None:
    # Counts past int64's reach take the Python loop; both must start the merges alike.
    import importlib

    train_mod = importlib.import_module("tokcost.bpe.train")  # the name is also a function
    if not table:
        return
    config = TrainerConfig(vocab_size=vocab, pattern="gpt2")
    fast = train_from_counts(table, config)
    old, chunk = train_mod._INT64_SAFE, train_mod._PAIR_CHUNK_CHARS
    try:
        train_mod._PAIR_CHUNK_CHARS = 5  # many chunks: their lists join in word order
        chunked = train_from_counts(table, config)
        train_mod._INT64_SAFE = 0
        slow = train_from_counts(table, config)
    finally:
        train_mod._INT64_SAFE, train_mod._PAIR_CHUNK_CHARS = old, chunk
    assert fast.model.merges == slow.model.merges == chunked.model.merges


# -- the cap: prune_counts is the rule ---------------------------------------------

def _by_rule(items: list[tuple[str, int]], n: int) -> list[tuple[str, int]]:
    """The rule written plainly: the n highest counts, ties by first seen, in table order."""
    order = {w: i for i, (w, _) in enumerate(items)}
    keep = {w for w, _ in sorted(items, key=lambda wc: (-wc[1], order[wc[0]]))[:n]}
    return [(w, c) for w, c in items if w in keep]


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.text("abcdef", min_size=1, max_size=4), st.integers(1, 6), max_size=40),
    st.integers(1, 45),
)
def test_prune_counts_is_the_stated_rule(table: dict[str, int], n: int) -> None:
    counts = Counter(table)
    dropped = prune_counts(counts, n)
    assert list(counts.items()) == _by_rule(list(table.items()), n)
    assert dropped == (len(table) > n)


def test_cap_at_or_above_the_distinct_count_changes_nothing(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat on the mat\nthe dog sat on the log\n" * 50, encoding="utf-8")
    free = train([corpus], TrainerConfig(vocab_size=290, pattern="gpt2"))
    capped = train(
        [corpus], TrainerConfig(vocab_size=290, pattern="gpt2", max_pretokens=free.distinct_pretokens)
    )
    assert capped.model.merges == free.model.merges
    assert capped.distinct_pretokens == free.distinct_pretokens


def test_cap_below_keeps_the_most_frequent_and_warns(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    rare = " ".join(f"w{i:04d}" for i in range(3000))
    corpus.write_text(("the cat sat\n" * 500) + rare + "\n", encoding="utf-8")
    result = train([corpus], TrainerConfig(vocab_size=270, pattern="gpt2", max_pretokens=10))
    assert result.distinct_pretokens == 10
    assert any("max_pretokens=10" in w for w in result.warnings)
    # The frequent words are all kept, so the first merges are those of the frequent text.
    assert b" cat" in _merged(result) and b" sat" in _merged(result)


def test_counting_never_holds_more_than_twice_the_cap(tmp_path: Path, monkeypatch) -> None:
    import tokcost.bpe.pretokenize as pre

    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"word{i} common\n" for i in range(20000)), encoding="utf-8")
    monkeypatch.setattr(pre, "BLOCK_CHARS", 4096)  # many blocks, so pruning runs midway
    largest = 0
    real = pre._cap_while_counting

    def spy(counts: dict[str, int], cap: int | None) -> None:
        nonlocal largest
        real(counts, cap)
        largest = max(largest, len(counts))

    monkeypatch.setattr(pre, "_cap_while_counting", spy)
    counts = count_words([corpus], PretokenizeSpec(PATTERNS["gpt2"], max_pretokens=100))
    assert len(counts) == 100
    assert 0 < largest <= 200
    assert counts[" common"] == 20000  # never pruned: its count is exact
    assert counts["\n"] == 20000


def test_jobs_do_not_change_uncapped_counts(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"line {i % 37} of text\n" for i in range(5000)), encoding="utf-8")
    spec = PretokenizeSpec(PATTERNS["cl100k"])
    assert count_words([corpus], spec, jobs=2) == count_words([corpus], spec, jobs=1)


def test_max_pretokens_must_be_positive() -> None:
    with pytest.raises(UsageError, match="max_pretokens=0 must be 1 or more"):
        train_from_counts({"ab": 1}, TrainerConfig(vocab_size=257, max_pretokens=0))


# -- line handling: splitlines fast path and repeated lines counted once -------------

def _naive(block: str, pattern: str) -> Counter[str]:
    lines = regex.findall(_LINE_SPLIT, block)
    return Counter(chain.from_iterable(split_text(line, pattern) for line in lines))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(
    ["a b\n", "\n", "  x\r\n", "é ü\n", "a\u2028b\n", "tab\t\n", "\x0cff\n", "zz", " \n\n"]
), max_size=30))
def test_count_block_equals_line_by_line(parts: list[str]) -> None:
    block = "".join(parts)
    for pattern in (PATTERNS["cl100k"], PATTERNS["o200k"], r"[a-z]+"):
        assert count_block(block, PretokenizeSpec(pattern)) == _naive(block, pattern)


# -- the CLI flag ---------------------------------------------------------------------

@pytest.mark.parametrize(
    ("value", "code", "fragment"),
    [
        ("0", 2, "--max-pretokens 0 must be 1 or more"),
        ("abc", 2, "--max-pretokens 'abc' is not a count"),
        ("2", 0, "reached --max-pretokens 2 distinct pre-tokens"),
        ("1k", 0, "trained 260 tokens"),
    ],
)
def test_cli_max_pretokens(tmp_path: Path, value: str, code: int, fragment: str) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("hello world\nhello there\nthe world\n", encoding="utf-8")
    args = ["bpe", "train", str(corpus), "-v", "260", "--max-pretokens", value,
            "-o", str(tmp_path / "m.bpe")]
    result = runner.invoke(app, args)
    assert result.exit_code == code, result.output
    assert fragment in result.output
    assert "Traceback" not in result.output
    if code:
        assert len([ln for ln in result.output.splitlines() if ln.strip()]) == 1


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_cap_counts_after_the_special_tokens_are_taken_out(tmp_path: Path, jobs: int) -> None:
    # The special token is the most frequent pre-token; taking it out of a table
    # already cut to the cap would leave cap - 1 pre-tokens to learn from.
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"<|s|> a{i % 7} b{i % 11}\n" for i in range(300)), encoding="utf-8")
    config = TrainerConfig(vocab_size=270, pattern="gpt2", special_tokens=("<|s|>",),
                           max_pretokens=5, jobs=jobs)
    result = train([corpus], config)
    assert result.distinct_pretokens == 5
