"""``bpe:PATH``: a tokcost-trained BPE model (or a ``.tiktoken`` rank file).

The model runs on tiktoken's Rust core when that gives the reference encoder's ids: for
the named patterns (a user regex may leave gaps, which HF keeps and tiktoken drops, or
not compile there). One known difference: letters new in Unicode 17 are letters to the
``regex`` package but not yet to tiktoken's Rust regex.
"""

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

        return tiktoken.Encoding(
            name=name,
            pat_str=model.pattern,
            mergeable_ranks=model.ranks,
            special_tokens=model.special_tokens,
        )
    except Exception:  # a pattern tiktoken cannot compile, an old tiktoken: use Python
        return None


class BPETokenizer:
    """A ``BPEModel`` behind the tokcost ``Tokenizer`` protocol."""

    exact = True

    def __init__(self, model: BPEModel, name: str, *, use_tiktoken: bool = True) -> None:
        self.model = model
        self.name = name
        self.reference = Encoder(model)
        self.encoding = _tiktoken_encoding(model, name) if use_tiktoken else None
        self.releases_gil = self.encoding is not None
        # Named patterns never join text across counting's chunk boundaries.
        self.streamable = model.pattern_name is not None

    @property
    def vocab_size(self) -> int:
        return self.model.vocab_size

    def _check_special(self, text: str) -> None:
        found = self.reference.find_special(text)
        if found is not None:
            raise DisallowedSpecial(
                f"{self.name}: text contains the special token {found!r}; pass "
                f"{arg('allow_special', True)} to encode it as one token",
                param="allow_special",
            )

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        """Ids of ``text``. As for every tokcost tokenizer, special-token text is plain
        text unless ``allow_special``: counting and showing tokens never stop on user data."""
        if self.encoding is None:
            if allow_special:
                return self.reference.encode(text, allow_special=True)
            return self.reference.encode_ordinary(text)
        if allow_special:
            return self.encoding.encode(text, allowed_special="all")
        return self.encoding.encode_ordinary(text)

    def encode_strict(self, text: str, *, allow_special: bool = False) -> list[int]:
        """tiktoken's rule (``encode_bpe``): special-token text raises unless allowed."""
        if not allow_special:
            self._check_special(text)
        return self.encode(text, allow_special=allow_special)

    def count(self, text: str, *, allow_special: bool = False) -> int:
        """Special-token text counts as plain text unless ``allow_special``."""
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
    """``bpe:PATH`` -> tokenizer (``PATH`` is a tokcost model or a ``.tiktoken`` file)."""
    model = load_any(arg)
    return BPETokenizer(model, f"bpe:{arg}")


__all__ = ["BPETokenizer", "InvalidTokenId", "load"]
