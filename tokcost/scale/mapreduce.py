"""The remote runner's work (docs/scale-out.md): its inputs (local paths, quoted globs, URLs read
in ``Range`` requests) listed with their sizes and opened by the workers; pure map and reduce
functions for any runner, tokenizers sent as specs; ``count_paths``, the remote runner's count."""

from __future__ import annotations

import glob
import http.client
import io
import operator
import os
import re
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from functools import partial, reduce
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from tokcost import counting
from tokcost.errors import InputError, MissingDependency, UsageError, arg
from tokcost.limits import MAX_HTTP_BYTES
from tokcost.runner import Piece, Runner, plan_shards

if TYPE_CHECKING:
    from tokcost.adapters.base import Tokenizer
    from tokcost.bpe.pretokenize import PretokenizeSpec
    from tokcost.counting import CountReport, Inputs, ProgressFn, Reader, Skipped


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
    if ranged[1] > MAX_HTTP_BYTES:  # the shard plan would not fit in memory
        raise InputError(f"the server of {url} says it holds {ranged[1]:,} bytes, more than the "
                         f"{MAX_HTTP_BYTES:,} tokcost reads over HTTP; download what you need")
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
        return [(fs.unstrip_protocol(name), int(info.get("size") or 0),
                 name[len(base):] if name.startswith(base) else name.rsplit("/", 1)[-1])
                for name in names if (info := fs.info(name)).get("type") != "directory"]
    except OSError as exc:
        raise InputError(f"cannot list {url}: {exc}") from None


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
                          gitignore=inputs.gitignore, skipped=skipped,
                          visited=visited if unique else None, follow=inputs.follow)
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
        data = self.fh.read(self.left if n < 0 else min(n, self.left))
        self.left -= len(data)
        return data


@dataclass(frozen=True)
class TextCounts:
    """Token totals of some texts, per tokenizer spec. ``a + b`` merges two partials."""

    texts: int = 0
    chars: int = 0
    tokens: Mapping[str, int] = field(default_factory=dict)

    def __add__(self, other: TextCounts) -> TextCounts:
        tokens = Counter(self.tokens)
        tokens.update(other.tokens)
        return TextCounts(self.texts + other.texts, self.chars + other.chars, dict(tokens))


def count_texts_partial(texts: Iterable[str], specs: Sequence[str], *,
                        allow_special: bool = False) -> TextCounts:
    """Map: count each text (a document of its own) with every tokenizer spec."""
    from tokcost.adapters.registry import get_tokenizer
    toks = {spec: get_tokenizer(spec) for spec in specs}
    totals = dict.fromkeys(specs, 0)
    n = chars = 0
    for text in texts:
        n += 1
        chars += len(text)
        for spec, tok in toks.items():
            totals[spec] += tok.count(text, allow_special=allow_special)
    return TextCounts(n, chars, totals)


def merge_counts(partials: Iterable[TextCounts]) -> TextCounts:
    """Reduce: the sum of partial ``TextCounts`` (in any order)."""
    return reduce(operator.add, partials, TextCounts())


@dataclass
class FilePartial:
    """What one piece (or, merged, all pieces) of one file counted."""

    bytes: int = 0
    chars: int = 0
    invalid_utf8_bytes: int = 0
    tokens: dict[str, int] = field(default_factory=dict)
    skipped: str | None = None  # why the whole file is left out (binary, unreadable)

    def add(self, other: FilePartial) -> None:
        self.bytes += other.bytes
        self.chars += other.chars
        self.invalid_utf8_bytes += other.invalid_utf8_bytes
        for spec, n in other.tokens.items():
            self.tokens[spec] = self.tokens.get(spec, 0) + n
        self.skipped = self.skipped or other.skipped


ShardCounts = dict[str, FilePartial]


def count_shard(shard: Sequence[Piece], specs: Sequence[str], *,
                allow_special: bool = False) -> ShardCounts:
    """Map: count every piece of a shard with every tokenizer spec."""
    from tokcost.adapters.registry import get_tokenizer

    # One reader: with allow_special, no cut inside any tokenizer's special, ends included.
    reader = counting.Reader({spec: get_tokenizer(spec) for spec in specs},
                             allow_special=allow_special)
    return merge_shard_counts([{piece.path: _count_piece(piece, reader)} for piece in shard],
                              into={})


def _count_piece(piece: Piece, reader: Reader) -> FilePartial:
    """One piece, read as the local count reads a file, between the cuts after its ends."""
    toks, allow_special = reader.tokenizers, reader.allow_special
    part = FilePartial(tokens=dict.fromkeys(toks, 0))
    if reader.whole_specs and not piece.whole:
        raise UsageError(f"{', '.join(reader.whole_specs)} must see whole files: plan shards "
                         "with split=False")

    def count(spec: str, text: str) -> None:
        part.tokens[spec] += toks[spec].count(text, allow_special=allow_special)

    rule = reader.rule
    try:
        with open_binary(piece.path) as fh:
            if piece.start == 0:
                part.skipped = counting.sniff_binary(fh.read(counting.SNIFF_BYTES))
                if part.skipped is not None:
                    return part
            begin, stop = (counting.next_cut(fh, at, piece.size, punct=rule.punct,
                                             specials=rule.specials)
                           for at in (piece.start, piece.end))
            stream = reader.read(Window(fh, begin, stop), count, name=piece.path)
    except OSError as err:
        part.skipped = ("a folder" if isinstance(err, IsADirectoryError)
                        else f"unreadable ({err.strerror or err})")
        return part
    part.bytes, part.chars, part.invalid_utf8_bytes = (
        stream.bytes, stream.chars, stream.invalid_bytes)
    return part


def merge_shard_counts(partials: Iterable[ShardCounts],
                       into: ShardCounts | None = None) -> ShardCounts:
    """Reduce: per-file sums of shard counts, added ``into`` a table."""
    merged: ShardCounts = {} if into is None else into
    for part in partials:
        for path, fp in part.items():
            merged.setdefault(path, FilePartial(tokens={})).add(fp)
    return merged


def count_paths(inputs: Inputs, tokenizers: Mapping[str, Tokenizer], runner: Runner, *,
                allow_special: bool = False, progress: ProgressFn | None = None,
                unique: bool = False) -> CountReport:
    """``tokcost.counting.count_paths`` on a remote runner, its workers reading the shards."""
    report = counting.CountReport(specs=list(tokenizers))
    files = list_inputs(inputs, report.skipped, unique=unique,
                        timeout=getattr(runner, "timeout", READ_TIMEOUT))
    # Without unique, a file named twice is read once and reported twice, as locally.
    distinct = list({path: size for path, _, size in files}.items())
    merged: ShardCounts = {}
    if distinct:
        total = sum(size for _, size in distinct)
        split = all(t.streamable for t in tokenizers.values())
        shards = plan_shards(distinct, runner.shard_bytes(total), split=split)
        fn = partial(count_shard, specs=list(tokenizers), allow_special=allow_special)
        done = 0
        for shard, part in runner.map(fn, shards):
            merge_shard_counts([part], into=merged)
            done += sum(p.end - p.start for p in shard)
            if progress is not None:
                progress("count", done, total)
    for path, display, _ in files:
        fp = merged[path]
        if fp.skipped:
            report.skipped.append(counting.Skipped(display, fp.skipped))
            continue
        tokens = {spec: fp.tokens.get(spec, 0) for spec in tokenizers}
        report.files.append(counting.FileCount(display, fp.bytes, fp.chars, tokens,
                                               fp.invalid_utf8_bytes))
    return report


class WordCounts(Counter[str]):
    """Pre-token frequencies, with the input policy's notes per file: ``invalid_utf8_bytes``
    and ``skipped`` (they merge, and survive pickling)."""

    def __init__(self, words: Mapping[str, int] | Iterable[str] = (), *,
                 invalid_utf8_bytes: Mapping[str, int] | None = None,
                 skipped: Mapping[str, str] | None = None) -> None:
        super().__init__(words)
        self.invalid_utf8_bytes: dict[str, int] = dict(invalid_utf8_bytes or {})
        self.skipped: dict[str, str] = dict(skipped or {})

    def __reduce__(self) -> tuple[Any, ...]:
        # Counter pickles its items only; the notes go with them as the state.
        return (type(self), (dict(self),),
                {"invalid_utf8_bytes": self.invalid_utf8_bytes, "skipped": self.skipped})

    def add_notes(self, other: Mapping[str, int]) -> None:
        for path, n in getattr(other, "invalid_utf8_bytes", {}).items():
            self.invalid_utf8_bytes[path] = self.invalid_utf8_bytes.get(path, 0) + n
        for path, why in getattr(other, "skipped", {}).items():
            self.skipped.setdefault(path, why)

    def in_order(self, paths: Iterable[str]) -> WordCounts:
        rank = {p: i for i, p in enumerate(dict.fromkeys(paths))}
        for name in ("invalid_utf8_bytes", "skipped"):
            notes = getattr(self, name).items()
            setattr(self, name, dict(sorted(notes, key=lambda kv: rank.get(kv[0], len(rank)))))
        return self

    @property
    def warnings(self) -> tuple[str, ...]:
        skipped = (counting.Skipped(p, why) for p, why in self.skipped.items())
        return counting.input_warnings(skipped, self.invalid_utf8_bytes.items())


def pretokenize_texts(texts: Iterable[str], spec: PretokenizeSpec) -> Counter[str]:
    """Map: pre-token frequencies of texts, split into lines as the BPE trainer reads."""
    from tokcost.bpe.pretokenize import count_blocks
    return count_blocks(texts, spec)


def pretokenize_shard(shard: Sequence[Piece], spec: PretokenizeSpec,
                      into: WordCounts | None = None) -> WordCounts:
    """Map: pre-token frequencies of the lines that *start* inside each piece."""
    from tokcost.bpe.pretokenize import count_blocks, line_range, training_file
    from tokcost.counting.inputs import LateBinary, TextOnly
    counts = WordCounts() if into is None else into
    for piece in shard:
        path = piece.path
        with training_file(path), open_binary(path) as fh:
            # The file's head and the piece's: a piece inside zeros is not scanned for lines.
            reason = counting.sniff_binary(fh.read(counting.SNIFF_BYTES))
            if reason is None and piece.start:
                fh.seek(piece.start)
                reason = counting.sniff_binary(fh.read(counting.SNIFF_BYTES), piece.start)
            if reason is None:
                start, stop = line_range(fh, piece)
                blocks = counting.LineBlocks(TextOnly(Window(fh, start, stop), start))
                try:
                    count_blocks(blocks, spec, counts)
                except LateBinary as late:  # a NUL further on: the read stops there
                    reason = str(late)
            if reason is not None:
                counts.skipped.setdefault(path, reason)
                continue
        if blocks.invalid_bytes:
            counts.invalid_utf8_bytes[path] = (counts.invalid_utf8_bytes.get(path, 0)
                                               + blocks.invalid_bytes)
    if into is None:
        spec.prune(counts)  # a reader's end, as the local readers end
    return counts


def merge_word_counts(partials: Iterable[Mapping[str, int]]) -> WordCounts:
    """Reduce: the sum of pre-token frequency tables, with their notes."""
    merged = WordCounts()
    for part in partials:
        merged.update(part)
        merged.add_notes(part)
    return merged
