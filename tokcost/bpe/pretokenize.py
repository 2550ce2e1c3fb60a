"""Pre-tokenization: split text into the pieces BPE merges within, and count them in files
(cut only at ``"\\n"``, as Hugging Face reads them; each line alone, its special tokens first)."""

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
from itertools import accumulate, chain, pairwise
from pathlib import Path
from typing import IO, TYPE_CHECKING

from tokcost.adapters.openai_encodings import PATTERNS as PATTERNS
from tokcost.bpe.core import compiled_core
from tokcost.errors import InputError, UsageError, arg, suggest
from tokcost.limits import regex_problem
from tokcost.runner import LocalRunner, Piece, Runner, plan_shards

if TYPE_CHECKING:
    import regex

BLOCK_CHARS = 1 << 20  # files are read in pieces of this many bytes, cut after a newline
SCAN_BYTES = 4096  # read size while looking for the next line start
_LINE_SPLIT = r"[^\n]*\n|[^\n]+"

ProgressFn = Callable[[str, int, int], None]


class PatternName(str, Enum):
    """The named pre-tokenization patterns (tiktoken's regexes); any other regex is a ``str``."""

    GPT2 = "gpt2"
    CL100K = "cl100k"
    O200K = "o200k"


@dataclass(frozen=True)
class PretokenizeSpec:
    """How a reader pre-tokenizes: the pattern (a name is read as its regex), the special
    tokens split out first, the cap on distinct pre-tokens a table keeps (docs/bpe.md)."""

    pattern: str = PATTERNS["o200k"]
    special_tokens: tuple[str, ...] = ()
    max_pretokens: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "pattern", resolve_pattern(self.pattern)[0])
        object.__setattr__(self, "special_tokens", tuple(dict.fromkeys(self.special_tokens)))

    @property
    def counting_cap(self) -> int | None:
        """The cap raised by the special tokens, counted now and taken out before training."""
        return None if self.max_pretokens is None else self.max_pretokens + len(self.special_tokens)

    def merge(self, counts: dict[str, int], part: Mapping[str, int]) -> None:
        """Add a reader's table into ``counts``, bounded as the readers are."""
        for word, n in part.items():
            counts[word] = counts.get(word, 0) + n
        _cap_while_counting(counts, self.counting_cap)

    def prune(self, counts: dict[str, int]) -> None:
        """A table's last prune (a reader's end, the merged table's)."""
        if self.counting_cap is not None:
            prune_counts(counts, self.counting_cap)


def prune_counts(counts: dict[str, int], max_pretokens: int) -> bool:
    """Keep the ``max_pretokens`` most frequent (ties: the first entered); True if any went."""
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
    """Cut a growing table to the cap once it holds twice the cap."""
    if max_pretokens is not None and len(counts) > 2 * max_pretokens:
        prune_counts(counts, max_pretokens)


@lru_cache(maxsize=16)
def special_regex(special_tokens: tuple[str, ...]) -> regex.Pattern[str]:
    """Finds special tokens as HF's ``AddedVocabulary`` does: leftmost, then longest."""
    import regex
    ordered = sorted(special_tokens, key=len, reverse=True)
    return regex.compile("|".join(regex.escape(s) for s in ordered))


def resolve_pattern(pattern: PatternName | str) -> tuple[str, str | None]:
    """``"cl100k"`` -> (tiktoken's regex, ``"cl100k"``); a regex -> (regex, None)."""
    if isinstance(pattern, PatternName):
        pattern = pattern.value
    if pattern in PATTERNS:
        return PATTERNS[pattern], pattern
    for name, pat in PATTERNS.items():
        if pat == pattern:
            return pat, name
    if re.fullmatch(r"[a-z][a-z0-9_]*", pattern):
        # A bare lowercase word is a mistyped name far more often than a regex.
        raise UsageError(f"unknown pattern name '{pattern}'{suggest(pattern, PATTERNS)}; use "
                         "gpt2, cl100k, o200k or a regular expression")
    compile_pattern(pattern)  # fail early with a clear message
    return pattern, None


@lru_cache(maxsize=16)
def compile_pattern(pattern: str) -> regex.Pattern[str]:
    import regex
    if (problem := regex_problem(pattern)) is not None:
        raise UsageError(f"{arg('pattern')}: {problem}; use gpt2, cl100k, o200k or another "
                         "regex", param="pattern")
    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise UsageError(f"invalid pre-tokenization regex {pattern!r}: {exc}; "
                         f"use gpt2, cl100k, o200k or a valid regex") from exc


def _ascii_translate(pattern: str) -> str:
    """``pattern`` for stdlib ``re`` on ASCII text: ``\\p{X}`` and ``\\s`` become the ASCII
    characters ``regex`` matches with them."""
    import regex
    ascii_chars = "".join(map(chr, range(128)))
    in_class = False

    def swap(m: regex.Match[str]) -> str:
        nonlocal in_class
        tok = m.group()
        if tok in ("[", "]"):
            in_class = tok == "["
            return tok
        if tok[1] not in "psS":
            return tok  # any other escape stays as it is
        body = "".join(re.escape(c) for c in regex.findall(tok if tok[1] == "p" else r"\s",
                                                           ascii_chars))
        if in_class:
            if tok == "\\S":
                raise ValueError("\\S inside a class")
            return body
        if tok[1] == "p":
            return f"[{body}]" if body else "(?!)"
        return ("[^" if tok == "\\S" else "[") + body + "]"

    return str(regex.sub(r"\\p\{[^}]*\}|\\[\s\S]|[\[\]]", swap, pattern))


@lru_cache(maxsize=8)
def _ascii_fast(pattern: str) -> Callable[[str], list[str]] | None:
    """A stdlib-``re`` splitter for ASCII text, 2.5x faster than ``regex``: for the named
    patterns (tested) on Python 3.11+ (possessive quantifiers)."""
    if sys.version_info < (3, 11) or pattern not in PATTERNS.values():
        return None
    return re.compile(_ascii_translate(pattern)).findall


def splitter(pattern: str) -> Callable[[str], list[str]]:
    """``text -> pieces`` as ``split_text``; the named patterns leave no gaps to look for."""
    slow: Callable[[str], list[str]] = compile_pattern(pattern).findall  # a bad regex fails here
    if pattern not in PATTERNS.values():
        return partial(split_text, pattern=pattern)
    return _ascii_first(pattern, slow)


def _ascii_first(pattern: str, slow: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """``slow``, with ASCII text taking ``_ascii_fast`` when the pattern has it."""
    fast = _ascii_fast(pattern)
    if fast is None:
        return slow

    def split(text: str) -> list[str]:
        return fast(text) if text.isascii() else slow(text)

    return split


@lru_cache(maxsize=8)
def training_splitter(pattern: str) -> Callable[[str], list[str]]:
    """``splitter`` as the trainer uses it: a named pattern's Unicode classes as Hugging
    Face ``tokenizers`` has them (``hf_unicode``), so the merges stay HF's on text with
    characters newer than HF's tables; ASCII text takes the same fast path."""
    if pattern not in PATTERNS.values():
        return splitter(pattern)
    from tokcost.bpe.hf_unicode import HfView

    return _ascii_first(pattern, HfView(compile_pattern(pattern).findall))


def split_text(text: str, pattern: str) -> list[str]:
    """The matches and, like HF's ``Split(..., "isolated")``, the gaps between them."""
    pat = compile_pattern(pattern)
    pieces: list[str] = pat.findall(text)
    if sum(map(len, pieces)) == len(text):
        return pieces
    return [piece for piece in cut(text, pat.finditer(text)) if piece]


def cut(text: str, matches: Iterable[regex.Match[str]]) -> list[str]:
    """``text`` cut at ``matches``: gap, match, gap, ... (any of them may be empty)."""
    bounds = [0, *chain.from_iterable(m.span() for m in matches), len(text)]
    return [text[a:b] for a, b in pairwise(bounds)]


def pretokenize(text: str, spec: PretokenizeSpec) -> list[str]:
    """The pre-tokens of one sequence for training: the special tokens split out first,
    each one piece."""
    split = training_splitter(spec.pattern)
    if not spec.special_tokens:
        return split(text)
    pieces: list[str] = []
    for k, part in enumerate(cut(text, special_regex(spec.special_tokens).finditer(text))):
        pieces += [part] if k % 2 else split(part)  # odd parts: the special tokens
    return pieces


def _lines_with_specials(block: str, lines: list[str], find: regex.Pattern[str]) -> set[int]:
    """The lines a special token's match touches, found in the whole block at once (cheaper
    than a search per line); ``pretokenize`` then reads each line alone, as HF does."""
    spans = [m.span() for m in find.finditer(block)]
    if not spans:
        return set()
    ends = list(accumulate(map(len, lines)))  # ends[i]: the offset just past line i
    held: set[int] = set()
    for start, stop in spans:
        held.update(range(bisect_right(ends, start), bisect_right(ends, stop - 1) + 1))
    return held


def count_block(block: str, spec: PretokenizeSpec) -> Counter[str]:
    """Pre-token counts of a block of whole lines, each line split on its own."""
    counts: Counter[str] = Counter()
    lines: list[str] | None = None
    if spec.special_tokens:
        lines = _lines(block)
        held = _lines_with_specials(block, lines, special_regex(spec.special_tokens))
        if held:
            # Only the lines that hold a special token leave the fast paths below.
            for i in held:
                counts.update(pretokenize(lines[i], spec))
            lines = [line for i, line in enumerate(lines) if i not in held]
            block = "".join(lines)
    if (ascii_lines := _ascii_counter(spec.pattern)) is not None:
        lines = ascii_lines(block, counts)  # counts the ASCII lines in C, returns the rest
    elif lines is None:
        lines = _lines(block)
    if not lines:  # all counted in C: the Unicode pattern need not even be compiled
        return counts
    fast = _ascii_fast(spec.pattern)  # an ASCII block skips the per-line check
    split = fast if fast is not None and block.isascii() else training_splitter(spec.pattern)
    _count_pieces(lines, split, counts)
    return counts


@lru_cache(maxsize=8)
def _ascii_counter(pattern: str) -> Callable[[str, Counter[str]], list[str]] | None:
    """The C counter of ASCII lines for a named pattern (``count_ascii`` in
    csrc/tokcost_bpe.c, 5-8x faster than ``re``), or None when it was not built."""
    core = compiled_core()
    names = list(PATTERNS.values())
    if core is None or pattern not in names or not hasattr(core, "count_ascii"):
        return None
    which = ("gpt2", "cl100k", "o200k").index(next(k for k, v in PATTERNS.items() if v == pattern))
    classes = _ascii_classes()

    def count(block: str, counts: Counter[str]) -> list[str]:
        data = block.encode("utf-8", "surrogatepass")
        rest = core.count_ascii(data, which, classes, counts)
        return [data[a:b].decode("utf-8", "surrogatepass") for a, b in rest]

    return count


@lru_cache(maxsize=1)
def _ascii_classes() -> bytes:
    """What each ASCII character is to the patterns, asked of ``regex`` itself: bit 1
    \\p{L}, 2 \\p{N}, 4 \\s, 8 o200k's upper letters, 16 its lower ones."""
    import regex

    tests = (r"\p{L}", r"\p{N}", r"\s", r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]",
             r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]")
    found = [regex.compile(t) for t in tests]
    return bytes(sum(1 << k for k, f in enumerate(found) if f.fullmatch(chr(c)))
                 for c in range(128))


# str.splitlines' other breaks: without them it cuts as _LINE_SPLIT does, 5-7x faster.
_OTHER_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def _lines(block: str) -> list[str]:
    """The lines of ``block``, each with its ``"\n"``."""
    if not any(ch in block for ch in _OTHER_BREAKS):
        return block.splitlines(keepends=True)
    return re.findall(_LINE_SPLIT, block)


def _count_pieces(lines: list[str], split: Callable[[str], list[str]],
                  counts: Counter[str]) -> None:
    """Add the pieces of ``lines`` to ``counts``, splitting each distinct line once (44% of
    a block's lines repeat in the benchmark corpus): lines seen n times count n times."""
    seen = Counter(lines)
    if len(seen) == len(lines):
        counts.update(chain.from_iterable(map(split, lines)))
        return
    by_times: dict[int, list[str]] = {}
    for line, n in seen.items():
        by_times.setdefault(n, []).append(line)
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
    """The first byte offset ``>= offset`` that starts a line, or ``size``; scans in blocks."""
    if offset <= 0:
        return 0
    if offset >= size:
        return size
    pos = offset - 1
    fh.seek(pos)
    while pos < size and (block := fh.read(SCAN_BYTES)):
        nl = block.find(b"\n")
        if nl >= 0:
            return pos + nl + 1
        pos += len(block)
    return size


def line_range(fh: IO[bytes], piece: Piece) -> tuple[int, int]:
    """The bytes of the lines that *start* inside ``piece`` (neighbours need not talk)."""
    size = fh.seek(0, os.SEEK_END)  # as the file is now
    return line_start(fh, piece.start, size), line_start(fh, piece.end, size)


def _line_blocks(fh: IO[bytes], begin: int, stop: int) -> Iterator[str]:
    """Bytes ``[begin, stop)`` as text in blocks cut after ``b"\\n"`` (bad UTF-8: U+FFFD)."""
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
    """Map: the pre-tokens of the lines that start in each piece of local files; one
    reader, pruned at its end unless it counts ``into`` a table that goes on."""
    counts: Counter[str] = Counter() if into is None else into
    for piece in shard:
        with training_file(piece.path), open(piece.path, "rb") as fh:
            count_blocks(_line_blocks(fh, *line_range(fh, piece)), spec, counts)
    if into is None:
        spec.prune(counts)
    return counts


def pretokenize_files(files: Sequence[tuple[str, int]], spec: PretokenizeSpec, runner: Runner, *,
    read: Callable[..., Counter[str]] = count_pieces, progress: ProgressFn | None = None,
    into: Counter[str] | None = None) -> Counter[str]:
    """Map ``read`` over shards of ``(path, size)`` files on ``runner`` and merge the tables
    (and their notes: ``add_notes``) into ``into``; one worker here reads straight into it."""
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


def count_words(paths: Iterable[str | Path], spec: PretokenizeSpec, *, jobs: int = 1,
                progress: ProgressFn | None = None) -> Counter[str]:
    """Count every distinct pre-token in local files, read by ``jobs`` processes."""
    files: list[tuple[str, int]] = []
    for p in map(str, paths):
        with training_file(p):
            if Path(p).is_dir():
                raise IsADirectoryError
            files.append((p, os.stat(p).st_size))
    return pretokenize_files(files, spec, LocalRunner(jobs, processes=True), progress=progress)
