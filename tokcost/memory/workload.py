"""The requests a serving simulation replays: named length distributions and JSONL traces."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tokcost.errors import InputError, UsageError, arg
from tokcost.limits import loads_json
from tokcost.units import parse_count

__all__ = ["DISTRIBUTIONS", "MAX_REQUESTS", "Request", "clip_requests", "load_requests",
           "requests_from_distribution"]

MAX_REQUESTS = 10**6  # replayed under each policy: a million take about 45 CPU seconds
MAX_TRACE_LINE = 1 << 20  # bytes of one trace line: a row of lengths, or with its text
# (prompt mean, output mean) in tokens, as the PagedAttention paper reports its traces (§6.1).
DISTRIBUTIONS: dict[str, tuple[float, float]] = {"sharegpt": (161.0, 338.0),
                                                  "alpaca": (19.31, 58.45)}


@dataclass(frozen=True, slots=True)
class Request:
    """One request: its prompt, how many tokens it will produce, and ``n`` parallel samples."""

    prompt_tokens: int
    output_tokens: int
    n: int = 1
    arrival: int = 0  # decode step at which the request arrives

    @property
    def total(self) -> int:
        return self.prompt_tokens + self.output_tokens


def requests_from_distribution(distribution: str, requests: int, *, seed: int = 0,
    max_len: int | None = 2048, n: int = 1, rate: float | None = None) -> list[Request]:
    """``requests`` requests from ``sharegpt``, ``alpaca`` (exponential, the traces' means),
    ``uniform:LO-HI`` or ``fixed:P,O``, arriving at ``rate`` per step (Poisson; None: all at
    step 0), clipped to ``max_len`` (None: as drawn)."""
    if requests < 1:
        raise UsageError(f"{arg('requests')} must be >= 1, got {requests}", param="requests")
    if requests > MAX_REQUESTS:
        raise UsageError(
            f"{arg('requests', f'{requests:,}')} is more than the simulation replays (at most "
            f"{MAX_REQUESTS:,}); draw fewer, the shares settle within a few thousand",
            param="requests")
    if rate is not None and not (rate > 0 and math.isfinite(rate)):
        raise UsageError(f"{arg('rate')} must be > 0 and finite, got {rate}", param="rate")
    rng = random.Random(seed)
    kind, _, spec = distribution.partition(":")
    if kind in DISTRIBUTIONS and not spec:
        p_mean, o_mean = DISTRIBUTIONS[kind]
        draw, p_rate, o_rate = rng.expovariate, 1 / p_mean, 1 / o_mean  # hoisted: 1M requests
        out = [(max(1, round(draw(p_rate))), max(1, round(draw(o_rate))))
               for _ in range(requests)]
    elif kind == "uniform" and "-" in spec:
        lo, hi = _ints(spec.split("-", 1), distribution)
        if not 1 <= lo <= hi:
            raise UsageError(f"distribution '{distribution}' needs 1 <= LO <= HI")
        out = [(rng.randint(lo, hi), rng.randint(lo, hi)) for _ in range(requests)]
    elif kind == "fixed" and "," in spec:
        p, o = _ints(spec.split(",", 1), distribution)
        if p < 1 or o < 1:
            raise UsageError(f"distribution '{distribution}' needs positive lengths")
        out = [(p, o)] * requests
    else:
        raise UsageError(f"unknown distribution '{distribution}'; use sharegpt, alpaca, "
                         "uniform:LO-HI or fixed:P,O")
    if rate is None:
        drawn = [Request(p, o, n) for p, o in out]
    else:
        drawn, t = [], 0.0
        for p, o in out:
            drawn.append(Request(p, o, n, int(t)))
            t += rng.expovariate(rate)
    return drawn if max_len is None else clip_requests(drawn, max_len)[0]


def _ints(parts: Sequence[str], name: str) -> tuple[int, int]:
    try:
        return (parse_count(parts[0], param="distribution"),
                parse_count(parts[1], param="distribution"))
    except UsageError:
        raise UsageError(f"{arg('distribution')} '{name}' needs whole-number lengths such as "
                         "100 or 1k", param="distribution") from None


def clip_requests(requests: Sequence[Request], max_len: int) -> tuple[list[Request], int]:
    """Each request cut to ``max_len`` tokens (prompt first, at least one output token), and
    how many were cut."""
    if max_len < 2:
        raise UsageError(f"{arg('max_len')} must be >= 2 (one prompt token and one output "
                         f"token), got {max_len}", param="max_len")
    out, cut = list(requests), 0
    for i, r in enumerate(out):
        if r.prompt_tokens + r.output_tokens > max_len:  # rare: only these are rebuilt
            prompt = min(r.prompt_tokens, max_len - 1)
            out[i] = Request(prompt, max(1, min(r.output_tokens, max_len - prompt)), r.n,
                             r.arrival)
            cut += 1
    return out, cut


def _whole(value: object) -> int:
    """An integer as JSON writes one (``7``, ``7.0``); 2.7 tokens or ``true`` are not counts."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ValueError(value)
    return int(value)


def _trace_row(line: str, path: Path, no: int) -> Request:
    try:
        row = loads_json(line)  # a deeply nested line: ValueError, not RecursionError
        p = _whole(row.get("prompt_tokens", row.get("prompt")))
        o = _whole(row.get("output_tokens", row.get("output")))
        n, arrival = _whole(row.get("n", 1)), _whole(row.get("arrival", 0))
    except (ValueError, TypeError, AttributeError, OverflowError):
        raise InputError(f"{path}:{no}: expected a JSON object with integer prompt_tokens and "
                         "output_tokens") from None
    if p < 1 or o < 1 or n < 1 or arrival < 0:
        raise InputError(f"{path}:{no}: lengths and n must be >= 1, arrival >= 0")
    return Request(p, o, n, arrival)


def load_requests(path: str | Path, *, max_len: int | None = 2048) -> list[Request]:
    """Requests from JSONL, ``{"prompt_tokens": P, "output_tokens": O}`` a line (or ``prompt``,
    ``output``; optional ``n`` samples, ``arrival`` step), clipped to ``max_len``."""
    path = Path(path)
    out: list[Request] = []
    try:
        with open(path, "rb") as handle:  # line by line, each bounded: /dev/zero ends too
            for no, raw in enumerate(iter(lambda: handle.readline(MAX_TRACE_LINE + 1), b""), 1):
                if len(raw) > MAX_TRACE_LINE or len(out) >= MAX_REQUESTS:
                    raise InputError(f"{path}:{no}: " + (
                        f"a line over {MAX_TRACE_LINE >> 20} MiB" if len(out) < MAX_REQUESTS
                        else f"more than {MAX_REQUESTS:,} requests, what the simulation "
                        "replays") + "; give a JSONL trace of request lengths")
                if raw.strip():
                    out.append(_trace_row(raw.decode("utf-8"), path, no))
    except FileNotFoundError:
        raise UsageError(f"requests file not found: {path}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text; a requests trace is JSONL, one "
                         '{"prompt_tokens": P, "output_tokens": O} per line') from None
    except OSError as exc:
        raise InputError(f"cannot read requests file {path}: {exc.strerror}") from None
    if not out:
        raise InputError(f"{path} holds no requests")
    return out if max_len is None else clip_requests(out, max_len)[0]
