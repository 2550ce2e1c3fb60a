"""Pure map and reduce functions: count or pre-tokenize a part of a corpus, merge the parts.

They hold no state and talk to no cluster, so any engine can run them — Dask
(``tokcost.scale.engine``), Spark's ``mapPartitions``, Ray tasks, a process pool.
Tokenizers travel as *specs* (``"tiktoken:o200k_base"``) and are built once per
worker process; results are small, picklable and merge in any order.

Map over texts (each text one document) or over shards of files::

    >>> part = count_texts_partial(["hello world", "hi"], ["tiktoken:cl100k_base"])
    >>> part.tokens
    {'tiktoken:cl100k_base': 3}
    >>> sorted(pretokenize_texts(["a a\\na\\n"], "gpt2").items())
    [('\\n', 2), (' a', 1), ('a', 2)]
"""

from __future__ import annotations

import operator
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import TYPE_CHECKING, Any

from tokcost.errors import UsageError
from tokcost.scale.shards import Piece, Window, open_binary

if TYPE_CHECKING:
    from tokcost.counting import Reader


# --- counting ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TextCounts:
    """Token totals of some texts, per tokenizer spec. ``a + b`` merges two partials."""

    texts: int = 0
    chars: int = 0
    tokens: Mapping[str, int] = field(default_factory=dict)

    def __add__(self, other: TextCounts) -> TextCounts:
        tokens = dict(self.tokens)
        for spec, n in other.tokens.items():
            tokens[spec] = tokens.get(spec, 0) + n
        return TextCounts(self.texts + other.texts, self.chars + other.chars, tokens)


def count_texts_partial(
    texts: Iterable[str], specs: Sequence[str], *, allow_special: bool = False
) -> TextCounts:
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


#: A shard's counts: file path -> what its pieces in the shard counted.
ShardCounts = dict[str, FilePartial]


def count_shard(
    shard: Sequence[Piece], specs: Sequence[str], *, allow_special: bool = False
) -> ShardCounts:
    """Map: count every piece of a shard with every tokenizer spec.

    Tokenizers that are not ``streamable`` (they must see a whole text) need
    whole-file pieces (``plan_shards(..., split=False)``).
    """
    from tokcost.adapters.registry import get_tokenizer
    from tokcost.counting import Reader

    # One reader for the shard: with allow_special, it never cuts inside a special
    # token of any of the tokenizers, here or at a piece's two ends.
    reader = Reader({spec: get_tokenizer(spec) for spec in specs}, allow_special=allow_special)
    out: ShardCounts = {}
    for piece in shard:
        part = _count_piece(piece, reader)
        if piece.path in out:
            out[piece.path].add(part)
        else:
            out[piece.path] = part
    return out


def _count_piece(piece: Piece, reader: Reader) -> FilePartial:
    """One piece, read as the local engine reads a file: the same sniffing, cut rule
    and reader (``tokcost.counting``), between the cuts at or after its two ends."""
    from tokcost.counting import SNIFF_BYTES, next_cut, sniff_binary

    toks, allow_special = reader.tokenizers, reader.allow_special
    part = FilePartial(tokens=dict.fromkeys(toks, 0))
    whole_specs = [s for s, t in toks.items() if not t.streamable]
    if whole_specs and not piece.whole:
        raise UsageError(
            f"{', '.join(whole_specs)} must see whole files: plan shards with split=False"
        )

    def count(spec: str, text: str) -> None:
        part.tokens[spec] += toks[spec].count(text, allow_special=allow_special)

    rule = reader.rule
    try:
        with open_binary(piece.path) as fh:
            if piece.start == 0:
                part.skipped = sniff_binary(fh.read(SNIFF_BYTES))
                if part.skipped is not None:
                    return part
            begin = next_cut(fh, piece.start, piece.size, punct=rule.punct,
                             specials=rule.specials)
            stop = next_cut(fh, piece.end, piece.size, punct=rule.punct, specials=rule.specials)
            stream = reader.read(Window(fh, begin, stop), count, name=piece.path)
    except IsADirectoryError:
        part.skipped = "a folder"
        return part
    except OSError as err:
        part.skipped = f"unreadable ({err.strerror or err})"
        return part
    part.bytes = stream.bytes
    part.chars = stream.chars
    part.invalid_utf8_bytes = stream.invalid_bytes
    return part


def merge_shard_counts(partials: Iterable[ShardCounts]) -> ShardCounts:
    """Reduce: per-file sums of shard counts (in any order).

    >>> a = {"x.txt": FilePartial(bytes=3, tokens={"s": 1})}
    >>> b = {"x.txt": FilePartial(bytes=4, tokens={"s": 2})}
    >>> merge_shard_counts([a, b])["x.txt"].tokens
    {'s': 3}
    """
    merged: ShardCounts = {}
    for part in partials:
        for path, fp in part.items():
            if path in merged:
                merged[path].add(fp)
            else:
                merged[path] = FilePartial(
                    fp.bytes, fp.chars, fp.invalid_utf8_bytes, dict(fp.tokens), fp.skipped
                )
    return merged


# --- BPE pre-tokenization ---------------------------------------------------------------


class WordCounts(Counter[str]):
    """Pre-token frequencies, and what the input policy found in the files they come
    from: ``invalid_utf8_bytes`` (file -> bytes read as U+FFFD) and ``skipped`` (file ->
    why it was left out: binary). It is a ``Counter``, so it trains (``train_from_counts``)
    and compares as one; ``merge_word_counts`` merges the notes too, and they survive
    pickling on their way from a worker to the driver.

    >>> import pickle
    >>> w = pickle.loads(pickle.dumps(WordCounts({"a": 2}, invalid_utf8_bytes={"x.txt": 1})))
    >>> w == {"a": 2}, w.warnings
    (True, ('x.txt: 1 byte of invalid UTF-8 replaced with U+FFFD',))
    """

    def __init__(
        self,
        words: Mapping[str, int] | Iterable[str] = (),
        *,
        invalid_utf8_bytes: Mapping[str, int] | None = None,
        skipped: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(words)
        self.invalid_utf8_bytes: dict[str, int] = dict(invalid_utf8_bytes or {})
        self.skipped: dict[str, str] = dict(skipped or {})

    def __reduce__(self) -> tuple[Any, ...]:
        # Counter pickles its items only; the notes go with them as the state.
        return (type(self), (dict(self),),
                {"invalid_utf8_bytes": self.invalid_utf8_bytes, "skipped": self.skipped})

    def add_notes(self, other: WordCounts) -> None:
        """Take ``other``'s notes in: replaced bytes add up per file, a skip is kept once."""
        for path, n in other.invalid_utf8_bytes.items():
            self.invalid_utf8_bytes[path] = self.invalid_utf8_bytes.get(path, 0) + n
        for path, why in other.skipped.items():
            self.skipped.setdefault(path, why)

    def in_order(self, paths: Iterable[str]) -> WordCounts:
        """The notes ordered as ``paths`` (partials arrive in any order); returns self."""
        order = list(dict.fromkeys(paths))
        rank = {p: i for i, p in enumerate(order)}
        last = len(order)
        self.invalid_utf8_bytes = dict(sorted(self.invalid_utf8_bytes.items(),
                                              key=lambda kv: rank.get(kv[0], last)))
        self.skipped = dict(sorted(self.skipped.items(), key=lambda kv: rank.get(kv[0], last)))
        return self

    @property
    def warnings(self) -> tuple[str, ...]:
        """The notes in the input policy's words, as every command gives them."""
        from tokcost.counting import Skipped, input_warnings

        return input_warnings((Skipped(p, why) for p, why in self.skipped.items()),
                              self.invalid_utf8_bytes.items())


def pretokenize_texts(texts: Iterable[str], pattern: str) -> Counter[str]:
    """Map: pre-token frequencies of texts, each split into lines at ``"\\n"`` first,
    as the BPE trainer reads its files (``pattern``: gpt2, cl100k, o200k or a regex)."""
    from tokcost.bpe.pretokenize import count_block, resolve_pattern

    regex, _ = resolve_pattern(pattern)
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(count_block(text, regex))
    return counts


def pretokenize_shard(shard: Sequence[Piece], pattern: str) -> WordCounts:
    """Map: pre-token frequencies of the lines that *start* inside each piece, as the BPE
    trainer reads a file, under the input policy of every command.

    Each piece sniffs its file's first bytes (``tokcost.counting.sniff_binary``), so
    all pieces of a binary file agree to skip it (``skipped``). The lines are found by
    the trainer's ``line_start`` and decoded by the policy's ``LineBlocks``, which
    counts the bytes it replaces (``invalid_utf8_bytes``): neighbouring pieces read
    disjoint lines, so their counts add up to the file's.
    """
    from tokcost.bpe.pretokenize import counting_cap, prune_counts, resolve_pattern

    regex, _ = resolve_pattern(pattern)
    counts = WordCounts()
    for piece in shard:
        _pretokenize_piece(piece, regex, counts)
    cap = counting_cap(regex)
    if cap is not None:  # a reader's end, as the local readers end (TrainerConfig's rule)
        prune_counts(counts, cap)
    return counts


def _pretokenize_piece(piece: Piece, regex: str, into: WordCounts) -> None:
    from tokcost.bpe.pretokenize import (
        _cap_while_counting,
        count_block,
        counting_cap,
        line_start,
        training_file,
    )
    from tokcost.counting import SNIFF_BYTES, LineBlocks, sniff_binary

    path = piece.path
    with training_file(path), open_binary(path) as fh:
        reason = sniff_binary(fh.read(SNIFF_BYTES))
        if reason is not None:
            into.skipped.setdefault(path, reason)
            return
        size = fh.seek(0, os.SEEK_END)  # as it is now, as the trainer reads it
        begin = line_start(fh, piece.start, size)
        stop = line_start(fh, piece.end, size)
        blocks = LineBlocks(Window(fh, begin, stop))
        cap = counting_cap(regex)  # --max-pretokens: bound the table as the local readers do
        for block in blocks:
            into.update(count_block(block, regex))
            _cap_while_counting(into, cap)
    if blocks.invalid_bytes:
        into.invalid_utf8_bytes[path] = into.invalid_utf8_bytes.get(path, 0) + blocks.invalid_bytes


def merge_word_counts(partials: Iterable[Mapping[str, int]]) -> WordCounts:
    """Reduce: the sum of pre-token frequency tables (in any order), with the notes of
    those that are ``WordCounts``.

    >>> merge_word_counts([{"a": 1}, {"a": 2, "b": 1}])
    WordCounts({'a': 3, 'b': 1})
    """
    merged = WordCounts()
    for part in partials:
        merged.update(part)
        if isinstance(part, WordCounts):
            merged.add_notes(part)
    return merged
