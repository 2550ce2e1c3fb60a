"""Counting paths on this machine: threads or processes, every file read once for all
tokenizers (``LocalEngine``), and the ``Engine`` protocol the Dask engine also meets."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO, Protocol

from tokcost.adapters.base import Tokenizer, count_many, plan_run
from tokcost.adapters.fast_count import SMALL_RUN_CHARS
from tokcost.counting.inputs import (
    BLOCK_BYTES,
    SNIFF_BYTES,
    STDIN,
    ByteSource,
    Skipped,
    Utf8Decoder,
    input_warnings,
    sniff_binary,
    sniff_source,
    stdin_size,
    stdin_source,
)
from tokcost.counting.progress import (
    ByteMeter,
    listed,
    total_bytes,
)
from tokcost.counting.progress import ProgressFn as ProgressFn  # its home before progress.py
from tokcost.counting.skips import unreadable
from tokcost.counting.stream import (
    Reader,
)
from tokcost.counting.walk import (
    LeftOut,
    Source,
    walk,
)
from tokcost.errors import UsageError


@dataclass
class FileCount:
    path: str
    bytes: int = 0
    chars: int = 0
    tokens: dict[str, int] = field(default_factory=dict)
    invalid_utf8_bytes: int = 0


@dataclass
class CountReport:
    """Per-file counts (in input order) for each tokenizer spec, and what was skipped."""

    specs: list[str]
    files: list[FileCount] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    # what the walk's rules left out (.gitignore, include/exclude): why nothing matched
    left_out: LeftOut = field(default_factory=LeftOut)

    @property
    def unreadable(self) -> tuple[Skipped, ...]:
        """The inputs that could not be read (permission denied, a read error): the
        count is short by them, so a caller fails once the rest is shown (exit code 1)."""
        return unreadable(self.skipped)

    @property
    def total_bytes(self) -> int:
        return sum(f.bytes for f in self.files)

    @property
    def total_chars(self) -> int:
        return sum(f.chars for f in self.files)

    def total_tokens(self, spec: str) -> int:
        return sum(f.tokens.get(spec, 0) for f in self.files)

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the input policy reports: inputs skipped, invalid UTF-8 replaced."""
        return input_warnings(self.skipped, ((f.path, f.invalid_utf8_bytes) for f in self.files))


# Worker-side state for process pools: tokenizers are built once per process.
_worker_tokenizers: dict[str, Tokenizer] = {}


def _init_worker(specs: Sequence[str]) -> None:
    import signal

    from tokcost.adapters.registry import get_tokenizer

    # Ctrl-C is the parent's to handle: workers must not print their own tracebacks.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    for spec in specs:
        _worker_tokenizers[spec] = get_tokenizer(spec)


def _count_batch_in_worker(items: list[tuple[str, str]], allow_special: bool) -> list[int]:
    return _count_batch(_worker_tokenizers, items, allow_special)


def _count_batch(
    tokenizers: Mapping[str, Tokenizer], items: list[tuple[str, str]], allow_special: bool
) -> list[int]:
    if len(items) == 1:
        spec, text = items[0]
        return [tokenizers[spec].count(text, allow_special=allow_special)]
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


BATCH_CHARS = 1 << 20  # work handed to a worker at once: many small files, or one chunk


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, as ``taskset`` sets it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class _Grew:
    """A small file found a block or more long when read (see ``_count_small``)."""


_GREW = _Grew()


class _CountExecutor:
    """Runs counting work inline, on threads, or on processes, with bounded queueing.

    Threads when every tokenizer's core releases the GIL (tiktoken, tokenizers):
    no start-up cost and no copying of text between processes. Processes otherwise.
    Small texts are batched (about BATCH_CHARS a task) so a tree of many small
    files costs few hand-offs; at most 4 x jobs batches are in flight.

    The first batch is held until the run has SMALL_RUN_CHARS of text or ends, even on
    one worker: then the run is known to be small or not, and each tokenizer that can
    choose a backend for it (``plan_run``: the OpenAI encodings) has chosen before its
    first count.
    """

    def __init__(
        self, tokenizers: Mapping[str, Tokenizer], jobs: int, allow_special: bool,
        block_bytes: int = BLOCK_BYTES,
    ) -> None:
        self.tokenizers = tokenizers
        self.allow_special = allow_special
        # One reader for every file: which tokenizers stream, and where to cut, once.
        self.reader = Reader(tokenizers, block_bytes, allow_special)
        self.executor: Executor | None = None
        self.threads = all(t.releases_gil for t in tokenizers.values())
        # jobs=0: a thread per CPU when threads suffice; processes only when asked for.
        self.jobs = max(1, jobs) if jobs else (available_cpus() if self.threads else 1)
        if self.jobs > 1:
            if self.threads:
                self.executor = ThreadPoolExecutor(self.jobs)
            else:
                # Imported here: multiprocessing costs every start, and threads are the rule.
                from concurrent.futures import ProcessPoolExecutor

                self.executor = ProcessPoolExecutor(
                    self.jobs, initializer=_init_worker, initargs=(list(tokenizers),)
                )
        self.batch: list[tuple[FileCount, str, str]] = []
        self.batch_chars = 0
        self.planned = False
        self.inflight: list[tuple[Future[list[int]], list[tuple[FileCount, str]]]] = []

    def submit(self, target: FileCount, spec: str, text: str) -> None:
        """Add the tokens of ``text`` to ``target.tokens[spec]`` (now, or by ``close``)."""
        if self.executor is None and self.planned:
            n = self.tokenizers[spec].count(text, allow_special=self.allow_special)
            target.tokens[spec] += n
            return
        self.batch.append((target, spec, text))
        self.batch_chars += len(text)
        if self.planned:
            if self.batch_chars >= BATCH_CHARS:
                self.flush()
        elif self._run_chars() >= SMALL_RUN_CHARS:
            self.flush()  # not a small run: counting starts, on the fast backend

    def _run_chars(self) -> int:
        # each text is in the batch once per tokenizer: the run's own size is the share
        return self.batch_chars // max(1, len(self.tokenizers))

    def _plan(self, chars: int | None) -> None:
        """Tell each tokenizer the run's size: ``chars`` when all of it is in hand,
        None when there is more (see TiktokenTokenizer.plan_run)."""
        self.planned = True
        for tokenizer in self.tokenizers.values():
            plan_run(tokenizer, chars)

    def flush(self, *, last: bool = False) -> None:
        if not self.planned:
            self._plan(self._run_chars() if last else None)
        if not self.batch:
            return
        items = [(spec, text) for _, spec, text in self.batch]
        owners = [(target, spec) for target, spec, _ in self.batch]
        self.batch, self.batch_chars = [], 0
        if self.executor is None:
            counts = _count_batch(self.tokenizers, items, self.allow_special)
            for (target, spec), n in zip(owners, counts, strict=True):
                target.tokens[spec] += n
            return
        if self.threads:
            fut = self.executor.submit(_count_batch, self.tokenizers, items, self.allow_special)
        else:
            fut = self.executor.submit(_count_batch_in_worker, items, self.allow_special)
        self.inflight.append((fut, owners))
        if len(self.inflight) >= 4 * self.jobs:  # bound memory: wait for the oldest
            self.drain(keep=2 * self.jobs)

    def drain(self, keep: int = 0) -> None:
        while len(self.inflight) > keep:
            fut, owners = self.inflight.pop(0)
            for (target, spec), n in zip(owners, fut.result(), strict=True):
                target.tokens[spec] += n

    def close(self) -> None:
        try:
            self.flush(last=True)
            self.drain()
        finally:
            if self.executor is not None:
                self.executor.shutdown(wait=True, cancel_futures=True)


def refuse_urls(paths: Iterable[str | Path]) -> None:
    """URLs (``s3://...``, ``https://...``) are read by the Dask engine only."""
    for raw in paths:
        if "://" in str(raw) and not os.path.exists(raw):
            raise UsageError(f"{raw} is a URL: URLs need engine=dask (this engine reads "
                             "files, folders and stdin)", param="engine")


@dataclass(frozen=True)
class LocalEngine:
    """Count and pre-tokenize on this machine: ``jobs`` threads for tokenizers whose
    cores release the GIL (tiktoken, tokenizers), else ``jobs`` processes. ``jobs=0``
    counts on a thread per CPU (``available_cpus``) when threads suffice, else here."""

    jobs: int = 1
    block_bytes: int = BLOCK_BYTES

    def count_paths(
        self,
        paths: Sequence[str],
        tokenizers: Mapping[str, Tokenizer],
        *,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        gitignore: bool = True,
        allow_special: bool = False,
        stdin: BinaryIO | None = None,
        progress: ProgressFn | None = None,
        unique: bool = False,
    ) -> CountReport:
        """See ``count_paths``. Counts are exact for any file size: streamable
        tokenizers see boundary-safe chunks, the others the whole text."""
        refuse_urls(paths)
        report = CountReport(specs=list(tokenizers))
        # Progress and skips: all listed first so the bar has a total, and bytes
        # reported per block read (meter), not per file.
        sources = listed(walk(paths, include=include, exclude=exclude, gitignore=gitignore,
                              skipped=report.skipped, unique=unique,
                              left_out=report.left_out), progress)
        # stdin redirected from a file has a size: the bar then has a total too
        sources = [replace(s, size=stdin_size(stdin)) if s.path == STDIN else s
                   for s in sources]
        meter = ByteMeter(progress, total_bytes(sources))
        executor = _CountExecutor(tokenizers, self.jobs, allow_special, self.block_bytes)
        try:
            for source in sources:
                counted = self._count_source(source, stdin, executor, report.skipped, meter)
                meter.finish(source)
                if counted is None:
                    continue
                report.files.append(counted)
        finally:
            executor.close()  # the counts still in flight land in report.files
        return report

    def _count_source(
        self,
        source: Source,
        stdin: BinaryIO | None,
        executor: _CountExecutor,
        skipped: list[Skipped],
        meter: ByteMeter,
    ) -> FileCount | None:
        if source.path == STDIN:
            reason, piped = sniff_source(stdin_source(stdin))
            if reason is None:
                return self._count_handle(source, piped, executor, skipped, meter)
            skipped.append(Skipped(source.display, reason))
            return None
        if source.size is not None and source.size < self.block_bytes:
            small = self._count_small(source, executor, skipped, meter)
            if not isinstance(small, _Grew):
                return small
        try:
            with open(source.path, "rb") as handle:
                if source.size is None:  # a FIFO named directly: sniffed as stdin is
                    reason, piped = sniff_source(handle)
                    if reason is None:
                        return self._count_handle(source, piped, executor, skipped, meter)
                else:
                    reason = sniff_binary(handle.peek(SNIFF_BYTES))
                if reason is None:  # read errors past this point are caught as such
                    return self._count_handle(source, handle, executor, skipped, meter)
        except IsADirectoryError:
            return None
        except OSError as err:
            skipped.append(Skipped(source.display, f"unreadable ({err.strerror})"))
            return None
        skipped.append(Skipped(source.display, reason))
        return None

    def _count_small(
        self,
        source: Source,
        executor: _CountExecutor,
        skipped: list[Skipped],
        meter: ByteMeter,
    ) -> FileCount | _Grew | None:
        """A file smaller than a block, read whole in one system call: what
        ``_count_handle`` counts (one chunk, the whole text), without a buffered
        reader, a peek and a stream per file, which a folder of thousands of small
        files pays thousands of times. ``_GREW`` when it is a block or more by now
        (it grew since it was listed): the streaming path reads it then."""
        try:
            fd = os.open(source.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except IsADirectoryError:
            return None
        except OSError as err:
            skipped.append(Skipped(source.display, f"unreadable ({err.strerror})"))
            return None
        try:
            parts: list[bytes] = []
            got = 0
            while got < self.block_bytes:
                part = os.read(fd, self.block_bytes - got)
                if not part:
                    break
                parts.append(part)
                got += len(part)
        except IsADirectoryError:
            return None
        except OSError as err:
            skipped.append(Skipped(source.display, f"read error ({err.strerror})"))
            return None
        finally:
            os.close(fd)
        if got >= self.block_bytes:
            return _GREW
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        meter.add(len(data))
        reason = sniff_binary(data)  # it looks at the first SNIFF_BYTES only
        if reason is not None:
            skipped.append(Skipped(source.display, reason))
            return None
        counted = FileCount(path=source.display, tokens=dict.fromkeys(executor.tokenizers, 0))
        decoder = Utf8Decoder()
        text = decoder.decode(data, final=True)
        if text:
            for spec in executor.tokenizers:
                executor.submit(counted, spec, text)
        counted.bytes = len(data)
        counted.chars = len(text)
        counted.invalid_utf8_bytes = decoder.invalid_bytes
        return counted

    def _count_handle(
        self,
        source: Source,
        handle: ByteSource,
        executor: _CountExecutor,
        skipped: list[Skipped],
        meter: ByteMeter,
    ) -> FileCount | None:
        counted = FileCount(path=source.display, tokens=dict.fromkeys(executor.tokenizers, 0))
        try:
            stream = executor.reader.read(
                meter.wrap(handle), lambda spec, text: executor.submit(counted, spec, text),
                name=source.display)
        except OSError as err:
            skipped.append(Skipped(source.display, f"read error ({err.strerror})"))
            return None
        counted.bytes = stream.bytes
        counted.chars = stream.chars
        counted.invalid_utf8_bytes = stream.invalid_bytes
        return counted

    def count_words(
        self, paths: Sequence[str | Path], pattern: str, *, progress: ProgressFn | None = None
    ) -> Counter[str]:
        """See ``tokcost.bpe.pretokenize.count_words`` (``jobs`` processes)."""
        from tokcost.bpe.pretokenize import count_words

        refuse_urls(paths)
        return count_words(paths, pattern, jobs=self.jobs or 1, progress=progress)


class Engine(Protocol):
    """Where counting runs: ``LocalEngine`` here, ``tokcost.scale.DaskEngine`` on Dask."""

    def count_paths(
        self,
        paths: Sequence[str],
        tokenizers: Mapping[str, Tokenizer],
        *,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        gitignore: bool = True,
        allow_special: bool = False,
        stdin: BinaryIO | None = None,
        progress: ProgressFn | None = None,
        unique: bool = False,
    ) -> CountReport: ...

    def count_words(
        self, paths: Sequence[str | Path], pattern: str, *, progress: ProgressFn | None = None
    ) -> Counter[str]: ...


def count_paths(
    paths: Sequence[str],
    tokenizers: Mapping[str, Tokenizer],
    *,
    engine: Engine | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    gitignore: bool = True,
    allow_special: bool = False,
    stdin: BinaryIO | None = None,
    progress: ProgressFn | None = None,
    unique: bool = False,
) -> CountReport:
    """Count every file under ``paths`` (``-`` is standard input) with each tokenizer.

    ``tokenizers`` maps a spec to its tokenizer; each file is read once for all.
    ``engine`` runs it (default: ``LocalEngine()``, one worker here).
    ``progress("count", bytes_done, bytes_total or 0)`` reports the bytes read, block
    by block (a binary file's bytes once it is skipped); the total is 0 when an input
    is a stream. A long walk reports ``progress("walk", files_found, 0)`` first.

    ``unique``: a file named twice (directly, through a folder, a symlink or a hard
    link) is counted once, as ``du`` counts it; the later paths are skipped with the
    reason. Without it each path is counted (a budget counts its own paths). Every
    engine (``LocalEngine``, ``tokcost.scale.DaskEngine``) applies it.
    """
    run = engine or LocalEngine()
    return run.count_paths(
        paths, tokenizers, include=include, exclude=exclude, gitignore=gitignore,
        allow_special=allow_special, stdin=stdin, progress=progress, unique=unique)
