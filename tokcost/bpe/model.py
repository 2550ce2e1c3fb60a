"""The BPE model, tiktoken's encoding: ``ranks`` maps each token's bytes to its id, which is
also its merge priority; a trained one has Hugging Face's ids (docs/bpe.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from tokcost.errors import TokcostError, UsageError


class BPEError(TokcostError):
    """A BPE model or its input is unusable."""


class InvalidTokenId(UsageError):
    """A token id that the model does not have."""


class DisallowedSpecial(TokcostError):
    """Text holds a special token's text and the caller did not allow specials."""


_PRINTABLE = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
              *range(ord("®"), ord("ÿ") + 1)]
#: GPT-2's byte-level alphabet: printable Latin-1 bytes as themselves, the other 68 from
#: U+0100 on, in byte order (``b" "`` -> ``"Ġ"``).
BYTE_TO_CHAR: dict[int, str] = {b: chr(b) for b in _PRINTABLE} | {
    b: chr(256 + n) for n, b in enumerate(x for x in range(256) if x not in _PRINTABLE)}

#: The 256 bytes in Hugging Face's alphabet order (sorted by byte-level character).
ALPHABET_ORDER: tuple[int, ...] = tuple(sorted(range(256), key=lambda b: ord(BYTE_TO_CHAR[b])))


def to_byte_level(data: bytes) -> str:
    """``b"hi there"`` -> ``"hiĠthere"`` (the form HF stores in tokenizer.json)."""
    return "".join(BYTE_TO_CHAR[b] for b in data)


@dataclass(frozen=True)
class BPEModel:
    """A byte-level BPE vocabulary of the 256 bytes at least; ``merges``: ``(left, right,
    new id)`` in training order (none for an imported rank file)."""

    pattern: str
    ranks: dict[bytes, int]
    special_tokens: dict[str, int] = field(default_factory=dict)
    merges: tuple[tuple[int, int, int], ...] = ()
    pattern_name: str | None = None
    source: str = ""

    def __post_init__(self) -> None:
        missing = [b for b in range(256) if bytes([b]) not in self.ranks]
        if missing:
            raise BPEError(f"BPE model {self.source or ''} lacks single-byte tokens (e.g. byte "
                           f"{missing[0]}); a byte-level vocabulary needs all 256 bytes")

    @cached_property
    def decoder(self) -> dict[int, bytes]:
        dec = {i: b for b, i in self.ranks.items()}
        for text, i in self.special_tokens.items():
            dec.setdefault(i, text.encode("utf-8"))
        return dec

    @property
    def vocab_size(self) -> int:
        """Largest id + 1 (ids may have gaps in imported vocabularies)."""
        return max(self.decoder) + 1

    @property
    def n_tokens(self) -> int:
        """Distinct ids (mergeable + special)."""
        return len(self.decoder)

    @cached_property
    def special_ids(self) -> dict[int, str]:
        return {i: t for t, i in self.special_tokens.items()}

    def token_bytes(self, token_id: int) -> bytes:
        try:
            return self.decoder[token_id]
        except (KeyError, TypeError):
            raise self.invalid(token_id) from None

    def invalid(self, token_id: object) -> InvalidTokenId:
        return InvalidTokenId(f"token id {token_id!r} is not in this vocabulary "
                              f"(ids run 0..{self.vocab_size - 1})")
