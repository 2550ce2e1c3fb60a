"""The one cut rule: where text (or a file's bytes) may be cut so that chunk counts add up
exactly to the whole text's count (a hypothesis test checks this for every tokenizer).

The rule is defined one character at a time (``_is_cut``); the finders below give the
same answers at C speed: they check the characters near the end (or the start) one by
one, where ordinary text has its cut, and scan longer stretches in bulk, ASCII through a
byte class table, other text through a regular expression that finds a superset of the
cut points, each then checked by the rule itself (tests/test_cut_speed.py compares them
with the per-character rule on random text, and the superset on every code point).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from tokcost.adapters.base import Tokenizer

SCAN_BYTES = 4096  # first window read around an offset to find a cut (doubled as needed)

_NEAR = 64  # characters checked one by one before scanning in bulk
_WINDOW = 4096  # the first bulk window, in characters; doubled up to _MAX_WINDOW
_MAX_WINDOW = 1 << 20
_MAX_MASKS = 32  # more specials than this are only checked one cut at a time


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


# --- the rule in bulk ------------------------------------------------------------------
#
# ASCII text: each byte becomes its class (a letter, 0 digit, space, . punctuation that
# cuts, x anything else), computed from the rule itself, and a bytes pattern finds each
# cut: cutting punctuation after a letter or digit, a space between two letters or two
# digits.


def _ascii_class(ch: str) -> int:
    if _is_letter(ch):
        return ord("a")
    if _is_number(ch):
        return ord("0")
    if ch == " ":
        return ord(" ")
    return ord(".") if _is_splittable_punct(ch) else ord("x")


_ASCII_CLASSES = bytes(_ascii_class(chr(c)) for c in range(128)) + b"x" * 128
_ASCII_CUTS = {  # each alternative starts with its cut character: a fast scan for those
    True: re.compile(rb"\.(?<=[a0]\.)| (?<=a )(?=a)| (?<=0 )(?=0)"),
    False: re.compile(rb" (?<=a )(?=a)| (?<=0 )(?=0)"),
}
# Other text: \w holds every letter and number (and more), \s is str.isspace, so these
# find every cut point and some others; each one found is then checked by _is_cut.
_CANDIDATES = {
    True: re.compile(r"(?<=\w)(?:[^\w\s']|_| (?=\w))"),
    False: re.compile(r"(?<=\w) (?=\w)"),
}


def _window_cuts(
    text: str, a: int, b: int, punct: bool, mask: Callable[[str], str] | None = None
) -> list[int]:
    """Every cut point ``i`` with ``1 <= a <= i < b``, in order (``mask``: fewer, see
    ``Specials.mask``)."""
    seg = text[a - 1 : b + 1]  # the character before the first, and after the last
    if mask is not None:
        seg = mask(seg)
    if seg.isascii():
        classes = seg.encode("ascii").translate(_ASCII_CLASSES)
        if b"." not in classes and b" " not in classes:  # letters only, say: no cut at all
            return []
        # classes[j] is text[a - 1 + j]
        return [a - 1 + j for m in _ASCII_CUTS[punct].finditer(classes, 1)
                if (j := m.start()) <= b - a]
    found = _CANDIDATES[punct].finditer(seg, 1)
    return [a - 1 + j for m in found
            if (j := m.start()) <= b - a and _is_cut(seg, j, punct=punct)]


def _cuts_backward(
    text: str, lo: int, hi: int, punct: bool, mask: Callable[[str], str] | None = None
) -> Iterator[list[int]]:
    """The cut points ``i`` with ``lo <= i < hi``, in groups (each in order), last group first."""
    lo = max(lo, 1)
    near = max(lo, hi - _NEAR)
    for i in range(hi - 1, near - 1, -1):
        if _is_cut(text, i, punct=punct):
            yield [i]
    b, size = near, _WINDOW
    while b > lo:
        a = max(lo, b - size)
        yield _window_cuts(text, a, b, punct, mask)
        b, size = a, min(2 * size, _MAX_WINDOW)


def _cuts_forward(
    text: str, lo: int, hi: int, punct: bool, mask: Callable[[str], str] | None = None
) -> Iterator[list[int]]:
    """The cut points ``i`` with ``lo <= i < hi``, in groups (each in order), first group first."""
    lo = max(lo, 1)
    near = min(hi, lo + _NEAR)
    for i in range(lo, near):
        if _is_cut(text, i, punct=punct):
            yield [i]
    a, size = near, _WINDOW
    while a < hi:
        b = min(hi, a + size)
        yield _window_cuts(text, a, b, punct, mask)
        a, size = b, min(2 * size, _MAX_WINDOW)


# --- special tokens --------------------------------------------------------------------


class Specials:
    """Special-token texts that a cut must never fall inside (for ``allow_special``: each
    is one token, and ``"<|im start|>"`` has a cut point between ``m`` and ``s``).

    >>> s = Specials(["<|im start|>"])
    >>> s.inside("a<|im start|>", 5), s.inside("a<|im start|>", 1)
    (True, False)
    """

    def __init__(self, texts: Iterable[str]) -> None:
        # Longest first: at each start the longest special that occurs there is found.
        self.texts = tuple(sorted({t for t in texts if len(t) > 1}, key=lambda t: (-len(t), t)))
        self.longest = len(self.texts[0]) if self.texts else 0
        alternatives = "|".join(re.escape(t) for t in self.texts)
        self._starts = re.compile(f"(?=({alternatives}))") if self.texts else None
        # Each special with a cut point inside, and the same text with those points
        # made plain ("\x01" is no letter, digit, space or punctuation): see mask.
        masks = [(t, t[0] + "".join("\x01" if c == " " or _is_splittable_punct(c) else c
                                    for c in t[1:])) for t in self.texts]
        self._masks = [(t, m) for t, m in masks if t != m]
        if len(self._masks) > _MAX_MASKS or any("\x01" in t for t in self.texts):
            self._masks = []  # many, or a mask could spell a special: check cut by cut

    def __bool__(self) -> bool:
        return bool(self.texts)

    def __repr__(self) -> str:
        return f"Specials({list(self.texts)!r})"

    def mask(self, text: str) -> str:
        """``text`` with the cut points inside (most) occurrences of a special removed, in
        bulk: the rule's answer at every other index stays the same (a masked character
        was a space or punctuation, which neither precedes nor follows a cut as a letter
        or digit), so the cuts found in it are the rule's, less some that ``outside``
        would drop; those left are still checked by it (overlapping occurrences)."""
        for special, masked in self._masks:
            text = text.replace(special, masked)
        return text

    def inside(self, text: str, i: int) -> bool:
        """Whether a special occurs in ``text`` across index ``i`` (starts before, ends after)."""
        if self._starts is None:
            return False
        end = min(len(text), i + self.longest - 1)
        for m in self._starts.finditer(text, max(0, i - self.longest + 1), end):
            if m.start() >= i:
                return False
            if m.end(1) > i:
                return True
        return False

    def outside(self, text: str, cuts: list[int]) -> list[int]:
        """The ``cuts`` (in order) that no occurrence of a special in ``text`` lies across."""
        if self._starts is None or not cuts:
            return cuts
        if 2 * self.longest * len(cuts) < cuts[-1] - cuts[0]:  # a few, far apart
            return [cut for cut in cuts if not self.inside(text, cut)]
        lo = max(0, cuts[0] - self.longest + 1)
        hi = min(len(text), cuts[-1] + self.longest - 1)
        spans = [(m.start(), m.end(1)) for m in self._starts.finditer(text, lo, hi)]
        if not spans:
            return cuts
        kept: list[int] = []
        j, covered = 0, -1  # the furthest end of the occurrences that start before the cut
        for cut in cuts:
            while j < len(spans) and spans[j][0] < cut:
                covered = max(covered, spans[j][1])
                j += 1
            if covered <= cut:
                kept.append(cut)
        return kept


@lru_cache(maxsize=64)
def _specials(texts: frozenset[str]) -> Specials:
    return Specials(texts)


def specials_of(texts: Iterable[str]) -> Specials | None:
    """``Specials`` for these texts (built once per set), or None when none can hold a cut."""
    found = _specials(frozenset(texts))
    return found if found else None


@dataclass(frozen=True)
class CutRule:
    """Where one reading may cut: ``find_boundary``'s points (``punct=False``: only the
    spaces), never inside one of ``specials``.

    ``for_tokenizers`` picks it: special-token text is ordinary text unless
    ``allow_special``; then each tokenizer's specials are kept whole, and a
    tokenizer that cannot list its specials keeps the space cuts only (which never
    fall inside ``<|...|>``).
    """

    punct: bool = True
    specials: Specials | None = None

    @classmethod
    def for_tokenizers(cls, tokenizers: Iterable[Tokenizer], *, allow_special: bool) -> CutRule:
        """The rule for reading once for all ``tokenizers`` (only streamable ones see chunks)."""
        if not allow_special:
            return cls()
        from tokcost.adapters.base import Describable

        texts: set[str] = set()
        punct = True
        for tok in tokenizers:
            if not tok.streamable:
                continue
            if isinstance(tok, Describable):
                texts.update(tok.special_tokens())
            else:
                punct = False
        return cls(punct, specials_of(texts))

    @property
    def reach(self) -> int:
        """Characters past a cut that must be known before taking it (beyond the rule's
        one): a special that starts before the cut may end that far after it."""
        return self.specials.longest - 1 if self.specials else 0

    def last(self, text: str, lo: int, hi: int) -> int:
        """The last cut ``i`` with ``lo <= i < hi`` in ``text``, or -1."""
        mask = self.specials.mask if self.specials is not None else None
        for group in _cuts_backward(text, lo, hi, self.punct, mask):
            if self.specials is not None:
                group = self.specials.outside(text, group)
            if group:
                return group[-1]
        return -1

    def first(self, text: str, lo: int, hi: int) -> int:
        """The first cut ``i`` with ``lo <= i < hi`` in ``text``, or -1."""
        mask = self.specials.mask if self.specials is not None else None
        for group in _cuts_forward(text, lo, hi, self.punct, mask):
            if self.specials is not None:
                group = self.specials.outside(text, group)
            if group:
                return group[0]
        return -1


def find_boundary(
    text: str, start: int = 0, *, punct: bool = True, specials: Specials | None = None
) -> int:
    """The last index ``i > start`` where ``text`` may be cut for exact streaming, or -1:
    before a space between two letters or two digits, or before punctuation after a
    letter or digit (no piece of the gpt2, cl100k, o200k or Tekken pre-tokenizers spans
    one). ``punct=False`` keeps only the space rule (never inside ``<|endoftext|>``);
    ``specials`` are never cut inside.

    >>> text = "one two"
    >>> text[:find_boundary(text)], text[find_boundary(text):]
    ('one', ' two')
    """
    return CutRule(punct, specials).last(text, start + 1, len(text))


def find_boundary_forward(
    text: str,
    start: int,
    *,
    punct: bool = True,
    stop: int | None = None,
    specials: Specials | None = None,
) -> int:
    """The first boundary at or after ``start`` and before ``stop`` (see find_boundary), or -1.

    >>> find_boundary_forward("one two three", 4)
    7
    """
    end = len(text) if stop is None else min(stop, len(text))
    return CutRule(punct, specials).first(text, start, end)


# surrogateescape's stand-ins for undecodable bytes read as the U+FFFD that the
# streaming decoder puts in their place, so bytes and text obey the same rule.
_UNDECODABLE = dict.fromkeys(range(0xDC80, 0xDD00), "\ufffd")


def _width(ch: str) -> int:
    return len(ch.encode("utf-8", "surrogateescape"))


def next_cut(
    fh: IO[bytes],
    offset: int,
    size: int,
    *,
    punct: bool = True,
    specials: Specials | None = None,
) -> int:
    """The first byte offset ``>= offset`` where a file of ``size`` bytes may be cut (by
    ``find_boundary``'s rule, an undecodable byte read as U+FFFD), or ``size``. It depends
    only on the bytes near ``offset``, so two readers agree on it without talking.

    >>> import io
    >>> data = "one two".encode()
    >>> next_cut(io.BytesIO(data), 1, len(data))
    3
    """
    if offset <= 0:
        return 0
    if offset >= size:
        return size
    rule = CutRule(punct, specials)
    # Start early: the character that ends at `offset` starts up to 4 bytes before it,
    # and a special across the cut up to `reach` characters before that.
    lo = max(0, offset - 4 - 4 * rule.reach)
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
        # the rule looks one character ahead, and a special `reach` more.
        stop = len(raw) if eof else len(raw) - 4 - rule.reach
        cut = rule.first(raw.translate(_UNDECODABLE), max(first, 1), stop)
        if cut >= 0:
            return pos + len(raw[first:cut].encode("utf-8", "surrogateescape"))
        if eof:
            return size
        scan *= 2
