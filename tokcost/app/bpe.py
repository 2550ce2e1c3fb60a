"""The BPE use cases: train and export tokcost's own byte-level BPE; encode, decode and
inspect with any tokenizer.

Each function loads what it needs once, calls ``tokcost.bpe`` or the tokenizer's
adapter, and returns a frozen result whose ``to_dict()`` is the ``tokcost bpe ...``
command's ``--json`` document. ``train_bpe`` and ``export_bpe`` work on tokcost's
own models (``tok.bpe``, a ``.tiktoken`` rank file, ``tiktoken:NAME``); ``encode_bpe``,
``decode_bpe`` and ``inspect_bpe`` take any tokenizer spec as ``resolve_tokenizers``
reads it (``o200k_base``, ``hf:...``, ``sp:...``, ``model:ID``) or a tokenizer file's path.

>>> BPEEncodeResult(model="tok.bpe", tokenizer="bpe:tok.bpe", ids=(71, 1917)).to_dict()
{'model': 'tok.bpe', 'tokenizer': 'bpe:tok.bpe', 'exact': True, 'count': 2, 'ids': [71, 1917], \
'invalid_utf8_bytes': 0}
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

# Through the package, not its names: a test replaces ``tokcost.bpe.train``.
from tokcost import bpe
from tokcost.adapters.base import Describable, special_tokens_by_id
from tokcost.adapters.openai_encodings import PATTERNS
from tokcost.adapters.registry import FAMILIES, normalize_spec
from tokcost.bpe import DEFAULT_MAX_TOKEN_LENGTH, BPEModel, ExportFormat, PatternName, TrainerConfig
from tokcost.bpe.export import export_paths
from tokcost.bpe.model import DisallowedSpecial, InvalidTokenId
from tokcost.counting import Skipped, TrainingInputs, input_warnings, read_input, runner_for
from tokcost.errors import UsageError
from tokcost.runner import EngineKind, RunConfig
from tokcost.tokenizers import MODEL_PREFIX, TokenizerChoice, resolve_tokenizers

if TYPE_CHECKING:
    import regex

    from tokcost.adapters.base import Tokenizer
    from tokcost.bpe.train import ProgressFn
    from tokcost.catalog import Catalog

__all__ = [
    "DEFAULT_MAX_TOKEN_LENGTH",
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
    skipped: tuple[Skipped, ...] = ()  # inputs left out (binary, unreadable)
    invalid_utf8_bytes: Mapping[str, int] = field(default_factory=dict)  # input -> replaced

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
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "invalid_utf8_bytes": dict(self.invalid_utf8_bytes),
        }


def train_bpe(
    files: Sequence[str | Path],
    config: TrainerConfig,
    output: str | Path,
    *,
    force: bool = False,
    engine: EngineKind | str = EngineKind.LOCAL,
    scheduler: str | None = None,
    timeout: float | None = None,
    progress: ProgressFn | None = None,
    stdin: BinaryIO | None = None,
) -> BPETrainResult:
    """Train on ``files`` and write ``output`` and its ``.vocab`` beside it.

    ``files`` follow the input policy of every command: ``-`` is ``stdin`` (default
    the process's standard input), binary files are skipped, invalid UTF-8 is read
    as U+FFFD; the result's ``skipped``, ``invalid_utf8_bytes`` and ``warnings`` say so.

    ``engine`` pre-tokenizes: ``local`` in ``config.jobs`` processes, ``dask`` on the
    cluster at ``scheduler`` (else ``config.jobs`` local workers, or one per CPU),
    waiting ``timeout`` seconds at most for it (see ``tokcost.runner.RunConfig``);
    the merges are the same either way. ``progress(stage, done, total)`` hears
    ``"pretokenize"`` (bytes) and ``"merge"`` (tokens). The output files are checked
    before training starts, so a long run never ends on "already exists".
    """
    t0 = time.perf_counter()
    bpe.check_config(config)  # a bad vocab_size or jobs before any file is read
    out = Path(output)
    bpe.check_writable([out, bpe.vocab_path(out)], force)
    run = RunConfig(engine=engine, jobs=config.jobs if config.jobs > 1 else None,
                    scheduler=scheduler, timeout=timeout)
    inputs = TrainingInputs.scan(files, stdin, runner_for(run, threads=False))
    trained = bpe.train(inputs.paths, config, progress, engine=inputs,
                        texts=inputs.stdin or ())
    skipped = inputs.skipped
    outputs = bpe.save_model(trained.model, out, force=force)
    invalid = inputs.invalid_utf8_bytes()
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
        warnings=input_warnings(skipped, invalid.items()) + trained.warnings,
        skipped=tuple(skipped),
        invalid_utf8_bytes=invalid,
    )


# --- any tokenizer: encode, decode, inspect ---------------------------------------------


def tokenizer_spec(tokenizer: str) -> str:
    """The spec a ``tokcost bpe encode|decode|inspect`` argument names: any tokenizer
    spec as it is (``o200k_base`` made ``tiktoken:o200k_base``), a path by its kind.

    >>> [tokenizer_spec(t) for t in ("o200k_base", "tok.bpe", "x.tiktoken", "m.model")]
    ['tiktoken:o200k_base', 'bpe:tok.bpe', 'tiktoken:x.tiktoken', 'sp:m.model']
    """
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


def _readable_as_bpe(spec: str) -> bool:
    # Specs whose ranks tokcost's own BPE reads whole (bpe.load_any).
    return spec.startswith(("bpe:", "tiktoken:"))


def _rank_file(spec: str) -> bool:
    # A .tiktoken rank file: the one kind of tokenizer that may need a pattern given.
    family, _, arg = spec.partition(":")
    return _readable_as_bpe(spec) and (
        arg.endswith((".tiktoken", ".tiktoken.gz")) or (family == "tiktoken" and "/" in arg)
    )


@dataclass(frozen=True)
class _Loaded:
    choice: TokenizerChoice
    tokenizer: Tokenizer
    model: BPEModel | None  # the ranks, when tokcost's own BPE can read them


def _load(
    name: str,
    catalog: str | Path | Catalog | None,
    *,
    pattern: PatternName | str | None = None,
    reference: bool = False,
    whole: bool = False,
) -> _Loaded:
    """The tokenizer ``name`` names; with ``whole``, also its BPE ranks where they can be read."""
    from tokcost.adapters.bpe import BPETokenizer
    from tokcost.adapters.proxy import Approximate

    choice = resolve_tokenizers([tokenizer_spec(name)], catalog=catalog)[0]
    if pattern is not None and not _rank_file(choice.spec):
        raise UsageError(f"pattern is for a .tiktoken rank file; {choice.spec} has its own",
                         param="pattern")
    if not _readable_as_bpe(choice.spec):
        if reference:
            raise UsageError(f"reference=True runs tokcost's own encoder, on a BPE it can read "
                             f"(bpe:PATH, a .tiktoken file, tiktoken:NAME), not {choice.spec}",
                             param="reference")
        return _Loaded(choice, choice.load(), None)
    if not (whole or reference or pattern is not None or choice.spec.startswith("bpe:")):
        return _Loaded(choice, choice.load(), None)  # tiktoken's own, built once per process
    # Read afresh (a model retrained in place is not served from a cache).
    model = bpe.load_any(choice.spec, pattern=pattern)
    tok: Tokenizer = BPETokenizer(model, name, use_tiktoken=not reference)
    return _Loaded(choice, tok if choice.exact else Approximate(tok), model)


def _special_tokens(tok: Tokenizer) -> dict[str, int]:
    return tok.special_tokens() if isinstance(tok, Describable) else {}


@lru_cache(maxsize=8)
def _special_regex(specials: tuple[str, ...]) -> regex.Pattern[str]:
    import regex

    # Longest first, so "<|a|>" never hides "<|a|>x" (as tiktoken's own check).
    return regex.compile("|".join(regex.escape(s) for s in sorted(specials, key=len,
                                                                   reverse=True)))


def _check_special(name: str, tok: Tokenizer, text: str) -> None:
    """tiktoken's rule: special-token text that the tokenizer would read as a special
    token raises unless allowed (a tokenizer that never reads it, SentencePiece, passes)."""
    specials = tuple(_special_tokens(tok))
    if not specials:
        return
    found = _special_regex(specials).search(text)
    if found is None:
        return
    token = str(found.group())
    if tok.encode(token, allow_special=True) != tok.encode(token):
        raise DisallowedSpecial(
            f"{name}: text contains the special token {token!r}; pass "
            f"allow_special=True to encode it as one token",
            param="allow_special",
        )


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


def encode_bpe(
    model: str,
    text: str | None = None,
    *,
    path: str | Path | None = None,
    allow_special: bool = False,
    reference: bool = False,
    pattern: PatternName | str | None = None,
    catalog: str | Path | Catalog | None = None,
    stdin: BinaryIO | None = None,
) -> BPEEncodeResult:
    """Encode ``text``, or the file at ``path`` (``-``: ``stdin``, read by the input
    policy: invalid UTF-8 replaced and counted, a binary file refused), with any
    tokenizer. Special-token text raises unless ``allow_special`` (tiktoken's rule).

    ``reference`` uses tokcost's pure-Python encoder instead of tiktoken's core (same
    ids; tokcost BPE and tiktoken rank files only). ``pattern`` is for a ``.tiktoken``
    file with no ``PATH.json`` beside it. ``catalog`` resolves ``model:ID``.

    >>> encode_bpe("cl100k_base", "hello world").ids
    (15339, 1917)
    """
    if (text is None) == (path is None):
        raise UsageError("give the text or a path to read it from, not both or neither",
                         param="text")
    loaded = _load(model, catalog, pattern=pattern, reference=reference)
    read = read_input(path, stdin=stdin) if path is not None else None
    body = read.text if read is not None else str(text)
    if not allow_special:
        _check_special(model, loaded.tokenizer, body)
    ids = loaded.tokenizer.encode(body, allow_special=allow_special)
    return BPEEncodeResult(model, loaded.choice.spec, tuple(ids), loaded.choice.exact,
                           read.invalid_bytes if read else 0, read.name if read else None)


@dataclass(frozen=True)
class BPEDecodeResult:
    """The text of token ids (bytes that are not UTF-8 show as U+FFFD)."""

    model: str
    tokenizer: str
    text: str
    count: int
    exact: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "tokenizer": self.tokenizer, "exact": self.exact,
                "text": self.text, "count": self.count}


def decode_bpe(
    model: str,
    ids: Sequence[int],
    *,
    pattern: PatternName | str | None = None,
    catalog: str | Path | Catalog | None = None,
) -> BPEDecodeResult:
    """Decode ``ids`` with any tokenizer; an id outside the vocabulary raises ``InvalidTokenId``.

    >>> decode_bpe("cl100k_base", [15339, 1917]).text
    'hello world'
    """
    loaded = _load(model, catalog, pattern=pattern)
    size = loaded.tokenizer.vocab_size
    bad = next((i for i in ids if not 0 <= i < size), None)
    if bad is not None:
        raise InvalidTokenId(f"token id {bad} is not in this vocabulary (ids run 0..{size - 1})",
                             param="ids")
    text = loaded.tokenizer.decode(list(ids))
    return BPEDecodeResult(model, loaded.choice.spec, text, len(ids), loaded.choice.exact)


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
    """A tokenizer's sizes, pattern, special tokens, first merges and longest tokens.

    What only a BPE that tokcost reads whole can tell (tokcost models, tiktoken
    encodings and rank files) is None, or empty, for other tokenizers. Special
    tokens are ordered by id, then text, so the document is the same on every run.
    """

    source: str
    tokenizer: str
    exact: bool
    pattern: str | None
    vocab_size: int
    tokens: int | None
    mergeable_tokens: int | None
    merges: int | None
    special_tokens: Mapping[str, int]
    max_token_bytes: int | None
    longest_tokens: tuple[str, ...] = ()
    first_merges: tuple[BPEMerge, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {  # the fields in order; the tuples as JSON's lists
            **asdict(self),
            "special_tokens": dict(self.special_tokens),
            "longest_tokens": list(self.longest_tokens),
            "first_merges": [m.to_dict() for m in self.first_merges],
        }


def _pattern_label(regex_text: str | None) -> str | None:
    """A named pattern by its name (``o200k``), another regex as it is."""
    return next((n for n, p in PATTERNS.items() if p == regex_text), regex_text)


def inspect_bpe(
    model: str,
    *,
    top: int = 10,
    pattern: PatternName | str | None = None,
    catalog: str | Path | Catalog | None = None,
) -> BPEInspectResult:
    """Summarize any tokenizer: sizes, pattern and special tokens; for a BPE that tokcost
    reads whole, also the ``top`` first merges and longest tokens (longest first).

    >>> info = inspect_bpe("cl100k_base", top=0)
    >>> info.pattern, info.vocab_size, list(info.special_tokens)[:2]
    ('cl100k', 100277, ['<|endoftext|>', '<|fim_prefix|>'])
    """
    if top < 0:
        raise UsageError(f"top={top} must be 0 or more", param="top")
    loaded = _load(model, catalog, pattern=pattern, whole=True)
    choice, tok, m = loaded.choice, loaded.tokenizer, loaded.model
    if m is None:
        return BPEInspectResult(
            source=model, tokenizer=choice.spec, exact=choice.exact,
            pattern=_pattern_label(tok.pattern() if isinstance(tok, Describable) else None),
            vocab_size=tok.vocab_size, tokens=None, mergeable_tokens=None, merges=None,
            special_tokens=_special_tokens(tok), max_token_bytes=None,
        )
    dec, ranks, show = m.decoder, m.ranks, bpe.render_token
    longest = sorted(ranks, key=lambda b: (-len(b), ranks[b]))[:top]
    return BPEInspectResult(
        source=model,
        tokenizer=choice.spec,
        exact=choice.exact,
        pattern=m.pattern_name or m.pattern,
        vocab_size=m.vocab_size,
        tokens=m.n_tokens,
        mergeable_tokens=len(ranks),
        merges=len(m.merges),
        special_tokens=special_tokens_by_id(m.special_tokens.items()),
        max_token_bytes=max(len(b) for b in ranks),
        longest_tokens=tuple(show(b) for b in longest),
        first_merges=tuple(
            BPEMerge(show(dec[a]), show(dec[b]), show(dec[c]), c) for a, b, c in m.merges[:top]
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
