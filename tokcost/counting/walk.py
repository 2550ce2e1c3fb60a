"""Walking paths: files and folders (``.gitignore``-aware, through pathspec) and ``-``."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from tokcost.counting.inputs import STDIN, STDIN_NAME, Skipped, not_a_folder, same_file_reason
from tokcost.errors import InputError, UsageError
from tokcost.limits import glob_problem

if TYPE_CHECKING:
    import pathspec

GIT = ".git"  # git's own folder (or, in a worktree or submodule, the file that points at it)
GIT_FOLDER_REASON = "git's own folder, never read"
DIR_MARK = "ps_d"  # pathspec's name for the "/" after a folder a pattern matched
SHOWN_FOLDERS = 3  # an empty result names up to this many folders, else counts them
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


@dataclass(frozen=True)
class Source:
    path: str
    display: str
    size: int | None = None  # a regular file's size when walked; None for a stream (stdin, a FIFO)


# (device, inode) -> the path it was first met by: a file is counted once, as du counts it
Seen = dict[tuple[int, int], str]


@dataclass
class Visited:
    """What ``walk(..., visited=...)`` has met, shared by several calls (the Dask engine's)."""

    files: Seen = field(default_factory=dict)
    folders: Seen = field(default_factory=dict)  # a folder named twice is walked once
    stdin: bool = False


@dataclass
class LeftOut:
    """What a walk's rules left out, so that an empty result can say why."""

    gitignored_files: int = 0
    gitignored_folders: int = 0
    not_included: int = 0  # files that match no ``include`` glob
    excluded_files: int = 0  # files and folders an ``exclude`` glob matches
    excluded_folders: int = 0
    git_folders: int = 0  # ``.git``: git's own folder, never read
    folders: list[str] = field(default_factory=list)  # the folders walked, as named

    def note(self, *, names: Mapping[str, str] | None = None) -> str:
        """Why a walk found nothing, in one line; ``names`` maps the API's words to the
        caller's (``{"gitignore=False": "--no-gitignore"}``)."""
        word = {w: w for w in ("include", "exclude", "gitignore=False")} | dict(names or {})
        parts = []
        ignored = _entries(self.gitignored_files, self.gitignored_folders)
        if ignored:
            parts.append(f"{ignored} excluded by .gitignore ({word['gitignore=False']} "
                         "counts them)")
        if self.not_included:
            verb = "does" if self.not_included == 1 else "do"
            parts.append(f"{_entries(self.not_included, 0)} {verb} not match {word['include']}")
        excluded = _entries(self.excluded_files, self.excluded_folders)
        if excluded:
            verb = "matches" if self.excluded_files + self.excluded_folders == 1 else "match"
            parts.append(f"{excluded} {verb} {word['exclude']}")
        if parts or not self.folders:
            return "no files matched" + (": " + ", ".join(parts) if parts else "")
        named = [f if f.endswith("/") else f + "/" for f in self.folders]
        where = (", ".join(named) if len(named) <= SHOWN_FOLDERS
                 else f"the {len(named):,} folders given")
        return f"no files in {where}" + (" (only .git/, which is never read)"
                                         if self.git_folders else "")


def _entries(files: int, folders: int) -> str:
    return " and ".join(f"{n:,} {kind}{'' if n == 1 else 's'}"
                        for n, kind in ((files, "file"), (folders, "folder")) if n)


def _first_time(st: os.stat_result, display: str, seen: Seen | None,
                skipped: list[Skipped]) -> bool:
    if seen is None:
        return True
    key = (st.st_dev, st.st_ino)
    if key not in seen:
        seen[key] = display
        return True
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
    return gitignore_spec(lines, f"{ignore}: ")


def gitignore_spec(lines: Sequence[str], where: str = "") -> pathspec.GitIgnoreSpec:
    """The patterns compiled, each first checked to match in bounded time (``where`` names
    their file in the error)."""
    # Imported on the first .gitignore or glob: pathspec costs about 20 ms.
    import warnings

    import pathspec

    for line in lines:
        if (problem := glob_problem(line)) is not None:
            raise UsageError(where + problem)

    # '[[]red]*' is valid gitignore; re warns of a future nested set, not the user's fault.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return pathspec.GitIgnoreSpec.from_lines(lines)


def globs(patterns: Sequence[str]) -> pathspec.GitIgnoreSpec | None:
    return gitignore_spec(patterns) if patterns else None


def walk(paths: Sequence[str], *, include: Sequence[str] = (), exclude: Sequence[str] = (),
    gitignore: bool = True, skipped: list[Skipped] | None = None, visited: Visited | None = None,
    left_out: LeftOut | None = None, follow: bool = False) -> Iterator[Source]:
    """Files to count, in a stable order (docs/count.md#inputs); a missing path raises
    UsageError, an unstat'able one goes to ``skipped`` (else InputError); ``visited``: each file
    once by device and inode (the same Visited carries it across calls); ``follow``: read the
    symlinks met in folders (as ``rg -L``; never to a device or FIFO), else skip them."""
    inc, exc = globs(include), globs(exclude)
    strict, skipped = skipped is None, [] if skipped is None else skipped
    left_out = LeftOut() if left_out is None else left_out
    seen: Seen | None = visited.files if visited is not None else None
    folders: Seen = visited.folders if visited is not None else {}
    for raw in paths:
        if raw == STDIN:
            if visited is not None:
                if visited.stdin:
                    skipped.append(Skipped(STDIN_NAME, "named twice (read once)"))
                    continue
                visited.stdin = True
            yield Source(STDIN, STDIN_NAME)
            continue
        if not raw:  # an unset shell variable: not this folder
            raise UsageError("no such file or folder: ''")
        try:  # os.stat, not Path.stat: pathlib drops a trailing "/" and reads "" as "."
            st = os.stat(raw)
        except FileNotFoundError:
            raise UsageError(f"no such file or folder: {raw}") from None
        except NotADirectoryError:
            raise UsageError(not_a_folder(raw)) from None
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise InputError(f"{raw}: symlink loop; point at the real file") from None
            if strict:
                raise InputError(f"cannot read {raw}: {err.strerror}") from None
            skipped.append(Skipped(raw, f"unreadable ({err.strerror})"))
            continue
        path = Path(raw)
        if not stat.S_ISDIR(st.st_mode):
            if _first_time(st, raw, seen, skipped):
                yield Source(str(path), raw, st.st_size if stat.S_ISREG(st.st_mode) else None)
            continue
        if os.path.basename(os.path.abspath(raw)) == GIT:
            skipped.append(Skipped(raw, GIT_FOLDER_REASON))
            continue
        if seen is not None:
            key = (st.st_dev, st.st_ino)
            if key in folders:
                skipped.append(Skipped(raw, f"the same folder as {folders[key]} (counted once)"))
                continue
            folders[key] = raw
        left_out.folders.append(raw)
        yield from _walk_dir(path, (inc, exc), gitignore, skipped, seen, left_out, follow)


@dataclass(frozen=True)
class _Rules:
    """One ``.gitignore``; ``lifted``: the length of the folder named, when it matches it."""

    base: Path
    spec: pathspec.GitIgnoreSpec
    lifted: int = -1

    def verdict(self, rel: str) -> bool | None:
        """Whether ``rel`` is ignored, or None, as git decides (the last match wins)."""
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
    """The .gitignore files above ``root`` up to its work tree's top, outermost first."""
    start = Path(os.path.abspath(root))
    chain: list[Path] = []
    for folder in start.parents:
        chain.append(folder)
        if (folder / GIT).exists():
            break
    else:
        return []  # not inside a git work tree: only the folders walked count
    return [_Rules(folder, spec, _lifted(spec, folder, start)) for folder in reversed(chain)
            if (spec := _gitignore_spec(folder)) is not None]


class _Ignores:
    def __init__(self, root: Path, on: bool) -> None:
        self.on = on
        self.rules: list[_Rules] = _ancestor_gitignores(root) if on else []

    def enter(self, here: Path) -> None:
        if not self.on:
            return
        here_abs = Path(os.path.abspath(here))
        self.rules[:] = [r for r in self.rules if here_abs == r.base or r.base in here_abs.parents]
        spec = _gitignore_spec(here)
        if spec is not None:
            self.rules.append(_Rules(here_abs, spec))

    def ignored(self, path: Path, is_dir: bool) -> bool:
        if not self.rules:
            return False
        full, suffix = Path(os.path.abspath(path)), "/" if is_dir else ""
        found = [v for r in self.rules
                 if (v := r.verdict(full.relative_to(r.base).as_posix() + suffix)) is not None]
        return bool(found and found[-1])  # the last wins: a deeper "!keep.txt" re-includes


def _walk_dir(root: Path, globbed: tuple[pathspec.GitIgnoreSpec | None, ...], gitignore: bool,
    skipped: list[Skipped], seen: Seen | None, left_out: LeftOut, follow: bool) -> Iterator[Source]:
    inc, exc = globbed
    ignores = _Ignores(root, gitignore)
    entered: set[tuple[int, int]] = set()  # with follow: the folders walked, against link loops

    def onerror(err: OSError) -> None:
        skipped.append(Skipped(str(err.filename), f"unreadable folder ({err.strerror})"))

    for dirpath, dirnames, filenames in os.walk(root, onerror=onerror, followlinks=follow):
        here = Path(dirpath)
        ignores.enter(here)
        if follow and (key := _key(here)) is not None:
            entered.add(key)
        keep = []
        for d in sorted(dirnames):
            sub = here / d
            if follow and sub.is_symlink() and _key(sub) in entered:
                skipped.append(Skipped(str(sub), "symlink loop"))
            elif d == GIT:
                left_out.git_folders += 1
            elif ignores.ignored(sub, True):
                left_out.gitignored_folders += 1
            elif exc is not None and exc.match_file(sub.relative_to(root).as_posix() + "/"):
                left_out.excluded_folders += 1
            else:
                keep.append(d)
        dirnames[:] = keep
        # Strings, spelled as Path spells them ("./a" is "a"): Path objects were most of the time.
        shown = str(here)
        prefix = "" if shown == "." else os.path.join(shown, "")
        for name in sorted(filenames):
            if name == GIT:  # a worktree's or submodule's pointer to its git folder
                continue
            file = prefix + name
            if ignores.rules and ignores.ignored(Path(file), False):
                left_out.gitignored_files += 1
                continue
            rel = Path(file).relative_to(root).as_posix() if any(globbed) else file
            if inc is not None and not inc.match_file(rel):
                left_out.not_included += 1
            elif exc is not None and exc.match_file(rel):
                left_out.excluded_files += 1
            else:
                yield from _regular(file, seen, skipped, follow)


def _key(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:  # gone, or unreadable: the walk reports it when it gets there
        return None
    return st.st_dev, st.st_ino


def _regular(file: str, seen: Seen | None, skipped: list[Skipped],
             follow: bool) -> Iterator[Source]:
    """``file`` met in a folder, if a regular file (with ``follow``, or a link to one) seen
    first: one stat."""
    try:
        st = os.stat(file) if follow else os.lstat(file)
    except OSError as err:
        broken = err.errno == errno.ENOENT and os.path.islink(file)
        skipped.append(Skipped(file, "symlink loop" if err.errno == errno.ELOOP else
                               "broken symlink" if broken else f"unreadable ({err.strerror})"))
        return
    if stat.S_ISLNK(st.st_mode):  # it may lead anywhere: /etc/passwd, /dev/zero
        skipped.append(Skipped(file, "a symlink, not followed: name it directly to read it"))
    elif not stat.S_ISREG(st.st_mode):
        if not stat.S_ISDIR(st.st_mode):  # a folder here appeared after listing
            skipped.append(Skipped(file, special_file_reason(st.st_mode)))
    elif _first_time(st, file, seen, skipped):
        yield Source(file, file, st.st_size)
