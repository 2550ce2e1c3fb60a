"""KV allocation policies in ``capacity`` token slots: ``max`` (Orca (Max), FasterTransformer),
``pow2`` (Orca (Pow2)) and ``oracle`` reserve one contiguous run per sequence up front, ``paged``
(vLLM) takes blocks on demand; memory split as PagedAttention's §3, Fig. 2 (docs/kvmem.md)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import ClassVar

from tokcost.errors import UsageError, arg
from tokcost.memory.blocks import BlockAllocator, check_block_size
from tokcost.memory.workload import Request

__all__ = ["POLICIES", "ContiguousPolicy", "MaxPolicy", "OraclePolicy", "PagedPolicy", "Policy",
           "PolicyName", "Pow2Policy", "StepSample", "make_policy", "next_pow2", "policy_names"]


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


@dataclass(eq=False)
class Seq:
    """One sequence (one sample of a request) while it runs."""

    length: int  # tokens held now
    final: int  # tokens it will hold when done
    start: int = -1  # contiguous: first slot of its reservation
    size: int = 0  # contiguous: reserved slots
    table: list[int] = field(default_factory=list)  # paged: block ids, in token order


@dataclass(eq=False)
class Running:
    """A request admitted into memory: its samples run in lockstep."""

    index: int  # position in the request stream
    seqs: list[Seq]
    order: int  # admission order; the newest is preempted first
    shared_full: int = 0  # paged: full prompt blocks every sample reads (stored once)


@dataclass(eq=False)
class Policy(ABC):
    """How one allocation policy places requests in ``capacity`` token slots."""

    capacity: int
    max_len: int = 2048
    block_size: int = 16  # paged only
    share_prefix: bool = True  # paged only: samples of a request share the prompt's blocks
    name: ClassVar[PolicyName]
    paged: ClassVar[bool] = False  # its report names the block size and the sharing saved

    @abstractmethod
    def admit_need(self, r: Request) -> int:
        """Slots needed to admit ``r`` into empty memory (and to finish it, if contiguous)."""

    @abstractmethod
    def try_admit(self, r: Request, index: int, order: int) -> Running | None: ...

    def grow(self, run: Running) -> bool:
        """Give the token each sample just produced a slot; False if memory ran out."""
        return True

    @abstractmethod
    def release(self, run: Running) -> None: ...

    @abstractmethod
    def measure(self, running: Sequence[Running], head: Request | None) -> StepSample:
        """The memory split now; ``head`` is the request waiting for memory, if any."""

    def block_counts(self, running: Sequence[Running]) -> tuple[int, int]:
        """(physical, logical) blocks held now: with and without prefix sharing."""
        return 0, 0


@dataclass(eq=False)
class ContiguousPolicy(Policy):
    """One run of slots per sequence, reserved at admission, placed first-fit."""

    _intervals: list[tuple[int, int]] = field(default_factory=list)  # (start, end), sorted

    @abstractmethod
    def reservation(self, r: Request) -> int: ...

    def admit_need(self, r: Request) -> int:
        return self.reservation(r) * r.n

    def try_admit(self, r: Request, index: int, order: int) -> Running | None:
        size = self.reservation(r)
        seqs = [Seq(r.prompt_tokens, r.total) for _ in range(r.n)]
        placed: list[tuple[int, int]] = []
        for s in seqs:
            start = next((pos for pos, gap in self._gaps() if gap >= size), None)  # first fit
            if start is None:
                for iv in placed:
                    self._intervals.remove(iv)
                return None
            iv = (start, start + size)
            self._intervals.append(iv)
            self._intervals.sort()
            placed.append(iv)
            s.start, s.size = start, size
        return Running(index, seqs, order)

    def _gaps(self) -> Iterator[tuple[int, int]]:
        """(start, size) of each free run, in slot order."""
        pos = 0
        for start, end in self._intervals:
            yield pos, start - pos
            pos = max(pos, end)
        yield pos, self.capacity - pos

    def release(self, run: Running) -> None:
        for s in run.seqs:
            self._intervals.remove((s.start, s.start + s.size))

    def measure(self, running: Sequence[Running], head: Request | None) -> StepSample:
        tokens = reserved = internal = 0
        for run in running:
            for s in run.seqs:
                tokens += s.length
                reserved += s.final - s.length
                internal += s.size - s.final
        free = self.capacity - tokens - reserved - internal
        external = 0
        if head is not None:
            need = self.reservation(head)
            # Enough free slots in total, but no gap large enough: external fragmentation.
            if free >= need * head.n and max(gap for _, gap in self._gaps()) < need:
                external, free = free, 0
        live = sum(len(r.seqs) for r in running)
        return StepSample(tokens, reserved, internal, external, free, live)


class MaxPolicy(ContiguousPolicy):
    name = PolicyName.MAX

    def reservation(self, r: Request) -> int:
        return self.max_len


class Pow2Policy(ContiguousPolicy):
    name = PolicyName.POW2

    def reservation(self, r: Request) -> int:
        return min(next_pow2(r.total), max(self.max_len, r.total))


class OraclePolicy(ContiguousPolicy):
    name = PolicyName.ORACLE

    def reservation(self, r: Request) -> int:
        return r.total


@dataclass(eq=False)
class PagedPolicy(Policy):
    """Blocks on demand from one BlockAllocator; samples share the prompt's blocks."""

    name = PolicyName.PAGED
    paged = True

    def __post_init__(self) -> None:
        self.b = self.block_size
        self.allocator = BlockAllocator(self.capacity // self.b)
        self.capacity = self.allocator.num_blocks * self.b  # whole blocks only

    def admit_need(self, r: Request) -> int:
        per_seq = -(-r.total // self.b)
        full = r.prompt_tokens // self.b
        if self.share_prefix and r.n > 1:
            return (full + (per_seq - full) * r.n) * self.b
        return per_seq * r.n * self.b

    def try_admit(self, r: Request, index: int, order: int) -> Running | None:
        alloc = self.allocator
        # The prompt's blocks plus one block per sample of headroom for the first tokens.
        prompt_blocks = -(-r.prompt_tokens // self.b)
        shared = self.share_prefix and r.n > 1
        need = (prompt_blocks if shared else prompt_blocks * r.n) + r.n
        if need > alloc.num_free:
            return None
        seqs = [Seq(r.prompt_tokens, r.total) for _ in range(r.n)]
        if not shared:
            for s in seqs:
                s.table = [alloc.allocate() for _ in range(prompt_blocks)]
            return Running(index, seqs, order)
        table = [alloc.allocate() for _ in range(prompt_blocks)]
        for block in table:
            alloc.incref(block, r.n - 1)  # one reference per sample
        for s in seqs:
            s.table = list(table)
        return Running(index, seqs, order, shared_full=r.prompt_tokens // self.b)

    def grow(self, run: Running) -> bool:
        alloc, b = self.allocator, self.b
        for s in run.seqs:
            last = (s.length - 1) // b  # the block the new token goes into
            if last < len(s.table) and alloc.refcount(s.table[last]) > 1:
                # First write into the shared prompt block: the last sharer keeps the original.
                if alloc.num_free < 1:
                    return False
                s.table[last] = alloc.copy_on_write(s.table[last])
            while len(s.table) * b < s.length:
                if alloc.num_free < 1:
                    return False
                s.table.append(alloc.allocate())
        return True

    def release(self, run: Running) -> None:
        for s in run.seqs:
            for block in s.table:
                self.allocator.decref(block)

    def measure(self, running: Sequence[Running], head: Request | None) -> StepSample:
        # After a step only the full prompt blocks are still shared: stored once, read n times.
        tokens = sum(sum(s.length for s in run.seqs)
                     - (len(run.seqs) - 1) * run.shared_full * self.b for run in running)
        allocated = self.allocator.num_used * self.b
        free = self.capacity - allocated
        return StepSample(tokens, 0, allocated - tokens, 0, free, sum(len(r.seqs) for r in running))

    def block_counts(self, running: Sequence[Running]) -> tuple[int, int]:
        return self.allocator.num_used, sum(len(s.table) for run in running for s in run.seqs)


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
