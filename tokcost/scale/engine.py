"""The Dask engine: plan shards, map them on a cluster, reduce the partials.

Without a scheduler address a ``LocalCluster`` of worker processes starts on
this machine (loopback only); with one, tokcost connects to that cluster, whose
workers must have tokcost installed and be able to open the inputs (the same
local paths, or URLs of a shared filesystem such as ``s3://``).

Dask is imported inside the functions, so ``import tokcost`` never loads it.
A worker that dies mid-task is replaced and its task run again by Dask (up to
``distributed.scheduler.allowed-failures`` times); the map functions are pure,
so a rerun gives the same partial and the result stays exact.

Nothing waits forever: before the work starts every worker must import the
tokcost this process imports (a worker without it would drop out at its first
task, leaving the work to hang), and while it runs, a cluster left without
workers for ``timeout`` seconds is an error.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import CancelledError
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from tokcost.errors import MissingDependency, TokcostError, UsageError
from tokcost.scale.http import HTML_PAGE, NotATextFile
from tokcost.scale.mapreduce import ShardCounts, WordCounts, count_shard, pretokenize_shard
from tokcost.scale.shards import (
    MAX_SHARD_BYTES,
    MIN_SHARD_BYTES,
    Shard,
    expand_local,
    is_url,
    list_url,
    plan_shards,
)

if TYPE_CHECKING:
    from tokcost.adapters.base import Tokenizer
    from tokcost.counting import CountReport, Skipped

#: Seconds to wait for a scheduler, for its workers to answer, and for a worker
#: to come back when none is left, before giving up with a clear error.
CONNECT_TIMEOUT = 10.0
#: Bad workers named in an error before "and N more".
NAMED_WORKERS = 3

ProgressFn = Callable[[str, int, int], None]


class ClusterError(TokcostError):
    """The Dask cluster cannot be reached, or lost the work."""


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError:
        # the CLI shows its flag: --engine dask
        raise MissingDependency("dask", "dask", "engine=dask", param="engine") from None
    return distributed


@contextmanager
def dask_client(
    scheduler: str | None = None,
    *,
    workers: int | None = None,
    timeout: float = CONNECT_TIMEOUT,
) -> Iterator[Any]:
    """A ``distributed.Client``: on ``scheduler`` (``tcp://host:8786``), else on a new
    LocalCluster of ``workers`` single-threaded processes bound to 127.0.0.1; its
    workers checked by ``check_workers`` before it is handed out."""
    distributed = _import_distributed()
    if scheduler:
        try:
            client = distributed.Client(scheduler, timeout=f"{timeout}s")
        except (OSError, TimeoutError):
            raise ClusterError(
                f"cannot reach the Dask scheduler at {scheduler} within {timeout:g} s; "
                "check the address (tcp://HOST:8786), start one with `dask scheduler`, "
                "or leave out scheduler=ADDRESS to run on this machine", param="scheduler"
            ) from None
        except ValueError as exc:
            raise UsageError(f"bad scheduler={scheduler!r}: {exc}", param="scheduler") from None
        try:
            check_workers(client, timeout)  # a worker within timeout, running our tokcost
            yield client
        finally:
            client.close()
        return
    cluster = distributed.LocalCluster(
        n_workers=max(1, workers or os.cpu_count() or 1),
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",  # loopback, any free port (8787 may be taken)
        silence_logs=logging.CRITICAL,  # task errors reach the user once, as a TokcostError
    )
    try:
        client = distributed.Client(cluster)
        try:
            check_workers(client, timeout)
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


def _tokcost_probe() -> Callable[[], str]:
    """The function each worker runs to say which tokcost it imports.

    It is made here, nested, so cloudpickle sends its code by value: a worker
    without tokcost can still run it (a module-level function would be sent by
    name, and fail to load there with the error only in the worker's log).
    """

    def tokcost_version() -> str:
        import tokcost

        return str(tokcost.__version__)

    return tokcost_version


def _named(items: Sequence[str]) -> str:
    shown = ", ".join(items[:NAMED_WORKERS])
    more = len(items) - NAMED_WORKERS
    return f"{shown} and {more} more" if more > 0 else shown


def check_workers(client: Any, timeout: float = CONNECT_TIMEOUT) -> None:
    """Raise ``ClusterError`` unless the cluster has a worker within ``timeout``
    seconds and every worker imports this process's tokcost version."""
    import tokcost

    address = client.scheduler.address
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (OSError, TimeoutError):
        raise ClusterError(
            f"the Dask scheduler at {address} has no workers after {timeout:g} s; "
            f"start some with `dask worker {address}`"
        ) from None
    probe = _tokcost_probe()
    run_async = getattr(client, "_run", None)  # Client.run itself has no timeout
    try:
        answers: dict[str, Any] = (
            client.run(probe, on_error="return") if run_async is None else
            client.sync(run_async, probe, on_error="return", callback_timeout=timeout))
    except (OSError, TimeoutError):
        raise ClusterError(
            f"the Dask workers of {address} did not answer within {timeout:g} s; see "
            "the workers' logs, or allow more time with timeout=SECONDS", param="timeout",
        ) from None
    want = str(tokcost.__version__)
    bad: list[str] = []
    for worker, answer in sorted(answers.items()):
        if isinstance(answer, BaseException):
            text = (str(answer).strip().splitlines() or [type(answer).__name__])[0]
            bad.append(f"{worker} cannot import it ({text})")
        elif answer != want:
            bad.append(f"{worker} has {answer}")
    if bad:
        raise ClusterError(
            f"the Dask workers must import tokcost {want}, as this machine does: "
            f"{_named(bad)}; install tokcost=={want} on every worker"
        )


class _Watch(threading.Thread):
    """Looks at the cluster while work is pending: when it has had no worker for
    ``timeout`` seconds (or its scheduler stops answering) it says why in
    ``reason`` and cancels the work, so the driver's wait ends."""

    def __init__(self, client: Any, futures: list[Any], timeout: float,
                 own_cluster: bool) -> None:
        super().__init__(name="tokcost-dask-watch", daemon=True)
        self.client = client
        self.futures = futures
        self.timeout = timeout
        self.own_cluster = own_cluster
        self.done = 0
        self.reason: str | None = None
        self.stopped = threading.Event()

    def run(self) -> None:
        step = min(1.0, self.timeout / 4)
        alone_since: float | None = None
        address = self.client.scheduler.address
        while not self.stopped.wait(step):
            try:
                threads = self.client.nthreads(callback_timeout=self.timeout)
            except Exception as exc:  # any failure to answer is the news
                if self.stopped.is_set():
                    return
                self.reason = (f"lost the Dask scheduler at {address} ({exc or 'no answer'}) "
                               f"with {self.done} of {len(self.futures)} shards done")
                break
            if threads:
                alone_since = None
                continue
            now = time.monotonic()
            alone_since = now if alone_since is None else alone_since
            if now - alone_since >= self.timeout:
                why = ("the local workers died and did not come back" if self.own_cluster
                       else f"the workers died or left the scheduler at {address} (one that "
                       "cannot import tokcost leaves at its first task: see the workers' "
                       f"logs); start workers with `dask worker {address}`")
                self.reason = (
                    f"no Dask worker to run the work for {self.timeout:g} s ({self.done} of "
                    f"{len(self.futures)} shards done): {why}, or allow more time with "
                    "timeout=SECONDS")
                break
        if self.reason is not None and not self.stopped.is_set():
            self.client.cancel(self.futures)

    def stop(self) -> None:
        self.stopped.set()


def _result(fut: Any, watch: _Watch, distributed: Any) -> Any:
    """The result of a finished future, or the one-line reason the work stopped."""
    try:
        return fut.result()
    except distributed.KilledWorker as exc:
        raise ClusterError(
            f"workers kept dying on one shard ({exc}); give them more memory "
            "or use smaller shards"
        ) from None
    except CancelledError as exc:  # by the watch, the scheduler or a remote client
        if watch.reason is not None:
            raise ClusterError(watch.reason, param="timeout") from None
        raise ClusterError(f"the cluster dropped the work: {exc}") from None
    except ImportError as exc:  # s3fs, say, on this machine but not on the workers
        raise ClusterError(
            f"a Dask worker cannot import what the work needs ({exc}); install the "
            "same packages on the workers as on this machine"
        ) from None


def _gather(
    client: Any, fn: Callable[..., Any], shards: Sequence[Shard], *, timeout: float,
    own_cluster: bool = False, **kwargs: Any,
) -> Iterator[tuple[Shard, Any]]:
    """Run ``fn(shard, **kwargs)`` on the cluster; yield ``(shard, result)`` as each ends.

    Raises ``ClusterError`` when no worker is left for ``timeout`` seconds.
    """
    distributed = _import_distributed()
    futures = client.map(fn, list(shards), pure=False, **kwargs)
    shard_of = {f.key: s for f, s in zip(futures, shards, strict=True)}
    watch = _Watch(client, futures, timeout, own_cluster)
    watch.start()
    try:
        for fut in distributed.as_completed(futures):
            result = _result(fut, watch, distributed)
            watch.done += 1
            yield shard_of[fut.key], result
            fut.release()
    finally:
        watch.stop()
        client.cancel(futures)


def shard_size(total_bytes: int, client: Any) -> int:
    """About 16 shards per worker thread, so the last round leaves few workers idle,
    within ``[MIN_SHARD_BYTES, MAX_SHARD_BYTES]``.

    2 workers and 200 MB -> 6.25 MB shards; 100 workers and 1 TB -> 64 MiB.
    """
    threads: int = max(1, sum(client.nthreads().values()))
    return max(MIN_SHARD_BYTES, min(MAX_SHARD_BYTES, total_bytes // (16 * threads)))


def _inputs(
    paths: Sequence[str],
    *,
    include: Sequence[str],
    exclude: Sequence[str],
    gitignore: bool,
    skipped: list[Skipped],
    timeout: float = CONNECT_TIMEOUT,
    unique: bool = False,
) -> list[tuple[str, str, int]]:
    """``(path, display, size)`` of every input file, in a stable order.

    Local paths are walked exactly as the local engine walks them (.gitignore,
    include/exclude, ``unique``: each file once, as ``du`` counts); quoted globs are
    expanded; URLs are listed through fsspec, except http(s) URLs, each one file (an
    HTML page is skipped, with the reason); with ``unique`` a URL listed twice is read once.
    """
    from tokcost.counting import Skipped, walk
    from tokcost.counting.skips import same_file_reason
    from tokcost.counting.walk import Visited, _globs

    found: list[tuple[str, str, int]] = []
    inc, exc = _globs(include), _globs(exclude)
    visited = Visited()  # shared by every argument's walk, as one local walk shares it
    urls: set[str] = set()
    for raw in paths:
        if raw == "-":
            raise UsageError("engine=dask reads files and URLs, not stdin; drop '-'",
                             param="engine")
        if is_url(raw):
            try:
                listed = list_url(raw, timeout=timeout)
            except NotATextFile:
                skipped.append(Skipped(raw, HTML_PAGE))
                continue
            for url, size, rel in listed:
                if inc is not None and not inc.match_file(rel):
                    continue
                if exc is not None and exc.match_file(rel):
                    continue
                if unique and url in urls:
                    skipped.append(Skipped(url, same_file_reason(url)))
                    continue
                urls.add(url)
                found.append((url, url, size))
            continue
        for source in walk(expand_local(raw), include=include, exclude=exclude,
                           gitignore=gitignore, skipped=skipped, unique=unique,
                           visited=visited):
            try:
                size = os.stat(source.path).st_size
            except OSError as err:
                skipped.append(Skipped(source.display, f"unreadable ({err.strerror})"))
                continue
            if os.path.isdir(source.path):
                continue
            found.append((source.path, source.display, size))
    return found


@dataclass(frozen=True)
class DaskEngine:
    """Count and pre-tokenize on a Dask cluster: the same reports and tables as
    ``tokcost.counting.LocalEngine``, to the token.

    ``scheduler`` (``tcp://HOST:8786``) names a running cluster; without one a
    LocalCluster of ``workers`` processes starts here (one per CPU). ``client``
    (an existing ``distributed.Client``) takes the place of both. Files are cut
    into byte-range shards of about ``shard_bytes`` (default: ``shard_size``).

    ``timeout`` (seconds) bounds every wait: for the scheduler, for its first
    worker, for the workers' answer to the tokcost version check, for an http(s)
    server, and for a worker to come back when none is left mid-run.
    """

    scheduler: str | None = None
    workers: int | None = None
    shard_bytes: int | None = None
    timeout: float = CONNECT_TIMEOUT
    client: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not 0 < self.timeout < math.inf:  # also refuses NaN
            raise UsageError(f"timeout={self.timeout:g} must be a number of seconds above 0",
                             param="timeout")

    @property
    def _own_cluster(self) -> bool:
        return self.client is None and not self.scheduler

    @contextmanager
    def _connected(self) -> Iterator[Any]:
        if self.client is not None:
            check_workers(self.client, self.timeout)
            yield self.client
            return
        with dask_client(self.scheduler, workers=self.workers, timeout=self.timeout) as made:
            yield made  # dask_client has checked its workers

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
        """``tokcost.counting.count_paths`` on the cluster (files and URLs, not stdin).

        Workers build the tokenizers from their specs; a tokenizer that is not
        streamable keeps every file whole. ``progress("count", done, total)``.
        ``unique``: each file once (by device and inode, as the local engine).
        """
        from tokcost.counting import CountReport, FileCount, Skipped

        report = CountReport(specs=list(tokenizers))
        files = _inputs(paths, include=include, exclude=exclude, gitignore=gitignore,
                        skipped=report.skipped, timeout=self.timeout, unique=unique)
        split = all(t.streamable for t in tokenizers.values())
        # Without unique, a file named twice is read once and reported twice, as the
        # local engine does.
        distinct = list({p: size for p, _, size in files}.items())
        merged: ShardCounts = {}
        if distinct:
            total = sum(size for _, size in distinct)
            with self._connected() as client:
                size = self.shard_bytes or shard_size(total, client)
                done = 0
                parts = _gather(client, count_shard, plan_shards(distinct, size, split=split),
                                timeout=self.timeout, own_cluster=self._own_cluster,
                                specs=list(tokenizers), allow_special=allow_special)
                for shard, part in parts:
                    for path, fp in part.items():
                        if path in merged:
                            merged[path].add(fp)
                        else:
                            merged[path] = fp
                    done += sum(p.end - p.start for p in shard)
                    if progress is not None:
                        progress("count", done, total)
        for path, display, _ in files:
            fp = merged[path]
            if fp.skipped:
                report.skipped.append(Skipped(display, fp.skipped))
                continue
            tokens = {spec: fp.tokens.get(spec, 0) for spec in tokenizers}
            report.files.append(FileCount(display, fp.bytes, fp.chars, tokens,
                                          fp.invalid_utf8_bytes))
        return report

    def count_words(
        self, paths: Sequence[str | Path], pattern: str, *, progress: ProgressFn | None = None
    ) -> WordCounts:
        """``tokcost.bpe.pretokenize.count_words`` on the cluster: the same frequencies.

        Each worker pre-tokenizes the lines that start in its byte ranges; the
        driver sums the tables. ``pattern`` is gpt2, cl100k, o200k or a regex.
        The input policy holds on the workers: binary files are left out, invalid
        UTF-8 is read as U+FFFD, and the result's ``skipped`` and
        ``invalid_utf8_bytes`` (its ``warnings``) say so, file by file.
        """
        from tokcost.bpe.pretokenize import merge_capped, prune_merged, resolve_pattern

        regex, _ = resolve_pattern(pattern)
        files: list[tuple[str, int]] = []
        for p in paths:
            raw = str(p)
            if is_url(raw):  # an HTML page raises: it is not a text file to train on
                files += [(url, size) for url, size, _ in list_url(raw, timeout=self.timeout)]
                continue
            for name in expand_local(raw):
                if os.path.isdir(name):
                    raise UsageError(f"{name} is a directory; pass the text files to train on")
                try:
                    files.append((name, os.stat(name).st_size))
                except OSError:
                    raise UsageError(f"training file not found: {name}") from None
        total = sum(size for _, size in files)
        counts = WordCounts()
        if not files:
            return counts
        with self._connected() as client:
            shards = plan_shards(files, self.shard_bytes or shard_size(total, client))
            done = 0
            parts = _gather(client, pretokenize_shard, shards, timeout=self.timeout,
                            own_cluster=self._own_cluster, pattern=regex)
            for shard, part in parts:
                # With a cap (--max-pretokens) the sum is bounded as each reader's table
                # is: at most twice the cap, whatever the number of shards.
                merge_capped(counts, part, regex)
                counts.add_notes(part)
                done += sum(p.end - p.start for p in shard)
                if progress is not None:
                    progress("pretokenize", done, total)
        prune_merged(counts, regex)
        return counts.in_order(path for path, _ in files)
