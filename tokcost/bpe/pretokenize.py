"""Pre-tokenization: split text into the pieces BPE merges within.

The named patterns are tiktoken's own regexes, character for character (a test checks
them against tiktoken's). They run on the ``regex`` package, which knows ``\\p{L}`` and
possessive quantifiers; ASCII text takes a faster stdlib-``re`` path that cuts it the
same way (a property test checks that).

Files are read as bytes and cut only at ``"\\n"`` (each line keeps it), as Hugging Face
``tokenizers`` reads training files: CRLF survives, and ``str.splitlines`` (which also
cuts at ``\\x0b``, ``\\u2028`` ...) never changes the corpus. A line is the unit the
pattern runs over. Special tokens are split out of each line first, as HF's
``AddedVocabulary`` splits its added tokens (leftmost, then longest), so no pre-token
crosses one. What a reader needs travels as one frozen ``PretokenizeSpec``.
"""

from __future__ import annotations

import heapq
import os
import re
import sys
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache, partial
from itertools import accumulate, chain
from pathlib import Path
from typing import IO, TYPE_CHECKING

# The named patterns are tiktoken's own regexes, kept in one place beside the
# encodings they belong to.
from tokcost.adapters.openai_encodings import PATTERNS as PATTERNS
from tokcost.errors import InputError, UsageError, suggest
from tokcost.runner import LocalRunner, Piece, Runner, plan_shards

if TYPE_CHECKING:
    import regex

#: Files are read in pieces of this many bytes (cut after the last newline).
BLOCK_CHARS = 1 << 20
SCAN_BYTES = 4096  # read size while looking for the next line start

# A line with its "\n", or the last line without one.
_LINE_SPLIT = r"[^\n]*\n|[^\n]+"

ProgressFn = Callable[[str, int, int], None]


class PatternName(str, Enum):
    """The named pre-tokenization patterns (tiktoken's regexes); any other regex is a ``str``.

    >>> sorted(name.value for name in PatternName) == sorted(PATTERNS)
    True
    """

    GPT2 = "gpt2"
    CL100K = "cl100k"
    O200K = "o200k"


@dataclass(frozen=True)
class PretokenizeSpec:
    """How a reader pre-tokenizes: the ``pattern`` (a name is read as its regex), the
    ``special_tokens`` split out first, and ``max_pretokens``, the cap on distinct
    pre-tokens a table keeps (``tokcost.bpe.train.TrainerConfig`` states the rule).

    >>> spec = PretokenizeSpec("gpt2", ("<s>", "<s>"), max_pretokens=10)
    >>> spec.pattern == PATTERNS["gpt2"], spec.special_tokens, spec.counting_cap
    (True, ('<s>',), 11)
    """

    pattern: str = PATTERNS["o200k"]
    special_tokens: tuple[str, ...] = ()
    max_pretokens: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "pattern", resolve_pattern(self.pattern)[0])
        object.__setattr__(self, "special_tokens", tuple(dict.fromkeys(self.special_tokens)))

    @property
    def counting_cap(self) -> int | None:
        """The cap while counting: the special tokens' occurrences are counted as
        pre-tokens, then taken out before training, so they take no learned one's place."""
        return None if self.max_pretokens is None else self.max_pretokens + len(
            self.special_tokens)

    def merge(self, counts: dict[str, int], part: Mapping[str, int]) -> None:
        """Add a reader's table into ``counts``, bounded as the readers are."""
        for word, n in part.items():
            counts[word] = counts.get(word, 0) + n
        _cap_while_counting(counts, self.counting_cap)

    def prune(self, counts: dict[str, int]) -> None:
        """A table's last prune, to ``counting_cap`` (a reader's end, the merged table's)."""
        if self.counting_cap is not None:
            prune_counts(counts, self.counting_cap)


def prune_counts(counts: dict[str, int], max_pretokens: int) -> bool:
    """Keep the ``max_pretokens`` most frequent pre-tokens of ``counts`` (in place);
    among equal counts, those that entered the table first. True if any was dropped.

    >>> c = Counter({"a": 1, "b": 3, "c": 1, "d": 2})
    >>> prune_counts(c, 3), dict(c)
    (True, {'a': 1, 'b': 3, 'd': 2})
    """
    if len(counts) <= max_pretokens:
        return False
    if max_pretokens <= 0:
        counts.clear()
        return True
    # The smallest count kept, and how many of that count fit after the larger ones.
    floor = heapq.nlargest(max_pretokens, counts.values())[-1]
    room = max_pretokens - sum(1 for n in counts.values() if n > floor)
    kept: dict[str, int] = {}
    for word, n in counts.items():
        if n > floor or (n == floor and room > 0):
            kept[word] = n
            room -= n == floor
    counts.clear()
    counts.update(kept)
    return True


def _cap_while_counting(counts: dict[str, int], max_pretokens: int | None) -> None:
    """While a table still grows, cut it to the cap once it holds twice the cap:
    memory stays bounded by 2 x max_pretokens entries plus one block's pieces."""
    if max_pretokens is not None and len(counts) > 2 * max_pretokens:
        prune_counts(counts, max_pretokens)


@lru_cache(maxsize=16)
def special_regex(special_tokens: tuple[str, ...]) -> regex.Pattern[str]:
    """Finds special tokens as HF's ``AddedVocabulary`` does: leftmost, then longest."""
    import regex

    ordered = sorted(special_tokens, key=len, reverse=True)
    return regex.compile("|".join(regex.escape(s) for s in ordered))


def resolve_pattern(pattern: PatternName | str) -> tuple[str, str | None]:
    """``"cl100k"`` -> (tiktoken's regex, ``"cl100k"``); a regex -> (regex, None).

    >>> resolve_pattern("gpt2")[1], resolve_pattern(PatternName.O200K)[1]
    ('gpt2', 'o200k')
    """
    if isinstance(pattern, PatternName):
        pattern = pattern.value
    if pattern in PATTERNS:
        return PATTERNS[pattern], pattern
    for name, pat in PATTERNS.items():
        if pat == pattern:
            return pat, name
    if re.fullmatch(r"[a-z][a-z0-9_]*", pattern):
        # A bare lowercase word is a mistyped name far more often than a regex.
        raise UsageError(
            f"unknown pattern name '{pattern}'{suggest(pattern, PATTERNS)}; use gpt2, cl100k, "
            "o200k or a regular expression"
        )
    compile_pattern(pattern)  # fail early with a clear message
    return pattern, None


@lru_cache(maxsize=16)
def compile_pattern(pattern: str) -> regex.Pattern[str]:
    import regex

    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise UsageError(
            f"invalid pre-tokenization regex {pattern!r}: {exc}; "
            f"use gpt2, cl100k, o200k or a valid regex"
        ) from exc


def _ascii_translate(pattern: str) -> str:
    """Rewrite ``pattern`` for the stdlib ``re`` engine, valid on ASCII text only:
    ``\\p{X}`` and ``\\s`` become the ASCII characters they match (read from
    ``regex`` itself, so both engines agree)."""
    import re

    import regex

    ascii_chars = "".join(map(chr, range(128)))

    def chars(prop: str) -> str:
        return "".join(re.escape(c) for c in regex.findall(prop, ascii_chars))

    out: list[str] = []
    i = 0
    in_class = False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            nxt = pattern[i + 1]
            if nxt == "p":
                j = pattern.index("}", i)
                body = chars(pattern[i : j + 1])
                out.append(body if in_class else (f"[{body}]" if body else "(?!)"))
                i = j + 1
                continue
            if nxt in "sS":
                body = chars(r"\s")
                if in_class:
                    if nxt == "S":
                        raise ValueError("\\S inside a class")
                    out.append(body)
                else:
                    out.append(f"[{'^' if nxt == 'S' else ''}{body}]")
                i += 2
                continue
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if c == "[":
            in_class = True
        elif c == "]":
            in_class = False
        out.append(c)
        i += 1
    return "".join(out)


@lru_cache(maxsize=8)
def _ascii_fast(pattern: str) -> Callable[[str], list[str]] | None:
    """A stdlib-``re`` splitter for ASCII text (about 2.5x faster than ``regex``).

    Only for the named patterns (tests prove the two engines cut ASCII text the
    same way) and on Python 3.11+ (possessive quantifiers in ``re``).
    """
    if sys.version_info < (3, 11) or pattern not in PATTERNS.values():
        return None
    import re

    findall: Callable[[str], list[str]] = re.compile(_ascii_translate(pattern)).findall
    return findall


def splitter(pattern: str) -> Callable[[str], list[str]]:
    """``text -> pieces`` for a pattern known to match every character (the named
    patterns); ASCII text takes the fast stdlib-``re`` path."""
    slow: Callable[[str], list[str]] = compile_pattern(pattern).findall
    fast = _ascii_fast(pattern)
    if fast is None:
        return slow

    def split(text: str) -> list[str]:
        return fast(text) if text.isascii() else slow(text)

    return split


def split_text(text: str, pattern: str) -> list[str]:
    """All pieces of ``text``: the matches and, like HF's ``Split(..., "isolated")``,
    the gaps between them (tiktoken's patterns leave no gaps).

    >>> split_text("Hello world!!", PATTERNS["gpt2"])
    ['Hello', ' world', '!!']
    """
    pat = compile_pattern(pattern)
    pieces: list[str] = pat.findall(text)
    if sum(map(len, pieces)) == len(text):
        return pieces
    pieces = []
    pos = 0
    for m in pat.finditer(text):
        start, end = m.span()
        if start > pos:
            pieces.append(text[pos:start])
        if end > start:
            pieces.append(text[start:end])
        pos = end
    if pos < len(text):
        pieces.append(text[pos:])
    return pieces


def pretokenize(text: str, spec: PretokenizeSpec) -> list[str]:
    """The pre-tokens of one sequence as HF's trainer sees them: the special tokens
    split out first (each one a pre-token), the text between them split by the pattern.

    >>> pretokenize("end<|endoftext|> of", PretokenizeSpec("gpt2", ("<|endoftext|>",)))
    ['end', '<|endoftext|>', ' of']
    """
    pattern, specials = spec.pattern, spec.special_tokens
    if not specials:
        return split_text(text, pattern)
    # tiktoken's patterns leave no gaps: their splitter (ASCII fast path) does.
    split: Callable[[str], list[str]] = (
        splitter(pattern) if pattern in PATTERNS.values() else lambda t: split_text(t, pattern))
    pieces: list[str] = []
    pos = 0
    for m in special_regex(specials).finditer(text):
        if m.start() > pos:
            pieces += split(text[pos : m.start()])
        pieces.append(m.group())
        pos = m.end()
    if pos < len(text):
        pieces += split(text[pos:])
    return pieces


def _lines_with_specials(block: str, lines: list[str], find: regex.Pattern[str]) -> set[int]:
    """The indices of the ``lines`` of ``block`` that a special token's match touches.

    Found in the whole block at once (a search per line costs more than the split);
    a match that runs across a line break only selects lines, which ``pretokenize``
    then reads one by one, so no match is taken across lines, as HF reads them.
    """
    spans = [m.span() for m in find.finditer(block)]
    if not spans:
        return set()
    ends = list(accumulate(map(len, lines)))  # ends[i]: the offset just past line i
    held: set[int] = set()
    for start, stop in spans:
        held.update(range(bisect_right(ends, start), bisect_right(ends, stop - 1) + 1))
    return held


def count_block(block: str, spec: PretokenizeSpec) -> Counter[str]:
    """Pre-token frequencies of a block of whole lines, each line split on its own
    (as ``pretokenize`` splits it).

    >>> sorted(count_block("a a\\na\\n", PretokenizeSpec("gpt2")).items())
    [('\\n', 2), (' a', 1), ('a', 2)]
    """
    lines = _lines(block)
    counts: Counter[str] = Counter()
    pattern = spec.pattern
    if spec.special_tokens:
        held = _lines_with_specials(block, lines, special_regex(spec.special_tokens))
        if held:
            # Only the lines that hold a special token leave the fast paths below.
            for i in held:
                counts.update(pretokenize(lines[i], spec))
            lines = [line for i, line in enumerate(lines) if i not in held]
    if pattern in PATTERNS.values():
        # tiktoken's patterns match every character: no gaps to look for.
        fast = _ascii_fast(pattern)
        _count_pieces(lines, fast if fast is not None and block.isascii() else splitter(pattern),
                      counts)
        return counts
    _count_pieces(lines, lambda line: split_text(line, pattern), counts)
    return counts


# The line breaks of str.splitlines other than "\n"; a block without them splits at
# "\n" alone, so splitlines (a C loop) cuts it as _LINE_SPLIT does, 5-7x faster.
_OTHER_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def _lines(block: str) -> list[str]:
    """The lines of ``block``, each with its ``"\n"`` (the last one may lack it)."""
    if not any(ch in block for ch in _OTHER_BREAKS):
        return block.splitlines(keepends=True)
    import regex

    found: list[str] = regex.findall(_LINE_SPLIT, block)
    return found


def _count_pieces(
    lines: list[str], split: Callable[[str], list[str]], counts: Counter[str]
) -> None:
    """Add the pieces of ``lines`` to ``counts``, splitting each distinct line once.

    Text repeats lines (blank ones, braces, licence headers, the same file twice):
    in the benchmark corpus 44% of a block's lines are repeats. The lines seen n
    times are split together and their pieces added n times over.
    """
    seen = Counter(lines)
    if len(seen) == len(lines):
        counts.update(chain.from_iterable(map(split, lines)))
        return
    by_times: dict[int, list[str]] = {}
    for line, n in seen.items():
        group = by_times.get(n)
        if group is None:
            by_times[n] = [line]
        else:
            group.append(line)
    for n, group in by_times.items():
        if n == 1:
            counts.update(chain.from_iterable(map(split, group)))
            continue
        for piece, k in Counter(chain.from_iterable(map(split, group))).items():
            counts[piece] += k * n


def count_blocks(blocks: Iterable[str], spec: PretokenizeSpec,
                 into: Counter[str] | None = None) -> Counter[str]:
    """One reader's table: the pre-tokens of blocks of whole lines, capped as it grows."""
    counts: Counter[str] = Counter() if into is None else into
    for block in blocks:
        counts.update(count_block(block, spec))
        _cap_while_counting(counts, spec.counting_cap)
    return counts


def line_start(fh: IO[bytes], offset: int, size: int) -> int:
    """The first byte offset ``>= offset`` that starts a line (follows ``"\\n"``), or ``size``.

    Scans in blocks, so a line longer than memory costs no more than a short one.
    """
    if offset <= 0:
        return 0
    if offset >= size:
        return size
    pos = offset - 1
    fh.seek(pos)
    while pos < size:
        block = fh.read(SCAN_BYTES)
        if not block:
            break
        nl = block.find(b"\n")
        if nl >= 0:
            return pos + nl + 1
        pos += len(block)
    return size


def line_range(fh: IO[bytes], piece: Piece) -> tuple[int, int]:
    """The bytes of the lines that *start* inside ``piece``: readers of adjacent pieces
    agree on the line across their border without talking."""
    size = fh.seek(0, os.SEEK_END)  # as the file is now
    return line_start(fh, piece.start, size), line_start(fh, piece.end, size)


def _line_blocks(fh: IO[bytes], begin: int, stop: int) -> Iterator[str]:
    """Bytes ``[begin, stop)`` in blocks cut after ``b"\\n"`` (never inside a character),
    invalid UTF-8 read as U+FFFD: each block replaces what the whole file would."""
    fh.seek(begin)
    left, carry = stop - begin, b""
    while left > 0 or carry:
        chunk = fh.read(min(BLOCK_CHARS, left)) if left > 0 else b""
        left = left - len(chunk) if chunk else 0  # a file that shrank ends here
        data = carry + chunk
        cut = data.rfind(b"\n") + 1 if left > 0 else len(data)
        carry = data[cut:]
        if cut:
            yield data[:cut].decode("utf-8", "replace")


@contextmanager
def training_file(path: str) -> Iterator[None]:
    """The trainer's words for a training file it cannot read, on any runner."""
    try:
        yield
    except IsADirectoryError:
        raise UsageError(f"{path} is a directory; pass the text files to train on") from None
    except FileNotFoundError:
        raise UsageError(f"training file not found: {path}") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None


def count_pieces(shard: Sequence[Piece], spec: PretokenizeSpec,
                 into: Counter[str] | None = None) -> Counter[str]:
    """Map: the pre-tokens of the lines that start in each piece of local files (any split
    of a file gives the counts of the whole); one reader, pruned at its end (unless it
    counts ``into`` a table that goes on)."""
    counts: Counter[str] = Counter() if into is None else into
    for piece in shard:
        with training_file(piece.path), open(piece.path, "rb") as fh:
            count_blocks(_line_blocks(fh, *line_range(fh, piece)), spec, counts)
    if into is None:
        spec.prune(counts)
    return counts


def pretokenize_files(
    files: Sequence[tuple[str, int]], spec: PretokenizeSpec, runner: Runner, *,
    read: Callable[..., Counter[str]] = count_pieces, progress: ProgressFn | None = None,
    into: Counter[str] | None = None,
) -> Counter[str]:
    """Map ``read(shard, spec=spec)`` over shards of ``(path, size)`` files on ``runner``,
    merging the tables (and the notes of tables that carry them: ``add_notes``) into
    ``into``; one worker here reads straight into it, as one reader (no tables to merge).
    ``progress("pretokenize", bytes_done, bytes_total)`` as shards end."""
    counts: Counter[str] = Counter() if into is None else into
    notes = getattr(counts, "add_notes", None)
    total = sum(size for _, size in files)
    done = 0
    shards = plan_shards(files, runner.shard_bytes(total))
    alone = runner.in_process and runner.workers == 1
    fn = partial(read, spec=spec, into=counts) if alone else partial(read, spec=spec)
    for shard, part in runner.map(fn, shards):
        if part is not counts:
            spec.merge(counts, part)
            if notes is not None:
                notes(part)
        done += sum(p.end - p.start for p in shard)
        if progress is not None:
            progress("pretokenize", done, total)
    spec.prune(counts)
    return counts


def count_words(
    paths: Iterable[str | Path], spec: PretokenizeSpec, *, jobs: int = 1,
    progress: ProgressFn | None = None,
) -> Counter[str]:
    """Frequency of every distinct pre-token in local files, read by ``jobs`` processes
    (the counts are the same for any number; with a cap, see ``PretokenizeSpec``)."""
    files: list[tuple[str, int]] = []
    for p in paths:
        with training_file(str(p)):
            if Path(p).is_dir():
                raise IsADirectoryError
            files.append((str(p), os.stat(p).st_size))
    return pretokenize_files(files, spec, LocalRunner(jobs, processes=True), progress=progress)
