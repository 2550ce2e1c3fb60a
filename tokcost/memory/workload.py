"""The requests a serving simulation replays: named length distributions and JSONL traces."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tokcost.errors import InputError, UsageError

__all__ = ["DISTRIBUTIONS", "Request", "load_requests", "requests_from_distribution"]

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


def requests_from_distribution(
    distribution: str,
    requests: int,
    *,
    seed: int = 0,
    max_len: int = 2048,
    n: int = 1,
    rate: float | None = None,
) -> list[Request]:
    """``requests`` requests drawn from a named distribution, clipped to ``max_len``.

    Names: ``sharegpt``, ``alpaca`` (exponential lengths with the traces' means),
    ``uniform:LO-HI`` (prompt and output each uniform in [LO, HI]), ``fixed:P,O``.
    ``rate``: Poisson arrivals, that many requests per decode step on average
    (None: all requests wait at step 0).

    >>> requests_from_distribution("fixed:10,5", 2, n=3)[0]
    Request(prompt_tokens=10, output_tokens=5, n=3, arrival=0)
    """
    if requests < 1:
        raise UsageError(f"requests must be >= 1, got {requests}", param="requests")
    rng = random.Random(seed)
    kind, _, arg = distribution.partition(":")
    out: list[tuple[int, int]] = []
    if kind in DISTRIBUTIONS and not arg:
        p_mean, o_mean = DISTRIBUTIONS[kind]
        for _ in range(requests):
            p = max(1, round(rng.expovariate(1 / p_mean)))
            o = max(1, round(rng.expovariate(1 / o_mean)))
            out.append((p, o))
    elif kind == "uniform" and "-" in arg:
        lo, hi = _ints(arg.split("-", 1), distribution)
        if not 1 <= lo <= hi:
            raise UsageError(f"distribution '{distribution}' needs 1 <= LO <= HI")
        out = [(rng.randint(lo, hi), rng.randint(lo, hi)) for _ in range(requests)]
    elif kind == "fixed" and "," in arg:
        p, o = _ints(arg.split(",", 1), distribution)
        if p < 1 or o < 1:
            raise UsageError(f"distribution '{distribution}' needs positive lengths")
        out = [(p, o)] * requests
    else:
        raise UsageError(
            f"unknown distribution '{distribution}'; use sharegpt, alpaca, uniform:LO-HI or "
            "fixed:P,O"
        )
    if rate is not None and rate <= 0:
        raise UsageError(f"rate must be > 0, got {rate}", param="rate")
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
            f"{path} is not UTF-8 text; a requests trace is JSONL, one "
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
