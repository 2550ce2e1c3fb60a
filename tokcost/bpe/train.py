"""Byte-level BPE training that reproduces Hugging Face ``tokenizers``' BpeTrainer.

With the same corpus, pattern, vocabulary size and special tokens, the merges
are identical and in the same order as BpeTrainer run with the pre-tokenizer
``Sequence([Split(Regex(pattern), "isolated"), ByteLevel(add_prefix_space=False,
use_regex=False)])``, ``min_frequency=0``, ``initial_alphabet=ByteLevel.alphabet()`` and
``max_token_length`` one more than tokcost's (HF keeps tokens strictly shorter;
tokcost's default is 128 bytes, HF's is no limit).

Special tokens in the corpus
    The special tokens are split out of each line before pre-tokenization, as
    HF does when its tokenizer has them added (``add_special_tokens``) before
    training: the text between two of them is pre-tokenized on its own. HF then
    counts each occurrence as a word and learns merges inside it (``<|``,
    ``<|en``, ... until it has rebuilt the special token's own id); tokcost does
    not learn from them, because they are tokens already. (HF's trainer given the
    special tokens alone does not split them out: its pattern cuts ``<|endoftext|>``
    into ``<|``, ``endoftext`` and ``|>``, which become tokens.) On text between the
    special tokens the merges are HF's, merge for merge.

The merge rule (HF ``trainer.rs``, ``impl Ord for Merge``)
    Ids are given in HF's order: special tokens first (in the order given), then
    the 256 byte-level characters sorted by code point, then one id per new token
    in merge order. At each step the pair with the **highest count** is merged;
    among equal counts the **smaller pair** ``(left id, right id)`` (compared
    left id first) wins. Example: in ``"aaabdaaabac"`` the first merge is
    ``a a`` (count 4); then ``aa a`` and ``a b`` both count 2 and ``a b`` wins,
    because ``a``'s id is smaller than the new ``aa``'s.
    ``vocab_size`` counts special tokens + 256 bytes + new tokens; training stops
    when the vocabulary is that large or no pair is left (or the best count is
    below ``min_frequency``). Two merges that spell the same bytes (``ab c`` and
    ``a bc``) share one id, so there can be more merges than new ids, as in HF.

How it runs
    Each distinct pre-token is held once with its frequency, as a ``str`` whose
    characters are token ids (``chr(id)``), so finding a pair is ``str.find`` and
    merging it is ``str.replace`` (left to right, non-overlapping: the same scan
    as HF's ``Word::merge``). Pair counts live in a dict; a heap holds
    ``(-count, pair, seq, words)`` entries with lazy deletion: a popped entry
    whose count is stale is pushed back with the current count (HF does the
    same). A merge visits only the words listed for its pair and updates only
    the pairs beside each occurrence.
"""

from __future__ import annotations

import gc
import heapq
import time
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Protocol, TypeAlias

from tokcost.bpe.model import ALPHABET_ORDER, BYTE_TO_CHAR, BPEModel
from tokcost.bpe.pretokenize import (
    PatternName,
    PretokenizeSpec,
    count_block,
    count_words,
    pretokenize,
    prune_counts,
    resolve_pattern,
)
from tokcost.errors import InputError, UsageError

ProgressFn = Callable[[str, int, int], None]

#: The longest token, in bytes, unless told otherwise: that of tiktoken's o200k_base and
#: cl100k_base (128 spaces). Without a limit, a corpus that is one long run of a letter
#: learns tokens of 2, 4, 8, ... bytes up to the run's length (a model of megabytes).
DEFAULT_MAX_TOKEN_LENGTH = 128


@dataclass(frozen=True)
class TrainerConfig:
    """What to train. ``pattern``: a ``PatternName`` (gpt2, cl100k, o200k) or a regex.

    ``max_token_length`` (bytes) keeps every new token at most that long
    (``DEFAULT_MAX_TOKEN_LENGTH``, 128; None: no limit, HF's default); it matches
    HF's ``max_token_length=N + 1`` (HF keeps tokens strictly shorter).
    ``special_tokens`` get the first ids; their text in the corpus is split out and
    not learned from. ``jobs`` processes pre-tokenize when no other engine is given.

    ``max_pretokens`` caps the distinct pre-tokens held (None: every one, as HF's
    BpeTrainer holds every distinct word; HF has no such cap). The rule, exactly:

    - a table is *pruned to N* by keeping its N pre-tokens of highest count; among
      equal counts, those that entered the table first (``prune_counts``);
    - while counting, each reader (a process's byte range of the files, a Dask
      task's shard, the stream of standard input) prunes its table to N' whenever it
      holds more than 2N' pre-tokens after a block (about 1 MB of text), and to N'
      at its end; the merged table (on Dask, the driver's) is pruned to N' whenever
      it holds more than 2N' after a reader's table is added, and to N' at the end.
      N' is N plus the number of special tokens: their occurrences are counted while
      reading, then taken out, and the table is pruned to N;
    - a pre-token pruned forgets its count so far: seen again, it counts from 0. So
      a kept count is at most its true count, and exact for a pre-token never pruned.

    With no more than N distinct pre-tokens in the corpus nothing is pruned and the
    merges are HF's. Above it, the merges are learned from the kept table: pairs lose
    the counts of the rare pre-tokens dropped, so the late merges (rare pairs) can
    differ from HF's, and the pruning (not the merge rule) depends on how the files
    are split among readers (``jobs``, Dask's shards) and, on Dask, on the order in
    which the shards end (among equal counts). Memory then holds at most about 2N
    entries per reader and 2N in the merged table, whatever the corpus size and the
    number of shards; a result whose table reached N warns.
    """

    vocab_size: int
    pattern: PatternName | str = PatternName.O200K
    special_tokens: tuple[str, ...] = ()
    min_frequency: int = 0
    max_token_length: int | None = DEFAULT_MAX_TOKEN_LENGTH
    jobs: int = 1
    max_pretokens: int | None = None


@dataclass(frozen=True)
class TrainResult:
    """A trained model and what training saw."""

    model: BPEModel
    distinct_pretokens: int
    total_pretokens: int
    seconds_pretokenize: float
    seconds_merge: float
    #: True when the corpus ran out of pairs (or of pairs above min_frequency)
    #: before reaching ``vocab_size``; the model holds the merges it could make.
    exhausted: bool = False
    warnings: tuple[str, ...] = field(default=())


def check_config(config: TrainerConfig) -> None:
    resolve_pattern(config.pattern)
    specials = len(dict.fromkeys(config.special_tokens))
    need = 256 + specials
    if config.vocab_size < need:
        raise UsageError(
            f"vocab_size={config.vocab_size} is too small: the 256 byte tokens and "
            f"{specials} special token(s) need at least {need}",
            param="vocab_size",
        )
    if any(not s for s in config.special_tokens):
        raise UsageError(
            "a special token cannot be empty; drop the empty string from special_tokens",
            param="special_tokens",
        )
    if config.min_frequency < 0:
        raise UsageError("min_frequency must be 0 or more", param="min_frequency")
    if config.max_token_length is not None and config.max_token_length < 2:
        raise UsageError("max_token_length must be at least 2 bytes", param="max_token_length")
    if config.vocab_size > 0x110000:
        raise UsageError("vocab_size can be at most 1114112", param="vocab_size")
    if config.jobs < 1:
        raise UsageError("jobs must be 1 or more", param="jobs")
    if config.max_pretokens is not None and config.max_pretokens < 1:
        raise UsageError(
            f"max_pretokens={config.max_pretokens} must be 1 or more (or no cap)",
            param="max_pretokens",
        )


class WordCounter(Protocol):
    """Pre-tokenizes files into pre-token frequencies, on any runner (the same table):
    ``tokcost.counting.TrainingInputs``."""

    def count_words(
        self, paths: Sequence[str | Path], spec: PretokenizeSpec, *,
        progress: ProgressFn | None = None,
    ) -> Counter[str]: ...


def train(
    paths: Iterable[str | Path],
    config: TrainerConfig,
    progress: ProgressFn | None = None,
    *,
    engine: WordCounter | None = None,
    texts: Iterable[str] = (),
) -> TrainResult:
    """Train on text files (streamed; each line split on its own, special tokens first).

    ``engine`` pre-tokenizes (default: ``config.jobs`` processes here); the merges
    are then learned here, so they are the same whatever the engine. The engine gets
    one ``PretokenizeSpec`` (pattern, special tokens, cap), so every engine splits the
    special tokens out alike. ``texts`` is
    more of the corpus, here: blocks of whole lines (a stream's text cut after
    newlines, as ``tokcost.counting.LineBlocks`` yields standard input), each line
    split on its own as a file's are.
    """
    check_config(config)
    spec = PretokenizeSpec(config.pattern, config.special_tokens, config.max_pretokens)
    t0 = time.perf_counter()
    files = list(paths)
    if engine is None:
        counts = count_words(files, spec, jobs=config.jobs, progress=progress)
    elif files:
        counts = engine.count_words(files, spec, progress=progress)
    else:
        counts = Counter()
    cap = spec.counting_cap
    for block in texts:
        counts.update(count_block(block, spec))
        if cap is not None and len(counts) > 2 * cap:
            prune_counts(counts, cap)
    _drop_specials(counts, config)
    seconds = time.perf_counter() - t0
    return train_from_counts(counts, config, progress, seconds_pretokenize=seconds, consume=True)


def train_from_texts(
    texts: Iterable[str], config: TrainerConfig, progress: ProgressFn | None = None
) -> TrainResult:
    """Train on in-memory texts; each text is one sequence for the pattern (special
    tokens split out first, as ``train`` does).

    >>> r = train_from_texts(["aaabdaaabac"], TrainerConfig(vocab_size=259, pattern="gpt2"))
    >>> [r.model.decoder[i] for a, b, i in r.model.merges]
    [b'aa', b'ab', b'aaab']
    """
    check_config(config)
    spec = PretokenizeSpec(config.pattern, config.special_tokens, config.max_pretokens)
    t0 = time.perf_counter()
    counts: dict[str, int] = {}
    cap = spec.counting_cap
    for text in texts:
        for piece in pretokenize(text, spec):
            counts[piece] = counts.get(piece, 0) + 1
        if cap is not None and len(counts) > 2 * cap:
            prune_counts(counts, cap)
    _drop_specials(counts, config)
    return train_from_counts(counts, config, progress, seconds_pretokenize=time.perf_counter() - t0)


def _drop_specials(counts: dict[str, int], config: TrainerConfig) -> None:
    """Forget the special tokens' occurrences: they are tokens already, and learning
    from them would spend merges rebuilding them (HF does)."""
    for token in config.special_tokens:
        counts.pop(token, None)


def train_from_counts(
    word_counts: Mapping[str, int],
    config: TrainerConfig,
    progress: ProgressFn | None = None,
    *,
    seconds_pretokenize: float = 0.0,
    consume: bool = False,
) -> TrainResult:
    """Learn merges from pre-token frequencies (``{" the": 1234, ...}``).

    Every pre-token is learned from as given, one equal to a special token too
    (as HF's trainer does); ``train`` and ``train_from_texts`` leave those out.
    ``consume=True`` empties ``word_counts`` (a dict) while reading it, to save memory.
    ``config.max_pretokens`` prunes the table first (``TrainerConfig``; ties: the
    mapping's order). Counts are Python integers: exact at any size (HF's pair counts are 32-bit and
    wrap past 2**31 - 1).
    """
    # The merge loop allocates millions of small lists and tuples, none of them in a
    # reference cycle; the cyclic collector's passes over them cost 15-25% of its time.
    paused = gc.isenabled()
    gc.disable()
    try:
        return _learn(word_counts, config, progress, seconds_pretokenize, consume)
    finally:
        if paused:
            gc.enable()


#: The words (indices, ascending) that hold a pair: C arrays from the first count, lists after.
Owners: TypeAlias = "list[int] | array[int]"

#: Above this total count the numpy pair counting (int64) could overflow; Python ints then.
_INT64_SAFE = 1 << 62
#: numpy counts the pairs of this many characters of words at a time: its arrays stay a
#: few MB whatever the table's size.
_PAIR_CHUNK_CHARS = 1 << 18


def _initial_pairs(
    words: list[str], counts: list[int], total: int
) -> tuple[defaultdict[str, int], list[tuple[int, str, int, Owners]]]:
    """Every adjacent pair's count and the heap entries ``(-count, pair, seq, words)``,
    the words (indices, ascending, each once) that hold the pair.

    numpy counts them, a chunk of words at a time (an array of their id characters):
    about 5x faster than a Python loop over every pair of every word. The loop remains
    for counts past int64's reach (the sums stay exact either way).
    """
    pair_counts: defaultdict[str, int] = defaultdict(int)
    where: dict[str, Owners] = {}
    if total >= _INT64_SAFE or max(counts, default=0) >= _INT64_SAFE:
        where_get = where.get
        for iw, w in enumerate(words):
            c = counts[iw]
            for j in range(len(w) - 1):
                p = w[j : j + 2]
                pair_counts[p] += c
                lst = where_get(p)
                if lst is None:
                    where[p] = [iw]
                elif lst[-1] != iw:
                    lst.append(iw)
    else:
        import numpy as np

        lens = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        cuts = np.searchsorted(np.cumsum(lens), np.arange(0, int(lens.sum()), _PAIR_CHUNK_CHARS),
                               side="right").tolist()
        bounds = sorted({0, *cuts, len(words)})
        for start, stop in pairwise(bounds):
            _count_pairs(words, counts, lens, start, stop, pair_counts, where)
    heap = [(-pair_counts[p], p, seq, lst) for seq, (p, lst) in enumerate(where.items())]
    return pair_counts, heap


def _count_pairs(
    words: list[str], counts: list[int], lens: object, start: int, stop: int,
    pair_counts: defaultdict[str, int], where: dict[str, Owners],
) -> None:
    """Add the pairs of ``words[start:stop]`` (in order, so each list stays ascending)."""
    import numpy as np

    n_chars = np.asarray(lens)[start:stop]
    flat = np.frombuffer("".join(words[start:stop]).encode("utf-32-le"), dtype=np.uint32)
    if len(flat) < 2:
        return
    # A pair starts at every position but the last of its word.
    ok = np.ones(len(flat) - 1, dtype=bool)
    ends = np.cumsum(n_chars)
    ok[ends[(ends > 0) & (ends < len(flat))] - 1] = False
    # One int64 per pair: ids are below 2**21 (vocab_size <= 0x110000).
    code = (flat[:-1].astype(np.int64) << 21 | flat[1:])[ok]
    if not len(code):
        return
    word = np.repeat(np.arange(start, stop, dtype=np.int64), n_chars)[:-1][ok]
    order = np.argsort(code, kind="stable")  # stable: each pair's words stay ascending
    code, word = code[order], word[order]
    weight = np.asarray(counts[start:stop], dtype=np.int64)[word - start]
    new_pair = np.empty(len(code), dtype=bool)
    new_pair[0] = True
    np.not_equal(code[1:], code[:-1], out=new_pair[1:])
    first = np.flatnonzero(new_pair)
    sums = np.add.reduceat(weight, first).tolist()
    keys = code[first].tolist()
    # The words of each pair, each once (a word holding the pair twice is listed once).
    once = new_pair.copy()
    once[1:] |= word[1:] != word[:-1]
    # As a C array of 4-byte ints (``array``): a list would hold an int object per entry.
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


def _learn(
    word_counts: Mapping[str, int],
    config: TrainerConfig,
    progress: ProgressFn | None,
    seconds_pretokenize: float,
    consume: bool,
) -> TrainResult:
    check_config(config)
    pattern, pattern_name = resolve_pattern(config.pattern)
    if not word_counts:
        raise InputError("no text to train on: the corpus is empty")
    t0 = time.perf_counter()
    cap = config.max_pretokens
    if cap is not None and len(word_counts) > cap:
        table = word_counts if consume and isinstance(word_counts, dict) else dict(word_counts)
        prune_counts(table, cap)
        word_counts, consume = table, True

    # 1. Ids in HF order. `keys` is HF's id_to_word (byte-level strings, specials as given).
    keys: list[str] = []
    key_to_id: dict[str, int] = {}
    for tok in config.special_tokens:
        if tok not in key_to_id:
            key_to_id[tok] = len(keys)
            keys.append(tok)
    byte_id: list[int] = [0] * 256
    for b in ALPHABET_ORDER:
        ch = BYTE_TO_CHAR[b]
        if ch not in key_to_id:
            key_to_id[ch] = len(keys)
            keys.append(ch)
        byte_id[b] = key_to_id[ch]

    # 2. Words as strings of id characters; bytes -> chr(id) through latin-1.
    table = {b: chr(byte_id[b]) for b in range(256)}
    words: list[str] = []
    counts: list[int] = []
    total = 0
    if consume and isinstance(word_counts, dict):
        # Empty the caller's dict as we go, so the two forms of the corpus never
        # sit in memory together (the word order does not change the merges).
        while word_counts:
            word, n = word_counts.popitem()
            words.append(word.encode("utf-8").decode("latin-1").translate(table))
            counts.append(n)
            total += n
    else:
        for word, n in word_counts.items():
            words.append(word.encode("utf-8").decode("latin-1").translate(table))
            counts.append(n)
            total += n
    distinct = len(words)

    # 3. Pair counts and, per pair, the words that hold it (each word once).
    pair_counts, heap = _initial_pairs(words, counts, total)
    seq = len(heap)
    heapq.heapify(heap)

    # 4. Merge.
    merges: list[tuple[int, int, int]] = []
    # A token's length in bytes is its length in byte-level characters (one per byte),
    # special tokens too: a merge can only reach one whose text spells bytes
    # ("Ġa" is b" a", 2 bytes, not the 3 of its UTF-8), and HF counts it so.
    token_len: list[int] = [len(k) for k in keys]
    longest = max(token_len)
    max_len = config.max_token_length
    vocab_size = config.vocab_size
    min_freq = config.min_frequency
    heappop, heappush, heapreplace = heapq.heappop, heapq.heappush, heapq.heapreplace
    exhausted = False
    target = max(1, vocab_size - len(keys))
    last_report = 0.0
    while len(keys) < vocab_size:
        if not heap:
            exhausted = True
            break
        negc, pc, _, pos = heap[0]
        cur = pair_counts[pc]
        if -negc != cur:
            heapreplace(heap, (-cur, pc, seq, pos))
            seq += 1
            continue
        heappop(heap)
        if cur < 1 or cur < min_freq:
            exhausted = True
            break
        left, right = pc[0], pc[1]
        ia, ib = ord(left), ord(right)
        new_key = keys[ia] + keys[ib]
        new_id = key_to_id.get(new_key)
        if new_id is None:
            new_id = len(keys)
            key_to_id[new_key] = new_id
            keys.append(new_key)
            token_len.append(len(new_key))
        merges.append((ia, ib, new_id))
        r = chr(new_id)
        r_len = token_len[new_id]
        if r_len > longest:
            longest = r_len
        # No neighbour can make a token too long unless the longest one can: then
        # (most merges) the per-occurrence length test is skipped.
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
            # The left and right neighbour updates below are written out twice on
            # purpose: this is the trainer's innermost loop, and a helper call per
            # occurrence costs more than the whole update.
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
        if progress is not None:
            now = time.perf_counter()
            if now - last_report > 0.1:
                last_report = now
                progress("merge", len(keys) - (vocab_size - target), target)
    if progress is not None:
        progress("merge", len(keys) - (vocab_size - target), target)

    ranks: dict[bytes, int] = {bytes([x]): byte_id[x] for x in range(256)}
    token_bytes: dict[int, bytes] = {i: t for t, i in ranks.items()}
    for ia, ib, new_id in merges:
        if new_id not in token_bytes:
            data = token_bytes[ia] + token_bytes[ib]
            token_bytes[new_id] = data
            ranks.setdefault(data, new_id)
    specials = {tok: key_to_id[tok] for tok in config.special_tokens}
    model = BPEModel(
        pattern=pattern,
        ranks=ranks,
        special_tokens=specials,
        merges=tuple(merges),
        pattern_name=pattern_name,
    )
    warnings: list[str] = []
    if cap is not None and distinct >= cap:
        warnings.append(
            f"the corpus reached max_pretokens={cap} distinct pre-tokens: the rarer ones "
            f"were dropped, so the late merges can differ from an uncapped run; raise "
            f"it if memory allows"
        )
    if exhausted:
        warnings.append(
            f"the corpus ran out of pairs{' above min_frequency' if min_freq > 1 else ''}: "
            f"vocabulary has {len(keys)} tokens, not {vocab_size}; train on more text "
            f"or ask for a smaller vocab_size"
        )
    return TrainResult(
        model=model,
        distinct_pretokens=distinct,
        total_pretokens=total,
        seconds_pretokenize=seconds_pretokenize,
        seconds_merge=time.perf_counter() - t0,
        exhausted=exhausted,
        warnings=tuple(warnings),
    )
