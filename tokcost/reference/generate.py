"""The generation loop: prefill the prompt, then predict, sample, append, repeat.

``generate`` runs ``n`` parallel samples of one prompt in lockstep. The prompt is
prefilled once; the samples then fork the cache (the paged cache shares the
prompt's blocks by reference count and copies a block only when a sample writes
into it). A callback receives each ``Step`` as it happens, so the CLI can stream
text while the library prints nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from tokcost.errors import UsageError
from tokcost.reference.cache import BlockEvent, ContiguousCache, KVCache, PagedCache
from tokcost.reference.config import CacheMode
from tokcost.reference.errors import PromptTooLong
from tokcost.reference.sampling import Distribution, Exclusion, SamplingParams, sample
from tokcost.units import format_bytes

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from tokcost.reference.config import RefConfig
    from tokcost.reference.model import ForwardOutput, Transformer

__all__ = [
    "GenerationResult", "HeadFocus", "SamplingParams", "Step", "StepCandidate", "check_request",
    "generate",
]

# numpy allocates every cache up front (contiguous slabs, the paged pool): past this the
# reference path would swap or die with MemoryError instead of saying why.
MAX_CACHE_BYTES = 1 << 30
# Samples are chosen one by one in Python; past this a run takes minutes per token.
MAX_SAMPLES = 1024


@dataclass(frozen=True)
class HeadFocus:
    """Where one attention head of the newest position looked hardest."""

    layer: int
    head: int
    position: int
    weight: float


@dataclass(frozen=True)
class StepCandidate:
    """A likely next token: its probability in the distribution the step sampled from
    (0 when it could not be drawn, and ``excluded`` says why) and in the model's softmax."""

    token_id: int
    prob: float
    model_prob: float
    excluded: Exclusion | None = None


@dataclass(frozen=True)
class Step:
    """One generated token of one sample, with what the loop knew when it chose it.

    ``prob`` is the chosen token's probability in the distribution it was drawn from
    (after temperature, top_k and top_p, renormalized; greedy: 1), so it is never 0;
    ``model_prob`` is its probability in the model's softmax. ``events`` are the paged
    cache's block events of the forward pass that produced this step's logits.
    """

    index: int  # 0 for the first new token
    sample: int
    token_id: int
    prob: float
    model_prob: float
    greedy: bool
    candidates: int  # tokens the draw could pick from
    top: list[StepCandidate]  # the likeliest tokens, most likely first (and the chosen one)
    cache_tokens: int  # tokens held per sequence after this step's forward pass
    cache_bytes: int  # key/value bytes the cache holds, all samples
    cache_blocks: int | None  # physical blocks in use (paged only)
    logical_blocks: int | None  # blocks the samples would hold without sharing
    focus: list[HeadFocus] = field(default_factory=list)
    events: list[BlockEvent] = field(default_factory=list)


@dataclass
class GenerationResult:
    prompt_ids: list[int]
    samples: list[list[int]]  # new token ids of each sample
    steps: list[Step]
    cache_mode: CacheMode
    block_size: int | None
    cache_tokens: int  # tokens the cache held per sample at the end
    cache_reserved_tokens: int  # slots reserved per sample (contiguous: prompt + new - 1)
    cache_bytes: int  # bytes held at the end (all samples, shared blocks once)
    cache_bytes_per_sample: int  # bytes one sample's sequence holds on its own
    cache_blocks: int | None
    logical_blocks: int | None
    copy_on_write: int | None
    logits: list[NDArray[np.float32]] = field(default_factory=list)  # (n, V) per step
    # The window of the sliding layers, if any: a paged cache then holds at most the
    # memory model's worst case (equal to it when the window starts mid-block).
    sliding_window: int | None = None


def _candidates(dist: Distribution, token: int, top: int) -> list[StepCandidate]:
    """The ``top`` likeliest tokens of ``dist``, and the chosen ``token`` if it ranks lower."""
    ids = [int(i) for i in dist.order[:top]]
    if token not in ids:
        ids.append(token)
    return [
        StepCandidate(i, float(dist.probs[i]), float(dist.model_probs[i]), dist.excluded_by(i))
        for i in ids
    ]


def make_cache(
    model: Transformer, mode: CacheMode, *, capacity: int, n: int, block_size: int
) -> KVCache | None:
    """The cache a mode names, sized for ``n`` samples of ``capacity`` tokens."""
    if mode is CacheMode.NONE:
        return None
    if mode is CacheMode.CONTIGUOUS:
        return ContiguousCache(model.cfg, capacity=capacity)
    per_seq = -(-capacity // block_size)
    return PagedCache(model.cfg, block_size=block_size, num_blocks=per_seq * n)


def check_request(
    cfg: RefConfig,
    prompt: Sequence[int],
    *,
    max_new_tokens: int,
    cache: CacheMode,
    block_size: int,
    n: int,
) -> None:
    """Every check ``generate`` makes before it allocates or computes anything, so a
    caller can run them before it prints (a UsageError names the parameter)."""
    if not prompt:
        raise UsageError("the prompt is empty; give at least one token of text")
    if n < 1:
        raise UsageError(f"n must be >= 1, got {n}", param="n")
    if n > MAX_SAMPLES:
        raise UsageError(
            f"n={n} samples are more than the {MAX_SAMPLES} the reference path runs; "
            "lower n (kvmem simulate sizes larger batches)", param="n",
        )
    if max_new_tokens < 1:
        raise UsageError(
            f"max_new_tokens must be >= 1, got {max_new_tokens}", param="max_new_tokens"
        )
    if block_size < 1:
        raise UsageError(f"block_size must be >= 1, got {block_size}", param="block_size")
    if cache is CacheMode.PAGED and block_size > cfg.context_window:
        raise UsageError(
            f"block_size={block_size} is larger than the context window of "
            f"{cfg.context_window} tokens; use a block of at most {cfg.context_window}",
            param="block_size",
        )
    bad = [t for t in prompt if not 0 <= t < cfg.vocab_size]
    if bad:
        raise UsageError(f"token id {bad[0]} is outside the vocabulary of {cfg.vocab_size}")
    total = len(prompt) + max_new_tokens
    if total > cfg.context_window:
        raise PromptTooLong(
            f"the prompt ({len(prompt)} token{'s' if len(prompt) != 1 else ''}) plus "
            f"max_new_tokens {max_new_tokens} needs "
            f"{total} positions, but the context window is {cfg.context_window}; shorten the "
            "prompt or lower max_new_tokens",
            param="max_new_tokens",
        )
    _check_cache_size(cfg.kv_bytes_per_token, cache, total - 1, n, block_size)


def generate(
    model: Transformer,
    prompt_ids: Sequence[int],
    *,
    max_new_tokens: int = 32,
    cache: CacheMode | str = CacheMode.CONTIGUOUS,
    block_size: int = 16,
    n: int = 1,
    sampling: SamplingParams | None = None,
    stop_ids: Sequence[int] = (),
    explain: bool = False,
    top_candidates: int = 5,
    keep_logits: bool = False,
    on_step: Callable[[Step], None] | None = None,
) -> GenerationResult:
    """Generate ``max_new_tokens`` for each of ``n`` samples of the prompt.

    >>> from tokcost.reference.config import RefConfig
    >>> from tokcost.reference.model import Transformer
    >>> from tokcost.reference.weights import init_weights
    >>> cfg = RefConfig(layers=1, hidden_size=16, attention_heads=2, kv_heads=1,
    ...                 head_dim=8, vocab_size=11, context_window=32)
    >>> m = Transformer(cfg, init_weights(cfg, seed=0))
    >>> r = generate(m, [1, 2, 3], max_new_tokens=4, cache="paged", block_size=4)
    >>> len(r.samples[0]), r.cache_tokens, r.cache_blocks
    (4, 6, 2)
    """
    mode = CacheMode.parse(cache)
    sampling = sampling or SamplingParams()
    cfg = model.cfg
    prompt = [int(t) for t in prompt_ids]
    check_request(cfg, prompt, max_new_tokens=max_new_tokens, cache=mode,
                  block_size=block_size, n=n)
    total = len(prompt) + max_new_tokens
    # The last token is predicted but never fed back, so the cache holds total - 1.
    capacity = total - 1
    kv = make_cache(model, mode, capacity=capacity, n=n, block_size=block_size)
    if isinstance(kv, PagedCache) and explain:
        kv.events = []
    rng = np.random.default_rng(sampling.seed)
    seqs = [list(prompt) for _ in range(n)]
    done = [False] * n
    steps: list[Step] = []
    logits_log: list[NDArray[np.float32]] = []

    # Prefill: the prompt runs once, then the samples fork the cache.
    out = _prefill(model, prompt, kv, attention=explain)
    last = np.repeat(out.logits[:, -1], n, axis=0)  # (n, V)
    maps = [np.repeat(a, n, axis=0) for a in out.attention] if out.attention else None
    # The prefill's blocks are the prompt's, whichever sample they are shared with later.
    events = [replace(e, sequence=None) for e in _drain(kv)]
    if kv is not None and n > 1:
        kv.fork(n)
        events += _drain(kv)

    for index in range(max_new_tokens):
        if keep_logits:
            logits_log.append(last.copy())
        new_ids: list[int] = []
        for s in range(n):
            token, dist = sample(last[s], sampling, rng)
            new_ids.append(token)
            if done[s]:
                continue
            seqs[s].append(token)
            mine = [e for e in events if e.sequence == s or (e.sequence is None and s == 0)]
            step = Step(
                index=index,
                sample=s,
                token_id=token,
                prob=float(dist.probs[token]),
                model_prob=float(dist.model_probs[token]),
                greedy=dist.greedy,
                candidates=dist.size,
                top=_candidates(dist, token, top_candidates),
                cache_tokens=kv.length if kv is not None else 0,
                cache_bytes=kv.nbytes if kv is not None else 0,
                cache_blocks=kv.blocks_used if isinstance(kv, PagedCache) else None,
                logical_blocks=kv.logical_blocks if isinstance(kv, PagedCache) else None,
                focus=_focus(maps, s) if maps is not None else [],
                events=mine,
            )
            steps.append(step)
            if on_step is not None:
                on_step(step)
            if token in stop_ids:
                done[s] = True
        if all(done) or index == max_new_tokens - 1:
            break
        if kv is None:
            # No cache: recompute keys and values of the whole context.
            ids = np.asarray(seqs, dtype=np.int64)  # (n, S)
        else:
            ids = np.asarray(new_ids, dtype=np.int64)[:, None]  # (n, 1)
        out = model.forward(ids, kv, attention=explain, logits="last")
        last = out.logits[:, -1]  # (n, V)
        maps = out.attention
        events = _drain(kv)

    length = kv.length if kv is not None else 0
    per_sample = length * cfg.kv_bytes_per_token
    if isinstance(kv, PagedCache | ContiguousCache):
        # Sliding layers hold their window only: the caches count what they hold.
        per_sample = kv.sequence_bytes
    return GenerationResult(
        prompt_ids=prompt,
        samples=[seq[len(prompt) :] for seq in seqs],
        steps=steps,
        cache_mode=mode,
        block_size=block_size if mode is CacheMode.PAGED else None,
        cache_tokens=length,
        cache_reserved_tokens=kv.capacity if isinstance(kv, ContiguousCache) else length,
        cache_bytes=kv.nbytes if kv is not None else 0,
        cache_bytes_per_sample=per_sample if kv is not None else 0,
        cache_blocks=kv.blocks_used if isinstance(kv, PagedCache) else None,
        logical_blocks=kv.logical_blocks if isinstance(kv, PagedCache) else None,
        copy_on_write=kv.copies if isinstance(kv, PagedCache) else None,
        logits=logits_log,
        sliding_window=cfg.sliding_window if any(
            cfg.sliding(i) for i in range(cfg.layers)) else None,
    )


#: Prompt tokens per forward pass of a cached prefill. A pass of T queries over S keys
#: holds a few (heads, T, S) float32 score arrays at once; in chunks (as vLLM's chunked
#: prefill) they stay (heads, 256, S), which keeps the peak memory of a long prompt near
#: the weights' (1,024 tokens of a 135M model: about 3x less than in one pass).
PREFILL_CHUNK = 256


def _prefill(model: Transformer, prompt: list[int], kv: KVCache | None, *,
             attention: bool) -> ForwardOutput:
    """The prompt through the model, in chunks when a cache carries the keys between them
    (no cache: one pass, the only way without one); the last chunk's output."""
    ids = np.asarray([prompt], dtype=np.int64)
    step = len(prompt) if kv is None else PREFILL_CHUNK
    out: ForwardOutput | None = None
    for i in range(0, len(prompt), step):
        last = i + step >= len(prompt)
        out = model.forward(ids[:, i : i + step], kv, attention=attention and last,
                            logits="last")
    assert out is not None  # check_request refused an empty prompt
    return out


def _drain(kv: KVCache | None) -> list[BlockEvent]:
    return kv.drain_events() if isinstance(kv, PagedCache) else []


def _check_cache_size(per_token: int, mode: CacheMode, capacity: int, n: int,
                      block_size: int) -> None:
    """Refuse a cache numpy could not allocate, before allocating it."""
    if mode is CacheMode.NONE:
        return
    tokens = capacity if mode is CacheMode.CONTIGUOUS else -(-capacity // block_size) * block_size
    need = tokens * n * per_token
    if need > MAX_CACHE_BYTES:
        raise UsageError(
            f"n={n} sample{'s' if n != 1 else ''} of {capacity:,} positions need "
            f"{format_bytes(need)} of KV cache, more than the {format_bytes(MAX_CACHE_BYTES)} "
            "the numpy reference path allocates; lower n or max_new_tokens",
            param="n", related=("max_new_tokens",),
        )


def _focus(maps: list[NDArray[np.float32]], sample: int) -> list[HeadFocus]:
    """Per layer and head, the position the newest query attended to most."""
    found = []
    for layer, att in enumerate(maps):  # att: (B, nh, S)
        for head in range(att.shape[1]):
            row = att[sample, head]  # (S,)
            pos = int(np.argmax(row))
            found.append(HeadFocus(layer, head, pos, float(row[pos])))
    return found
