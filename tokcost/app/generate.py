"""The generate use case: continue a prompt with the numpy reference transformer.

``generate`` resolves the catalog model, builds it (shipped or given weights, else
seeded random ones), tokenizes the prompt, runs the loop with a real KV cache and
sets what the cache holds beside what ``kvmem estimate`` predicts. Callbacks let a
caller watch: ``on_start`` once the prompt is tokenized, ``on_step`` at every new
token (the CLI streams text and draws ``--explain`` from them). Nothing is printed.

>>> Candidate(token_id=448, token=" the", prob=0.9051234567).to_dict()
{'token_id': 448, 'token': ' the', 'prob': 0.905123}
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokcost.errors import UsageError
from tokcost.reference.config import CacheMode
from tokcost.tokenizers import open_catalog

if TYPE_CHECKING:
    from tokcost.adapters.base import Tokenizer
    from tokcost.catalog import Catalog, ModelEntry
    from tokcost.reference import GenerationResult, SamplingParams, Step

__all__ = [
    "AttentionFocus",
    "CacheMode",
    "Candidate",
    "GenerateResult",
    "GeneratedSample",
    "GenerationStart",
    "GenerationStep",
    "KVCacheUse",
    "generate",
]


@dataclass(frozen=True)
class Candidate:
    """One of the likeliest next tokens at a step."""

    token_id: int
    token: str
    prob: float

    def to_dict(self) -> dict[str, Any]:
        return {"token_id": self.token_id, "token": self.token, "prob": round(self.prob, 6)}


@dataclass(frozen=True)
class AttentionFocus:
    """Where one head of one layer looked hardest from the newest position.

    ``token`` is the text of the token at ``position`` (None if the position is unknown).
    """

    layer: int
    head: int
    position: int
    weight: float
    token: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "head": self.head,
            "position": self.position,
            "weight": round(self.weight, 4),
        }


@dataclass(frozen=True)
class GenerationStep:
    """One new token of one sample, with what the loop knew when it chose it.

    ``text`` is the sample's new text so far (ends in U+FFFD while a character is
    incomplete); ``estimate_bytes`` is what ``kvmem estimate`` predicts for the cache
    at this step (0 without a cache).
    """

    index: int
    sample: int
    token_id: int
    token: str
    prob: float
    top: tuple[Candidate, ...]
    cache_tokens: int
    cache_bytes: int
    cache_blocks: int | None
    logical_blocks: int | None
    attention: tuple[AttentionFocus, ...]
    text: str
    estimate_bytes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "sample": self.sample,
            "token_id": self.token_id,
            "token": self.token,
            "prob": round(self.prob, 6),
            "top": [c.to_dict() for c in self.top],
            "cache_tokens": self.cache_tokens,
            "cache_bytes": self.cache_bytes,
            "cache_blocks": self.cache_blocks,
            "attention": [a.to_dict() for a in self.attention],
        }


@dataclass(frozen=True)
class GenerationStart:
    """The model and prompt, once tokenized and before the first token.

    ``prompt_tokens`` is each prompt id decoded alone; ``prompt_text`` all of them
    decoded together (what a stream echoes before the new text).
    """

    model: str
    weights: str
    trained: bool
    tokenizer: str
    prompt_ids: tuple[int, ...]
    prompt_tokens: tuple[str, ...]
    prompt_text: str


@dataclass(frozen=True)
class GeneratedSample:
    """The new text and ids of one sample."""

    text: str
    token_ids: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "token_ids": list(self.token_ids)}


@dataclass(frozen=True, kw_only=True)
class KVCacheUse:
    """What the cache held at the end, beside what ``kvmem estimate`` predicts.

    ``estimate_bytes`` covers all samples without sharing. Contiguous caches add
    ``tokens_reserved`` (prompt + new - 1 slots per sample); paged caches add
    ``estimate_bytes_per_sample`` and ``saved_by_sharing`` (the prompt's shared blocks).
    """

    # In the --json document's order; the three fields of one cache kind only appear there.
    tokens: int
    bytes: int
    bytes_per_sample: int
    blocks: int | None
    logical_blocks: int | None
    copy_on_write: int | None
    estimate_bytes: int
    estimate_bytes_per_sample: int | None = None
    matches: bool
    tokens_reserved: int | None = None
    saved_by_sharing: int | None = None

    def to_dict(self) -> dict[str, Any]:
        kind_only = ("estimate_bytes_per_sample", "tokens_reserved", "saved_by_sharing")
        return {k: v for k, v in asdict(self).items() if v is not None or k not in kind_only}


@dataclass(frozen=True)
class GenerateResult:
    """A finished generation: the samples, the cache they filled, and (explain) every step."""

    model: str
    weights: str
    trained: bool
    tokenizer: str
    prompt: str
    prompt_ids: tuple[int, ...]
    cache: CacheMode
    block_size: int | None
    sampling: SamplingParams
    samples: tuple[GeneratedSample, ...]
    kv_cache: KVCacheUse
    explain: bool = False
    steps: tuple[GenerationStep, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        s = self.sampling
        data: dict[str, Any] = {
            "model": self.model,
            "weights": self.weights,
            "tokenizer": self.tokenizer,
            "prompt": self.prompt,
            "prompt_tokens": len(self.prompt_ids),
            "prompt_ids": list(self.prompt_ids),
            "cache": self.cache.value,
            "block_size": self.block_size,
            "sampling": {
                "temperature": s.temperature,
                "top_k": s.top_k,
                "top_p": s.top_p,
                "seed": s.seed,
            },
            "samples": [x.to_dict() for x in self.samples],
            "kv_cache": self.kv_cache.to_dict(),
        }
        if self.explain:
            data["steps"] = [step.to_dict() for step in self.steps]
        return data


def generate(
    prompt: str,
    *,
    model: str = "tiny-ref",
    catalog: str | Path | Catalog | None = None,
    weights: str | Path | None = None,
    max_new_tokens: int = 32,
    temperature: float = 0.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int | None = None,
    cache: CacheMode | str = CacheMode.PAGED,
    block_size: int = 16,
    n: int = 1,
    explain: bool = False,
    top_candidates: int = 5,
    on_start: Callable[[GenerationStart], None] | None = None,
    on_step: Callable[[GenerationStep], None] | None = None,
) -> GenerateResult:
    """Continue ``prompt`` with catalog ``model``: ``n`` samples of ``max_new_tokens``.

    ``temperature`` 0 is greedy; ``top_k`` 0 and ``top_p`` 1 switch those filters off;
    ``seed`` makes sampling repeatable and seeds random weights (a model without
    trained ``weights``). ``explain`` records every step with its ``top_candidates``
    and where each head attends. ``cache`` is ``none`` (recompute), ``contiguous`` or
    ``paged`` (blocks of ``block_size`` tokens, the prompt's shared by the samples).
    """
    from tokcost.reference import SamplingParams
    from tokcost.reference import generate as run
    from tokcost.reference.from_catalog import estimate_cache_bytes, load_model, load_tokenizer

    mode = CacheMode.parse(cache)
    if top_candidates < 1:
        raise UsageError(
            f"top_candidates must be >= 1, got {top_candidates}", param="top_candidates"
        )
    entry = open_catalog(catalog).resolve(model)
    loaded = load_model(entry, weights=weights, seed=seed or 0)
    tok = load_tokenizer(entry, loaded.model.cfg)
    ids = tok.encode(prompt)
    sampling = SamplingParams(temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
    if on_start is not None:
        on_start(GenerationStart(
            model=entry.id, weights=loaded.weights, trained=loaded.trained, tokenizer=tok.name,
            prompt_ids=tuple(ids), prompt_tokens=tuple(tok.decode([i]) for i in ids),
            prompt_text=tok.decode(ids),
        ))
    reserved = len(ids) + max_new_tokens - 1

    def predict(tokens: int) -> int:
        """kvmem estimate for what the cache holds after ``tokens`` tokens, all samples."""
        if mode is CacheMode.NONE:
            return 0
        if mode is CacheMode.CONTIGUOUS:
            return int(estimate_cache_bytes(entry, reserved, batch=n))
        return int(estimate_cache_bytes(entry, tokens, block_size=block_size, batch=n))

    seqs: list[list[int]] = [list(ids) for _ in range(n)]
    steps: list[GenerationStep] = []

    def step_done(step: Step) -> None:
        seq = seqs[step.sample]
        if on_step is not None or explain:
            shown = _step(step, tok, seq, len(ids), predict(step.cache_tokens))
            if explain:
                steps.append(shown)
            if on_step is not None:
                on_step(shown)
        seq.append(step.token_id)

    result = run(
        loaded.model, ids, max_new_tokens=max_new_tokens, cache=mode, block_size=block_size,
        n=n, sampling=sampling, explain=explain, top_candidates=top_candidates,
        on_step=step_done,
    )
    return GenerateResult(
        model=entry.id,
        weights=loaded.weights,
        trained=loaded.trained,
        tokenizer=tok.name,
        prompt=prompt,
        prompt_ids=tuple(result.prompt_ids),
        cache=result.cache_mode,
        block_size=result.block_size,
        sampling=sampling,
        samples=tuple(GeneratedSample(tok.decode(s), tuple(s)) for s in result.samples),
        kv_cache=_cache_use(entry, result, n, estimate_cache_bytes),
        explain=explain,
        steps=tuple(steps),
    )


def _step(step: Step, tok: Tokenizer, seq: list[int], prompt_len: int, estimate: int
          ) -> GenerationStep:
    """A loop step with its tokens decoded; ``seq`` is the sample's ids before this one."""
    def piece(position: int) -> str | None:
        return tok.decode([seq[position]]) if position < len(seq) else None

    return GenerationStep(
        index=step.index,
        sample=step.sample,
        token_id=step.token_id,
        token=tok.decode([step.token_id]),
        prob=step.prob,
        top=tuple(Candidate(i, tok.decode([i]), p) for i, p in step.top),
        cache_tokens=step.cache_tokens,
        cache_bytes=step.cache_bytes,
        cache_blocks=step.cache_blocks,
        logical_blocks=step.logical_blocks,
        attention=tuple(
            AttentionFocus(f.layer, f.head, f.position, f.weight, piece(f.position))
            for f in step.focus
        ),
        text=tok.decode([*seq[prompt_len:], step.token_id]),
        estimate_bytes=estimate,
    )


def _cache_use(
    entry: ModelEntry, result: GenerationResult, n: int, estimate: Callable[..., int]
) -> KVCacheUse:
    """What the cache holds at the end, beside what ``kvmem estimate`` predicts for it."""
    tokens = result.cache_tokens
    held = KVCacheUse(
        tokens=tokens,
        bytes=result.cache_bytes,
        bytes_per_sample=result.cache_bytes_per_sample,
        blocks=result.cache_blocks,
        logical_blocks=result.logical_blocks,
        copy_on_write=result.copy_on_write,
        estimate_bytes=0,
        matches=True,
    )
    if result.cache_mode is CacheMode.NONE or tokens == 0:
        return held
    if result.cache_mode is CacheMode.CONTIGUOUS:
        # The contiguous cache reserves prompt + new tokens for every sample.
        reserved = result.cache_reserved_tokens
        predicted = int(estimate(entry, reserved, batch=n))
        return replace(held, estimate_bytes=predicted,
                       matches=predicted == result.cache_bytes, tokens_reserved=reserved)
    per_sample = int(estimate(entry, tokens, block_size=result.block_size))
    unshared = per_sample * n
    return replace(
        held,
        estimate_bytes=unshared,
        estimate_bytes_per_sample=per_sample,
        # One sample: exactly the estimate. n samples: less, by the shared prompt blocks.
        matches=result.cache_bytes == unshared if n == 1 else result.cache_bytes <= unshared,
        saved_by_sharing=unshared - result.cache_bytes,
    )
