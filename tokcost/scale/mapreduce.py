"""Pure map and reduce functions for any runner (docs/scale-out.md), tokenizers sent as specs;
``count_paths`` is the remote runner's count.


>>> from tokcost.bpe.pretokenize import PretokenizeSpec
>>> sorted(pretokenize_texts(["a a\\na\\n"], PretokenizeSpec("gpt2")).items())
[('\\n', 2), (' a', 1), ('a', 2)]
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial, reduce
from typing import TYPE_CHECKING, Any

from tokcost import counting
from tokcost.errors import UsageError
from tokcost.runner import Piece, Runner, plan_shards
from tokcost.scale.shards import READ_TIMEOUT, Window, list_inputs, open_binary

if TYPE_CHECKING:
    from tokcost.adapters.base import Tokenizer
    from tokcost.bpe.pretokenize import PretokenizeSpec
    from tokcost.counting import CountReport, Inputs, ProgressFn, Reader


@dataclass(frozen=True)
class TextCounts:
    """Token totals of some texts, per tokenizer spec. ``a + b`` merges two partials."""

    texts: int = 0
    chars: int = 0
    tokens: Mapping[str, int] = field(default_factory=dict)

    def __add__(self, other: TextCounts) -> TextCounts:
        tokens = Counter(self.tokens)
        tokens.update(other.tokens)
        return TextCounts(self.texts + other.texts, self.chars + other.chars, dict(tokens))


def count_texts_partial(texts: Iterable[str], specs: Sequence[str], *,
                        allow_special: bool = False) -> TextCounts:
    """Map: count each text (a document of its own) with every tokenizer spec."""
    from tokcost.adapters.registry import get_tokenizer
    toks = {spec: get_tokenizer(spec) for spec in specs}
    totals = dict.fromkeys(specs, 0)
    n = chars = 0
    for text in texts:
        n += 1
        chars += len(text)
        for spec, tok in toks.items():
            totals[spec] += tok.count(text, allow_special=allow_special)
    return TextCounts(n, chars, totals)


def merge_counts(partials: Iterable[TextCounts]) -> TextCounts:
    """Reduce: the sum of partial ``TextCounts`` (in any order)."""
    return reduce(operator.add, partials, TextCounts())


@dataclass
class FilePartial:
    """What one piece (or, merged, all pieces) of one file counted."""

    bytes: int = 0
    chars: int = 0
    invalid_utf8_bytes: int = 0
    tokens: dict[str, int] = field(default_factory=dict)
    skipped: str | None = None  # why the whole file is left out (binary, unreadable)

    def add(self, other: FilePartial) -> None:
        self.bytes += other.bytes
        self.chars += other.chars
        self.invalid_utf8_bytes += other.invalid_utf8_bytes
        for spec, n in other.tokens.items():
            self.tokens[spec] = self.tokens.get(spec, 0) + n
        self.skipped = self.skipped or other.skipped


ShardCounts = dict[str, FilePartial]


def count_shard(shard: Sequence[Piece], specs: Sequence[str], *,
                allow_special: bool = False) -> ShardCounts:
    """Map: count every piece of a shard with every tokenizer spec."""
    from tokcost.adapters.registry import get_tokenizer

    # One reader: with allow_special, no cut inside any tokenizer's special, ends included.
    reader = counting.Reader({spec: get_tokenizer(spec) for spec in specs},
                             allow_special=allow_special)
    return merge_shard_counts([{piece.path: _count_piece(piece, reader)} for piece in shard],
                              into={})


def _count_piece(piece: Piece, reader: Reader) -> FilePartial:
    """One piece, read as the local count reads a file, between the cuts after its ends."""
    toks, allow_special = reader.tokenizers, reader.allow_special
    part = FilePartial(tokens=dict.fromkeys(toks, 0))
    if reader.whole_specs and not piece.whole:
        raise UsageError(f"{', '.join(reader.whole_specs)} must see whole files: plan shards "
                         "with split=False")

    def count(spec: str, text: str) -> None:
        part.tokens[spec] += toks[spec].count(text, allow_special=allow_special)

    rule = reader.rule
    try:
        with open_binary(piece.path) as fh:
            if piece.start == 0:
                part.skipped = counting.sniff_binary(fh.read(counting.SNIFF_BYTES))
                if part.skipped is not None:
                    return part
            begin, stop = (counting.next_cut(fh, at, piece.size, punct=rule.punct,
                                             specials=rule.specials)
                           for at in (piece.start, piece.end))
            stream = reader.read(Window(fh, begin, stop), count, name=piece.path)
    except OSError as err:
        part.skipped = ("a folder" if isinstance(err, IsADirectoryError)
                        else f"unreadable ({err.strerror or err})")
        return part
    part.bytes, part.chars, part.invalid_utf8_bytes = (
        stream.bytes, stream.chars, stream.invalid_bytes)
    return part


def merge_shard_counts(partials: Iterable[ShardCounts],
                       into: ShardCounts | None = None) -> ShardCounts:
    """Reduce: per-file sums of shard counts, added ``into`` a table."""
    merged: ShardCounts = {} if into is None else into
    for part in partials:
        for path, fp in part.items():
            merged.setdefault(path, FilePartial(tokens={})).add(fp)
    return merged


def count_paths(inputs: Inputs, tokenizers: Mapping[str, Tokenizer], runner: Runner, *,
                allow_special: bool = False, progress: ProgressFn | None = None,
                unique: bool = False) -> CountReport:
    """``tokcost.counting.count_paths`` on a remote runner, its workers reading the shards."""
    report = counting.CountReport(specs=list(tokenizers))
    files = list_inputs(inputs, report.skipped, unique=unique,
                        timeout=getattr(runner, "timeout", READ_TIMEOUT))
    # Without unique, a file named twice is read once and reported twice, as locally.
    distinct = list({path: size for path, _, size in files}.items())
    merged: ShardCounts = {}
    if distinct:
        total = sum(size for _, size in distinct)
        split = all(t.streamable for t in tokenizers.values())
        shards = plan_shards(distinct, runner.shard_bytes(total), split=split)
        fn = partial(count_shard, specs=list(tokenizers), allow_special=allow_special)
        done = 0
        for shard, part in runner.map(fn, shards):
            merge_shard_counts([part], into=merged)
            done += sum(p.end - p.start for p in shard)
            if progress is not None:
                progress("count", done, total)
    for path, display, _ in files:
        fp = merged[path]
        if fp.skipped:
            report.skipped.append(counting.Skipped(display, fp.skipped))
            continue
        tokens = {spec: fp.tokens.get(spec, 0) for spec in tokenizers}
        report.files.append(counting.FileCount(display, fp.bytes, fp.chars, tokens,
                                               fp.invalid_utf8_bytes))
    return report


class WordCounts(Counter[str]):
    """Pre-token frequencies, with the input policy's notes per file: ``invalid_utf8_bytes``
    and ``skipped`` (they merge, and survive pickling)."""

    def __init__(self, words: Mapping[str, int] | Iterable[str] = (), *,
                 invalid_utf8_bytes: Mapping[str, int] | None = None,
                 skipped: Mapping[str, str] | None = None) -> None:
        super().__init__(words)
        self.invalid_utf8_bytes: dict[str, int] = dict(invalid_utf8_bytes or {})
        self.skipped: dict[str, str] = dict(skipped or {})

    def __reduce__(self) -> tuple[Any, ...]:
        # Counter pickles its items only; the notes go with them as the state.
        return (type(self), (dict(self),),
                {"invalid_utf8_bytes": self.invalid_utf8_bytes, "skipped": self.skipped})

    def add_notes(self, other: Mapping[str, int]) -> None:
        for path, n in getattr(other, "invalid_utf8_bytes", {}).items():
            self.invalid_utf8_bytes[path] = self.invalid_utf8_bytes.get(path, 0) + n
        for path, why in getattr(other, "skipped", {}).items():
            self.skipped.setdefault(path, why)

    def in_order(self, paths: Iterable[str]) -> WordCounts:
        rank = {p: i for i, p in enumerate(dict.fromkeys(paths))}
        for name in ("invalid_utf8_bytes", "skipped"):
            notes = getattr(self, name).items()
            setattr(self, name, dict(sorted(notes, key=lambda kv: rank.get(kv[0], len(rank)))))
        return self

    @property
    def warnings(self) -> tuple[str, ...]:
        skipped = (counting.Skipped(p, why) for p, why in self.skipped.items())
        return counting.input_warnings(skipped, self.invalid_utf8_bytes.items())


def pretokenize_texts(texts: Iterable[str], spec: PretokenizeSpec) -> Counter[str]:
    """Map: pre-token frequencies of texts, split into lines as the BPE trainer reads."""
    from tokcost.bpe.pretokenize import count_blocks
    return count_blocks(texts, spec)


def pretokenize_shard(shard: Sequence[Piece], spec: PretokenizeSpec,
                      into: WordCounts | None = None) -> WordCounts:
    """Map: pre-token frequencies of the lines that *start* inside each piece."""
    from tokcost.bpe.pretokenize import count_blocks, line_range, training_file
    counts = WordCounts() if into is None else into
    for piece in shard:
        path = piece.path
        with training_file(path), open_binary(path) as fh:
            reason = counting.sniff_binary(fh.read(counting.SNIFF_BYTES))
            if reason is not None:
                counts.skipped.setdefault(path, reason)
                continue
            blocks = counting.LineBlocks(Window(fh, *line_range(fh, piece)))
            count_blocks(blocks, spec, counts)
        if blocks.invalid_bytes:
            counts.invalid_utf8_bytes[path] = (counts.invalid_utf8_bytes.get(path, 0)
                                               + blocks.invalid_bytes)
    if into is None:
        spec.prune(counts)  # a reader's end, as the local readers end
    return counts


def merge_word_counts(partials: Iterable[Mapping[str, int]]) -> WordCounts:
    """Reduce: the sum of pre-token frequency tables, with their notes."""
    merged = WordCounts()
    for part in partials:
        merged.update(part)
        merged.add_notes(part)
    return merged
