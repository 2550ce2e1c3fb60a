"""The generate use case: continue a prompt with the numpy reference transformer and set
what its real KV cache holds beside what ``kvmem estimate`` predicts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from tokcost.errors import UsageError, arg
from tokcost.reference.config import CacheMode, CacheSpec
from tokcost.reference.from_catalog import ModelSource
from tokcost.reference.request import PromptRequest, as_int
from tokcost.reference.sampling import SamplingParams

if TYPE_CHECKING:
    from tokcost.reference.generate import GenerationResult, Step

__all__ = ["GenerateRequest", "generate"]

@dataclass(frozen=True)
class GenerationStart:
    """The model and the tokenized prompt (each id decoded alone, and all of them)."""

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


@dataclass(frozen=True, kw_only=True)
class GenerateRequest(PromptRequest):
    """Continue ``prompt`` with the ``source`` model; ``explain`` keeps every step, ``chat``
    sends the prompt through the checkpoint's chat template, and the sampling seed seeds
    random weights too. ``on_start`` and ``on_step`` let a caller watch."""

    kv: CacheSpec = field(default_factory=CacheSpec)
    sampling: SamplingParams = field(default_factory=SamplingParams)
    source: ModelSource = field(default_factory=ModelSource)
    explain: bool = False
    top_candidates: int = 5
    chat: bool = False
    on_start: Callable[[GenerationStart], None] | None = field(default=None, compare=False)
    on_step: Callable[[Step], None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        top = as_int(self.top_candidates, "top_candidates")
        if top < 1:
            raise UsageError(f"{arg('top_candidates')} must be >= 1, got {top}",
                             param="top_candidates", value=top)
        object.__setattr__(self, "top_candidates", top)
        if self.chat and not self.source.checkpoint:
            raise UsageError(f"{arg('chat')} needs a checkpoint's template: give a model folder "
                             "or an hf: model", param="chat")
        if self.source.seed is None and self.sampling.seed is not None:
            object.__setattr__(self, "source", replace(self.source, seed=self.sampling.seed))


@dataclass(frozen=True)
class GeneratedSample:
    text: str
    token_ids: tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class KVCacheUse:
    """What the cache held at the end, beside ``kvmem estimate`` for all samples unshared;
    the last three fields are one cache kind's (in the --json document's order)."""

    tokens: int
    bytes: int
    bytes_per_sample: int
    blocks: int | None
    logical_blocks: int | None
    copy_on_write: int | None
    estimate_bytes: int = 0
    estimate_bytes_per_sample: int | None = None
    matches: bool = True
    tokens_reserved: int | None = None
    saved_by_sharing: int | None = None

    def to_dict(self) -> dict[str, Any]:
        kind_only = ("estimate_bytes_per_sample", "tokens_reserved", "saved_by_sharing")
        return {k: v for k, v in asdict(self).items() if v is not None or k not in kind_only}


@dataclass(frozen=True)
class GenerateResult:
    """The samples, the cache they filled, and (explain) every step."""

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
    steps: tuple[Step, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "model": self.model, "weights": self.weights, "tokenizer": self.tokenizer,
            "prompt": self.prompt, "prompt_tokens": len(self.prompt_ids),
            "prompt_ids": list(self.prompt_ids), "cache": self.cache.value,
            "block_size": self.block_size, "sampling": {
                k: getattr(self.sampling, k) for k in ("temperature", "top_k", "top_p", "seed")},
            "samples": list(map(asdict, self.samples)), "kv_cache": self.kv_cache.to_dict()}
        if self.explain:
            data["steps"] = [step.to_dict() for step in self.steps]
        return data


def generate(request: GenerateRequest) -> GenerateResult:
    """Run ``request``: its samples, the KV cache they filled and (explain) every step."""
    from tokcost.reference.from_catalog import estimate_cache_bytes, input_ids, load_tokenizer
    from tokcost.reference.generate import check_fit
    from tokcost.reference.generate import generate as run
    loaded = request.source.load()
    prompt = request.text
    if request.chat:  # the request refused chat without a checkpoint
        from tokcost.reference.request import read_template, render
        assert loaded.folder is not None
        template, specials = read_template(loaded.folder)
        prompt = render(template, [{"role": "user", "content": prompt}], specials=specials)
    cfg = loaded.model.cfg
    tok = load_tokenizer(loaded.entry, cfg)
    ids = input_ids(tok, prompt, chat=request.chat)
    check_fit(cfg, ids, request.sampling, request.kv)
    if request.on_start is not None:
        request.on_start(GenerationStart(
            model=loaded.entry.id, weights=loaded.weights, trained=loaded.trained,
            tokenizer=tok.name, prompt_ids=tuple(ids),
            prompt_tokens=tuple(tok.decode([i]) for i in ids), prompt_text=tok.decode(ids),
            layers=cfg.layers, attention_heads=cfg.attention_heads, kv_heads=cfg.kv_heads))
    kv, n, steps = request.kv, request.sampling.n, []
    reserved = len(ids) + request.sampling.max_new_tokens - 1
    seqs = [list(ids) for _ in range(n)]  # each sample's ids before its newest token

    def watch(step: Step) -> None:  # each step decoded, beside kvmem estimate for its cache
        seq = seqs[step.sample]
        if request.on_step is not None or request.explain:
            tokens = reserved if kv.cache is CacheMode.CONTIGUOUS else step.cache_tokens
            block = kv.block_size if kv.cache is CacheMode.PAGED else None
            shown = replace(
                step, token=tok.decode([step.token_id]),
                top=tuple(replace(c, token=tok.decode([c.token_id])) for c in step.top),
                attention=tuple(replace(f, token=tok.decode([seq[f.position]])
                                        if f.position < len(seq) else None)
                                for f in step.attention),
                text=tok.decode([*seq[len(ids):], step.token_id]),
                estimate_bytes=0 if kv.cache is CacheMode.NONE
                else estimate_cache_bytes(loaded.entry, tokens, block_size=block, batch=n))
            if request.explain:
                steps.append(shown)
            if request.on_step is not None:
                request.on_step(shown)
        seq.append(step.token_id)

    result = run(loaded.model, ids, request.sampling, kv, explain=request.explain,
                 top_candidates=request.top_candidates, on_step=watch)
    return GenerateResult(
        model=loaded.entry.id, weights=loaded.weights, trained=loaded.trained,
        tokenizer=tok.name, prompt=prompt, prompt_ids=tuple(result.prompt_ids),
        cache=kv.cache, block_size=kv.block_size if kv.cache is CacheMode.PAGED else None,
        sampling=request.sampling,
        samples=tuple(GeneratedSample(tok.decode(s), tuple(s)) for s in result.samples),
        kv_cache=_cache_use(result, n, partial(estimate_cache_bytes, loaded.entry)),
        explain=request.explain, steps=tuple(steps))


def _cache_use(result: GenerationResult, n: int, estimate: Callable[..., int]) -> KVCacheUse:
    tokens, mode = result.cache_tokens, result.kv.cache
    held = KVCacheUse(tokens=tokens, bytes=result.cache_bytes,
                      bytes_per_sample=result.cache_bytes_per_sample,
                      blocks=result.cache_blocks, logical_blocks=result.logical_blocks,
                      copy_on_write=result.copy_on_write)
    if mode is CacheMode.NONE or tokens == 0:
        return held
    if mode is CacheMode.CONTIGUOUS:
        reserved = result.cache_reserved_tokens
        predicted = estimate(reserved, batch=n)
        return replace(held, estimate_bytes=predicted,
                       matches=predicted == result.cache_bytes, tokens_reserved=reserved)
    per_sample = estimate(tokens, block_size=result.kv.block_size)
    own = result.cache_bytes_per_sample
    # A sample holds the estimate (sliding layers: at most, the worst alignment counted).
    fits = own <= per_sample if result.sliding_window is not None else own == per_sample
    return replace(held, estimate_bytes=per_sample * n, estimate_bytes_per_sample=per_sample,
                   matches=fits and result.cache_bytes <= own * n,
                   saved_by_sharing=own * n - result.cache_bytes)
