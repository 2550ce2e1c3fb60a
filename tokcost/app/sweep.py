"""Use case ``bpe sweep``: one training gives every vocabulary size, each measured beside the
reference tokenizers on held-out text (the costs' formulas: docs/bpe.md)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from tokcost.app import names
from tokcost.app.bpe import train_inputs
from tokcost.bpe.pretokenize import PatternName
from tokcost.bpe.train import KNEE_GAIN, TrainerConfig, check_sizes, knee, prefix_model, usage
from tokcost.counting import Skipped, input_warnings, load_input
from tokcost.errors import InputError, TokcostError, UsageError, arg
from tokcost.parts import Parts
from tokcost.plotting import check_plot_path
from tokcost.runner import LocalRunner
from tokcost.tokenizers import open_catalog, resolve_tokenizers
from tokcost.units import parse_count

if TYPE_CHECKING:
    from tokcost.bpe.model import BPEModel
    from tokcost.bpe.train import ProgressFn
    from tokcost.catalog import CatalogSource
    from tokcost.catalog.schema import Architecture

__all__ = ["BPESweepRequest", "sweep_bpe"]

DEFAULT_HIDDEN = 4096
MAX_HIDDEN = 1 << 20  # a typo guard: the widest models are ~25k
KNEE_RULE = ("the first size whose next step cuts tokens per byte by less than {gain:g}% "
             "per doubling")
_FORMULAS = {  # the cost formulas, per cost scope
    "layer": "attention FLOPs = 4 x hidden x P(P+1)/2; KV bytes = 2 x hidden x 2 x P (MHA, bf16), "
             "per layer",
    "model": "tokcost.memory: attention_flops of the causal document; kv_cache_bytes in bf16"}


@dataclass(frozen=True, kw_only=True)
class BPESweepRequest(Parts):
    """Train once at the largest of ``vocab_sizes``, measure every size on ``held_out`` (files,
    or a parallel folder) beside ``tokenizers``; the width: ``hidden`` or ``model``'s."""

    files: tuple[str, ...]
    vocab_sizes: tuple[int | str, ...]
    held_out: tuple[str, ...]
    tokenizers: tuple[str, ...] = ("tiktoken:o200k_base",)
    hidden: int | None = None
    model: str | None = None
    tied: bool = False
    pattern: PatternName | str = PatternName.O200K
    special_tokens: tuple[str, ...] = ()
    jobs: int = 1
    knee_gain: float = KNEE_GAIN
    plot: Path | None = None
    force: bool = False
    catalog: CatalogSource = None
    stdin: BinaryIO | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("files", "held_out", "tokenizers"):
            object.__setattr__(self, name, names(getattr(self, name)))
        if self.plot is not None:
            object.__setattr__(self, "plot", Path(self.plot))
        if isinstance(self.hidden, str):
            object.__setattr__(self, "hidden", parse_count(self.hidden, param="hidden"))
        _ = self.trainer  # the sizes and the training settings, checked now
        knee(self.sizes[:1], [1.0], self.knee_gain)  # a bad gain, before the training
        if self.hidden is not None and self.model is not None:
            raise UsageError(f"give the width as {arg('hidden')} or as a catalog model, not both",
                             param="hidden")
        if self.hidden is not None and not 1 <= self.hidden <= MAX_HIDDEN:
            raise UsageError(f"{arg('hidden', self.hidden)} must be between 1 and "
                             f"{MAX_HIDDEN:,}", param="hidden")

    @cached_property
    def sizes(self) -> tuple[int, ...]:
        return check_sizes([parse_count(s, param="vocab_sizes", minimum=1, maximum=0x110000)
                            for s in self.vocab_sizes], len(dict.fromkeys(self.special_tokens)))

    @cached_property
    def trainer(self) -> TrainerConfig:
        return TrainerConfig(vocab_size=self.sizes[-1], pattern=self.pattern,
                             special_tokens=self.special_tokens, jobs=self.jobs)


@dataclass(frozen=True)
class SweepDocument:
    name: str
    bytes: int
    chars: int
    text: str = field(repr=False, default="")


@dataclass(frozen=True)
class _Width:
    hidden: int
    tied: bool
    model: str | None
    arch: Architecture | None

    def to_dict(self) -> dict[str, Any]:
        scope = "layer" if self.arch is None else "model"
        return {"hidden_size": self.hidden, "tied": self.tied, "model": self.model,
                "layers": self.arch.layers if self.arch else None, "cost_scope": scope,
                "cost_formula": _FORMULAS[scope]}

    # A document's cost (0 for an empty one): per layer without a catalog model.
    def attention_flops(self, tokens: int) -> int:
        if self.arch is None or not tokens:
            return 2 * self.hidden * tokens * (tokens + 1)
        from tokcost.memory.roofline import attention_flops
        return attention_flops(self.arch, new_tokens=tokens)

    def kv_bytes(self, tokens: int) -> int:
        if self.arch is None or not tokens:
            return 4 * self.hidden * tokens
        from tokcost.memory import kv_cache_bytes
        return kv_cache_bytes(self.arch, tokens, "bf16")


@dataclass(frozen=True)
class BPESweepPoint:
    """One vocabulary on the held-out text, a size or a reference tokenizer (no ``unused``);
    ``tokens`` per document; ``exhausted``: the corpus ran out of pairs below this size."""

    label: str
    vocab_size: int
    tokens: tuple[int, ...]
    bytes: int
    chars: int
    vs_reference: float | None
    embedding_params: int
    output_params: int
    attention_flops_per_document: float
    kv_bytes_per_document: float
    spec: str | None = None
    exact: bool = True
    requested_vocab_size: int | None = None
    merges: int | None = None
    exhausted: bool = False
    unused: int | None = None
    unused_learned: int | None = None
    learned: int | None = None

    @property
    def total_tokens(self) -> int:
        return sum(self.tokens)

    @property
    def tokens_per_byte(self) -> float:
        return self.total_tokens / self.bytes if self.bytes else 0.0

    @property
    def tokens_per_char(self) -> float:
        return self.total_tokens / self.chars if self.chars else 0.0

    @property
    def unused_share(self) -> float | None:
        unused, learned = self.unused, self.learned
        return None if unused is None or learned is None else unused / (learned + 256)

    @property
    def unused_learned_share(self) -> float | None:
        unused, learned = self.unused_learned, self.learned
        return None if unused is None or not learned else unused / learned

    def to_dict(self, documents: Sequence[SweepDocument]) -> dict[str, Any]:
        def ratio(x: float | None) -> float | None:
            return None if x is None else round(x, 6)
        return {"label": self.label, "spec": self.spec, "exact": self.exact,
                "vocab_size": self.vocab_size, "requested_vocab_size": self.requested_vocab_size,
                "merges": self.merges, "exhausted": self.exhausted, "tokens": self.total_tokens,
                "tokens_per_byte": ratio(self.tokens_per_byte),
                "tokens_per_char": ratio(self.tokens_per_char),
                "vs_reference": ratio(self.vs_reference),
                "embedding_params": self.embedding_params, "output_params": self.output_params,
                "attention_flops_per_document": round(self.attention_flops_per_document),
                "kv_bytes_per_document": round(self.kv_bytes_per_document),
                "unused": self.unused, "unused_share": ratio(self.unused_share),
                "unused_learned_share": ratio(self.unused_learned_share), "documents": [
                    {"name": d.name, "tokens": n,
                     "tokens_per_byte": ratio(n / d.bytes if d.bytes else 0.0),
                     "tokens_per_char": ratio(n / d.chars if d.chars else 0.0)}
                    for d, n in zip(documents, self.tokens, strict=True)]}


@dataclass(frozen=True, kw_only=True)
class BPESweepResult:
    """A point per size (``vs_reference``: over ``references[0]``), the references, the knee
    (a size or None); ``notes`` name parameters through placeholders."""

    sizes: tuple[BPESweepPoint, ...]
    references: tuple[BPESweepPoint, ...]
    documents: tuple[SweepDocument, ...]
    width: _Width
    knee: int | None
    knee_gain: float
    trained_vocab_size: int
    distinct_pretokens: int
    total_pretokens: int
    seconds_train: float
    seconds: float
    plot: Path | None = None
    notes: tuple[TokcostError, ...] = ()
    skipped: tuple[Skipped, ...] = ()

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(map(str, self.notes))

    def to_dict(self) -> dict[str, Any]:
        docs = self.documents
        return {
            "trained_vocab_size": self.trained_vocab_size,
            "distinct_pretokens": self.distinct_pretokens, "total_pretokens": self.total_pretokens,
            "seconds_train": round(self.seconds_train, 3), "seconds": round(self.seconds, 3),
            "eval": {"documents": [{"name": d.name, "bytes": d.bytes, "chars": d.chars}
                                   for d in docs],
                     "bytes": sum(d.bytes for d in docs), "chars": sum(d.chars for d in docs)},
            "width": self.width.to_dict(),
            "reference": self.references[0].label if self.references else None,
            "sizes": [p.to_dict(docs) for p in self.sizes],
            "references": [p.to_dict(docs) for p in self.references],
            "knee": {"vocab_size": self.knee, "gain": self.knee_gain,
                     "rule": KNEE_RULE.format(gain=self.knee_gain * 100)},
            "plot": str(self.plot) if self.plot else None,
            "skipped": list(map(asdict, self.skipped)), "warnings": list(self.warnings)}


def _documents(sources: Sequence[str], stdin: BinaryIO | None,
               skipped: list[Skipped]) -> tuple[list[SweepDocument], list[str]]:
    if not sources:
        raise UsageError(f"give held-out text to measure on ({arg('held_out')}): files or a "
                         f"parallel folder", param="held_out")
    docs: list[SweepDocument] = []
    notes: list[str] = []
    if len(sources) == 1 and Path(sources[0]).is_dir():
        from tokcost.inflation import load_dir
        folder = Path(sources[0])
        try:
            groups = load_dir(folder, skipped=skipped)
        except (UsageError, InputError) as exc:
            # A sweep needs no baseline: a folder without en takes its first language.
            stems = sorted(p.stem for p in folder.glob("*.txt"))
            if exc.param != "baseline" or not stems:
                raise
            groups = load_dir(folder, baseline=stems[0], skipped=skipped)
        for group in groups:
            notes += [w for w in group.warnings if not w.startswith("not parallel")]
            docs += [SweepDocument(s.code, len(s.text.encode("utf-8", "surrogatepass")),
                                   len(s.text), s.text) for s in group.samples]
    else:
        for source in dict.fromkeys(sources):
            if Path(source).is_dir():
                raise UsageError(f"{source} is a folder; give it alone, or give files",
                                 param="held_out")
            read = load_input(source, stdin=stdin)
            if isinstance(read, Skipped):
                skipped.append(read)
                continue
            notes += read.warnings
            if read.text:
                docs.append(SweepDocument(read.name, read.bytes, len(read.text), read.text))
    if not docs:
        raise InputError("no held-out text to measure on: every eval input was empty or skipped")
    return docs, notes


@dataclass(frozen=True)
class _Ruler:
    docs: tuple[SweepDocument, ...]
    width: _Width
    ref_total: int

    def point(self, label: str, vocab: int, tokens: Sequence[int], **more: Any) -> BPESweepPoint:
        h, width, n = self.width.hidden, self.width, len(tokens)
        return BPESweepPoint(
            label=label, vocab_size=vocab, tokens=tuple(tokens),
            bytes=sum(d.bytes for d in self.docs), chars=sum(d.chars for d in self.docs),
            vs_reference=(sum(tokens) / self.ref_total) if self.ref_total else None,
            embedding_params=vocab * h, output_params=0 if width.tied else vocab * h,
            attention_flops_per_document=sum(map(width.attention_flops, tokens)) / n,
            kv_bytes_per_document=sum(map(width.kv_bytes, tokens)) / n, **more)

    def size(self, full: BPEModel, size: int) -> BPESweepPoint:
        sub = prefix_model(full, size)
        used = usage(sub, [d.text for d in self.docs])
        return self.point(f"bpe-{size}", sub.n_tokens, used.tokens, requested_vocab_size=size,
                          merges=len(sub.merges), exhausted=sub.n_tokens < size,
                          unused=used.unused, unused_learned=used.unused_learned,
                          learned=used.learned)


def sweep_bpe(request: BPESweepRequest, progress: ProgressFn | None = None) -> BPESweepResult:
    """Train once, then measure every size and reference tokenizer on the held-out text."""
    t0 = time.perf_counter()
    width = _Width(request.hidden or DEFAULT_HIDDEN, request.tied, None, None)
    if request.model is not None:
        entry = open_catalog(request.catalog).resolve(request.model)
        arch = entry.architecture
        if arch is None or arch.hidden_size is None:
            raise UsageError(f"{arg('model')} '{entry.id}' has no architecture.hidden_size in the "
                             f"catalog; give {arg('hidden', 'N')} instead", param="model",
                             related=("hidden",))
        width = _Width(arch.hidden_size, request.tied, entry.id, arch)
    check_plot_path(request.plot, force=request.force)
    choices = resolve_tokenizers(list(request.tokenizers), catalog=request.catalog, default=None)
    skipped: list[Skipped] = []
    docs, notes = _documents(request.held_out, request.stdin, skipped)
    runner = LocalRunner(request.jobs, processes=True)
    trained = train_inputs(request.files, request.trainer, runner, progress, stdin=request.stdin)
    # The reference tokenizers (and the model's, where it loads), counted on every document.
    loaded = [(choice, choice.load()) for choice in choices]
    if width.model is not None and all(c.label != width.model for c in choices):
        mine = resolve_tokenizers([f"model:{width.model}"], catalog=request.catalog)[0]
        try:
            loaded.append((mine, mine.load()))
        except TokcostError as exc:
            notes.append(f"{width.model}'s tokenizer is left out of the references: {exc}")
    refs = [(c, tok.vocab_size, [tok.count(d.text) for d in docs]) for c, tok in loaded]
    ruler = _Ruler(tuple(docs), width, sum(refs[0][2]) if refs else 0)
    references = tuple(ruler.point(c.label, v, counts, spec=c.spec, exact=c.exact)
                       for c, v, counts in refs)
    points = [ruler.size(trained.model, size) for size in request.sizes]
    distinct = [p for p in points if not p.exhausted]
    found = knee([p.vocab_size for p in distinct], [p.tokens_per_byte for p in distinct],
                 request.knee_gain)
    skipped = list(trained.skipped) + skipped
    warnings = input_warnings(skipped, trained.invalid_utf8_bytes.items()) + tuple(notes)
    all_notes = list(map(TokcostError, warnings))
    if trained.exhausted:
        same = ", ".join(str(p.requested_vocab_size) for p in points if p.exhausted)
        all_notes.append(TokcostError(
            f"the corpus ran out of pairs at {trained.model.n_tokens} tokens: {arg('vocab_sizes')} "
            f"{same} are that vocabulary; train on more text", related=("vocab_sizes",)))
    result = BPESweepResult(
        sizes=tuple(points), references=references, documents=tuple(docs), width=width,
        knee=next((p.requested_vocab_size for p in distinct if p.vocab_size == found), None),
        knee_gain=request.knee_gain, trained_vocab_size=trained.model.n_tokens,
        distinct_pretokens=trained.distinct_pretokens, total_pretokens=trained.total_pretokens,
        seconds_train=trained.seconds_pretokenize + trained.seconds_merge,
        seconds=time.perf_counter() - t0, plot=request.plot, skipped=tuple(skipped),
        notes=tuple(all_notes))
    if request.plot is not None:
        from tokcost.plotting import plot_sweep
        plot_sweep(distinct or points[:1], references, request.plot, knee=result.knee,
                   knee_rule=KNEE_RULE.format(gain=request.knee_gain * 100),
                   width=f"hidden {width.hidden:,}{', tied' if width.tied else ''}")
    return result
