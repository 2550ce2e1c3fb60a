"""Walking paths: files and folders (``.gitignore``-aware, through pathspec) and ``-``."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tokcost.counting.inputs import (
    STDIN,
    STDIN_NAME,
    Skipped,
)
from tokcost.counting.skips import same_file_reason, special_file_reason
from tokcost.errors import InputError, UsageError

if TYPE_CHECKING:
    import pathspec


@dataclass(frozen=True)
class Source:
    """One input: a file path, or ``-`` for standard input."""

    path: str
    display: str
    size: int | None = None  # a regular file's size when walked; None for a stream (stdin, a FIFO)


# (device, inode) -> the path it was first met by: a file is counted once, as du counts it
Seen = dict[tuple[int, int], str]


@dataclass
class Visited:
    """What ``walk(..., unique=True)`` has met: pass one to several ``walk`` calls (one
    per argument, as the Dask engine lists them) and each file is still taken once."""

    files: Seen = field(default_factory=dict)
    folders: Seen = field(default_factory=dict)  # a folder named twice is walked once
    stdin: bool = False


def _first_time(st: os.stat_result, display: str, seen: Seen | None,
                skipped: list[Skipped] | None) -> bool:
    """Whether this is the first path to the file ``st`` (always, when not deduplicating)."""
    if seen is None:
        return True
    key = (st.st_dev, st.st_ino)
    if key not in seen:
        seen[key] = display
        return True
    if skipped is not None:
        skipped.append(Skipped(display, same_file_reason(seen[key])))
    return False


def _gitignore_spec(directory: Path) -> pathspec.GitIgnoreSpec | None:
    ignore = directory / ".gitignore"
    if not ignore.is_file():
        return None
    try:
        lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return _spec(lines)


def _spec(lines: Sequence[str]) -> pathspec.GitIgnoreSpec:
    # Imported on the first .gitignore or glob: a walk without either (most counts of
    # a folder outside git) does not pay pathspec's import (about 20 ms).
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _globs(patterns: Sequence[str]) -> pathspec.GitIgnoreSpec | None:
    if not patterns:
        return None
    return _spec(patterns)


def walk(
    paths: Sequence[str],
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    gitignore: bool = True,
    skipped: list[Skipped] | None = None,
    unique: bool = False,
    visited: Visited | None = None,
) -> Iterator[Source]:
    """Files to count, in a stable order. Missing paths raise UsageError.

    Folders are walked recursively without following symlinked folders (so a
    symlink loop cannot trap the walk); ``.git`` and ``.gitignore``d paths are
    left out (unless ``gitignore=False``); ``include``/``exclude`` are
    gitignore-style globs matched against the path relative to the folder given.
    Inside a folder only regular files (or symlinks to them) are taken: a FIFO,
    socket or device is skipped with the reason, since reading one may never end.
    A path named directly is taken whatever it is (a FIFO such as ``<(cmd)`` is read).

    ``unique`` yields each file once however often it is named (directly, through
    a folder, a symlink or a hard link): by device and inode, as ``du`` counts; a
    later path to it is skipped with the reason (``same_file_reason``), and ``-``
    is read once. ``visited`` (with ``unique``) carries what was met across calls.
    """
    inc, exc = _globs(include), _globs(exclude)
    state = (visited if visited is not None else Visited()) if unique else None
    seen: Seen | None = state.files if state is not None else None
    folders: Seen = state.folders if state is not None else {}
    for raw in paths:
        if raw == STDIN:
            if state is not None:
                if state.stdin:
                    if skipped is not None:
                        skipped.append(Skipped(STDIN_NAME, "named twice (read once)"))
                    continue
                state.stdin = True
            yield Source(STDIN, STDIN_NAME)
            continue
        path = Path(raw)
        try:
            st = path.stat()
        except FileNotFoundError:
            raise UsageError(f"no such file or folder: {raw}") from None
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise InputError(f"{raw}: symlink loop; point at the real file") from None
            raise InputError(f"cannot read {raw}: {err.strerror}") from None
        if not stat.S_ISDIR(st.st_mode):
            if _first_time(st, raw, seen, skipped):
                yield Source(str(path), raw, st.st_size if stat.S_ISREG(st.st_mode) else None)
            continue
        if seen is not None:
            key = (st.st_dev, st.st_ino)
            if key in folders:
                if skipped is not None:
                    skipped.append(Skipped(raw, f"the same folder as {folders[key]} "
                                                "(counted once)"))
                continue
            folders[key] = raw
        yield from _walk_dir(path, inc, exc, gitignore, skipped, seen)


def _ancestor_gitignores(root: Path) -> list[tuple[Path, pathspec.GitIgnoreSpec]]:
    """The .gitignore files above ``root`` up to its git work tree's top, outermost first."""
    start = Path(os.path.abspath(root))
    chain: list[Path] = []
    for folder in start.parents:
        chain.append(folder)
        if (folder / ".git").exists():
            break
    else:
        return []  # not inside a git work tree: only the folders walked count
    found = []
    for folder in reversed(chain):
        spec = _gitignore_spec(folder)
        if spec is not None:
            found.append((folder, spec))
    return found


def _walk_dir(
    root: Path,
    inc: pathspec.GitIgnoreSpec | None,
    exc: pathspec.GitIgnoreSpec | None,
    gitignore: bool,
    skipped: list[Skipped] | None,
    seen: Seen | None = None,
) -> Iterator[Source]:
    # Each .gitignore applies below its own folder: (absolute folder, spec) pairs,
    # outermost first, starting with those above `root` inside the same git work tree.
    specs: list[tuple[Path, pathspec.GitIgnoreSpec]] = (
        _ancestor_gitignores(root) if gitignore else []
    )

    def ignored(path: Path, is_dir: bool) -> bool:
        # As git decides: the last matching pattern wins, and a deeper .gitignore
        # comes later, so its "!keep.txt" can re-include what an outer one ignores.
        if not specs:
            return False
        verdict: bool | None = None
        full = Path(os.path.abspath(path))
        for base, spec in specs:
            rel = full.relative_to(base).as_posix() + ("/" if is_dir else "")
            result = spec.check_file(rel)
            if result.include is not None:
                verdict = result.include
        return bool(verdict)

    def onerror(err: OSError) -> None:
        if skipped is not None:
            skipped.append(Skipped(str(err.filename), f"unreadable folder ({err.strerror})"))

    def skip(file: str, reason: str) -> None:
        if skipped is not None:
            skipped.append(Skipped(file, reason))

    globs = inc is not None or exc is not None
    for dirpath, dirnames, filenames in os.walk(root, onerror=onerror):
        here = Path(dirpath)
        here_abs = Path(os.path.abspath(here))
        specs[:] = [(b, s) for b, s in specs if here_abs == b or b in here_abs.parents]
        if gitignore:
            spec = _gitignore_spec(here)
            if spec is not None:
                specs.append((here_abs, spec))
        keep = []
        for d in sorted(dirnames):
            sub = here / d
            if d == ".git" or (gitignore and specs and ignored(sub, True)):
                continue
            if exc is not None and exc.match_file(sub.relative_to(root).as_posix() + "/"):
                continue
            keep.append(d)
        dirnames[:] = keep
        # String paths, spelled as Path spells them ("./a" is "a"): on thousands of
        # files the Path objects, relative paths and empty gitignore checks were
        # most of the walk's time.
        shown = str(here)
        prefix = "" if shown == "." else os.path.join(shown, "")
        for name in sorted(filenames):
            file = prefix + name
            if gitignore and specs and ignored(Path(file), False):
                continue
            if globs:
                rel = Path(file).relative_to(root).as_posix()
                if inc is not None and not inc.match_file(rel):
                    continue
                if exc is not None and exc.match_file(rel):
                    continue
            # One stat (through symlinks) tells a regular file, its size and its identity.
            try:
                st = os.stat(file)
            except OSError as err:
                if err.errno == errno.ELOOP:
                    skip(file, "symlink loop")
                elif err.errno == errno.ENOENT and os.path.islink(file):
                    skip(file, "broken symlink")
                else:
                    skip(file, f"unreadable ({err.strerror})")
                continue
            if not stat.S_ISREG(st.st_mode):
                if not stat.S_ISDIR(st.st_mode):  # a folder here appeared after listing
                    skip(file, special_file_reason(st.st_mode))
                continue
            if _first_time(st, file, seen, skipped):
                yield Source(file, file, st.st_size)
