"""``hf:PATH/tokenizer.json`` or ``hf:ORG/REPO``: Hugging Face ``tokenizers``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tokcost.errors import TokcostError, TokenizerDataError, UsageError

if TYPE_CHECKING:
    from tokenizers import Tokenizer as HFTokenizer


class HFTokenizerAdapter:
    """A ``tokenizers.Tokenizer``; counts exclude the post-processor's BOS/EOS."""

    streamable = False  # normalizers and pre-tokenizers vary; count whole texts
    releases_gil = True

    def __init__(self, name: str, tokenizer: HFTokenizer, *, exact: bool = True) -> None:
        self.name = name
        self.tokenizer = tokenizer
        self.exact = exact

    @property
    def vocab_size(self) -> int:
        return int(self.tokenizer.get_vocab_size(with_added_tokens=True))

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        # encode_special_tokens=True makes "<|endoftext|>" in user text plain text.
        self.tokenizer.encode_special_tokens = not allow_special
        return list(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def count(self, text: str, *, allow_special: bool = False) -> int:
        return len(self.encode(text, allow_special=allow_special))

    def decode(self, ids: Sequence[int]) -> str:
        bad = [i for i in ids if not 0 <= i < self.vocab_size]
        if bad:
            raise TokcostError(
                f"{self.name}: invalid token id {bad[0]}; ids run 0..{self.vocab_size - 1}"
            )
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=False))

    def token_bytes(self, ids: Sequence[int]) -> list[bytes]:
        # Decode one id at a time: byte-level vocabularies store pieces as mapped
        # characters, and decode() undoes that mapping.
        return [self.decode([i]).encode("utf-8") for i in ids]


def load(arg: str) -> HFTokenizerAdapter:
    """Constructor for the ``hf:`` family (see tokcost.adapters.registry)."""
    from tokenizers import Tokenizer

    path = Path(arg).expanduser()
    if path.is_dir():
        path = path / "tokenizer.json"
    if path.suffix == ".json" or path.exists():
        if not path.is_file():
            raise UsageError(f"tokenizer file not found: {path}")
        try:
            return HFTokenizerAdapter(f"hf:{arg}", Tokenizer.from_file(str(path)))
        except Exception as exc:  # tokenizers raises a bare Exception on bad JSON
            raise TokenizerDataError(
                f"{path} is not a valid Hugging Face tokenizer.json ({str(exc)[:120]})"
            ) from exc
    try:
        # Uses the local Hugging Face cache when present; downloads only with network.
        return HFTokenizerAdapter(f"hf:{arg}", Tokenizer.from_pretrained(arg))
    except Exception as exc:
        raise TokenizerDataError(
            f"cannot load hf:{arg}: it is neither a local tokenizer.json nor in the Hugging Face "
            "cache, and the hub is unreachable; on a connected machine save the repo's "
            "tokenizer.json and pass hf:PATH/tokenizer.json"
        ) from exc
