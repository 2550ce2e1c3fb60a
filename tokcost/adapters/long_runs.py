"""Whether a text holds a long run of one character class: a candidate for one huge pre-token.

The OpenAI patterns (o200k, cl100k) cut text into pieces each made of at most one character
ahead of a run of one class (letters and marks, whitespace, or the rest but digits: ``\\p{N}``
is a piece of at most three, and never joins another class) and a short tail (a contraction,
or newlines after punctuation). So a piece of n characters holds a run of about n/2 or more.
gigatoken's BPE is superlinear in a piece's length (docs/counting-speed.md: 1 MB of ``a`` in
one piece takes it 0.35 s, 2 MB 0.84 s; toktok-rs 0.005 and 0.010 s), so counting sends a text
holding a run of ``limit`` characters or more elsewhere. Either backend counts exactly; this
test only decides which is fast, so the classes come from Python's ``unicodedata`` (its
Unicode version need not be the backends') and err towards "maybe one run".
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

LETTER, SPACE, OTHER = 1, 2, 4  # class bits; a character may carry more than one
ASTRAL = 0x10000  # the table's last entry: every code point past the BMP
SAMPLES_PER_RUN = 64  # a run of `limit` characters holds this many samples, at least


UNKNOWN = 0xFF  # not classed yet: a code point is classed the first time it is met


def _class_of(cp: int) -> int:
    """The class bits of one code point: ``ord("a")`` -> LETTER, ``ord("1")`` -> 0."""
    import unicodedata

    if cp >= ASTRAL:  # astral letters (CJK extensions) and symbols (emoji)
        return LETTER | OTHER
    ch = chr(cp)
    kind = unicodedata.category(ch)[0]
    if kind == "L":
        return LETTER
    if kind == "M":  # o200k's letter runs hold marks, cl100k's "other" runs
        return LETTER | OTHER
    if ch.isspace():  # \x1c-\x1f: Python's space, not Unicode's White_Space
        return SPACE | (OTHER if kind == "C" and 0x1C <= cp < 0x20 else 0)
    return 0 if kind == "N" else OTHER


@cache
def _classes() -> NDArray[np.uint8]:
    """Class bits per code point, U+0000..U+FFFF, then one entry for every astral one; ASCII
    classed now, the rest as met (about 2 µs each: classing all 65,537 up front took 0.1 s)."""
    import numpy as np

    table = np.full(ASTRAL + 1, UNKNOWN, np.uint8)  # (65537,)
    table[:128] = list(_ascii()[:128])
    return table


@cache
def _ascii() -> bytes:
    """Class bits per ASCII byte, a ``bytes.translate`` table (the rest of its 256: 0)."""
    return bytes(_class_of(cp) for cp in range(128)) + bytes(128)


# One table per class: class bits -> 1 where the class is among them, else 0.
_MEMBER = {bit: bytes(1 if v & bit else 0 for v in range(256)) for bit in (LETTER, SPACE, OTHER)}


def _bits(text: str) -> bytes:
    """A byte of class bits per character of ``text``: ``"a 1"`` -> ``b"\\x01\\x02\\x00"``."""
    if text.isascii():  # O(1) in CPython; then encoding is a copy
        return text.encode("ascii").translate(_ascii())
    import numpy as np

    codes = np.minimum(np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32),
                       ASTRAL)  # (len,)
    table = _classes()
    bits = table[codes]
    if (bits == UNKNOWN).any():  # idempotent writes: two threads may class one code point
        for cp in np.unique(codes[bits == UNKNOWN]).tolist():
            table[cp] = _class_of(cp)
        bits = table[codes]
    return bytes(bits.tobytes())


def has_long_run(text: str, limit: int) -> bool:
    """Whether ``text`` holds ``limit`` or more consecutive characters of one class.

    Every ``step``-th character is classed first (``step = limit // 64``): a run of ``limit``
    holds at least 64 consecutive samples of its class, so only stretches where 64 samples in
    a row share a class are classed in full (ordinary text has none: about 0.1 ms per MB).
    ``has_long_run("a" * 10 + " b", 8)`` -> True; ``has_long_run("ab " * 10, 8)`` -> False.
    """
    if len(text) < limit:
        return False
    step = max(1, limit // SAMPLES_PER_RUN)
    need = b"\x01" * (limit // step)  # the samples a run of `limit` characters holds, at least
    run = b"\x01" * limit
    sampled = _bits(text[::step])
    for bit in (LETTER, SPACE, OTHER):
        member = sampled.translate(_MEMBER[bit])  # 1 per sample of this class, else 0
        first = member.find(need)
        while first >= 0:
            end = member.find(b"\x00", first)
            end = len(member) if end < 0 else end
            # the run lies between the samples either side, which are not of this class
            lo, hi = max(0, (first - 1) * step + 1), min(len(text), end * step)
            if run in _bits(text[lo:hi]).translate(_MEMBER[bit]):
                return True
            first = member.find(need, end)
    return False
