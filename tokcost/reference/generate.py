"""The generation loop: prefill the prompt once, fork the cache for ``n`` samples, then
predict, sample, append, repeat in lockstep; ``on_step`` sees each ``Step`` as it happens."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tokcost.errors import UsageError, arg
from tokcost.reference.cache import BlockEvent, ContiguousCache, KVCache, PagedCache
from tokcost.reference.config import CacheMode, CacheSpec, PromptTooLong, RefConfig
from tokcost.reference.model import ForwardOutput, Transformer
from tokcost.reference.sampling import Distribution, Exclusion, SamplingParams, distribution, draw
from tokcost.units import format_bytes

# numpy allocates every cache up front: past this it would swap or die of MemoryError.
MAX_CACHE_BYTES = 1 << 30
# Prompt tokens per cached prefill pass (vLLM's chunked prefill): scores (heads, 256, S).
PREFILL_CHUNK = 256


@dataclass(frozen=True)
class HeadFocus:
    """Where one head looked hardest from the newest position (``token``: set by a decoder)."""

    layer: int
    head: int
    position: int
    weight: float
    token: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"layer": self.layer, "head": self.head, "position": self.position,
                "weight": round(self.weight, 4)}


@dataclass(frozen=True)
class StepCandidate:
    """A likely next token: ``prob`` where it was drawn from (0: ``excluded`` says why)."""

    token_id: int
    prob: float
    model_prob: float
    excluded: Exclusion | None = None
    token: str = ""  # its text, filled in by a caller that decodes

    def to_dict(self) -> dict[str, Any]:
        return {"token_id": self.token_id, "token": self.token, "prob": round(self.prob, 6),
                "model_prob": round(self.model_prob, 6), "excluded": self.excluded}


@dataclass(frozen=True)
class Step:
    """One new token of one sample and what the loop knew when it chose it (the ``--json``
    keys in docs/generate.md). A decoding caller fills in the fields after ``events``."""

    index: int  # 0 for the first new token
    sample: int
    token_id: int
    prob: float
    model_prob: float
    greedy: bool
    candidates: int  # tokens the draw could pick from
    top: tuple[StepCandidate, ...]  # the likeliest tokens, and the chosen one
    cache_tokens: int  # tokens held per sample after this step's forward pass
    cache_bytes: int  # key/value bytes the cache holds, all samples
    cache_blocks: int | None  # physical blocks in use (paged only)
    logical_blocks: int | None  # blocks the samples would hold without sharing
    attention: tuple[HeadFocus, ...] = ()
    events: tuple[BlockEvent, ...] = ()
    token: str = ""
    text: str = ""
    estimate_bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "sample": self.sample, "token_id": self.token_id,
                "token": self.token, "prob": round(self.prob, 6),
                "model_prob": round(self.model_prob, 6), "candidates": self.candidates,
                "top": [c.to_dict() for c in self.top], "cache_tokens": self.cache_tokens,
                "cache_bytes": self.cache_bytes, "cache_blocks": self.cache_blocks,
                "cache_events": [e.to_dict() for e in self.events],
                "attention": [a.to_dict() for a in self.attention]}


@dataclass(frozen=True)
class GenerationResult:
    """The samples' new ids, every step, and what the cache held at the end (all samples,
    shared blocks once; ``cache_bytes_per_sample``: one sample's own sequence)."""

    prompt_ids: list[int]
    samples: list[list[int]]
    steps: list[Step]
    kv: CacheSpec
    cache_tokens: int  # tokens the cache held per sample at the end
    cache_reserved_tokens: int  # slots reserved per sample (contiguous: prompt + new - 1)
    cache_bytes: int
    cache_bytes_per_sample: int
    cache_blocks: int | None
    logical_blocks: int | None
    copy_on_write: int | None
    logits: list[NDArray[np.float32]] = field(default_factory=list)  # (n, V) per step
    sliding_window: int | None = None


def check_fit(cfg: RefConfig, prompt: Sequence[int], sampling: SamplingParams,
              kv: CacheSpec) -> None:
    """Refuse what the model cannot run, before anything is allocated or printed."""
    if not prompt:
        raise UsageError("the prompt is empty; give at least one token of text")
    if kv.cache is CacheMode.PAGED and kv.block_size > cfg.context_window:
        raise UsageError(
            f"{arg('block_size', kv.block_size)} is larger than the context window of "
            f"{cfg.context_window} tokens; use a block of at most {cfg.context_window}",
            param="block_size", value=kv.block_size)
    bad = next((t for t in prompt if not 0 <= t < cfg.vocab_size), None)
    if bad is not None:
        raise UsageError(f"token id {bad} is outside the vocabulary of {cfg.vocab_size}")
    new = sampling.max_new_tokens
    total = len(prompt) + new
    if total > cfg.context_window:
        raise PromptTooLong(
            f"the prompt ({len(prompt)} token{'s' if len(prompt) != 1 else ''}) plus "
            f"{arg('max_new_tokens', new)} needs {total} positions, but the context window "
            f"is {cfg.context_window}; shorten the prompt or lower {arg('max_new_tokens')}",
            param="max_new_tokens", value=new)
    if kv.cache is CacheMode.NONE:
        return
    n, capacity = sampling.n, total - 1
    block = kv.block_size if kv.cache is CacheMode.PAGED else 1
    need = -(-capacity // block) * block * n * cfg.kv_bytes_per_token
    if need > MAX_CACHE_BYTES:
        raise UsageError(
            f"{arg('n', n)} sample{'s' if n != 1 else ''} of {capacity:,} positions need "
            f"{format_bytes(need)} of KV cache, more than the {format_bytes(MAX_CACHE_BYTES)} "
            f"the numpy reference path allocates; lower {arg('n')} or {arg('max_new_tokens')}",
            param="n", related=("max_new_tokens",), value=n)


def generate(model: Transformer, prompt_ids: Sequence[int], sampling: SamplingParams | None = None,
    kv: CacheSpec | None = None, *, explain: bool = False, top_candidates: int = 5,
    keep_logits: bool = False, on_step: Callable[[Step], None] | None = None) -> GenerationResult:
    """``sampling.n`` samples after the prompt; ``explain`` records attention and block events."""
    sampling, kv = sampling or SamplingParams(), kv or CacheSpec()
    prompt = [int(t) for t in prompt_ids]
    check_fit(model.cfg, prompt, sampling, kv)
    n, new = sampling.n, sampling.max_new_tokens
    # The last token is predicted but never fed back, so the cache holds prompt + new - 1.
    capacity = len(prompt) + new - 1
    cache: ContiguousCache | PagedCache | None = None
    if kv.cache is CacheMode.CONTIGUOUS:
        cache = ContiguousCache(model.cfg, capacity=capacity)
    elif kv.cache is CacheMode.PAGED:
        cache = PagedCache(model.cfg, kv.block_size, -(-capacity // kv.block_size) * n)
        cache.events = [] if explain else None
    rng = np.random.default_rng(sampling.seed)
    seqs = [list(prompt) for _ in range(n)]
    steps: list[Step] = []
    logits: list[NDArray[np.float32]] = []
    out, events = _prefill(model, prompt, cache, n, explain=explain)
    last = np.repeat(out.logits[:, -1], n, axis=0)  # (n, V)
    maps = [np.repeat(a, n, axis=0) for a in out.attention] if out.attention else None
    for index in range(new):
        if keep_logits:
            logits.append(last.copy())
        for s in range(n):
            dist = distribution(last[s], sampling)
            token = draw(dist, rng)
            seqs[s].append(token)
            # The prompt's blocks (sample None) are shown with the first sample's step.
            mine = tuple(e for e in events if e.sample == s or (e.sample is None and s == 0))
            step = _step(index, s, token, dist, cache, _focus(maps, s), mine, top_candidates)
            steps.append(step)
            if on_step is not None:
                on_step(step)
        if index == new - 1:
            break
        # No cache: recompute keys and values of the whole context, (n, S); else (n, 1).
        ids = np.asarray(seqs if cache is None else [q[-1:] for q in seqs], dtype=np.int64)
        out = model.forward(ids, cache, attention=explain, logits="last")
        last, maps, events = out.logits[:, -1], out.attention, _drain(cache)
    paged = cache if isinstance(cache, PagedCache) else None
    length = cache.length if cache is not None else 0
    return GenerationResult(
        prompt_ids=prompt, samples=[q[len(prompt):] for q in seqs], steps=steps, kv=kv,
        cache_tokens=length, cache_bytes=cache.nbytes if cache is not None else 0,
        cache_reserved_tokens=cache.capacity if isinstance(cache, ContiguousCache) else length,
        cache_bytes_per_sample=cache.sequence_bytes if cache is not None else 0, logits=logits,
        cache_blocks=paged.blocks_used if paged else None,
        logical_blocks=paged.logical_blocks if paged else None,
        copy_on_write=paged.copies if paged else None,
        sliding_window=model.cfg.sliding_window if model.cfg.slides else None)


def _prefill(model: Transformer, prompt: list[int], cache: KVCache | None, n: int, *,
             explain: bool) -> tuple[ForwardOutput, list[BlockEvent]]:
    """The prompt through the model (in chunks when a cache carries keys between them),
    then the cache forked for ``n`` samples: the last chunk's output and block events."""
    ids = np.asarray([prompt], dtype=np.int64)  # (1, T)
    step = len(prompt) if cache is None else PREFILL_CHUNK
    starts = range(0, len(prompt), step)  # check_fit refused an empty prompt
    for i in starts[:-1]:
        model.forward(ids[:, i : i + step], cache, logits="last")
    out = model.forward(ids[:, starts[-1]:], cache, attention=explain, logits="last")
    # The prefill's blocks are the prompt's, whichever sample they are shared with later.
    events = [replace(e, sample=None) for e in _drain(cache)]
    if cache is not None and n > 1:
        cache.fork(n)
        events += _drain(cache)
    return out, events


def _step(index: int, s: int, token: int, dist: Distribution, cache: KVCache | None,
          focus: tuple[HeadFocus, ...], events: tuple[BlockEvent, ...], top: int) -> Step:
    ids = [int(i) for i in dist.order[:top]]
    ids += [] if token in ids else [token]
    paged = cache if isinstance(cache, PagedCache) else None
    return Step(
        index=index, sample=s, token_id=token, prob=float(dist.probs[token]),
        model_prob=float(dist.model_probs[token]), greedy=dist.greedy, candidates=dist.size,
        top=tuple(StepCandidate(i, float(dist.probs[i]), float(dist.model_probs[i]),
                                dist.excluded_by(i)) for i in ids),
        cache_tokens=cache.length if cache is not None else 0,
        cache_bytes=cache.nbytes if cache is not None else 0,
        cache_blocks=paged.blocks_used if paged else None,
        logical_blocks=paged.logical_blocks if paged else None, attention=focus, events=events)


def _focus(maps: list[NDArray[np.float32]] | None, sample: int) -> tuple[HeadFocus, ...]:
    """Per layer and head, the position the newest query attended to most."""
    found = []
    for layer, att in enumerate(maps or []):  # att: (B, nh, S)
        for head in range(att.shape[1]):
            row = att[sample, head]  # (S,)
            pos = int(np.argmax(row))
            found.append(HeadFocus(layer, head, pos, float(row[pos])))
    return tuple(found)


def _drain(cache: KVCache | None) -> list[BlockEvent]:
    return cache.drain_events() if isinstance(cache, PagedCache) else []

