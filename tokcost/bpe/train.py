"""Byte-level BPE training with Hugging Face ``tokenizers``' BpeTrainer's merges, in order:
the highest count first, ties to the smaller ``(left id, right id)`` (HF ``trainer.rs``, ``impl
Ord for Merge``). The HF setup it matches and how the loop runs: docs/bpe.md. And every smaller
vocabulary from one run (a run to N learns the first merges of any larger run, ids in merge
order), their use of held-out text, and the knee (a sweep, docs/bpe.md)."""

from __future__ import annotations

import gc
import heapq
import math
import operator
import time
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import accumulate, pairwise
from pathlib import Path
from typing import TypeAlias

import tokcost.bpe.pretokenize as pre
from tokcost.bpe.core import compiled_core
from tokcost.bpe.encode import Encoder
from tokcost.bpe.model import ALPHABET_ORDER, BYTE_TO_CHAR, BPEModel
from tokcost.errors import InputError, TokcostError, UsageError, arg
from tokcost.units import parse_count

ProgressFn = Callable[[str, int, int], None]

#: o200k_base's and cl100k_base's longest token (128 spaces); unlimited, a long run of one
#: letter learns tokens of 2, 4, 8, ... bytes up to its length.
DEFAULT_MAX_TOKEN_LENGTH = 128
_COUNTS = ("vocab_size", "min_frequency", "max_token_length", "jobs", "max_pretokens")


@dataclass(frozen=True, kw_only=True)
class TrainerConfig:
    """What to train, as HF's ``BpeTrainer(...)``; a count may be text (``"32k"``; docs/bpe.md)."""

    vocab_size: int
    pattern: pre.PatternName | str = pre.PatternName.O200K
    special_tokens: tuple[str, ...] = ()
    min_frequency: int = 0
    max_token_length: int | None = DEFAULT_MAX_TOKEN_LENGTH
    jobs: int = 1
    max_pretokens: int | None = None

    def __post_init__(self) -> None:
        given = self.special_tokens
        specials = (given,) if isinstance(given, str) else tuple(given)
        object.__setattr__(self, "special_tokens", tuple(dict.fromkeys(specials)))
        for name in _COUNTS:
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                object.__setattr__(self, name, parse_count(value, param=name))
        size, need = self.vocab_size, 256 + len(self.special_tokens)
        cap, longest = self.max_pretokens, self.max_token_length
        for failed, param, message in (
            (size < need, "vocab_size", f"{arg('vocab_size', size)} is too small: the 256 byte "
             f"tokens and {need - 256} special token(s) need at least {need}"),
            ("" in self.special_tokens, "special_tokens", "a special token cannot be empty; "
             f"drop the empty string from {arg('special_tokens')}"),
            (self.min_frequency < 0, "min_frequency", f"{arg('min_frequency')} must be 0 or more"),
            (longest is not None and longest < 2, "max_token_length",
             f"{arg('max_token_length')} must be at least 2 bytes"),
            (size > 0x110000, "vocab_size", f"{arg('vocab_size')} can be at most 1114112"),
            (self.jobs < 1, "jobs", f"{arg('jobs')} must be 1 or more"),
            (cap is not None and cap < 1, "max_pretokens",
             f"{arg('max_pretokens', cap)} must be 1 or more (or no cap)"),
        ):
            if failed:
                raise UsageError(message, param=param, value=getattr(self, param))
        pre.resolve_pattern(self.pattern)  # an unknown name or a bad regex fails here

    def reader_spec(self) -> pre.PretokenizeSpec:
        return pre.PretokenizeSpec(self.pattern, self.special_tokens, self.max_pretokens)


@dataclass(frozen=True, kw_only=True)
class TrainResult:
    """A trained model and what training saw; ``exhausted``: the pairs ran out first.
    ``notes`` name parameters through placeholders (``warnings``: in the API's words)."""

    model: BPEModel
    distinct_pretokens: int
    total_pretokens: int
    seconds_pretokenize: float
    seconds_merge: float
    exhausted: bool = False
    notes: tuple[TokcostError, ...] = ()

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(map(str, self.notes))


def train(paths: Iterable[str | Path], config: TrainerConfig, progress: ProgressFn | None = None,
          *, texts: Iterable[str] = ()) -> TrainResult:
    """Train on text files (read in ``config.jobs`` processes) and ``texts`` (whole lines)."""
    started = time.perf_counter()
    counts = pre.count_words(list(paths), config.reader_spec(), jobs=config.jobs, progress=progress)
    return train_counted(counts, config, progress, texts=texts, started=started)


def train_counted(counts: Counter[str], config: TrainerConfig, progress: ProgressFn | None = None,
                  *, texts: Iterable[str] = (), started: float | None = None) -> TrainResult:
    """Learn from ``counts`` (pre-tokenized with ``config.reader_spec()``, emptied here)
    plus ``texts`` (as ``train``); ``started``: when pre-tokenizing began."""
    pre.count_blocks(texts, config.reader_spec(), counts)
    # Learning from the special tokens would spend merges rebuilding them (HF does).
    for token in config.special_tokens:
        counts.pop(token, None)
    seconds = 0.0 if started is None else time.perf_counter() - started
    return train_from_counts(counts, config, progress, seconds_pretokenize=seconds, consume=True)


def train_from_texts(texts: Iterable[str], config: TrainerConfig,
                     progress: ProgressFn | None = None) -> TrainResult:
    """Train on in-memory texts, each one sequence for the pattern."""
    spec = config.reader_spec()
    started = time.perf_counter()
    counts: Counter[str] = Counter()
    for text in texts:
        spec.merge(counts, Counter(pre.pretokenize(text, spec)))
    return train_counted(counts, config, progress, started=started)


def train_from_counts(word_counts: Mapping[str, int], config: TrainerConfig,
                      progress: ProgressFn | None = None, *, seconds_pretokenize: float = 0.0,
                      consume: bool = False) -> TrainResult:
    """Learn merges from pre-token counts (``{" the": 1234, ...}``) as given; ``consume``
    empties the dict while reading it. Counts are exact at any size (HF's wrap at 2^31)."""
    if not word_counts:
        raise InputError("no text to train on: the corpus is empty")
    t0 = time.perf_counter()
    cap = config.max_pretokens
    # The loop's millions of small objects hold no cycles; the collector cost 15-25%.
    paused = gc.isenabled()
    gc.disable()
    try:
        if cap is not None and len(word_counts) > cap:
            table = word_counts if consume and isinstance(word_counts, dict) else dict(word_counts)
            pre.prune_counts(table, cap)
            word_counts, consume = table, True
        corpus = _corpus(word_counts, config.special_tokens, consume)
        n_words = len(corpus.words)
        vocab = _Vocabulary(corpus.keys, corpus.key_to_id, config.vocab_size, progress)
        exhausted = _merge_compiled(corpus, vocab, config)
        if exhausted is None:
            pair_counts, heap = _initial_pairs(corpus.words, corpus.counts, corpus.total)
            exhausted = _merge(corpus, vocab, pair_counts, heap, config)
        vocab.report()
        model = _model(corpus, vocab.merges, config)
    finally:
        if paused:
            gc.enable()
    notes = []
    if cap is not None and n_words >= cap:
        notes.append(TokcostError(
            f"the corpus reached {arg('max_pretokens', cap)} distinct pre-tokens: the rarer "
            f"ones were dropped, so the late merges can differ from an uncapped run; raise "
            f"it if memory allows", related=("max_pretokens",)))
    if exhausted:
        above = f" above {arg('min_frequency')}" if config.min_frequency > 1 else ""
        notes.append(TokcostError(
            f"the corpus ran out of pairs{above}: vocabulary has {len(corpus.keys)} tokens, "
            f"not {config.vocab_size}; train on more text or ask for a smaller "
            f"{arg('vocab_size')}", related=("min_frequency", "vocab_size")))
    return TrainResult(model=model, distinct_pretokens=n_words,
                       total_pretokens=corpus.total, seconds_pretokenize=seconds_pretokenize,
                       seconds_merge=time.perf_counter() - t0, exhausted=exhausted,
                       notes=tuple(notes))


#: The words (indices, ascending) that hold a pair: C arrays from the first count, lists after.
Owners: TypeAlias = "list[int] | array[int]"

_INT64_SAFE = 1 << 62  # above it numpy's int64 pair counts could overflow: Python ints
_PAIR_CHUNK_CHARS = 1 << 18  # numpy counts this many characters at a time (a few MB)


@dataclass
class _Corpus:
    """``keys``: HF's id_to_word (byte-level); ``words``: pre-tokens as strings of ``chr(id)``."""

    keys: list[str]
    key_to_id: dict[str, int]
    byte_id: list[int]
    words: list[str]
    counts: list[int]
    total: int


def _corpus(word_counts: Mapping[str, int], specials: tuple[str, ...], consume: bool) -> _Corpus:
    keys = list(specials)
    key_to_id = {tok: i for i, tok in enumerate(keys)}
    byte_id = [0] * 256
    for b in ALPHABET_ORDER:
        ch = BYTE_TO_CHAR[b]
        if ch not in key_to_id:
            key_to_id[ch] = len(keys)
            keys.append(ch)
        byte_id[b] = key_to_id[ch]
    table = {b: chr(byte_id[b]) for b in range(256)}  # bytes -> chr(id) through latin-1
    words: list[str] = []
    counts: list[int] = []
    items: Iterable[tuple[str, int]] = word_counts.items()
    if consume and isinstance(word_counts, dict):
        # Emptied as read: the two forms of the table never sit in memory together.
        items = (word_counts.popitem() for _ in range(len(word_counts)))
    for word, n in items:
        words.append(word.encode("utf-8").decode("latin-1").translate(table))
        counts.append(n)
    return _Corpus(keys, key_to_id, byte_id, words, counts, sum(counts))


def _initial_pairs(words: list[str], counts: list[int],
                   total: int) -> tuple[defaultdict[str, int], list[tuple[int, str, int, Owners]]]:
    """Every pair's count and heap entries ``(-count, pair, seq, words holding it)``, counted
    by numpy (5x faster than a Python loop); past int64's reach as Python ints."""
    import numpy as np
    pair_counts: defaultdict[str, int] = defaultdict(int)
    where: dict[str, Owners] = {}
    big = total >= _INT64_SAFE or max(counts, default=0) >= _INT64_SAFE
    lens = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    cuts = np.searchsorted(np.cumsum(lens), np.arange(0, int(lens.sum()), _PAIR_CHUNK_CHARS),
                           side="right").tolist()
    for start, stop in pairwise(sorted({0, *cuts, len(words)})):
        _count_pairs(words, counts, lens, start, stop, pair_counts, where, big)
    heap = [(-pair_counts[p], p, seq, lst) for seq, (p, lst) in enumerate(where.items())]
    return pair_counts, heap


def _count_pairs(words: list[str], counts: list[int], lens: object, start: int, stop: int,
                 pair_counts: defaultdict[str, int], where: dict[str, Owners], big: bool) -> None:
    """Add the pairs of ``words[start:stop]``, in order, so each list stays ascending."""
    import numpy as np
    n_chars = np.asarray(lens)[start:stop]
    flat = np.frombuffer("".join(words[start:stop]).encode("utf-32-le"), dtype=np.uint32)
    if len(flat) < 2:
        return
    # A pair starts at every position but the last of its word.
    ok = np.ones(len(flat) - 1, dtype=bool)
    ends = np.cumsum(n_chars)
    ok[ends[(ends > 0) & (ends < len(flat))] - 1] = False
    # ids < 2**21 (vocab_size <= 0x110000): one int64 per pair
    code = (flat[:-1].astype(np.int64) << 21 | flat[1:])[ok]
    if not len(code):
        return
    word = np.repeat(np.arange(start, stop, dtype=np.int64), n_chars)[:-1][ok]
    order = np.argsort(code, kind="stable")  # stable: each pair's words stay ascending
    code, word = code[order], word[order]
    weight = np.asarray(counts[start:stop], dtype=object if big else np.int64)[word - start]
    new_pair = np.empty(len(code), dtype=bool)
    new_pair[0] = True
    np.not_equal(code[1:], code[:-1], out=new_pair[1:])
    first = np.flatnonzero(new_pair)
    sums = np.add.reduceat(weight, first).tolist()
    keys = code[first].tolist()
    once = new_pair.copy()
    once[1:] |= word[1:] != word[:-1]
    # A C array: a list would hold an int object per entry.
    owner = array("i", word[once].astype(np.int32).tobytes())
    cut = np.flatnonzero(new_pair[once]).tolist()
    cut.append(len(owner))
    where_get = where.get
    for j, (k, n) in enumerate(zip(keys, sums, strict=True)):
        p = chr(k >> 21) + chr(k & 0x1FFFFF)
        pair_counts[p] += n
        lst = where_get(p)
        if lst is None:
            where[p] = owner[cut[j] : cut[j + 1]]
        else:
            lst.extend(owner[cut[j] : cut[j + 1]])


class _Vocabulary:
    """The tokens as the merges make them: a merge that spells a known token reuses its id
    (HF's ``word_to_id.get(&new_token)``); ``intern`` is called once per merge, in order."""

    def __init__(self, keys: list[str], key_to_id: dict[str, int], vocab_size: int,
                 progress: ProgressFn | None) -> None:
        self.keys, self.key_to_id, self.vocab_size = keys, key_to_id, vocab_size
        self.token_len = [len(k) for k in keys]  # byte-level characters: "Ġa" is 2, as HF
        self.merges: list[tuple[int, int, int]] = []
        self.target = max(1, vocab_size - len(keys))
        self.progress = progress
        self.last_report = 0.0

    def intern(self, ia: int, ib: int) -> int:
        new_key = self.keys[ia] + self.keys[ib]
        new_id = self.key_to_id.get(new_key)
        if new_id is None:
            new_id = len(self.keys)
            self.key_to_id[new_key] = new_id
            self.keys.append(new_key)
            self.token_len.append(len(new_key))
        self.merges.append((ia, ib, new_id))
        if self.progress is not None and (now := time.perf_counter()) - self.last_report > 0.1:
            self.last_report = now
            self.report()
        return new_id

    def report(self) -> None:
        if self.progress is not None:
            self.progress("merge", len(self.keys) - (self.vocab_size - self.target), self.target)


def _merge_compiled(corpus: _Corpus, vocab: _Vocabulary, config: TrainerConfig) -> bool | None:
    """``_merge`` in C: the same merges (tested); whether the pairs ran out first, or None
    when the core is not built or a pair count could pass int64 (the Python loop's ints)."""
    core = compiled_core()
    words, counts = corpus.words, corpus.counts
    lengths = array("i", map(len, words))
    # No pair count can pass the sum over words of count x (length - 1).
    if core is None or sum(map(operator.mul, counts, lengths)) >= _INT64_SAFE:
        return None
    symbols = bytearray("".join(words).encode("utf-32-le"))
    starts = array("q", accumulate(lengths, initial=0))
    starts.pop()
    corpus.words = []  # the C loop holds them now; the strings would only take memory
    return bool(core.merge(symbols, starts, lengths, array("q", counts),
                           array("i", vocab.token_len), len(vocab.keys), config.vocab_size,
                           config.max_token_length or 0, config.min_frequency, vocab.intern))


def _merge(corpus: _Corpus, vocab: _Vocabulary, pair_counts: defaultdict[str, int],
           heap: list[tuple[int, str, int, Owners]], config: TrainerConfig) -> bool:
    """The merges in order (into ``vocab``); whether the pairs ran out first. The reference
    loop, and the one that runs when the C core is not built. The hot loop, kept whole: a
    helper called per occurrence would cost more than its work."""
    words, counts = corpus.words, corpus.counts
    token_len = vocab.token_len
    seq = len(heap)
    heapq.heapify(heap)
    longest = max(token_len)
    max_len = config.max_token_length
    vocab_size = config.vocab_size
    min_freq = config.min_frequency
    heappop, heappush, heapreplace = heapq.heappop, heapq.heappush, heapq.heapreplace
    while len(vocab.keys) < vocab_size:
        if not heap:
            return True
        negc, pc, _, pos = heap[0]
        cur = pair_counts[pc]
        if -negc != cur:
            heapreplace(heap, (-cur, pc, seq, pos))
            seq += 1
            continue
        heappop(heap)
        if cur < 1 or cur < min_freq:
            return True
        left, right = pc[0], pc[1]
        new_id = vocab.intern(ord(left), ord(right))
        r = chr(new_id)
        r_len = token_len[new_id]
        if r_len > longest:
            longest = r_len
        # Unless the longest token could pass the limit, skip the per-occurrence test.
        limit = None if max_len is None or r_len + longest <= max_len else max_len
        added: dict[str, list[int]] = {}
        added_get = added.get
        for iw in pos:
            w = words[iw]
            i = w.find(pc)
            if i < 0:
                continue
            c = counts[iw]
            last = len(w) - 2
            prev_end = -1
            # Left and right updates written out: a call per occurrence costs more (hot loop).
            while i >= 0:
                if i > 0:
                    prev = r if i == prev_end else w[i - 1]
                    p = prev + left
                    pair_counts[p] -= c
                    if limit is None or token_len[ord(prev)] + r_len <= limit:
                        p = prev + r
                        pair_counts[p] += c
                        lst = added_get(p)
                        if lst is None:
                            added[p] = [iw]
                        elif lst[-1] != iw:
                            lst.append(iw)
                if i < last:
                    nxt = w[i + 2]
                    p = right + nxt
                    pair_counts[p] -= c
                    if limit is None or token_len[ord(nxt)] + r_len <= limit:
                        p = r + nxt
                        pair_counts[p] += c
                        lst = added_get(p)
                        if lst is None:
                            added[p] = [iw]
                        elif lst[-1] != iw:
                            lst.append(iw)
                prev_end = i + 2
                i = w.find(pc, prev_end)
            words[iw] = w.replace(pc, r)
        for p, lst in added.items():
            cnt = pair_counts[p]
            if cnt > 0:
                heappush(heap, (-cnt, p, seq, lst))
                seq += 1
    return False


def _model(corpus: _Corpus, merges: list[tuple[int, int, int]], config: TrainerConfig) -> BPEModel:
    ranks: dict[bytes, int] = {bytes([x]): corpus.byte_id[x] for x in range(256)}
    token_bytes: dict[int, bytes] = {i: t for t, i in ranks.items()}
    for ia, ib, new_id in merges:
        if new_id not in token_bytes:
            data = token_bytes[ia] + token_bytes[ib]
            token_bytes[new_id] = data
            ranks.setdefault(data, new_id)
    pattern, pattern_name = pre.resolve_pattern(config.pattern)
    specials = {tok: corpus.key_to_id[tok] for tok in config.special_tokens}
    return BPEModel(pattern=pattern, ranks=ranks, special_tokens=specials,
                    merges=tuple(merges), pattern_name=pattern_name)


KNEE_GAIN = 0.05


def prefix_model(model: BPEModel, vocab_size: int) -> BPEModel:
    """The model a run to ``vocab_size`` would have made: a tokcost-trained ``model``'s first
    merges (all of them when it ran out of pairs first)."""
    check_sizes([vocab_size], len(model.special_tokens))
    if model.merges == () and model.n_tokens > 256 + len(model.special_tokens):
        raise UsageError(f"{arg('model')} must be one tokcost trained (this one has no merges: an "
                         "imported rank file); train one with tokcost.train_bpe", param="model")
    if vocab_size >= model.n_tokens:
        return model
    cut = 0
    for i, (_, _, new_id) in enumerate(model.merges):
        if new_id >= vocab_size:
            break
        cut = i + 1  # a merge that spells a known token (new id < vocab_size) is kept too
        if new_id == vocab_size - 1:
            break  # the smaller run stops as soon as its vocabulary is full
    return replace(model, ranks={b: i for b, i in model.ranks.items() if i < vocab_size},
                   special_tokens=dict(model.special_tokens), merges=model.merges[:cut])


@dataclass(frozen=True)
class Usage:
    """Tokens per text, and the mergeable (``unused_learned``: learned) tokens that no text used."""

    vocab_size: int
    tokens: tuple[int, ...]  # one per text
    unused: int
    unused_learned: int
    learned: int  # tokens made by a merge


def usage(model: BPEModel, texts: Iterable[str]) -> Usage:
    """Encode ``texts`` with tokcost's encoder, special-token text as plain text."""
    encoder = Encoder(model)
    seen: Counter[int] = Counter()
    tokens = []
    for text in texts:
        ids = encoder.encode_ordinary(text)
        tokens.append(len(ids))
        seen.update(ids)
    mergeable = set(model.ranks.values())
    learned = {i for b, i in model.ranks.items() if len(b) > 1}
    return Usage(vocab_size=model.n_tokens, tokens=tuple(tokens),
                 unused=len(mergeable - seen.keys()), unused_learned=len(learned - seen.keys()),
                 learned=len(learned))


def check_sizes(sizes: Sequence[int], specials: int = 0) -> tuple[int, ...]:
    """The sizes sorted, each once; at least one, none below the bytes and ``specials``."""
    if not sizes:
        raise UsageError("give at least one vocabulary size, e.g. "
                         f"{arg('vocab_sizes', '1024,2048')}", param="vocab_sizes")
    ordered = tuple(sorted(set(sizes)))
    if ordered[0] < 256 + specials:
        raise UsageError(f"{arg('vocab_sizes', ordered[0])} is too small: the 256 byte tokens "
                         f"and {specials} special token(s) need at least {256 + specials}",
                         param="vocab_sizes")
    return ordered


def knee(sizes: Sequence[int], tokens_per_byte: Sequence[float],
         gain: float = KNEE_GAIN) -> int | None:
    """The first size whose next step cuts tokens per byte by less than ``gain`` per
    doubling; None when every step still pays."""
    if not 0 < gain < 1:
        raise UsageError(f"{arg('knee_gain', gain)} must be between 0 and 1 (0.05: 5% per "
                         f"doubling)", param="knee_gain")
    for (s0, t0), (s1, t1) in pairwise(zip(sizes, tokens_per_byte, strict=True)):
        if t0 <= 0 or s1 <= s0:
            continue
        cut = (t0 - t1) / t0 / math.log2(s1 / s0)
        if cut < gain:
            return s0
    return None
