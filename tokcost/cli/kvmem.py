"""``tokcost kvmem estimate``: KV-cache bytes, GPU fit and decode rate for a model.

``kvmem_app`` is the ``kvmem`` sub-app; ``kvmem simulate`` is added to it by
tokcost.cli.simulate.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

import tokcost
from tokcost.cli.console import err, out, print_json
from tokcost.cli.counts import COUNT, count_parser
from tokcost.cli.errors import in_cli_words
from tokcost.cli.options import CatalogOpt, JsonOpt, PlotForceOpt

if TYPE_CHECKING:
    from tokcost import MemoryEstimate

kvmem_app = typer.Typer(
    name="kvmem",
    help="KV-cache memory: bytes per token, GPU fit the vLLM way, decode bandwidth.",
    no_args_is_help=True,
)

EPILOG = """
Examples:

\b
  tokcost kvmem estimate -m llama-3.1-8b                      bytes/token and at the full context
  tokcost kvmem estimate -m llama-3.1-70b --context 1k,8k,32k,128k --gpu H100 --tp 4
  tokcost kvmem estimate -m qwen3-32b --gpu-memory 80GiB --kv-dtype fp8 --batch 16
  tokcost kvmem estimate -m llama-3.1-8b --kv-memory 57.4GiB --context 8k   (vLLM's logged figure)
  tokcost kvmem estimate -m gemma-3-27b --context 1k,8k,32k,128k --plot mem.png
  tokcost kvmem estimate -m deepseek-v3 --context 32k --json
  tokcost kvmem estimate --config ./Qwen3-8B --gpu H100      a model folder: config.json + shards
  tokcost kvmem estimate -m hf:Qwen/Qwen3-8B --context 32k    the Hugging Face cache, else the hub
"""


def _human(n: float) -> str:
    return tokcost.format_bytes(n)


def _size(text: str | None, param: str, *, allow_zero: bool = False) -> int | None:
    return None if text is None else tokcost.parse_size(text, param=param, allow_zero=allow_zero)


def estimate(
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", show_default=False,
                     help="Model id, alias or dated id, or hf:ORG/REPO (a Hugging Face model: "
                     "the local cache first, else the hub)."),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", metavar="PATH", show_default=False,
                     help="A model's config.json, or its folder (config.json + safetensors "
                     "shards: weights from their headers), instead of -m."),
    ] = None,
    contexts: Annotated[
        str | None,
        typer.Option(
            "--context",
            help="Context length(s): 8192, 8k, or a list 1k,8k,32k,128k (k = 1000, Ki = 1024). "
            "Default: the model's context window.",
        ),
    ] = None,
    batch: Annotated[
        str, typer.Option("--batch", "-b", metavar="COUNT", help="Sequences served at once.")
    ] = "1",
    # A string, not the KvDtypeName enum: the library also takes bfloat16/float16/half and
    # answers a typo with one line and a "did you mean".
    kv_dtype: Annotated[
        str,
        typer.Option(
            "--kv-dtype", help="Cache dtype: fp32, bf16, fp16, fp8, int8, int4 (int8/int4 add "
            "per-group scales).",
        ),
    ] = "bf16",
    kv_group_size: Annotated[
        int | None, typer.Option("--kv-group-size", metavar=COUNT,
                                 parser=count_parser("--kv-group-size"),
                                 help="Quantization group of int8/int4 (64).")
    ] = None,
    block_size: Annotated[
        str, typer.Option("--block-size", metavar="COUNT",
                          help="Paged-cache block in tokens, 1 to 4096 (vLLM: 16).")
    ] = "16",
    tp: Annotated[int, typer.Option("--tp", help="Tensor-parallel GPUs (numbers per GPU).")] = 1,
    gpu: Annotated[
        str | None, typer.Option("--gpu", help="GPU from the catalog: H100, A100-40GB, L4...")
    ] = None,
    gpu_memory: Annotated[
        str | None, typer.Option("--gpu-memory", metavar="SIZE",
                                 help="GPU memory instead of --gpu: 80GiB, 24GB.")
    ] = None,
    gpu_util: Annotated[
        float, typer.Option("--gpu-util", help="vLLM's gpu_memory_utilization.")
    ] = 0.9,
    kv_memory: Annotated[
        str | None,
        typer.Option("--kv-memory", help="KV memory per GPU as vLLM logs it (skips the estimate)."),
    ] = None,
    reserve: Annotated[
        str | None,
        typer.Option("--reserve", help="Activation/overhead reserve per GPU (default 2GiB)."),
    ] = None,
    weights_dtype: Annotated[
        str | None,
        typer.Option("--weights-dtype", help="Override weights dtype: bf16, fp8, int4, mxfp4..."),
    ] = None,
    bandwidth: Annotated[
        str | None,
        typer.Option("--bandwidth", help="Memory bandwidth per second (default: the GPU's)."),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Write memory vs context to PNG/SVG (needs: pip install 'tokcost\\[plot]').",
        ),
    ] = None,
    force: PlotForceOpt = False,
    json_out: JsonOpt = False,
    catalog: CatalogOpt = None,
) -> None:
    """Size the KV cache of a model, and what fits on a GPU."""
    result = tokcost.estimate_memory(
        model,
        config=config,
        catalog=catalog,
        contexts=tokcost.parse_context_list(contexts, param="contexts") if contexts else None,
        batch=tokcost.parse_count(batch, param="batch"),
        kv_dtype=kv_dtype,
        kv_group_size=kv_group_size,
        block_size=tokcost.parse_count(block_size, param="block_size"),
        tp=tp,
        gpu=gpu,
        gpu_memory=_size(gpu_memory, "gpu_memory"),
        gpu_util=gpu_util,
        kv_memory=_size(kv_memory, "kv_memory"),
        reserve=_size(reserve, "reserve", allow_zero=True),
        weights_dtype=weights_dtype,
        bandwidth=_size(bandwidth.removesuffix("/s") if bandwidth else None, "bandwidth"),
        plot=plot,
        force=force,
    )
    if json_out:
        print_json(result.to_dict())
        return
    _render(result)
    for note in result.source_notes:  # where a --config / hf: model's numbers came from
        err.print(f"note: {note}", style="dim", highlight=False, markup=False)
    if plot is not None:
        err.print(f"wrote {plot}", highlight=False, markup=False)


def _render(result: MemoryEstimate) -> None:
    from rich import box
    from rich.table import Table

    from tokcost.cli.console import print_wide

    r = result.estimate
    lay = r.layout
    counts = lay.counts
    kinds = []
    if counts["full"]:
        kinds.append(f"{counts['full']} full")
    if counts["mla"]:
        kinds.append(f"{counts['mla']} MLA")
    if counts["sliding"]:
        kinds.append(f"{counts['sliding']} sliding ({lay.window:,}-token window)")
    if counts["linear"]:
        kinds.append(f"{counts['linear']} linear ({_human(lay.state_bytes)} state each)")
    per_gpu = " per GPU" if r.tp > 1 else ""
    out.print(f"[bold]{r.model}[/bold]: {', '.join(kinds)} layers; KV {r.kv_dtype}", markup=True)
    out.print(
        f"bytes per token{per_gpu}: {r.bytes_per_token:,} B ({_human(r.bytes_per_token)})"
        + (" while the context is shorter than the window" if counts["sliding"] else "")
    )
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("context", justify="right")
    table.add_column("per sequence", justify="right")
    table.add_column(f"batch x{r.batch}", justify="right")
    table.add_column(f"blocks ({r.block_size})", justify="right")
    if r.fit is not None:
        table.add_column("max concurrency", justify="right")
        table.add_column("fits", justify="center")
    has_decode = any(row.decode is not None for row in r.rows)
    if has_decode:
        table.add_column("decode tok/s", justify="right")
    for row in r.rows:
        ctx = f"{row.context:,}" + (" (>window)" if row.beyond_context_window else "")
        cells = [
            ctx,
            _human(row.paged_sequence_bytes),
            _human(row.batch_bytes),
            f"{row.blocks_per_sequence:,}",
        ]
        if r.fit is not None:
            cells.append(f"{row.max_concurrency:,.2f}x" if row.max_concurrency is not None else "")
            cells.append("yes" if row.fits else "[red]no[/red]")
        if has_decode and row.decode is not None:
            cells.append(f"{row.decode.tokens_per_s:,.0f}")
        table.add_row(*cells)
    print_wide(table)
    if r.fit is not None:
        f = r.fit
        if f.memory_bytes is not None and f.util is not None:
            out.print(
                f"GPU {r.gpu}: {_human(f.memory_bytes)} x {f.util:g} "
                f"- weights {_human(f.weights_bytes)} - reserve {_human(f.reserve_bytes)} "
                f"= {_human(f.available_bytes)} for the KV cache"
            )
        else:
            out.print(f"KV cache memory{per_gpu}: {_human(f.available_bytes)} (given)")
        out.print(
            f"blocks: floor({f.available_bytes:,} / {f.page_bytes:,} B per block) = "
            f"{f.num_blocks:,} -> {f.cache_tokens:,} tokens"
            + ("" if lay.uniform else " at short context (windowed/linear layers cap long ones)")
        )
        if r.largest_context is not None:
            limit = " (the model's limit)" if r.largest_context == r.context_window else ""
            out.print(f"largest context for batch {r.batch}: {r.largest_context:,} tokens{limit}")
    for row in r.rows[-1:]:
        if row.decode is not None:
            d = row.decode
            out.print(
                f"decode at {row.context:,}: {_human(d.step_bytes)} per step "
                f"({_human(d.weights_bytes)} weights + {_human(d.kv_bytes)} KV) / "
                f"{d.bandwidth_bytes_per_s / 1e9:,.0f} GB/s -> {d.tokens_per_s_per_sequence:,.1f} "
                f"tok/s per sequence, {d.tokens_per_s:,.0f} tok/s total (bandwidth bound)"
            )
    for note in r.notes:
        # The notes speak the API (reserve, kv_memory); the table speaks the flags.
        note = in_cli_words(note, ("reserve", "kv_memory", "gpu_memory", "gpu_util"))
        err.print(f"note: {note}", style="dim", highlight=False, markup=False)


kvmem_app.command("estimate", epilog=EPILOG)(estimate)


def register(app: typer.Typer) -> None:
    app.add_typer(kvmem_app, name="kvmem")
