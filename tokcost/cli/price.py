"""``tokcost price``: what a request (or many) costs, from counts or from files."""

from __future__ import annotations

from typing import Annotated, Any

import typer

import tokcost
from tokcost.cli.console import err, out, print_json, table, warn
from tokcost.cli.options import CatalogOpt, JsonOpt
from tokcost.units import format_usd

EPILOG = """
Examples:

  tokcost price -m gpt-4o --input-tokens 12k --output-tokens 800
  tokcost price -m claude-sonnet-4-5 --input-tokens 250k \\
    --cached-tokens 200k --output-tokens 2k
  tokcost price -m gpt-4.1-mini prompt.md --output-tokens 500 \\
    --requests 10000 --batch-api
  cat prompt.txt | tokcost price -m gemini-2.5-pro - --output-tokens 1k --json
  tokcost price -m o3 --input-tokens 2k --output-tokens 300 \\
    --reasoning-tokens 4k
  tokcost price -m claude-sonnet-4-5 --request body.json --output-tokens 1k

--input-tokens is the whole prompt; --cached-tokens and --cache-write-tokens are parts of it.
"""


def _count(help: str, *flags: str) -> Any:
    """A count option (flag from the parameter's name), kept as typed ("12k")."""
    return typer.Option(*flags, metavar="COUNT", help=help)


def price(
    paths: Annotated[list[str] | None, typer.Argument(
        help="Files or folders whose text is the prompt ('-' for stdin).")] = None,
    model: Annotated[str, typer.Option("--model", "-m", help="Model id, alias or dated id "
                                       "(with --request, default: the body's model).")] = "",
    input_tokens: Annotated[str | None, _count(
        "Prompt tokens per request (12k).", "--input-tokens", "-i")] = None,
    output_tokens: Annotated[str, _count("Output tokens per request.")] = "0",
    cached_tokens: Annotated[str, _count("Prompt tokens read from the cache.")] = "0",
    cache_write_tokens: Annotated[str, _count("Prompt tokens written to the cache.")] = "0",
    reasoning_tokens: Annotated[str, _count("Reasoning tokens on top of the output.")] = "0",
    batch: Annotated[bool, typer.Option(
        "--batch-api", help="Apply the provider's batch API discount.")] = False,
    requests: Annotated[str, _count("Number of identical requests.")] = "1",
    json_out: JsonOpt = False,
    catalog: CatalogOpt = None,
    request: Annotated[str | None, typer.Option(
        "--request", metavar="FILE", help="The prompt as a whole request body ('-': stdin): "
        "OpenAI Chat Completions or Responses, Anthropic Messages, counted as `count --request` "
        "counts it.")] = None) -> None:
    """Price a request: input, cached input, cache writes, output and reasoning tokens."""
    counts: dict[str, Any] = {  # as typed: the request reads them ("12k")
        "input_tokens": input_tokens, "output_tokens": output_tokens, "requests": requests,
        "cached_tokens": cached_tokens, "cache_write_tokens": cache_write_tokens,
        "reasoning_tokens": reasoning_tokens}
    result = tokcost.price(tokcost.PriceRequest(model=model, paths=tuple(paths or ()),
                                                batch=batch, catalog=catalog, request=request,
                                                **counts))
    for note in result.warnings:  # the input policy's, as count gives them
        warn(note)
    if json_out:
        print_json(result.to_dict())
        return
    b, approx = result.breakdown, "" if result.exact else "≈"
    rows = table("tokens", "count", "rate", "cost")
    for line in b.lines:
        mark = approx if line.kind.startswith("input") else ""  # the counted prompt
        rows.add_row(line.kind, f"{mark}{line.tokens:,}",
                     format_usd(line.usd_per_million, per_million=True),
                     f"{mark}{format_usd(line.cost)}")
    many = f" x {b.requests:,} requests" if b.requests > 1 else ""
    out.print(f"[bold]{b.model}[/bold]{many}{' (batch)' if b.batch else ''}", markup=True)
    out.print(rows)
    if b.requests > 1:
        out.print(f"per request: {approx}{format_usd(b.per_request)}")
    out.print(f"[bold]total: {approx}{format_usd(b.total)}[/bold]", markup=True)
    for note in b.notes:
        err.print(f"note: {note}", markup=False)
    if approx:
        err.print("note: ≈ prompt counted with a proxy tokenizer (approximate)")
    if b.as_of or b.source:
        err.print(f"note: prices as of {b.as_of or '?'}: {b.source or ''}", markup=False)
