"""The remote runner's inputs: local paths, quoted globs and URLs (``s3://``, ``https://``),
listed with their sizes (shards are planned from sizes alone) and opened by the workers."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast
from urllib.parse import urlsplit

from tokcost.errors import InputError, MissingDependency, UsageError, arg
from tokcost.scale.http import HTML_PAGE, READ_TIMEOUT, NotATextFile, is_http, open_http, probe

if TYPE_CHECKING:
    from tokcost.counting.inputs import Inputs, Skipped
    from tokcost.runner import Runner

def is_url(path: str) -> bool:
    return "://" in path


def _has_glob(path: str) -> bool:
    return any(c in "*?[" for c in path)


def list_url(url: str, *, timeout: float = READ_TIMEOUT) -> list[tuple[str, int, str]]:
    """``(url, size, name relative to it)`` of every file a URL names (a file, folder or glob)."""
    if is_http(url):
        name = urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1] or url
        return [(url, probe(url, timeout), name)]
    try:
        import fsspec
    except ImportError:
        raise MissingDependency("fsspec", "dask", f"reading {url}") from None
    try:
        fs, root = fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:
        raise UsageError(f"cannot open {url}: {exc}") from None
    try:
        if _has_glob(root):
            names = sorted(fs.glob(root))
        elif fs.isdir(root):
            names = sorted(fs.find(root))
        elif fs.exists(root):
            names = [root]
        else:
            raise UsageError(f"no such file or folder: {url}")
        base = root.rstrip("/") + "/"
        found: list[tuple[str, int, str]] = []
        for name in names:
            info = fs.info(name)
            if info.get("type") == "directory":
                continue
            rel = name[len(base):] if name.startswith(base) else name.rsplit("/", 1)[-1]
            found.append((fs.unstrip_protocol(name), int(info.get("size") or 0), rel))
    except OSError as exc:
        raise InputError(f"cannot list {url}: {exc}") from None
    return found


def expand_local(pattern: str) -> list[str]:
    """A quoted glob (``'data/**/*.txt'``) -> the matching paths, sorted; others unchanged."""
    if os.path.exists(pattern) or not _has_glob(pattern):
        return [pattern]
    matches = sorted(glob.glob(pattern, recursive=True))
    if not matches:
        raise UsageError(f"no files match {pattern}")
    return matches


def list_inputs(inputs: Inputs, skipped: list[Skipped], *, timeout: float,
                unique: bool = False) -> list[tuple[str, str, int]]:
    """``(path, display, size)`` of every input file: paths walked, globs expanded, URLs listed."""
    from tokcost.counting.inputs import STDIN, Skipped, same_file_reason
    from tokcost.counting.walk import Visited, globs, walk
    found: list[tuple[str, str, int]] = []
    inc, exc = globs(inputs.include), globs(inputs.exclude)
    visited = Visited()  # shared by every argument's walk, as one local walk shares it
    urls: set[str] = set()
    for raw in inputs.paths:
        if raw == STDIN:
            raise UsageError(f"{arg('engine', 'dask')} reads files and URLs, not stdin; "
                             "drop '-'", param="engine")
        if not is_url(raw):
            walked = walk(expand_local(raw), include=inputs.include, exclude=inputs.exclude,
                          gitignore=inputs.gitignore, skipped=skipped, unique=unique,
                          visited=visited)
            found += [(s.path, s.display, s.size or 0) for s in walked]
            continue
        try:
            listed = list_url(raw, timeout=timeout)
        except NotATextFile:
            skipped.append(Skipped(raw, HTML_PAGE))
            continue
        for url, size, rel in listed:
            if (inc is not None and not inc.match_file(rel)) or (
                    exc is not None and exc.match_file(rel)):
                continue
            if unique and url in urls:
                skipped.append(Skipped(url, same_file_reason(url)))
                continue
            urls.add(url)
            found.append((url, url, size))
    return found


def list_training_files(paths: Iterable[str | Path], runner: Runner) -> list[tuple[str, int]]:
    """``(path, size)`` of every training file; a folder or a missing file is refused."""
    from tokcost.bpe.pretokenize import training_file
    from tokcost.counting.inputs import refuse_urls
    files: list[tuple[str, int]] = []
    for path in map(str, paths):
        if is_url(path) and not os.path.exists(path):
            if not runner.remote:
                refuse_urls([path])
            listed = list_url(path, timeout=getattr(runner, "timeout", READ_TIMEOUT))
            files += [(url, size) for url, size, _ in listed]
            continue
        for name in expand_local(path):
            with training_file(name):
                if os.path.isdir(name):
                    raise IsADirectoryError
                files.append((name, os.stat(name).st_size))
    return files


def open_binary(path: str) -> AbstractContextManager[IO[bytes]]:
    """A local path, an http(s) URL or an fsspec URL, to open for seekable binary reading."""
    if not is_url(path):
        return open(path, "rb")
    if is_http(path):
        return open_http(path)
    import fsspec
    return cast(AbstractContextManager[IO[bytes]], fsspec.open(path, "rb"))


class Window:
    """Bytes ``[start, stop)`` of an open file, read like a file (``read(n)``)."""

    def __init__(self, fh: IO[bytes], start: int, stop: int) -> None:
        self.fh = fh
        self.left = max(0, stop - start)
        fh.seek(start)

    def read(self, n: int = -1) -> bytes:
        if self.left <= 0:
            return b""
        want = self.left if n < 0 else min(n, self.left)
        data = self.fh.read(want)
        self.left -= len(data)
        return data
