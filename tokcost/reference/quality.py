"""What a cache policy costs in quality: teacher-forced decoding against the full float32
cache, scored by perplexity, top-1 agreement and mean KL(baseline || policy) (the protocol
is in docs/kvmem.md, "kvmem quality")."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from tokcost.errors import TokcostError, UsageError, arg
from tokcost.memory.cache_policy import Eviction, KvQuant
from tokcost.reference.cache import ContiguousCache, KVCache
from tokcost.reference.kvpolicy import policy_cache, policy_cache_bytes
from tokcost.reference.model import Transformer


@dataclass(frozen=True)
class TeacherForced:
    """One pass over a text: log-probabilities of every next token, and the cache."""

    logprobs: NDArray[np.float64]  # (N, V): log-softmax of each prediction
    targets: NDArray[np.int64]  # (N,): the true next tokens
    cache_bytes: int  # bytes the cache held after the last token
    cache_tokens: int  # tokens it had seen

    @property
    def nll(self) -> float:
        return float(-self.logprobs[np.arange(len(self.targets)), self.targets].mean())

    @property
    def perplexity(self) -> float:
        return math.exp(self.nll)


def teacher_forced(model: Transformer, ids: Sequence[int], *, prompt: int,
                   cache: KVCache | None = None) -> TeacherForced:
    """Predict ``ids[prompt:]`` one token at a time after the prefill (no ``cache``: the
    full contiguous one, the baseline)."""
    n = len(ids)
    if not 1 <= prompt < n:
        raise UsageError(f"{arg('prompt', prompt)} must leave at least one token to predict "
                         f"of the text's {n}", param="prompt", value=prompt)
    if n > model.cfg.context_window:
        raise UsageError(f"the text has {n:,} tokens, past the model's context window "
                         f"({model.cfg.context_window:,}); give a shorter {arg('text')}",
                         param="text")
    # The last token is only ever a target: the cache sees n - 1 tokens.
    cache = cache if cache is not None else ContiguousCache(model.cfg, capacity=n - 1)
    arr = np.asarray(ids, dtype=np.int64)
    rows = [model.forward(arr[None, :prompt], cache).logits[0, -1]]
    rows += [model.forward(arr[None, i : i + 1], cache).logits[0, -1] for i in range(prompt, n - 1)]
    x = np.stack(rows).astype(np.float64)  # (N, V)
    x = x - x.max(axis=-1, keepdims=True)
    logprobs = x - np.log(np.exp(x).sum(axis=-1, keepdims=True))  # log-softmax
    return TeacherForced(logprobs, arr[prompt:], cache.nbytes, cache.length)


@dataclass(frozen=True)
class PolicyQuality:
    """A policy against the baseline on the same text and predictions."""

    perplexity: float
    baseline_perplexity: float
    top1_agreement: float
    mean_kl: float
    bytes_held: int
    baseline_bytes: int

    @property
    def perplexity_change(self) -> float:
        """Relative change: 0.05 is 5% worse than the full cache."""
        return self.perplexity / self.baseline_perplexity - 1

    @property
    def bytes_ratio(self) -> float:
        return self.bytes_held / self.baseline_bytes


def compare_policy(run: TeacherForced, baseline: TeacherForced) -> PolicyQuality:
    """Score ``run`` against ``baseline`` (the same text, prompt and model)."""
    if run.targets.shape != baseline.targets.shape or not (run.targets == baseline.targets).all():
        raise UsageError("compare a policy with the baseline on the same text and prompt")
    p = np.exp(baseline.logprobs)
    kl = (p * (baseline.logprobs - run.logprobs)).sum(axis=-1)
    agree = run.logprobs.argmax(axis=-1) == baseline.logprobs.argmax(axis=-1)
    return PolicyQuality(perplexity=run.perplexity, baseline_perplexity=baseline.perplexity,
                         top1_agreement=float(agree.mean()), mean_kl=float(max(0.0, kl.mean())),
                         bytes_held=run.cache_bytes, baseline_bytes=baseline.cache_bytes)


def evaluate(model: Transformer, ids: Sequence[int], *, prompt: int, quant: KvQuant | None = None,
    evict: Eviction | None = None, baseline: TeacherForced | None = None) -> PolicyQuality:
    """One policy's quality on ``ids``, its bytes checked against the memory model's."""
    base = baseline if baseline is not None else teacher_forced(model, ids, prompt=prompt)
    cache = policy_cache(model.cfg, quant=quant, evict=evict, prompt=prompt)
    quality = compare_policy(teacher_forced(model, ids, prompt=prompt, cache=cache), base)
    expected = policy_cache_bytes(model.cfg, len(ids) - 1, quant=quant, evict=evict, prompt=prompt)
    if expected is not None and expected != quality.bytes_held:  # they must agree
        raise TokcostError(f"the cache held {quality.bytes_held:,} B but the memory model "
                           f"says {expected:,} B; please report it")
    return quality
