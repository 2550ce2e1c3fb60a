"""Reading a byte stream as boundary-safe text chunks, once for every tokenizer; what ``bpe
train`` and ``bpe sweep`` read: stdin here, as blocks of whole lines; files, globs and (remote)
URLs pre-tokenized on the runner, each read once."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from tokcost.adapters.base import Tokenizer
from tokcost.counting.cuts import CutRule, Specials
from tokcost.counting.inputs import (
    BLOCK_BYTES,
    STDIN,
    STDIN_NAME,
    UTF8,
    ByteSource,
    Skipped,
    Utf8Decoder,
    decoder_for,
    sniff_source,
    stdin_source,
)
from tokcost.counting.walk import LeftOut, Visited, walk
from tokcost.errors import InputError, UsageError, arg

if TYPE_CHECKING:
    from tokcost.bpe.pretokenize import PretokenizeSpec, ProgressFn
    from tokcost.runner import Runner

MAX_WHOLE_CHARS = 256 << 20  # a non-streamable tokenizer must see the whole text at once


@dataclass
class LineBlocks:
    """A byte stream's text in blocks of whole lines, under the input policy."""

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
    punct: bool = True  # False: only the space cuts (never inside <|...|>)
    bytes: int = 0
    chars: int = 0
    invalid_bytes: int = 0
    specials: Specials | None = None  # never cut inside these (allow_special)
    encoding: str = UTF8  # or the UTF-16/32 a byte order mark named (sniff_text)

    def chunks(self) -> Iterator[str]:
        decoder = decoder_for(self.encoding)
        rule = CutRule(self.punct, self.specials)
        reach = rule.reach
        back = max(reach, 1)  # characters before a cut the rule looks at
        pending = ""  # the text after the last cut
        judged = 1  # pending[1:judged] holds no cut point
        while True:
            block = self.source.read(self.block_bytes)
            self.bytes += len(block)
            text = decoder.decode(block, final=not block)
            self.chars += len(text)
            if not block:
                break
            old = len(pending)
            # Search once a block is full, or a block's worth came in short reads (a pipe).
            if len(block) < self.block_bytes and old + len(text) - judged < self.block_bytes:
                pending += text
                continue
            # Search only what was not judged before (plus the rule's look-back), unjoined.
            ctx = max(0, judged - back)
            buf, base = (pending[ctx:] + text, ctx) if ctx < old else (text, old)
            hi = len(buf) - reach  # a cut needs `reach` characters after it
            cut = rule.last(buf, judged - base, hi)
            # The last character searched could not be judged yet (a space: what follows?).
            judged = max(1, base + hi - 1)
            if cut < 0:
                pending += text  # in place: nothing else holds pending
                continue
            cut += base
            judged = max(1, judged - cut)
            if cut >= old:
                pending += text[: cut - old]
                chunk, pending = pending, text[cut - old :]
            else:
                chunk, pending = pending[:cut], pending[cut:] + text
            yield chunk
        self.invalid_bytes = decoder.invalid_bytes
        pending += text
        if pending:
            yield pending


@dataclass(frozen=True)
class Reader:
    """Reads byte streams once for several tokenizers (spec -> tokenizer)."""

    tokenizers: Mapping[str, Tokenizer]
    block_bytes: int = BLOCK_BYTES
    allow_special: bool = False

    @cached_property
    def streamable(self) -> tuple[str, ...]:
        return tuple(s for s, t in self.tokenizers.items() if t.streamable)

    @cached_property
    def whole_specs(self) -> tuple[str, ...]:
        return tuple(s for s, t in self.tokenizers.items() if not t.streamable)

    @cached_property
    def rule(self) -> CutRule:
        return CutRule.for_tokenizers(self.tokenizers.values(), allow_special=self.allow_special)

    def stream(self, source: ByteSource, encoding: str = UTF8) -> TextStream:
        rule = self.rule
        return TextStream(source, self.block_bytes, punct=rule.punct, specials=rule.specials,
                          encoding=encoding)

    def texts(self, stream: TextStream, *, name: str) -> Iterator[tuple[str, str]]:
        """``(spec, text)``: each chunk per streamable tokenizer, then the whole text for others."""
        streamable, whole_specs = self.streamable, self.whole_specs
        whole: list[str] = []
        whole_chars = 0
        for chunk in stream.chunks():
            for spec in streamable:
                yield spec, chunk
            if whole_specs:
                whole_chars += len(chunk)
                if whole_chars > MAX_WHOLE_CHARS:
                    raise InputError(
                        f"{name}: too large for exact counting with {', '.join(whole_specs)} "
                        f"(over {MAX_WHOLE_CHARS >> 20} M characters); use a tiktoken or bpe "
                        "tokenizer, or split the file")
                whole.append(chunk)
        if whole_specs:
            text = "".join(whole)
            for spec in whole_specs:
                yield spec, text

    def read(self, source: ByteSource, count: Callable[[str, str], None], *,
             name: str) -> TextStream:
        stream = self.stream(source)
        for spec, text in self.texts(stream, name=name):
            count(spec, text)
        return stream


def split_text(text: str, chunk_chars: int) -> list[str]:
    """``text`` cut at boundary-safe points into pieces of about ``chunk_chars``."""
    rule = CutRule()
    pieces: list[str] = []
    start = 0
    while len(text) - start > chunk_chars:
        window_end = start + chunk_chars
        cut = rule.last(text[: window_end], start + chunk_chars // 2 + 1, window_end)
        if cut < 0:
            cut = rule.last(text[: window_end], start + 1, window_end)
        if cut <= start:
            # No safe point in this window: look further on.
            cut = rule.first(text, window_end, len(text))
            if cut < 0:
                break
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


@dataclass
class TrainingInputs:
    """The training inputs, and the trainer's pre-tokenizer (``count_words``) with the notes."""

    runner: Runner
    paths: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    invalid: dict[str, int] = field(default_factory=dict)
    stdin: LineBlocks | None = None

    @classmethod
    def scan(cls, files: Sequence[str | Path], stdin: BinaryIO | None,
             runner: Runner) -> TrainingInputs:
        if not files:
            raise UsageError(f"nothing to train on: give text {arg('files')}, or '-' for stdin",
                             param="files")
        found, visited, left_out = cls(runner), Visited(), LeftOut()
        for file in dict.fromkeys(map(str, files)):  # each input once
            if file != STDIN:  # files and folders as count walks them; a glob or URL as given
                walked = walk([file], skipped=found.skipped, visited=visited, left_out=left_out)
                found.paths += [s.display for s in walked] if os.path.exists(file) else [file]
                continue
            reason, _, source = sniff_source(stdin_source(stdin))
            if reason is None:
                found.stdin = LineBlocks(source)
            else:
                found.skipped.append(Skipped(STDIN_NAME, reason))
        if not found.paths and found.stdin is None:
            found._nothing_left(left_out.note() if left_out.folders else "")
        return found

    def _nothing_left(self, why: str = "") -> None:
        notes = "; ".join(s.note for s in self.skipped)
        raise InputError(f"nothing to train on: {why or f'every input was skipped ({notes})'}")

    def count_words(self, paths: Sequence[str | Path], spec: PretokenizeSpec, *,
                    progress: ProgressFn | None = None) -> Counter[str]:
        from tokcost.bpe.pretokenize import pretokenize_files
        from tokcost.scale.mapreduce import WordCounts, list_training_files, pretokenize_shard
        counts = WordCounts()
        with self.runner as runner:
            files = list_training_files(paths, runner)
            pretokenize_files(files, spec, runner, read=pretokenize_shard, progress=progress,
                              into=counts)
        read = list(dict.fromkeys(path for path, _ in files))
        counts.in_order(read)
        known = {s.path for s in self.skipped}
        self.skipped += [Skipped(p, why) for p, why in counts.skipped.items() if p not in known]
        self.invalid.update(counts.invalid_utf8_bytes)
        if read and len(counts.skipped) == len(read) and self.stdin is None:
            self._nothing_left()
        return counts

    def invalid_utf8_bytes(self) -> dict[str, int]:
        """Bytes replaced per input (stdin's once it has been read)."""
        if self.stdin is not None and self.stdin.invalid_bytes:
            return {**self.invalid, STDIN_NAME: self.stdin.invalid_bytes}
        return dict(self.invalid)
