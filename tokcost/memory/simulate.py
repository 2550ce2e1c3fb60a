"""Serving a stream of requests from a fixed KV memory (PagedAttention, Kwon et al., SOSP 2023,
§3 and Figure 2): FCFS admission, one token per running sequence per step, memory shares
averaged over the saturated steps (docs/kvmem.md). Event-driven: between two events (an
admission, a completion, an arrival, a step that runs out of blocks) every sequence just grows,
so those steps are summed in closed form; only a step that runs out of blocks (paged) is
served on its own. Pure Python: about 1.5 events per request (3 for paged). The reports come
from the hot loops of fastloop.py (the same rules on plain lists and integers); ``_Loop`` below
drives the policy objects when every step's sample is asked for. A million requests take
about 45 s of CPU under the four policies (benchmarks/bench_simulate.py)."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tokcost.errors import UsageError, arg
from tokcost.memory.fastloop import PROGRESS_EVERY, Stream, Sums, serve_contiguous, serve_paged
from tokcost.memory.policies import (
    POLICIES,
    ContiguousPolicy,
    PagedPolicy,
    Policy,
    PolicyName,
    Row,
    Run,
    StepSample,
    make_policy,
)
from tokcost.memory.workload import Request

__all__ = ["PolicyReport", "compare_policies", "simulate"]

Progress = Callable[[int], None]  # requests completed so far


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
    infeasible: str | None = None  # why the policy cannot serve the stream (figures then 0)

    @property
    def label(self) -> str:
        """``max``, ``pow2``, ``oracle`` or ``paged/16`` (the block size)."""
        return self.policy if self.block_size is None else f"{self.policy}/{self.block_size}"

    def to_dict(self) -> dict[str, Any]:
        keep = ("policy", "block_size", "capacity_tokens", "infeasible")
        return {k: None if self.infeasible and k not in keep else
                round(v, 3 if k == "mean_batch" else 6) if isinstance(v, float) else v
                for k, v in asdict(self).items()}


@dataclass
class _Tally:
    # The split summed over the steps in which requests waited for memory, and over the rest.
    waited: list[int] = field(default_factory=lambda: [0] * 7)
    other: list[int] = field(default_factory=lambda: [0] * 7)
    saturated: int = 0
    steps: int = 0
    completed: int = 0
    preemptions: int = 0
    peak: int = 0
    batch_sum: int = 0

    def add(self, row: Row, steps: int, live: int, saturated: bool) -> None:
        """``steps`` steps with ``live`` sequences, their split summed in ``row``."""
        self.steps += steps
        self.batch_sum += live * steps
        if live > self.peak:
            self.peak = live
        if saturated:
            self.saturated += steps
        sums = self.waited if saturated else self.other
        # Element by element, unrolled: a third of the time map(add, ...) takes (hot path).
        tokens, reserved, internal, external, free, physical, logical = row
        sums[0] += tokens
        sums[1] += reserved
        sums[2] += internal
        sums[3] += external
        sums[4] += free
        sums[5] += physical
        sums[6] += logical

    def report(self, pol: Policy, shared: bool) -> PolicyReport:
        busy = [a + b for a, b in zip(self.waited, self.other, strict=True)]
        # How memory is used while requests wait for it; else over every busy step.
        sums, steps = ((self.waited, self.saturated) if self.saturated
                       else (busy, max(1, self.steps)))
        tokens, reserved, internal, external, free = (s / (steps * pol.capacity)
                                                      for s in sums[:5])
        physical, logical = busy[5:]
        saved = None if not (pol.paged and shared) else (
            1 - physical / logical if logical else 0.0)
        return PolicyReport(
            pol.name.value, pol.block_size if pol.paged else None, pol.capacity, tokens,
            reserved, internal, external, free, peak_batch=self.peak,
            mean_batch=self.batch_sum / max(1, self.steps),
            steps=self.steps, saturated_steps=self.saturated, completed=self.completed,
            preemptions=self.preemptions, prefix_sharing_saved=saved)


class _Loop:
    """One policy serving the stream, event by event: admissions, then the steps up to the
    next completion or arrival summed at once (``Policy.advance``), unless one runs out of
    blocks: that step is served on its own (``Policy.grow``, preempting)."""

    def __init__(self, pol: Policy, reqs: Sequence[Request], samples: list[StepSample] | None,
                 progress: Progress | None) -> None:
        self.pol, self.reqs, self.samples, self.progress = pol, reqs, samples, progress
        # FCFS in arrival order; a request joins the waiting line at its arrival step.
        self.queue: deque[int] = deque(sorted(range(len(reqs)), key=lambda i: reqs[i].arrival))
        self.running: dict[int, Run] = {}  # by admission order, oldest first
        self.finish: list[tuple[int, int, Run]] = []  # (last step, order, run), a heap
        self.tally, self.now = _Tally(), 0

    def runs(self) -> int:
        return len(self.running)

    def newest(self) -> Run:
        return next(reversed(self.running.values()))

    def evict(self, run: Run) -> None:
        """Preempt ``run`` (recomputed later): back to the head of the line."""
        del self.running[run.order]
        run.alive = False
        self.pol.release(run, self.now, grown=False)
        self.queue.appendleft(run.index)

    def run(self) -> _Tally:  # the hot loop: one iteration per event, hence its length
        # Invariants at the top of an iteration: every request that finished by step ``now``
        # is released; ``running`` holds the admitted ones oldest first; the queue's head, if
        # any, has not been admitted (it arrived after ``now``, or did not fit).
        pol, reqs, queue, running, finish = self.pol, self.reqs, self.queue, self.running, \
            self.finish
        tally, samples, admitted, push = self.tally, self.samples, 0, heapq.heappush
        arrival = [r.arrival for r in reqs]
        while queue or running:
            now = self.now
            if not running and arrival[queue[0]] > now:
                now = arrival[queue[0]]  # idle until the next request arrives
            # 1. Admit from the head of the queue while it fits (FCFS, no overtaking).
            while queue and arrival[first := queue[0]] <= now:
                run = pol.admit(reqs[first], first, admitted, now + 1)
                if run is None:
                    break
                queue.popleft()
                running[admitted] = run
                admitted += 1
                push(finish, (run.start + run.final - run.prompt - 1, admitted, run))
            if not running:
                raise UsageError("a request cannot be admitted into empty memory")  # checked
            # 2. Every running sequence produces one token a step. Up to the next event (a
            # completion; an arrival, after which the step may admit) nothing is admitted or
            # released, so the policy sums those steps at once: all of them, or those before
            # the first that runs out of blocks. A request that arrived by ``now`` and is still
            # queued waits for memory in all of them (3. Measure).
            while finish and not finish[0][2].alive:
                heapq.heappop(finish)
            limit = finish[0][0] - now
            head = None
            if queue:
                if arrival[queue[0]] > now:
                    limit = min(limit, arrival[queue[0]] - now)
                else:
                    head = reqs[queue[0]]
            m, row = pol.advance(now, limit, head, samples)
            if m:
                tally.add(row, m, pol.live, head is not None)
                self.now = now = now + m
            if m < limit:
                # The next step runs out of blocks: grown on its own, preempting. No admission
                # in between: nothing was released, so the head still does not fit.
                self.now = now = now + 1
                tally.preemptions += pol.grow(now, self)
                # A preempted request goes back to the head of the line: it waits now.
                head = reqs[queue[0]] if queue and arrival[queue[0]] < now else None
                row = pol.row(now, head)
                tally.add(row, 1, pol.live, head is not None)
                if samples is not None:
                    samples.append(StepSample(*row[:5], pol.live))
            # 4. Finished requests free their memory (or preempted ones leave the heap).
            if finish and (finish[0][0] == now or not finish[0][2].alive):
                self._finish()
        if self.progress:
            self.progress(tally.completed)
        return tally

    def _finish(self) -> None:
        finish, done, now = self.finish, self.tally.completed, self.now
        while finish and (not finish[0][2].alive or finish[0][0] == now):
            run = heapq.heappop(finish)[2]
            if run.alive:
                self.pol.release(run, now, grown=True)
                del self.running[run.order]
                run.alive = False
                self.tally.completed += 1
        if self.progress and self.tally.completed // PROGRESS_EVERY > done // PROGRESS_EVERY:
            self.progress(self.tally.completed)


def _serve(pol: Policy, stream: Stream, progress: Progress | None) -> _Tally:
    """The report's sums, from the fast loop of ``pol``'s family (fastloop.py)."""
    if isinstance(pol, PagedPolicy):
        sums: Sums = serve_paged(pol, stream, progress)
    elif isinstance(pol, ContiguousPolicy):
        sums = serve_contiguous(pol, stream, progress)
    else:  # a policy without a fast loop: served event by event
        return _Loop(pol, stream.requests, None, progress).run()
    return _Tally(**asdict(sums))


def _bound(reqs: Sequence[Request]) -> Request:
    """A request needing at least as much as any of ``reqs`` under every policy: the longest
    total and the most samples, its prompt one token (nothing shared)."""
    total = max(r.prompt_tokens + r.output_tokens for r in reqs)
    return Request(1, total - 1, max(r.n for r in reqs))


def _infeasible(pol: Policy, reqs: Sequence[Request], bound: Request) -> str | None:
    """Why ``pol`` cannot serve ``reqs`` (a request larger than the whole memory), or None;
    the scan for the first culprit only when ``bound`` (see _bound) does not fit."""
    if pol.admit_need(bound) <= pol.capacity:
        return None
    for i, r in enumerate(reqs):
        if (need := pol.admit_need(r)) > pol.capacity:
            return (f"request {i} ({r.prompt_tokens:,}+{r.output_tokens:,} tokens x {r.n}) "
                    f"needs {need:,} KV slots under '{pol.name}' but memory holds "
                    f"{pol.capacity:,}")
    return None


def _refusal(reason: str) -> UsageError:
    return UsageError(f"{reason}; give more memory ({arg('kv_memory')}), cap what 'max' "
                      f"reserves with {arg('max_len')}, or shorter requests",
                      param="max_len", related=("kv_memory",))


def simulate(requests: Iterable[Request], *, capacity_tokens: int, policy: PolicyName | str,
             max_len: int = 2048, block_size: int = 16, share_prefix: bool = True,
             samples: list[StepSample] | None = None,
             progress: Progress | None = None) -> PolicyReport:
    """Serve ``requests`` under ``policy``; ``samples`` collects each step's memory split,
    ``progress`` hears how many requests completed every few thousand."""
    pol = make_policy(policy, capacity_tokens, max_len=max_len, block_size=block_size,
                      share_prefix=share_prefix)
    reqs = requests if isinstance(requests, Sequence) else list(requests)
    if (reason := _infeasible(pol, reqs, _bound(reqs))) is not None:
        raise _refusal(reason)
    tally = (_Loop(pol, reqs, samples, progress).run() if samples is not None
             else _serve(pol, Stream(reqs), progress))
    return tally.report(pol, any(r.n > 1 for r in reqs))


def compare_policies(requests: Sequence[Request], *, capacity_tokens: int,
                     policies: Sequence[PolicyName | str] = POLICIES, max_len: int = 2048,
                     block_size: int = 16,
                     progress: Callable[[int, int], None] | None = None) -> list[PolicyReport]:
    """One report per policy; a policy that cannot hold some request alone is reported
    infeasible while the others run (an error only if none can). ``progress`` hears
    (requests served, requests x policies)."""
    total, reports, bound = len(requests) * len(policies), [], _bound(requests)
    stream, shared = Stream(requests), any(r.n > 1 for r in requests)
    if progress is not None:
        progress(0, total)
    for k, name in enumerate(policies):
        pol = make_policy(name, capacity_tokens, max_len=max_len, block_size=block_size)
        done = k * len(requests)
        if (reason := _infeasible(pol, requests, bound)) is not None:
            reports.append(PolicyReport(
                pol.name.value, pol.block_size if pol.paged else None, pol.capacity, 0.0, 0.0,
                0.0, 0.0, 0.0, 0, 0.0, 0, 0, 0, 0, None, infeasible=reason))
            continue
        tell = None if progress is None else (lambda n, d=done: progress(d + n, total))
        reports.append(_serve(pol, stream, tell).report(pol, shared))
    if all(r.infeasible for r in reports):
        raise _refusal(next(r.infeasible for r in reports if r.infeasible))
    return reports
