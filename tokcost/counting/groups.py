"""Counts summed up by extension, language or folder (``count --by``), as tokei and scc sum
code up by language, and rows sorted and cut (``--sort``, ``--top``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from tokcost.errors import UsageError, arg
from tokcost.units import parse_count

BY = ("ext", "lang", "dir")
SORTS = ("tokens", "name", "bytes")
NO_EXT = "(none)"


@dataclass(frozen=True, kw_only=True)
class CountView:
    """How counts are shown: summed ``by`` ext|lang|dir, rows sorted (``sort``: tokens and
    bytes largest first, name A-Z; default: input order, groups by tokens) and cut to ``top``."""

    by: str | None = None
    sort: str | None = None
    top: int | None = None

    def __post_init__(self) -> None:
        for name, allowed in (("by", BY), ("sort", SORTS)):
            value = getattr(self, name)
            if value is not None and value not in allowed:
                raise UsageError(f"{arg(name)} takes {', '.join(allowed[:-1])} or {allowed[-1]}, "
                                 f"got {value!r}", param=name, value=value)
        if self.top is not None:
            top = parse_count(self.top, param="top")
            if top < 1:
                raise UsageError(f"{arg('top', top)}: give 1 or more rows", param="top")
            object.__setattr__(self, "top", top)

    def order(self, rows: Sequence[Any], spec: str, name: Callable[[Any], str]) -> list[Any]:
        """``rows`` (files or groups) sorted as asked (ties by name), or as given; --by or --top
        alone sort by tokens."""
        sort = self.sort or ("tokens" if self.by or self.top else None)
        if sort == "name":
            return sorted(rows, key=name)
        if sort is None:
            return list(rows)
        return sorted(rows, key=lambda r: (-(r.tokens[spec] if sort == "tokens" else r.bytes),
                                           name(r)))


@dataclass
class Group:
    """One row of a summary: ``name`` (an extension, a language or a folder) and its sums."""

    name: str
    files: int = 0
    bytes: int = 0
    chars: int = 0
    tokens: dict[str, int] = field(default_factory=dict)
    rows: int = 1  # the rows it sums up: more for '(N more)'

    def add(self, files: int, size: int, chars: int, tokens: dict[str, int]) -> None:
        self.files += files
        self.bytes += size
        self.chars += chars
        for spec, n in tokens.items():
            self.tokens[spec] = self.tokens.get(spec, 0) + n

    def to_dict(self, labels: dict[str, str]) -> dict[str, Any]:
        return {"name": self.name, "files": self.files, "bytes": self.bytes, "chars": self.chars,
                "tokens": {labels[s]: n for s, n in self.tokens.items()}}


def extension(path: str) -> str:
    """'a/B.TXT' -> '.txt' (lower case, as the binary-skip summary names them); none: (none)."""
    return PurePath(path).suffix.lower() or NO_EXT


def folder(path: str, roots: Sequence[str]) -> str:
    """The first component below the folder named that holds ``path`` (the longest such root):
    'src/app/main.py' under 'src' -> 'src/app/', 'src/README.md' -> 'src/README.md'; a file
    under no folder named (named itself, stdin) is its own group."""
    for root in sorted(roots, key=len, reverse=True):
        shown = str(PurePath(root))  # as the walk spells it: './src/' is 'src'
        prefix = "" if shown == "." else os.path.join(shown, "")
        if not path.startswith(prefix) or (not prefix and (os.path.isabs(path)
                                                           or path.startswith(".."))):
            continue
        first, sep, _ = path[len(prefix):].partition(os.sep)
        return prefix + first + sep
    return path


def group(files: Iterable[Any], by: str, roots: Sequence[str] = ()) -> list[Group]:
    """``files`` (``path``, ``bytes``, ``chars``, ``tokens``) summed per group, in order met."""
    if by == "lang":
        from tokcost.counting.filetypes import language as key
    groups: dict[str, Group] = {}
    for f in files:
        name = (extension(f.path) if by == "ext" else folder(f.path, roots) if by == "dir"
                else key(f.path))
        groups.setdefault(name, Group(name)).add(1, f.bytes, f.chars, f.tokens)
    return list(groups.values())
