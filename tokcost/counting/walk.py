"""Walking paths: files and folders (``.gitignore``-aware, through pathspec) and ``-``."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tokcost.counting.inputs import (
    STDIN,
    STDIN_NAME,
    Skipped,
    not_a_folder,
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


@dataclass
class LeftOut:
    """What a walk left out by rule (a fault of the input is ``Skipped``), counted where
    a rule stops the walk (a folder ``.gitignore`` excludes is one folder), so that an
    empty result can say why."""

    gitignored_files: int = 0
    gitignored_folders: int = 0
    not_included: int = 0  # files that match no ``include`` glob
    excluded_files: int = 0  # files and folders an ``exclude`` glob matches
    excluded_folders: int = 0
    git_folders: int = 0  # ``.git``: git's own folder, never read
    folders: list[str] = field(default_factory=list)  # the folders walked, as named

    def note(self, *, names: Mapping[str, str] | None = None) -> str:
        """Why a walk found nothing to count, in one line, in the API's words:
        ``include``, ``exclude``, ``gitignore=False``; ``names`` maps each to the
        caller's own (the CLI's flags: ``{"gitignore=False": "--no-gitignore"}``).

        >>> LeftOut(gitignored_files=12, folders=["src"]).note()
        'no files matched: 12 files excluded by .gitignore (gitignore=False counts them)'
        >>> LeftOut(not_included=3, excluded_folders=1, folders=["src"]).note()
        'no files matched: 3 files do not match include, 1 folder matches exclude'
        >>> LeftOut(folders=["e/"]).note(), LeftOut(git_folders=1, folders=["repo"]).note()
        ('no files in e/', 'no files in repo/ (only .git/, which is never read)')
        """
        def word(api: str) -> str:
            return (names or {}).get(api, api)

        parts = []
        ignored = _entries(self.gitignored_files, self.gitignored_folders)
        if ignored:
            parts.append(f"{ignored} excluded by .gitignore ({word('gitignore=False')} "
                         "counts them)")
        if self.not_included:
            verb = "does" if self.not_included == 1 else "do"
            parts.append(f"{_entries(self.not_included, 0)} {verb} not match {word('include')}")
        excluded = _entries(self.excluded_files, self.excluded_folders)
        if excluded:
            verb = "matches" if self.excluded_files + self.excluded_folders == 1 else "match"
            parts.append(f"{excluded} {verb} {word('exclude')}")
        if parts:
            return "no files matched: " + ", ".join(parts)
        if not self.folders:
            return "no files matched"
        named = [f if f.endswith("/") else f + "/" for f in self.folders]
        where = (", ".join(named) if len(named) <= SHOWN_FOLDERS
                 else f"the {len(named):,} folders given")
        return f"no files in {where}" + (" (only .git/, which is never read)"
                                         if self.git_folders else "")


SHOWN_FOLDERS = 3  # an empty result names up to this many folders, else counts them


def _entries(files: int, folders: int) -> str:
    """``3 files and 1 folder``; ``""`` for none."""
    words = [f"{n:,} {kind}{'' if n == 1 else 's'}"
             for n, kind in ((files, "file"), (folders, "folder")) if n]
    return " and ".join(words)


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
    import warnings

    import pathspec

    # A glob such as '[[]red]*' is valid gitignore syntax; Python's re warns that a
    # future version may read '[[' as a nested set, which the user can do nothing about.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return pathspec.GitIgnoreSpec.from_lines(lines)


def globs(patterns: Sequence[str]) -> pathspec.GitIgnoreSpec | None:
    if not patterns:
        return None
    return _spec(patterns)


GIT_FOLDER_REASON = "git's own folder, never read"


def _shown(raw: str) -> str:
    """A path as an error names it: the empty one as ``''``, so the message still reads."""
    return raw or "''"


def _stat_named(raw: str) -> os.stat_result:
    """The status of a path named directly, or the usage error that names what is wrong.

    ``os.stat(raw)``, not ``Path(raw).stat()``: pathlib drops a trailing ``/`` and reads
    ``''`` as ``.``, and both must fail as ``cat`` fails on them.
    """
    if not raw:  # an empty argument, as an unset shell variable gives: not this folder
        raise UsageError(f"no such file or folder: {_shown(raw)}")
    try:
        return os.stat(raw)
    except FileNotFoundError:
        raise UsageError(f"no such file or folder: {raw}") from None
    except NotADirectoryError:
        raise UsageError(not_a_folder(raw)) from None


def walk(
    paths: Sequence[str],
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    gitignore: bool = True,
    skipped: list[Skipped] | None = None,
    unique: bool = False,
    visited: Visited | None = None,
    left_out: LeftOut | None = None,
) -> Iterator[Source]:
    """Files to count, in a stable order; a missing path (also ``''``, and ``file/``)
    raises UsageError, one that cannot be stat'ed is skipped as unreadable (into
    ``skipped``; without it, InputError).

    Folders are walked without following symlinked folders; ``.git`` is never read,
    ``.gitignore``d paths are left out (unless ``gitignore=False``), ``include`` and
    ``exclude`` are gitignore-style globs on the path relative to the folder given;
    only regular files are taken (a FIFO, socket or device is skipped with the reason:
    reading one may never end). A path named directly is taken whatever it is, as
    ripgrep takes it: a FIFO such as ``<(cmd)``, a file ``.gitignore`` excludes, a
    folder a ``.gitignore`` above excludes (only that exclusion is lifted).

    ``unique`` yields each file once however it is named (directly, through a folder,
    a symlink or a hard link: by device and inode, as ``du`` counts); later paths are
    skipped with the reason, ``-`` is read once; ``visited`` carries that across calls.
    ``left_out`` counts what the rules left out (``LeftOut.note`` says it).
    """
    inc, exc = globs(include), globs(exclude)
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
        try:
            st = _stat_named(raw)
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise InputError(f"{raw}: symlink loop; point at the real file") from None
            if skipped is None:
                raise InputError(f"cannot read {raw}: {err.strerror}") from None
            skipped.append(Skipped(raw, f"unreadable ({err.strerror})"))
            continue
        path = Path(raw)
        if not stat.S_ISDIR(st.st_mode):
            if _first_time(st, raw, seen, skipped):
                yield Source(str(path), raw, st.st_size if stat.S_ISREG(st.st_mode) else None)
            continue
        if os.path.basename(os.path.abspath(raw)) == GIT:
            if skipped is not None:
                skipped.append(Skipped(raw, GIT_FOLDER_REASON))
            continue
        if seen is not None:
            key = (st.st_dev, st.st_ino)
            if key in folders:
                if skipped is not None:
                    skipped.append(Skipped(raw, f"the same folder as {folders[key]} "
                                                "(counted once)"))
                continue
            folders[key] = raw
        if left_out is not None:
            left_out.folders.append(raw)
        yield from _walk_dir(path, inc, exc, gitignore, skipped, seen,
                             left_out if left_out is not None else LeftOut())


GIT = ".git"  # git's own folder (or, in a worktree or submodule, the file that points at it)
DIR_MARK = "ps_d"  # pathspec's name for the "/" after a folder a pattern matched


@dataclass(frozen=True)
class _Rules:
    """One ``.gitignore``: the folder it is in (absolute) and its patterns.

    ``lifted`` >= 0 for a file above the folder named, whose patterns match that folder
    or one above it: the length of that folder's path relative to ``base``; a match of a
    folder no longer than that (the named one or one above it) is left out of the verdict.
    """

    base: Path
    spec: pathspec.GitIgnoreSpec
    lifted: int = -1

    def verdict(self, rel: str) -> bool | None:
        """Whether ``rel`` (relative to ``base``; a folder ends in "/") is ignored, or
        None when no pattern decides, as git decides: the last match wins, but a file
        pattern's verdict stands against a later folder pattern's re-inclusion."""
        if self.lifted < 0:
            return self.spec.check_file(rel).include
        verdict: bool | None = None
        priority = 0
        for pattern in self.spec.patterns:
            if pattern.include is None:
                continue
            found = pattern.match_file(rel)
            if found is None:
                continue
            match = getattr(found, "match", None)  # the regex match, as pathspec 1.x gives it
            if match is None:  # another pathspec: its own verdict, nothing lifted
                return self.spec.check_file(rel).include
            mark = match.groupdict().get(DIR_MARK)
            if mark and match.start(DIR_MARK) <= self.lifted:
                continue  # it matched the folder named, or one above it
            rank = 1 if mark else 2
            if (pattern.include and mark) or rank >= priority:
                verdict, priority = pattern.include, rank
        return verdict


def _lifted(spec: pathspec.GitIgnoreSpec, base: Path, root: Path) -> int:
    """``_Rules.lifted`` for a ``.gitignore`` in ``base`` above the folder ``root`` named."""
    rel = root.relative_to(base).as_posix()
    matches = (p.match_file(rel + "/") for p in spec.patterns if p.include is not None)
    return len(rel) if any(m is not None for m in matches) else -1


def _ancestor_gitignores(root: Path) -> list[_Rules]:
    """The .gitignore files above ``root`` up to its git work tree's top, outermost first."""
    start = Path(os.path.abspath(root))
    chain: list[Path] = []
    for folder in start.parents:
        chain.append(folder)
        if (folder / GIT).exists():
            break
    else:
        return []  # not inside a git work tree: only the folders walked count
    found = []
    for folder in reversed(chain):
        spec = _gitignore_spec(folder)
        if spec is not None:
            found.append(_Rules(folder, spec, _lifted(spec, folder, start)))
    return found


class _Ignores:
    """The ``.gitignore`` files that apply in the folder being walked: those above the
    folder named inside the same git work tree, then each one met on the way down."""

    def __init__(self, root: Path, on: bool) -> None:
        self.on = on
        self.rules: list[_Rules] = _ancestor_gitignores(root) if on else []

    def enter(self, here: Path) -> None:
        """Keep the files that apply below ``here``, and add ``here``'s own."""
        if not self.on:
            return
        here_abs = Path(os.path.abspath(here))
        self.rules[:] = [r for r in self.rules
                         if here_abs == r.base or r.base in here_abs.parents]
        spec = _gitignore_spec(here)
        if spec is not None:
            self.rules.append(_Rules(here_abs, spec))

    def ignored(self, path: Path, is_dir: bool) -> bool:
        # As git decides: the last matching pattern wins, and a deeper .gitignore
        # comes later, so its "!keep.txt" can re-include what an outer one ignores.
        if not self.rules:
            return False
        verdict: bool | None = None
        full = Path(os.path.abspath(path))
        for rules in self.rules:
            result = rules.verdict(full.relative_to(rules.base).as_posix()
                                   + ("/" if is_dir else ""))
            if result is not None:
                verdict = result
        return bool(verdict)


def _walk_dir(
    root: Path,
    inc: pathspec.GitIgnoreSpec | None,
    exc: pathspec.GitIgnoreSpec | None,
    gitignore: bool,
    skipped: list[Skipped] | None,
    seen: Seen | None,
    left_out: LeftOut,
) -> Iterator[Source]:
    ignores = _Ignores(root, gitignore)

    def onerror(err: OSError) -> None:
        if skipped is not None:
            skipped.append(Skipped(str(err.filename), f"unreadable folder ({err.strerror})"))

    for dirpath, dirnames, filenames in os.walk(root, onerror=onerror):
        here = Path(dirpath)
        ignores.enter(here)
        keep = []
        for d in sorted(dirnames):
            sub = here / d
            if d == GIT:
                left_out.git_folders += 1
            elif ignores.ignored(sub, True):
                left_out.gitignored_folders += 1
            elif exc is not None and exc.match_file(sub.relative_to(root).as_posix() + "/"):
                left_out.excluded_folders += 1
            else:
                keep.append(d)
        dirnames[:] = keep
        # String paths, spelled as Path spells them ("./a" is "a"): on thousands of
        # files the Path objects, relative paths and empty gitignore checks were
        # most of the walk's time.
        shown = str(here)
        prefix = "" if shown == "." else os.path.join(shown, "")
        for name in sorted(filenames):
            if name == GIT:  # a worktree's or submodule's pointer to its git folder
                continue
            file = prefix + name
            if ignores.rules and ignores.ignored(Path(file), False):
                left_out.gitignored_files += 1
            elif _globbed_out(file, root, inc, exc, left_out):
                continue
            else:
                yield from _regular(file, seen, skipped)


def _globbed_out(file: str, root: Path, inc: pathspec.GitIgnoreSpec | None,
                 exc: pathspec.GitIgnoreSpec | None, left_out: LeftOut) -> bool:
    """Whether ``include``/``exclude`` leave ``file`` out (counted in ``left_out``)."""
    if inc is None and exc is None:
        return False
    rel = Path(file).relative_to(root).as_posix()
    if inc is not None and not inc.match_file(rel):
        left_out.not_included += 1
        return True
    if exc is not None and exc.match_file(rel):
        left_out.excluded_files += 1
        return True
    return False


def _regular(file: str, seen: Seen | None, skipped: list[Skipped] | None) -> Iterator[Source]:
    """``file`` met in a folder, if it is a regular file (or a symlink to one) seen first:
    one stat (through symlinks) tells that, its size and its identity."""

    def skip(reason: str) -> None:
        if skipped is not None:
            skipped.append(Skipped(file, reason))

    try:
        st = os.stat(file)
    except OSError as err:
        if err.errno == errno.ELOOP:
            skip("symlink loop")
        elif err.errno == errno.ENOENT and os.path.islink(file):
            skip("broken symlink")
        else:
            skip(f"unreadable ({err.strerror})")
        return
    if not stat.S_ISREG(st.st_mode):
        if not stat.S_ISDIR(st.st_mode):  # a folder here appeared after listing
            skip(special_file_reason(st.st_mode))
        return
    if _first_time(st, file, seen, skipped):
        yield Source(file, file, st.st_size)
