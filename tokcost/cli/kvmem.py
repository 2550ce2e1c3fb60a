"""``tokcost kvmem estimate``: KV-cache bytes, GPU fit and decode rate for a model; the
``kvmem`` sub-app (tokcost.cli.simulate adds ``simulate``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from typer._click.core import ParameterSource as Source

import tokcost
from tokcost.cli.base import App, cli_words, current_words
from tokcost.cli.console import err, out, print_json, table
from tokcost.cli.options import CatalogOpt, JsonOpt, PlotForceOpt, count_option
from tokcost.units import format_bytes

kvmem_app = App(
    name="kvmem",
    help="KV-cache memory: bytes per token, GPU fit the vLLM way, decode and prefill roofline.",
    no_args_is_help=True)

EPILOG = """
Examples:

  tokcost kvmem estimate -m llama-3.1-8b
      bytes/token and at the full context
  tokcost kvmem estimate -m llama-3.1-70b --gpu H100 --tp 4 \\
    --context 1k,8k,32k,128k
  tokcost kvmem estimate -m qwen3-32b --gpu-memory 80GiB --kv-dtype fp8 \\
    --batch 16
  tokcost kvmem estimate -m llama-3.1-8b --kv-memory 57.4GiB --context 8k
      vLLM's logged figure
  tokcost kvmem estimate -m llama-3.1-8b --gpu H100 --context 32k \\
    --kv-dtype int4 --residual 128 --evict streaming:4+1024 --engine ideal
      a cache policy (tokcost kvmem quality)
  tokcost kvmem estimate -m gemma-3-27b --context 1k,8k,32k,128k \\
    --plot mem.png
  tokcost kvmem estimate -m deepseek-v3 --context 32k --json
  tokcost kvmem estimate -m gemma-3-27b --max-model-len 128Ki \\
    --kv-memory 20GiB
      vLLM's log lines
  tokcost kvmem estimate -m gpt-oss-120b --gpu H100 --engine sglang
      SGLang's pools
  tokcost kvmem estimate -m llama-3.1-70b --gpu A100-80GB --tp 4 --pp 2 \\
    --engine ideal
  tokcost kvmem estimate -m gpt-oss-120b --gpu H200 --batch 64 -i 8k \\
    --efficiency 0.7
  tokcost kvmem estimate --config ./Qwen3-8B --gpu H100
      a model folder: config.json + shards
  tokcost kvmem estimate -m hf:Qwen/Qwen3-8B --context 32k
      the Hugging Face cache, else the hub
"""


@kvmem_app.command("estimate", epilog=EPILOG)
def estimate(  # each parameter is the field of tokcost.KvRequest of its name
    ctx: typer.Context,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model id, alias or dated id, "
        "or hf:ORG/REPO (a Hugging Face model: the local cache first, else the hub).")] = None,
    config: Annotated[Path | None, typer.Option("--config", metavar="PATH",
        help="A model's config.json, or its folder (config.json + safetensors shards: weights "
        "from their headers), instead of -m.")] = None,
    contexts: Annotated[str | None, typer.Option("--context", "--max-model-len", help="Context "
        "length(s): 8192, 8k, or a list 1k,8k,32k,128k (k = 1000, Ki = 1024); the largest is the "
        "engine's max_model_len. Default: the model's context window.")] = None,
    batch: Annotated[str, typer.Option("--batch", "-b", metavar="COUNT",
        help="Sequences served at once.")] = "1",
    # A string: the library also takes bfloat16/half and answers a typo with "did you mean".
    kv_dtype: Annotated[str, typer.Option("--kv-dtype", "--kv-cache-dtype", help="Cache dtype: "
        "auto (the model's), fp32, bf16, fp16, fp8, int8, int4 (int8/int4 add per-group "
        "scales).")] = "bf16",
    kv_group_size: Annotated[int | None, count_option(
        "--kv-group-size", help="Quantization group of int8/int4 (64).")] = None,
    evict: Annotated[str | None, typer.Option("--evict", metavar="SPEC",
        help="Size requests under an eviction policy: window:N, streaming:SINKS+N, h2o:HEAVY+"
        "RECENT, snapkv:BUDGET[+WINDOW] (N a count or a fraction of the context).")] = None,
    residual: Annotated[int | None, count_option("--residual", help="int8/"
        "int4 as KIVI stores them: keys per channel, the last COUNT tokens in bf16.")] = None,
    block_size: Annotated[str | None, typer.Option("--block-size", metavar="COUNT",
        help="Paged-cache block in tokens, 1 to 4096 (default: the engine's: "
        "vLLM 16 or what its backend forces, SGLang 1).")] = None,
    tp: Annotated[int, typer.Option("--tp", "--tensor-parallel-size",
        help="Tensor-parallel GPUs (numbers per GPU).")] = 1,
    pp: Annotated[int, typer.Option("--pp", "--pipeline-parallel-size",
        help="Pipeline stages: layers split across GPUs as vLLM splits them.")] = 1,
    engine: Annotated[str, typer.Option("--engine", help="Whose accounting: vllm (vLLM v1's KV "
        "cache manager), sglang (its token pools) or ideal (bytes truly held).")] = "vllm",
    max_num_batched_tokens: Annotated[str | None, typer.Option("--max-num-batched-tokens",
        metavar="COUNT", help="vLLM's tokens per scheduler step (default: "
        "vllm serve's, 8192 on GPUs of 70 GiB or more other than A100, else 2048).")] = None,
    hybrid_manager: Annotated[bool, typer.Option("--hybrid-manager/--no-hybrid-manager",
        " /--disable-hybrid-kv-cache-manager", help="vLLM's hybrid KV cache manager (off: every "
        "layer caches the whole context, as with --disable-hybrid-kv-cache-manager).")] = True,
    mem_fraction_static: Annotated[float | None, typer.Option("--mem-fraction-static",
        help="SGLang's share of GPU memory for weights and KV pool (default: "
        "SGLang's, from the GPU's memory).")] = None,
    swa_full_tokens_ratio: Annotated[float | None, typer.Option("--swa-full-tokens-ratio",
        help="SGLang: sliding-window pool tokens per full-pool token (0.8).")] = None,
    gpu: Annotated[str | None, typer.Option(
        "--gpu", help="GPU from the catalog: H100, A100-40GB, L4...")] = None,
    gpu_memory: Annotated[str | None, typer.Option(
        "--gpu-memory", metavar="SIZE", help="GPU memory instead of --gpu: 80GiB, 24GB.")] = None,
    gpu_util: Annotated[float, typer.Option(
        "--gpu-util", "--gpu-memory-utilization", help="vLLM's gpu_memory_utilization.")] = 0.9,
    kv_memory: Annotated[str | None, typer.Option(
        "--kv-memory", help="KV memory per GPU as vLLM logs it (skips the estimate).")] = None,
    reserve: Annotated[str | None, typer.Option(
        "--reserve", help="Activation/overhead reserve per GPU (default 2GiB).")] = None,
    weights_dtype: Annotated[str | None, typer.Option(
        "--weights-dtype", help="Override weights dtype: bf16, fp8, int4, mxfp4...")] = None,
    bandwidth: Annotated[str | None, typer.Option(
        "--bandwidth", help="Memory bandwidth per second (default: the GPU's).")] = None,
    flops: Annotated[str | None, typer.Option("--flops", metavar="COUNT", help="Peak FLOP/s: "
        "989e12, 989T (default: the GPU's for the weights dtype, fp8 or bf16).")] = None,
    efficiency: Annotated[float, typer.Option("--efficiency", help="Fraction of the datasheet "
        "bandwidth and FLOP/s reached, in (0, 1] (1 = the roofline bound).")] = 1.0,
    input_tokens: Annotated[str | None, typer.Option("--input-tokens", "-i", metavar="COUNT",
        help="Prompt tokens for the time to first token (default: each context).")] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write memory vs context to "
        "PNG/SVG (needs: pip install 'tokcost\\[plot]').")] = None,
    force: PlotForceOpt = False,
    json_out: JsonOpt = False,
    catalog: CatalogOpt = None) -> None:
    """Size the KV cache of a model, and what fits on a GPU."""
    result = tokcost.estimate_memory(tokcost.KvRequest.of(**given(ctx)))
    if json_out:
        print_json(result.to_dict())
        return
    _render(result, ctx)
    for note in result.source_notes:  # where a --config / hf: model's numbers came from
        err.print(f"note: {note}", style="dim", markup=False)
    if plot is not None:
        err.print(f"wrote {plot}", markup=False)


def given(ctx: typer.Context) -> dict[str, Any]:
    return {name: value for name, value in ctx.params.items()
            if name != "json_out" and ctx.get_parameter_source(name) is not Source.DEFAULT}


def _engine_words(ctx: typer.Context) -> Callable[[str, str | None], str]:
    """Flags for an engine's advice: its own settings by their flags (``--max-model-len``)."""
    words = cli_words(ctx.command.params)
    spelled = {opt for param in ctx.command.params for opt in getattr(param, "opts", ())}

    def spell(name: str, value: str | None) -> str:
        flag = "--" + name.replace("_", "-")
        return flag if value is None and flag in spelled else words(name, value)

    return spell


def _render(r: Any, ctx: typer.Context) -> None:
    words, lay, counts, e = current_words(), r.layout, r.layout.counts, r.engine
    kinds = [f"{counts['full']} full"] if counts["full"] else []
    kinds += [f"{counts['mla']} MLA"] if counts["mla"] else []
    if counts["sliding"]:
        kinds.append(f"{counts['sliding']} sliding ({lay.window:,}-token window)")
    if counts["linear"]:
        kinds.append(f"{counts['linear']} linear ({format_bytes(lay.state_bytes)} state each)")
    out.print(f"[bold]{r.model}[/bold]: {', '.join(kinds)} layers; KV {r.kv_dtype}", markup=True)
    out.print(
        f"bytes per token{' per GPU' if r.tp > 1 or r.pp > 1 else ''}: {r.bytes_per_token:,} B"
        # The binary-unit form only when it says something the byte count does not.
        + (f" ({format_bytes(r.bytes_per_token)})" if r.bytes_per_token >= 1024 else "")
        + (" while the context is shorter than the window" if counts["sliding"] else ""))
    out.print(f"engine {e.name}: {e.version}", markup=False)
    out.print(e.header.render(words), markup=False)
    out.print(_table(r))
    if r.fit is not None:
        for line in (r.budget_line, *e.details):
            out.print(line, markup=False)
        if e.refusal is not None and e.advice is not None:
            advice = e.advice.render(_engine_words(ctx))
            out.print(f"[red]{e.title} refuses to start[/red] ({advice}): ",
                      end="", markup=True)
            out.print(e.refusal, markup=False)
        if r.largest_context is not None:
            limit = " (the model's limit)" if r.largest_context == r.context_window else ""
            out.print(f"largest context for batch {r.batch}: {r.largest_context:,} tokens{limit}")
    _render_roofline(r)
    for note in r.notes:  # the notes name parameters: here, as the flags
        err.print(f"note: {note.render(words)}", style="dim", markup=False)


def _table(r: Any) -> Any:
    grid = table()
    decode = any(row.decode is not None for row in r.rows)
    prefill = any(row.prefill is not None for row in r.rows)
    names = ["context", "per sequence", f"batch x{r.batch}", f"blocks ({r.block_size})"]
    names += ["max concurrency", "fits"] if r.fit is not None else []
    names += ["decode tok/s", "bound"] if decode else []
    names += ["TTFT"] if prefill else []
    for name in names:
        grid.add_column(name, justify="center" if name == "fits" else "left" if name == "bound"
                        else "right")
    for row in r.rows:
        cells = [f"{row.context:,}" + (" (>window)" if row.beyond_context_window else ""),
                 format_bytes(row.paged_sequence_bytes), format_bytes(row.batch_bytes),
                 f"{row.blocks_per_sequence:,}"]
        if r.fit is not None:
            conc = row.max_concurrency
            cells += ["" if conc is None else f"{conc:,.2f}x",
                      "yes" if row.fits else "[red]no[/red]"]
        if decode and row.decode is not None:
            # Bandwidth was the only limit checked: not a verdict against compute.
            cells += [f"{row.decode.tokens_per_s:,.0f}", row.decode.bound
                      if row.decode.peak_flops_per_s is not None else "bandwidth (no FLOP/s)"]
        if prefill and row.prefill is not None:
            cells.append(_time(row.prefill.ttft_seconds))
        grid.add_row(*cells)
    return grid


def _time(seconds: float) -> str:
    """``2.53 s``, ``9.8 ms``, ``0.0402 ms``: three figures below a millisecond."""
    if seconds >= 1:
        return f"{seconds:,.2f} s"
    ms = seconds * 1000
    return f"{ms:,.1f} ms" if ms >= 1 else f"{ms:.3g} ms"


def _si(value: float, unit: str) -> str:
    """``2.41e15, "FLOP"`` -> ``2.41 PFLOP``."""
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M")):
        if value >= scale:
            return f"{value / scale:,.3g} {prefix}{unit}"
    return f"{value:,.0f} {unit}"


def _limits(step: Any, lead: str, kv: str) -> str:
    """``X GiB <lead>(W weights + K <kv>) / B GB/s = T; F / P FLOP/s = T`` for a pass."""
    eff = "" if step.efficiency == 1 else f" x {step.efficiency:g}"
    experts = (f" with {step.experts_touched:,.1f} experts per layer"
               if step.experts_touched is not None else "")
    text = (f"{format_bytes(step.step_bytes)} {lead}({format_bytes(step.weights_bytes)} weights"
            f"{experts} + {format_bytes(step.kv_bytes)} {kv}) / "
            f"{step.bandwidth_bytes_per_s / 1e9:,.0f} GB/s{eff} = "
            f"{_time(step.bandwidth_seconds)}; ")
    if step.peak_flops_per_s is None or step.compute_seconds is None:
        return text + "compute not checked"
    return (text + f"{_si(step.flops, 'FLOP')} / {_si(step.peak_flops_per_s, 'FLOP/s')}{eff} "
            f"= {_time(step.compute_seconds)}")


def _render_roofline(r: Any) -> None:
    row = r.rows[-1]
    if (d := row.decode) is not None:
        out.print(f"decode at {row.context:,}: {_limits(d, 'per step ', 'KV')} -> {d.bound} bound: "
                  f"{d.tokens_per_s_per_sequence:,.1f} tok/s per sequence, "
                  f"{d.tokens_per_s:,.0f} tok/s total")
    if (f := row.prefill) is not None:
        out.print(f"prefill of {f.prompt_tokens:,} tokens: {_limits(f, '', 'KV written')} -> "
                  f"{f.bound} bound: time to first token {_time(f.ttft_seconds)}")
