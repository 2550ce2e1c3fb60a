"""``http(s)://`` inputs read in byte ranges with the standard library (the server must answer
``Range``); an HTML page at a URL naming no ``.html`` file is not a text file."""

from __future__ import annotations

import http.client
import io
import os
import re
import urllib.error
import urllib.request
from typing import cast
from urllib.parse import urlsplit

from tokcost.errors import InputError, UsageError

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
