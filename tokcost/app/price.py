"""``tokcost price``: what a request (or many identical ones) costs on a catalog model.

The prompt is given as a count (``input_tokens``) or as files whose text is counted
with the model's own tokenizer (or the catalog's proxy for it, then ``exact`` is
False). The result's ``to_dict()`` is ``tokcost price --json``.

>>> import tokcost
>>> tokcost.price("gpt-4o", input_tokens=1000, output_tokens=200).breakdown.lines[0].kind
'input'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from tokcost.errors import InputError, UsageError
from tokcost.pricing import CostBreakdown, estimate_cost, limit_warnings, require_price
from tokcost.tokenizers import model_choice, open_catalog

if TYPE_CHECKING:
    from tokcost.catalog import Catalog, ModelEntry

__all__ = ["PriceResult", "price"]


@dataclass(frozen=True)
class PriceResult:
    """A cost breakdown, and how its prompt was counted.

    ``warnings``: first the input policy's, as ``count`` reports them (the prompt files
    skipped, binary or unreadable, and those whose invalid UTF-8 was replaced); then
    what the model would not take (``tokcost.pricing.limit_warnings``): a prompt past
    its context window, an output past its maximum output tokens. The price is given
    either way.
    """

    breakdown: CostBreakdown
    exact: bool = True  # False: the prompt was counted with a proxy tokenizer
    input_counted_from_files: bool = False
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The breakdown's keys, then ``input_counted_from_files``, ``exact`` and
        ``warnings``."""
        data = self.breakdown.to_dict()
        data["input_counted_from_files"] = self.input_counted_from_files
        data["exact"] = self.exact
        data["warnings"] = list(self.warnings)
        return data


def price(
    model: str,
    *,
    input_tokens: int | None = None,
    paths: Sequence[str | Path] = (),
    output_tokens: int = 0,
    cached_tokens: int = 0,
    cache_write_tokens: int = 0,
    reasoning_tokens: int = 0,
    batch: bool = False,
    requests: int = 1,
    catalog: str | Path | Catalog | None = None,
    stdin: BinaryIO | None = None,
) -> PriceResult:
    """Price ``requests`` requests of ``model``; the prompt is ``input_tokens`` or ``paths``.

    ``paths`` are files or folders whose text is the prompt (``-``: ``stdin``, default
    the process's standard input). ``cached_tokens`` and ``cache_write_tokens`` are
    parts of the prompt; ``reasoning_tokens`` come on top of ``output_tokens``.
    """
    if isinstance(paths, (str, Path)):  # one path, not a sequence of characters
        paths = [paths]
    _check_counts(input_tokens=input_tokens, output_tokens=output_tokens,
                  cached_tokens=cached_tokens, cache_write_tokens=cache_write_tokens,
                  reasoning_tokens=reasoning_tokens, requests=requests)
    if paths and input_tokens is not None:
        raise UsageError("give the prompt as files or as input_tokens, not both",
                         param="input_tokens")
    entry = open_catalog(catalog).resolve(model)
    require_price(entry, batch=batch)  # before counting any file
    exact = True
    warnings: tuple[str, ...] = ()
    if paths:
        input_tokens, exact, warnings = _count(entry, [str(p) for p in paths], stdin)
    elif input_tokens is None:
        raise UsageError("give the prompt: input_tokens=N, or files / '-' for stdin",
                         param="input_tokens")
    breakdown = estimate_cost(
        entry,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_tokens=cached_tokens,
        cache_write_tokens=cache_write_tokens,
        reasoning_tokens=reasoning_tokens,
        batch=batch,
        requests=requests,
    )
    warnings += limit_warnings(entry, input_tokens=input_tokens, output_tokens=output_tokens,
                               reasoning_tokens=reasoning_tokens, exact=exact)
    return PriceResult(breakdown, exact, bool(paths), warnings)


def _check_counts(**counts: int | None) -> None:
    """Refuse a count past ``MAX_COUNT`` (10^15) before pricing it: a typo, not a request."""
    from tokcost.units import MAX_COUNT

    for name, value in counts.items():
        if value is not None and value > MAX_COUNT:
            raise UsageError(
                f"{name}={value:,} is beyond 10^15, more than any corpus or model handles; "
                "check the number and its suffix",
                param=name,
            )


def _count(
    entry: ModelEntry, paths: list[str], stdin: BinaryIO | None
) -> tuple[int, bool, tuple[str, ...]]:
    """Prompt tokens of files/stdin with the model's own tokenizer (or its proxy), and
    the input policy's warnings (as ``count`` gives them)."""
    from tokcost.counting import Inputs, count_paths

    if not entry.tokenizer:
        raise UsageError(f"model '{entry.id}' names no tokenizer in the catalog; "
                         "pass input_tokens=N", param="input_tokens")
    choice = model_choice(entry)
    tokenizer = choice.load()
    report = count_paths(Inputs(paths=paths, stdin=stdin), {choice.spec: tokenizer})
    if not report.files and report.skipped:
        # As count says it: the inputs were there, the policy left them all out.
        notes = "; ".join(s.note for s in report.skipped[:3])
        more = len(report.skipped) - 3
        raise InputError("nothing to count: every input was skipped (" + notes
                         + (f"; and {more} more" if more > 0 else "") + ")")
    if not report.files:
        raise UsageError(f"no text to count in {', '.join(paths)}; give text files, or "
                         "input_tokens=N", param="input_tokens")
    return report.total_tokens(choice.spec), bool(tokenizer.exact), report.warnings
