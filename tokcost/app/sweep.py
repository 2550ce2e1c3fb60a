"""Use case ``bpe sweep``: which vocabulary size for this corpus and this model width?

One training at the largest size gives every smaller vocabulary (``tokcost.bpe.sweep``:
BPE's prefix property). Each size is measured on held-out text: tokens per byte and per
character (per document: per language for a parallel folder), the sequence length
against a reference tokenizer, the embedding and output-layer parameters at a model
width, the attention FLOPs and KV-cache bytes a document's sequence costs, and the
share of the vocabulary the held-out text never uses. Reference tokenizers (tiktoken
encodings, catalog models' tokenizers) are measured the same way, as points on the
same axes.

Costs per document
    With a catalog model (``model``): ``tokcost.memory.roofline.attention_flops`` of
    the causal document (whole model) and ``tokcost.memory.kv_cache_bytes`` in bf16.
    With only ``hidden`` they are per layer, for multi-head attention of that width
    in bf16: ``attention FLOPs = 4 x hidden x P (P + 1) / 2`` (QK^T and PV, a
    multiply-add each, over the causal prompt's keys) and ``KV bytes = 2 x hidden x
    2 x P`` (K and V, two bytes an element), for a document of ``P`` tokens.
    Embedding parameters are ``vocab x hidden``; the output layer is as many again,
    or none when it is tied to the embedding (``tied``; the catalog does not record
    tying, so it is the caller's word).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from tokcost import bpe
from tokcost.bpe import TrainerConfig
from tokcost.bpe.sweep import KNEE_GAIN, check_sizes, knee, prefix_model, usage
from tokcost.counting import Skipped, TrainingInputs, input_warnings, load_input
from tokcost.errors import InputError, TokcostError, UsageError
from tokcost.runner import LocalRunner
from tokcost.tokenizers import open_catalog, resolve_tokenizers
from tokcost.units import parse_count

if TYPE_CHECKING:
    from tokcost.bpe.train import ProgressFn
    from tokcost.catalog import Catalog
    from tokcost.catalog.schema import Architecture

__all__ = ["BPE_KNEE_GAIN", "BPESweepPoint", "BPESweepResult", "sweep_bpe"]

#: The model width when neither ``hidden`` nor ``model`` is given.
DEFAULT_HIDDEN = 4096
#: The widest ``hidden`` accepted (a typo guard; the widest models are ~25k).
MAX_HIDDEN = 1 << 20
#: The knee's default threshold (``tokcost.bpe.sweep.KNEE_GAIN``): 5% per doubling.
BPE_KNEE_GAIN = KNEE_GAIN
KNEE_RULE = ("the first size whose next step cuts tokens per byte by less than {gain:g}% "
             "per doubling")


@dataclass(frozen=True)
class SweepDocument:
    """One held-out text: a language of a parallel folder, or a file."""

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
        if self.arch is None:
            scope, formula = "layer", ("attention FLOPs = 4 x hidden x P(P+1)/2; KV bytes = "
                                       "2 x hidden x 2 x P (MHA, bf16), per layer")
        else:
            scope, formula = "model", ("tokcost.memory: attention_flops of the causal "
                                       "document; kv_cache_bytes in bf16")
        return {"hidden_size": self.hidden, "tied": self.tied, "model": self.model,
                "layers": self.arch.layers if self.arch else None, "cost_scope": scope,
                "cost_formula": formula}

    def attention_flops(self, tokens: int) -> int:
        if tokens <= 0:
            return 0
        if self.arch is None:
            return 2 * self.hidden * tokens * (tokens + 1)
        from tokcost.memory.roofline import attention_flops

        return attention_flops(self.arch, new_tokens=tokens)

    def kv_bytes(self, tokens: int) -> int:
        if tokens <= 0:
            return 0
        if self.arch is None:
            return 4 * self.hidden * tokens
        from tokcost.memory import kv_cache_bytes

        return kv_cache_bytes(self.arch, tokens, "bf16")


@dataclass(frozen=True)
class BPESweepPoint:
    """One vocabulary on the held-out text: a size of the sweep, or a reference tokenizer.

    ``tokens`` are per document (the result's ``documents`` order). ``unused`` and
    ``unused_learned`` (tokens no document used: of all mergeable ones, of those made
    by a merge) are None for a reference tokenizer. ``exhausted``: the corpus ran out
    of pairs below this size, so this is the whole trained vocabulary.
    """

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
        if self.unused is None or self.learned is None:
            return None
        return self.unused / (self.learned + 256)

    @property
    def unused_learned_share(self) -> float | None:
        if self.unused_learned is None or not self.learned:
            return None
        return self.unused_learned / self.learned

    def to_dict(self, documents: Sequence[SweepDocument]) -> dict[str, Any]:
        def ratio(x: float | None) -> float | None:
            return None if x is None else round(x, 6)

        return {
            "label": self.label, "spec": self.spec, "exact": self.exact,
            "vocab_size": self.vocab_size, "requested_vocab_size": self.requested_vocab_size,
            "merges": self.merges, "exhausted": self.exhausted,
            "tokens": self.total_tokens,
            "tokens_per_byte": ratio(self.tokens_per_byte),
            "tokens_per_char": ratio(self.tokens_per_char),
            "vs_reference": ratio(self.vs_reference),
            "embedding_params": self.embedding_params, "output_params": self.output_params,
            "attention_flops_per_document": round(self.attention_flops_per_document),
            "kv_bytes_per_document": round(self.kv_bytes_per_document),
            "unused": self.unused, "unused_share": ratio(self.unused_share),
            "unused_learned_share": ratio(self.unused_learned_share),
            "documents": [
                {"name": d.name, "tokens": n,
                 "tokens_per_byte": ratio(n / d.bytes if d.bytes else 0.0),
                 "tokens_per_char": ratio(n / d.chars if d.chars else 0.0)}
                for d, n in zip(documents, self.tokens, strict=True)
            ],
        }


@dataclass(frozen=True)
class BPESweepResult:
    """The sweep: one point per vocabulary size, the reference tokenizers, and the knee.

    ``sizes[i].vs_reference`` is tokens over ``references[0]``'s on the same text.
    ``knee`` is a size of the sweep or None (``knee_gain``: the rule's threshold).
    """

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
    warnings: tuple[str, ...] = ()
    skipped: tuple[Skipped, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        docs = self.documents
        return {
            "trained_vocab_size": self.trained_vocab_size,
            "distinct_pretokens": self.distinct_pretokens,
            "total_pretokens": self.total_pretokens,
            "seconds_train": round(self.seconds_train, 3),
            "seconds": round(self.seconds, 3),
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
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "warnings": list(self.warnings),
        }


def _sizes(vocab_sizes: Sequence[int | str]) -> tuple[int, ...]:
    return check_sizes([parse_count(s, param="vocab_sizes", minimum=1, maximum=0x110000)
                        if isinstance(s, str) else s for s in vocab_sizes])


def _width(hidden: int | None, model: str | None, tied: bool,
           catalog: str | Path | Catalog | None) -> _Width:
    if hidden is not None and model is not None:
        raise UsageError("give the width as hidden or as a catalog model, not both",
                         param="hidden")
    if model is None:
        size = DEFAULT_HIDDEN if hidden is None else hidden
        if not 1 <= size <= MAX_HIDDEN:
            raise UsageError(f"hidden={size} must be between 1 and {MAX_HIDDEN:,}",
                             param="hidden")
        return _Width(size, tied, None, None)
    entry = open_catalog(catalog).resolve(model)
    arch = entry.architecture
    if arch is None or arch.hidden_size is None:
        raise UsageError(f"model '{entry.id}' has no architecture.hidden_size in the catalog; "
                         f"give hidden=N instead", param="model")
    return _Width(arch.hidden_size, tied, entry.id, arch)


def _documents(sources: Sequence[str | Path], stdin: BinaryIO | None,
               skipped: list[Skipped]) -> tuple[list[SweepDocument], list[str]]:
    """The held-out texts: a parallel folder's samples (one per language), or files."""
    if not sources:
        raise UsageError("give held-out text to measure on: files or a parallel folder",
                         param="held_out")
    docs: list[SweepDocument] = []
    notes: list[str] = []
    if len(sources) == 1 and Path(sources[0]).is_dir():
        for group in _load_folder(Path(sources[0]), skipped):
            notes += [w for w in group.warnings if not w.startswith("not parallel")]
            docs += [SweepDocument(s.code, len(s.text.encode("utf-8", "surrogatepass")),
                                   len(s.text), s.text) for s in group.samples]
    else:
        for source in dict.fromkeys(map(str, sources)):
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


def _load_folder(folder: Path, skipped: list[Skipped]) -> list[Any]:
    """A parallel folder through ``tokcost.inflation``'s loaders. A sweep needs no
    baseline, so a folder without ``en`` is read with its first language as one."""
    from tokcost.inflation import load_dir

    try:
        return load_dir(folder, skipped=skipped)
    except (UsageError, InputError) as exc:
        stems = sorted(p.stem for p in folder.glob("*.txt"))
        if exc.param != "baseline" or not stems:
            raise
    return load_dir(folder, baseline=stems[0], skipped=skipped)


def sweep_bpe(
    files: Sequence[str | Path],
    vocab_sizes: Sequence[int | str],
    held_out: Sequence[str | Path] | str | Path,
    *,
    tokenizers: Sequence[str] = ("tiktoken:o200k_base",),
    hidden: int | None = None,
    model: str | None = None,
    tied: bool = False,
    pattern: str = "o200k",
    special_tokens: Sequence[str] = (),
    jobs: int = 1,
    knee_gain: float = KNEE_GAIN,
    plot: str | Path | None = None,
    force: bool = False,
    catalog: str | Path | Catalog | None = None,
    progress: ProgressFn | None = None,
    stdin: BinaryIO | None = None,
) -> BPESweepResult:
    """Train once at the largest of ``vocab_sizes`` on ``files`` and measure every size on
    ``held_out`` (files, or one parallel folder such as corpora/prose/: one document per
    language). ``tokenizers`` are the reference points (the first is the one
    ``vs_reference`` divides by); ``model``'s own tokenizer joins them. The width is
    ``hidden`` or ``model``'s hidden size (default 4096); ``tied`` says whether the
    output layer shares the embedding's parameters. ``plot`` (``.png``/``.svg``/``.pdf``,
    the ``plot`` extra) is checked before training. See the module docstring for costs.
    """
    t0 = time.perf_counter()
    evals = [held_out] if isinstance(held_out, (str, Path)) else list(held_out)
    sizes = _sizes(vocab_sizes)
    floor = 256 + len(dict.fromkeys(special_tokens))
    if sizes[0] < floor:
        raise UsageError(f"vocab_sizes={sizes[0]} is too small: the 256 byte tokens and "
                         f"{floor - 256} special token(s) need at least {floor}",
                         param="vocab_sizes")
    config = TrainerConfig(vocab_size=sizes[-1], pattern=pattern,
                           special_tokens=tuple(special_tokens), jobs=jobs)
    bpe.check_config(config)
    knee(sizes[:1], [1.0], knee_gain)  # a bad gain before the training
    width = _width(hidden, model, tied, catalog)
    plot_path = Path(plot) if plot is not None else None
    if plot_path is not None:
        from tokcost.plotting import check_plot_path

        check_plot_path(plot_path, force=force)
    choices = resolve_tokenizers(list(tokenizers), catalog=catalog, default=None)
    skipped: list[Skipped] = []
    docs, notes = _documents(evals, stdin, skipped)

    # Training, as train_bpe does it (the input policy, one engine), without writing a model.
    inputs = TrainingInputs.scan(files, stdin, LocalRunner(jobs, processes=True))
    trained = bpe.train(inputs.paths, config, progress, engine=inputs, texts=inputs.stdin or ())
    skipped = inputs.skipped + skipped
    full = trained.model
    texts = [d.text for d in docs]

    def point(label: str, vocab: int, tokens: Sequence[int], **more: Any) -> BPESweepPoint:
        h = width.hidden
        n = len(tokens)
        return BPESweepPoint(
            label=label, vocab_size=vocab, tokens=tuple(tokens),
            bytes=sum(d.bytes for d in docs), chars=sum(d.chars for d in docs),
            vs_reference=(sum(tokens) / ref_total) if ref_total else None,
            embedding_params=vocab * h, output_params=0 if width.tied else vocab * h,
            attention_flops_per_document=sum(map(width.attention_flops, tokens)) / n,
            kv_bytes_per_document=sum(map(width.kv_bytes, tokens)) / n, **more)

    ref_counts = []
    for choice in choices:
        tok = choice.load()
        ref_counts.append((choice, tok.vocab_size, [tok.count(t) for t in texts]))
    if width.model is not None and all(c.label != width.model for c in choices):
        # The model's own tokenizer is a reference point when this machine has it.
        mine = resolve_tokenizers([f"model:{width.model}"], catalog=catalog)[0]
        try:
            tok = mine.load()
        except TokcostError as exc:
            notes.append(f"{width.model}'s tokenizer is left out of the references: {exc}")
        else:
            ref_counts.append((mine, tok.vocab_size, [tok.count(t) for t in texts]))
    ref_total = sum(ref_counts[0][2]) if ref_counts else 0
    references = tuple(point(c.label, v, counts, spec=c.spec, exact=c.exact)
                       for c, v, counts in ref_counts)
    points = []
    for size in sizes:
        sub = prefix_model(full, size)
        used = usage(sub, texts)
        points.append(point(
            f"bpe-{size}", sub.n_tokens, used.tokens, requested_vocab_size=size,
            merges=len(sub.merges), exhausted=sub.n_tokens < size, unused=used.unused,
            unused_learned=used.unused_learned, learned=used.learned))
    distinct = [p for p in points if not p.exhausted]
    found = knee([p.vocab_size for p in distinct], [p.tokens_per_byte for p in distinct],
                 knee_gain)
    warnings = list(input_warnings(skipped, inputs.invalid_utf8_bytes().items()))
    warnings += notes
    if trained.exhausted:
        same = ", ".join(str(p.requested_vocab_size) for p in points if p.exhausted)
        warnings.append(f"the corpus ran out of pairs at {full.n_tokens} tokens: vocab_sizes "
                        f"{same} are that vocabulary; train on more text")
    result = BPESweepResult(
        sizes=tuple(points), references=references, documents=tuple(docs), width=width,
        knee=next((p.requested_vocab_size for p in distinct if p.vocab_size == found), None),
        knee_gain=knee_gain, trained_vocab_size=full.n_tokens,
        distinct_pretokens=trained.distinct_pretokens, total_pretokens=trained.total_pretokens,
        seconds_train=trained.seconds_pretokenize + trained.seconds_merge,
        seconds=time.perf_counter() - t0, plot=plot_path, warnings=tuple(warnings),
        skipped=tuple(skipped),
    )
    if plot_path is not None:
        from tokcost.plotting.sweep import SweepPlotPoint, plot_sweep

        def dot(p: BPESweepPoint) -> SweepPlotPoint:
            return SweepPlotPoint(p.label, p.vocab_size, p.tokens_per_byte,
                                  p.embedding_params + p.output_params, p.exact)

        plot_sweep([dot(p) for p in distinct or points[:1]], [dot(p) for p in references],
                   plot_path, knee=result.knee, knee_rule=KNEE_RULE.format(gain=knee_gain * 100),
                   width=f"hidden {width.hidden:,}{', tied' if width.tied else ''}", force=force)
    return result
