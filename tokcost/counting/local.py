"""Counting paths: each file read once for all tokenizers on this thread (progress in bytes as
blocks are read), its text counted on a runner; on a remote runner the workers read (scale)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import BinaryIO

from tokcost.adapters.base import Tokenizer, count_many, plan_run
from tokcost.adapters.fast_count import SMALL_RUN_CHARS
from tokcost.counting.inputs import (
    BLOCK_BYTES,
    SNIFF_BYTES,
    STDIN,
    UTF8,
    ByteSource,
    Inputs,
    LateBinary,
    Skipped,
    TextOnly,
    decode_input,
    input_warnings,
    refuse_urls,
    sniff_source,
    sniff_text,
    stdin_size,
    stdin_source,
    unreadable,
)
from tokcost.counting.stream import Reader
from tokcost.counting.walk import LeftOut, Source, Visited, walk
from tokcost.runner import CONNECT_TIMEOUT, LocalRunner, RunConfig, Runner, available_cpus


@dataclass
class FileCount:
    path: str
    bytes: int = 0
    chars: int = 0
    tokens: dict[str, int] = field(default_factory=dict)
    invalid_utf8_bytes: int = 0  # bytes replaced with U+FFFD (of its encoding's)
    encoding: str = UTF8  # or the UTF-16/32 its byte order mark names


@dataclass
class CountReport:
    """Per-file counts (in input order) for each tokenizer spec, and what was skipped."""

    specs: list[str]
    files: list[FileCount] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    left_out: LeftOut = field(default_factory=LeftOut)  # what .gitignore and globs left out

    @property
    def unreadable(self) -> tuple[Skipped, ...]:
        """The inputs that could not be read: a caller fails (exit 1) once the rest is shown."""
        return unreadable(self.skipped)

    @property
    def total_bytes(self) -> int:
        return sum(f.bytes for f in self.files)

    def total_tokens(self, spec: str) -> int:
        return sum(f.tokens.get(spec, 0) for f in self.files)

    @property
    def warnings(self) -> tuple[str, ...]:
        return input_warnings(self.skipped, ((f.path, f.invalid_utf8_bytes, f.encoding)
                                             for f in self.files))


# progress(stage, done, total): bytes done of total (0 while the total is unknown)
ProgressFn = Callable[[str, int, int], None]

LISTED_EVERY = 256  # files found between two reports while a walk lists them


def total_bytes(sources: Sequence[Source]) -> int:
    """The bytes ``sources`` hold, or 0 (unknown) when one is a stream (stdin, a FIFO)."""
    sizes = [s.size for s in sources]
    return 0 if None in sizes else sum(s for s in sizes if s is not None)


class ByteMeter:
    """Bytes dealt with over every input, told to ``progress`` as blocks are read."""

    def __init__(self, progress: ProgressFn | None, total: int = 0) -> None:
        self.progress, self.total = progress, total
        self.done = self._start = 0  # _start: done when the current input began

    def add(self, n: int) -> None:
        if n and self.progress is not None:
            self.done += n
            self.progress("count", self.done, self.total)

    def wrap(self, source: ByteSource) -> ByteSource:
        return source if self.progress is None else _Metered(source, self)

    def finish(self, source: Source) -> None:
        if source.size is not None:
            self.add(max(self._start + source.size - self.done, 0))
        self._start = self.done


class _Metered:
    def __init__(self, source: ByteSource, meter: ByteMeter) -> None:
        self.source, self.meter = source, meter

    def read(self, n: int = -1, /) -> bytes:
        data = self.source.read(n)
        self.meter.add(len(data))
        return data


BATCH_CHARS = 1 << 20  # work handed to a worker at once: many small files, or one chunk


def _count_batch(tokenizers: Mapping[str, Tokenizer] | None, items: list[tuple[str, str]],
                 allow_special: bool) -> list[int]:
    """The tokens of each ``(spec, text)`` (``tokenizers`` None: built once per process)."""
    if tokenizers is None:
        from tokcost.adapters.registry import get_tokenizer
        tokenizers = {spec: get_tokenizer(spec) for spec in {s for s, _ in items}}
    by_spec: dict[str, list[int]] = {}
    for i, (spec, _) in enumerate(items):
        by_spec.setdefault(spec, []).append(i)
    counts = [0] * len(items)
    for spec, where in by_spec.items():
        found = count_many(tokenizers[spec], [items[i][1] for i in where],
                           allow_special=allow_special)
        for i, n in zip(where, found, strict=True):
            counts[i] = n
    return counts


def runner_for(run: RunConfig, *, threads: bool) -> Runner:
    """The runner ``run`` asks for; by default a thread per CPU when ``threads``, else inline."""
    if run.dask:
        from tokcost.scale import DaskRunner
        return DaskRunner(run.scheduler, jobs=run.jobs, timeout=run.timeout or CONNECT_TIMEOUT)
    if run.jobs:
        return LocalRunner(run.jobs, processes=not threads)
    return LocalRunner(available_cpus() if threads else 1)


def count_paths(inputs: Inputs, tokenizers: Mapping[str, Tokenizer], *,
                run: RunConfig | Runner | None = None, allow_special: bool = False,
                progress: ProgressFn | None = None, unique: bool = False,
                block_bytes: int = BLOCK_BYTES) -> CountReport:
    """Count every file under ``inputs`` with each tokenizer, exactly, on ``run``."""
    threads = all(t.releases_gil for t in tokenizers.values())
    runner = (LocalRunner() if run is None else runner_for(run, threads=threads)
              if isinstance(run, RunConfig) else run)
    if not runner.remote:
        refuse_urls(inputs.paths)
    with runner:
        if runner.remote:
            from tokcost.scale import count_paths as on_workers
            return on_workers(inputs, tokenizers, runner, allow_special=allow_special,
                              progress=progress, unique=unique)
        report = CountReport(specs=list(tokenizers))
        # Listed first so the progress bar has a total (a long walk reports its progress).
        sources: list[Source] = []
        for s in walk(inputs.paths, include=inputs.include, exclude=inputs.exclude,
                      gitignore=inputs.gitignore, skipped=report.skipped,
                      visited=Visited() if unique else None,
                      left_out=report.left_out, follow=inputs.follow):
            sources.append(replace(s, size=stdin_size(inputs.stdin)) if s.path == STDIN else s)
            if progress is not None and len(sources) % LISTED_EVERY == 0:
                progress("walk", len(sources), 0)
        reading = _Reading(Reader(tokenizers, block_bytes, allow_special), report,
                           ByteMeter(progress, total_bytes(sources)), inputs.stdin)
        fn = partial(_count_batch, tokenizers if runner.in_process else None,
                     allow_special=allow_special)
        for batch, counts in runner.map(fn, reading.batches(sources)):
            for target, (spec, _), n in zip(reading.owners.pop(id(batch)), batch, counts,
                                            strict=True):
                target.tokens[spec] += n
        return report


@dataclass
class _Reading:
    """A local count's reading thread: each source read once, its texts handed out in batches."""

    reader: Reader
    report: CountReport
    meter: ByteMeter
    stdin: BinaryIO | None
    owners: dict[int, list[FileCount]] = field(default_factory=dict)  # id(batch) -> files

    def batches(self, sources: Iterable[Source]) -> Iterator[list[tuple[str, str]]]:
        """``(spec, text)`` batches; the first waits to tell ``plan_run`` if the run is small."""
        toks = self.reader.tokenizers
        batch: list[tuple[str, str]] = []
        owners: list[FileCount] = []
        chars, planned = 0, False
        for target, spec, text in self._items(sources):
            batch.append((spec, text))
            owners.append(target)
            chars += len(text)
            # each text is in the batch once per tokenizer: the run's own size is the share
            if chars >= (BATCH_CHARS if planned else SMALL_RUN_CHARS * max(1, len(toks))):
                if not planned:
                    planned = self._plan(toks.values(), None)  # not a small run
                self.owners[id(batch)] = owners
                yield batch
                batch, owners, chars = [], [], 0
        if not planned:
            self._plan(toks.values(), chars // max(1, len(toks)))
        if batch:
            self.owners[id(batch)] = owners
            yield batch

    @staticmethod
    def _plan(tokenizers: Iterable[Tokenizer], chars: int | None) -> bool:
        for tokenizer in tokenizers:
            plan_run(tokenizer, chars)
        return True

    def _items(self, sources: Iterable[Source]) -> Iterator[tuple[FileCount, str, str]]:
        for source in sources:
            yield from self._source(source)
            self.meter.finish(source)

    def _skip(self, source: Source, reason: str) -> None:
        self.report.skipped.append(Skipped(source.display, reason))

    def _piped(self, source: Source, handle: ByteSource) -> Iterator[tuple[FileCount, str, str]]:
        reason, encoding, piped = sniff_source(handle, wide=True)  # a pipe cannot be peeked at
        if reason is None:
            yield from self._stream(source, piped, encoding)
        else:
            self._skip(source, reason)

    def _source(self, source: Source) -> Iterator[tuple[FileCount, str, str]]:
        if source.path == STDIN:
            yield from self._piped(source, stdin_source(self.stdin))
            return
        if source.size is not None and source.size < self.reader.block_bytes:
            small = self.small(source)
            if small is not None:
                yield from small
                return
        try:
            with open(source.path, "rb") as handle:
                if source.size is None:  # a FIFO named directly
                    yield from self._piped(source, handle)
                    return
                reason, encoding = sniff_text(handle.peek(SNIFF_BYTES))
                if reason is None:  # read errors past this point are caught as such
                    yield from self._stream(source, handle, encoding)
                    return
        except IsADirectoryError:
            return
        except OSError as err:
            reason = f"unreadable ({err.strerror})"
        self._skip(source, reason)

    def _stream(self, source: Source, handle: ByteSource,
                encoding: str) -> Iterator[tuple[FileCount, str, str]]:
        counted = FileCount(source.display, tokens=dict.fromkeys(self.reader.tokenizers, 0),
                            encoding=encoding)
        metered = self.meter.wrap(handle)  # UTF-16/32: the decoder looks for U+0000 instead
        stream = self.reader.stream(TextOnly(metered) if encoding == UTF8 else metered, encoding)
        try:
            for spec, text in self.reader.texts(stream, name=source.display):
                yield counted, spec, text
        except OSError as err:
            self._skip(source, f"read error ({err.strerror})")
            return
        except LateBinary as late:
            self._skip(source, str(late))
            return
        counted.bytes, counted.chars = stream.bytes, stream.chars
        counted.invalid_utf8_bytes = stream.invalid_bytes
        self.report.files.append(counted)

    def small(self, source: Source) -> list[tuple[FileCount, str, str]] | None:
        """A file smaller than a block, read in one system call; None when it has grown."""
        block = self.reader.block_bytes
        try:
            fd = os.open(source.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError as err:
            if not isinstance(err, IsADirectoryError):
                self._skip(source, f"unreadable ({err.strerror})")
            return []
        parts: list[bytes] = []
        got = 0
        try:
            while got < block and (part := os.read(fd, block - got)):
                parts.append(part)
                got += len(part)
        except OSError as err:
            if not isinstance(err, IsADirectoryError):
                self._skip(source, f"read error ({err.strerror})")
            return []
        finally:
            os.close(fd)
        if got >= block:
            return None  # it grew since it was listed: the stream reads it
        data = b"".join(parts)
        self.meter.add(len(data))
        read = decode_input(source.display, data)
        if isinstance(read, Skipped):
            self.report.skipped.append(read)
            return []
        toks, text = self.reader.tokenizers, read.text
        counted = FileCount(source.display, len(data), len(text), dict.fromkeys(toks, 0),
                            read.invalid_bytes, read.encoding)
        self.report.files.append(counted)
        return [(counted, spec, text) for spec in toks] if text else []
