"""Serving a stream of requests from a fixed KV memory: paged vs contiguous allocation.

A discrete-time simulation in the spirit of the PagedAttention paper (Kwon et al.,
SOSP 2023, §3 and Figure 2). Memory is ``capacity`` token slots (one slot holds one
token's keys and values in every layer). Requests wait in a FCFS queue; each step
every running sequence produces one token; a finished request frees its memory.

Policies:

- ``max``: contiguous, reserve the maximum sequence length for every sequence
  (Orca (Max), FasterTransformer);
- ``pow2``: contiguous, reserve the next power of two of the real final length
  (Orca (Pow2));
- ``oracle``: contiguous, reserve exactly the final length, known in advance
  (Orca (Oracle), an upper bound no real system reaches);
- ``paged``: blocks of ``block_size`` slots allocated on demand (vLLM); parallel
  samples of one request share the prompt's blocks (copy-on-write for the last,
  partly filled prompt block).

Every step the memory is split into the paper's categories: slots holding token
states, slots reserved for tokens a request will still produce, internal
fragmentation (reserved or allocated, never used), external fragmentation (free
slots the queue's next request cannot use because they lie in gaps too small for
its contiguous reservation) and free slots nobody asked for. The shares are
averaged over the saturated steps, those in which requests were waiting for memory
(over every busy step when memory never saturates), so a run's idle tail does not
count as waste.

The simulation is pure Python (no numpy), so it is cheap to import.
"""

from __future__ import annotations

import json
import random
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tokcost.errors import InputError, UsageError

POLICIES = ("max", "pow2", "oracle", "paged")

# Request length distributions: (prompt mean, output mean) in tokens. ShareGPT and
# Alpaca means are the ones the PagedAttention paper reports for its traces (§6.1).
DISTRIBUTIONS: dict[str, tuple[float, float]] = {
    "sharegpt": (161.0, 338.0),
    "alpaca": (19.31, 58.45),
}


@dataclass(frozen=True)
class Request:
    """One request: its prompt, how many tokens it will produce, and ``n`` parallel samples."""

    prompt_tokens: int
    output_tokens: int
    n: int = 1
    arrival: int = 0  # decode step at which the request arrives

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.output_tokens


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

    def as_dict(self) -> dict[str, object]:
        return {
            "policy": self.policy,
            "block_size": self.block_size,
            "capacity_tokens": self.capacity_tokens,
            "token_states": round(self.token_states, 6),
            "reserved": round(self.reserved, 6),
            "internal_fragmentation": round(self.internal_fragmentation, 6),
            "external_fragmentation": round(self.external_fragmentation, 6),
            "free": round(self.free, 6),
            "peak_batch": self.peak_batch,
            "mean_batch": round(self.mean_batch, 3),
            "steps": self.steps,
            "saturated_steps": self.saturated_steps,
            "completed": self.completed,
            "preemptions": self.preemptions,
            "prefix_sharing_saved": (
                None if self.prefix_sharing_saved is None else round(self.prefix_sharing_saved, 6)
            ),
        }


@dataclass
class StepSample:
    """Slots in each category at one step (for property tests and plots)."""

    token_states: int
    reserved: int
    internal: int
    external: int
    free: int
    live_sequences: int


# --- workloads ---------------------------------------------------------------------------


def requests_from_distribution(
    name: str,
    count: int,
    *,
    seed: int = 0,
    max_len: int = 2048,
    n: int = 1,
    rate: float | None = None,
) -> list[Request]:
    """``count`` requests drawn from a named distribution, clipped to ``max_len``.

    Names: ``sharegpt``, ``alpaca`` (exponential lengths with the traces' means),
    ``uniform:LO-HI`` (prompt and output each uniform in [LO, HI]), ``fixed:P,O``.
    ``rate``: Poisson arrivals, that many requests per decode step on average
    (None: all requests wait at step 0).

    >>> requests_from_distribution("fixed:10,5", 2, n=3)[0]
    Request(prompt_tokens=10, output_tokens=5, n=3, arrival=0)
    """
    if count < 1:
        raise UsageError(f"--requests must be >= 1, got {count}")
    rng = random.Random(seed)
    kind, _, arg = name.partition(":")
    out: list[tuple[int, int]] = []
    if kind in DISTRIBUTIONS and not arg:
        p_mean, o_mean = DISTRIBUTIONS[kind]
        for _ in range(count):
            p = max(1, round(rng.expovariate(1 / p_mean)))
            o = max(1, round(rng.expovariate(1 / o_mean)))
            out.append((p, o))
    elif kind == "uniform" and "-" in arg:
        lo, hi = _ints(arg.split("-", 1), name)
        if not 1 <= lo <= hi:
            raise UsageError(f"distribution '{name}' needs 1 <= LO <= HI")
        out = [(rng.randint(lo, hi), rng.randint(lo, hi)) for _ in range(count)]
    elif kind == "fixed" and "," in arg:
        p, o = _ints(arg.split(",", 1), name)
        if p < 1 or o < 1:
            raise UsageError(f"distribution '{name}' needs positive lengths")
        out = [(p, o)] * count
    else:
        raise UsageError(
            f"unknown distribution '{name}'; use sharegpt, alpaca, uniform:LO-HI or fixed:P,O"
        )
    if rate is not None and rate <= 0:
        raise UsageError(f"--rate must be > 0, got {rate}")
    arrivals, t = [], 0.0
    for _ in out:
        arrivals.append(int(t))
        if rate is not None:
            t += rng.expovariate(rate)
    return [_clip(p, o, max_len, n, a) for (p, o), a in zip(out, arrivals, strict=True)]


def _ints(parts: Sequence[str], name: str) -> tuple[int, int]:
    try:
        return int(parts[0]), int(parts[1])
    except ValueError:
        raise UsageError(f"distribution '{name}' needs integer lengths") from None


def _clip(prompt: int, output: int, max_len: int, n: int, arrival: int = 0) -> Request:
    prompt = min(prompt, max_len - 1)
    return Request(prompt, max(1, min(output, max_len - prompt)), n, arrival)


def load_requests(path: str | Path, *, max_len: int = 2048) -> list[Request]:
    """Requests from a JSONL file, one ``{"prompt_tokens": P, "output_tokens": O}`` a line
    (``prompt``/``output`` also accepted; optional ``n`` for parallel samples and
    ``arrival``, the decode step at which the request arrives)."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise UsageError(f"requests file not found: {path}") from None
    except UnicodeDecodeError:
        raise InputError(
            f"{path} is not UTF-8 text; --trace expects JSONL, one "
            '{"prompt_tokens": P, "output_tokens": O} per line'
        ) from None
    except OSError as exc:
        raise InputError(f"cannot read requests file {path}: {exc.strerror}") from None
    out = []
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            p = int(row.get("prompt_tokens", row.get("prompt")))
            o = int(row.get("output_tokens", row.get("output")))
            n = int(row.get("n", 1))
            arrival = int(row.get("arrival", 0))
        except (ValueError, TypeError, AttributeError):
            raise InputError(
                f"{path}:{no}: expected a JSON object with integer prompt_tokens and output_tokens"
            ) from None
        if p < 1 or o < 1 or n < 1 or arrival < 0:
            raise InputError(f"{path}:{no}: lengths and n must be >= 1, arrival >= 0")
        out.append(_clip(p, o, max_len, n, arrival))
    if not out:
        raise InputError(f"{path} holds no requests")
    return out


# --- the simulation ----------------------------------------------------------------------


@dataclass(eq=False)
class _Seq:
    req: int
    length: int  # tokens held now
    final: int  # tokens it will hold when done
    start: int = -1  # contiguous: first slot of its reservation
    size: int = 0  # contiguous: reserved slots
    blocks: int = 0  # paged: private blocks
    has_partial: bool = False  # paged: still reads the shared, partly filled prompt block


@dataclass(eq=False)
class _Running:
    req_index: int
    prompt: int
    seqs: list[_Seq]
    order: int
    shared_full: int = 0  # paged: full prompt blocks held once for all samples
    partial_sharers: int = 0  # paged: samples still sharing the last prompt block


@dataclass
class _State:
    free_blocks: int = 0
    intervals: list[tuple[int, int]] = field(default_factory=list)  # contiguous (start, end)


def next_pow2(n: int) -> int:
    """Smallest power of two >= n.

    >>> next_pow2(5), next_pow2(8)
    (8, 8)
    """
    return 1 << max(0, (n - 1).bit_length())


def simulate(
    requests: Iterable[Request],
    *,
    capacity_tokens: int,
    policy: str,
    max_len: int = 2048,
    block_size: int = 16,
    share_prefix: bool = True,
    samples: list[StepSample] | None = None,
) -> PolicyReport:
    """Serve ``requests`` (all queued at step 0) under ``policy``; see the module doc.

    >>> reqs = [Request(10, 6)] * 4
    >>> r = simulate(reqs, capacity_tokens=64, policy="paged", block_size=4)
    >>> r.completed, r.peak_batch, r.reserved
    (4, 4, 0.0)
    """
    if policy not in POLICIES:
        raise UsageError(f"unknown policy '{policy}'; use one of: {', '.join(POLICIES)}")
    if block_size < 1:
        raise UsageError(f"--block-size must be >= 1, got {block_size}")
    reqs = list(requests)
    paged = policy == "paged"
    b = block_size
    blocks_total = capacity_tokens // b if paged else 0
    cap = blocks_total * b if paged else capacity_tokens
    for i, r in enumerate(reqs):
        need = _admit_need(r, policy, max_len, b, share_prefix)
        if need > cap:
            raise UsageError(
                f"request {i} ({r.prompt_tokens:,}+{r.output_tokens:,} tokens x {r.n}) needs "
                f"{need:,} KV slots under '{policy}' but memory holds {cap:,}; give more memory "
                "(--kv-memory), cap what 'max' reserves with --max-len, or shorter requests"
            )
    state = _State(free_blocks=blocks_total)
    # FCFS in arrival order; a request joins the waiting line at its arrival step.
    queue: deque[int] = deque(sorted(range(len(reqs)), key=lambda i: reqs[i].arrival))
    now = 0
    running: list[_Running] = []
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
            ri = queue[0]
            run = _try_admit(reqs[ri], ri, policy, max_len, b, share_prefix, state, cap, order)
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
            if paged and not _grow_paged(run, b, share_prefix, state):
                preemptions += 1
                while not _grow_paged(run, b, share_prefix, state):
                    victim = max(
                        (r for r in running if r is not run), key=lambda r: r.order, default=None
                    )
                    if victim is None:
                        raise UsageError("memory too small for one request under 'paged'")
                    _release(victim, paged, b, state)
                    running.remove(victim)
                    queue.appendleft(victim.req_index)
        # 3. Measure.
        live = sum(len(r.seqs) for r in running)
        peak = max(peak, live)
        batch_sum += live
        busy_steps += 1
        # Requests that have arrived but not been admitted wait for memory.
        waiting = [queue[0]] if queue and reqs[queue[0]].arrival < now else []
        sample = _measure(running, reqs, waiting, policy, max_len, b, share_prefix, state, cap)
        if samples is not None:
            samples.append(sample)
        row = (sample.token_states, sample.reserved, sample.internal, sample.external, sample.free)
        for k, v in enumerate(row):
            all_sums[k] += v
            if waiting:
                sums[k] += v
        if waiting:
            saturated += 1
        if paged:
            physical_sum += sum(_physical_blocks(r) for r in running)
            logical_sum += sum(-(-s.length // b) for r in running for s in r.seqs)
        # 4. Finished requests free their memory.
        for run in [r for r in running if all(s.length >= s.final for s in r.seqs)]:
            _release(run, paged, b, state)
            running.remove(run)
            completed += 1

    # The paper's question is how well memory is used while requests wait for it;
    # a run that never saturates memory falls back to every busy step.
    if saturated:
        shares = [s / (saturated * cap) for s in sums]
    else:
        shares = [s / (max(1, busy_steps) * cap) for s in all_sums]
    saved = None
    if paged and any(r.n > 1 for r in reqs):
        saved = 1 - physical_sum / logical_sum if logical_sum else 0.0
    return PolicyReport(
        policy=policy,
        block_size=b if paged else None,
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


def _reservation(r: Request, policy: str, max_len: int) -> int:
    if policy == "max":
        return max_len
    if policy == "pow2":
        return min(next_pow2(r.total), max(max_len, r.total))
    return r.total  # oracle


def _admit_need(r: Request, policy: str, max_len: int, b: int, share: bool) -> int:
    """Slots needed to admit ``r`` into empty memory (and to finish it, for contiguous)."""
    if policy != "paged":
        return _reservation(r, policy, max_len) * r.n
    per_seq = -(-r.total // b)
    full = r.prompt_tokens // b
    if share and r.n > 1:
        return (full + (per_seq - full) * r.n) * b
    return per_seq * r.n * b


def _try_admit(
    r: Request,
    ri: int,
    policy: str,
    max_len: int,
    b: int,
    share: bool,
    st: _State,
    cap: int,
    order: int,
) -> _Running | None:
    seqs = [_Seq(ri, r.prompt_tokens, r.total) for _ in range(r.n)]
    if policy == "paged":
        # The prompt's blocks plus one block per sample of headroom for the first tokens.
        prompt_blocks = -(-r.prompt_tokens // b)
        shared = share and r.n > 1
        need = (prompt_blocks if shared else prompt_blocks * r.n) + r.n
        if need > st.free_blocks:
            return None
        if shared:
            st.free_blocks -= prompt_blocks
            partial = r.prompt_tokens % b != 0
            for s in seqs:
                s.has_partial = partial
            return _Running(
                ri,
                r.prompt_tokens,
                seqs,
                order,
                shared_full=r.prompt_tokens // b,
                partial_sharers=r.n if partial else 0,
            )
        st.free_blocks -= prompt_blocks * r.n
        for s in seqs:
            s.blocks = prompt_blocks
        return _Running(ri, r.prompt_tokens, seqs, order)
    size = _reservation(r, policy, max_len)
    placed: list[tuple[int, int]] = []
    for s in seqs:
        start = _first_fit(st.intervals, size, cap)
        if start is None:
            for iv in placed:
                st.intervals.remove(iv)
            return None
        iv = (start, start + size)
        st.intervals.append(iv)
        st.intervals.sort()
        placed.append(iv)
        s.start, s.size = start, size
    return _Running(ri, r.prompt_tokens, seqs, order)


def _first_fit(intervals: list[tuple[int, int]], size: int, cap: int) -> int | None:
    pos = 0
    for start, end in intervals:  # sorted by start
        if start - pos >= size:
            return pos
        pos = max(pos, end)
    return pos if cap - pos >= size else None


def _largest_gap(intervals: list[tuple[int, int]], cap: int) -> int:
    pos, best = 0, 0
    for start, end in intervals:
        best = max(best, start - pos)
        pos = max(pos, end)
    return max(best, cap - pos)


def _grow_paged(run: _Running, b: int, share: bool, st: _State) -> bool:
    """Give each sample the blocks its new token needs; False if memory ran out."""
    for s in run.seqs:
        if s.has_partial and s.length > run.prompt:
            # First write into the shared, partly filled prompt block: copy-on-write,
            # except for the last sample still sharing it, which keeps the original.
            if run.partial_sharers > 1:
                if st.free_blocks < 1:
                    return False
                st.free_blocks -= 1
            run.partial_sharers -= 1
            s.has_partial = False
            s.blocks += 1
        held = run.shared_full + int(s.has_partial) + s.blocks
        while held * b < s.length:
            if st.free_blocks < 1:
                return False
            st.free_blocks -= 1
            s.blocks += 1
            held += 1
    return True


def _physical_blocks(run: _Running) -> int:
    return run.shared_full + int(run.partial_sharers > 0) + sum(s.blocks for s in run.seqs)


def _release(run: _Running, paged: bool, b: int, st: _State) -> None:
    if paged:
        st.free_blocks += _physical_blocks(run)
    else:
        for s in run.seqs:
            st.intervals.remove((s.start, s.start + s.size))


def _measure(
    running: list[_Running],
    reqs: list[Request],
    queue: Sequence[int],
    policy: str,
    max_len: int,
    b: int,
    share: bool,
    st: _State,
    cap: int,
) -> StepSample:
    tokens = reserved = internal = 0
    for run in running:
        if policy == "paged":
            allocated = _physical_blocks(run) * b
            shared = run.shared_full * b  # prompt tokens stored once for all samples
            tail = run.prompt - shared  # prompt tokens in the last, partly filled block
            held = shared + (tail if run.partial_sharers else 0)
            held += sum(s.length - shared - (tail if s.has_partial else 0) for s in run.seqs)
            tokens += held
            internal += allocated - held
        else:
            for s in run.seqs:
                tokens += s.length
                reserved += s.final - s.length
                internal += s.size - s.final
    used = tokens + reserved + internal
    free = cap - used
    external = 0
    if policy != "paged" and queue:
        head = reqs[queue[0]]
        need = _reservation(head, policy, max_len)
        # Enough free slots in total, but no gap large enough: external fragmentation.
        if free >= need * head.n and _largest_gap(st.intervals, cap) < need:
            external, free = free, 0
    live = sum(len(r.seqs) for r in running)
    return StepSample(tokens, reserved, internal, external, free, live)


def compare_policies(
    requests: Sequence[Request],
    *,
    capacity_tokens: int,
    policies: Sequence[str] = POLICIES,
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


__all__ = [
    "DISTRIBUTIONS",
    "POLICIES",
    "PolicyReport",
    "Request",
    "StepSample",
    "compare_policies",
    "load_requests",
    "next_pow2",
    "plot_reports",
    "requests_from_distribution",
    "simulate",
]


def plot_reports(
    reports: Sequence[PolicyReport], path: Path, *, force: bool = False, title: str = ""
) -> None:
    """Stacked bars of the memory categories per policy (PagedAttention Figure 2 style).

    Needs matplotlib (``tokcost[plot]``); the file is written atomically.
    """

    from tokcost.plotting import check_plot_path, pyplot, save_figure

    check_plot_path(path, force=force)
    plt = pyplot()
    parts = [
        ("token states", "token_states", "#2b7bba"),
        ("reserved", "reserved", "#f0a030"),
        ("internal frag.", "internal_fragmentation", "#d04040"),
        ("external frag.", "external_fragmentation", "#8050a0"),
        ("free", "free", "#cccccc"),
    ]
    labels = [r.policy if r.block_size is None else f"paged (b={r.block_size})" for r in reports]
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(reports) + 1.6), dpi=120)
    left = [0.0] * len(reports)
    for name, attr, color in parts:
        values = [100 * float(getattr(r, attr)) for r in reports]
        ax.barh(labels, values, left=left, color=color, label=name)
        left = [a + b for a, b in zip(left, values, strict=True)]
    for row, r in enumerate(reports):  # the number the figure is about, on each bar
        share = 100 * float(r.token_states)
        ax.text(min(share, 92) / 2, row, f"{share:.1f}%", va="center", ha="center",
                color="white", fontsize=8, fontweight="bold")
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of KV-cache memory (%)")
    ax.invert_yaxis()
    ax.set_title(title or "Where KV-cache memory goes, per allocation policy", fontsize=10)
    ax.legend(ncol=5, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18),
              frameon=False)
    fig.tight_layout()
    save_figure(fig, path)
