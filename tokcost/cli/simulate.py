"""``tokcost kvmem simulate``: paged vs contiguous KV allocation on a stream of requests."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

import tokcost
from tokcost.cli.console import err, out, print_json, table, warn
from tokcost.cli.kvmem import given, kvmem_app
from tokcost.cli.options import CatalogOpt, JsonOpt, PlotForceOpt, count_option

EPILOG = """
Examples:

  tokcost kvmem simulate
      OPT-13B, 12 GB of KV memory, ShareGPT-like
  tokcost kvmem simulate --dist alpaca --requests 2000 --block-size 32
  tokcost kvmem simulate --rate 0.05
      Poisson arrivals, 1 per 20 decode steps
  tokcost kvmem simulate -m llama-3.1-8b --kv-memory 20GiB --max-len 8192
  tokcost kvmem simulate --n 4 --policy paged
      parallel sampling: prefix-sharing savings
  tokcost kvmem simulate --trace requests.jsonl --json
      one {"prompt_tokens": P, "output_tokens": O} per line
  tokcost kvmem simulate --slots 4096 --plot waste.png
"""


@kvmem_app.command("simulate", epilog=EPILOG)
def simulate(  # each parameter is the field of tokcost.SimulationRequest of its name
    ctx: typer.Context,
    model: Annotated[str, typer.Option(
        "--model", "-m", help="Catalog model (sets bytes per token).")] = "opt-13b",
    kv_memory: Annotated[str, typer.Option(
        "--kv-memory", help="KV-cache memory: 12GB, 20GiB...")] = "12GB",
    kv_dtype: Annotated[str, typer.Option(
        "--kv-dtype", help="Cache dtype: fp32, bf16, fp16, fp8, int8, int4.")] = "fp16",
    slots: Annotated[str | None, typer.Option("--slots", metavar="COUNT", help="Memory as token "
        "slots: 4096, 64k (skips --model/--kv-memory).")] = None,
    distribution: Annotated[str, typer.Option("--dist", help="Lengths: sharegpt, alpaca, "
        "uniform:LO-HI, fixed:P,O (counts: fixed:1k,200).")] = "sharegpt",
    requests: Annotated[str, typer.Option(
        "--requests", metavar="COUNT", help="Requests to draw (500, 2k).")] = "500",
    rate: Annotated[float | None, typer.Option(
        "--rate", help="Poisson arrivals per decode step (default: all at once).")] = None,
    trace: Annotated[Path | None, typer.Option(
        "--trace", help="JSONL of {prompt_tokens, output_tokens[, n]} instead.")] = None,
    policies: Annotated[str, typer.Option(
        "--policy", help="Comma list of max, pow2, oracle, paged.")] = "max,pow2,oracle,paged",
    block_size: Annotated[str, typer.Option("--block-size", metavar="COUNT",
        help="Paged block in tokens, 1 to --max-len (vLLM: 16).")] = "16",
    max_len: Annotated[str | None, typer.Option("--max-len", metavar="COUNT", help="Longest "
        "sequence: 2048, 8k, 8Ki (default: the model's context); longer requests are cut to it, "
        "with a warning.")] = None,
    samples: Annotated[int, count_option(
        "--n", help="Parallel samples per request (shares prompt blocks).")] = 1,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the drawn lengths.")] = 0,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write a bar chart (PNG/SVG; needs: "
        "pip install 'tokcost\\[plot]').")] = None,
    force: PlotForceOpt = False,
    json_out: JsonOpt = False,
    catalog: CatalogOpt = None) -> None:
    """Serve a stream of requests under each allocation policy and show where memory goes."""
    result = tokcost.simulate(tokcost.SimulationRequest.of(**given(ctx)))
    if result.clipped_requests:
        cut, drawn = result.clipped_requests, result.requests
        limit = (f"--max-len {result.max_len:,}" if max_len is not None
                 else f"the max length {result.max_len:,} (set it with --max-len)")
        warn(f"{cut:,} of {drawn:,} request{'s' if drawn != 1 else ''} "
             f"{'was' if cut == 1 else 'were'} longer than {limit} and cut to fit, prompt "
             "first; raise the limit or give shorter lengths to simulate them whole")
    if json_out:
        print_json(result.to_dict())
        return
    _render(result)
    if plot is not None:
        err.print(f"wrote {plot}")


def _render(result: Any) -> None:
    n, head = result.samples_per_request, f"{result.requests} requests"
    where = f"{result.model}, " if result.model else ""
    grid = table("policy", "tokens", "reserved", "int.frag", "ext.frag", "free", "peak", "mean",
                 "steps", "preempt", title=f"{head}{f' x {n} samples' if n > 1 else ''}; {where}"
                 f"{result.capacity_tokens:,} token slots of KV memory, max length "
                 f"{result.max_len:,}")
    for r in result.policies:
        grid.add_row(r.label, f"{r.token_states:.1%}", f"{r.reserved:.1%}",
                     f"{r.internal_fragmentation:.1%}", f"{r.external_fragmentation:.1%}",
                     f"{r.free:.1%}", str(r.peak_batch), f"{r.mean_batch:.1f}", f"{r.steps:,}",
                     f"{r.preemptions:,}")
    out.print(grid)
    for r in result.policies:
        if r.prefix_sharing_saved is not None:
            out.print(f"prefix sharing: the {n} samples of each request share the prompt's blocks, "
                      f"saving {r.prefix_sharing_saved:.1%} of the paged blocks", markup=False)
    # The notes and the legend explain the table; they are not data, so stderr.
    for r in result.policies:
        if r.saturated_steps == 0:
            err.print(f"note: {r.policy} never ran out of memory (no request waited); its "
                      "shares are averaged over every busy step, so 'free' is memory nobody "
                      "needed", markup=False)
    err.print("tokens = token states; peak/mean = sequences running at once; shares of KV memory "
              "averaged over the steps where requests waited for memory (PagedAttention paper, "
              "Figure 2: 20.4-38.2% token states for existing systems, 96.3% for vLLM)",
              markup=False, style="dim")
