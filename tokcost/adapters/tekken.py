"""``tekken:PATH.json``: Mistral's Tekken tokenizer files (tiktoken-style BPE in JSON).

A Tekken file holds the vocabulary as base64 token bytes in rank order, the
pre-tokenization pattern, and how many ids are reserved for special tokens at
the start of the id space. Ordinary tokens are BPE-ranked exactly as tiktoken
ranks them, shifted up by that reserve (as mistral-common's Tekkenizer does);
special tokens are never parsed out of user text.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tokcost.adapters.tiktoken_enc import TiktokenTokenizer, _encoding_from_ranks
from tokcost.errors import TokcostError, TokenizerDataError, UsageError

# The pre-tokenizer of Tekken v3 files (o200k's without contractions, one digit a
# piece). It never joins text across tokcost.counting's cut points (a property
# test checks), so Tekken counts stream like tiktoken's.
TEKKEN_PATTERN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)


class TekkenTokenizer(TiktokenTokenizer):
    """tiktoken's core on the Tekken vocabulary; ids carry the special-token offset."""

    def __init__(self, name: str, encoding: Any, offset: int, vocab_size: int) -> None:
        super().__init__(name, encoding)
        self.streamable = encoding._pat_str == TEKKEN_PATTERN
        self.offset = offset
        self._vocab_size = vocab_size

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
            raise TokcostError(
                f"{self.name}: token id {bad[0]} is a special or unknown id; ordinary ids run "
                f"{self.offset}..{self._vocab_size - 1}"
            )
        return [i - self.offset for i in ids]

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.encoding.decode(self._inner(ids)))

    def token_bytes(self, ids: Sequence[int]) -> list[bytes]:
        return [self.encoding.decode_single_token_bytes(i) for i in self._inner(ids)]


def load(arg: str) -> TekkenTokenizer:
    """Constructor for the ``tekken:`` family (see tokcost.adapters.registry)."""
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
        raise TokenizerDataError(
            f"{path} is not a Mistral Tekken tokenizer file (expected JSON with 'config' "
            f"and 'vocab'): {exc}"
        ) from exc
    if sorted(ranks.values()) != list(range(len(ranks))):
        raise TokenizerDataError(f"{path}: Tekken ranks are not 0..{len(ranks) - 1} in order")
    encoding = _encoding_from_ranks(path.stem, ranks, pattern, {}, None)
    return TekkenTokenizer(f"tekken:{arg}", encoding, reserve, vocab_size)
