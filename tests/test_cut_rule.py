"""One cut rule: where the byte-range shards of tokcost.scale cut a file is where the
streaming reader of tokcost.counting may cut its text, and counts add up either way."""

from __future__ import annotations

import io
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokcost import get_tokenizer
from tokcost.counting import cuts, find_boundary_forward, next_cut
from tokcost.scale import count_shard, merge_shard_counts, plan_shards

# Letters of several scripts, digits, spaces, punctuation, CJK, special-token text,
# combining marks, apostrophes, emoji, CR/LF, odd spaces.
PIECES = [
    *"ab cdE  \n\r\t.,'!?/-_0123456789", "é", "e\u0301", "Я", "中文", "東京", "हि", "ال",
    "'s", "’", "<|endoftext|>", "<|fim_prefix|>", "\u00a0", "🙂", "\u200d", "  ", "\r\n",
    "42", "3.14", "x=1;", "\ufffd",
]
texts = st.lists(st.sampled_from(PIECES), max_size=60).map("".join)
# Bytes that are not UTF-8: a stray byte, a cut-off character, an encoded surrogate.
BAD = [b"\xff", b"\xe6\x97", b"\xed\xa0\x80", b"\x80"]
SPECS = ["tiktoken:o200k_base", "tiktoken:cl100k_base"]


def _starts(text: str) -> list[int]:
    """Byte offset of every character of ``text``, and of its end."""
    offsets = [0]
    for ch in text:
        offsets.append(offsets[-1] + len(ch.encode()))
    return offsets


def _stream_cut(text: str, starts: list[int], offset: int, punct: bool) -> int:
    """The streaming rule's first cut at or after byte ``offset``, as a byte offset."""
    if offset <= 0:
        return 0
    first = next(i for i, b in enumerate(starts) if b >= offset)
    cut = find_boundary_forward(text, first, punct=punct)
    return starts[cut] if cut >= 0 else starts[-1]


@settings(max_examples=300, deadline=None)
@given(text=texts, punct=st.booleans(), scan=st.integers(1, 64))
def test_shard_cuts_are_the_streaming_cuts(text: str, punct: bool, scan: int) -> None:
    """From every byte offset, the shard planner's next cut is the streaming rule's."""
    data = text.encode()
    starts = _starts(text)
    fh = io.BytesIO(data)
    # Small windows: the rescan path. next_cut reads SCAN_BYTES from its own module
    # (patching tokcost.counting's re-export would leave it at 4096, testing nothing).
    with mock.patch.object(cuts, "SCAN_BYTES", scan):
        for offset in range(len(data) + 1):
            assert next_cut(fh, offset, len(data), punct=punct) == _stream_cut(
                text, starts, offset, punct), (text, offset)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.one_of(st.sampled_from(PIECES).map(str.encode), st.sampled_from(BAD)),
                      max_size=50))
def test_shard_cuts_in_bad_utf8_are_streaming_cuts(parts: list[bytes]) -> None:
    """With undecodable bytes too, a shard cut splits the text as the stream reads it,
    at a point where the streaming rule cuts."""
    data = b"".join(parts)
    whole = data.decode("utf-8", errors="replace")
    fh = io.BytesIO(data)
    for cut in {next_cut(fh, offset, len(data)) for offset in range(len(data) + 1)}:
        before = data[:cut].decode("utf-8", errors="replace")
        assert before + data[cut:].decode("utf-8", errors="replace") == whole
        if 0 < cut < len(data):
            i = len(before)
            assert find_boundary_forward(whole, i, stop=i + 1) == i, (data, cut)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.one_of(st.sampled_from(PIECES).map(str.encode), st.sampled_from(BAD)),
                      max_size=80),
       shard_bytes=st.integers(1, 48), allow_special=st.booleans())
def test_counts_via_shards_equal_whole_text_counts(
    tmp_path: Path, parts: list[bytes], shard_bytes: int, allow_special: bool
) -> None:
    data = b"".join(parts)
    path = tmp_path / "t.txt"
    path.write_bytes(data)
    shards = plan_shards([(str(path), len(data))], shard_bytes)
    part = merge_shard_counts(count_shard(s, SPECS, allow_special=allow_special)
                              for s in shards)[str(path)]
    text = data.decode("utf-8", errors="replace")
    assert (part.bytes, part.chars) == (len(data), len(text))
    for spec in SPECS:
        assert part.tokens[spec] == get_tokenizer(spec).count(text, allow_special=allow_special)


@pytest.mark.parametrize(
    ("text", "cuts"),
    [
        pytest.param("one two", [3], id="space-between-letters"),
        pytest.param("12 34", [2], id="space-between-digits"),
        pytest.param("v2.0", [2], id="punctuation-after-a-digit"),
        pytest.param("it's", [], id="never-before-an-apostrophe"),
        pytest.param("a<|endoftext|>", [1, 12], id="special-token-text-as-text"),
    ],
)
def test_cut_points_named(text: str, cuts: list[int]) -> None:
    data = text.encode()
    found = sorted({next_cut(io.BytesIO(data), i, len(data)) for i in range(1, len(data))})
    assert [c for c in found if c < len(data)] == [_starts(text)[c] for c in cuts]
