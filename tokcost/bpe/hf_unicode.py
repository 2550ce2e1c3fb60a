"""The Unicode classes of the named split patterns as Hugging Face ``tokenizers`` has them.

HF's regex engine (Oniguruma, bundled in ``tokenizers``) carries older Unicode tables than
the ``regex`` module: 17,144 letters and 336 numbers that ``regex`` 2026.11 knows (Unicode 16
and 17) are unassigned to HF, and U+0295 is Ll there, Lo here. A corpus holding one of them
is split differently, and every merge after the first one it touches can differ (the 48 MB
benchmark corpus holds 26 such characters: 7,796 of 32,512 merges moved). So the trainer
splits with the patterns' classes spelled out as HF's ranges (``hf_unicode.json``, made by
``write()`` from the installed ``tokenizers``; tests/test_bpe_core.py checks it against HF).
ASCII is the same in every table, so only lines with other characters are concerned."""

from __future__ import annotations

import json
import re
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


def _spell(ranges: list[list[int]]) -> str:
    return "".join(f"\\U{a:08x}" if a == b else f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges)


@lru_cache(maxsize=8)
def hf_pattern(pattern: str) -> str:
    """``pattern`` with its ``\\p{..}`` classes spelled as HF's ranges, for ``regex``."""
    t = tables()
    body = {name: _spell(t[name]) for name in CLASSES}
    for name in ("UPPER", "LOWER"):
        pattern = pattern.replace(CLASSES[name], f"[{body[name]}]")
    depth = 0
    parts: list[str] = []
    for token in re.findall(r"\\p\{[LN]\}|\\.|\[|\]|[^\\\[\]]+", pattern):
        if token == "[":
            depth += 1
        elif token == "]":
            depth = max(0, depth - 1)
        elif token in (CLASSES["L"], CLASSES["N"]):
            ranges = body["L" if token == CLASSES["L"] else "N"]
            token = ranges if depth else f"[{ranges}]"
        parts.append(token)
    return "".join(parts)
