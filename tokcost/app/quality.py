"""``kvmem quality``: what quantizing or evicting the KV cache costs a running model, scored
against the full cache (``tokcost.reference.kvpolicy``) and, on a GPU, what it lets fit."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from tokcost.errors import TokcostError, UsageError, Words, arg
from tokcost.parts import Parts
from tokcost.reference.from_catalog import Loaded, ModelSource
from tokcost.reference.request import as_int

if TYPE_CHECKING:
    from tokcost.catalog import Catalog, ModelEntry
    from tokcost.memory.cache_policy import CachePolicy
    from tokcost.reference.kvpolicy import PolicyQuality

__all__ = ["QualityRequest", "kvmem_quality"]

# Every family of policy once; eviction budgets are fractions of the text's length.
DEFAULT_POLICIES: tuple[str, ...] = (
    "fp8", "int8", "int4", "int4:per-token", "window:0.25", "streaming:4+0.25",
    "h2o:0.125+0.125", "snapkv:0.25+0.05")
HELD_OUT_SHARE = 0.1  # scripts/train_tiny_ref.py held out the last 10% of each file's lines
DEFAULT_TOKENS = 512  # at most: a longer default than the model trained on misleads
KIVI_RESIDUAL = 128  # KIVI's R (Liu et al. 2024, §4)


@dataclass(frozen=True, kw_only=True)
class Policies:
    """The cache policies (``parse_policy`` specs; None: the defaults) and quantizer settings."""

    policies: Sequence[str] | None = None
    residual: int | None = None  # None: KIVI's 128, at most a quarter of the text evaluated
    kv_group_size: int = 64
    chosen: tuple[CachePolicy, ...] = field(default=(), init=False)

    def __post_init__(self) -> None:
        from tokcost.memory.cache_policy import parse_policy
        given = [self.policies] if isinstance(self.policies, str) else self.policies or []
        specs = tuple(p.strip() for spec in given for p in spec.split(",") if p.strip())
        if self.policies is None or (given and not specs):  # None, or only commas: the default
            specs = DEFAULT_POLICIES
        residual = None if self.residual is None else as_int(self.residual, "residual")
        group = as_int(self.kv_group_size, "kv_group_size")
        chosen = tuple(parse_policy(p, residual=KIVI_RESIDUAL if residual is None else residual,
                                    group=group) for p in specs)
        if not chosen:
            raise UsageError("give at least one policy", param="policies")
        names = [c.name for c in chosen]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise UsageError(f"policy {twice[0]} is given twice", param="policies")
        for name, value in (("policies", specs), ("residual", residual),
                            ("kv_group_size", group), ("chosen", chosen)):
            object.__setattr__(self, name, value)


@dataclass(frozen=True, kw_only=True)
class QualityRequest(Parts):
    """Measure the ``cache_policies`` on the first ``max_tokens`` tokens (None: the length the
    model trained on, at most 512) of ``text`` (None: the held-out corpora) after ``prompt``;
    with ``gpu``, the ``context``-token sequences that fit."""

    source: ModelSource = field(default_factory=ModelSource)
    cache_policies: Policies = field(default_factory=Policies)
    text: str | Path | None = None
    max_tokens: int | None = None
    prompt: int | None = None
    gpu: str | None = None
    context: int | None = None
    plot: str | Path | None = None
    force: bool = False
    stdin: BinaryIO | None = field(default=None, compare=False)
    on_progress: Callable[[str], None] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        for name in ("max_tokens", "prompt", "context"):
            value = getattr(self, name)
            object.__setattr__(self, name, None if value is None else as_int(value, name))
        top = self.max_tokens
        if top is not None and top < 2:
            raise UsageError(f"{arg('max_tokens', top)} must be at least 2 (a prompt and one "
                             "prediction)", param="max_tokens", value=top)
        if self.prompt is not None and not 1 <= self.prompt < (top or self.prompt + 1):
            below = f" and below {arg('max_tokens', top)}, leaving one to predict" if top else ""
            raise UsageError(f"{arg('prompt', self.prompt)} must be at least 1{below}",
                             param="prompt", related=("max_tokens",), value=self.prompt)
        if self.context is not None and self.context < 1:
            raise UsageError(f"{arg('context', self.context)} must be positive",
                             param="context", value=self.context)
        if self.context is not None and self.gpu is None:
            raise UsageError(f"{arg('context')} sets the sequences planned on a GPU; give "
                             f"{arg('gpu')} with it", param="context", related=("gpu",))


@dataclass(frozen=True)
class QualityRow:
    policy: str
    quality: PolicyQuality
    concurrency: float | None = None  # sequences of `context` tokens on the GPU

    def to_dict(self) -> dict[str, Any]:
        q = self.quality
        return {"policy": self.policy, "perplexity": round(q.perplexity, 4),
                "perplexity_change": round(q.perplexity_change, 6),
                "top1_agreement": round(q.top1_agreement, 6), "mean_kl": round(q.mean_kl, 6),
                "bytes_held": q.bytes_held, "bytes_in_dtype": q.bytes_in_dtype[0],
                "bytes_ratio": round(q.bytes_ratio, 6),
                "concurrency": None if self.concurrency is None else round(self.concurrency, 2)}


@dataclass(frozen=True)
class QualityResult:
    """Every policy against the full cache; ``note_templates`` name parameters through
    placeholders, which ``render_notes`` spells in a caller's ``words``."""

    model: str
    text: str  # where the text came from
    tokens: int
    prompt: int
    baseline_perplexity: float
    baseline_bytes: int  # as run, in float32
    rows: tuple[QualityRow, ...]
    cache_dtype: str = "fp32"  # the model's own, which bytes and shares are counted in
    trained_tokens: int | None = None  # the sequence length the model trained on
    gpu: str | None = None
    context: int | None = None
    baseline_concurrency: float | None = None
    plot: Path | None = None
    note_templates: tuple[str, ...] = ()  # e.g. a quantized policy that quantized nothing
    warning_templates: tuple[str, ...] = ()  # e.g. a text longer than the model trained on

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(self.render_notes())

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(self.render_notes(warnings=True))

    def render_notes(self, words: Words | None = None, *, warnings: bool = False) -> list[str]:
        errors = (TokcostError(t, related=("residual", "max_tokens")) for t in
                  (self.warning_templates if warnings else self.note_templates))
        return [e.render(words) if words else e.render() for e in errors]

    def to_dict(self) -> dict[str, Any]:
        concurrency = self.baseline_concurrency
        return {
            "model": self.model, "text": self.text, "tokens": self.tokens, "prompt": self.prompt,
            "trained_tokens": self.trained_tokens, "cache_dtype": self.cache_dtype,
            "baseline": {"perplexity": round(self.baseline_perplexity, 4),
                         "bytes_held": self.baseline_bytes,
                         "bytes_in_dtype": self.rows[0].quality.bytes_in_dtype[1],
                         "concurrency": None if concurrency is None else round(concurrency, 2)},
            "gpu": self.gpu, "context": self.context, "policies": [r.to_dict() for r in self.rows],
            "plot": str(self.plot) if self.plot else None, "notes": list(self.notes),
            "warnings": list(self.warnings)}


def held_out_text() -> str:
    """The last 10% of the lines of every shipped prose corpus, English first."""
    from tokcost.inflation import builtin_dir
    files = sorted((builtin_dir() / "prose").glob("*.txt"), key=lambda p: (p.stem != "en", p.stem))
    texts = [path.read_text(encoding="utf-8").splitlines(keepends=True) for path in files]
    return "".join("".join(ls[max(1, int(len(ls) * (1 - HELD_OUT_SHARE))):]) for ls in texts)


def trained_length(loaded: Loaded) -> int:
    """The sequence length the model trained on: the ``training.seq`` its weights' report
    states (scripts/train_tiny_ref.py writes tiny_ref.json), else its context window (a
    checkpoint's max_position_embeddings)."""
    from tokcost.limits import loads_json
    report = Path(loaded.weights).with_suffix(".json")
    try:
        seq = loads_json(report.read_bytes()[:1 << 16])["training"]["seq"]
    except (OSError, ValueError, TypeError, KeyError):
        seq = None
    window = loaded.model.cfg.context_window
    return seq if loaded.folder is None and type(seq) is int and 0 < seq <= window else window


def kvmem_quality(request: QualityRequest) -> QualityResult:
    """Measure ``request``'s policies against the full cache (and plot them)."""
    from tokcost.memory.estimate import AUTO_KV
    from tokcost.memory.kv import KV_DTYPES
    from tokcost.plotting import check_plot_path
    from tokcost.reference.kvpolicy import evaluate, teacher_forced
    from tokcost.tokenizers import open_catalog
    target = Path(request.plot) if request.plot is not None else None
    check_plot_path(target, force=request.force)  # before any work
    loaded = request.source.load()
    entry, cfg = loaded.entry, loaded.model.cfg
    if not loaded.trained:
        raise TokcostError(f"model '{entry.id}' has no weights file; quality needs trained "
                           "weights (tiny-ref ships them)")
    if request.gpu is not None and cfg.slides:
        raise UsageError(f"model '{entry.id}' has sliding-window layers, and planning a GPU sizes "
                         f"full-attention layers only; leave out {arg('gpu')}", param="gpu")
    group = request.cache_policies.kv_group_size
    grouped = any(c.quant is not None and c.quant.grouped for c in request.cache_policies.chosen)
    if grouped and group < cfg.head_dim and cfg.head_dim % group:
        # Values are grouped over a head's channels (a larger group is one group of all).
        raise UsageError(f"{arg('kv_group_size', group)} must divide {entry.id}'s head_dim "
                         f"{cfg.head_dim}", param="kv_group_size", value=group)
    trained = trained_length(loaded)
    ids, source = _token_ids(request, loaded, request.max_tokens or min(DEFAULT_TOKENS, trained))
    dtype = AUTO_KV.get(entry.architecture.weights_dtype if entry.architecture else "", "bf16")
    first = request.prompt if request.prompt is not None else max(1, len(ids) // 8)
    plan = (_planner(loaded.entry, open_catalog(request.source.catalog), request.gpu,
                     request.context) if request.gpu is not None else None)  # before the work
    if request.on_progress:
        request.on_progress("full cache")
    base = teacher_forced(loaded.model, ids, prompt=first)
    planned, rows = request.cache_policies.chosen, []
    chosen = planned  # measured on the text; --gpu plans the policies as given (KIVI's 128)
    if request.cache_policies.residual is None:  # a short text would stay all in full precision
        short = min(KIVI_RESIDUAL, len(ids) // 4)
        chosen = tuple(replace(c, quant=replace(c.quant, residual=short))
                       if c.quant is not None and c.quant.residual else c for c in chosen)
    for p, as_given in zip(chosen, planned, strict=True):
        if request.on_progress:
            request.on_progress(p.name)
        try:
            q = evaluate(loaded.model, ids, prompt=first, quant=p.quant, evict=p.evict,
                         baseline=base)
        except TokcostError as exc:  # the memory model and the cache disagree: say which
            raise type(exc)(f"policy {p.name}: {exc.template}", param=exc.param,
                            related=exc.related, value=exc.value) from None
        q = replace(q, dtype_bytes=KV_DTYPES[dtype].bits // 8)
        rows.append(QualityRow(p.name, q, plan(as_given) if plan else None))
    held = len(ids) - 1
    past = (f"the {len(ids):,} tokens evaluated are past the {trained:,}-token sequences "
            f"{entry.id} trained on: the full cache is out of distribution there, so a policy that "
            f"forgets can score better; {arg('max_tokens', f'{trained:,}')} stays within them",)
    result = QualityResult(
        model=loaded.entry.id, text=source, tokens=len(ids), prompt=first,
        baseline_perplexity=base.perplexity, baseline_bytes=base.cache_bytes, rows=tuple(rows),
        gpu=plan.gpu if plan else None, context=plan.context if plan else None,
        baseline_concurrency=plan(None) if plan else None, plot=target, cache_dtype=dtype,
        trained_tokens=trained, warning_templates=past if len(ids) > trained else (),
        # A quantized policy whose every token stayed in full precision equals the full cache.
        note_templates=tuple(
            f"{c.name}: none of the {held:,} tokens were quantized (the last "
            f"{arg('residual', c.quant.residual)} stay in full precision; groups of "
            f"{c.quant.group}): its row equals the full cache"
            for c in chosen if c.quant is not None and c.quant.quantized_tokens(held) == 0))
    if target is not None:
        from tokcost.plotting.memory import plot_frontier
        plot_frontier(result, target)
    return result


def _token_ids(request: QualityRequest, loaded: Loaded, top: int) -> tuple[list[int], str]:
    """The first ``top`` ids of the text, and where it came from."""
    from tokcost.counting import read_input
    from tokcost.reference.from_catalog import load_tokenizer
    cfg = loaded.model.cfg
    tok = load_tokenizer(loaded.entry, cfg)
    if request.text is None:
        body, source = held_out_text(), "held-out corpora (last 10% of each prose file)"
    else:
        read = read_input(request.text, stdin=request.stdin)
        body, source = read.text, read.name
    if top > cfg.context_window:
        raise UsageError(f"{arg('max_tokens', f'{top:,}')} is past {loaded.entry.id}'s context "
                         f"window ({cfg.context_window:,} tokens); give at most that",
                         param="max_tokens", value=top)
    ids = tok.encode(body)[:top]
    if len(ids) < 2:
        raise UsageError(f"{source} has {len(ids)} token(s); give a longer {arg('text')}",
                         param="text")
    return ids, source


@dataclass(frozen=True)
class _Planner:
    """Sequences of ``context`` tokens a policy (None: the full cache) fits in the KV memory
    ``gpu`` leaves, for a served model's bf16 cache of this shape."""

    gpu: str
    context: int
    available: int
    shape: dict[str, int]  # layers, kv_heads, head_dim

    def __call__(self, policy: CachePolicy | None) -> float:
        if policy is None:
            return self.available / (self.context * 2 * 2 * math.prod(self.shape.values()))
        return self.available / policy.bytes(self.context, **self.shape, full_bytes=2)


def _planner(entry: ModelEntry, cat: Catalog, gpu: str, context: int | None) -> _Planner:
    from tokcost.memory import KvRequest, estimate_kv
    from tokcost.memory.kv import attention_shape
    arch = entry.architecture
    assert arch is not None
    if arch.attention.type != "full":
        raise UsageError(f"model '{entry.id}' has {arch.attention.type} attention; the cache "
                         f"policies plan full-attention layers only", param="gpu")
    ctx = context or entry.context_window or 8192
    gpu_entry = cat.resolve_gpu(gpu)
    # A served model holds its weights' dtype, not the reference's float32.
    est = estimate_kv(entry, KvRequest.of(contexts=[ctx], gpu=gpu_entry, kv_dtype="bf16"))
    assert est.fit is not None
    kv_heads, head_dim = attention_shape(arch, entry.id)
    return _Planner(gpu_entry.name, ctx, est.fit.available_bytes,
                    {"layers": arch.layers, "kv_heads": kv_heads, "head_dim": head_dim})
