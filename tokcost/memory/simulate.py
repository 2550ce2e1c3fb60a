"""Serving a stream of requests from a fixed KV memory, step by step (PagedAttention, Kwon et
al., SOSP 2023, §3 and Figure 2): FCFS admission, one token per running sequence per step,
memory shares averaged over the saturated steps (docs/kvmem.md). Pure Python."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tokcost.errors import UsageError, arg
from tokcost.memory.policies import POLICIES, Policy, PolicyName, Running, StepSample, make_policy
from tokcost.memory.workload import Request

__all__ = ["PolicyReport", "compare_policies", "simulate"]


@dataclass(frozen=True)
class PolicyReport:
    """Averages over the busy steps, as fractions of the KV memory (sum to 1)."""

    policy: str
    block_size: int | None
    capacity_tokens: int
    token_states: float
    reserved: float
    internal_fragmentation: float
    external_fragmentation: float
    free: float
    peak_batch: int  # most sequences running at once
    mean_batch: float
    steps: int
    saturated_steps: int  # steps in which requests waited for memory (the averaged ones)
    completed: int
    preemptions: int
    prefix_sharing_saved: float | None  # paged with n > 1: share of blocks saved

    @property
    def label(self) -> str:
        """``max``, ``pow2``, ``oracle`` or ``paged/16`` (the block size)."""
        return self.policy if self.block_size is None else f"{self.policy}/{self.block_size}"

    def to_dict(self) -> dict[str, Any]:
        return {k: round(v, 3 if k == "mean_batch" else 6) if isinstance(v, float) else v
                for k, v in asdict(self).items()}


@dataclass
class _Tally:
    saturated_sums: list[int] = field(default_factory=lambda: [0] * 5)  # requests waited
    busy_sums: list[int] = field(default_factory=lambda: [0] * 5)  # every busy step
    saturated: int = 0
    admitted: int = 0  # admission order: the newest running request is preempted first
    steps: int = 0
    completed: int = 0
    preemptions: int = 0
    peak: int = 0
    batch_sum: int = 0
    physical: int = 0
    logical: int = 0

    def measure(self, pol: Policy, running: list[Running], head: Request | None) -> StepSample:
        live = sum(len(r.seqs) for r in running)
        self.steps += 1
        self.peak, self.batch_sum = max(self.peak, live), self.batch_sum + live
        sample = pol.measure(running, head)
        row = (sample.token_states, sample.reserved, sample.internal, sample.external, sample.free)
        for k, v in enumerate(row):
            self.busy_sums[k] += v
            self.saturated_sums[k] += v if head is not None else 0
        self.saturated += head is not None
        physical, logical = pol.block_counts(running)
        self.physical, self.logical = self.physical + physical, self.logical + logical
        return sample

    def report(self, pol: Policy, shared: bool) -> PolicyReport:
        # How memory is used while requests wait for it; else over every busy step.
        sums, steps = ((self.saturated_sums, self.saturated) if self.saturated
                       else (self.busy_sums, max(1, self.steps)))
        tokens, reserved, internal, external, free = (s / (steps * pol.capacity) for s in sums)
        saved = None if not (pol.paged and shared) else (
            1 - self.physical / self.logical if self.logical else 0.0)
        return PolicyReport(
            pol.name.value, pol.block_size if pol.paged else None, pol.capacity, tokens,
            reserved, internal, external, free, peak_batch=self.peak,
            mean_batch=self.batch_sum / max(1, self.steps),
            steps=self.steps, saturated_steps=self.saturated, completed=self.completed,
            preemptions=self.preemptions, prefix_sharing_saved=saved)


def simulate(requests: Iterable[Request], *, capacity_tokens: int, policy: PolicyName | str,
             max_len: int = 2048, block_size: int = 16, share_prefix: bool = True,
             samples: list[StepSample] | None = None) -> PolicyReport:
    """Serve ``requests`` under ``policy``; ``samples`` collects each step's memory split."""
    pol = make_policy(policy, capacity_tokens, max_len=max_len, block_size=block_size,
                      share_prefix=share_prefix)
    reqs = list(requests)
    for i, r in enumerate(reqs):
        if (need := pol.admit_need(r)) > pol.capacity:
            raise UsageError(
                f"request {i} ({r.prompt_tokens:,}+{r.output_tokens:,} tokens x {r.n}) needs "
                f"{need:,} KV slots under '{pol.name}' but memory holds {pol.capacity:,}; give "
                f"more memory ({arg('kv_memory')}), cap what 'max' reserves with "
                f"{arg('max_len')}, or shorter requests", param="max_len", related=("kv_memory",))
    # FCFS in arrival order; a request joins the waiting line at its arrival step.
    queue: deque[int] = deque(sorted(range(len(reqs)), key=lambda i: reqs[i].arrival))
    running: list[Running] = []
    tally, now = _Tally(), 0
    while queue or running:
        if not running and reqs[queue[0]].arrival > now:
            now = reqs[queue[0]].arrival  # idle until the next request arrives
        # 1. Admit from the head of the queue while it fits (FCFS, no overtaking).
        while queue and reqs[queue[0]].arrival <= now:
            run = pol.try_admit(reqs[queue[0]], queue[0], tally.admitted)
            if run is None:
                break
            queue.popleft()
            running.append(run)
            tally.admitted += 1
        if not running:
            raise UsageError("a request cannot be admitted into empty memory")  # guarded above
        now += 1
        # 2. Every running sequence produces one token.
        tally.preemptions += _grow(pol, running, queue)
        # 3. Measure: a request that has arrived but not been admitted waits for memory.
        head = reqs[queue[0]] if queue and reqs[queue[0]].arrival < now else None
        sample = tally.measure(pol, running, head)
        if samples is not None:
            samples.append(sample)
        # 4. Finished requests free their memory.
        for run in [r for r in running if all(s.length >= s.final for s in r.seqs)]:
            pol.release(run)
            running.remove(run)
            tally.completed += 1
    return tally.report(pol, any(r.n > 1 for r in reqs))


def _grow(pol: Policy, running: list[Running], queue: deque[int]) -> int:
    preemptions = 0
    for run in list(running):
        if run not in running:
            continue  # preempted while growing another request
        for seq in run.seqs:
            seq.length += 1
        if pol.grow(run):
            continue
        preemptions += 1
        # Preempt the newest, as vLLM does (maybe this one): the oldest always progresses.
        while not pol.grow(run):
            victim = max(running, key=lambda r: r.order)
            if victim is run and len(running) == 1:
                raise UsageError(f"memory too small for one request under '{pol.name}'")
            pol.release(victim)
            running.remove(victim)
            queue.appendleft(victim.index)
            if victim is run:
                break
    return preemptions


def compare_policies(requests: Sequence[Request], *, capacity_tokens: int,
                     policies: Sequence[PolicyName | str] = POLICIES, max_len: int = 2048,
                     block_size: int = 16) -> list[PolicyReport]:
    return [simulate(requests, capacity_tokens=capacity_tokens, policy=p, max_len=max_len,
                     block_size=block_size) for p in policies]
