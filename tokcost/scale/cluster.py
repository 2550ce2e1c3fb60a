"""The Dask runner: a loopback ``LocalCluster``, or the cluster at a scheduler address; nothing
waits forever (every worker checked first, no worker for ``timeout`` seconds an error)."""

from __future__ import annotations

import asyncio
import importlib
import logging
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import CancelledError, ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import Any, TypeVar

from tokcost.atomic import signals_deferred
from tokcost.errors import MissingDependency, TokcostError, UsageError, arg
from tokcost.runner import CONNECT_TIMEOUT, EngineKind, RunConfig, shard_size

S = TypeVar("S")
R = TypeVar("R")
NAMED_WORKERS = 3  # bad workers named in an error before "and N more"
FORK_METHOD = "distributed.worker.multiprocessing-method"


class ClusterError(TokcostError):
    """The Dask cluster cannot be reached, or lost the work."""


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise MissingDependency("dask", "dask", arg("engine", "dask"), param="engine") from None
    return distributed


@contextmanager
def dask_client(scheduler: str | None = None, *, workers: int | None = None,
                timeout: float = CONNECT_TIMEOUT) -> Iterator[Any]:
    """A ``distributed.Client`` on ``scheduler`` or a new loopback cluster, workers checked."""
    with ExitStack() as stack:
        if scheduler:
            distributed = _import_distributed()
            try:
                # distributed bounds the TCP connection, not the scheduler's handshake: a
                # port that accepts and never answers would hang Client() for ever (in a thread:
                # the caller may run an event loop; MemoryError: a server not Dask's answered)
                with ThreadPoolExecutor(1) as pool:
                    pool.submit(asyncio.run, _handshake(distributed, scheduler, timeout)).result()
                client = distributed.Client(scheduler, timeout=f"{timeout}s")
            except (OSError, TimeoutError, asyncio.TimeoutError, MemoryError):
                raise ClusterError(
                    f"cannot reach the Dask scheduler at {scheduler} within {timeout:g} s; "
                    "check the address (tcp://HOST:8786), start one with `dask scheduler`, "
                    f"or leave out {arg('scheduler', 'ADDRESS')} to run on this machine",
                    param="scheduler") from None
            except ValueError as exc:
                raise UsageError(f"bad {arg('scheduler', repr(scheduler))}: {exc}",
                                 param="scheduler") from None
        else:
            # On Ctrl-C this process alone stops, prints "interrupted" and closes the cluster:
            # the workers are forked by a forkserver started with SIGINT ignored, which they
            # inherit (multiprocessing's forkserver restores the handlers it started with).
            # A Ctrl-C while it starts is held until it has, then closes it (an import or a
            # LocalCluster interrupted midway can lose it, or leave workers it cannot close).
            with signals_deferred():
                _start_forkserver()
                distributed = _import_distributed()
                import dask
                stack.enter_context(dask.config.set({FORK_METHOD: "forkserver"}))
                cluster = distributed.LocalCluster(
                    n_workers=max(1, workers or os.cpu_count() or 1), threads_per_worker=1,
                    processes=True, host="127.0.0.1",
                    dashboard_address="127.0.0.1:0",  # any free loopback port (8787 may be taken)
                    silence_logs=logging.CRITICAL)  # task errors reach the user once
                stack.callback(cluster.close)
            client = distributed.Client(cluster)
        stack.callback(client.close)
        check_workers(client, timeout)  # a worker within timeout, running our tokcost
        yield client


async def _handshake(distributed: Any, address: str, timeout: float) -> None:
    """Connect to ``address`` and read its handshake within ``timeout`` seconds."""
    tls = distributed.Security().get_connection_args("client")  # as Client() reads the config
    comm = await asyncio.wait_for(distributed.comm.connect(address, timeout=timeout, **tls),
                                  timeout)
    await comm.close()


def _start_forkserver() -> None:
    """Start multiprocessing's forkserver (preloading distributed) with SIGINT ignored, which
    the workers it forks inherit; before distributed starts its threads, so a Ctrl-C meanwhile
    waits, blocked, for this thread (no other can take it and drop it)."""
    multiprocessing.get_context("forkserver").set_forkserver_preload(["distributed"])
    if threading.current_thread() is not threading.main_thread():
        multiprocessing.forkserver.ensure_running()
        return
    multiprocessing.resource_tracker.ensure_running()  # it unblocks SIGINT when it starts
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        multiprocessing.forkserver.ensure_running()  # milliseconds: started, not awaited
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _tokcost_probe() -> Callable[[], str]:
    """Which tokcost a worker imports (a lambda: cloudpickle sends it by value)."""
    return lambda: str(importlib.import_module("tokcost").__version__)


def check_workers(client: Any, timeout: float = CONNECT_TIMEOUT) -> None:
    """Raise ``ClusterError`` unless a worker comes and every worker imports our tokcost."""
    import tokcost
    address = client.scheduler.address
    try:
        client.wait_for_workers(1, timeout=timeout)
    except (OSError, TimeoutError):
        raise ClusterError(f"the Dask scheduler at {address} has no workers after {timeout:g} "
                           f"s; start some with `dask worker {address}`") from None
    probe = _tokcost_probe()
    run_async = getattr(client, "_run", None)  # Client.run itself has no timeout
    try:
        answers: dict[str, Any] = (
            client.run(probe, on_error="return") if run_async is None else
            client.sync(run_async, probe, on_error="return", callback_timeout=timeout))
    except (OSError, TimeoutError):
        raise ClusterError(f"the Dask workers of {address} did not answer within {timeout:g} s; "
                           "see the workers' logs, or allow more time with "
                           f"{arg('timeout', 'SECONDS')}", param="timeout") from None
    want = str(tokcost.__version__)
    bad: list[str] = []
    for worker, answer in sorted(answers.items()):
        if isinstance(answer, BaseException):
            text = (str(answer).strip().splitlines() or [type(answer).__name__])[0]
            bad.append(f"{worker} cannot import it ({text})")
        elif answer != want:
            bad.append(f"{worker} has {answer}")
    if bad:
        more = f" and {len(bad) - NAMED_WORKERS} more" if len(bad) > NAMED_WORKERS else ""
        raise ClusterError(f"the Dask workers must import tokcost {want}, as this machine does: "
                           f"{', '.join(bad[:NAMED_WORKERS])}{more}; install tokcost=={want} "
                           "on every worker")


class _Watch(threading.Thread):
    """Cancels the work once the cluster has had no worker for ``timeout`` seconds."""

    def __init__(self, client: Any, futures: list[Any], timeout: float, own_cluster: bool) -> None:
        super().__init__(name="tokcost-dask-watch", daemon=True)
        self.client, self.futures, self.timeout = client, futures, timeout
        self.own_cluster, self.done = own_cluster, 0
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
            alone_since = time.monotonic() if alone_since is None else alone_since
            if time.monotonic() - alone_since >= self.timeout:
                why = ("the local workers died and did not come back" if self.own_cluster
                       else f"the workers died or left the scheduler at {address} (one that "
                       "cannot import tokcost leaves at its first task: see the workers' "
                       f"logs); start workers with `dask worker {address}`")
                self.reason = (f"no Dask worker to run the work for {self.timeout:g} s "
                               f"({self.done} of {len(self.futures)} shards done): {why}, or "
                               f"allow more time with {arg('timeout', 'SECONDS')}")
                break
        if self.reason is not None and not self.stopped.is_set():
            self.client.cancel(self.futures)


def _result(fut: Any, watch: _Watch, distributed: Any) -> Any:
    try:
        return fut.result()
    except distributed.KilledWorker as exc:
        raise ClusterError(f"workers kept dying on one shard ({exc}); give them more memory "
                           "or use smaller shards") from None
    except CancelledError as exc:  # by the watch, the scheduler or a remote client
        if watch.reason is not None:
            raise ClusterError(watch.reason, param="timeout") from None
        raise ClusterError(f"the cluster dropped the work: {exc}") from None
    except ImportError as exc:  # s3fs, say, on this machine but not on the workers
        raise ClusterError(f"a Dask worker cannot import what the work needs ({exc}); install "
                           "the same packages on the workers as on this machine") from None


class DaskRunner(AbstractContextManager["DaskRunner"]):
    """A ``Runner`` on Dask, connected on first use; ``timeout`` seconds bound every wait."""

    in_process = False
    remote = True

    def __init__(self, scheduler: str | None = None, *, jobs: int | None = None,
                 shard_bytes: int | None = None, timeout: float = CONNECT_TIMEOUT,
                 client: Any = None) -> None:
        RunConfig(engine=EngineKind.DASK, timeout=timeout)  # the one check of a timeout
        self.scheduler, self.jobs, self.timeout = scheduler, jobs, float(timeout)
        self._shard_bytes, self._given, self._client = shard_bytes, client, client
        self._checked = False
        self._stack = ExitStack()

    def __repr__(self) -> str:
        return (f"DaskRunner(scheduler={self.scheduler!r}, jobs={self.jobs}, "
                f"timeout={self.timeout:g})")

    def __exit__(self, *exc: object) -> None:
        self._stack.close()
        self._client, self._checked = self._given, False

    @property
    def client(self) -> Any:
        if self._client is None:
            self._client = self._stack.enter_context(
                dask_client(self.scheduler, workers=self.jobs, timeout=self.timeout))
        elif not self._checked:
            check_workers(self._client, self.timeout)
        self._checked = True
        return self._client

    @property
    def workers(self) -> int:
        return max(1, int(sum(self.client.nthreads().values())))

    def shard_bytes(self, total: int) -> int:
        return self._shard_bytes or shard_size(total, self.workers)

    def map(self, fn: Callable[[S], R], shards: Iterable[S]) -> Iterator[tuple[S, R]]:
        distributed = _import_distributed()
        client, shards = self.client, list(shards)
        futures = client.map(fn, shards, pure=False)
        shard_of = {f.key: s for f, s in zip(futures, shards, strict=True)}
        watch = _Watch(client, futures, self.timeout, self._given is None and not self.scheduler)
        watch.start()
        try:
            for fut in distributed.as_completed(futures):
                result = _result(fut, watch, distributed)
                watch.done += 1
                yield shard_of[fut.key], result
                fut.release()
        finally:
            watch.stopped.set()
            client.cancel(futures)
