"""``tokcost models list|show|validate|sync-prices|import``: the model catalog."""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

import typer

import tokcost
from tokcost.cli.base import App
from tokcost.cli.console import err, out, print_json, print_wide, table
from tokcost.cli.options import CatalogOpt, ForceOpt, JsonOpt
from tokcost.errors import UsageError, install_hint
from tokcost.units import format_bytes, format_usd

models_app = App(
    name="models",
    help="The model catalog: list, show, validate, sync prices, import a Hugging Face model.",
    no_args_is_help=True)


LIST_EPILOG = """
Examples:

  tokcost models list
      every model: tokenizer, context, prices
  tokcost models list --provider anthropic
  tokcost models list --gpus
      the GPUs kvmem knows
  tokcost models list --json
"""


@models_app.command("list", epilog=LIST_EPILOG)
def list_models(
    provider: Annotated[str | None, typer.Option(
        "--provider", "-p", help="Only this provider.")] = None,
    gpus: Annotated[bool, typer.Option("--gpus", help="List GPUs instead of models.")] = False,
    everything: Annotated[bool, typer.Option("--all", help=(
        "Also the models only genai-prices knows, and where each price comes from."))] = False,
    json_out: JsonOpt = False,
    catalog: CatalogOpt = None) -> None:
    """List catalog models (≈ marks a proxy tokenizer) or GPUs."""
    if gpus:
        _list_gpus(tokcost.list_gpus(catalog=catalog), json_out)
        return
    result = tokcost.list_models(provider=provider, catalog=catalog, everything=everything)
    if json_out:
        print_json(result.to_dict())
        return
    rows = table()
    rows.add_column("model", no_wrap=True)  # ids are copied into -m: never cut them
    rows.add_column("provider")
    rows.add_column("tokenizer", overflow="fold")  # a long spec folds
    for col in ("context", "input", "output"):
        rows.add_column(col, justify="right")
    rows.add_column("kv")
    if everything:
        rows.add_column("prices", overflow="fold")
    sources = result.sources or ("",) * len(result.models)
    for m, tokenizer, source in zip(result.models, result.tokenizers, sources, strict=True):
        p = m.pricing
        rows.add_row(m.id, m.provider or "", tokenizer,
                     f"{m.context_window:,}" if m.context_window else "",
                     _rate(p.input) if p else "", _rate(p.output) if p else "",
                     "yes" if m.architecture else "", *([source] if everything else []))
    print_wide(rows)
    # The legend explains the table (a note, not data): stderr, so `| wc -l` counts models.
    err.print(f"{len(result.models)} models; ≈ = proxy tokenizer, counts approximate; "
              "kv = architecture known")


def _list_gpus(result: tokcost.GpuList, json_out: bool) -> None:
    if json_out:
        print_json(result.to_dict())
        return
    rows = table("gpu", "architecture", "memory", "bandwidth", "bf16 TFLOP/s", "fp8 TFLOP/s",
                 text=2)
    for g in result.gpus:
        rows.add_row(g.name, g.architecture or "", format_bytes(g.memory_bytes),
                     f"{g.bandwidth_bytes_per_s / 1e9:,.0f} GB/s",
                     f"{g.bf16_flops / 1e12:,.0f}" if g.bf16_flops else "",
                     f"{g.fp8_flops / 1e12:,.0f}" if g.fp8_flops else "")
    out.print(rows)


SHOW_EPILOG = """
Examples:

  tokcost models show gpt-4o
  tokcost models show claude-sonnet-4-5-20250929
      dated ids resolve to their entry
  tokcost models show deepseek-v3 --json
"""


@models_app.command("show", epilog=SHOW_EPILOG)
def show(
    model: Annotated[str, typer.Argument(metavar="MODEL", help="Model id, alias or dated id.")],
    json_out: JsonOpt = False, catalog: CatalogOpt = None) -> None:
    """Everything the catalog knows about one model."""
    details = tokcost.show_model(model, catalog=catalog)
    entry, data = details.entry, details.to_dict()
    if json_out:
        print_json(data)
        return
    aliases = f"  (aliases: {', '.join(entry.aliases)})" if entry.aliases else ""
    out.print(f"[bold]{entry.id}[/bold]{aliases}", markup=True)
    for key in ("provider", "family", "context_window", "max_output_tokens", "source", "notes"):
        if data[key] is not None:
            value = f"{data[key]:,}" if isinstance(data[key], int) else data[key]
            out.print(f"  {key}: {value}")
    note = f"  ({entry.tokenizer_note})" if entry.tokenizer_note else ""
    # the spec and its install hint are text, not styles
    out.print(f"  tokenizer: {details.tokenizer}{note}", markup=False)
    if details.weights:
        out.print(f"  weights: {details.weights}", markup=False)
    if c := entry.chat:
        out.print(f"  chat overhead: {c.per_message}/message, +{c.per_name}/name, "
                  f"+{c.reply_priming} reply priming")
    if data["architecture"]:
        _show_architecture(data["architecture"])
    if data["pricing"]:
        _show_pricing(data["pricing"])
    else:
        out.print("  pricing: none in the catalog")
    if db := data["genai_prices"]:  # what `price --provider` or `--at` would read
        out.print(f"  genai-prices {db['version']}: {db['model']} on {db['provider']}: "
                  f"{db['prices']}", markup=False)
        if len(db["providers"]) > 1:
            out.print(f"  genai-prices providers: {', '.join(db['providers'])} (price --provider)",
                      markup=False)


def _show_architecture(arch: dict[str, Any]) -> None:
    """``models show``'s lines about the shape (read from the JSON document)."""
    att = arch["attention"]
    head_dim = f", head_dim {arch['head_dim']}" if arch["head_dim"] is not None else ""
    out.print(f"  architecture: {arch['layers']} layers, hidden {arch['hidden_size']}, "
              f"heads {arch['attention_heads']}, kv heads {arch['kv_heads']}{head_dim}"
              f", vocab {arch['vocab_size']}")
    params, active = arch["params_total"], arch["params_active"]
    if params:
        moe = f" ({_params(active)} active)" if active and active != params else ""
        out.print(f"  params: {_params(params)}{moe}, weights {arch['weights_dtype']}")
    detail = att["type"]
    if att["window"]:
        detail += f", window {att['window']:,}, pattern {'/'.join(att['pattern'])}"
    if att["kv_lora_rank"]:
        detail += (f", kv_lora_rank {att['kv_lora_rank']}, qk_rope_head_dim "
                   f"{att['qk_rope_head_dim']}")
        if att["indexer_head_dim"]:
            detail += f", indexer_head_dim {att['indexer_head_dim']}"
    if att.get("global_kv_heads") or att.get("global_head_dim"):
        detail += (f", global layers {att.get('global_kv_heads') or arch['kv_heads']} kv heads x "
                   f"{att.get('global_head_dim') or arch['head_dim']}")
    if att.get("v_head_dim"):
        detail += f", v_head_dim {att['v_head_dim']}"
    if att["linear_state_elements"]:
        detail += (f", pattern {'/'.join(att['pattern'])}, state "
                   f"{att['linear_state_elements']:,} elements")
    out.print(f"  attention: {detail}")
    if arch["source"]:
        out.print(f"  architecture source: {arch['source']}")


def _show_pricing(p: dict[str, Any]) -> None:
    """``models show``'s lines about the prices (read from the JSON document)."""
    parts = [f"input {_rate(p['input'])}", f"output {_rate(p['output'])}"]
    parts += [f"{k.replace('_', ' ')} {_rate(p[k])}"
              for k in ("cached_input", "cache_write", "reasoning") if p[k]]
    out.print(f"  pricing: {', '.join(parts)}")
    if p["batch_discount"]:
        scope = " (cache included)" if p["batch_discount_cache"] else ""
        out.print(f"  batch discount: {(Decimal(p['batch_discount']) * 100).normalize():f}%{scope}")
    for t in p["tiers"]:
        rates = ", ".join(f"{k.replace('_', ' ')} {_rate(v)}" for k, v in t.items()
                          if k not in ("above_input_tokens", "applies_to") and v is not None)
        out.print(f"  tier above {t['above_input_tokens']:,} prompt tokens "
                  f"({t['applies_to']} tokens): {rates}")
    out.print(f"  prices as of {p['as_of']}: {p['source']}")


VALIDATE_EPILOG = """
Examples:

  tokcost models validate
      the catalog in use (shipped or $TOKCOST_CATALOG)
  tokcost models validate my-models.yaml
      every problem, one line each, with file:line

Exit codes, one rule for every kind of problem:
  0  FILE is a valid catalog
  1  FILE has problems, all printed: not YAML or UTF-8, empty, a wrong
     type or value, a number past its bound, a name used twice, an
     unknown tokenizer
  2  nothing checked: FILE is missing or a folder, or bad arguments
"""


@models_app.command("validate", epilog=VALIDATE_EPILOG)
def validate(
    file: Annotated[str | None, typer.Argument(
        metavar="FILE", help="Catalog YAML (default: the one in use).")] = None,
    json_out: JsonOpt = False) -> None:
    """Check a catalog file; print every problem (exit 1 if any, 2 if FILE cannot be opened)."""
    result = tokcost.validate_catalog(file)
    count = len(result.problems)
    if json_out:
        print_json(result.to_dict())
    elif count:
        for problem in result.problems:
            err.print(problem, markup=False)
        err.print(f"{result.file}: {count} problem{'s' if count > 1 else ''}", markup=False)
    else:
        out.print(f"{result.file}: ok ({result.models} models, {result.gpus} GPUs)")
    if count:
        raise typer.Exit(code=1)


SYNC_EPILOG = """
Examples:

  tokcost models sync-prices
      report every difference with genai-prices
  tokcost models sync-prices --write
      write them into the catalog file (atomically)
  tokcost models sync-prices --check
      in CI: exit 1 while any price is stale
  tokcost models sync-prices --catalog mine.yaml --json

--check prints one difference a line on stdout (model, field, catalog value, \
database value) and exits 1 if there is any, 0 if none. --write also sets each \
updated entry's as_of: the database's start date for its prices, else today (UTC).

Needs the genai-prices package: """ + install_hint("prices") + "."


@models_app.command("sync-prices", epilog=SYNC_EPILOG)
def sync_prices(
    write: Annotated[bool, typer.Option(
        "--write", help="Write the differences to the file.")] = False,
    check: Annotated[bool, typer.Option(
        "--check", help="Exit 1 if any price differs from the database (for CI).")] = False,
    json_out: JsonOpt = False,
    catalog: CatalogOpt = None) -> None:
    """Compare catalog prices with the genai-prices database (and optionally update)."""
    if check and write:
        raise UsageError("--check only reports the differences and --write writes them: "
                         "give one of them")
    result = tokcost.sync_prices(tokcost.SyncPricesRequest(catalog=catalog, write=write))
    tally = (f"compared {len(result.matched)} priced models with genai-prices "
             f"{result.database_version}")
    if json_out:
        print_json(result.to_dict())
    elif check:  # each difference a line on stdout (a CI log greps them), the rest on stderr
        for diff in result.differences:
            out.print(diff.describe(), markup=False)
        if result.unmatched:
            err.print(f"not in the database: {', '.join(result.unmatched)}")
        if result.current:
            err.print(f"{tally}: the catalog is current")
        else:
            err.print(f"{tally}: {len(result.differences)} stale price(s) in {result.file}; "
                      "to update them: tokcost models sync-prices --write")
    else:
        _report_sync(result, tally)
    if check and not result.current:
        raise typer.Exit(code=1)


def _report_sync(result: tokcost.PriceSync, tally: str) -> None:
    out.print(f"{tally}; {len(result.differences)} difference(s)")
    if result.differences:
        rows = table("model", "field", "catalog", "genai-prices", text=4)
        for d in result.differences:
            rows.add_row(d.model, d.field, "" if d.catalog is None else str(d.catalog).lower(),
                         str(d.database).lower() if d.writable else "(add by hand)")
        out.print(rows)
    if result.unmatched:
        err.print(f"not in the database: {', '.join(result.unmatched)}", markup=False)
    if result.write:
        err.print(f"wrote {result.written} change(s) to {result.file}", markup=False)
    elif result.differences:
        err.print("run with --write to apply them")
    if result.shipped and result.write and result.written:
        err.print("note: you updated the shipped catalog")
    if result.dated:
        err.print(f"as_of set on {len(result.dated)} model(s): {', '.join(result.dated)}")


IMPORT_EPILOG = """
Examples:

  tokcost models import hf:Qwen/Qwen3-8B
      the local Hugging Face cache, else the hub
  tokcost models import ./gpt-oss-120b -o mine.yaml
      a model folder: config.json + shards
  tokcost models import config.json --id my-model
      a config alone (weights unknown)
  tokcost kvmem estimate -m my-model --catalog mine.yaml --gpu H100

The entry's architecture comes from config.json; its weights (bytes, parameters, \
routed experts) from the safetensors headers, without reading any tensor data. The \
YAML is a catalog file that extends the shipped one (--catalog FILE), or an entry to \
paste under another catalog's models:.
"""


@models_app.command("import", epilog=IMPORT_EPILOG)
def import_model(
    source: Annotated[str, typer.Argument(metavar="SOURCE", help=(
        "hf:ORG/REPO, a model folder (config.json + safetensors) or a config.json."))],
    model_id: Annotated[str | None, typer.Option("--id", help=(
        "The entry's id (default: the repo's or folder's name, lowercased)."))] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help=(
        "Write the YAML to this file (atomically) instead of stdout."))] = None,
    force: ForceOpt = False,
    json_out: JsonOpt = False) -> None:
    """Print a catalog entry (YAML) for a Hugging Face model: config.json + safetensors headers."""
    result = tokcost.import_model(tokcost.ImportModelRequest(
        source=source, model_id=model_id, output=output, force=force))
    if json_out:
        print_json(result.to_dict())
    elif output is None:
        sys.stdout.write(result.yaml)  # exactly the YAML: no rich markup or wrapping
        sys.stdout.flush()
    for note in result.notes:
        err.print(f"note: {note}", style="dim", markup=False)
    if result.file is not None:
        err.print(f"wrote {result.file}", markup=False)


def _rate(usd_per_million: Decimal | str) -> str:  # $2.50/M, as every command shows a price
    return format_usd(usd_per_million, per_million=True)


def _params(n: int) -> str:
    """918656 -> '0.92M'; 8030261248 -> '8.03B'."""
    return f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.2f}M"
