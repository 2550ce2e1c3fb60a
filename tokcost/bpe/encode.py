"""The pure-Python reference encoder and decoder (tiktoken's algorithm, no Rust).

Text is cut into pre-tokens by the model's pattern; each pre-token's UTF-8
bytes are looked up whole first, then merged pairwise: repeatedly join the
adjacent pair whose joined bytes have the lowest rank (the leftmost on a tie),
until no joined pair is a token. Results are cached per pre-token.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

from tokcost.bpe.model import BPEModel, DisallowedSpecial, InvalidTokenId
from tokcost.bpe.pretokenize import compile_pattern, splitter

#: The per-pre-token cache is cleared when it holds this many entries (bounded memory).
CACHE_LIMIT = 1 << 20


def bpe_merge(piece: bytes, ranks: dict[bytes, int]) -> list[int]:
    """Ids of one pre-token.

    >>> ranks = {bytes([b]): b for b in range(256)} | {b"aa": 256, b"ab": 257, b"aaab": 258}
    >>> bpe_merge(b"aaabdaaabac", ranks)
    [258, 100, 258, 97, 99]
    """
    rank = ranks.get(piece)
    if rank is not None:
        return [rank]
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


class _PieceCache(dict[str, tuple[int, ...]]):
    """pre-token -> ids, filled on a miss; cleared when it reaches ``CACHE_LIMIT``."""

    def __init__(self, ranks: dict[bytes, int]) -> None:
        super().__init__()
        self.ranks = ranks

    def __missing__(self, piece: str) -> tuple[int, ...]:
        data = piece.encode("utf-8")
        rank = self.ranks.get(data)
        ids = (rank,) if rank is not None else tuple(bpe_merge(data, self.ranks))
        if len(self) >= CACHE_LIMIT:
            self.clear()
        self[piece] = ids
        return ids


class Encoder:
    """Encode and decode with a ``BPEModel``, in pure Python.

    >>> from tokcost.bpe.model import BPEModel
    >>> m = BPEModel(pattern=r"\\S+|\\s+", ranks={bytes([b]): b for b in range(256)} | {b"hi": 256})
    >>> Encoder(m).encode("hi hi")
    [256, 32, 256]
    """

    def __init__(self, model: BPEModel) -> None:
        self.model = model
        self._ranks = model.ranks
        self._pattern = compile_pattern(model.pattern)
        self._cache = _PieceCache(model.ranks)
        self._full_cover = model.pattern_name is not None
        self._split = splitter(model.pattern) if self._full_cover else self._pattern.findall
        specials = sorted(model.special_tokens, key=len, reverse=True)
        self._special_re = None
        if specials:
            import regex

            self._special_re = regex.compile("|".join(regex.escape(s) for s in specials))

    def find_special(self, text: str) -> str | None:
        """The first special token's text found in ``text``, or None."""
        if self._special_re is None:
            return None
        m = self._special_re.search(text)
        return None if m is None else str(m.group())

    def _pieces(self, text: str) -> list[str]:
        pieces: list[str] = self._split(text)
        if self._full_cover or sum(map(len, pieces)) == len(text):
            return pieces
        from tokcost.bpe.pretokenize import split_text

        return split_text(text, self.model.pattern)

    def _encode_pieces(self, pieces: list[str]) -> list[int]:
        # map/chain run in C; only a cache miss calls back into Python (_PieceCache.__missing__).
        return list(chain.from_iterable(map(self._cache.__getitem__, pieces)))

    def encode_ordinary(self, text: str) -> list[int]:
        """Ids of ``text``; special-token text is encoded as plain text.

        Lone surrogates (not UTF-8-encodable) become U+FFFD, as in tiktoken.
        """
        try:
            return self._encode_pieces(self._pieces(text))
        except UnicodeEncodeError:
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            return self._encode_pieces(self._pieces(text))

    def encode_bytes(self, data: bytes) -> list[int]:
        """Ids of any byte string (invalid UTF-8 included); ``decode_bytes`` gives it back."""
        text = data.decode("utf-8", "surrogateescape")
        pieces = self._pieces(text)
        # The cache is keyed by text, and escaped bytes are never valid text: keep them out.
        if any("\udc80" <= ch <= "\udcff" for ch in text):
            ranks = self._ranks
            out: list[int] = []
            for piece in pieces:
                out += bpe_merge(piece.encode("utf-8", "surrogateescape"), ranks)
            return out
        return self._encode_pieces(pieces)

    def count_ordinary(self, text: str) -> int:
        try:
            return sum(map(len, map(self._cache.__getitem__, self._pieces(text))))
        except UnicodeEncodeError:
            return len(self.encode_ordinary(text))

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        """Ids of ``text``. Special-token text raises unless ``allow_special``.

        Like tiktoken's ``encode`` with ``disallowed_special="all"``: an
        ``<|endoftext|>`` in user data is an error, not a silent control token.
        """
        if self._special_re is None:
            return self.encode_ordinary(text)
        if not allow_special:
            m = self._special_re.search(text)
            if m is not None:
                raise DisallowedSpecial(
                    f"text contains the special token {m.group()!r}; pass allow_special=True "
                    f"to encode it as one token, or use encode_ordinary to encode it as plain "
                    f"text",
                    param="allow_special",
                )
            return self.encode_ordinary(text)
        out: list[int] = []
        pos = 0
        specials = self.model.special_tokens
        for m in self._special_re.finditer(text):
            out += self.encode_ordinary(text[pos : m.start()])
            out.append(specials[m.group()])
            pos = m.end()
        out += self.encode_ordinary(text[pos:])
        return out

    def count(self, text: str, *, allow_special: bool = False) -> int:
        """Number of tokens; special-token text counts as plain text unless allowed."""
        if allow_special and self._special_re is not None:
            return len(self.encode(text, allow_special=True))
        return self.count_ordinary(text)

    def decode_bytes(self, ids: Sequence[int]) -> bytes:
        decoder = self.model.decoder
        try:
            return b"".join([decoder[i] for i in ids])
        except (KeyError, TypeError):
            bad = next(i for i in ids if not isinstance(i, int) or i not in decoder)
            raise InvalidTokenId(
                f"token id {bad!r} is not in this vocabulary "
                f"(ids run 0..{self.model.vocab_size - 1})"
            ) from None

    def decode(self, ids: Sequence[int], errors: str = "replace") -> str:
        """Text of ``ids``; bytes that are not UTF-8 become U+FFFD (``errors="replace"``)."""
        return self.decode_bytes(ids).decode("utf-8", errors)

    def token_bytes(self, ids: Sequence[int]) -> list[bytes]:
        return [self.model.token_bytes(i) for i in ids]
