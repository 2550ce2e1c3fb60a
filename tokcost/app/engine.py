"""Where the work runs: the engine a use case hands to counting and BPE training."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

from tokcost.errors import UsageError

if TYPE_CHECKING:
    from tokcost.counting import Engine

__all__ = ["EngineKind", "make_engine"]


class EngineKind(str, Enum):
    """``local``: this process and its workers; ``dask``: a Dask cluster."""

    LOCAL = "local"
    DASK = "dask"


def make_engine(
    kind: EngineKind | str | Engine = EngineKind.LOCAL, *, jobs: int | None = None,
    scheduler: str | None = None, timeout: float | None = None,
) -> Engine:
    """The engine for ``kind``: ``jobs`` workers here, or Dask (``jobs`` local worker
    processes, or the cluster at ``scheduler``, which implies Dask). An engine
    object is returned as it is. Without ``jobs``, local counting runs on a thread
    per CPU when every tokenizer releases the GIL (tiktoken, toktok-rs, tokenizers),
    else in this process (``LocalEngine(jobs=0)``). ``timeout`` (seconds, Dask only; default 10)
    bounds every wait on the cluster: see ``tokcost.scale.DaskEngine``.

    >>> make_engine("local", jobs=2)
    LocalEngine(jobs=2, block_bytes=1048576)
    >>> make_engine("local")
    LocalEngine(jobs=0, block_bytes=1048576)
    >>> make_engine(scheduler="tcp://10.0.0.5:8786")
    DaskEngine(scheduler='tcp://10.0.0.5:8786', workers=None, shard_bytes=None, timeout=10.0)
    >>> make_engine("dask", timeout=60).timeout
    60.0
    """
    if not isinstance(kind, str):  # EngineKind is a str too
        return kind
    try:
        kind = EngineKind(kind)
    except ValueError:
        raise UsageError(f"unknown engine {kind!r}: use local or dask", param="engine") from None
    if kind is EngineKind.DASK or scheduler:
        from tokcost.scale import DaskEngine
        from tokcost.scale.engine import CONNECT_TIMEOUT

        return DaskEngine(scheduler=scheduler, workers=jobs,
                          timeout=CONNECT_TIMEOUT if timeout is None else float(timeout))
    if timeout is not None:
        raise UsageError(f"timeout={timeout:g} is for engine=dask only: add engine=dask, "
                         f"or leave out timeout={timeout:g}", param="timeout",
                         related=("engine",))
    from tokcost.counting import LocalEngine

    # jobs=0: a thread per CPU when threads suffice, so a plain `tokcount DIR` uses
    # every core; one process otherwise (worker processes cost more than they win
    # unless asked for).
    return LocalEngine(jobs=jobs or 0)
