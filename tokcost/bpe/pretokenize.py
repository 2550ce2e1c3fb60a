"""Pre-tokenization: split text into the pieces BPE merges within.

The named patterns are tiktoken's own regexes, character for character (a test
checks them against tiktoken's). They run on the ``regex`` package, which knows
``\\p{L}`` and possessive quantifiers; ASCII text takes a faster stdlib-``re``
path that cuts it the same way (a property test checks that).

Files are read as bytes (like ``newline=""``) and cut only at ``"\\n"`` (each line
keeps its ``"\\n"``), as Hugging Face ``tokenizers`` reads training files: CRLF survives,
and ``str.splitlines`` (which also cuts at ``\\x0b``, ``\\x1c``, ``\\u2028`` ...)
never changes the corpus. A line is the unit the pattern runs over.

Special tokens are split out of each line before the pattern runs, as HF's
``AddedVocabulary`` splits its added tokens out of a sequence (the leftmost
occurrence, the longest special token at that place): the text between them is
pre-tokenized on its own, and each occurrence is a pre-token of its own, so no
pre-token crosses one. The engines pass one pattern string to ``count_block``
(here, in worker processes and on Dask workers alike), so the special tokens ride
in it: ``with_specials`` writes them as a regex comment before the pattern.
"""

from __future__ import annotations

import heapq
import json
import os
import re
import sys
import time
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from enum import Enum
from functools import lru_cache
from itertools import accumulate, chain
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

# The named patterns are tiktoken's own regexes, kept in one place beside the
# encodings they belong to.
from tokcost.adapters.openai_encodings import PATTERNS as PATTERNS
from tokcost.errors import InputError, UsageError, suggest

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


#: How a pre-tokenization spec names its special tokens (see ``with_specials``).
_SPECIALS_HEAD = "(?#tokcost-special-tokens:"


def with_specials(pattern: str, special_tokens: Sequence[str]) -> str:
    """The pre-tokenization spec: ``pattern`` with ``special_tokens`` split out first.

    The special tokens are written as a JSON list inside a regex comment before the
    pattern (``)`` escaped), so the spec is still the same regex to anything that
    compiles it, and it crosses process and cluster boundaries as the string it is.
    Without special tokens the spec is the pattern itself.

    >>> spec = with_specials("[a-z]+| ", ["<|endoftext|>"])
    >>> spec
    '(?#tokcost-special-tokens:["<|endoftext|>"])[a-z]+| '
    >>> parse_spec(spec)
    ('[a-z]+| ', ('<|endoftext|>',))
    """
    if not special_tokens:
        return pattern
    body = json.dumps(list(dict.fromkeys(special_tokens))).replace(")", "\\u0029")
    return f"{_SPECIALS_HEAD}{body}){pattern}"


#: How a spec carries the cap on distinct pre-tokens (see ``with_cap``).
_CAP_HEAD = "(?#tokcost-max-pretokens:"


def with_cap(spec: str, max_pretokens: int | None) -> str:
    """``spec`` that also tells its readers to keep at most ``max_pretokens`` distinct
    pre-tokens (``prune_counts``), as a regex comment in front; None: no cap.

    >>> with_cap("[a-z]+| ", 1000)
    '(?#tokcost-max-pretokens:1000)[a-z]+| '
    >>> parse_spec(with_cap("[a-z]+| ", 1000)), spec_cap(with_cap("[a-z]+| ", 1000))
    (('[a-z]+| ', ()), 1000)
    """
    if max_pretokens is None:
        return spec
    return f"{_CAP_HEAD}{int(max_pretokens)}){spec}"


@lru_cache(maxsize=16)
def spec_cap(spec: str) -> int | None:
    """The cap on distinct pre-tokens that ``spec`` carries (``with_cap``), or None."""
    if not spec.startswith(_CAP_HEAD):
        return None
    return int(spec[len(_CAP_HEAD) : spec.index(")", len(_CAP_HEAD))])


def counting_cap(spec: str) -> int | None:
    """The cap while counting: the spec's cap (``with_cap``) plus its special tokens.
    Their occurrences are counted as pre-tokens while reading and taken out before
    training, so they do not take the place of pre-tokens that are learned from.

    >>> counting_cap(with_cap(with_specials("[a-z]+", ["<s>", "</s>"]), 10))
    12
    """
    cap = spec_cap(spec)
    return None if cap is None else cap + len(parse_spec(spec)[1])


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
        if n > floor:
            kept[word] = n
        elif n == floor and room > 0:
            kept[word] = n
            room -= 1
    counts.clear()
    counts.update(kept)
    return True


def _cap_while_counting(counts: dict[str, int], max_pretokens: int | None) -> None:
    """While a table still grows, cut it to the cap once it holds twice the cap:
    memory stays bounded by 2 x max_pretokens entries plus one block's pieces."""
    if max_pretokens is not None and len(counts) > 2 * max_pretokens:
        prune_counts(counts, max_pretokens)


def merge_capped(counts: dict[str, int], part: Mapping[str, int], spec: str) -> None:
    """Add a reader's table ``part`` into ``counts`` (the merged table), bounded as the
    readers are: pruned to the spec's cap whenever it holds more than twice the cap."""
    for word, n in part.items():
        counts[word] = counts.get(word, 0) + n
    _cap_while_counting(counts, counting_cap(spec))


def prune_merged(counts: dict[str, int], spec: str) -> None:
    """The merged table's last prune (to ``counting_cap``), before the trainer takes
    the special tokens out and prunes to the cap itself."""
    cap = counting_cap(spec)
    if cap is not None:
        prune_counts(counts, cap)


@lru_cache(maxsize=16)
def parse_spec(spec: str) -> tuple[str, tuple[str, ...]]:
    """``with_specials``'s spec -> (pattern, special tokens); a plain pattern -> (it, ()).
    A cap in front (``with_cap``) is read by ``spec_cap`` and dropped here."""
    if spec.startswith(_CAP_HEAD):
        spec = spec[spec.index(")", len(_CAP_HEAD)) + 1 :]
    if not spec.startswith(_SPECIALS_HEAD):
        return spec, ()
    end = spec.index(")", len(_SPECIALS_HEAD))
    specials = json.loads(spec[len(_SPECIALS_HEAD) : end])
    return spec[end + 1 :], tuple(str(s) for s in specials)


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


def pretokenize(text: str, spec: str) -> list[str]:
    """The pre-tokens of one sequence as HF's trainer sees them: the special tokens
    of ``spec`` split out first (each one a pre-token), the text between them split
    by its pattern (``split_text``).

    >>> pretokenize("end<|endoftext|> of", with_specials(PATTERNS["gpt2"], ["<|endoftext|>"]))
    ['end', '<|endoftext|>', ' of']
    """
    pattern, specials = parse_spec(spec)
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


def count_block(block: str, pattern: str) -> Counter[str]:
    """Pre-token frequencies of a block of whole lines, each line split on its own.

    ``pattern`` may be a spec with special tokens (``with_specials``): each line
    is then split as ``pretokenize`` splits it.

    >>> sorted(count_block("a a\\na\\n", PATTERNS["gpt2"]).items())
    [('\\n', 2), (' a', 1), ('a', 2)]
    """
    lines = _lines(block)
    counts: Counter[str] = Counter()
    pattern, specials = parse_spec(pattern)
    if specials:
        held = _lines_with_specials(block, lines, special_regex(specials))
        if held:
            # Only the lines that hold a special token leave the fast paths below.
            spec = with_specials(pattern, specials)
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


def count_lines(
    path: str,
    start: int,
    end: int,
    pattern: str,
    *,
    opener: Callable[[str], AbstractContextManager[IO[bytes]]] | None = None,
    tick: Callable[[int], None] | None = None,
    into: Counter[str] | None = None,
) -> Counter[str]:
    """Pre-token frequencies of the lines that *start* inside bytes ``[start, end)`` of ``path``.

    Readers of adjacent ranges agree on the line that straddles their border without
    talking, so any split of a file gives the counts of the whole. Reading is binary
    in ``BLOCK_CHARS`` pieces cut after ``b"\\n"`` (never inside a UTF-8 sequence),
    so CRLF survives and memory stays bounded; invalid UTF-8 reads as U+FFFD.
    ``opener`` opens another filesystem's path (default: local files); ``tick(n)``
    reports bytes read; counts go ``into`` a Counter given.
    """
    counts: Counter[str] = Counter() if into is None else into
    cap = counting_cap(pattern)
    with training_file(path), (opener or _open_local)(path) as fh:
        size = fh.seek(0, os.SEEK_END)
        begin = line_start(fh, start, size)
        left = line_start(fh, end, size) - begin
        fh.seek(begin)
        carry = b""
        while left > 0 or carry:
            chunk = fh.read(min(BLOCK_CHARS, left)) if left > 0 else b""
            left = left - len(chunk) if chunk else 0  # a file that shrank ends here
            data = carry + chunk
            cut = data.rfind(b"\n") + 1 if left > 0 else len(data)
            if cut == 0:
                carry = data
                continue
            carry = data[cut:]
            # The input policy: invalid UTF-8 is U+FFFD. A block ends after "\n", which
            # ends any sequence, so blocks replace the bytes the whole file would.
            # (The caller reports how many: tokcost.counting.scan_file counts them.)
            block = data[:cut].decode("utf-8", "replace")
            counts.update(count_block(block, pattern))
            _cap_while_counting(counts, cap)
            if tick is not None:
                tick(cut)
    return counts


@contextmanager
def training_file(path: str) -> Iterator[None]:
    """The trainer's words for a training file it cannot read, on either engine."""
    try:
        yield
    except IsADirectoryError:
        raise UsageError(f"{path} is a directory; pass the text files to train on") from None
    except FileNotFoundError:
        raise UsageError(f"training file not found: {path}") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None


def _open_local(path: str) -> IO[bytes]:
    return open(path, "rb")


def _count_ranges(
    ranges: list[tuple[str, int, int]], pattern: str, tick: Callable[[int], None] | None
) -> Counter[str]:
    """Count the lines that start inside each byte range ``(path, start, end)``."""
    counts: Counter[str] = Counter()
    for path, start, end in ranges:
        count_lines(path, start, end, pattern, tick=tick, into=counts)
    cap = counting_cap(pattern)
    if cap is not None:
        prune_counts(counts, cap)
    return counts


_shared_done: Any = None


def _init_worker(done: Any) -> None:
    global _shared_done
    _shared_done = done


def _worker_tick(n: int) -> None:
    with _shared_done.get_lock():
        _shared_done.value += n


def _worker(ranges: list[tuple[str, int, int]], pattern: str) -> Counter[str]:
    return _count_ranges(ranges, pattern, _worker_tick)


def split_ranges(sizes: list[tuple[str, int]], parts: int) -> list[list[tuple[str, int, int]]]:
    """Cut the concatenated files into ``parts`` byte ranges of about equal size.

    >>> split_ranges([("a", 10), ("b", 6)], 2)
    [[('a', 0, 8)], [('a', 8, 10), ('b', 0, 6)]]
    """
    total = sum(size for _, size in sizes)
    share = -(-total // parts) if total else 0
    out: list[list[tuple[str, int, int]]] = [[] for _ in range(parts)]
    part, room = 0, share
    for path, size in sizes:
        pos = 0
        while pos < size:
            take = min(room, size - pos)
            out[part].append((path, pos, pos + take))
            pos += take
            room -= take
            if room == 0 and part < parts - 1:
                part, room = part + 1, share
    return [r for r in out if r]


def count_words(
    paths: Iterable[str | Path],
    pattern: str,
    *,
    jobs: int = 1,
    progress: ProgressFn | None = None,
) -> Counter[str]:
    """Frequency of every distinct pre-token in the files (one entry per distinct piece).
    A ``pattern`` spec with a cap (``with_cap``) keeps at most that many: see
    ``tokcost.bpe.train.TrainerConfig.max_pretokens`` for the rule.

    ``jobs > 1`` pre-tokenizes byte ranges of the files in that many processes
    (each range starts at a line start); the counts are the same as with one job.
    ``progress("pretokenize", bytes_done, bytes_total)`` reports the bytes read.
    """
    sizes: list[tuple[str, int]] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            raise UsageError(f"{path} is a directory; pass the text files to train on")
        try:
            sizes.append((str(path), path.stat().st_size))
        except OSError as exc:
            raise UsageError(f"training file not found: {path}") from exc
    total = sum(size for _, size in sizes)
    compile_pattern(pattern)
    done = 0

    def tick(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress("pretokenize", done, total)

    parts = split_ranges(sizes, max(1, jobs))
    if jobs <= 1 or len(parts) <= 1:
        counts = _count_ranges([r for part in parts for r in part], pattern, tick)
        prune_merged(counts, pattern)
        return counts

    import multiprocessing as mp

    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    shared = ctx.Value("q", 0)
    own = 0
    last = 0.0

    def tick_here(n: int) -> None:
        nonlocal own, last
        own += n
        now = time.perf_counter()
        if progress is not None and now - last > 0.1:
            last = now
            progress("pretokenize", min(own + int(shared.value), total), total)

    # This process reads the first part itself while jobs - 1 workers read the rest:
    # one process fewer to start and hold in memory, and the largest table is never
    # pickled across (a worker's table is: about 0.1 s at 40 MB, more on a busy machine).
    with ctx.Pool(len(parts) - 1, initializer=_init_worker, initargs=(shared,)) as pool:
        results = [pool.apply_async(_worker, (part, pattern)) for part in parts[1:]]
        counters = [_count_ranges(parts[0], pattern, tick_here)]
        for r in results:
            while not r.ready():
                r.wait(0.1)
                if progress is not None:
                    progress("pretokenize", min(own + int(shared.value), total), total)
        counters += [r.get() for r in results]
    if progress is not None:
        progress("pretokenize", total, total)
    counters.sort(key=len, reverse=True)
    counts = counters[0]
    for other in counters[1:]:
        merge_capped(counts, other, pattern)
        other.clear()
    prune_merged(counts, pattern)
    return counts
