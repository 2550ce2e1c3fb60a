"""The BPE use cases: train and export tokcost's own BPE; encode, decode and inspect with any
tokenizer."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, ClassVar

# Through the package, not its names: a test replaces ``tokcost.bpe.train_counted``.
from tokcost import bpe
from tokcost.adapters.base import Describable, Tokenizer, special_tokens_by_id
from tokcost.adapters.openai_encodings import PATTERNS
from tokcost.adapters.registry import FAMILIES, normalize_spec
from tokcost.app import names
from tokcost.bpe import BPEModel, ExportFormat, PatternName
from tokcost.bpe.encode import rank_merges
from tokcost.bpe.io import export_paths
from tokcost.bpe.model import DisallowedSpecial, InvalidTokenId
from tokcost.bpe.pretokenize import special_regex
from tokcost.bpe.train import DEFAULT_MAX_TOKEN_LENGTH, ProgressFn, TrainerConfig, TrainResult
from tokcost.counting import Skipped, TrainingInputs, input_warnings, read_input, runner_for
from tokcost.errors import TokcostError, UsageError, arg
from tokcost.parts import Parts
from tokcost.runner import EngineKind, RunConfig, Runner
from tokcost.tokenizers import MODEL_PREFIX, TokenizerChoice, resolve_tokenizers
from tokcost.units import parse_count

if TYPE_CHECKING:
    from tokcost.catalog import CatalogSource

__all__ = ["BPEDecodeRequest", "BPEEncodeRequest", "BPEExportRequest", "BPEInspectRequest",
           "BPETrainRequest", "decode_bpe", "encode_bpe", "export_bpe", "inspect_bpe", "train_bpe"]

_WHOLE = ("bpe:", "tiktoken:")  # the specs whose ranks tokcost's own BPE reads (load_any)


@dataclass(frozen=True, kw_only=True)
class BPETrainRequest(Parts):
    """Train ``trainer`` on ``files`` (``-``: ``stdin``) and write ``output`` and its
    ``.vocab``; ``engine`` pre-tokenizes, local or Dask (``RunConfig``), the same merges."""

    default_max_token_length: ClassVar[int] = DEFAULT_MAX_TOKEN_LENGTH  # the CLI's default

    files: tuple[str, ...]
    trainer: TrainerConfig
    output: Path
    force: bool = False
    engine: EngineKind | str = EngineKind.LOCAL
    scheduler: str | None = None
    timeout: float | None = None
    stdin: BinaryIO | None = field(default=None, repr=False, compare=False)
    run: RunConfig = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "files", names(self.files))
        object.__setattr__(self, "output", Path(self.output))
        jobs = self.trainer.jobs if self.trainer.jobs > 1 else None
        object.__setattr__(self, "run", RunConfig(engine=self.engine, jobs=jobs,
                                                  scheduler=self.scheduler, timeout=self.timeout))


@dataclass(frozen=True, kw_only=True)
class BPETrainResult(TrainResult):
    """A trained model, the files written, and what training saw; ``seconds``: the whole call."""

    requested_vocab_size: int
    seconds: float = 0.0
    outputs: tuple[Path, ...] = ()
    skipped: tuple[Skipped, ...] = ()
    invalid_utf8_bytes: Mapping[str, int] = field(default_factory=dict)  # input -> replaced

    def to_dict(self) -> dict[str, Any]:
        model = self.model
        return {
            "vocab_size": model.n_tokens, "requested_vocab_size": self.requested_vocab_size,
            "merges": len(model.merges), "special_tokens": dict(model.special_tokens),
            "pattern": model.pattern_name or model.pattern,
            "distinct_pretokens": self.distinct_pretokens, "total_pretokens": self.total_pretokens,
            "seconds": round(self.seconds, 3),
            "seconds_pretokenize": round(self.seconds_pretokenize, 3),
            "seconds_merge": round(self.seconds_merge, 3), "exhausted": self.exhausted,
            "outputs": [str(p) for p in self.outputs], "skipped": list(map(asdict, self.skipped)),
            "invalid_utf8_bytes": dict(self.invalid_utf8_bytes)}


def train_bpe(request: BPETrainRequest, progress: ProgressFn | None = None) -> BPETrainResult:
    """Train and write the model; ``progress(stage, done, total)`` hears ``"pretokenize"``
    (bytes) and ``"merge"`` (tokens). The outputs are checked before training starts."""
    t0 = time.perf_counter()
    out = request.output
    bpe.check_writable([out, bpe.vocab_path(out)], request.force)
    runner = runner_for(request.run, threads=False)
    trained = train_inputs(request.files, request.trainer, runner, progress, stdin=request.stdin)
    outputs = bpe.save_model(trained.model, out, force=request.force)
    return replace(trained, outputs=outputs, seconds=time.perf_counter() - t0)


def train_inputs(files: Sequence[str], config: TrainerConfig, runner: Runner,
    progress: ProgressFn | None = None, *, stdin: BinaryIO | None = None) -> BPETrainResult:
    """Pre-tokenize ``files`` on ``runner`` under the input policy, then learn the merges."""
    inputs = TrainingInputs.scan(files, stdin, runner)
    started = time.perf_counter()
    counts = (inputs.count_words(inputs.paths, config.reader_spec(), progress=progress)
              if inputs.paths else Counter[str]())
    trained = bpe.train_counted(counts, config, progress, texts=inputs.stdin or (), started=started)
    invalid = inputs.invalid_utf8_bytes()
    notes = tuple(map(TokcostError, input_warnings(inputs.skipped, invalid.items())))
    return BPETrainResult(**{**vars(trained), "notes": notes + trained.notes},
                          requested_vocab_size=config.vocab_size,
                          skipped=tuple(inputs.skipped), invalid_utf8_bytes=invalid)


def tokenizer_spec(tokenizer: str) -> str:
    """The spec a ``bpe encode|decode|inspect`` argument names: a spec, or a path by its kind."""
    text = tokenizer.strip()
    family, sep, _ = text.partition(":")
    if sep and (family in FAMILIES or text.startswith(MODEL_PREFIX)):
        return text
    if normalize_spec(text) != text:
        return normalize_spec(text)
    path = Path(text).expanduser()
    if text.endswith((".tiktoken", ".tiktoken.gz")):
        return f"tiktoken:{text}"
    if path.suffix == ".model":
        return f"sp:{text}"
    if path.name == "tokenizer.json" or (path / "tokenizer.json").is_file():
        return f"hf:{text}"
    if path.suffix == ".bpe" or path.is_file():
        return f"bpe:{text}"
    return text  # not a path: the registry says what is wrong with it


@dataclass(frozen=True, kw_only=True)
class _TokenizerRequest:
    """Any tokenizer spec (``model:ID`` through ``catalog``) or file; ``pattern``: for a
    ``.tiktoken`` rank file with no ``PATH.json`` beside it."""

    tokenizer: str
    pattern: PatternName | str | None = None
    catalog: CatalogSource = None


def _load(request: _TokenizerRequest, *, reference: bool = False,
          whole: bool = False) -> tuple[TokenizerChoice, Tokenizer, BPEModel | None]:
    """The tokenizer asked for; with ``whole``, also its BPE ranks where they can be read."""
    from tokcost.adapters.base import Approximate
    from tokcost.adapters.bpe import BPETokenizer
    choice = resolve_tokenizers([tokenizer_spec(request.tokenizer)], catalog=request.catalog)[0]
    pattern = request.pattern
    family, _, rest = choice.spec.partition(":")
    # A .tiktoken rank file: the one kind of tokenizer that may need a pattern given.
    rank_file = choice.spec.startswith(_WHOLE) and (
        rest.endswith((".tiktoken", ".tiktoken.gz")) or (family == "tiktoken" and "/" in rest))
    if pattern is not None and not rank_file:
        raise UsageError(f"{arg('pattern')} is for a .tiktoken rank file; {choice.spec} has "
                         f"its own", param="pattern")
    if not choice.spec.startswith(_WHOLE):
        if reference:
            raise UsageError(f"{arg('reference', True)} runs tokcost's own encoder, on a BPE it "
                             f"can read (bpe:PATH, a .tiktoken file, tiktoken:NAME), not "
                             f"{choice.spec}", param="reference")
        return choice, choice.load(), None
    if not (whole or reference or pattern is not None or choice.spec.startswith("bpe:")):
        return choice, choice.load(), None  # tiktoken's own, built once per process
    # Read afresh (a model retrained in place is not served from a cache).
    model = bpe.load_any(choice.spec, pattern=pattern)
    tok: Tokenizer = BPETokenizer(model, request.tokenizer, use_tiktoken=not reference)
    return choice, tok if choice.exact else Approximate(tok), model


@dataclass(frozen=True, kw_only=True)
class BPEEncodeRequest(_TokenizerRequest):
    """Encode ``text``, or the file at ``path`` (``-``: ``stdin``); ``reference``: tokcost's
    pure-Python encoder, not tiktoken's core (the same ids)."""

    text: str | None = None
    path: str | Path | None = None
    allow_special: bool = False
    reference: bool = False
    stdin: BinaryIO | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if (self.text is None) == (self.path is None):
            raise UsageError(f"give the {arg('text')} or a path to read it from, not both or "
                             f"neither", param="text")


@dataclass(frozen=True)
class BPEEncodeResult:
    """The ids of a text under ``model`` (the tokenizer as given; ``tokenizer``: its spec)."""

    model: str
    tokenizer: str
    ids: tuple[int, ...]
    exact: bool = True  # False: a catalog proxy's ids
    invalid_utf8_bytes: int = 0
    input: str | None = None  # the file read (<stdin>), None for text given

    @property
    def warnings(self) -> tuple[str, ...]:
        return input_warnings((), [(self.input or "", self.invalid_utf8_bytes)])

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "tokenizer": self.tokenizer, "exact": self.exact,
                "count": len(self.ids), "ids": list(self.ids),
                "invalid_utf8_bytes": self.invalid_utf8_bytes}


def encode_bpe(request: BPEEncodeRequest) -> BPEEncodeResult:
    choice, tok, _ = _load(request, reference=request.reference)
    read = read_input(request.path, stdin=request.stdin) if request.path is not None else None
    body = read.text if read is not None else str(request.text)
    # tiktoken's rule: text the tokenizer would read as a special token raises.
    specials = tuple(tok.special_tokens()) if isinstance(tok, Describable) else ()
    found = special_regex(specials).search(body) if specials and not request.allow_special else None
    token = str(found.group()) if found else ""
    if found and tok.encode(token, allow_special=True) != tok.encode(token):
        raise DisallowedSpecial(f"{request.tokenizer}: text contains the special token {token!r}; "
                                f"pass {arg('allow_special', True)} to encode it as one token",
                                param="allow_special")
    ids = tok.encode(body, allow_special=request.allow_special)
    return BPEEncodeResult(request.tokenizer, choice.spec, tuple(ids), choice.exact,
                           read.invalid_bytes if read else 0, read.name if read else None)


@dataclass(frozen=True, kw_only=True)
class BPEDecodeRequest(_TokenizerRequest):
    ids: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "ids", tuple(self.ids))


@dataclass(frozen=True)
class BPEDecodeResult:
    """The text of token ids (bytes that are not UTF-8 show as U+FFFD)."""

    model: str
    tokenizer: str
    exact: bool
    text: str
    count: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def decode_bpe(request: BPEDecodeRequest) -> BPEDecodeResult:
    """The text of ``ids`` (``InvalidTokenId`` for one outside the vocabulary)."""
    choice, tok, _ = _load(request)
    bad = next((i for i in request.ids if not 0 <= i < tok.vocab_size), None)
    if bad is not None:
        raise InvalidTokenId(f"token id {bad} is not in this vocabulary ({arg('ids')} run "
                             f"0..{tok.vocab_size - 1})", param="ids")
    return BPEDecodeResult(request.tokenizer, choice.spec, choice.exact,
                           tok.decode(list(request.ids)), len(request.ids))


@dataclass(frozen=True, kw_only=True)
class BPEInspectRequest(_TokenizerRequest):
    """Summarize a tokenizer; ``top``: how many first merges and longest tokens."""

    top: int = 10

    def __post_init__(self) -> None:
        if not isinstance(self.top, int):
            object.__setattr__(self, "top", parse_count(self.top, param="top"))
        if self.top < 0:
            raise UsageError(f"{arg('top', self.top)} must be 0 or more", param="top")


@dataclass(frozen=True)
class BPEMerge:
    """One learned merge, its tokens shown readably (``render_token``)."""

    left: str
    right: str
    token: str
    id: int


@dataclass(frozen=True, kw_only=True)
class BPEInspectResult:
    """A tokenizer's sizes, pattern, special tokens (by id, then text), first merges and
    longest tokens; what only a BPE tokcost reads whole can tell is None for others."""

    source: str
    tokenizer: str
    exact: bool
    pattern: str | None
    vocab_size: int
    tokens: int | None = None
    mergeable_tokens: int | None = None
    merges: int | None = None
    unmerged_tokens: int | None = None  # tokens of 2+ bytes that are no merge of two others
    special_tokens: Mapping[str, int]
    max_token_bytes: int | None = None
    longest_tokens: tuple[str, ...] = ()
    first_merges: tuple[BPEMerge, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "special_tokens": dict(self.special_tokens),  # fields in order
                "longest_tokens": list(self.longest_tokens),
                "first_merges": [asdict(m) for m in self.first_merges]}


def inspect_bpe(request: BPEInspectRequest) -> BPEInspectResult:
    """Sizes, pattern, special tokens; of a BPE read whole, its ``top`` merges, longest tokens."""
    choice, tok, m = _load(request, whole=True)
    if m is None:
        regex_text = tok.pattern() if isinstance(tok, Describable) else None
        return BPEInspectResult(
            source=request.tokenizer, tokenizer=choice.spec, exact=choice.exact,
            pattern=next((n for n, p in PATTERNS.items() if p == regex_text), regex_text),
            vocab_size=tok.vocab_size,
            special_tokens=tok.special_tokens() if isinstance(tok, Describable) else {})
    dec, ranks, show = m.decoder, m.ranks, bpe.render_token
    longest = sorted(ranks, key=lambda b: (-len(b), ranks[b]))[:request.top]
    merges = m.merges or rank_merges(ranks)  # a rank file carries no merge list
    return BPEInspectResult(
        source=request.tokenizer, tokenizer=choice.spec, exact=choice.exact,
        pattern=m.pattern_name or m.pattern, vocab_size=m.vocab_size, tokens=m.n_tokens,
        mergeable_tokens=len(ranks), merges=len(merges),
        unmerged_tokens=sum(len(b) > 1 for b in ranks) - len({c for *_, c in merges}),
        special_tokens=special_tokens_by_id(m.special_tokens.items()),
        max_token_bytes=max(len(b) for b in ranks), longest_tokens=tuple(show(b) for b in longest),
        first_merges=tuple(BPEMerge(show(dec[a]), show(dec[b]), show(dec[c]), c)
                           for a, b, c in merges[:request.top]))


@dataclass(frozen=True, kw_only=True)
class BPEExportRequest:
    """Write ``model`` (``tok.bpe``, a ``.tiktoken`` file, ``tiktoken:NAME``) as a Hugging Face
    ``tokenizer.json`` or a tiktoken rank file (the same ids)."""

    model: str
    output: Path
    format: ExportFormat | str = ExportFormat.HF
    force: bool = False
    pattern: PatternName | str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "output", Path(self.output))
        try:
            object.__setattr__(self, "format", ExportFormat(self.format))
        except ValueError:
            raise UsageError(f"{arg('format')} must be hf or tiktoken, not {self.format!r}",
                             param="format") from None


@dataclass(frozen=True)
class BPEExportResult:
    format: ExportFormat
    outputs: tuple[Path, ...]
    vocab_size: int

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.format.value, "outputs": [str(p) for p in self.outputs],
                "vocab_size": self.vocab_size}


def export_bpe(request: BPEExportRequest) -> BPEExportResult:
    """Export the model; the outputs are checked before the model is loaded."""
    fmt, output, force = ExportFormat(request.format), request.output, request.force
    bpe.check_writable(export_paths(fmt, output), force)
    loaded = bpe.load_any(request.model, pattern=request.pattern)
    write = bpe.export_hf if fmt is ExportFormat.HF else bpe.export_tiktoken
    paths = write(loaded, output, force=force)
    return BPEExportResult(format=fmt, outputs=tuple(paths), vocab_size=loaded.vocab_size)
