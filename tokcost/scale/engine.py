"""The Dask engine: plan shards, map them on a cluster, reduce the partials.

Without a scheduler address a ``LocalCluster`` of worker processes starts on
this machine (loopback only); with one, tokcost connects to that cluster, whose
workers must have tokcost installed and be able to open the inputs (the same
local paths, or URLs of a shared filesystem such as ``s3://``).

Dask is imported inside the functions, so ``import tokcost`` never loads it.
A worker that dies mid-task is replaced and its task run again by Dask (up to
``distributed.scheduler.allowed-failures`` times); the map functions are pure,
so a rerun gives the same partial and the result stays exact.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import CancelledError
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from tokcost.errors import MissingDependency, TokcostError, UsageError
from tokcost.scale.mapreduce import ShardCounts, count_shard, pretokenize_shard
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

#: Seconds to wait for a scheduler before giving up with a clear error.
CONNECT_TIMEOUT = 10.0

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
    LocalCluster of ``workers`` single-threaded processes bound to 127.0.0.1."""
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
            try:
                client.wait_for_workers(1, timeout=timeout)
            except (OSError, TimeoutError):
                raise ClusterError(
                    f"the Dask scheduler at {scheduler} has no workers after {timeout:g} s; "
                    f"start some with `dask worker {scheduler}`"
                ) from None
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
            yield client
        finally:
            client.close()
    finally:
        cluster.close()


def _gather(
    client: Any, fn: Callable[..., Any], shards: Sequence[Shard], **kwargs: Any
) -> Iterator[tuple[Shard, Any]]:
    """Run ``fn(shard, **kwargs)`` on the cluster; yield ``(shard, result)`` as each ends."""
    distributed = _import_distributed()
    futures = client.map(fn, list(shards), pure=False, **kwargs)
    shard_of = {f.key: s for f, s in zip(futures, shards, strict=True)}
    try:
        for fut in distributed.as_completed(futures):
            try:
                result = fut.result()
            except distributed.KilledWorker as exc:
                raise ClusterError(
                    f"workers kept dying on one shard ({exc}); give them more memory "
                    "or use smaller shards"
                ) from None
            except CancelledError as exc:  # the scheduler or a remote client cancelled it
                raise ClusterError(f"the cluster dropped the work: {exc}") from None
            yield shard_of[fut.key], result
            fut.release()
    finally:
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
) -> list[tuple[str, str, int]]:
    """``(path, display, size)`` of every input file, in a stable order.

    Local paths are walked exactly as the local engine walks them (.gitignore,
    include/exclude); quoted globs are expanded; URLs are listed through fsspec.
    """
    from tokcost.counting import Skipped, _globs, walk

    found: list[tuple[str, str, int]] = []
    inc, exc = _globs(include), _globs(exclude)
    for raw in paths:
        if raw == "-":
            raise UsageError("engine=dask reads files and URLs, not stdin; drop '-'",
                             param="engine")
        if is_url(raw):
            for url, size, rel in list_url(raw):
                if inc is not None and not inc.match_file(rel):
                    continue
                if exc is not None and exc.match_file(rel):
                    continue
                found.append((url, url, size))
            continue
        for source in walk(expand_local(raw), include=include, exclude=exclude,
                           gitignore=gitignore, skipped=skipped):
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
    into byte-range shards of about ``shard_bytes`` (default: ``shard_size``);
    ``timeout`` bounds the wait for the scheduler and its workers, in seconds.
    """

    scheduler: str | None = None
    workers: int | None = None
    shard_bytes: int | None = None
    timeout: float = CONNECT_TIMEOUT
    client: Any = field(default=None, compare=False, repr=False)

    @contextmanager
    def _connected(self) -> Iterator[Any]:
        if self.client is not None:
            yield self.client
            return
        with dask_client(self.scheduler, workers=self.workers, timeout=self.timeout) as made:
            yield made

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
    ) -> CountReport:
        """``tokcost.counting.count_paths`` on the cluster (files and URLs, not stdin).

        Workers build the tokenizers from their specs; a tokenizer that is not
        streamable keeps every file whole. ``progress("count", done, total)``.
        """
        from tokcost.counting import CountReport, FileCount, Skipped

        report = CountReport(specs=list(tokenizers))
        files = _inputs(paths, include=include, exclude=exclude, gitignore=gitignore,
                        skipped=report.skipped)
        split = all(t.streamable for t in tokenizers.values())
        # A file named twice is read once and reported twice, as the local engine does.
        unique = list({p: size for p, _, size in files}.items())
        merged: ShardCounts = {}
        if unique:
            total = sum(size for _, size in unique)
            with self._connected() as client:
                size = self.shard_bytes or shard_size(total, client)
                done = 0
                parts = _gather(client, count_shard, plan_shards(unique, size, split=split),
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
    ) -> Counter[str]:
        """``tokcost.bpe.pretokenize.count_words`` on the cluster: the same frequencies.

        Each worker pre-tokenizes the lines that start in its byte ranges; the
        driver sums the tables. ``pattern`` is gpt2, cl100k, o200k or a regex.
        """
        from tokcost.bpe.pretokenize import resolve_pattern

        regex, _ = resolve_pattern(pattern)
        files: list[tuple[str, int]] = []
        for p in paths:
            raw = str(p)
            if is_url(raw):
                files += [(url, size) for url, size, _ in list_url(raw)]
                continue
            for name in expand_local(raw):
                if os.path.isdir(name):
                    raise UsageError(f"{name} is a directory; pass the text files to train on")
                try:
                    files.append((name, os.stat(name).st_size))
                except OSError:
                    raise UsageError(f"training file not found: {name}") from None
        total = sum(size for _, size in files)
        counts: Counter[str] = Counter()
        if not files:
            return counts
        with self._connected() as client:
            shards = plan_shards(files, self.shard_bytes or shard_size(total, client))
            done = 0
            for shard, part in _gather(client, pretokenize_shard, shards, pattern=regex):
                counts.update(part)
                done += sum(p.end - p.start for p in shard)
                if progress is not None:
                    progress("pretokenize", done, total)
        return counts
