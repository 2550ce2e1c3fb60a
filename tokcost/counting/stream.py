"""Reading a byte stream as boundary-safe text chunks, once for every tokenizer."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass

from tokcost.adapters.base import Tokenizer
from tokcost.counting.cuts import (
    find_boundary,
    find_boundary_forward,
)
from tokcost.counting.inputs import (
    BLOCK_BYTES,
    ByteSource,
    Utf8Decoder,
)
from tokcost.errors import InputError

MAX_WHOLE_CHARS = 256 << 20  # a non-streamable tokenizer must see the whole text at once


@dataclass
class LineBlocks:
    """The text of a byte stream in blocks of whole lines (cut after ``"\\n"``, never
    inside a character), decoded under the input policy: for readers that split text
    into lines, such as the BPE trainer reading standard input."""

    source: ByteSource
    block_bytes: int = BLOCK_BYTES
    bytes: int = 0
    invalid_bytes: int = 0

    def __iter__(self) -> Iterator[str]:
        decoder = Utf8Decoder()
        carry = b""
        while True:
            block = self.source.read(self.block_bytes)
            self.bytes += len(block)
            data = carry + block
            cut = data.rfind(b"\n") + 1 if block else len(data)
            carry = data[cut:]
            if cut:
                # A newline ends any sequence, valid or not: the decoder holds nothing back.
                yield decoder.decode(data[:cut], final=not block)
            if not block:
                break
        self.invalid_bytes = decoder.invalid_bytes


@dataclass
class TextStream:
    """Boundary-safe text chunks of a byte stream, with running byte/char totals."""

    source: ByteSource
    block_bytes: int = BLOCK_BYTES
    punct: bool = True  # False with allow_special: never cut inside <|...|>
    bytes: int = 0
    chars: int = 0
    invalid_bytes: int = 0

    def chunks(self) -> Iterator[str]:
        decoder = Utf8Decoder()
        pending = ""
        searched = 0  # pending[:searched] holds no cut point
        while True:
            block = self.source.read(self.block_bytes)
            final = not block
            self.bytes += len(block)
            text = decoder.decode(block, final=final)
            self.chars += len(text)
            pending += text
            if final:
                break
            if len(pending) >= self.block_bytes:
                # Search only text not searched before, so a stretch without a cut
                # point (no letters or digits) costs linear, not quadratic, time.
                searched = max(searched - 2, 0)
                cut = find_boundary(pending, start=max(len(pending) // 2, searched),
                                    punct=self.punct)
                if cut < 0 and searched < len(pending) // 2:
                    cut = find_boundary(pending, start=searched, punct=self.punct)
                if cut > 0:
                    yield pending[:cut]
                    pending = pending[cut:]
                    searched = 0
                else:
                    searched = len(pending)
        self.invalid_bytes = decoder.invalid_bytes
        if pending:
            yield pending


def read_text(
    source: ByteSource,
    tokenizers: Mapping[str, Tokenizer],
    count: Callable[[str, str], None],
    *,
    name: str,
    block_bytes: int = BLOCK_BYTES,
    allow_special: bool = False,
) -> TextStream:
    """Read ``source`` once for all ``tokenizers`` (spec -> tokenizer).

    ``count(spec, text)`` gets every boundary-safe chunk for a streamable tokenizer
    and the whole text for the others (at most ``MAX_WHOLE_CHARS``; ``name`` says
    which input is too large). The stream returned holds the byte, character and
    invalid-byte totals. Each local file and each shard piece is read this way.
    """
    # Special-token text is one token when allowed: never cut inside <|...|> then.
    stream = TextStream(source, block_bytes, punct=not allow_special)
    streamable = [s for s, t in tokenizers.items() if t.streamable]
    whole_specs = [s for s, t in tokenizers.items() if not t.streamable]
    whole: list[str] = []
    whole_chars = 0
    for chunk in stream.chunks():
        for spec in streamable:
            count(spec, chunk)
        if whole_specs:
            whole_chars += len(chunk)
            if whole_chars > MAX_WHOLE_CHARS:
                raise InputError(
                    f"{name}: too large for exact counting with "
                    f"{', '.join(whole_specs)} (over {MAX_WHOLE_CHARS >> 20} M characters); "
                    "use a tiktoken or bpe tokenizer, or split the file"
                )
            whole.append(chunk)
    if whole_specs:
        text = "".join(whole)
        for spec in whole_specs:
            count(spec, text)
    return stream


def split_text(text: str, chunk_chars: int) -> list[str]:
    """Cut an in-memory text at boundary-safe points into pieces of about chunk_chars."""
    pieces: list[str] = []
    start = 0
    while len(text) - start > chunk_chars:
        window_end = start + chunk_chars
        cut = find_boundary(text[: window_end], start=start + chunk_chars // 2)
        if cut < 0:
            cut = find_boundary(text[:window_end], start=start)
        if cut <= start:
            # No safe point in this window: look further on, never split unsafely.
            nxt = find_boundary_forward(text, window_end)
            if nxt < 0:
                break
            cut = nxt
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


def count_text(text: str, tokenizer: Tokenizer, *, allow_special: bool = False) -> int:
    """Tokens in one text, as the tokenizer counts the whole of it.

    >>> from tokcost import get_tokenizer
    >>> count_text("hello world", get_tokenizer("tiktoken:cl100k_base"))
    2
    """
    return tokenizer.count(text, allow_special=allow_special)


def count_texts(texts: Iterable[str], tokenizer: Tokenizer, *, allow_special: bool = False) -> int:
    """Total tokens over texts counted one by one (each text is a document of its own)."""
    return sum(tokenizer.count(t, allow_special=allow_special) for t in texts)
