"""The BPE use cases: train, encode, decode, inspect and export tokcost's own byte-level BPE.

Each function loads what it needs once, calls ``tokcost.bpe``, and returns a frozen
result whose ``to_dict()`` is the ``tokcost bpe ...`` command's ``--json`` document.
A ``model`` argument is a tokcost model file (``tok.bpe`` or ``bpe:tok.bpe``), a
``.tiktoken`` rank file or a ``tiktoken:NAME`` encoding.

>>> BPEEncodeResult(model="tok.bpe", ids=(71, 1917)).to_dict()
{'model': 'tok.bpe', 'count': 2, 'ids': [71, 1917]}
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Through the package, not its names: a test replaces ``tokcost.bpe.train``.
from tokcost import bpe
from tokcost.app.engine import EngineKind, make_engine
from tokcost.bpe import BPEModel, ExportFormat, PatternName, TrainerConfig
from tokcost.bpe.export import export_paths
from tokcost.errors import UsageError

if TYPE_CHECKING:
    from tokcost.bpe.train import ProgressFn

__all__ = [
    "BPEDecodeResult",
    "BPEEncodeResult",
    "BPEExportResult",
    "BPEInspectResult",
    "BPEMerge",
    "BPETrainResult",
    "ExportFormat",
    "PatternName",
    "TrainerConfig",
    "decode_bpe",
    "encode_bpe",
    "export_bpe",
    "inspect_bpe",
    "train_bpe",
]


@dataclass(frozen=True)
class BPETrainResult:
    """A trained model, the files it was written to, and what training saw.

    ``seconds`` is the whole call (checks, training, writing); the two parts are
    pre-tokenizing and merging. ``warnings`` speak the API's words (``vocab_size``).
    """

    model: BPEModel
    requested_vocab_size: int
    distinct_pretokens: int
    total_pretokens: int
    seconds: float
    seconds_pretokenize: float
    seconds_merge: float
    exhausted: bool
    outputs: tuple[Path, Path]
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        model = self.model
        return {
            "vocab_size": model.n_tokens,
            "requested_vocab_size": self.requested_vocab_size,
            "merges": len(model.merges),
            "special_tokens": dict(model.special_tokens),
            "pattern": model.pattern_name or model.pattern,
            "distinct_pretokens": self.distinct_pretokens,
            "total_pretokens": self.total_pretokens,
            "seconds": round(self.seconds, 3),
            "seconds_pretokenize": round(self.seconds_pretokenize, 3),
            "seconds_merge": round(self.seconds_merge, 3),
            "exhausted": self.exhausted,
            "outputs": [str(p) for p in self.outputs],
        }


def train_bpe(
    files: Sequence[str | Path],
    config: TrainerConfig,
    output: str | Path,
    *,
    force: bool = False,
    engine: EngineKind | str = EngineKind.LOCAL,
    scheduler: str | None = None,
    progress: ProgressFn | None = None,
) -> BPETrainResult:
    """Train on ``files`` and write ``output`` and its ``.vocab`` beside it.

    ``engine`` pre-tokenizes: ``local`` in ``config.jobs`` processes, ``dask`` on the
    cluster at ``scheduler`` (else ``config.jobs`` local workers, or one per CPU);
    the merges are the same either way. ``progress(stage, done, total)`` hears
    ``"pretokenize"`` (bytes) and ``"merge"`` (tokens). The output files are checked
    before training starts, so a long run never ends on "already exists".
    """
    t0 = time.perf_counter()
    if config.jobs < 1:
        raise UsageError("jobs must be 1 or more", param="jobs")
    out = Path(output)
    bpe.check_writable([out, bpe.vocab_path(out)], force)
    chosen = make_engine(
        engine, jobs=config.jobs if config.jobs > 1 else None, scheduler=scheduler
    )
    trained = bpe.train(list(files), config, progress, engine=chosen)
    outputs = bpe.save_model(trained.model, out, force=force)
    return BPETrainResult(
        model=trained.model,
        requested_vocab_size=config.vocab_size,
        distinct_pretokens=trained.distinct_pretokens,
        total_pretokens=trained.total_pretokens,
        seconds=time.perf_counter() - t0,
        seconds_pretokenize=trained.seconds_pretokenize,
        seconds_merge=trained.seconds_merge,
        exhausted=trained.exhausted,
        outputs=outputs,
        warnings=trained.warnings,
    )


@dataclass(frozen=True)
class BPEEncodeResult:
    """The ids of a text under ``model`` (the name as given)."""

    model: str
    ids: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "count": len(self.ids), "ids": list(self.ids)}


def encode_bpe(
    model: str,
    text: str,
    *,
    allow_special: bool = False,
    reference: bool = False,
    pattern: PatternName | str | None = None,
) -> BPEEncodeResult:
    """Encode ``text``; special-token text raises unless ``allow_special`` (tiktoken's rule).

    ``reference`` uses the pure-Python encoder instead of tiktoken's core (same ids).
    ``pattern`` is for a ``.tiktoken`` file with no ``PATH.json`` beside it.
    """
    from tokcost.adapters.bpe import BPETokenizer

    tok = BPETokenizer(bpe.load_any(model, pattern=pattern), model, use_tiktoken=not reference)
    ids = tok.encode_strict(text, allow_special=allow_special)
    return BPEEncodeResult(model=model, ids=tuple(ids))


@dataclass(frozen=True)
class BPEDecodeResult:
    """The text of token ids (bytes that are not UTF-8 show as U+FFFD)."""

    model: str
    text: str
    count: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def decode_bpe(
    model: str, ids: Sequence[int], *, pattern: PatternName | str | None = None
) -> BPEDecodeResult:
    """Decode ``ids``; an id the model lacks raises ``InvalidTokenId``."""
    text = bpe.Encoder(bpe.load_any(model, pattern=pattern)).decode(ids)
    return BPEDecodeResult(model=model, text=text, count=len(ids))


@dataclass(frozen=True)
class BPEMerge:
    """One learned merge, its tokens shown readably (``render_token``)."""

    left: str
    right: str
    token: str
    id: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BPEInspectResult:
    """A model's sizes, pattern, special tokens, first merges and longest tokens."""

    source: str
    pattern: str
    vocab_size: int
    tokens: int
    mergeable_tokens: int
    merges: int
    special_tokens: Mapping[str, int]
    max_token_bytes: int
    longest_tokens: tuple[str, ...]
    first_merges: tuple[BPEMerge, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {  # the fields in order; the tuples as JSON's lists
            **asdict(self),
            "longest_tokens": list(self.longest_tokens),
            "first_merges": [m.to_dict() for m in self.first_merges],
        }


def inspect_bpe(
    model: str, *, top: int = 10, pattern: PatternName | str | None = None
) -> BPEInspectResult:
    """Summarize ``model``: the ``top`` first merges and longest tokens (longest first)."""
    loaded = bpe.load_any(model, pattern=pattern)
    dec, ranks, show = loaded.decoder, loaded.ranks, bpe.render_token
    longest = sorted(ranks, key=lambda b: (-len(b), ranks[b]))[:top]
    return BPEInspectResult(
        source=model,
        pattern=loaded.pattern_name or loaded.pattern,
        vocab_size=loaded.vocab_size,
        tokens=loaded.n_tokens,
        mergeable_tokens=len(ranks),
        merges=len(loaded.merges),
        special_tokens=dict(loaded.special_tokens),
        max_token_bytes=max(len(b) for b in ranks),
        longest_tokens=tuple(show(b) for b in longest),
        first_merges=tuple(
            BPEMerge(show(dec[a]), show(dec[b]), show(dec[c]), c) for a, b, c in loaded.merges[:top]
        ),
    )


@dataclass(frozen=True)
class BPEExportResult:
    """The files an export wrote (tiktoken: the rank file and its ``PATH.json``)."""

    format: ExportFormat
    outputs: tuple[Path, ...]
    vocab_size: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format.value,
            "outputs": [str(p) for p in self.outputs],
            "vocab_size": self.vocab_size,
        }


def export_bpe(
    model: str,
    output: str | Path,
    *,
    format: ExportFormat | str = ExportFormat.HF,
    force: bool = False,
    pattern: PatternName | str | None = None,
) -> BPEExportResult:
    """Write ``model`` as a Hugging Face ``tokenizer.json`` or a tiktoken rank file (same ids)."""
    try:
        fmt = ExportFormat(format)
    except ValueError:
        raise UsageError(f"format must be hf or tiktoken, not {format!r}", param="format") from None
    bpe.check_writable(export_paths(fmt, output), force)  # before loading a large model
    loaded = bpe.load_any(model, pattern=pattern)
    write = bpe.export_hf if fmt is ExportFormat.HF else bpe.export_tiktoken
    paths = write(loaded, output, force=force)
    return BPEExportResult(format=fmt, outputs=tuple(paths), vocab_size=loaded.vocab_size)
