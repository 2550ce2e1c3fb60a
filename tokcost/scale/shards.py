"""Byte-range shards of files (local paths or fsspec URLs) that keep results exact.

A shard is a short list of ``Piece``s: byte ranges ``[start, end)`` of input
files, planned from file sizes alone, so the driver never reads the data. The
worker that takes a piece moves both of its ends forward to a *cut*, a point
found from the bytes at that offset alone, so the worker holding the piece
before and the one holding the piece after agree on it without talking:

- for counting, ``tokcost.counting.next_cut``: the first point at or after the
  offset where the streaming reader may cut too (one rule for both), so the
  counts of the pieces add up to the count of the whole file;
- for BPE pre-tokenization, ``tokcost.bpe.pretokenize.count_lines`` reads the
  lines that start in the piece, because the trainer splits its corpus only at
  ``"\\n"``.

Reading is in blocks: no worker holds a whole large file, whatever the piece size.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, cast
from urllib.parse import urlsplit

from tokcost.errors import InputError, UsageError
from tokcost.scale.http import HTML_PAGE, READ_TIMEOUT, NotATextFile, is_http, open_http, probe

#: Default bytes per shard (one task) for ``plan_shards``. The Dask driver picks
#: about 16 shards per worker thread within [MIN_SHARD_BYTES, MAX_SHARD_BYTES]:
#: small enough that the last round leaves few workers idle, big enough that
#: per-task overhead (about a millisecond) does not show.
SHARD_BYTES = 32 << 20
MIN_SHARD_BYTES = 1 << 20
MAX_SHARD_BYTES = 64 << 20
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class Piece:
    """Bytes ``[start, end)`` of ``path`` (a local path or an fsspec URL) of ``size`` bytes.

    The worker reads from the first cut at or after ``start`` to the first cut
    at or after ``end`` (``end == size`` is the end of the file).
    """

    path: str
    start: int
    end: int
    size: int

    @property
    def whole(self) -> bool:
        return self.start == 0 and self.end == self.size


Shard = tuple[Piece, ...]


def is_url(path: str) -> bool:
    """``s3://bucket/x.txt`` and other fsspec URLs, as opposed to local paths."""
    return "://" in path


def _has_glob(path: str) -> bool:
    return any(c in _GLOB_CHARS for c in path)


# --- listing inputs -------------------------------------------------------------------


def list_url(url: str, *, timeout: float = READ_TIMEOUT) -> list[tuple[str, int, str]]:
    """``(url, size, relative name)`` of every file a URL names: one file, a folder
    (recursively; names relative to it, for ``include``/``exclude``) or a glob.

    An ``http(s)://`` URL is one file, asked for its size within ``timeout``
    seconds (``tokcost.scale.http.probe``; an HTML page raises ``NotATextFile``).
    Others need ``fsspec`` and the filesystem's own package (s3fs, gcsfs, ...).
    """
    if is_http(url):
        answer = probe(url, timeout)
        if answer.html_page:
            raise NotATextFile(f"{url} is {HTML_PAGE}")
        name = urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1] or url
        return [(url, answer.size, name)]
    try:
        import fsspec
    except ImportError:
        from tokcost.errors import MissingDependency

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


# --- planning -------------------------------------------------------------------------


def plan_shards(
    files: Sequence[tuple[str, int]], shard_bytes: int = SHARD_BYTES, *, split: bool = True
) -> list[Shard]:
    """Pack ``(path, size)`` files into shards of about ``shard_bytes`` each.

    Large files are cut into several pieces (``split=False`` keeps every file
    whole, for tokenizers that must see a whole text); small files share a shard.
    Every file appears, empty ones too, in input order.

    >>> [[(p.path, p.start, p.end) for p in s] for s in plan_shards([("a", 10), ("b", 6)], 8)]
    [[('a', 0, 8)], [('a', 8, 10), ('b', 0, 6)]]
    """
    if shard_bytes < 1:
        raise UsageError("the shard size must be at least 1 byte")
    shards: list[Shard] = []
    current: list[Piece] = []
    room = shard_bytes
    for path, size in files:
        if size == 0 or not split:
            current.append(Piece(path, 0, size, size))
            room -= size
        else:
            pos = 0
            while pos < size:
                take = min(room, size - pos)
                current.append(Piece(path, pos, pos + take, size))
                pos += take
                room -= take
                if room <= 0:
                    shards.append(tuple(current))
                    current, room = [], shard_bytes
        if room <= 0 and current:
            shards.append(tuple(current))
            current, room = [], shard_bytes
    if current:
        shards.append(tuple(current))
    return shards


# --- reading --------------------------------------------------------------------------


@contextmanager
def open_binary(path: str) -> Iterator[IO[bytes]]:
    """Open a local path, an http(s) URL or an fsspec URL for binary reading (seekable)."""
    if not is_url(path):
        with open(path, "rb") as fh:
            yield fh
        return
    if is_http(path):
        with open_http(path) as web:
            yield web
        return
    import fsspec

    with fsspec.open(path, "rb") as fh:
        yield cast(IO[bytes], fh)


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
