"""The generate use case: continue a prompt with the numpy reference transformer.

``generate`` resolves the catalog model, builds it (shipped or given weights, else
seeded random ones), tokenizes the prompt, runs the loop with a real KV cache and
sets what the cache holds beside what ``kvmem estimate`` predicts. Callbacks let a
caller watch: ``on_start`` once the prompt is tokenized, ``on_step`` at every new
token (the CLI streams text and draws ``--explain`` from them). Nothing is printed.

>>> Candidate(token_id=448, token=" the", prob=0.9617, model_prob=0.9051234567).to_dict()
{'token_id': 448, 'token': ' the', 'prob': 0.9617, 'model_prob': 0.905123, 'excluded': None}
>>> decode_prompt("café ".encode() + bytes([255])).invalid_utf8_bytes
1
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokcost.errors import InputError, UsageError
from tokcost.reference.config import CacheMode
from tokcost.tokenizers import open_catalog

if TYPE_CHECKING:
    from tokcost.adapters.base import Tokenizer
    from tokcost.catalog import CatalogSource, ModelEntry
    from tokcost.reference import GenerationResult, SamplingParams, Step

__all__ = [
    "AttentionFocus",
    "CacheEvent",
    "CacheMode",
    "Candidate",
    "GenerateResult",
    "GeneratedSample",
    "GenerationStart",
    "GenerationStep",
    "KVCacheUse",
    "PromptText",
    "decode_prompt",
    "generate",
]


@dataclass(frozen=True)
class PromptText:
    """A prompt read from bytes: its text, and how many bytes were not UTF-8."""

    text: str
    invalid_utf8_bytes: int = 0


def decode_prompt(data: bytes, *, source: str = "stdin") -> PromptText:
    """Bytes as a prompt, by the input policy every command keeps: invalid UTF-8 is
    replaced by U+FFFD (and counted, for the caller to report); binary data (a NUL
    byte, as git decides) is refused, since its "text" would be noise."""
    from tokcost.counting import SNIFF_BYTES, sniff_binary

    binary = sniff_binary(data[:SNIFF_BYTES])
    if binary is not None:
        raise InputError(f"{source} is {binary}, not text; give the prompt as text")
    text = data.decode("utf-8", errors="replace")
    if "\ufffd" not in text:
        return PromptText(text)
    # "replace" gives one U+FFFD per bad sequence; surrogateescape one per bad byte.
    escaped = data.decode("utf-8", errors="surrogateescape")
    return PromptText(text, sum(1 for c in escaped if "\udc80" <= c <= "\udcff"))


@dataclass(frozen=True)
class Candidate:
    """One of the likeliest next tokens at a step.

    ``prob`` is its probability in the distribution the step sampled from (after
    temperature, top_k and top_p, renormalized); ``excluded`` says why it could not be
    drawn (``top_k``, ``top_p``, ``greedy``, or ``zero`` for a probability that rounds
    to 0), and its ``prob`` is then 0. ``model_prob`` is the model's softmax.
    """

    token_id: int
    token: str
    prob: float
    model_prob: float
    excluded: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"token_id": self.token_id, "token": self.token, "prob": round(self.prob, 6),
                "model_prob": round(self.model_prob, 6), "excluded": self.excluded}


@dataclass(frozen=True)
class CacheEvent:
    """A block of the paged cache allocated, shared, copied on write or freed, as it happened.

    ``sample`` is None for the prompt's blocks; ``block`` is the logical index in the
    sample's block table, ``physical`` the pool's block id; ``position`` the first
    position written (``share``: the prompt's length). ``copy_on_write`` copies
    ``source``, which keeps ``holders`` holders; ``share`` leaves ``holders`` on it;
    ``free``: the block left the window of the query at ``position`` and ``holders``
    references are left (0: back in the pool). ``group`` is the KV cache group whose
    block table changed (``full`` or ``sliding`` layers).
    """

    kind: str
    sample: int | None
    block: int
    physical: int
    position: int
    source: int | None = None
    holders: int = 1
    group: str = "full"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


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

    ``prob`` is the chosen token's probability in the distribution it was drawn from
    (greedy: 1), never 0; ``model_prob`` its probability in the model's softmax;
    ``candidates`` how many tokens the draw could pick. ``top`` lists the likeliest
    tokens (and the chosen one, wherever it ranks). ``events`` are the paged cache's
    block events of the forward pass behind this step. ``text`` is the sample's new
    text so far (ends in U+FFFD while a character is incomplete); ``estimate_bytes`` is
    what ``kvmem estimate`` predicts for the cache at this step (0 without a cache).
    """

    index: int
    sample: int
    token_id: int
    token: str
    prob: float
    model_prob: float
    greedy: bool
    candidates: int
    top: tuple[Candidate, ...]
    cache_tokens: int
    cache_bytes: int
    cache_blocks: int | None
    logical_blocks: int | None
    attention: tuple[AttentionFocus, ...]
    text: str
    estimate_bytes: int
    events: tuple[CacheEvent, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "sample": self.sample,
            "token_id": self.token_id,
            "token": self.token,
            "prob": round(self.prob, 6),
            "model_prob": round(self.model_prob, 6),
            "candidates": self.candidates,
            "top": [c.to_dict() for c in self.top],
            "cache_tokens": self.cache_tokens,
            "cache_bytes": self.cache_bytes,
            "cache_blocks": self.cache_blocks,
            "cache_events": [e.to_dict() for e in self.events],
            "attention": [a.to_dict() for a in self.attention],
        }


@dataclass(frozen=True)
class GenerationStart:
    """The model and prompt, once tokenized and before the first token.

    ``prompt_tokens`` is each prompt id decoded alone; ``prompt_text`` all of them
    decoded together (what a stream echoes before the new text). ``layers``,
    ``attention_heads`` (query heads) and ``kv_heads`` are the model's shape: with
    grouped-query attention, query head h reads KV head h // (attention_heads / kv_heads).
    """

    model: str
    weights: str
    trained: bool
    tokenizer: str
    prompt_ids: tuple[int, ...]
    prompt_tokens: tuple[str, ...]
    prompt_text: str
    layers: int = 0
    attention_heads: int = 0
    kv_heads: int = 0


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
    catalog: CatalogSource = None,
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
    model_dir: str | Path | None = None,
    chat: bool = False,
    on_start: Callable[[GenerationStart], None] | None = None,
    on_step: Callable[[GenerationStep], None] | None = None,
) -> GenerateResult:
    """Continue ``prompt`` with catalog ``model``: ``n`` samples of ``max_new_tokens``.

    ``temperature`` 0 is greedy; ``top_k`` 0 and ``top_p`` 1 switch those filters off;
    ``seed`` makes sampling repeatable and seeds random weights (a model without
    trained ``weights``). ``explain`` records every step with its ``top_candidates``
    and where each head attends. ``cache`` is ``none`` (recompute), ``contiguous`` or
    ``paged`` (blocks of ``block_size`` tokens, the prompt's shared by the samples).
    ``model_dir`` (a Hugging Face model folder) or ``model`` ``hf:ORG/REPO`` runs a real
    checkpoint (tokcost.reference.hf_checkpoint); ``chat`` then sends ``prompt`` as one
    user message through the checkpoint's chat template.
    """
    from tokcost.reference import SamplingParams
    from tokcost.reference import generate as run
    from tokcost.reference.from_catalog import (
        estimate_cache_bytes,
        input_ids,
        load_checkpoint,
        load_model,
        load_tokenizer,
    )
    from tokcost.reference.generate import check_request

    mode = CacheMode.parse(cache)
    if top_candidates < 1:
        raise UsageError(
            f"top_candidates must be >= 1, got {top_candidates}", param="top_candidates"
        )
    # The cheap checks first: a bad seed must not wait for (or break) the weights.
    sampling = SamplingParams(temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
    check_prompt_text(prompt)
    from tokcost.catalog.hf_model import is_hf_spec

    if model_dir is not None or is_hf_spec(model):
        if weights is not None:
            raise UsageError("weights cannot replace a checkpoint's own; give weights only "
                             "with a catalog model", param="weights")
        checkpoint = load_checkpoint(model_dir if model_dir is not None else model)
        entry, loaded = checkpoint.entry, checkpoint.loaded
    else:
        if chat:
            raise UsageError("chat needs a checkpoint's template: give a model folder or "
                             "an hf: model", param="chat")
        entry = open_catalog(catalog).resolve(model)
        loaded = load_model(entry, weights=weights, seed=seed or 0)
    if chat:
        from tokcost.reference.chat_template import read_template, render

        template, specials = read_template(checkpoint.folder)
        prompt = render(template, [{"role": "user", "content": prompt}], specials=specials)
    cfg = loaded.model.cfg
    tok = load_tokenizer(entry, cfg)
    ids = input_ids(tok, prompt, chat=chat)
    check_request(cfg, ids, max_new_tokens=max_new_tokens, cache=mode, block_size=block_size,
                  n=n)
    if on_start is not None:
        on_start(GenerationStart(
            model=entry.id, weights=loaded.weights, trained=loaded.trained, tokenizer=tok.name,
            prompt_ids=tuple(ids), prompt_tokens=tuple(tok.decode([i]) for i in ids),
            prompt_text=tok.decode(ids), layers=cfg.layers,
            attention_heads=cfg.attention_heads, kv_heads=cfg.kv_heads,
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


def check_prompt_text(prompt: str) -> None:
    """A str that is not Unicode text (lone surrogates, as from undecodable bytes)."""
    try:
        prompt.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"the prompt is not valid text (a lone surrogate at character {exc.start}); "
            "read bytes with decode_prompt, which replaces invalid UTF-8"
        ) from None


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
        model_prob=step.model_prob,
        greedy=step.greedy,
        candidates=step.candidates,
        top=tuple(Candidate(c.token_id, tok.decode([c.token_id]), c.prob, c.model_prob,
                            c.excluded) for c in step.top),
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
        events=tuple(CacheEvent(e.kind, e.sequence, e.block, e.physical, e.position, e.source,
                                e.holders, e.group) for e in step.events),
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
    own = result.cache_bytes_per_sample
    # One sample's blocks: exactly the estimate; with sliding layers at most it (the
    # estimate counts the window's worst alignment on blocks). n samples hold less than
    # n of them, by the shared prompt blocks.
    fits = own <= per_sample if result.sliding_window is not None else own == per_sample
    return replace(
        held,
        estimate_bytes=unshared,
        estimate_bytes_per_sample=per_sample,
        matches=fits and result.cache_bytes <= own * n,
        saved_by_sharing=own * n - result.cache_bytes,
    )
