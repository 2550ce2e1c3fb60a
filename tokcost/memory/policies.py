"""KV allocation policies in ``capacity`` token slots: ``max`` (Orca (Max), FasterTransformer),
``pow2`` (Orca (Pow2)) and ``oracle`` reserve one contiguous run per sequence up front, ``paged``
(vLLM) takes blocks on demand; memory split as PagedAttention's §3, Fig. 2 (docs/kvmem.md)."""

from __future__ import annotations

import bisect
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from itertools import pairwise
from typing import ClassVar, Protocol

from tokcost.errors import UsageError, arg
from tokcost.memory.blocks import check_block_size
from tokcost.memory.workload import Request

__all__ = ["POLICIES", "ContiguousPolicy", "MaxPolicy", "OraclePolicy", "PagedPolicy", "Policy",
           "PolicyName", "Pow2Policy", "Row", "Run", "StepSample", "make_policy", "next_pow2",
           "policy_names"]


class PolicyName(str, Enum):
    """The allocation policies ``kvmem simulate`` compares."""

    MAX = "max"
    POW2 = "pow2"
    ORACLE = "oracle"
    PAGED = "paged"

    def __str__(self) -> str:
        return self.value


POLICIES: tuple[str, ...] = tuple(p.value for p in PolicyName)


def policy_names(names: Iterable[PolicyName | str], *,
                 param: str = "policies") -> tuple[PolicyName, ...]:
    chosen = [str(n) for n in names]  # a PolicyName's str() is its value
    bad = [n for n in chosen if n not in POLICIES]
    if bad or not chosen:
        raise UsageError(f"unknown {arg(param)} '{','.join(bad)}'; use some of: "
                         f"{','.join(POLICIES)}", param=param)
    # Two runs of one policy on one stream are the same run: a duplicate is a typo.
    if twice := sorted({n for n in chosen if chosen.count(n) > 1}, key=chosen.index):
        raise UsageError(f"{arg(param)} names {', '.join(repr(n) for n in twice)} twice; give "
                         "each policy once", param=param)
    return tuple(PolicyName(n) for n in chosen)


def next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


@dataclass(frozen=True)
class StepSample:
    """Slots in each category at one step (for property tests and plots)."""

    token_states: int
    reserved: int
    internal: int
    external: int
    free: int
    live_sequences: int


Row = tuple[int, int, int, int, int, int, int]
"""Slots summed over steps: token states, reserved, internal, external, free; then physical
and logical paged blocks (0 for contiguous policies)."""


class Run:
    """A request admitted at the start of step ``start``: its ``n`` samples run in lockstep
    and each holds ``prompt + s - start + 1`` tokens after step ``s`` (``s + c``)."""

    __slots__ = ("alive", "c", "cow", "final", "full", "index", "n", "order", "phase", "prompt",
                 "size", "start", "starts")

    def __init__(self, index: int, r: Request, order: int, start: int) -> None:
        self.index, self.prompt, self.final, self.n = index, r.prompt_tokens, r.total, r.n
        self.order, self.start, self.c = order, start, r.prompt_tokens - start + 1
        self.alive = True
        self.starts: list[int] = []  # contiguous: each sample's first slot
        self.size = 0  # contiguous: slots reserved per sample
        self.phase = 0  # paged: a sample takes a block at the steps s with s % block == phase
        self.full = 0  # paged, shared: full prompt blocks every sample reads (stored once)
        self.cow = 0  # paged, shared: blocks the first step copies (the partial prompt block)


class Host(Protocol):
    """What a policy may ask of the serving loop while it grows the running requests."""

    def newest(self) -> Run: ...
    def evict(self, run: Run) -> None: ...
    def runs(self) -> int: ...


@dataclass(eq=False)
class Policy(ABC):
    """How one allocation policy places requests in ``capacity`` token slots. It keeps counts,
    never per-token state: every sample grows one token a step, so the memory split after step
    ``s`` follows from sums over the running requests (``live * s + lc`` token states)."""

    capacity: int
    max_len: int = 2048
    block_size: int = 16  # paged only
    share_prefix: bool = True  # paged only: samples of a request share the prompt's blocks
    name: ClassVar[PolicyName]
    paged: ClassVar[bool] = False  # its report names the block size and the sharing saved

    def __post_init__(self) -> None:
        self.live = 0  # sequences running
        self.lc = 0  # sum of n * c over the running requests

    @abstractmethod
    def admit_need(self, r: Request) -> int:
        """Slots needed to admit ``r`` into empty memory (and to finish it, if contiguous)."""

    @abstractmethod
    def admit(self, r: Request, index: int, order: int, start: int) -> Run | None:
        """Place ``r`` at the start of step ``start``; None (nothing placed) if it does not fit."""

    @abstractmethod
    def release(self, run: Run, now: int, *, grown: bool) -> None:
        """Free ``run``'s memory in step ``now``, after its growth or (preempted) before it."""

    def grow(self, now: int, host: Host) -> int:
        """Give the token each sample produces in step ``now`` a slot, in a step ``advance``
        found short of memory; the number of preemptions."""
        return 0

    @abstractmethod
    def row(self, now: int, head: Request | None) -> Row:
        """The memory split after step ``now``; ``head`` is the request waiting, if any."""

    @abstractmethod
    def advance(self, now: int, limit: int, head: Request | None,
                samples: list[StepSample] | None) -> tuple[int, Row]:
        """Serve up to ``limit`` steps after ``now`` in which nothing is admitted or released
        (the first grows the requests admitted for it too): how many pass before one would
        run out of memory, and their summed split."""

    def _tokens(self, now: int, m: int) -> int:
        """Token states summed over steps now+1 .. now+m (each sample grows one a step)."""
        return self.live * (m * now + m * (m + 1) // 2) + m * self.lc


@dataclass(eq=False)
class ContiguousPolicy(Policy):
    """One run of slots per sequence, reserved at admission, placed first-fit."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self._intervals: list[tuple[int, int]] = []  # (start, end), sorted
        self._sizes = self._finals = 0  # slots reserved; tokens the running samples will hold
        self._split_of: tuple[Request | None, tuple[int, int, int]] | None = None  # memoized
        self._misfit: Request | None = None  # its first sample found no gap (until a change)
        self._sizes_of: dict[int, int] = {}  # reservation by total length, memoized

    def _size(self, r: Request) -> int:
        total = r.prompt_tokens + r.output_tokens
        if (size := self._sizes_of.get(total)) is None:
            size = self._sizes_of[total] = self.reservation(total)
        return size

    @abstractmethod
    def reservation(self, total: int) -> int:
        """Slots reserved for a sample that will hold ``total`` tokens."""

    def admit_need(self, r: Request) -> int:
        return self._size(r) * r.n

    def _first_fit(self, size: int) -> int | None:
        pos = 0
        for start, end in self._intervals:  # disjoint, sorted: each starts after the last ends
            if start - pos >= size:
                return pos
            pos = end
        return pos if self.capacity - pos >= size else None

    def admit(self, r: Request, index: int, order: int, start: int) -> Run | None:
        size, starts = self._size(r), list[int]()
        if size * r.n > self.capacity - self._sizes:
            return None  # not enough free slots, gaps or not
        for _ in range(r.n):
            first = self._first_fit(size)
            if first is None:
                if not starts:
                    self._misfit = r
                for s in starts:
                    self._intervals.remove((s, s + size))
                return None
            bisect.insort(self._intervals, (first, first + size))
            starts.append(first)
        run = Run(index, r, order, start)
        run.starts, run.size, self._split_of, self._misfit = starts, size, None, None
        self._sizes += r.n * size
        self._finals += r.n * run.final
        self.live += r.n
        self.lc += r.n * run.c
        return run

    def release(self, run: Run, now: int, *, grown: bool) -> None:
        for s in run.starts:
            self._intervals.remove((s, s + run.size))
        self._split_of = self._misfit = None
        self._sizes -= run.n * run.size
        self._finals -= run.n * run.final
        self.live -= run.n
        self.lc -= run.n * run.c

    def _split(self, head: Request | None) -> tuple[int, int, int]:
        """(internal, external, free): constant while nobody is admitted or finishes."""
        if self._split_of is not None and self._split_of[0] is head:
            return self._split_of[1]
        free, split = self.capacity - self._sizes, (self._sizes - self._finals, 0, 0)
        need = 0 if head is None else self._size(head)
        # Enough free slots in total, but no gap large enough: external fragmentation (known
        # when the head's first sample just failed to find one).
        if head is not None and free >= need * head.n and (
                self._misfit is head or self._largest_gap() < need):
            split = (split[0], free, 0)
        else:
            split = (split[0], 0, free)
        self._split_of = (head, split)
        return split

    def _largest_gap(self) -> int:
        iv = self._intervals
        if not iv:
            return self.capacity
        return max(iv[0][0], self.capacity - iv[-1][1],
                   max((b[0] - a[1] for a, b in pairwise(iv)), default=0))

    def row(self, now: int, head: Request | None) -> Row:
        tokens = self.live * now + self.lc
        return (tokens, self._finals - tokens, *self._split(head), 0, 0)

    def advance(self, now: int, limit: int, head: Request | None,
                samples: list[StepSample] | None) -> tuple[int, Row]:
        internal, external, free = self._split(head)
        if samples is not None:
            steps = range(now + 1, now + limit + 1)
            samples.extend(StepSample(t, self._finals - t, internal, external, free, self.live)
                           for t in (self.live * s + self.lc for s in steps))
        tokens = self._tokens(now, limit)
        return limit, (tokens, limit * self._finals - tokens, limit * internal,
                       limit * external, limit * free, 0, 0)


class MaxPolicy(ContiguousPolicy):
    name = PolicyName.MAX

    def reservation(self, total: int) -> int:
        return self.max_len


class Pow2Policy(ContiguousPolicy):
    name = PolicyName.POW2

    def reservation(self, total: int) -> int:
        return min(next_pow2(total), max(self.max_len, total))


class OraclePolicy(ContiguousPolicy):
    name = PolicyName.ORACLE

    def reservation(self, total: int) -> int:
        return total


@dataclass(eq=False)
class PagedPolicy(Policy):
    """Blocks on demand; samples share the prompt's full blocks and copy the partial one on
    their first write (vLLM's block manager, counted: the split needs no block ids). A sample
    takes a block at each step where its length reaches k * block + 1."""

    name = PolicyName.PAGED
    paged = True

    def __post_init__(self) -> None:
        super().__post_init__()
        self.b = self.block_size
        self.num_blocks = self.capacity // self.b
        self.capacity = self.num_blocks * self.b  # whole blocks only
        self.used = 0  # physical blocks
        self.saved = 0  # blocks prefix sharing saves: logical = used + saved after a step
        self._hist = [0] * self.b  # samples taking a block at steps s with s % b == phase
        self._moment = 0  # sum of phase * samples over the phases (for whole cycles)
        self._phases: list[dict[int, Run]] = [{} for _ in range(self.b)]  # in admission order
        self._fresh: list[Run] = []  # admitted at the start of this step

    def admit_need(self, r: Request) -> int:
        per_seq = -(-r.total // self.b)
        full = r.prompt_tokens // self.b
        if self.share_prefix and r.n > 1:
            return (full + (per_seq - full) * r.n) * self.b
        return per_seq * r.n * self.b

    def admit(self, r: Request, index: int, order: int, start: int) -> Run | None:
        # The prompt's blocks plus one block per sample of headroom for the first tokens.
        n, b = r.n, self.b
        prompt_blocks = -(-r.prompt_tokens // b)
        shared = self.share_prefix and n > 1
        held = prompt_blocks if shared else prompt_blocks * n
        if held + n > self.num_blocks - self.used:
            return None
        self.used += held
        run = Run(index, r, order, start)
        if shared:
            run.full = r.prompt_tokens // b
            # The first token of each sample but the last goes into a copy of the shared
            # partial block (copy-on-write; the last sharer keeps the original).
            run.cow = n - 1 if r.prompt_tokens % b else 0
            self.saved += (n - 1) * run.full
        run.phase = phase = (1 - run.c) % b
        self._hist[phase] += n
        self._moment += phase * n
        self._phases[phase][order] = run
        self.live += n
        self.lc += n * run.c
        self._fresh.append(run)
        return run

    def release(self, run: Run, now: int, *, grown: bool) -> None:
        n, length = run.n, run.prompt + now - run.start + grown
        held = n * -(-length // self.b) - (n - 1) * run.full
        # Preempted before its first step: its prompt blocks, the partial one not yet copied.
        self.used -= held - run.cow if length == run.prompt else held
        self._hist[run.phase] -= n
        self._moment -= run.phase * n
        del self._phases[run.phase][run.order]
        self.saved -= (n - 1) * run.full
        self.live -= n
        self.lc -= n * run.c

    def grow(self, now: int, host: Host) -> int:
        fresh, self._fresh = self._fresh, []
        phase = now % self.b
        demand = self._hist[phase]
        for run in fresh:
            demand += run.cow
        if self.used + demand <= self.num_blocks:
            self.used += demand
            return 0
        # Out of blocks in this step: grow oldest first, preempting the newest (maybe the
        # one growing) as vLLM does, so the oldest always progresses.
        order = [(run, run.n) for run in self._phases[phase].values() if run.start < now]
        order += [(run, run.n * (run.phase == phase) + run.cow) for run in fresh]
        preemptions = 0
        for run, need in order:
            if not run.alive or self.num_blocks - self.used >= need:
                self.used += need if run.alive else 0
                continue
            preemptions += 1
            while self.num_blocks - self.used < need:
                victim = host.newest()
                if victim is run and host.runs() == 1:
                    raise UsageError(f"memory too small for one request under '{self.name}'")
                host.evict(victim)
                if victim is run:
                    break
            else:
                self.used += need
        return preemptions

    def row(self, now: int, head: Request | None) -> Row:
        # After a step only the full prompt blocks are still shared: stored once, read n times.
        tokens = self.live * now + self.lc - self.saved * self.b
        allocated = self.used * self.b
        return (tokens, 0, allocated - tokens, 0, self.capacity - allocated, self.used,
                self.used + self.saved)

    def advance(self, now: int, limit: int, head: Request | None,
                samples: list[StepSample] | None) -> tuple[int, Row]:
        b, hist, live, used, blocks = self.b, self._hist, self.live, self.used, self.num_blocks
        m = used_sum = 0
        if self._fresh:  # the first step also copies the shared partial prompt blocks
            used += hist[(now + 1) % b] + sum(run.cow for run in self._fresh)
            if used > blocks:
                return 0, (0, 0, 0, 0, 0, 0, 0)  # it runs out of blocks: grow() preempts
            self._fresh, used_sum, m = [], used, 1
            if samples is not None:
                self.used = used
                samples.append(StepSample(*self.row(now + 1, head)[:5], live))
        if samples is None and limit - m >= b and blocks - used >= live:
            # Whole cycles of b steps: each sample takes one block per cycle, the samples of
            # phase p first at offset (p - r) % b + 1 within it, r = (base + 1) % b; summed
            # over the samples: moment - r * live + b * (samples of phases below r) + live.
            base, q = now + m, min((blocks - used) // live, (limit - m) // b)
            r = (base + 1) % b
            offsets = self._moment - r * live + b * sum(hist[:r]) + live
            used_sum += (q * b * used + q * live * (q * b + 1) - q * offsets
                         - live * b * q * (q - 1) // 2)
            used, m = used + q * live, m + q * b
        while m < limit:  # then step by step: fewer than b steps or blocks for one cycle
            step = now + m + 1
            if used + hist[step % b] > blocks:
                break  # this step runs out of blocks: the loop serves it on its own
            used += hist[step % b]
            used_sum += used
            m += 1
            if samples is not None:
                self.used = used
                samples.append(StepSample(*self.row(step, head)[:5], self.live))
        self.used = used
        tokens = self._tokens(now, m) - m * self.saved * b
        allocated = b * used_sum
        return m, (tokens, 0, allocated - tokens, 0, m * self.capacity - allocated,
                   used_sum, used_sum + m * self.saved)


_CLASSES: dict[PolicyName, type[Policy]] = {
    cls.name: cls for cls in (MaxPolicy, Pow2Policy, OraclePolicy, PagedPolicy)}


def make_policy(name: PolicyName | str, capacity_tokens: int, *, max_len: int = 2048,
                block_size: int = 16, share_prefix: bool = True) -> Policy:
    """A fresh policy (empty memory) by name."""
    try:
        key = PolicyName(name)
    except ValueError:
        raise UsageError(f"unknown policy '{name}'; use one of: {', '.join(POLICIES)}",
                         param="policy") from None
    if key is PolicyName.PAGED:
        check_block_size(block_size, max_len)
    elif block_size < 1:
        raise UsageError(f"{arg('block_size')} must be >= 1, got {block_size}", param="block_size")
    return _CLASSES[key](capacity_tokens, max_len, block_size, share_prefix)
