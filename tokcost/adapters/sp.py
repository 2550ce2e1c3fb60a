"""``sp:PATH.model``: SentencePiece models (Llama-2, Mistral, Gemma, T5...)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tokcost.adapters.base import check_ids, special_tokens_by_id
from tokcost.errors import TokenizerDataError, UsageError


class SentencePieceAdapter:
    """A ``sentencepiece.SentencePieceProcessor``; no BOS/EOS in counts."""

    streamable = False  # a dummy prefix starts every encode call: count whole texts
    releases_gil = False
    count_backend = "sentencepiece"

    def __init__(self, name: str, processor: Any, *, exact: bool = True) -> None:
        self.name, self.processor, self.exact = name, processor, exact

    @property
    def vocab_size(self) -> int:
        return int(self.processor.get_piece_size())

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        # SentencePiece never parses control symbols out of text: nothing to allow.
        return [int(i) for i in self.processor.encode(text, out_type=int)]

    def count(self, text: str, *, allow_special: bool = False) -> int:
        return len(self.encode(text, allow_special=allow_special))

    def decode(self, ids: Sequence[int]) -> str:
        check_ids(self.name, ids, self.vocab_size)
        return str(self.processor.decode(list(ids)))

    def special_tokens(self) -> dict[str, int]:
        """Control and unknown pieces (<s>, </s>, <unk>): never read from text."""
        p = self.processor
        return special_tokens_by_id((str(p.id_to_piece(i)), i) for i in range(self.vocab_size)
                                    if p.is_control(i) or p.is_unknown(i))

    def pattern(self) -> str | None:
        return None  # SentencePiece splits on its own rules, not a regex

    def token_bytes(self, ids: Sequence[int]) -> list[bytes]:
        p = self.processor  # a byte-fallback piece looks like <0xE3>
        return [bytes([int(str(p.id_to_piece(i))[3:5], 16)]) if p.is_byte(i)
                else str(p.id_to_piece(i)).replace("\u2581", " ").encode("utf-8") for i in ids]


def load(arg: str) -> SentencePieceAdapter:
    import sentencepiece
    path = Path(arg).expanduser()
    if not path.is_file():
        raise UsageError(f"SentencePiece model not found: {path}")
    processor = sentencepiece.SentencePieceProcessor()
    try:
        processor.load(str(path))
        processor.id_to_piece(list(range(processor.get_piece_size())))  # each piece UTF-8
    except (OSError, RuntimeError, UnicodeDecodeError) as exc:
        raise TokenizerDataError(f"{path} is not a valid SentencePiece .model file "
                                 f"({str(exc)[:120]})") from exc
    return SentencePieceAdapter(f"sp:{arg}", processor)
