"""The remote runner's inputs: local paths, quoted globs and URLs (``s3://``, ``https://``, read
in ``Range`` requests), listed with their sizes to plan shards, opened by the workers."""

from __future__ import annotations

import glob
import http.client
import io
import os
import re
import urllib.error
import urllib.request
from collections.abc import Iterable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast
from urllib.parse import urlsplit

from tokcost.errors import InputError, MissingDependency, UsageError, arg

if TYPE_CHECKING:
    from tokcost.counting.inputs import Inputs, Skipped
    from tokcost.runner import Runner

READ_TIMEOUT = 60.0  # seconds a worker waits for one answer
MIN_REQUEST = 64 << 10  # asked for at once: the small reads around a cut cost one request

_HTML_TYPES = ("text/html", "application/xhtml+xml")
_HTML_NAMES = (".html", ".htm", ".xhtml", ".shtml")
_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)")


def is_http(path: str) -> bool:
    return path.lower().startswith(("http://", "https://"))


# Why an HTML page is left out (``count`` reports it as skipped; ``bpe train`` refuses it).
HTML_PAGE = "an HTML page (text/html), not a text file: pass the URLs of the files it links to"


class NotATextFile(UsageError):
    """The URL answers with an HTML page (a folder's index or a web page)."""


def no_range_support(url: str, status: int, asked: str = "bytes=0-0") -> InputError:
    return InputError(f"the server of {url} does not support range requests (it answered "
                      f"{status} to 'Range: {asked}'), which workers need to read parts of a "
                      "file; download the file first and count the local copy")


class _Empty(Exception):
    """A 416 answer to ``bytes=0-0``: the file has no bytes."""


def _get(url: str, start: int, stop: int, timeout: float) -> http.client.HTTPResponse:
    request = urllib.request.Request(url, headers={
        "Range": f"bytes={start}-{stop}", "Accept-Encoding": "identity", "User-Agent": "tokcost"})
    try:
        return cast(http.client.HTTPResponse, urllib.request.urlopen(request, timeout=timeout))
    except urllib.error.HTTPError as exc:
        exc.close()
        if exc.code == 416 and start == 0:  # an empty file has no byte 0
            raise _Empty from None
        if exc.code in (404, 410):
            raise FileNotFoundError(f"HTTP {exc.code} {exc.reason}") from None
        raise OSError(f"HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        raise OSError(str(exc.reason)) from None
    except TimeoutError:
        raise OSError(f"no answer within {timeout:g} s") from None
    except http.client.HTTPException as exc:  # not an OSError: a garbled answer
        raise OSError(f"a broken answer ({type(exc).__name__})") from None


def _content_range(header: str | None) -> tuple[int, int | None] | None:
    """``bytes 0-0/1234`` -> ``(0, 1234)``; an unknown total (``/*``) is None."""
    match = _CONTENT_RANGE.fullmatch((header or "").strip())
    if match is None:
        return None
    return int(match.group(1)), None if match.group(3) == "*" else int(match.group(3))


def _ask(url: str, timeout: float) -> int:
    """The size of ``url``, from its byte 0 (``NotATextFile`` for an HTML page)."""
    try:
        with _get(url, 0, 0, timeout) as resp:
            status = resp.status
            final = resp.url or url
            kind = resp.headers.get_content_type()
            ranged = _content_range(resp.headers.get("Content-Range"))
            length = resp.headers.get("Content-Length")
    except _Empty:
        return 0
    if kind in _HTML_TYPES and not urlsplit(final).path.lower().endswith(_HTML_NAMES):
        raise NotATextFile(f"{url} is {HTML_PAGE}")
    if status != 206:
        if length == "0":
            return 0  # empty: no range to ask for
        raise no_range_support(url, status)
    if ranged is None or ranged[1] is None:
        raise InputError(f"the server of {url} does not say how big the file is (no size in "
                         "Content-Range); download the file first and count the local copy")
    return ranged[1]


def probe(url: str, timeout: float = READ_TIMEOUT) -> int:
    """The size of ``url``: 404 a ``UsageError``, a server out of reach an ``InputError``."""
    try:
        return _ask(url, timeout)
    except FileNotFoundError as exc:
        raise UsageError(f"no such file or folder: {url} ({exc})") from None
    except OSError as exc:
        raise InputError(f"cannot read {url}: {exc}") from None


class RangeFile(io.RawIOBase):
    """A seekable, read-only file over HTTP ``Range`` requests (one per read)."""

    def __init__(self, url: str, timeout: float = READ_TIMEOUT) -> None:
        super().__init__()
        self.url, self.timeout = url, timeout
        self.size, self.pos = _ask(url, timeout), 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self.pos, os.SEEK_END: self.size}[whence]
        self.pos = max(0, base + offset)
        return self.pos

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        want = min(len(buffer), self.size - self.pos)
        if want <= 0:
            return 0
        stop = self.pos + want - 1
        with _get(self.url, self.pos, stop, self.timeout) as resp:
            if resp.status != 206:
                raise no_range_support(self.url, resp.status, f"bytes={self.pos}-{stop}")
            ranged = _content_range(resp.headers.get("Content-Range"))
            if ranged is None or ranged[0] != self.pos:
                raise OSError("the server sent another range than asked "
                              f"(Content-Range: {resp.headers.get('Content-Range')})")
            try:
                data = resp.read(want)
            except http.client.HTTPException as exc:  # IncompleteRead: the server hung up
                raise OSError(f"a broken answer ({type(exc).__name__})") from None
        if not data:  # a short file would count short without a word
            raise OSError(f"the server sent no bytes at offset {self.pos}")
        memoryview(buffer).cast("B")[:len(data)] = data
        self.pos += len(data)
        return len(data)


def open_http(url: str, timeout: float = READ_TIMEOUT) -> io.BufferedReader:
    return io.BufferedReader(RangeFile(url, timeout), buffer_size=MIN_REQUEST)


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
