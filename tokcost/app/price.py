"""``tokcost price``: what a request (or many identical ones) costs on a catalog model."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from tokcost.app import names
from tokcost.catalog import CatalogSource
from tokcost.errors import InputError, UsageError, arg
from tokcost.pricing import CostBreakdown, estimate_cost, limit_warnings, require_price
from tokcost.tokenizers import model_choice, open_catalog
from tokcost.units import parse_count

if TYPE_CHECKING:
    from tokcost.requestbody import BodyCount

__all__ = ["PriceRequest", "price"]


@dataclass(frozen=True, kw_only=True)
class PriceRequest:
    """``requests`` identical requests of ``model``, the prompt given as ``input_tokens``, as
    ``paths`` (``-``: stdin) or as a whole ``request`` body (a JSON file, counted by the
    provider's rules: ``count --request``); counts as people write them (``"12k"``)."""

    model: str  # "": the ``request`` body's own model
    input_tokens: int | None = None
    paths: Sequence[str | Path] = ()
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    batch: bool = False
    requests: int = 1
    catalog: CatalogSource = None
    request: str | Path | None = None

    def __post_init__(self) -> None:
        if not self.model and self.request is None:
            raise UsageError(f"price needs a model: {arg('model', 'ID')} (see `tokcost models "
                             "list`)", param="model")
        for name in ("input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens",
                     "reasoning_tokens", "requests"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, parse_count(value, param=name))
        if self.requests < 1:
            raise UsageError(f"{arg('requests')} must be a positive integer, got "
                             f"{self.requests}", param="requests")
        object.__setattr__(self, "paths", names(self.paths))
        given = [what for what, on in (("files", bool(self.paths)), (arg("input_tokens"),
                 self.input_tokens is not None), (arg("request"), self.request is not None)) if on]
        if len(given) > 1:
            raise UsageError(f"give the prompt as {given[0]} or as {given[1]}, not both",
                             param="input_tokens", related=("request",))
        if not given:
            raise UsageError(f"give the prompt: {arg('input_tokens', 'N')}, files / '-' for "
                             f"stdin, or {arg('request', 'FILE')}", param="input_tokens",
                             related=("request",))


@dataclass(frozen=True)
class PriceResult:
    """A cost breakdown, how its prompt was counted, and the input and limit warnings."""

    breakdown: CostBreakdown
    exact: bool = True  # False: the prompt was counted with a proxy tokenizer
    input_counted_from_files: bool = False
    warnings: tuple[str, ...] = ()
    request: BodyCount | None = None  # the request body's parts (price --request)

    def to_dict(self) -> dict[str, Any]:
        return {**self.breakdown.to_dict(), "input_counted_from_files":
                self.input_counted_from_files, "exact": self.exact, "warnings": list(self.warnings),
                **({"request": self.request.to_dict()} if self.request else {})}


def price(request: PriceRequest, *, stdin: BinaryIO | None = None) -> PriceResult:
    """Price ``request``; ``stdin`` stands for ``-`` in its paths (default: the process's)."""
    r = request
    body = None
    if r.request is not None:  # read first: its "model" stands in for --model, as in count
        from tokcost.requestbody import count_body, load_body
        body = load_body(str(r.request), stdin=stdin)
    model = r.model or (body.model if body else None)
    if not model:
        raise UsageError(f"price needs a model: {arg('model', 'ID')} (the request body names "
                         "none; see `tokcost models list`)", param="model")
    entry = open_catalog(r.catalog).resolve(model)
    require_price(entry, batch=r.batch)  # before counting any file
    warnings: tuple[str, ...] = ()
    exact, prompt, counted = True, r.input_tokens, None
    if body is not None:  # a whole request body, by the provider's rules
        counted = count_body(body, entry, model_choice(entry).load())
        prompt, exact, warnings = counted.total, counted.exact, counted.notes
    if prompt is None:  # counted in the files by the model's tokenizer
        from tokcost.counting import Inputs, count_paths
        if not entry.tokenizer:
            raise UsageError(f"model '{entry.id}' names no tokenizer in the catalog; "
                             f"pass {arg('input_tokens', 'N')}", param="input_tokens")
        choice = model_choice(entry)
        tokenizer = choice.load()
        report = count_paths(Inputs(paths=list(map(str, r.paths)), stdin=stdin),
                             {choice.spec: tokenizer})
        if not report.files and report.skipped:  # as count says it: the policy left them all out
            notes = "; ".join(s.note for s in report.skipped[:3])
            more = len(report.skipped) - 3
            raise InputError("nothing to count: every input was skipped (" + notes
                             + (f"; and {more} more" if more > 0 else "") + ")")
        if not report.files:
            raise UsageError(f"no text to count in {', '.join(map(str, r.paths))}; give text "
                             f"files, or {arg('input_tokens', 'N')}", param="input_tokens")
        prompt, exact, warnings = report.total_tokens(choice.spec), tokenizer.exact, report.warnings
    breakdown = estimate_cost(
        entry, input_tokens=prompt, output_tokens=r.output_tokens, cached_tokens=r.cached_tokens,
        cache_write_tokens=r.cache_write_tokens, reasoning_tokens=r.reasoning_tokens,
        batch=r.batch, requests=r.requests)
    warnings += limit_warnings(entry, input_tokens=prompt, output_tokens=r.output_tokens,
                               reasoning_tokens=r.reasoning_tokens, exact=exact)
    return PriceResult(breakdown, exact, bool(r.paths), warnings, counted)
