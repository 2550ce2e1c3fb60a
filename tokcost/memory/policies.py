"""KV allocation policies in ``capacity`` token slots: ``max`` (Orca (Max), FasterTransformer),
``pow2`` (Orca (Pow2)) and ``oracle`` reserve one contiguous run per sequence up front, ``paged``
(vLLM) takes blocks on demand; memory split as PagedAttention's §3, Fig. 2 (docs/kvmem.md)."""

from __future__ import annotations

import bisect
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar, Protocol

from tokcost.errors import UsageError, arg
from tokcost.memory.blocks import check_block_size
from tokcost.memory.workload import Request

__all__ = ["POLICIES", "ContiguousPolicy", "MaxPolicy", "OraclePolicy", "PagedPolicy", "Policy",
           "PolicyName", "Pow2Policy", "Row", "Run", "StepSample", "make_policy", "next_pow2", "policy_names"]


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


@dataclass(eq=False, slots=True)
class Run:
    """A request admitted at the start of step ``start``: its ``n`` samples run in lockstep
    and each holds ``prompt + s - start + 1`` tokens after step ``s``."""

    index: int  # position in the request stream
    prompt: int
    final: int  # tokens each sample holds when done
    n: int
    order: int  # admission order; the newest is preempted first
    start: int
    alive: bool = True
    starts: list[int] = field(default_factory=list)  # contiguous: each sample's first slot
    size: int = 0  # contiguous: slots reserved per sample
    phase: int = 0  # paged: a sample takes a block at the steps s with s % block == phase
    full: int = 0  # paged, shared: full prompt blocks every sample reads (stored once)
    cow: int = 0  # paged, shared: blocks the first step copies (the partial prompt block)

    @property
    def c(self) -> int:
        """Tokens per sample after step s: ``s + c``."""
        return self.prompt - self.start + 1


class Host(Protocol):
    """What a policy may ask of the serving loop while it grows the running requests."""

    def newest(self) -> Run: ...
    def evict(self, run: Run) -> None: ...
    @property
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
    def admit(self, run: Run) -> bool:
        """Place ``run`` at the start of its step; False (nothing placed) if it does not fit."""

    def _join(self, run: Run, sign: int) -> None:
        self.live += sign * run.n
        self.lc += sign * run.n * run.c

    @abstractmethod
    def release(self, run: Run, now: int, *, grown: bool) -> None:
        """Free ``run``'s memory in step ``now``, after its growth or (preempted) before it."""

    def grow(self, now: int, host: Host) -> int:
        """Give the token each sample produces in step ``now`` a slot; preemptions."""
        return 0

    @abstractmethod
    def sample(self, now: int, head: Request | None) -> StepSample:
        """The memory split after step ``now``; ``head`` is the request waiting, if any."""

    def blocks(self) -> tuple[int, int]:
        """(physical, logical) blocks held now: with and without prefix sharing."""
        return 0, 0

    @abstractmethod
    def advance(self, now: int, limit: int, head: Request | None,
                samples: list[StepSample] | None) -> tuple[int, Row]:
        """Serve up to ``limit`` steps after ``now`` in which nothing is admitted or finishes:
        how many passed before one would run out of memory, and their summed split."""

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

    @abstractmethod
    def reservation(self, r: Request | Run) -> int: ...

    def admit_need(self, r: Request) -> int:
        return self.reservation(r) * r.n

    def _first_fit(self, size: int) -> int | None:
        pos = 0
        for start, end in self._intervals:
            if start - pos >= size:
                return pos
            pos = max(pos, end)
        return pos if self.capacity - pos >= size else None

    def admit(self, run: Run) -> bool:
        size = run.size = self.reservation(run)
        for _ in range(run.n):
            start = self._first_fit(size)
            if start is None:
                for s in run.starts:
                    self._intervals.remove((s, s + size))
                run.starts.clear()
                return False
            bisect.insort(self._intervals, (start, start + size))
            run.starts.append(start)
        self._sizes += run.n * size
        self._finals += run.n * run.final
        self._join(run, 1)
        return True

    def release(self, run: Run, now: int, *, grown: bool) -> None:
        for s in run.starts:
            self._intervals.remove((s, s + run.size))
        self._sizes -= run.n * run.size
        self._finals -= run.n * run.final
        self._join(run, -1)

    def _split(self, head: Request | None) -> tuple[int, int, int]:
        """(internal, external, free): constant while nobody is admitted or finishes."""
        free = self.capacity - self._sizes
        if head is not None:
            need = self.reservation(head)
            # Enough free slots in total, but no gap large enough: external fragmentation.
            if free >= need * head.n and self._largest_gap() < need:
                return self._sizes - self._finals, free, 0
        return self._sizes - self._finals, 0, free

    def _largest_gap(self) -> int:
        pos = gap = 0
        for start, end in self._intervals:
            gap, pos = max(gap, start - pos), max(pos, end)
        return max(gap, self.capacity - pos)

    def sample(self, now: int, head: Request | None) -> StepSample:
        tokens = self._tokens(now - 1, 1)
        return StepSample(tokens, self._finals - tokens, *self._split(head), self.live)

    def advance(self, now: int, limit: int, head: Request | None,
                samples: list[StepSample] | None) -> tuple[int, Row]:
        internal, external, free = self._split(head)
        if samples is not None:
            samples.extend(StepSample(t, self._finals - t, internal, external, free, self.live)
                           for t in (self._tokens(s - 1, 1) for s in range(now + 1, now + limit + 1)))
        tokens = self._tokens(now, limit)
        return limit, (tokens, limit * self._finals - tokens, limit * internal,
                       limit * external, limit * free, 0, 0)


class MaxPolicy(ContiguousPolicy):
    name = PolicyName.MAX

    def reservation(self, r: Request | Run) -> int:
        return self.max_len


class Pow2Policy(ContiguousPolicy):
    name = PolicyName.POW2

    def reservation(self, r: Request | Run) -> int:
        total = r.total if isinstance(r, Request) else r.final
        return min(next_pow2(total), max(self.max_len, total))


class OraclePolicy(ContiguousPolicy):
    name = PolicyName.ORACLE

    def reservation(self, r: Request | Run) -> int:
        return r.total if isinstance(r, Request) else r.final


@dataclass(eq=False)
class PagedPolicy(Policy):
    """Blocks on demand; samples share the prompt's full blocks, copy the partial one on
    their first write (vLLM's block manager, counted: no block ids are needed for the
    split). A sample takes a block at each step where its length reaches k * block + 1."""

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
        self._phases: list[dict[int, Run]] = [{} for _ in range(self.b)]  # in admission order
        self._fresh: list[Run] = []  # admitted at the start of this step

    def admit_need(self, r: Request) -> int:
        per_seq = -(-r.total // self.b)
        full = r.prompt_tokens // self.b
        if self.share_prefix and r.n > 1:
            return (full + (per_seq - full) * r.n) * self.b
        return per_seq * r.n * self.b

    def admit(self, run: Run) -> bool:
        # The prompt's blocks plus one block per sample of headroom for the first tokens.
        prompt_blocks = -(-run.prompt // self.b)
        shared = self.share_prefix and run.n > 1
        held = prompt_blocks if shared else prompt_blocks * run.n
        if held + run.n > self.num_blocks - self.used:
            return False
        self.used += held
        if shared:
            run.full = run.prompt // self.b
            # The first token of each sample but the last goes into a copy of the shared
            # partial block (copy-on-write; the last sharer keeps the original).
            run.cow = run.n - 1 if run.prompt % self.b else 0
        run.phase = (1 - run.c) % self.b
        self._hist[run.phase] += run.n
        self._phases[run.phase][run.order] = run
        self.saved += (run.n - 1) * run.full
        self._join(run, 1)
        self._fresh.append(run)
        return True

    def _held(self, run: Run, length: int) -> int:
        return run.n * -(-length // self.b) - (run.n - 1) * run.full

    def release(self, run: Run, now: int, *, grown: bool) -> None:
        length = run.prompt + now - run.start + grown
        # Preempted before its first step: its prompt blocks, the partial one not yet copied.
        self.used -= self._held(run, length) - (run.cow if length == run.prompt else 0)
        self._hist[run.phase] -= run.n
        del self._phases[run.phase][run.order]
        self.saved -= (run.n - 1) * run.full
        self._join(run, -1)

    def grow(self, now: int, host: Host) -> int:
        fresh, self._fresh = self._fresh, []
        phase = now % self.b
        demand = self._hist[phase] + sum(run.cow for run in fresh)
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
                if victim is run and host.runs == 1:
                    raise UsageError(f"memory too small for one request under '{self.name}'")
                host.evict(victim)
                if victim is run:
                    break
            else:
                self.used += need
        return preemptions

    def sample(self, now: int, head: Request | None) -> StepSample:
        # After a step only the full prompt blocks are still shared: stored once, read n times.
        tokens = self._tokens(now - 1, 1) - self.saved * self.b
        allocated = self.used * self.b
        return StepSample(tokens, 0, allocated - tokens, 0, self.capacity - allocated, self.live)

    def blocks(self) -> tuple[int, int]:
        return self.used, self.used + self.saved

    def advance(self, now: int, limit: int, head: Request | None,
                samples: list[StepSample] | None) -> tuple[int, Row]:
        b, hist, live, used = self.b, self._hist, self.live, self.used
        m = used_sum = 0
        free = self.num_blocks - used
        if samples is None and live and limit >= b and free >= live:
            # Whole cycles of b steps: each sample takes one block per cycle, the samples of
            # phase p first at offset (p - now - 1) % b + 1 within it.
            q = min(free // live, limit // b)
            offsets = sum(h * ((p - now - 1) % b + 1) for p, h in enumerate(hist) if h)
            used_sum = (q * b * used + q * live * (q * b + 1) - q * offsets
                        - live * b * q * (q - 1) // 2)
            used, m = used + q * live, q * b
        while m < limit:  # then step by step, fewer than b steps or blocks for one cycle
            step = now + m + 1
            if used + hist[step % b] > self.num_blocks:
                break  # this step runs out of blocks: the loop serves it one by one
            used += hist[step % b]
            used_sum += used
            m += 1
            if samples is not None:
                self.used = used
                samples.append(self.sample(step, head))
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
