"""The pure-Python reference encoder: tiktoken's algorithm (the lowest rank joins first, the
leftmost on a tie), a pair scan for short pre-tokens, a priority queue for long ones."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from itertools import chain

from tokcost.bpe.model import BPEModel, DisallowedSpecial
from tokcost.bpe.pretokenize import cut, special_regex, splitter
from tokcost.errors import arg

CACHE_LIMIT = 1 << 20  # the pre-token cache is cleared at this many entries
#: From this many bytes a pre-token merges through the queue (tiktoken: 100; in Python the
#: queue is 1.3x quicker at 16-24 bytes, 4x at 64-100).
LARGE_PIECE = 16
CACHED_BELOW = 100  # longer pre-tokens are rarely seen twice and would unbound the cache
_SPACE = frozenset(b" \n\t")


def bpe_merge(piece: bytes, ranks: Mapping[bytes, int]) -> list[int]:
    """Ids of one pre-token."""
    rank = ranks.get(piece)
    if rank is not None:
        return [rank]
    if len(piece) < LARGE_PIECE:
        return merge_scan(piece, ranks)
    return merge_queue(piece, ranks)


def merge_scan(piece: bytes, ranks: Mapping[bytes, int]) -> list[int]:
    """BPE by scanning every pair for the lowest rank, once per merge: O(n^2)."""
    parts = [piece[i : i + 1] for i in range(len(piece))]
    get = ranks.get
    while len(parts) > 1:
        best = -1
        best_rank = 0
        for i in range(len(parts) - 1):
            r = get(parts[i] + parts[i + 1])
            if r is not None and (best < 0 or r < best_rank):
                best, best_rank = i, r
        if best < 0:
            break
        parts[best : best + 2] = [parts[best] + parts[best + 1]]
    return [ranks[p] for p in parts]


def merge_queue(piece: bytes, ranks: Mapping[bytes, int]) -> list[int]:
    """BPE in O(n log n), as tiktoken's ``_byte_pair_merge_large``: ``live[i]`` is the rank of
    part ``i`` joined with the next (-1: none), ``buckets[r]`` the starts of rank ``r``, worked
    left to right, so a run of one pair (``"x" * n``) costs a sort, not a push per pair."""
    # The hot loop of encoding, kept whole (86 lines): a helper call per merge costs more.
    n = len(piece)
    get = ranks.get
    end = list(range(1, n + 1))
    prev = list(range(-1, n - 1))
    live = [-1] * n
    buckets: dict[int, list[int]] = {}
    for i in range(n - 1):
        r = get(piece[i : i + 2])
        if r is not None:
            live[i] = r
            bucket = buckets.get(r)
            if bucket is None:
                buckets[r] = [i]
            else:
                bucket.append(i)
    order = list(buckets)
    heapq.heapify(order)
    pop, push = heapq.heappop, heapq.heappush
    while order:
        rank = pop(order)
        starts = buckets.pop(rank, None)
        if starts is None:
            continue  # a rank pushed twice
        starts.sort()
        lowest = rank + 1  # the lowest rank of a pair made in this round
        # Hot loop: the neighbour updates are written out, a call per merge costs more.
        for k, i in enumerate(starts):
            if live[i] != rank:
                continue  # the pair it stood for is gone
            right = end[i]
            stop = end[right]
            end[i] = stop
            live[right] = -1  # the right part is part of this one now
            if stop < n:
                prev[stop] = i
                r = get(piece[i : end[stop]])
                if r is None:
                    live[i] = -1
                else:
                    live[i] = r
                    bucket = buckets.get(r)
                    if bucket is None:
                        buckets[r] = [i]
                        push(order, r)
                    else:
                        bucket.append(i)
                    if r < lowest:
                        lowest = r
            else:
                live[i] = -1
            if i:
                p = prev[i]
                r = get(piece[p:stop])
                if r is None:
                    live[p] = -1
                else:
                    live[p] = r
                    bucket = buckets.get(r)
                    if bucket is None:
                        buckets[r] = [p]
                        push(order, r)
                    else:
                        bucket.append(p)
                    if r < lowest:
                        lowest = r
            if lowest <= rank:  # a pair ranked no higher than this round's: it goes first
                rest = starts[k + 1 :]
                if rest:
                    bucket = buckets.get(rank)
                    if bucket is None:
                        buckets[rank] = rest
                        push(order, rank)
                    else:
                        bucket += rest
                break
    out: list[int] = []
    i = 0
    while i < n:
        stop = end[i]
        out.append(ranks[piece[i:stop]])
        i = stop
    return out


def rank_merges(ranks: Mapping[bytes, int]) -> list[tuple[int, int, int]]:
    """A rank file's merges, ``(left, right, rank)`` in rank order: the two tokens that byte-pair
    merging a token's bytes in rank order (tiktoken's rule), with only the ranks below its own,
    ends in. A token it leaves in three parts or more is no merge of two and is left out."""
    get = ranks.get
    merges: list[tuple[int, int, int]] = []
    for data, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        cuts = list(range(len(data) + 1))  # the parts are data[cuts[i]:cuts[i + 1]]
        pairs = [get(data[i : i + 2], rank) for i in range(len(data) - 1)]  # >= rank: no merge
        while len(pairs) > 1 and (low := min(pairs)) < rank:
            i = pairs.index(low)  # the leftmost of the lowest
            del cuts[i + 1], pairs[i]
            if i:
                pairs[i - 1] = get(data[cuts[i - 1] : cuts[i + 1]], rank)
            if i < len(pairs):
                pairs[i] = get(data[cuts[i] : cuts[i + 2]], rank)
        left, right = get(data[: cuts[1]], rank), get(data[cuts[1] :], rank)
        if len(pairs) == 1 and left < rank and right < rank:  # one byte: left is itself
            merges.append((left, right, rank))
    return merges


class _PieceCache(dict[str, tuple[int, ...]]):
    """pre-token -> ids, filled on a miss; cleared when it reaches ``CACHE_LIMIT``."""

    def __init__(self, ranks: dict[bytes, int]) -> None:
        super().__init__()
        self.ranks = ranks

    def __missing__(self, piece: str) -> tuple[int, ...]:
        data = piece.encode("utf-8")
        rank = self.ranks.get(data)
        ids = (rank,) if rank is not None else tuple(bpe_merge(data, self.ranks))
        if len(data) >= CACHED_BELOW:
            return ids
        if len(self) >= CACHE_LIMIT:
            self.clear()
        self[piece] = ids
        return ids


class Encoder:
    """Encode and decode with a ``BPEModel``, in pure Python."""

    def __init__(self, model: BPEModel) -> None:
        self.model = model
        self._ranks = model.ranks
        self._cache = _PieceCache(model.ranks)
        self._split = splitter(model.pattern)  # gaps between matches included
        specials = tuple(model.special_tokens)
        self._special_re = special_regex(specials) if specials else None

    def find_special(self, text: str) -> str | None:
        m = None if self._special_re is None else self._special_re.search(text)
        return None if m is None else str(m.group())

    def _encode_pieces(self, pieces: list[str]) -> list[int]:
        # map/chain run in C; only a cache miss calls back into Python.
        return list(chain.from_iterable(map(self._cache.__getitem__, pieces)))

    def encode_ordinary(self, text: str) -> list[int]:
        """Ids of ``text``, special-token text as plain text; lone surrogates become U+FFFD."""
        try:
            return self._encode_pieces(self._split(text))
        except UnicodeEncodeError:
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            return self._encode_pieces(self._split(text))

    def encode_bytes(self, data: bytes) -> list[int]:
        """Ids of any bytes, as tiktoken's ``_encode_bytes``: the last pre-token before invalid
        UTF-8 (and whitespace tokens before it) merges again with the rest, as one piece."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return self._encode_invalid(data, exc.start)
        return self.encode_ordinary(text)

    def _encode_invalid(self, data: bytes, valid: int) -> list[int]:
        out: list[int] = []
        last: tuple[int, ...] = ()
        for piece in self._split(data[:valid].decode("utf-8")):
            last = self._cache[piece]
            out += last
        n_last = len(last)
        decoder = self.model.decoder

        def blank(token: int) -> bool:
            return all(b in _SPACE for b in decoder[token])

        # tiktoken's guard for cl100k's \s*[\r\n]+: a whitespace split is not stable.
        if n_last and blank(out[-n_last]):
            while n_last < len(out) and blank(out[-n_last - 1]):
                n_last += 1
        rest = data[valid:]
        if n_last:
            rest = self.decode_bytes(out[-n_last:]) + rest
            del out[-n_last:]
        return out + bpe_merge(rest, self._ranks)

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        """Ids of ``text``; special-token text raises unless allowed (tiktoken's rule)."""
        if self._special_re is None:
            return self.encode_ordinary(text)
        if not allow_special:
            found = self.find_special(text)
            if found is not None:
                raise DisallowedSpecial(
                    f"text contains the special token {found!r}; pass "
                    f"{arg('allow_special', True)} to encode it as one token, or use "
                    f"encode_ordinary to encode it as plain text", param="allow_special")
            return self.encode_ordinary(text)
        out: list[int] = []
        specials = self.model.special_tokens
        for k, part in enumerate(cut(text, self._special_re.finditer(text))):
            out += [specials[part]] if k % 2 else self.encode_ordinary(part)
        return out

    def count(self, text: str, *, allow_special: bool = False) -> int:
        """Number of tokens; special-token text counts as plain text unless allowed."""
        if allow_special and self._special_re is not None:
            return len(self.encode(text, allow_special=True))
        try:
            return sum(map(len, map(self._cache.__getitem__, self._split(text))))
        except UnicodeEncodeError:
            return len(self.encode_ordinary(text))

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        decoder = self.model.decoder
        try:
            return b"".join([decoder[i] for i in ids])
        except (KeyError, TypeError):
            bad = next(i for i in ids if not isinstance(i, int) or i not in decoder)
            raise self.model.invalid(bad) from None

    def decode(self, ids: Sequence[int], errors: str = "replace") -> str:
        """Text of ``ids``; bytes that are not UTF-8 become U+FFFD."""
        return self.decode_bytes(ids).decode("utf-8", errors)

    def token_bytes(self, ids: Sequence[int]) -> list[bytes]:
        return [self.model.token_bytes(i) for i in ids]
