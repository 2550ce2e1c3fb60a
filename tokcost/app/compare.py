"""Use case ``compare``: who pays more tokens for the same meaning (``tokcost.inflation``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tokcost.app import names
from tokcost.counting import Skipped
from tokcost.inflation import Corpus, Meter, Report, measure, view
from tokcost.parts import Parts
from tokcost.plotting import check_plot_path
from tokcost.tokenizers import resolve_tokenizers

if TYPE_CHECKING:
    from tokcost.catalog import CatalogSource

__all__ = ["CompareRequest", "compare"]


@dataclass(frozen=True, kw_only=True)
class CompareRequest(Parts):
    """The ``corpus``, the ``tokenizers`` and ``models`` (priced) measuring it, the ``plot``."""

    corpus: Corpus = field(default_factory=Corpus)
    tokenizers: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    catalog: CatalogSource = None
    plot: Path | None = None
    force: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "tokenizers", names(self.tokenizers))
        object.__setattr__(self, "models", names(self.models))
        if self.plot is not None:
            object.__setattr__(self, "plot", Path(self.plot))
            check_plot_path(self.plot, force=self.force)


@dataclass(frozen=True)
class CompareResult:
    """The report (one group per corpus kind, rows by premium), the plot, the inputs skipped."""

    report: Report
    plot: Path | None = None
    skipped: tuple[Skipped, ...] = ()

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.report.warnings

    def to_dict(self) -> dict[str, Any]:
        return self.report.to_dict()

    def render(self, fmt: Literal["csv", "markdown"]) -> str:
        """The report as CSV (a row per text and tokenizer) or Markdown tables."""
        return view.to_csv(self.report) if fmt == "csv" else view.markdown(self.report)

    def tables(self) -> list[tuple[list[view.TableView], view.ChartView]]:
        """Per group, the cells of its terminal tables (one per tokenizer) and chart."""
        meters = self.report.meters
        return [([view.table(g, m) for m in meters], view.chart(g, meters))
                for g in self.report.groups]


def compare(request: CompareRequest, *,
            on_progress: Callable[[int, int], None] | None = None) -> CompareResult:
    """Token inflation of the request's texts, measured with each tokenizer and model."""
    skipped: list[Skipped] = []
    groups = request.corpus.load(skipped)
    choices = resolve_tokenizers(request.tokenizers, request.models, catalog=request.catalog,
                                 unique=True)
    report = measure(groups, [Meter.from_choice(c) for c in choices], on_progress=on_progress)
    if skipped:
        report = replace(report, warnings=tuple(s.note for s in skipped) + report.warnings)
    if request.plot is not None:
        from tokcost.plotting.inflation import plot_premiums
        plot_premiums(report, request.plot, force=request.force)
    return CompareResult(report, request.plot, tuple(skipped))
