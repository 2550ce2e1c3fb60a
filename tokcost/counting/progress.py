"""Progress in bytes, reported as each block is read (a large file moves the bar too)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from tokcost.counting.inputs import ByteSource
from tokcost.counting.walk import Source

# progress(stage, done, total): bytes done of total (0 while the total is unknown)
ProgressFn = Callable[[str, int, int], None]

LISTED_EVERY = 256  # files found between two reports while a walk lists them


def listed(sources: Iterable[Source], progress: ProgressFn | None) -> list[Source]:
    """Every source, walked first so the total is known (a long walk reports its progress)."""
    found: list[Source] = []
    for source in sources:
        found.append(source)
        if progress is not None and len(found) % LISTED_EVERY == 0:
            progress("walk", len(found), 0)
    return found


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
