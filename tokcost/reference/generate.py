"""The generation loop: prefill the prompt, then predict, sample, append, repeat.

``generate`` runs ``n`` parallel samples of one prompt in lockstep. The prompt is
prefilled once; the samples then fork the cache (the paged cache shares the
prompt's blocks by reference count and copies a block only when a sample writes
into it). A callback receives each ``Step`` as it happens, so the CLI can stream
text while the library prints nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from tokcost.errors import UsageError
from tokcost.reference.cache import ContiguousCache, KVCache, PagedCache
from tokcost.reference.config import CacheMode
from tokcost.reference.errors import PromptTooLong
from tokcost.reference.model import softmax

if TYPE_CHECKING:
    from numpy.typing import NDArray

    from tokcost.reference.model import Transformer


@dataclass(frozen=True)
class SamplingParams:
    """temperature 0 is greedy; top_k 0 and top_p 1.0 switch those filters off."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise UsageError(
                f"temperature must be >= 0, got {self.temperature}", param="temperature"
            )
        if self.top_k < 0:
            raise UsageError(f"top_k must be >= 0, got {self.top_k}", param="top_k")
        if not 0.0 < self.top_p <= 1.0:
            raise UsageError(f"top_p must be in (0, 1], got {self.top_p}", param="top_p")


@dataclass(frozen=True)
class HeadFocus:
    """Where one attention head of the newest position looked hardest."""

    layer: int
    head: int
    position: int
    weight: float


@dataclass(frozen=True)
class Step:
    """One generated token of one sample, with what the loop knew when it chose it."""

    index: int  # 0 for the first new token
    sample: int
    token_id: int
    prob: float  # probability of the chosen token before filtering
    top: list[tuple[int, float]]  # most likely candidates (id, probability)
    cache_tokens: int  # tokens held per sequence after this step's forward pass
    cache_bytes: int  # key/value bytes the cache holds, all samples
    cache_blocks: int | None  # physical blocks in use (paged only)
    logical_blocks: int | None  # blocks the samples would hold without sharing
    focus: list[HeadFocus] = field(default_factory=list)


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


def _sample(
    logits: NDArray[np.float32], params: SamplingParams, rng: np.random.Generator
) -> tuple[int, NDArray[np.float64]]:
    """Pick a token from logits (V,); also return the unfiltered probabilities."""
    probs = softmax(logits.astype(np.float64)).astype(np.float64)  # (V,)
    if params.temperature == 0.0:
        return int(np.argmax(logits)), probs
    p = softmax((logits / params.temperature).astype(np.float64)).astype(np.float64)  # (V,)
    order = np.argsort(-p, kind="stable")  # (V,) most likely first
    keep = len(order)
    if params.top_k:
        keep = min(keep, params.top_k)
    if params.top_p < 1.0:
        # Smallest prefix whose mass reaches top_p (always at least one token).
        cum = np.cumsum(p[order])
        keep = min(keep, int(np.searchsorted(cum, params.top_p)) + 1)
    kept = order[:keep]
    w = p[kept] / p[kept].sum()
    choice = int(np.searchsorted(np.cumsum(w), rng.random(), side="right"))
    return int(kept[min(choice, keep - 1)]), probs


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
    if not prompt:
        raise UsageError("the prompt is empty; give at least one token of text")
    if n < 1:
        raise UsageError(f"n must be >= 1, got {n}", param="n")
    if max_new_tokens < 1:
        raise UsageError(
            f"max_new_tokens must be >= 1, got {max_new_tokens}", param="max_new_tokens"
        )
    if block_size < 1:
        raise UsageError(f"block_size must be >= 1, got {block_size}", param="block_size")
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
    # The last token is predicted but never fed back, so the cache holds total - 1.
    capacity = total - 1
    kv = make_cache(model, mode, capacity=capacity, n=n, block_size=block_size)
    rng = np.random.default_rng(sampling.seed)
    seqs = [list(prompt) for _ in range(n)]
    done = [False] * n
    steps: list[Step] = []
    logits_log: list[NDArray[np.float32]] = []

    # Prefill: the prompt runs once, then the samples fork the cache.
    out = model.forward(np.asarray([prompt], dtype=np.int64), kv, attention=explain)
    last = np.repeat(out.logits[:, -1], n, axis=0)  # (n, V)
    maps = [np.repeat(a, n, axis=0) for a in out.attention] if out.attention else None
    if kv is not None and n > 1:
        kv.fork(n)

    for index in range(max_new_tokens):
        if keep_logits:
            logits_log.append(last.copy())
        new_ids: list[int] = []
        for s in range(n):
            token, probs = _sample(last[s], sampling, rng)
            new_ids.append(token)
            if done[s]:
                continue
            seqs[s].append(token)
            top = np.argsort(-probs, kind="stable")[:top_candidates]
            step = Step(
                index=index,
                sample=s,
                token_id=token,
                prob=float(probs[token]),
                top=[(int(i), float(probs[i])) for i in top],
                cache_tokens=kv.length if kv is not None else 0,
                cache_bytes=kv.nbytes if kv is not None else 0,
                cache_blocks=kv.blocks_used if isinstance(kv, PagedCache) else None,
                logical_blocks=kv.logical_blocks if isinstance(kv, PagedCache) else None,
                focus=_focus(maps, s) if maps is not None else [],
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
        out = model.forward(ids, kv, attention=explain)
        last = out.logits[:, -1]  # (n, V)
        maps = out.attention

    length = kv.length if kv is not None else 0
    per_sample = length * cfg.kv_bytes_per_token
    if isinstance(kv, PagedCache):
        per_sample = -(-length // block_size) * kv.block_bytes
    elif isinstance(kv, ContiguousCache):
        per_sample = kv.capacity * cfg.kv_bytes_per_token
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
