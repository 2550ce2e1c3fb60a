"""The guard that keeps gigatoken off huge pre-tokens: ``has_long_run`` finds every run of
``limit`` characters of one class (letters and marks, whitespace, the rest but digits), as a
character-by-character scan does, however its samples fall."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokcost.adapters.long_runs import LETTER, OTHER, SPACE, _class_of, has_long_run


def longest_run(text: str) -> int:
    """The oracle: the longest run of one class, one character at a time."""
    best = 0
    for bit in (LETTER, SPACE, OTHER):
        run = 0
        for ch in text:
            run = run + 1 if _class_of(ord(ch)) & bit else 0
            best = max(best, run)
    return best


LIMIT = 1 << 15
# One character of each kind the patterns treat apart (and a few that belong to two).
PIECES = ["a", "Z", "é", "中", "ﾃ", "\u0301", " ", "\n", "\r", "\t", "\u3000", "\u00a0", "\x1c",
          "=", "。", "，", "-", "😀", "\ud800", "1", "٣", "Ⅻ"]


@pytest.mark.parametrize(("text", "found"), [
    pytest.param("a" * LIMIT, True, id="one letter"),
    pytest.param("x " + "a" * (LIMIT - 1) + " y", False, id="one letter short by one"),
    pytest.param(" " * LIMIT + "x", True, id="spaces"),
    pytest.param("!" + "\n" * LIMIT, True, id="newlines after punctuation"),
    pytest.param("\r\n" * (LIMIT // 2), True, id="CRLF"),
    pytest.param("=" * LIMIT, True, id="punctuation"),
    pytest.param("中" * LIMIT, True, id="CJK without punctuation"),
    pytest.param("a中é" * (LIMIT // 3 + 1), True, id="letters of three scripts"),
    pytest.param("e\u0301" * (LIMIT // 2), True, id="letters and combining marks"),
    pytest.param("😀" * LIMIT, True, id="astral symbols"),
    pytest.param("\u3000" * LIMIT, True, id="ideographic spaces"),
    pytest.param("1" * LIMIT * 4, False, id="digits split every three"),
    pytest.param(("a" * (LIMIT - 1) + "1") * 20, False, id="runs one short, the samples all in"),
    pytest.param("a1" * LIMIT * 4, False, id="a break every second character"),
    pytest.param("中文，" * LIMIT, False, id="CJK prose"),
    pytest.param("Hello, world! " * LIMIT, False, id="prose"),
])
def test_named_cases(text: str, found: bool) -> None:
    assert has_long_run(text, LIMIT) is found
    assert (longest_run(text) >= LIMIT) is found


def test_the_corpora_have_no_long_run() -> None:
    from pathlib import Path

    corpora = Path(__file__).resolve().parent.parent / "corpora"
    text = "".join(p.read_text(encoding="utf-8") for p in sorted(corpora.rglob("*.txt")))
    assert len(text) > LIMIT and not has_long_run(text * 4, LIMIT)


segments = st.lists(st.tuples(st.sampled_from(PIECES), st.integers(0, 700)), max_size=12)


@settings(max_examples=300, deadline=None)
@given(segments, st.sampled_from([1, 2, 7, 64, 65, 128, 129, 300, 640, 1000]),
       st.integers(0, 70))
def test_agrees_with_a_scan_of_every_character(parts: list[tuple[str, int]], limit: int,
                                                shift: int) -> None:
    # shift moves the text against the samples (every limit // 64-th character)
    text = "é" * shift + "".join(piece * n for piece, n in parts)
    assert has_long_run(text, limit) == (longest_run(text) >= limit)
