"""The sampler: the distribution a token is drawn from (docs/generate.md, "--explain"), then
the draw, apart so that what ``explain`` shows is exactly what the draw saw."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from tokcost.errors import UsageError, arg
from tokcost.reference.model import softmax
from tokcost.reference.request import as_float, as_int

# Why a token cannot be drawn ("zero": its tempered probability rounds to 0).
Exclusion = Literal["greedy", "top_k", "top_p", "zero"]

# Samples are chosen one by one in Python; past this a run takes minutes per token.
MAX_SAMPLES = 1024


@dataclass(frozen=True, kw_only=True)
class SamplingParams:
    """What to draw (vLLM's ``SamplingParams``): ``n`` samples of ``max_new_tokens``;
    temperature 0 is greedy; top_k 0 and top_p 1.0 switch those filters off."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None
    n: int = 1
    max_new_tokens: int = 32

    def __post_init__(self) -> None:
        for name in ("temperature", "top_p"):
            object.__setattr__(self, name, as_float(getattr(self, name), name))
        for name in ("top_k", "n", "max_new_tokens"):
            object.__setattr__(self, name, as_int(getattr(self, name), name))
        if self.seed is not None:
            object.__setattr__(self, "seed", as_int(self.seed, "seed"))
        for name, bad, want in self._limits():
            if bad:
                value = getattr(self, name)
                raise UsageError(f"{arg(name)} must be {want}, got {value}", param=name,
                                 value=value)
        if self.n > MAX_SAMPLES:
            raise UsageError(
                f"{arg('n', self.n)} samples are more than the {MAX_SAMPLES} the reference "
                f"path runs; lower {arg('n')} (kvmem simulate sizes larger batches)",
                param="n", value=self.n)

    def _limits(self) -> tuple[tuple[str, bool, str], ...]:
        # NaN passes `< 0`, and infinity flattens every distribution to uniform: refuse both.
        t = self.temperature
        return (("temperature", not (math.isfinite(t) and t >= 0), ">= 0 and finite"),
                ("top_k", self.top_k < 0, ">= 0"),
                ("top_p", not 0.0 < self.top_p <= 1.0, "in (0, 1]"),
                ("seed", self.seed is not None and self.seed < 0, ">= 0"),
                ("n", self.n < 1, ">= 1"), ("max_new_tokens", self.max_new_tokens < 1, ">= 1"))

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


@dataclass(frozen=True, eq=False)
class Distribution:
    """What one step samples from (V,); ``top_k_kept``/``top_p_kept``: the ranking each keeps."""

    probs: NDArray[np.float64]  # (V,) what the draw uses: sums to 1 over what it can pick
    model_probs: NDArray[np.float64]  # (V,) the softmax of the raw logits
    order: NDArray[np.int64]  # (V,) token ids, most likely first (ties by id)
    rank: NDArray[np.int64]  # (V,) position of each token in order
    greedy: bool
    top_k_kept: int
    top_p_kept: int

    @property
    def kept(self) -> NDArray[np.bool_]:
        return self.probs > 0  # (V,)

    @property
    def size(self) -> int:
        return int(np.count_nonzero(self.probs))

    def excluded_by(self, token: int) -> Exclusion | None:
        if self.probs[token] > 0:
            return None
        if self.greedy:
            return "greedy"
        rank = int(self.rank[token])
        if rank >= self.top_k_kept:
            return "top_k"
        if rank >= self.top_p_kept:
            return "top_p"
        return "zero"


def distribution(logits: NDArray[np.float32], params: SamplingParams) -> Distribution:
    """The distribution a token of logits (V,) is drawn from under ``params``."""
    model = softmax(logits.astype(np.float64)).astype(np.float64)
    vocab = len(logits)
    if params.greedy:
        order = np.argsort(-model, kind="stable").astype(np.int64)  # (V,)
        probs = np.zeros(vocab, dtype=np.float64)
        probs[int(np.argmax(logits))] = 1.0
        return Distribution(probs, model, order, _ranks(order), True, vocab, vocab)
    t = params.temperature
    with np.errstate(all="ignore"):
        scaled = (logits / t).astype(np.float64)  # (V,) divided in float32
        if not np.isfinite(scaled).all():
            # logits / T overflowed: shift first, so the worst is -inf (never inf - inf).
            scaled = (logits.astype(np.float64) - float(np.max(logits))) / t
    p = softmax(scaled).astype(np.float64)  # (V,)
    order = np.argsort(-p, kind="stable").astype(np.int64)  # (V,) most likely first
    k_kept = min(vocab, params.top_k) if params.top_k else vocab
    p_kept = vocab
    if params.top_p < 1.0:
        # Smallest prefix whose mass reaches top_p (always at least one token).
        cum = np.cumsum(p[order])  # (V,)
        p_kept = min(vocab, int(np.searchsorted(cum, params.top_p)) + 1)
    kept = order[:min(k_kept, p_kept)]
    probs = np.zeros(vocab, dtype=np.float64)
    # Tokens whose tempered probability rounds to 0 stay at 0: they cannot be drawn.
    probs[kept] = p[kept] / p[kept].sum()
    return Distribution(probs, model, order, _ranks(order), False, k_kept, p_kept)


def _ranks(order: NDArray[np.int64]) -> NDArray[np.int64]:
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return rank


def draw(dist: Distribution, rng: np.random.Generator) -> int:
    """One token from ``dist`` (greedy: the likeliest, and ``rng`` is not used)."""
    if dist.greedy:
        return int(np.argmax(dist.probs))
    n = min(dist.top_k_kept, dist.top_p_kept)
    kept = dist.order[:n]  # (n,) most likely first
    w = dist.probs[kept]  # (n,) sums to 1; any zeros are at the end
    choice = int(np.searchsorted(np.cumsum(w), rng.random(), side="right"))
    # Past the last sum (it may round to under 1): the last token with mass, never a zero.
    return int(kept[min(choice, np.count_nonzero(w) - 1)])
