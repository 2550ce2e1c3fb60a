"""One execution interface: a ``Runner`` maps a pure function over shards (``LocalRunner`` here,
``tokcost.scale.DaskRunner`` on Dask); ``RunConfig`` is the request part that picks one."""

from __future__ import annotations

import math
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol, TypeVar

from tokcost.errors import UsageError, arg
from tokcost.units import parse_count

S = TypeVar("S")
R = TypeVar("R")

# Bytes per shard: ``shard_size`` picks about 16 per worker, within these bounds.
SHARD_BYTES = 32 << 20
MIN_SHARD_BYTES = 1 << 20
MAX_SHARD_BYTES = 64 << 20
CONNECT_TIMEOUT = 10.0  # seconds a Dask run waits for a scheduler, a worker, a server


class EngineKind(str, Enum):
    LOCAL = "local"
    DASK = "dask"


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Where work runs: ``engine`` local (``jobs`` workers; 0 or None: the caller's default) or
    dask (at ``scheduler``, which implies it, else ``jobs`` processes; waits of ``timeout`` s)."""

    engine: EngineKind | str = EngineKind.LOCAL
    jobs: int | None = None
    scheduler: str | None = None
    timeout: float | None = None

    def __post_init__(self) -> None:
        try:
            engine = EngineKind(self.engine)
        except ValueError:
            raise UsageError(f"unknown {arg('engine')} {self.engine!r}: use local or dask",
                             param="engine", value=self.engine) from None
        object.__setattr__(self, "engine", EngineKind.DASK if self.scheduler else engine)
        if self.jobs is not None:  # 0, as None: the caller's default
            object.__setattr__(self, "jobs", parse_count(self.jobs, param="jobs") or None)
        if self.timeout is None:
            return
        timeout = float(self.timeout)
        given = arg("timeout", f"{timeout:g}")
        if not self.dask:
            raise UsageError(f"{given} is for {arg('engine', 'dask')} only: add "
                             f"{arg('engine', 'dask')}, or leave out {given}",
                             param="timeout", value=timeout, related=("engine",))
        if not 0 < timeout < math.inf:  # also refuses NaN
            raise UsageError(f"{given} must be a number of seconds above 0", param="timeout",
                             value=timeout)
        object.__setattr__(self, "timeout", timeout)

    @property
    def dask(self) -> bool:
        return self.engine is EngineKind.DASK


class Runner(Protocol):
    """Runs ``fn`` over shards; ``fn`` and the shards must pickle unless ``in_process``."""

    @property
    def workers(self) -> int: ...
    @property
    def in_process(self) -> bool: ...
    @property
    def remote(self) -> bool: ...
    def map(self, fn: Callable[[S], R], shards: Iterable[S]) -> Iterator[tuple[S, R]]: ...
    def shard_bytes(self, total: int) -> int: ...
    def __enter__(self) -> Runner: ...
    def __exit__(self, *exc: object) -> None: ...


def available_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def shard_size(total: int, workers: int, per_worker: int = 16) -> int:
    """About ``per_worker`` shards per worker, within [MIN_SHARD_BYTES, MAX_SHARD_BYTES]."""
    return max(MIN_SHARD_BYTES, min(MAX_SHARD_BYTES, total // (per_worker * max(1, workers))))


def _ignore_sigint() -> None:
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle


@dataclass(frozen=True)
class LocalRunner(AbstractContextManager["LocalRunner"]):
    """``jobs`` workers here: inline for one, else threads or ``processes``; results in order."""

    jobs: int = 1
    processes: bool = False
    remote = False

    @property
    def workers(self) -> int:
        return max(1, self.jobs)

    @property
    def in_process(self) -> bool:
        return self.workers == 1 or not self.processes

    def shard_bytes(self, total: int) -> int:
        # Inline, shards only pace the progress; a worker's table is pickled and merged.
        return shard_size(total, self.workers, per_worker=16 if self.workers == 1 else 2)

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, fn: Callable[[S], R], shards: Iterable[S]) -> Iterator[tuple[S, R]]:
        if self.workers == 1:
            yield from ((shard, fn(shard)) for shard in shards)
            return
        from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
        pool = (ProcessPoolExecutor(self.workers, initializer=_ignore_sigint) if self.processes
                else ThreadPoolExecutor(self.workers))
        inflight: deque[tuple[S, Any]] = deque()
        try:
            for shard in shards:
                inflight.append((shard, pool.submit(fn, shard)))
                if len(inflight) >= 4 * self.workers:  # bound memory: wait for the oldest
                    while len(inflight) > 2 * self.workers:
                        done, fut = inflight.popleft()
                        yield done, fut.result()
            while inflight:
                done, fut = inflight.popleft()
                yield done, fut.result()
        except BaseException:
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                proc.terminate()  # a worker mid-shard would hold up Ctrl-C until it ends
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def plan_shards(files: Sequence[tuple[str, int]], shard_bytes: int = SHARD_BYTES, *,
                split: bool = True) -> list[tuple[Piece, ...]]:
    """Pack ``(path, size)`` files, in order, into shards of about ``shard_bytes``; large files
    are cut into pieces (unless not ``split``), small ones share a shard."""
    if shard_bytes < 1:
        raise UsageError("the shard size must be at least 1 byte")
    shards: list[tuple[Piece, ...]] = []
    current: list[Piece] = []
    room = shard_bytes
    for path, size in files:
        pos = 0
        while True:
            take = size - pos if not split else min(room, size - pos)
            current.append(Piece(path, pos, pos + take, size))
            pos += take
            room -= take
            if room <= 0:
                shards.append(tuple(current))
                current, room = [], shard_bytes
            if pos >= size:
                break
    if current:
        shards.append(tuple(current))
    return shards


@dataclass(frozen=True)
class Piece:
    """Bytes ``[start, end)`` of ``path`` of ``size`` bytes; its reader moves both to a cut."""

    path: str
    start: int
    end: int
    size: int

    @property
    def whole(self) -> bool:
        return self.start == 0 and self.end == self.size
