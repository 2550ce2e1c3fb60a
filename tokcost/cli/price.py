"""``tokcost price``: what a request (or many) costs, from counts or from files, on one model
or several side by side."""

from __future__ import annotations

from typing import Annotated, Any

import typer

import tokcost
from tokcost.cli.base import current_words
from tokcost.cli.console import err, out, print_json, table, warn
from tokcost.cli.options import CatalogOpt, JsonOpt
from tokcost.errors import Note, UsageError
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
  tokcost price -m grok-4 -m deepseek-chat -m 'claude-*' -i 20k \\
    --output-tokens 1k
  tokcost price -m claude-sonnet-4-5 --provider google -i 10k \\
    --cache-write-tokens 8k --cache-ttl 1h
  tokcost price -m gpt-4o -i 12k --at 2024-06-01
  tokcost price -m claude-sonnet-4-5 --request body.json --output-tokens 1k

--input-tokens is the whole prompt; --cached-tokens and --cache-write-tokens are parts of it.
Models the catalog does not price are priced by genai-prices (offline, its bundled data).
"""


def _count(help: str, *flags: str) -> Any:
    """A count option (flag from the parameter's name), kept as typed ("12k")."""
    return typer.Option(*flags, metavar="COUNT", help=help)


def _usage(pairs: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--usage {pair!r}: give KEY=COUNT, e.g. input_audio_tokens=2k",
                             param="usage")
        found[key.strip()] = value.strip()
    return found


def price(
    paths: Annotated[list[str] | None, typer.Argument(
        help="Files or folders whose text is the prompt ('-' for stdin).")] = None,
    model: Annotated[list[str] | None, typer.Option("--model", "-m", help=(
        "Model id, alias, dated id or glob ('claude-*'); several: side by side (with "
        "--request, default: the body's model)."))] = None,
    input_tokens: Annotated[str | None, _count(
        "Prompt tokens per request (12k).", "--input-tokens", "-i")] = None,
    output_tokens: Annotated[str, _count("Output tokens per request.")] = "0",
    cached_tokens: Annotated[str, _count("Prompt tokens read from the cache.")] = "0",
    cache_write_tokens: Annotated[str, _count("Prompt tokens written to the cache.")] = "0",
    reasoning_tokens: Annotated[str, _count("Reasoning tokens on top of the output.")] = "0",
    batch: Annotated[bool, typer.Option(
        "--batch-api", help="Apply the provider's batch API discount.")] = False,
    requests: Annotated[str, _count("Number of identical requests.")] = "1",
    provider: Annotated[str | None, typer.Option(
        "--provider", metavar="NAME", help="Price on this genai-prices provider (aws, "
        "azure, google, openrouter...).")] = None,
    at: Annotated[str | None, typer.Option(
        "--at", metavar="DATE", help="Prices in force on DATE (2025-06-01, UTC), from "
        "genai-prices's price history.")] = None,
    cache_ttl: Annotated[str | None, typer.Option(
        "--cache-ttl", metavar="5m|1h", help="Lifetime of the cache writes (genai-prices).")
        ] = None,
    usage: Annotated[list[str] | None, typer.Option(
        "--usage", metavar="KEY=COUNT", help="Any other genai-prices usage key "
        "(input_audio_tokens=2k, web_searches=3).")] = None,
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
    asked = tokcost.PriceRequest(
        models=tuple(model or ()), paths=tuple(paths or ()), batch=batch, catalog=catalog,
        provider=provider, at=at, cache_ttl=cache_ttl, usage=_usage(usage or []),
        request=request, **counts)
    result: Any = tokcost.price(asked)  # a comparison when several
    if asked.several:
        if result.skipped:
            shown = ", ".join(result.skipped[:5]) + (" ..." if len(result.skipped) > 5 else "")
            err.print(f"note: {len(result.skipped)} models matched have no price for this "
                      f"request (left out): {shown}", markup=False)
        _side_by_side(result.to_dict(), json_out)
        return
    for note in result.warnings:  # the input policy's, as count gives them
        warn(note)
    if json_out:
        print_json(result.to_dict())
        return
    _breakdown(result)


def _breakdown(result: Any) -> None:
    from rich.markup import escape
    b, approx = result.breakdown, "" if result.exact else "≈"
    rows = table("tokens", "count", "rate", "cost")
    for line in b.lines:
        mark = approx if line.kind.startswith("input") else ""  # the counted prompt
        rows.add_row(line.kind, f"{mark}{line.tokens:,}",
                     format_usd(line.usd_per_million, per_million=True),
                     f"{mark}{format_usd(line.cost)}")
    many = f" x {b.requests:,} requests" if b.requests > 1 else ""
    out.print(f"[bold]{escape(b.model)}[/bold]{many}{' (batch)' if b.batch else ''}",
              markup=True)
    out.print(rows)
    if b.requests > 1:
        out.print(f"per request: {approx}{format_usd(b.per_request)}")
    out.print(f"[bold]total: {approx}{format_usd(b.total)}[/bold]", markup=True)
    for note in b.notes:  # a Note's placeholders name parameters: here, as the flags
        text = note.render(current_words()) if isinstance(note, Note) else note
        err.print(f"note: {text}", markup=False)
    if approx:
        err.print("note: ≈ prompt counted with a proxy tokenizer (approximate)")
    if b.as_of or b.source:
        when = f" as of {b.as_of}" if b.as_of else ""
        err.print(f"note: prices{when}: {b.source or ''}", markup=False)


def _side_by_side(rows: list[dict[str, Any]], json_out: bool) -> None:
    """One row per model, cheapest first and marked, with the prompt's fit in its window."""
    for note in dict.fromkeys(w for row in rows for w in row["warnings"]):
        warn(note)
    if json_out:
        print_json(rows)
        return
    grid = table("", "model", "provider", "prices", "window", "fits", "per request", "total",
                 text=5)
    for row in rows:
        approx = "" if row["exact"] else "≈"
        window = row["context_window"]
        fits = {True: "yes", False: "NO", None: "?"}[row["fits_context"]]
        grid.add_row("*" if row["cheapest"] else "", row["model"], row["provider"] or "",
                     row["prices_from"], f"{window:,}" if window else "?", fits,
                     approx + format_usd(row["per_request_usd"]),
                     approx + format_usd(row["total_usd"]))
    out.print(grid)
    err.print("note: * the cheapest whose context window holds the prompt; prices from the "
              "catalog, else genai-prices (price -m ID: one model's breakdown)", markup=False)
    if any(not row["exact"] for row in rows):
        err.print("note: ≈ prompt counted with a proxy tokenizer (approximate)")
