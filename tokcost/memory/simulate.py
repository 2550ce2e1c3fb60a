"""Serving a stream of requests from a fixed KV memory: paged vs contiguous allocation.

A discrete-time simulation in the spirit of the PagedAttention paper (Kwon et al.,
SOSP 2023, §3 and Figure 2). Requests (tokcost.memory.workload) wait in a FCFS queue;
each step every running sequence produces one token; a finished request frees its
memory. Where the memory goes is the policy's business (tokcost.memory.policies).

The shares of memory are averaged over the saturated steps, those in which requests
were waiting for memory (over every busy step when memory never saturates), so a
run's idle tail does not count as waste. Pure Python (no numpy), cheap to import.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence

from tokcost.errors import UsageError
from tokcost.memory.policies import POLICIES, PolicyName, Running, make_policy
from tokcost.memory.report import PolicyReport, StepSample
from tokcost.memory.workload import Request

__all__ = ["compare_policies", "simulate"]


def simulate(
    requests: Iterable[Request],
    *,
    capacity_tokens: int,
    policy: PolicyName | str,
    max_len: int = 2048,
    block_size: int = 16,
    share_prefix: bool = True,
    samples: list[StepSample] | None = None,
) -> PolicyReport:
    """Serve ``requests`` under ``policy``; ``samples`` collects every step's memory split.

    >>> reqs = [Request(10, 6)] * 4
    >>> r = simulate(reqs, capacity_tokens=64, policy="paged", block_size=4)
    >>> r.completed, r.peak_batch, r.reserved
    (4, 4, 0.0)
    """
    pol = make_policy(policy, capacity_tokens, max_len=max_len, block_size=block_size,
                      share_prefix=share_prefix)
    reqs = list(requests)
    cap = pol.capacity
    for i, r in enumerate(reqs):
        need = pol.admit_need(r)
        if need > cap:
            raise UsageError(
                f"request {i} ({r.prompt_tokens:,}+{r.output_tokens:,} tokens x {r.n}) needs "
                f"{need:,} KV slots under '{pol.name}' but memory holds {cap:,}; give more "
                "memory (kv_memory), cap what 'max' reserves with max_len, or shorter requests",
                param="max_len", related=("kv_memory",),
            )
    # FCFS in arrival order; a request joins the waiting line at its arrival step.
    queue: deque[int] = deque(sorted(range(len(reqs)), key=lambda i: reqs[i].arrival))
    now = 0
    running: list[Running] = []
    sums = [0, 0, 0, 0, 0]  # over saturated steps: requests were waiting
    all_sums = [0, 0, 0, 0, 0]  # over every busy step
    saturated = 0
    busy_steps = steps = completed = preemptions = peak = batch_sum = 0
    order = 0
    physical_sum = logical_sum = 0

    while queue or running:
        if not running and queue and reqs[queue[0]].arrival > now:
            now = reqs[queue[0]].arrival  # idle until the next request arrives
        # 1. Admit from the head of the queue while it fits (FCFS, no overtaking).
        while queue and reqs[queue[0]].arrival <= now:
            run = pol.try_admit(reqs[queue[0]], queue[0], order)
            if run is None:
                break
            queue.popleft()
            running.append(run)
            order += 1
        if not running:
            raise UsageError("a request cannot be admitted into empty memory")  # guarded above
        steps += 1
        now += 1
        # 2. Every running sequence produces one token.
        for run in list(running):
            if run not in running:
                continue  # preempted while growing another request
            for seq in run.seqs:
                seq.length += 1
            if not pol.grow(run):
                preemptions += 1
                # As vLLM's scheduler does, preempt the newest running request, which
                # may be the one growing: the oldest then always makes progress, so two
                # requests can never take turns evicting each other forever.
                while not pol.grow(run):
                    victim = max(running, key=lambda r: r.order)
                    if victim is run and len(running) == 1:
                        raise UsageError(f"memory too small for one request under '{pol.name}'")
                    pol.release(victim)
                    running.remove(victim)
                    queue.appendleft(victim.index)
                    if victim is run:
                        break
        # 3. Measure.
        live = sum(len(r.seqs) for r in running)
        peak = max(peak, live)
        batch_sum += live
        busy_steps += 1
        # A request that has arrived but not been admitted waits for memory.
        head = reqs[queue[0]] if queue and reqs[queue[0]].arrival < now else None
        sample = pol.measure(running, head)
        if samples is not None:
            samples.append(sample)
        row = (sample.token_states, sample.reserved, sample.internal, sample.external, sample.free)
        for k, v in enumerate(row):
            all_sums[k] += v
            if head is not None:
                sums[k] += v
        if head is not None:
            saturated += 1
        physical, logical = pol.block_counts(running)
        physical_sum += physical
        logical_sum += logical
        # 4. Finished requests free their memory.
        for run in [r for r in running if all(s.length >= s.final for s in r.seqs)]:
            pol.release(run)
            running.remove(run)
            completed += 1

    # The paper's question is how well memory is used while requests wait for it;
    # a run that never saturates memory falls back to every busy step.
    if saturated:
        shares = [s / (saturated * cap) for s in sums]
    else:
        shares = [s / (max(1, busy_steps) * cap) for s in all_sums]
    saved = None
    if pol.paged and any(r.n > 1 for r in reqs):
        saved = 1 - physical_sum / logical_sum if logical_sum else 0.0
    return PolicyReport(
        policy=pol.name.value,
        block_size=pol.block_size if pol.paged else None,
        capacity_tokens=cap,
        token_states=shares[0],
        reserved=shares[1],
        internal_fragmentation=shares[2],
        external_fragmentation=shares[3],
        free=shares[4],
        peak_batch=peak,
        mean_batch=batch_sum / max(1, busy_steps),
        steps=steps,
        saturated_steps=saturated,
        completed=completed,
        preemptions=preemptions,
        prefix_sharing_saved=saved,
    )


def compare_policies(
    requests: Sequence[Request],
    *,
    capacity_tokens: int,
    policies: Sequence[PolicyName | str] = POLICIES,
    max_len: int = 2048,
    block_size: int = 16,
) -> list[PolicyReport]:
    """One report per policy on the same request stream."""
    return [
        simulate(
            requests,
            capacity_tokens=capacity_tokens,
            policy=p,
            max_len=max_len,
            block_size=block_size,
        )
        for p in policies
    ]
