"""Every smaller vocabulary from one training run (a run to N learns the first merges of any
larger run, ids in merge order), their use of held-out text, and the knee (docs/bpe.md)."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from tokcost.bpe.encode import Encoder
from tokcost.bpe.model import BPEModel
from tokcost.errors import UsageError, arg

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
    doubling; None when every step still pays.

    >>> knee([1000, 2000, 4000, 8000], [0.50, 0.40, 0.37, 0.36])  # cuts 20%, 7.5%, 2.7%
    4000
    """
    if not 0 < gain < 1:
        raise UsageError(f"{arg('knee_gain', gain)} must be between 0 and 1 (0.05: 5% per "
                         f"doubling)", param="knee_gain")
    for (s0, t0), (s1, t1) in itertools.pairwise(zip(sizes, tokens_per_byte, strict=True)):
        if t0 <= 0 or s1 <= s0:
            continue
        cut = (t0 - t1) / t0 / math.log2(s1 / s0)
        if cut < gain:
            return s0
    return None
