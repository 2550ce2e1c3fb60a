"""The one cut rule: where text (or a file's bytes) may be cut so that chunk counts add up to the
whole's; ``_is_cut`` defines it, the finders apply it in bulk (tests/test_cut_speed.py)."""

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
    # Starts a piece after a letter or digit in gpt2/cl100k/o200k/Tekken; not an apostrophe
    # (o200k's 's), a mark (part of o200k's word), or category C (a newer regex: a letter?).
    return ch not in "'\r\n" and not ch.isspace() and unicodedata.category(ch)[0] not in "LMNC"


def _is_cut(text: str, i: int, *, punct: bool = True) -> bool:
    """Whether ``text`` may be cut before index ``i`` (see find_boundary)."""
    ch, prev = text[i], text[i - 1]
    if ch == " ":
        if i + 1 >= len(text):
            return False
        nxt = text[i + 1]
        return (_is_letter(prev) and _is_letter(nxt)) or (_is_number(prev) and _is_number(nxt))
    return punct and _is_splittable_punct(ch) and (_is_letter(prev) or _is_number(prev))


# ASCII in bulk: each byte becomes its class (a letter, 0 digit, space, . cutting
# punctuation, x other), computed from the rule itself; a bytes pattern finds the cuts.
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
# Other text: a superset of the cut points (\w holds every letter and digit), each checked.
_CANDIDATES = {
    True: re.compile(r"(?<=\w)(?:[^\w\s']|_| (?=\w))"), False: re.compile(r"(?<=\w) (?=\w)")}


def _window_cuts(text: str, a: int, b: int, punct: bool,
                 mask: Callable[[str], str] | None = None) -> list[int]:
    """Every cut point ``i`` with ``1 <= a <= i < b``, in order."""
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
    return [a - 1 + j for m in found if (j := m.start()) <= b - a and _is_cut(seg, j, punct=punct)]


def _cuts_backward(text: str, lo: int, hi: int, punct: bool,
                   mask: Callable[[str], str] | None = None) -> Iterator[list[int]]:
    """The cut points in ``[lo, hi)``, in ordered groups, last group first."""
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


def _cuts_forward(text: str, lo: int, hi: int, punct: bool,
                  mask: Callable[[str], str] | None = None) -> Iterator[list[int]]:
    """The cut points in ``[lo, hi)``, in ordered groups, first group first."""
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


class Specials:
    """Special-token texts a cut must never fall inside (``allow_special``)."""

    def __init__(self, texts: Iterable[str]) -> None:
        # Longest first: at each start the longest special that occurs there is found.
        self.texts = tuple(sorted({t for t in texts if len(t) > 1}, key=lambda t: (-len(t), t)))
        self.longest = len(self.texts[0]) if self.texts else 0
        alternatives = "|".join(re.escape(t) for t in self.texts)
        self._starts = re.compile(f"(?=({alternatives}))") if self.texts else None
        # Each special with a cut inside, and its text with those cuts masked by "\x01".
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
        """``text`` with the cuts inside most specials masked (``outside`` checks the rest)."""
        for special, masked in self._masks:
            text = text.replace(special, masked)
        return text

    def inside(self, text: str, i: int) -> bool:
        """Whether a special in ``text`` starts before index ``i`` and ends after it."""
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
        """The ``cuts`` that no special in ``text`` lies across."""
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
    """``Specials`` for these texts (cached), or None when there are none."""
    found = _specials(frozenset(texts))
    return found if found else None


@dataclass(frozen=True)
class CutRule:
    """Where one reading may cut: ``find_boundary``'s points, never inside ``specials``."""

    punct: bool = True
    specials: Specials | None = None

    @classmethod
    def for_tokenizers(cls, tokenizers: Iterable[Tokenizer], *, allow_special: bool) -> CutRule:
        """The rule for all ``tokenizers``: spaces only where one says so (``cut_punct``), or
        where one cannot list its specials; never inside a text one matches (``matched_texts``:
        Hugging Face's added tokens, matched even without ``allow_special``)."""
        from tokcost.adapters.base import Describable
        texts: set[str] = set()
        punct = True
        for tok in tokenizers:
            if not tok.streamable:
                continue
            punct = punct and getattr(tok, "cut_punct", True)
            matched = getattr(tok, "matched_texts", None)
            if matched is not None:
                texts.update(matched(allow_special))
            elif allow_special and isinstance(tok, Describable):
                texts.update(tok.special_tokens())
            elif allow_special:
                punct = False
        return cls(punct, specials_of(texts))

    @property
    def reach(self) -> int:
        """Characters past a cut that must be known before taking it (a special's tail)."""
        return self.specials.longest - 1 if self.specials else 0

    def last(self, text: str, lo: int, hi: int) -> int:
        """The last cut ``i`` with ``lo <= i < hi`` in ``text``, or -1."""
        return self._find(_cuts_backward, -1, text, lo, hi)

    def first(self, text: str, lo: int, hi: int) -> int:
        """The first cut ``i`` with ``lo <= i < hi`` in ``text``, or -1."""
        return self._find(_cuts_forward, 0, text, lo, hi)

    def _find(self, cuts: Callable[..., Iterator[list[int]]], end: int, text: str, lo: int,
              hi: int) -> int:
        mask = self.specials.mask if self.specials is not None else None
        for group in cuts(text, lo, hi, self.punct, mask):
            if self.specials is not None:
                group = self.specials.outside(text, group)
            if group:
                return group[end]
        return -1


def find_boundary(text: str, start: int = 0, *, punct: bool = True, specials: Specials | None = None
) -> int:
    """The last index ``i > start`` where ``text`` may be cut, or -1: before a space between
    two letters or two digits, or before punctuation after a letter or digit (no gpt2,
    cl100k, o200k or Tekken piece spans one); ``punct=False``: the space rule only."""
    return CutRule(punct, specials).last(text, start + 1, len(text))


def find_boundary_forward(text: str, start: int, *, punct: bool = True, stop: int | None = None,
                          specials: Specials | None = None) -> int:
    """The first boundary in ``[start, stop)`` (see find_boundary), or -1."""
    end = len(text) if stop is None else min(stop, len(text))
    return CutRule(punct, specials).first(text, start, end)


# Undecodable bytes read as the stream decoder's U+FFFD: bytes and text cut alike.
_UNDECODABLE = dict.fromkeys(range(0xDC80, 0xDD00), "\ufffd")


def _width(ch: str) -> int:
    return len(ch.encode("utf-8", "surrogateescape"))


def next_cut(fh: IO[bytes], offset: int, size: int, *, punct: bool = True,
             specials: Specials | None = None) -> int:
    """The first byte offset ``>= offset`` where a file may be cut, from nearby bytes only."""
    if offset <= 0:
        return 0
    if offset >= size:
        return size
    rule = CutRule(punct, specials)
    # The character ending at `offset` starts up to 4 bytes back; a special, `reach` more.
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
        # Short of the end: a cut-off character, the rule's look-ahead, a special's reach.
        stop = len(raw) if eof else len(raw) - 4 - rule.reach
        cut = rule.first(raw.translate(_UNDECODABLE), max(first, 1), stop)
        if cut >= 0:
            return pos + len(raw[first:cut].encode("utf-8", "surrogateescape"))
        if eof:
            return size
        scan *= 2
