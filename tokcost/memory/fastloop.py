"""The serving loops of ``simulate`` when only the report is wanted: the rules of the policy
objects in policies.py (FCFS admission, first-fit contiguous runs, paged blocks on demand with
newest-first preemption) replayed on plain lists and local integers, without a Python object
or a method call per request or per event. ``simulate._Loop`` drives the policy objects step
by step when every step's sample is asked for; tests/test_simulate.py checks that both give
the same report, and tests/test_simulate_scale.py holds both to the step-by-step goldens.

Each loop sums, per event, only what the split is linear in (token states, and reserved
slots or physical blocks), and turns the sums into the seven figures of a ``Row`` at the end:
the same integers, so the same report to the last digit."""

from __future__ import annotations

import heapq
from bisect import insort
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tokcost.errors import UsageError
from tokcost.memory.policies import ContiguousPolicy, PagedPolicy
from tokcost.memory.workload import Request

__all__ = ["PROGRESS_EVERY", "Stream", "Sums", "serve_contiguous", "serve_paged"]

PROGRESS_EVERY = 4096  # completions between two progress calls
Progress = Callable[[int], None]  # requests completed so far
_Run = tuple[int, int, int, int, int, int, int, int]  # paged: see serve_paged


class Stream:
    """The requests as columns (one list per field), and their FCFS order: by arrival, ties
    in input order. Built once, served under each policy."""

    def __init__(self, reqs: Sequence[Request]) -> None:
        self.requests = reqs
        self.prompt = [r.prompt_tokens for r in reqs]
        self.total = [r.prompt_tokens + r.output_tokens for r in reqs]
        self.n = [r.n for r in reqs]
        self.arrival = [r.arrival for r in reqs]
        arrival = self.arrival
        self.order = (list(range(len(reqs))) if all(a == 0 for a in arrival)
                      else sorted(range(len(reqs)), key=arrival.__getitem__))


@dataclass
class Sums:
    """What a loop summed: the seven ``Row`` figures over the steps in which requests waited
    for memory (``waited``) and over the rest (``other``), and the counts of ``_Tally``."""

    waited: list[int]
    other: list[int]
    saturated: int
    steps: int
    completed: int
    preemptions: int
    peak: int
    batch_sum: int


def serve_contiguous(pol: ContiguousPolicy, s: Stream, progress: Progress | None) -> Sums:
    # The hot loop of max, pow2 and oracle: one iteration per event, hence its length. Per
    # event it sums token states, finals (tokens the samples will hold), slots reserved and
    # slots lost to external fragmentation; ContiguousPolicy.row/advance derive a Row from
    # the same four (reserved = finals - tokens, internal = slots - finals, free = the rest).
    cap, prompt, total, n, arrival = pol.capacity, s.prompt, s.total, s.n, s.arrival
    memo: dict[int, int] = {}
    size = [memo[t] if t in memo else memo.setdefault(t, pol.reservation(t)) for t in total]
    queue, intervals = deque(s.order), list[tuple[int, int]]()  # (start, end) sorted
    finish: list[tuple[int, int, list[int], int, int, int, int]] = []  # last step first
    push, pop = heapq.heappush, heapq.heappop
    slots = finals = live = lc = now = admitted = completed = 0
    w_tok = w_fin = w_slot = w_ext = o_tok = o_fin = o_slot = o_ext = 0  # waited / other steps
    steps = saturated = batch_sum = peak = 0
    while queue or finish:
        if not finish and arrival[queue[0]] > now:
            now = arrival[queue[0]]  # idle until the next request arrives
        misfit = -1  # the head whose first sample found no gap large enough
        while queue and arrival[i := queue[0]] <= now:  # admit FCFS while it fits
            sz, k = size[i], n[i]
            if sz * k > cap - slots:
                break
            starts: list[int] = []
            for _ in range(k):  # first fit, sample by sample
                pos = 0
                for lo, hi in intervals:
                    if lo - pos >= sz:
                        break
                    pos = hi
                else:
                    if cap - pos < sz:
                        break
                insort(intervals, (pos, pos + sz))
                starts.append(pos)
            if len(starts) < k:
                if not starts:
                    misfit = i
                for lo in starts:
                    intervals.remove((lo, lo + sz))
                break
            queue.popleft()
            c, fin = prompt[i] - now, total[i]  # c: tokens = step + c
            slots += k * sz
            finals += k * fin
            live += k
            lc += k * c
            push(finish, (now + fin - prompt[i], admitted, starts, sz, k, fin, c))
            admitted += 1
        if not finish:
            raise UsageError("a request cannot be admitted into empty memory")  # checked
        # Every step up to the next completion or arrival at once (ContiguousPolicy.advance).
        m = finish[0][0] - now
        ext = 0
        if queue and arrival[head := queue[0]] > now:
            m = min(m, arrival[head] - now)
            head = -1
        elif queue:  # a request waits for memory in all m steps (ContiguousPolicy._split)
            free, need = cap - slots, size[head]
            if free >= need * n[head] and (misfit == head or _largest_gap(intervals, cap) < need):
                ext = free
        else:
            head = -1
        tokens = live * (m * now + m * (m + 1) // 2) + m * lc
        if head >= 0:
            w_tok += tokens
            w_fin += m * finals
            w_slot += m * slots
            w_ext += m * ext
            saturated += m
        else:
            o_tok += tokens
            o_fin += m * finals
            o_slot += m * slots
            o_ext += m * ext
        steps += m
        batch_sum += live * m
        if live > peak:
            peak = live
        now += m
        if finish[0][0] == now:  # finished requests free their slots
            done = completed
            while finish and finish[0][0] == now:
                _, _, starts, sz, k, fin, c = pop(finish)
                for lo in starts:
                    intervals.remove((lo, lo + sz))
                slots -= k * sz
                finals -= k * fin
                live -= k
                lc -= k * c
                completed += 1
            if progress and completed // PROGRESS_EVERY > done // PROGRESS_EVERY:
                progress(completed)
    if progress:
        progress(completed)

    def row(tok: int, fin: int, slot: int, ext: int, count: int) -> list[int]:
        return [tok, fin - tok, slot - fin, ext, count * cap - slot - ext, 0, 0]

    return Sums(row(w_tok, w_fin, w_slot, w_ext, saturated),
                row(o_tok, o_fin, o_slot, o_ext, steps - saturated), saturated, steps,
                completed, 0, peak, batch_sum)


def _largest_gap(intervals: list[tuple[int, int]], cap: int) -> int:
    if not intervals:
        return cap
    gap, pos = 0, 0
    for lo, hi in intervals:
        gap, pos = max(gap, lo - pos), hi
    return max(gap, cap - pos)


def serve_paged(pol: PagedPolicy, s: Stream, progress: Progress | None) -> Sums:
    # The hot loop of paged: one iteration per event, PagedPolicy's admit, advance, grow and
    # release inlined on local integers, hence its length. A run is a tuple (request, prompt,
    # start, n, c, phase, full, cow) keyed by its admission order; it is alive while
    # ``running`` holds it. Per event it sums token states, physical and logical blocks;
    # PagedPolicy.row derives a Row from the three (internal = allocated - tokens, free = the
    # rest).
    b, blocks, cap, prompt, total, n, arrival = (pol.b, pol.num_blocks, pol.capacity, s.prompt,
                                                 s.total, s.n, s.arrival)
    share = pol.share_prefix
    # Blocks admission takes: the prompt's (once if its samples share them), + n of headroom.
    held0 = [-(-p // b) * (1 if share and k > 1 else k) for p, k in zip(prompt, n, strict=True)]
    hist, phases = [0] * b, [dict[int, _Run]() for _ in range(b)]
    queue, running = deque(s.order), dict[int, _Run]()  # by admission order
    fresh: list[tuple[int, _Run]] = []  # (order, run) admitted for the coming step
    fresh_cow = 0  # blocks their first step copies
    finish: list[tuple[int, int]] = []  # (last step, order), a heap; stale once evicted
    push, pop = heapq.heappush, heapq.heappop
    used = saved = live = lc = moment = now = admitted = completed = preemptions = 0
    w_tok = w_phys = o_tok = o_phys = 0  # over the steps requests waited in / the others
    shared = 0  # blocks prefix sharing saved, summed over the steps (logical - physical)
    steps = saturated = batch_sum = peak = 0
    while queue or running:
        if not running and arrival[queue[0]] > now:
            now = arrival[queue[0]]  # idle until the next request arrives
        while queue and arrival[i := queue[0]] <= now:  # admit FCFS while it fits
            k, p = n[i], prompt[i]
            if held0[i] + k > blocks - used:
                break
            queue.popleft()
            used += held0[i]
            full = cow = 0
            if share and k > 1:
                full, cow = p // b, (k - 1 if p % b else 0)
                saved += (k - 1) * full
            c = p - now
            ph = (1 - c) % b
            hist[ph] += k
            moment += ph * k
            live += k
            lc += k * c
            run = (i, p, now + 1, k, c, ph, full, cow)
            phases[ph][admitted] = running[admitted] = run
            fresh.append((admitted, run))
            fresh_cow += cow
            push(finish, (now + total[i] - p, admitted))
            admitted += 1
        if not running:
            raise UsageError("a request cannot be admitted into empty memory")  # checked
        while finish[0][1] not in running:
            pop(finish)
        limit = finish[0][0] - now
        waits = False
        if queue:
            if arrival[queue[0]] > now:
                limit = min(limit, arrival[queue[0]] - now)
            else:
                waits = True
        # PagedPolicy.advance: the steps before the first that runs out of blocks.
        m = used_sum = 0
        stop = limit  # 0 if the first step runs out of blocks
        if fresh:  # the first step also copies the shared partial prompt blocks
            u = used + hist[(now + 1) % b] + fresh_cow
            if u <= blocks:
                fresh, fresh_cow, used, used_sum, m = [], 0, u, u, 1
            else:
                stop = 0
        if stop - m >= b and blocks - used >= live:  # whole cycles (PagedPolicy.advance)
            q = min((blocks - used) // live, (stop - m) // b)
            r = (now + m + 1) % b
            offsets = moment - r * live + b * sum(hist[:r]) + live
            used_sum += (q * b * used + q * live * (q * b + 1) - q * offsets
                         - live * b * q * (q - 1) // 2)
            used, m = used + q * live, m + q * b
        ph = (now + m + 1) % b
        while m < stop and used + (take := hist[ph]) <= blocks:
            used += take
            used_sum += used
            m += 1
            ph = ph + 1 if ph + 1 < b else 0
        if m:
            tokens = live * (m * now + m * (m + 1) // 2) + m * lc - m * saved * b
            shared += m * saved
            if waits:
                w_tok += tokens
                w_phys += used_sum
                saturated += m
            else:
                o_tok += tokens
                o_phys += used_sum
            steps += m
            batch_sum += live * m
            if live > peak:
                peak = live
            now += m
        if m < limit:
            # The next step runs out of blocks: PagedPolicy.grow, oldest first, preempting
            # the newest (maybe the one growing) until each fits.
            now += 1
            ph = now % b
            order = list(phases[ph].items())  # a copy: evictions change phases
            if fresh:  # admitted for this step: after the older ones, + their copies
                order = [(o, run) for o, run in order if run[2] < now] + fresh
                fresh, fresh_cow = [], 0
            for o, run in order:
                if o not in running:
                    continue
                need = run[3] if run[2] < now else run[3] * (run[5] == ph) + run[7]
                if blocks - used >= need:
                    used += need
                    continue
                preemptions += 1
                while blocks - used < need:
                    victim = next(reversed(running))
                    if victim == o and len(running) == 1:
                        raise UsageError(f"memory too small for one request under '{pol.name}'")
                    i, p, start, k, c, vph, full, cow = running.pop(victim)
                    length = p + now - start
                    held = k * -(-length // b) - (k - 1) * full
                    used -= held - cow if length == p else held
                    hist[vph] -= k
                    moment -= vph * k
                    del phases[vph][victim]
                    saved -= (k - 1) * full
                    live -= k
                    lc -= k * c
                    queue.appendleft(i)
                    if victim == o:
                        break
                else:
                    used += need
            waits = bool(queue) and arrival[queue[0]] < now
            tokens = live * now + lc - saved * b
            shared += saved
            if waits:
                w_tok += tokens
                w_phys += used
                saturated += 1
            else:
                o_tok += tokens
                o_phys += used
            steps += 1
            batch_sum += live
            if live > peak:
                peak = live
        if finish and (finish[0][0] == now or finish[0][1] not in running):
            done = completed
            while finish and (finish[0][0] == now or finish[0][1] not in running):
                o = pop(finish)[1]
                if o not in running:
                    continue  # preempted
                i, p, start, k, c, ph, full, cow = running.pop(o)
                length = p + now - start + 1
                held = k * -(-length // b) - (k - 1) * full
                used -= held - cow if length == p else held
                hist[ph] -= k
                moment -= ph * k
                del phases[ph][o]
                saved -= (k - 1) * full
                live -= k
                lc -= k * c
                completed += 1
            if progress and completed // PROGRESS_EVERY > done // PROGRESS_EVERY:
                progress(completed)
    if progress:
        progress(completed)

    def row(tok: int, phys: int, count: int) -> list[int]:
        return [tok, 0, b * phys - tok, 0, count * cap - b * phys]

    # Blocks are reported over every busy step (_Tally.report): all of them in ``other``.
    phys = w_phys + o_phys
    return Sums([*row(w_tok, w_phys, saturated), 0, 0],
                [*row(o_tok, o_phys, steps - saturated), phys, phys + shared], saturated, steps,
                completed, preemptions, peak, batch_sum)
