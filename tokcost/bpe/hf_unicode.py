"""The Unicode classes of the named split patterns as Hugging Face ``tokenizers`` has them.

HF's regex engine (Oniguruma, bundled in ``tokenizers``) carries older Unicode tables than
the ``regex`` module: 17,144 letters and 336 numbers that ``regex`` 2026.11 knows (Unicode 16
and 17) are unassigned to HF, and U+0295 is Ll there, Lo here. A corpus holding one of them
is split differently, and every merge after the first one it touches can differ (the 48 MB
benchmark corpus holds 26 such characters: 7,796 of 32,512 merges moved). So the trainer
splits as HF does: ``HfView`` replaces each character that the two tables class differently
by a stand-in of HF's class before ``regex`` splits the line, and cuts the line itself at
the same offsets (a spelled-out pattern of HF's ranges did the same 13-34x slower). The
ranges (``hf_unicode.json``) are made by ``write()`` from the installed ``tokenizers``;
tests/test_bpe_core.py checks them against HF. ASCII is the same in every table."""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Callable
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

#: The class expressions of tiktoken's patterns, and their names in the data file.
CLASSES = {
    "L": r"\p{L}",
    "N": r"\p{N}",
    "UPPER": r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]",
    "LOWER": r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]",
}
DATA = "hf_unicode.json"


def compute() -> dict[str, Any]:
    """Each class's code points as HF's engine matches them, as inclusive ranges (slow:
    seconds per class; run when ``tokenizers`` changes its engine)."""
    import tokenizers
    from tokenizers import Regex, pre_tokenizers

    points = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    text = "".join(map(chr, points))
    out: dict[str, Any] = {"tokenizers": tokenizers.__version__, "classes": {}}
    for name, cls in CLASSES.items():
        # "removed" leaves the gaps between matches, with character offsets.
        gaps = pre_tokenizers.Split(Regex(cls), "removed").pre_tokenize_str(text)
        ranges, at = [], 0
        for _, (start, stop) in [*gaps, ("", (len(points), len(points)))]:
            if start > at:
                ranges.append([points[at], points[start - 1]])
            at = stop
        out["classes"][name] = _merge_ranges(ranges)
    return out


def _merge_ranges(ranges: list[list[int]]) -> list[list[int]]:
    """Join ranges the surrogate gap split (no class holds a surrogate)."""
    merged: list[list[int]] = []
    for a, b in ranges:
        if merged and (merged[-1][1] + 1 == a or (merged[-1][1] == 0xD7FF and a == 0xE000)):
            merged[-1][1] = b
        else:
            merged.append([a, b])
    return merged


def write(path: Path | None = None) -> Path:
    """Write ``compute()`` into the package (or ``path``)."""
    target = path or Path(__file__).with_name(DATA)
    target.write_text(json.dumps(compute(), separators=(",", ":")) + "\n", encoding="utf-8")
    return target


@lru_cache(maxsize=1)
def tables() -> dict[str, list[list[int]]]:
    data = json.loads(resources.files("tokcost.bpe").joinpath(DATA).read_text("utf-8"))
    classes: dict[str, list[list[int]]] = data["classes"]
    return classes


#: A character of each combination of classes (L, N, UPPER, LOWER) a category can have:
#: other, No/Nd/Nl, Ll, Lu/Lt, Lm/Lo, M (the categories exclude each other).
STAND_INS = ("\u00a7", "\u00b2", "\u00e9", "\u00c9", "\u00aa", "\u0301")


class HfView:
    """``findall`` of a named pattern, with HF's classes for the characters whose class
    differs between HF's tables and ``regex``'s (found one character at a time, cached)."""

    def __init__(self, findall: Callable[[str], list[str]]) -> None:
        import regex

        self.findall = findall
        self.ranges = {name: ([a for a, _ in r], [b for _, b in r]) for name, r in
                       tables().items()}
        self.tests = [regex.compile(cls).fullmatch for cls in CLASSES.values()]
        stand = {self._ours(ch): ch for ch in STAND_INS}
        self.stand_in = stand
        self.known: dict[str, str | None] = {}

    def _ours(self, ch: str) -> tuple[bool, ...]:
        return tuple(test(ch) is not None for test in self.tests)

    def _hf(self, ch: str) -> tuple[bool, ...]:
        c = ord(ch)
        out = []
        for starts, ends in self.ranges.values():
            i = bisect_right(starts, c) - 1
            out.append(i >= 0 and c <= ends[i])
        return tuple(out)

    def _stand_in(self, ch: str) -> str | None:
        hf = self._hf(ch)
        if hf == self._ours(ch):
            return None
        if hf not in self.stand_in:  # no category has it: HF's tables are not a table
            raise ValueError(f"no stand-in for U+{ord(ch):04X} ({hf})")
        return self.stand_in[hf]

    def __call__(self, line: str) -> list[str]:
        swap: dict[int, str] | None = None
        known = self.known
        for ch in set(line):
            if ch < "\x80":
                continue
            rep = known[ch] if ch in known else known.setdefault(ch, self._stand_in(ch))
            if rep is not None:
                swap = swap or {}
                swap[ord(ch)] = rep
        if swap is None:
            return self.findall(line)
        # The named patterns leave no gaps: the pieces of the stand-in line cut the line.
        pieces, at = [], 0
        for piece in self.findall(line.translate(swap)):
            pieces.append(line[at : at + len(piece)])
            at += len(piece)
        return pieces
