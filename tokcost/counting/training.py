"""What ``bpe train`` and ``bpe sweep`` read, under the input policy: stdin here, as blocks of
whole lines; files, globs and (remote) URLs pre-tokenized on the runner, each read once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from tokcost.counting.inputs import STDIN, STDIN_NAME, Skipped, sniff_source, stdin_source
from tokcost.counting.stream import LineBlocks
from tokcost.errors import InputError, UsageError, arg

if TYPE_CHECKING:
    from tokcost.bpe.pretokenize import PretokenizeSpec, ProgressFn
    from tokcost.runner import Runner


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
        found = cls(runner)
        for file in dict.fromkeys(map(str, files)):  # each input once
            if file != STDIN:
                found.paths.append(file)
                continue
            reason, source = sniff_source(stdin_source(stdin))
            if reason is None:
                found.stdin = LineBlocks(source)
            else:
                found.skipped.append(Skipped(STDIN_NAME, reason))
        if not found.paths and found.stdin is None:
            found._nothing_left()
        return found

    def _nothing_left(self) -> None:
        raise InputError("nothing to train on: every input was skipped ("
                         + "; ".join(s.note for s in self.skipped) + ")")

    def count_words(self, paths: Sequence[str | Path], spec: PretokenizeSpec, *,
                    progress: ProgressFn | None = None) -> Counter[str]:
        from tokcost.bpe.pretokenize import pretokenize_files
        from tokcost.scale.mapreduce import WordCounts, pretokenize_shard
        from tokcost.scale.shards import list_training_files
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
