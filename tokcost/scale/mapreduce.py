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
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import reduce
from typing import TYPE_CHECKING, BinaryIO

from tokcost.errors import InputError, UsageError
from tokcost.scale.shards import Piece, Window, next_cut, next_line_start, open_binary

if TYPE_CHECKING:
    from tokcost.adapters.base import Tokenizer

SNIFF_BYTES = 8000  # as tokcost.counting: a NUL byte in the first 8000 bytes means binary


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

    toks = {spec: get_tokenizer(spec) for spec in specs}
    out: ShardCounts = {}
    for piece in shard:
        part = _count_piece(piece, toks, allow_special)
        if piece.path in out:
            out[piece.path].add(part)
        else:
            out[piece.path] = part
    return out


def _count_piece(piece: Piece, toks: Mapping[str, Tokenizer], allow_special: bool) -> FilePartial:
    from tokcost.counting import MAX_WHOLE_CHARS, TextStream

    part = FilePartial(tokens=dict.fromkeys(toks, 0))
    whole_specs = [s for s, t in toks.items() if not t.streamable]
    if whole_specs and not piece.whole:
        raise UsageError(
            f"{', '.join(whole_specs)} must see whole files: plan shards with split=False"
        )
    try:
        with open_binary(piece.path) as fh:
            if piece.start == 0:
                head = fh.read(SNIFF_BYTES)
                nul = head.find(b"\x00")
                if nul >= 0:
                    part.skipped = f"binary (NUL byte at offset {nul})"
                    return part
            punct = not allow_special  # never cut inside <|...|> when it is special
            begin = next_cut(fh, piece.start, piece.size, punct=punct)
            stop = next_cut(fh, piece.end, piece.size, punct=punct)
            stream = TextStream(_as_binary(Window(fh, begin, stop)), punct=punct)
            whole: list[str] = []
            whole_chars = 0
            for chunk in stream.chunks():
                for spec, tok in toks.items():
                    if spec in whole_specs:
                        continue
                    part.tokens[spec] += tok.count(chunk, allow_special=allow_special)
                if whole_specs:
                    whole_chars += len(chunk)
                    if whole_chars > MAX_WHOLE_CHARS:
                        raise InputError(
                            f"{piece.path}: too large for exact counting with "
                            f"{', '.join(whole_specs)} (over {MAX_WHOLE_CHARS >> 20} M "
                            "characters); use a tiktoken or bpe tokenizer, or split the file"
                        )
                    whole.append(chunk)
            if whole_specs:
                text = "".join(whole)
                for spec in whole_specs:
                    part.tokens[spec] += toks[spec].count(text, allow_special=allow_special)
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


def _as_binary(window: Window) -> BinaryIO:
    # TextStream only calls read(n); a Window is all it needs.
    return window  # type: ignore[return-value]


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


def pretokenize_texts(texts: Iterable[str], pattern: str) -> Counter[str]:
    """Map: pre-token frequencies of texts, each split into lines at ``"\\n"`` first,
    as the BPE trainer reads its files (``pattern``: gpt2, cl100k, o200k or a regex)."""
    from tokcost.bpe.pretokenize import count_block, resolve_pattern

    regex, _ = resolve_pattern(pattern)
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(count_block(text, regex))
    return counts


def pretokenize_shard(shard: Sequence[Piece], pattern: str, block_bytes: int = 1 << 20) -> (
    Counter[str]
):
    """Map: pre-token frequencies of the lines that *start* inside each piece.

    Blocks are cut after ``b"\\n"``, so a UTF-8 character is never split and
    memory stays bounded (a line longer than a block is held whole).
    """
    from tokcost.bpe.pretokenize import count_block, resolve_pattern

    regex, _ = resolve_pattern(pattern)
    counts: Counter[str] = Counter()
    for piece in shard:
        try:
            with open_binary(piece.path) as fh:
                begin = next_line_start(fh, piece.start, piece.size)
                stop = next_line_start(fh, piece.end, piece.size)
                window = Window(fh, begin, stop)
                carry = b""
                offset = begin
                while True:
                    block = window.read(block_bytes)
                    data = carry + block
                    if not data:
                        break
                    cut = data.rfind(b"\n") + 1 if block else len(data)
                    if cut == 0:
                        carry = data
                        continue
                    carry = data[cut:]
                    try:
                        text = data[:cut].decode("utf-8")
                    except UnicodeDecodeError as exc:
                        raise InputError(
                            f"{piece.path} is not UTF-8 text (byte {offset + exc.start}); "
                            "convert it (iconv -t UTF-8) or leave it out"
                        ) from None
                    offset += cut
                    counts.update(count_block(text, regex))
        except IsADirectoryError:
            raise UsageError(
                f"{piece.path} is a directory; pass the text files to train on"
            ) from None
        except FileNotFoundError:
            raise UsageError(f"training file not found: {piece.path}") from None
        except OSError as exc:
            raise InputError(f"cannot read {piece.path}: {exc.strerror or exc}") from None
    return counts


def merge_word_counts(partials: Iterable[Mapping[str, int]]) -> Counter[str]:
    """Reduce: the sum of pre-token frequency tables (in any order).

    >>> merge_word_counts([{"a": 1}, {"a": 2, "b": 1}])
    Counter({'a': 3, 'b': 1})
    """
    merged: Counter[str] = Counter()
    for part in partials:
        merged.update(part)
    return merged
