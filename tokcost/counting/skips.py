"""Skipped inputs in few lines: one per input, but binary files and files already counted
summed up in one line each."""

from __future__ import annotations

import stat
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import PurePath

from tokcost.counting.inputs import Skipped, invalid_utf8_note

BINARY = "binary"  # how sniff_binary's reasons begin
SAME_FILE = "the same file as"  # a path to a file already counted (walk with unique=True)
SHOWN_KINDS = 3  # the commonest extensions a binary summary names; the rest are "others"
UNREADABLE = ("unreadable", "read error")


def same_file_reason(first: str) -> str:
    return f"{SAME_FILE} {first} (counted once)"


_NAME_IT = ": name it directly to read it"
_SPECIAL = ((stat.S_ISFIFO, "a FIFO (named pipe)", _NAME_IT), (stat.S_ISSOCK, "a socket", ""),
            (stat.S_ISCHR, "a character device", _NAME_IT),
            (stat.S_ISBLK, "a block device", _NAME_IT))


def special_file_reason(mode: int) -> str:
    """Why a FIFO, socket or device inside a folder is not read (it may never end)."""
    for test, kind, hint in _SPECIAL:
        if test(mode):
            return f"{kind}, not a regular file{hint}"
    return "not a regular file"


def is_unreadable(skip: Skipped) -> bool:
    """Whether ``skip`` could not be read, rather than being left out by policy."""
    return skip.reason.startswith(UNREADABLE)


def unreadable(skipped: Iterable[Skipped]) -> tuple[Skipped, ...]:
    return tuple(s for s in skipped if is_unreadable(s))


def unreadable_message(skipped: Iterable[Skipped]) -> str | None:
    """The one error line, after the counts, for the inputs that could not be read, or None."""
    failed = len(unreadable(skipped))
    if not failed:
        return None
    inputs = "input" if failed == 1 else "inputs"
    return f"{failed:,} {inputs} could not be read (see the warnings above)"


def _binary_line(skips: Sequence[Skipped]) -> str:
    kinds = Counter(PurePath(s.path).suffix.lower() for s in skips)
    ranked = sorted(kinds.items(), key=lambda kv: (-kv[1], not kv[0], kv[0]))
    parts = [f"{n:,} {ext}" if ext else f"{n:,} with no extension"
             for ext, n in ranked[:SHOWN_KINDS]]
    rest = sum(n for _, n in ranked[SHOWN_KINDS:])
    if rest:
        parts.append(f"{rest:,} others")
    return f"skipped {len(skips):,} binary files: {', '.join(parts)}"


def _same_file_line(skips: Sequence[Skipped]) -> str:
    return (f"skipped {len(skips):,} paths to files counted already (the same device and "
            "inode, as du counts)")


def skip_notes(skipped: Iterable[Skipped], *, verbose: bool = False,
               hint: str = "") -> tuple[str, ...]:
    """One warning per skip, but binary files (or paths counted already) summed up in one line."""
    skipped = list(skipped)
    if verbose:
        return tuple(s.note for s in skipped)
    summaries: list[str] = []
    for kind, line in ((BINARY, _binary_line), (SAME_FILE, _same_file_line)):
        group = [s for s in skipped if s.reason.startswith(kind)]
        if len(group) > 1:
            summaries.append(line(group) + (f"; {hint}" if hint else ""))
            skipped = [s for s in skipped if not s.reason.startswith(kind)]
    return (*(s.note for s in skipped), *summaries)


def count_warnings(skipped: Iterable[Skipped], invalid: Iterable[tuple[str, int]] = (), *,
                   verbose: bool = False, hint: str = "") -> tuple[str, ...]:
    return (*skip_notes(skipped, verbose=verbose, hint=hint),
            *(invalid_utf8_note(name, n) for name, n in invalid if n))
