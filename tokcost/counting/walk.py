"""Walking paths: files and folders (``.gitignore``-aware, through pathspec) and ``-``."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pathspec

from tokcost.counting.inputs import (
    STDIN,
    STDIN_NAME,
    Skipped,
)
from tokcost.errors import InputError, UsageError


@dataclass(frozen=True)
class Source:
    """One input: a file path, or ``-`` for standard input."""

    path: str
    display: str


def _gitignore_spec(directory: Path) -> pathspec.GitIgnoreSpec | None:
    ignore = directory / ".gitignore"
    if not ignore.is_file():
        return None
    try:
        lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _globs(patterns: Sequence[str]) -> pathspec.GitIgnoreSpec | None:
    if not patterns:
        return None
    return pathspec.GitIgnoreSpec.from_lines(patterns)


def walk(
    paths: Sequence[str],
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    gitignore: bool = True,
    skipped: list[Skipped] | None = None,
) -> Iterator[Source]:
    """Files to count, in a stable order. Missing paths raise UsageError.

    Folders are walked recursively without following symlinked folders (so a
    symlink loop cannot trap the walk); ``.git`` and ``.gitignore``d paths are
    left out (unless ``gitignore=False``); ``include``/``exclude`` are
    gitignore-style globs matched against the path relative to the folder given.
    """
    inc, exc = _globs(include), _globs(exclude)
    for raw in paths:
        if raw == STDIN:
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
        if not path.is_dir():
            del st
            yield Source(str(path), raw)
            continue
        yield from _walk_dir(path, inc, exc, gitignore, skipped)


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
) -> Iterator[Source]:
    # Each .gitignore applies below its own folder: (absolute folder, spec) pairs,
    # outermost first, starting with those above `root` inside the same git work tree.
    specs: list[tuple[Path, pathspec.GitIgnoreSpec]] = (
        _ancestor_gitignores(root) if gitignore else []
    )

    def ignored(path: Path, is_dir: bool) -> bool:
        # As git decides: the last matching pattern wins, and a deeper .gitignore
        # comes later, so its "!keep.txt" can re-include what an outer one ignores.
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
            if d == ".git" or (gitignore and ignored(sub, True)):
                continue
            if exc is not None and exc.match_file(sub.relative_to(root).as_posix() + "/"):
                continue
            keep.append(d)
        dirnames[:] = keep
        for name in sorted(filenames):
            file = here / name
            rel = file.relative_to(root).as_posix()
            if gitignore and ignored(file, False):
                continue
            if inc is not None and not inc.match_file(rel):
                continue
            if exc is not None and exc.match_file(rel):
                continue
            if file.is_symlink() and not file.exists():
                if skipped is not None:
                    skipped.append(Skipped(str(file), "broken symlink"))
                continue
            yield Source(str(file), str(file))
