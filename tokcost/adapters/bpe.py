"""``bpe:PATH``: a tokcost-trained BPE model (or ``.tiktoken`` file), on tiktoken's Rust core for
the named patterns (Unicode 17's new letters are not yet letters to tiktoken's regex)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tokcost.adapters.base import special_tokens_by_id
from tokcost.bpe.encode import Encoder
from tokcost.bpe.io import load_any
from tokcost.bpe.model import BPEModel, DisallowedSpecial, InvalidTokenId
from tokcost.errors import arg

if TYPE_CHECKING:
    import tiktoken


def _tiktoken_encoding(model: BPEModel, name: str) -> tiktoken.Encoding | None:
    if model.pattern_name is None:
        return None
    if set(model.special_tokens.values()) & set(model.ranks.values()):
        return None  # tiktoken needs special ids apart from mergeable ones
    try:
        import tiktoken
        return tiktoken.Encoding(name=name, pat_str=model.pattern, mergeable_ranks=model.ranks,
                                 special_tokens=model.special_tokens)
    except Exception:  # a pattern tiktoken cannot compile, an old tiktoken: use Python
        return None


class BPETokenizer:
    exact = True

    def __init__(self, model: BPEModel, name: str, *, use_tiktoken: bool = True) -> None:
        self.model, self.name = model, name
        self.reference = Encoder(model)
        self.encoding = _tiktoken_encoding(model, name) if use_tiktoken else None
        self.releases_gil = self.encoding is not None
        # Named patterns never join text across counting's chunk boundaries.
        self.streamable = model.pattern_name is not None

    @property
    def vocab_size(self) -> int:
        return self.model.vocab_size

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        if self.encoding is None:
            if allow_special:
                return self.reference.encode(text, allow_special=True)
            return self.reference.encode_ordinary(text)
        if allow_special:
            return self.encoding.encode(text, allowed_special="all")
        return self.encoding.encode_ordinary(text)

    def encode_strict(self, text: str, *, allow_special: bool = False) -> list[int]:
        """tiktoken's rule: special-token text raises unless allowed."""
        found = None if allow_special else self.reference.find_special(text)
        if found is not None:
            raise DisallowedSpecial(f"{self.name}: text contains the special token {found!r}; "
                                    f"pass {arg('allow_special', True)} to encode it as one token",
                                    param="allow_special")
        return self.encode(text, allow_special=allow_special)

    def count(self, text: str, *, allow_special: bool = False) -> int:
        if self.encoding is None:
            return self.reference.count(text, allow_special=allow_special)
        if allow_special:
            return len(self.encoding.encode(text, allowed_special="all"))
        return len(self.encoding.encode_ordinary(text))

    def decode(self, ids: Sequence[int]) -> str:
        return self.reference.decode(ids)

    def token_bytes(self, ids: Sequence[int]) -> list[bytes]:
        return self.reference.token_bytes(ids)

    def special_tokens(self) -> dict[str, int]:
        return special_tokens_by_id(self.model.special_tokens.items())

    def pattern(self) -> str | None:
        return self.model.pattern


def load(arg: str) -> BPETokenizer:
    return BPETokenizer(load_any(arg), f"bpe:{arg}")


__all__ = ["BPETokenizer", "InvalidTokenId", "load"]
