"""The fast cut finders give exactly the per-character rule's answers (issue 13 item 3).

The oracle is the rule as it was first written: a Python loop over every character
calling ``_is_cut``. The finders check the characters near the end one by one and scan
longer stretches in bulk (ASCII through byte classes, other text through a regular
expression whose matches are a superset of the cut points); small windows here make
every path run on short random texts.
"""

from __future__ import annotations

import io
import re
import sys
import unicodedata
from array import array
from collections.abc import Iterator
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokcost.counting import cuts
from tokcost.counting.cuts import (
    Specials,
    find_boundary,
    find_boundary_forward,
    next_cut,
)

PIECES = [
    *"ab cdE  \n\r\t.,'!?/-_0123456789", "é", "e\u0301", "Я", "中文", "東京", "हि", "ال",
    "'s", "’", "<|endoftext|>", "<|im start|>", "\u00a0", "🙂", "\u200d", "  ", "\r\n",
    "42", "3.14", "x=1;", "\ufffd", "\u2160", "\u00b2", "\x00", "\x7f", "\u0378", "_a",
    "aaaaaaaaaaaaaaaaaaaa", "--------", "          ", "ЯЯЯЯЯЯЯЯ", "1 2", "a b",
]
texts = st.lists(st.sampled_from(PIECES), max_size=60).map("".join)


def old_backward(text: str, start: int, punct: bool) -> int:
    for i in range(len(text) - 1, start, -1):
        if cuts._is_cut(text, i, punct=punct):
            return i
    return -1


def old_forward(text: str, start: int, punct: bool, stop: int | None) -> int:
    for i in range(max(start, 1), len(text) if stop is None else stop):
        if cuts._is_cut(text, i, punct=punct):
            return i
    return -1


def _occurrences(text: str, specials: list[str]) -> Iterator[tuple[int, int]]:
    for s in specials:
        at = text.find(s)
        while at >= 0:
            yield at, at + len(s)
            at = text.find(s, at + 1)


def guarded(text: str, i: int, specials: list[str]) -> bool:
    return any(a < i < b for a, b in _occurrences(text, specials))


@pytest.fixture(params=["default", "tiny windows"])
def windows(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.param == "default":
        yield
        return
    with mock.patch.multiple(cuts, _NEAR=2, _WINDOW=3, _MAX_WINDOW=8):
        yield


@settings(max_examples=300, deadline=None)
@given(text=texts, start=st.integers(0, 80), punct=st.booleans())
def test_find_boundary_is_the_per_character_rule(text: str, start: int, punct: bool) -> None:
    with mock.patch.multiple(cuts, _NEAR=2, _WINDOW=3, _MAX_WINDOW=8):
        assert find_boundary(text, start, punct=punct) == old_backward(text, start, punct)
    assert find_boundary(text, start, punct=punct) == old_backward(text, start, punct)


@settings(max_examples=300, deadline=None)
@given(text=texts, start=st.integers(0, 80), stop=st.one_of(st.none(), st.integers(0, 400)),
       punct=st.booleans())
def test_find_boundary_forward_is_the_per_character_rule(
    text: str, start: int, stop: int | None, punct: bool
) -> None:
    if stop is not None:
        stop = min(stop, len(text))
    expected = old_forward(text, start, punct, stop)
    with mock.patch.multiple(cuts, _NEAR=2, _WINDOW=3, _MAX_WINDOW=8):
        assert find_boundary_forward(text, start, punct=punct, stop=stop) == expected
    assert find_boundary_forward(text, start, punct=punct, stop=stop) == expected


SPECIALS = ["<|im start|>", "<|endoftext|>", "[INST 2]", "a b", "12 34"]


@settings(max_examples=200, deadline=None)
@given(text=texts, start=st.integers(0, 40), punct=st.booleans(),
       chosen=st.lists(st.sampled_from(SPECIALS), min_size=1, unique=True))
def test_no_cut_inside_a_special(text: str, start: int, punct: bool, chosen: list[str]) -> None:
    """With specials, the finders give the rule's last/first cut outside every occurrence."""
    specials = Specials(chosen)
    points = [i for i in range(max(start, 1), len(text))
              if cuts._is_cut(text, i, punct=punct) and not guarded(text, i, chosen)]
    with mock.patch.multiple(cuts, _NEAR=2, _WINDOW=3, _MAX_WINDOW=8):
        last = find_boundary(text, start, punct=punct, specials=specials)
        first = find_boundary_forward(text, start, punct=punct, specials=specials)
    assert last == max((p for p in points if p > start), default=-1)
    assert first == (points[0] if points else -1)


def test_specials_guard_examples() -> None:
    s = Specials(["<|im start|>", "<s>"])
    text = "x<|im start|>y"
    assert [i for i in range(len(text)) if s.inside(text, i)] == list(range(2, 13))
    assert not Specials(["x"])  # a one-character special holds no cut
    assert cuts.specials_of(["x", ""]) is None


def test_bulk_classes_cover_every_code_point() -> None:
    """The bulk scan's regular expression finds every cut (a superset, then checked):
    each letter and number is \\w, each cutting punctuation mark is not \\w, \\s or "'"
    (or is "_"), and \\s is str.isspace — on every code point of this Python."""
    codec = "utf-32-le" if sys.byteorder == "little" else "utf-32-be"
    every = array("I", range(sys.maxunicode + 1)).tobytes().decode(codec, "surrogatepass")
    not_word = re.sub(r"\w+", "", every)
    assert {c for c in set(map(unicodedata.category, not_word)) if c[0] in "LN"} == set()
    word_space = "".join(re.findall(r"[\w\s']+", every)).replace("_", "")
    assert not any(map(cuts._is_splittable_punct, word_space))
    assert "".join(re.findall(r"\s", every)) == "".join(filter(str.isspace, every))


def test_ascii_classes_follow_the_rule() -> None:
    for c in range(128):
        ch = chr(c)
        expected = ("a" if cuts._is_letter(ch) else "0" if cuts._is_number(ch)
                    else " " if ch == " " else "." if cuts._is_splittable_punct(ch) else "x")
        assert chr(cuts._ASCII_CLASSES[c]) == expected, repr(ch)


@pytest.mark.parametrize(
    ("text", "start", "expected"),
    [
        pytest.param("a" * 100_000, 0, -1, id="one-letter-run"),
        pytest.param("a" * 100_000 + " b", 0, 100_000, id="run-then-space"),
        pytest.param("a b" + "a" * 100_000, 0, 1, id="space-far-back"),
        pytest.param("x." + "\u044f" * 50_000, 0, 1, id="non-ascii-run"),
        pytest.param("a-" + " " * 50_000, 0, 1, id="space-run"),
        pytest.param("a-" + "-" * 50_000, 0, 1, id="punct-run"),
        pytest.param("中文。" + "中" * 50_000, 0, 2, id="cjk-run"),
    ],
)
def test_long_stretches(windows: None, text: str, start: int, expected: int) -> None:
    assert find_boundary(text, start) == expected
    assert find_boundary(text, start) == old_backward(text, start, True)


@settings(max_examples=100, deadline=None)
@given(text=texts, scan=st.integers(1, 64), punct=st.booleans(),
       chosen=st.lists(st.sampled_from(SPECIALS), unique=True))
def test_next_cut_rescans_and_specials(
    text: str, scan: int, punct: bool, chosen: list[str]
) -> None:
    """From every byte offset, next_cut (small windows: the rescan path) gives the rule's
    first cut outside every special, as a byte offset."""
    data = text.encode()
    starts = [0]
    for ch in text:
        starts.append(starts[-1] + len(ch.encode()))
    specials = Specials(chosen) if chosen else None
    points = [i for i in range(1, len(text))
              if cuts._is_cut(text, i, punct=punct) and not guarded(text, i, chosen)]
    fh = io.BytesIO(data)
    with mock.patch.object(cuts, "SCAN_BYTES", scan):
        for offset in range(1, len(data)):
            expected = next((starts[p] for p in points if starts[p] >= offset), len(data))
            assert next_cut(fh, offset, len(data), punct=punct, specials=specials) == expected


class _ShortReads:
    """A pipe: each read hands over at most the next of ``sizes`` bytes."""

    def __init__(self, data: bytes, sizes: list[int]) -> None:
        self.data, self.sizes, self.pos, self.i = data, sizes, 0, 0

    def read(self, n: int = -1, /) -> bytes:
        size = self.sizes[self.i % len(self.sizes)]
        self.i += 1
        out = self.data[self.pos : self.pos + min(n, size)]
        self.pos += len(out)
        return out


@settings(max_examples=100, deadline=None)
@given(text=texts, block=st.integers(1, 16), reads=st.lists(st.integers(1, 7), min_size=1,
                                                             max_size=4))
def test_stream_in_short_reads_cuts_where_the_rule_does(
    text: str, block: int, reads: list[int]
) -> None:
    """Full blocks or a pipe's short reads: every chunk ends at a cut point of the rule,
    the chunks are the text, and their counts add up to the whole text's."""
    from tokcost import get_tokenizer
    from tokcost.counting import TextStream

    tok = get_tokenizer("tiktoken:o200k_base")
    data = text.encode()
    for source in (io.BytesIO(data), _ShortReads(data, reads)):
        chunks = list(TextStream(source, block_bytes=block).chunks())
        assert "".join(chunks) == text
        end = 0
        for chunk in chunks[:-1]:
            end += len(chunk)
            assert cuts._is_cut(text, end), (text, end)
        assert sum(tok.count(c) for c in chunks) == tok.count(text)


def test_a_long_stretch_without_a_cut_is_one_chunk_read_once() -> None:
    """Each block is searched once: the stretch ends up whole in one chunk (linear time),
    with the rest of the text up to its end (no block after it searched for a cut)."""
    from tokcost.counting import TextStream

    text = "one two " + "x" * 200_000 + " three"
    chunks = list(TextStream(io.BytesIO(text.encode()), block_bytes=4096).chunks())
    assert chunks == ["one two", " " + "x" * 200_000 + " three"]
    more = text + " four" * 2000
    chunks = list(TextStream(io.BytesIO(more.encode()), block_bytes=4096).chunks())
    assert chunks[0] == "one two" and chunks[1].startswith(" " + "x" * 200_000 + " three four")
    assert len(chunks[1]) < 200_000 + 2 * 4096 and len(chunks) > 2
