"""Every smaller vocabulary from one training run: BPE's prefix property, and the knee.

Training is greedy and its stopping size plays no part in its choices: a run to
``vocab_size=N`` learns exactly the first merges of any larger run, and ids follow merge
order, so the ``N``-token vocabulary is the larger one's ids below ``N`` (``prefix_model``;
``tests/test_bpe_sweep.py`` proves it against separate runs).

The knee is the first size whose next step cuts tokens per byte by less than ``gain``
per doubling (the cut relative to that size, divided by ``log2`` of the step, so any
grid is judged alike). Not the point of maximum curvature: this threshold means
something a person can set (another doubling of the embedding table must save 5% of
every sequence), and the curvature of a few points on a log axis moves with the grid.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from tokcost.bpe.encode import Encoder
from tokcost.bpe.model import BPEModel
from tokcost.errors import UsageError, arg

#: The knee's default threshold: a doubling that cuts tokens per byte by less is not worth it.
KNEE_GAIN = 0.05


def prefix_model(model: BPEModel, vocab_size: int) -> BPEModel:
    """The model a training run to ``vocab_size`` would have made: ``model``'s first merges.

    ``model`` must be a tokcost-trained model (ids in merge order, ``merges`` given) of
    at least ``vocab_size`` tokens, or one that ran out of pairs before it (then the
    whole model is the answer, as the smaller run would have run out too).

    >>> from tokcost.bpe.train import TrainerConfig, train_from_texts
    >>> big = train_from_texts(["aaabdaaabac"], TrainerConfig(vocab_size=259, pattern="gpt2"))
    >>> [big.model.decoder[i] for _, _, i in prefix_model(big.model, 257).merges]
    [b'aa']
    """
    floor = 256 + len(model.special_tokens)
    if vocab_size < floor:
        raise UsageError(f"{arg('vocab_sizes', vocab_size)} is too small: the 256 byte tokens "
                         f"and {len(model.special_tokens)} special token(s) need at least "
                         f"{floor}", param="vocab_sizes")
    if model.merges == () and model.n_tokens > floor:
        raise UsageError(f"{arg('model')} must be one tokcost trained (this one has no merges: "
                         f"an imported rank file); train one with tokcost.train_bpe",
                         param="model")
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
    """What one vocabulary made of some texts: tokens per text, and how often each id was used.

    ``unused`` counts the mergeable tokens (bytes included, specials not) no text used;
    ``unused_learned`` only those made by a merge.
    """

    vocab_size: int
    tokens: tuple[int, ...]  # one per text
    unused: int
    unused_learned: int
    learned: int  # tokens made by a merge


def usage(model: BPEModel, texts: Iterable[str]) -> Usage:
    """Encode ``texts`` with tokcost's encoder (special-token text as plain text).

    >>> ranks = {bytes([b]): b for b in range(256)} | {b"aa": 256}
    >>> u = usage(BPEModel(pattern=r"\\S+|\\s+", ranks=ranks), ["aaa", "b"])
    >>> u.tokens, u.unused, u.unused_learned
    ((2, 1), 254, 0)
    """
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


def check_sizes(sizes: Sequence[int]) -> tuple[int, ...]:
    """The sizes sorted, each once; at least one.

    >>> check_sizes([4096, 1024, 4096])
    (1024, 4096)
    """
    if not sizes:
        raise UsageError("give at least one vocabulary size, e.g. "
                         f"{arg('vocab_sizes', '1024,2048')}", param="vocab_sizes")
    return tuple(sorted(set(sizes)))


def knee(sizes: Sequence[int], tokens_per_byte: Sequence[float],
         gain: float = KNEE_GAIN) -> int | None:
    """The first size whose next step cuts tokens per byte by less than ``gain`` per
    doubling (see the module's docstring); None when every step still pays.

    >>> knee([1000, 2000, 4000, 8000], [0.50, 0.40, 0.37, 0.36])  # cuts 20%, 7.5%, 2.7%
    4000
    >>> knee([1000, 2000], [0.5, 0.3]) is None
    True
    """
    if not 0 < gain < 1:
        raise UsageError(f"{arg('knee_gain', gain)} must be between 0 and 1 (0.05: 5% per "
                         f"doubling)", param="knee_gain")
    points = list(zip(sizes, tokens_per_byte, strict=True))
    for (s0, t0), (s1, t1) in itertools.pairwise(points):
        if t0 <= 0 or s1 <= s0:
            continue
        cut = (t0 - t1) / t0 / math.log2(s1 / s0)
        if cut < gain:
            return s0
    return None
