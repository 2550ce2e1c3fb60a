"""``tekken:PATH.json``: Mistral's Tekken files on tiktoken, ids shifted up by the specials'
reserve as mistral-common's Tekkenizer does; specials are never parsed out of user text."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tokcost.adapters.tiktoken_enc import TiktokenTokenizer, _encoding_from_ranks
from tokcost.errors import TokcostError, TokenizerDataError, UsageError

# Tekken v3's (o200k's, no contractions, one digit a piece): its counts stream (a test checks).
TEKKEN_PATTERN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
                  r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
                  r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")


class TekkenTokenizer(TiktokenTokenizer):
    """tiktoken's core on the Tekken vocabulary; ids carry the special-token offset."""

    def __init__(self, name: str, encoding: Any, offset: int, vocab_size: int) -> None:
        super().__init__(name, encoding)
        self.streamable = encoding._pat_str == TEKKEN_PATTERN
        self.offset, self._vocab_size = offset, vocab_size

    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        return [i + self.offset for i in self.encoding.encode_ordinary(text)]

    def count(self, text: str, *, allow_special: bool = False) -> int:
        return len(self.encoding.encode_ordinary(text))

    def _inner(self, ids: Sequence[int]) -> list[int]:
        bad = [i for i in ids if not self.offset <= i < self._vocab_size]
        if bad:
            raise TokcostError(f"{self.name}: token id {bad[0]} is a special or unknown id; "
                               f"ordinary ids run {self.offset}..{self._vocab_size - 1}")
        return [i - self.offset for i in ids]

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.encoding.decode(self._inner(ids)))

    def token_bytes(self, ids: Sequence[int]) -> list[bytes]:
        return [self.encoding.decode_single_token_bytes(i) for i in self._inner(ids)]


def load(arg: str) -> TekkenTokenizer:
    path = Path(arg).expanduser()
    if not path.is_file():
        raise UsageError(f"Tekken tokenizer file not found: {path}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        config = data["config"]
        pattern = str(config["pattern"])
        reserve = int(config["default_num_special_tokens"])
        vocab_size = int(config["default_vocab_size"])
        entries = data["vocab"][: vocab_size - reserve]
        ranks = {base64.b64decode(e["token_bytes"]): int(e["rank"]) for e in entries}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TokenizerDataError(f"{path} is not a Mistral Tekken tokenizer file (expected JSON "
                                 f"with 'config' and 'vocab'): {exc}") from exc
    if sorted(ranks.values()) != list(range(len(ranks))):
        raise TokenizerDataError(f"{path}: Tekken ranks are not 0..{len(ranks) - 1} in order")
    encoding = _encoding_from_ranks(path.stem, ranks, pattern, {}, None)
    return TekkenTokenizer(f"tekken:{arg}", encoding, reserve, vocab_size)
