"""``kvmem quality``: what quantizing or evicting the KV cache costs a running model.

Teacher-forced decoding of a held-out text on the reference model (tokcost.reference),
once with the full float32 cache and once per policy; each policy's perplexity,
top-1 agreement and KL divergence against the full cache, the bytes its cache really
held (equal to the memory model's ``policy_bytes``, which this checks), and, on a GPU,
how many sequences of a context length the saving lets the memory model fit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from tokcost.errors import TokcostError, UsageError

if TYPE_CHECKING:
    from tokcost.catalog import Catalog
    from tokcost.memory.cache_policy import CachePolicy
    from tokcost.reference.quality import PolicyQuality

__all__ = ["QualityResult", "QualityRow", "kvmem_quality"]

# Every family of policy once; eviction budgets are fractions of the text's length.
DEFAULT_POLICIES: tuple[str, ...] = (
    "fp8", "int8", "int4", "int4:per-token", "window:0.25", "streaming:4+0.25",
    "h2o:0.125+0.125", "snapkv:0.25+0.05",
)
HELD_OUT_SHARE = 0.1  # scripts/train_tiny_ref.py held out the last 10% of each file's lines


@dataclass(frozen=True)
class QualityRow:
    """One policy's quality and memory."""

    policy: str
    quality: PolicyQuality
    concurrency: float | None = None  # sequences of `context` tokens on the GPU

    def to_dict(self) -> dict[str, Any]:
        q = self.quality
        return {
            "policy": self.policy,
            "perplexity": round(q.perplexity, 4),
            "perplexity_change": round(q.perplexity_change, 6),
            "top1_agreement": round(q.top1_agreement, 6),
            "mean_kl": round(q.mean_kl, 6),
            "bytes_held": q.bytes_held,
            "bytes_ratio": round(q.bytes_ratio, 6),
            "concurrency": None if self.concurrency is None else round(self.concurrency, 2),
        }


@dataclass(frozen=True)
class QualityResult:
    model: str
    text: str  # where the text came from
    tokens: int
    prompt: int
    baseline_perplexity: float
    baseline_bytes: int
    rows: tuple[QualityRow, ...]
    gpu: str | None = None
    context: int | None = None
    baseline_concurrency: float | None = None
    plot: Path | None = None
    notes: tuple[str, ...] = ()  # e.g. a quantized policy that quantized nothing

    def to_dict(self) -> dict[str, Any]:
        """The ``kvmem quality --json`` document (keys in the README)."""
        return {
            "model": self.model,
            "text": self.text,
            "tokens": self.tokens,
            "prompt": self.prompt,
            "baseline": {
                "perplexity": round(self.baseline_perplexity, 4),
                "bytes_held": self.baseline_bytes,
                "concurrency": (None if self.baseline_concurrency is None
                                else round(self.baseline_concurrency, 2)),
            },
            "gpu": self.gpu,
            "context": self.context,
            "policies": [r.to_dict() for r in self.rows],
            "plot": str(self.plot) if self.plot else None,
            "notes": list(self.notes),
        }


def held_out_text() -> str:
    """The text no tiny-ref weight has seen: the last 10% of the lines of every shipped
    prose corpus (scripts/train_tiny_ref.py trained on the rest), English first."""
    from tokcost.inflation import builtin_dir

    folder = builtin_dir() / "prose"
    files = sorted(folder.glob("*.txt"), key=lambda p: (p.stem != "en", p.stem))
    parts = []
    for path in files:
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        cut = max(1, int(len(lines) * (1 - HELD_OUT_SHARE)))
        parts.append("".join(lines[cut:]))
    return "".join(parts)


def kvmem_quality(
    model: str = "tiny-ref",
    *,
    model_dir: str | Path | None = None,
    text: str | Path | None = None,
    max_tokens: int = 512,
    prompt: int | None = None,
    policies: Sequence[str] | None = None,
    residual: int = 128,
    kv_group_size: int = 64,
    gpu: str | None = None,
    context: int | None = None,
    catalog: str | Path | Catalog | None = None,
    plot: str | Path | None = None,
    force: bool = False,
    stdin: BinaryIO | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> QualityResult:
    """Evaluate cache ``policies`` (``tokcost.memory.cache_policy.parse_policy`` specs;
    None: ``DEFAULT_POLICIES``) on
    the first ``max_tokens`` tokens of ``text`` (a path, ``-`` for ``stdin``; default: the
    held-out part of the shipped prose corpora), prefilling ``prompt`` tokens (default
    an eighth). With ``gpu``, the sequences of ``context`` tokens (default: the model's
    window) each policy lets the memory model fit, against the full cache.

    ``model`` is a catalog model with weights (tiny-ref ships them) or ``hf:ORG/REPO``;
    ``model_dir`` a Hugging Face model folder (the reference path's loader: Llama, Qwen2/3,
    Mistral and Gemma families). On sliding-window layers each cache holds at most the
    window, as the full cache does; ``gpu`` planning sizes full-attention layers only, so
    it is refused for models with sliding layers.
    """
    from tokcost.counting import read_input
    from tokcost.memory.cache_policy import parse_policy
    from tokcost.reference.from_catalog import config_for, load_model, load_tokenizer
    from tokcost.reference.kvpolicy import policy_cache, policy_cache_bytes
    from tokcost.reference.quality import compare_policy, teacher_forced
    from tokcost.tokenizers import open_catalog

    if max_tokens < 2:
        raise UsageError(f"max_tokens={max_tokens} must be at least 2 (a prompt and one "
                         "prediction)", param="max_tokens")
    if prompt is not None and not 1 <= prompt < max_tokens:
        raise UsageError(f"prompt={prompt} must be at least 1 and below max_tokens="
                         f"{max_tokens}, leaving a token to predict", param="prompt")
    if context is not None and context < 1:
        raise UsageError(f"context={context} must be positive", param="context")
    if context is not None and gpu is None:
        raise UsageError("context sets the sequences planned on a GPU; give gpu with it",
                         param="context", related=("gpu",))
    chosen = [parse_policy(p, residual=residual, group=kv_group_size)
              for p in (DEFAULT_POLICIES if policies is None else policies)]
    if not chosen:
        raise UsageError("give at least one policy", param="policies")
    names = [c.name for c in chosen]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"policy {twice[0]} is given twice", param="policies")
    target = Path(plot) if plot is not None else None
    if target is not None:
        from tokcost.plotting import check_plot_path

        check_plot_path(target, force=force)  # before any work
    from tokcost.catalog.hf_model import is_hf_spec

    cat = open_catalog(catalog)
    if model_dir is not None or is_hf_spec(model):
        from tokcost.reference.from_catalog import load_checkpoint

        checkpoint = load_checkpoint(model_dir if model_dir is not None else model)
        entry, loaded = checkpoint.entry, checkpoint.loaded
        cfg = loaded.model.cfg
    else:
        entry = cat.resolve(model)
        cfg = config_for(entry)
        loaded = load_model(entry)
    if not loaded.trained:
        raise TokcostError(f"model '{entry.id}' has no weights file; quality needs trained "
                           "weights (tiny-ref ships them)")
    if gpu is not None and cfg.layer_types is not None and "sliding" in cfg.layer_types:
        # The reference caches handle sliding layers (each holds at most its window); the
        # GPU planner below sizes full-attention layers only.
        raise UsageError(f"model '{entry.id}' has sliding-window layers, and planning a GPU "
                         "sizes full-attention layers only; leave out gpu", param="gpu")
    grouped = any(c.quant is not None and c.quant.grouped for c in chosen)
    if grouped and kv_group_size < cfg.head_dim and cfg.head_dim % kv_group_size:
        # Values are grouped over a head's channels (a group past head_dim is one group of
        # them all); refused here, before any model work, not in the quantizer.
        raise UsageError(f"kv_group_size={kv_group_size} must divide {entry.id}'s head_dim "
                         f"{cfg.head_dim}", param="kv_group_size")
    tok = load_tokenizer(entry, cfg)
    source = "held-out corpora (last 10% of each prose file)"
    if text is None:
        body = held_out_text()
    else:
        read = read_input(text, stdin=stdin)
        body, source = read.text, read.name
    if max_tokens > cfg.context_window:
        raise UsageError(f"max_tokens={max_tokens:,} is past {entry.id}'s context window "
                         f"({cfg.context_window:,} tokens); give at most that",
                         param="max_tokens")
    ids = tok.encode(body)[:max_tokens]
    if len(ids) < 2:
        raise UsageError(f"{source} has {len(ids)} token(s); give a longer text", param="text")
    first = prompt if prompt is not None else max(1, len(ids) // 8)
    plan = _planner(entry, cat, gpu, context) if gpu is not None else None  # before the work
    if on_progress:
        on_progress("full cache")
    base = teacher_forced(loaded.model, ids, prompt=first)
    rows = []
    for policy in chosen:
        if on_progress:
            on_progress(policy.name)
        cache = policy_cache(cfg, quant=policy.quant, evict=policy.evict, prompt=first)
        quality = compare_policy(teacher_forced(loaded.model, ids, prompt=first, cache=cache),
                                 base)
        # The memory model's bytes per layer kind (a sliding layer holds at most its
        # window); None only where per-channel key groups straddle the window's edge.
        expected = policy_cache_bytes(cfg, len(ids) - 1, quant=policy.quant,
                                      evict=policy.evict, prompt=first)
        if expected is not None and expected != quality.bytes_held:  # they must agree
            raise TokcostError(f"policy {policy.name}: the cache held {quality.bytes_held:,} B "
                               f"but the memory model says {expected:,} B; please report it")
        rows.append(QualityRow(policy.name, quality, plan(policy) if plan else None))
    notes = tuple(_unquantized_note(c, len(ids) - 1) for c in chosen
                  if c.quant is not None and c.quant.quantized_tokens(len(ids) - 1) == 0)
    result = QualityResult(
        model=entry.id, text=source, tokens=len(ids), prompt=first,
        baseline_perplexity=base.perplexity, baseline_bytes=base.cache_bytes, rows=tuple(rows),
        gpu=plan.gpu if plan else None, context=plan.context if plan else None,
        baseline_concurrency=plan(None) if plan else None, plot=target, notes=notes,
    )
    if target is not None:
        from tokcost.plotting.quality import plot_frontier

        plot_frontier(result, target, force=force)
    return result


def _unquantized_note(policy: CachePolicy, tokens: int) -> str:
    """Why a quantized policy's row equals the full cache: every token it held was in the
    full-precision residual, or in a key group not yet whole."""
    quant = policy.quant
    assert quant is not None
    return (f"{policy.name}: none of the {tokens:,} tokens were quantized (the last "
            f"residual={quant.residual} stay in full precision; groups of {quant.group}): its "
            "row equals the full cache")


@dataclass(frozen=True)
class _Planner:
    """Sequences of ``context`` tokens that fit the KV memory a GPU leaves, per policy."""

    gpu: str
    context: int
    available: int
    layers: int
    kv_heads: int
    head_dim: int
    full_bytes: int

    def __call__(self, policy: CachePolicy | None) -> float:
        if policy is None:
            per_seq = self.context * 2 * self.layers * self.kv_heads * self.head_dim
            per_seq *= self.full_bytes
        else:
            per_seq = policy.bytes(self.context, layers=self.layers, kv_heads=self.kv_heads,
                                   head_dim=self.head_dim, full_bytes=self.full_bytes)
        return self.available / per_seq


def _planner(entry: Any, cat: Catalog, gpu: str, context: int | None) -> _Planner:
    from tokcost.memory import KvRequest, estimate_kv
    from tokcost.memory.kv import attention_shape

    arch = entry.architecture
    if arch.attention.type != "full":
        raise UsageError(f"model '{entry.id}' has {arch.attention.type} attention; the cache "
                         "policies plan full-attention layers only", param="gpu")
    ctx = context or entry.context_window or 8192
    gpu_entry = cat.resolve_gpu(gpu)
    # The reference cache holds float32; a served model would hold its weights' dtype.
    est = estimate_kv(entry, KvRequest.of(contexts=[ctx], gpu=gpu_entry, kv_dtype="bf16"))
    assert est.fit is not None
    kv_heads, head_dim = attention_shape(arch, entry.id)
    return _Planner(gpu_entry.name, ctx, est.fit.available_bytes, arch.layers, kv_heads,
                    head_dim, 2)
