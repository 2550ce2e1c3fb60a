"""Use case ``compare``: who pays more tokens for the same meaning.

Parallel texts (a folder, files, or the shipped corpora) are counted with each
tokenizer, and each text's premium over the baseline's is derived (see
``tokcost.inflation``); tokenizers and model ids resolve through the caller's catalog.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from tokcost.counting import Skipped
from tokcost.inflation import (
    CorpusKind,
    FloresSplit,
    GroupReport,
    Measurement,
    Meter,
    Report,
    Row,
    SentencePremiums,
    corpus_kinds,
    load_corpora,
    measure,
)
from tokcost.plotting import check_plot_path
from tokcost.plotting.inflation import plot_premiums
from tokcost.tokenizers import resolve_tokenizers

if TYPE_CHECKING:
    from tokcost.catalog import CatalogSource

__all__ = [
    "CompareResult", "CorpusKind", "FloresSplit", "GroupReport", "Measurement", "Meter", "Row",
    "SentencePremiums", "compare",
]


@dataclass(frozen=True)
class CompareResult:
    """What ``compare`` found: the report (tokenizers, one group per corpus kind, its
    rows sorted by premium, and the warnings about the texts: the input policy's
    first, then each group's), the picture it wrote, and the inputs skipped."""

    report: Report
    plot: Path | None = None
    skipped: tuple[Skipped, ...] = ()

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.report.warnings

    def to_dict(self) -> dict[str, Any]:
        """The ``tokcost compare --json`` document (its ``warnings`` name what was skipped)."""
        return self.report.to_dict()


def compare(
    sources: Sequence[str | Path] = (),
    *,
    tokenizers: Sequence[str] = (),
    models: Sequence[str] = (),
    catalog: CatalogSource = None,
    baseline: str = "en",
    kinds: Sequence[CorpusKind | str] = (),
    split: FloresSplit | str = "both",
    plot: str | Path | None = None,
    force: bool = False,
    on_progress: Callable[[int, int], None] | None = None,
    stdin: BinaryIO | None = None,
) -> CompareResult:
    """Token inflation of parallel texts, measured with each tokenizer and model.

    ``sources``: one folder of ``<lang>.txt`` files (or with an ``index.yaml``), or
    files; none: the shipped corpora. ``tokenizers`` (specs, ``model:ID`` too) and
    ``models`` (catalog ids, which also price each text as input) resolve through
    ``catalog``; none: o200k_base. ``baseline`` is the prose text premiums are relative
    to; ``kinds`` keeps only those corpus kinds (none: all). A FLORES-200 folder as
    distributed reads the sentences of ``split`` (dev, devtest, or both as Petrov et al.
    did), a UDHR in Unicode folder its translations. ``plot`` writes the
    premiums as a .png/.svg/.pdf picture (``force`` overwrites it). ``on_progress(done,
    total)`` is called after each count.

    The texts are read under the input policy of every command: invalid UTF-8 is
    replaced (and named in ``warnings``), binary files are skipped (``skipped``, and
    ``warnings``), and ``-`` among the files reads ``stdin`` (default the process's).

    >>> result = compare(kinds=["code"], tokenizers=["cl100k_base"])
    >>> [(g.kind, g.baseline) for g in result.report.groups]
    [('code', 'python')]
    """
    if isinstance(sources, (str, Path)):  # one folder, not a sequence of its letters
        sources = [sources]
    wanted = corpus_kinds(kinds)
    picture = None if plot is None else Path(plot)
    if picture is not None:
        check_plot_path(picture, force=force)  # before any work: it may not be writable
    skipped: list[Skipped] = []
    groups = load_corpora(tuple(Path(s) for s in sources), baseline=baseline, kinds=wanted,
                          stdin=stdin, skipped=skipped, split=FloresSplit(split).value)
    choices = resolve_tokenizers(tokenizers, models, catalog=catalog, unique=True)
    report = measure(groups, [Meter.from_choice(c) for c in choices], on_progress=on_progress)
    if skipped:
        report = replace(report, warnings=tuple(s.note for s in skipped) + report.warnings)
    if picture is not None:
        plot_premiums(report, picture, force=force)
    return CompareResult(report, picture, tuple(skipped))
