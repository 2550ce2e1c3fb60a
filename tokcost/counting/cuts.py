"""The one cut rule: where text (or a file's bytes) may be cut so that chunk counts add up
exactly to the whole text's count (a hypothesis test checks this for every tokenizer)."""

from __future__ import annotations

import unicodedata
from typing import IO

SCAN_BYTES = 4096  # first window read around an offset to find a cut (doubled as needed)


def _is_letter(ch: str) -> bool:
    return ch.isalpha()  # str.isalpha is exactly \p{L}


def _is_number(ch: str) -> bool:
    return unicodedata.category(ch)[0] == "N"  # \p{N}


def _is_splittable_punct(ch: str) -> bool:
    # Punctuation or a symbol starts a new piece after a letter or a digit in the
    # gpt2, cl100k, o200k and Tekken patterns; an apostrophe does not (o200k glues 's
    # to the word), a combining mark does not (o200k counts marks as part of the
    # word), and neither does an unassigned code point (category C): a newer regex
    # engine may know it as a letter.
    return (
        ch not in "'\r\n"
        and not ch.isspace()
        and unicodedata.category(ch)[0] not in "LMNC"
    )


def _is_cut(text: str, i: int, *, punct: bool = True) -> bool:
    """Whether ``text`` may be cut before index ``i`` (see find_boundary)."""
    ch, prev = text[i], text[i - 1]
    if ch == " ":
        if i + 1 >= len(text):
            return False
        nxt = text[i + 1]
        return (_is_letter(prev) and _is_letter(nxt)) or (_is_number(prev) and _is_number(nxt))
    return punct and _is_splittable_punct(ch) and (_is_letter(prev) or _is_number(prev))


def find_boundary(text: str, start: int = 0, *, punct: bool = True) -> int:
    """The last index ``i > start`` where ``text`` may be cut for exact streaming, or -1.

    A cut lies before a space between two letters or two digits, or before a
    punctuation mark that follows a letter or a digit: no piece of the gpt2,
    cl100k, o200k (or Tekken) pre-tokenizers spans such a point, and the piece
    before it ends the same way whether or not the text goes on. ``punct=False``
    keeps only the space rule, which never cuts inside special-token text such
    as ``<|endoftext|>`` (for ``allow_special``).

    >>> text = "one two"
    >>> text[:find_boundary(text)], text[find_boundary(text):]
    ('one', ' two')
    """
    for i in range(len(text) - 1, start, -1):
        if _is_cut(text, i, punct=punct):
            return i
    return -1


def find_boundary_forward(
    text: str, start: int, *, punct: bool = True, stop: int | None = None
) -> int:
    """The first boundary at or after ``start`` and before ``stop`` (see find_boundary), or -1.

    >>> find_boundary_forward("one two three", 4)
    7
    """
    for i in range(max(start, 1), len(text) if stop is None else stop):
        if _is_cut(text, i, punct=punct):
            return i
    return -1


# surrogateescape's stand-ins for undecodable bytes read as the U+FFFD that the
# streaming decoder puts in their place, so bytes and text obey the same rule.
_UNDECODABLE = dict.fromkeys(range(0xDC80, 0xDD00), "\ufffd")


def _width(ch: str) -> int:
    return len(ch.encode("utf-8", "surrogateescape"))


def next_cut(fh: IO[bytes], offset: int, size: int, *, punct: bool = True) -> int:
    """The first byte offset ``>= offset`` where a file of ``size`` bytes may be cut, or ``size``.

    The rule is ``find_boundary``'s, applied to the characters around ``offset``
    (an undecodable byte counts as the U+FFFD it is read as); a cut always lies at
    the start of a well-formed character after a whole one. The answer depends only
    on the bytes near ``offset``, so two readers of the same file asking about the
    same offset agree without talking (the byte-range shards of ``tokcost.scale``).

    >>> import io
    >>> data = "one two".encode()
    >>> next_cut(io.BytesIO(data), 1, len(data))
    3
    """
    if offset <= 0:
        return 0
    if offset >= size:
        return size
    # Start up to 4 bytes early: the character that ends at `offset` starts there or later.
    lo = max(0, offset - 4)
    scan = SCAN_BYTES
    while True:
        fh.seek(lo)
        buf = fh.read(min(scan, size - lo))
        eof = lo + len(buf) >= size or len(buf) < min(scan, size - lo)
        raw = buf.decode("utf-8", "surrogateescape")  # one character per undecodable byte
        first, pos = 0, lo  # the first character that starts at or after `offset`
        while pos < offset and first < len(raw):
            pos += _width(raw[first])
            first += 1
        # Unless at the end, the last 3 characters may be a cut-off character's bytes,
        # and the rule looks one character ahead.
        stop = len(raw) if eof else len(raw) - 4
        cut = find_boundary_forward(raw.translate(_UNDECODABLE), first, punct=punct, stop=stop)
        if cut >= 0:
            return pos + len(raw[first:cut].encode("utf-8", "surrogateescape"))
        if eof:
            return size
        scan *= 2
