"""``tokcost kvmem estimate|simulate|quality``: KV-cache bytes, GPU fit and decode rate; paged vs
contiguous allocation on a stream of requests; what quantizing or evicting the cache costs."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Any

import typer
from typer._click.core import ParameterSource as Source

import tokcost
from tokcost.cli.base import App, cli_words, current_words
from tokcost.cli.console import err, out, print_json, progress_enabled, table, warn, with_progress
from tokcost.cli.generate import ModelDirOpt
from tokcost.cli.options import CatalogOpt, JsonOpt, PlotForceOpt, count_option
from tokcost.errors import install_hint
from tokcost.units import format_bytes

kvmem_app = App(
    name="kvmem",
    help="KV-cache memory: bytes per token, GPU fit the vLLM way, decode and prefill roofline.",
    no_args_is_help=True)

ESTIMATE_EPILOG = """
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
  tokcost kvmem estimate -m llama-3.1-70b --gpu H100 --tp 4 \\
    --context 32k --cpu-offload 200GiB
      a second tier in host memory (vLLM's native offload)
  tokcost kvmem estimate --config ./Qwen3-8B --gpu H100
      a model folder: config.json (+ shards: exact weights)
  tokcost kvmem estimate -m hf:Qwen/Qwen3-8B --context 32k
      the Hugging Face cache, else the hub
"""


@kvmem_app.command("estimate", epilog=ESTIMATE_EPILOG)
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
        "bf16 (the default, whatever the model's dtype), auto (the model's), fp32, fp16, fp8, "
        "int8, int4 (int8/int4 add per-group scales); vLLM's fp8_per_token_head, "
        "int8_per_token_head, int4_per_token_head, nvfp4, fp8_ds_mla.",
        show_default=False)] = "bf16",
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
    dcp: Annotated[int, typer.Option("--dcp", "--decode-context-parallel-size", metavar="N",
        help="vLLM's decode context parallel: GPUs of the TP group that split each "
        "sequence's tokens.")] = 1,
    dp: Annotated[int, typer.Option("--dp", "--data-parallel-size", metavar="N",
        help="Data-parallel engines, each with its own cache.")] = 1,
    engine: Annotated[str, typer.Option("--engine", help="Whose accounting: vllm (vLLM v0.34's "
        "KV cache manager; vllm@0.20 an older release's rules), sglang (SGLang v0.5.23's token "
        "pools; sglang@0.4 = v0.4.10, sglang@0.5.9 likewise), llama.cpp (its cells, as builds "
        "b8643 to b10107 keep them), trtllm (TensorRT-LLM 1.1's blocks) or ideal (bytes truly "
        "held).")] = "vllm",
    max_num_batched_tokens: Annotated[str | None, typer.Option("--max-num-batched-tokens",
        metavar="COUNT", help="vLLM's tokens per scheduler step (default: "
        "vllm serve's: 16,384 on GPUs of 160 GiB or more from v0.28, 8192 on GPUs of 70 GiB or "
        "more other than A100, else 2048).")] = None,
    hybrid_manager: Annotated[bool, typer.Option("--hybrid-manager/--no-hybrid-manager",
        " /--disable-hybrid-kv-cache-manager", help="vLLM's hybrid KV cache manager (off: every "
        "layer caches the whole context, as with --disable-hybrid-kv-cache-manager).")] = True,
    enable_prefix_caching: Annotated[bool | None, typer.Option(
        "--enable-prefix-caching/--no-enable-prefix-caching", help="vLLM's prefix caching: a "
        "linear hybrid then holds 2 states per linear layer and request (Mamba families before "
        "v0.28: a state per block). Default: vllm serve's, for hybrids off before v0.28, on "
        "from it.", show_default=False)] = None,
    num_speculative_tokens: Annotated[str | None, typer.Option(
        "--num-speculative-tokens", "--speculative-tokens", metavar="N", help="vLLM's "
        "speculative decoding: N more state blocks per linear group and request, N more conv "
        "rows in a Gated DeltaNet state; the drafter's layers join the pool.")] = None,
    draft_layers: Annotated[str | None, typer.Option("--draft-layers", metavar="N",
        help="The drafter's attention layers, shaped as the model's (default: the model's MTP "
        "layers, e.g. DeepSeek-V3's num_nextn_predict_layers 1; 0 for n-gram; SGLang's EAGLE "
        "heads 1).")] = None,
    chunked_hybrid: Annotated[bool | None, typer.Option(
        "--chunked-hybrid/--no-chunked-hybrid", help="vLLM: keep the hybrid KV cache manager on "
        "for Llama-4's chunked local attention, as vLLM's environment switch for it does "
        "(default: the release's, off to v0.13, on from v0.14; docs/kvmem.md names the "
        "variable).")] = None,
    kv_cache_dtype_skip_layers: Annotated[str | None, typer.Option(
        "--kv-skip-layers", "--kv-cache-dtype-skip-layers", metavar="LIST", help="vLLM (v0.19 "
        "on): layers cached in the model's dtype, not --kv-dtype: indices (0,31) and/or "
        "sliding_window.")] = None,
    mem_fraction_static: Annotated[float | None, typer.Option("--mem-fraction-static",
        help="SGLang's share of GPU memory for weights and KV pool (default: "
        "SGLang's, from the GPU's memory).")] = None,
    swa_full_tokens_ratio: Annotated[float | None, typer.Option("--swa-full-tokens-ratio",
        help="SGLang: sliding-window pool tokens per full-pool token (0.8).")] = None,
    enable_dp_attention: Annotated[bool, typer.Option("--enable-dp-attention",
        help="SGLang's DP attention: --dp N attention ranks inside the TP group, kv heads "
        "split over --tp / N GPUs, a pool per rank.")] = False,
    speculative_algorithm: Annotated[str | None, typer.Option("--speculative-algorithm",
        metavar="NAME", help="SGLang's speculative decoding: EAGLE, EAGLE3, NEXTN, STANDALONE or "
        "NGRAM; the draft's layers (--draft-layers) get a pool of their own.")
        ] = None,
    cache_type_k: Annotated[str, typer.Option("--cache-type-k", "-ctk", help="llama.cpp's K "
        "cache type: f16, bf16, f32, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1.")] = "f16",
    cache_type_v: Annotated[str, typer.Option("--cache-type-v", "-ctv",
        help="llama.cpp's V cache type (as --cache-type-k).")] = "f16",
    parallel: Annotated[int | None, typer.Option("--parallel", "-np", metavar="COUNT",
        help="llama.cpp's slots (default: llama-server's auto, 4 sharing a unified cache).")
        ] = None,
    kv_unified: Annotated[bool | None, typer.Option("--kv-unified/--no-kv-unified", "-kvu",
        help="llama.cpp: one cache shared by the slots (default: with the auto slots only).")
        ] = None,
    swa_full: Annotated[bool, typer.Option("--swa-full",
        help="llama.cpp: sliding-window layers cache the whole context.")] = False,
    fit: Annotated[bool, typer.Option("--fit/--no-fit", help="llama.cpp's -fit on|off: "
        "without -c it lowers the context to fit the GPU, with -c it moves layers to host "
        "memory (tokcost says which, not how many layers).")] = True,
    fit_target: Annotated[int, typer.Option("--fit-target", "-fitt", metavar="MiB",
        help="llama.cpp: memory -fit leaves free on the GPU, in MiB.")] = 1024,
    fit_ctx: Annotated[int, typer.Option("--fit-ctx", "-fitc", metavar="N",
        help="llama.cpp: the smallest context -fit sets.")] = 4096,
    free_gpu_memory_fraction: Annotated[float | None, typer.Option(
        "--free-gpu-memory-fraction", metavar="SHARE", help="TensorRT-LLM's share of the "
        "memory left after weights and activations (0.9).")] = None,
    tokens_per_block: Annotated[int | None, typer.Option("--tokens-per-block", metavar="COUNT",
        help="TensorRT-LLM's block in tokens (32; engines built with 64 say so).")] = None,
    gpu: Annotated[str | None, typer.Option(
        "--gpu", help="GPU from the catalog: H100, A100-40GB, L4...")] = None,
    gpu_memory: Annotated[str | None, typer.Option(
        "--gpu-memory", metavar="SIZE", help="GPU memory instead of --gpu: 80GiB, 24GB.")] = None,
    gpu_util: Annotated[float | None, typer.Option(
        "--gpu-util", "--gpu-memory-utilization", help="vLLM's gpu_memory_utilization "
        "(default: the release's: 1.0 from v0.34, 0.92 from v0.21, 0.9 before).")] = None,
    kv_memory: Annotated[str | None, typer.Option(
        "--kv-memory", "--kv-cache-memory", help="KV memory per GPU as vLLM logs it, or vLLM's "
        "--kv-cache-memory (skips the estimate and the utilization).")] = None,
    reserve: Annotated[str | None, typer.Option(
        "--reserve", help="Activation/overhead reserve per GPU (default 2GiB).")] = None,
    cpu_offload: Annotated[str | None, typer.Option("--cpu-offload", metavar="SIZE",
        help="Host memory for a second KV tier, all GPUs together: 100GiB (vLLM's "
        "--kv-offloading-size, which counts GiB).")] = None,
    offload_backend: Annotated[str, typer.Option("--offload-backend", "--kv-offloading-backend",
        help="Who holds --cpu-offload: native (vLLM's OffloadingConnector) or lmcache.")
        ] = "native",
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
        f"PNG/SVG (needs: {install_hint('plot')}).")] = None,
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
    drafter = f" ({lay.draft_layers} the drafter's)" if lay.draft_layers else ""
    kinds = [f"{counts['full']} full" + drafter] if counts["full"] else []
    kinds += [f"{counts['mla']} MLA" + ("" if counts["full"] else drafter)] if counts["mla"] else []
    if counts["sliding"]:
        kinds.append(f"{counts['sliding']} chunked local ({lay.window:,}-token chunks)"
                     if lay.chunked else f"{counts['sliding']} sliding ({lay.window:,}-token "
                     "window)")
    if lay.kv_shared:
        kinds.append(f"{lay.kv_shared} KV-shared")
    if counts["linear"]:
        # state_bytes is the model dtype's; an engine that keeps the SSM part in float32
        # (vLLM's mamba_ssm_cache_dtype, SGLang, llama.cpp's S) says so in its own lines
        fp32 = " in the model dtype" if lay.ssm_elements else ""
        kinds.append(f"{counts['linear']} linear ({format_bytes(lay.state_bytes)} state each"
                     f"{fp32}" + (", one beside each attention layer)" if lay.parallel else ")"))
    out.print(f"[bold]{r.model}[/bold]: {', '.join(kinds)} layers; KV {r.kv_dtype}", markup=True)
    out.print(
        f"bytes per token{' per GPU' if r.tp > 1 or r.pp > 1 else ''}: {r.bytes_per_token:,} B"
        # The binary-unit form only when it says something the byte count does not.
        + (f" ({format_bytes(r.bytes_per_token)})" if r.bytes_per_token >= 1024 else "")
        + (" while the context is shorter than the window" if counts["sliding"] else "")
        + (f" (the fullest pipeline stage: {len(r.stage.layers)} of {len(lay.layers)} layers)"
           if r.pp > 1 and r.stage is not None else ""))
    out.print(f"engine {e.name}: {e.version}", markup=False)
    out.print(e.header.render(words), markup=False)
    out.print(_table(r))
    if r.fit is not None:
        for line in (r.budget_line, *e.details):
            out.print(line, markup=False)
        if e.refusal is not None and e.advice is not None:
            advice = e.advice.render(_engine_words(ctx))
            out.print(f"[red]{e.title} refuses to start[/red] ({advice}): ", end="", markup=True)
            out.print(e.refusal, markup=False)
        if r.largest_context is not None:
            limit = " (the model's limit)" if r.largest_context == r.context_window else ""
            out.print(f"largest context for batch {r.batch}: {r.largest_context:,} tokens{limit}")
    if (t := r.offload) is not None:
        who = "vLLM native offload" if t.backend == "native" else "LMCache"
        gpus = f" over {t.ranks} GPUs, {t.block_bytes:,} B each" if t.copies > 1 else ""
        if t.copies == 1 and t.ranks > 1:
            gpus = f", one copy for {t.ranks} GPUs (MLA's latent is the same on each)"
        # A hybrid tier's tokens are vLLM's cpu_kv_cache_size_tokens (concurrency x context):
        # beside them the GPU pool as the release logs it, not num_blocks x block.
        pool = e.cache_tokens if t.hybrid and e.cache_tokens is not None else (
            r.fit.cache_tokens if r.fit is not None else None)
        gpu = f" (GPU pool: {pool:,})" if pool is not None else ""
        longest = max(row.context for row in r.rows)
        kept = ""
        if t.hybrid:
            held = {g.kind for g in t.groups}
            what = [words for kind, words in _HOST_KEEPS if kind in held]
            groups = f"{len(t.groups)} group{'s' * (len(t.groups) > 1)}"
            kept = (f"; a request of {longest:,} tokens keeps {t.request_blocks(longest):,} of "
                    f"them over {groups} ({'; '.join(what)})")
        out.print(f"host tier ({who}): {format_bytes(t.size_bytes)} in {t.block_tokens}-token "
                  f"blocks of {t.row_bytes:,} B{gpus} = {t.blocks:,} blocks{kept}, "
                  f"{t.tokens_at(longest):,} tokens{gpu}", markup=False)
    _render_roofline(r)
    for note in r.notes:  # the notes name parameters: here, as the flags
        err.print(f"note: {note.render(words)}", style="dim", markup=False)


# What a hybrid cache's group keeps in vLLM's host tier, by kind (tokcost.memory.offload).
_HOST_KEEPS = (("full", "full: every block"), ("mla", "MLA: every block"),
               ("sliding", "sliding: its window"), ("chunked", "chunked: its chunk"),
               ("mamba", "Mamba: one state"))


def _table(r: Any) -> Any:
    grid = table()
    decode = any(row.decode is not None for row in r.rows)
    prefill = any(row.prefill is not None for row in r.rows)
    names = ["context", "per sequence", f"batch x{r.batch}", f"blocks ({r.block_size})"]
    names += ["max concurrency", "fits"] if r.fit is not None else []
    names += ["host seqs"] if r.offload is not None else []
    names += ["decode tok/s (upper bound)", "bound"] if decode else []
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
        if r.offload is not None:
            cells.append(f"{r.offload.sequences(row.context):,}")
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
        text += "compute not checked"
    else:
        text += (f"{_si(step.flops, 'FLOP')} / {_si(step.peak_flops_per_s, 'FLOP/s')}{eff} "
                 f"= {_time(step.compute_seconds)}")
    if (comm := step.allreduce_seconds) is not None:
        text += f"; all-reduce {format_bytes(step.allreduce_bytes)} = {_time(comm)}"
    return text


def _render_roofline(r: Any) -> None:
    row = r.rows[-1]
    if (d := row.decode) is not None:
        out.print(f"decode at {row.context:,}: {_limits(d, 'per step ', 'KV')} -> {d.bound} bound: "
                  f"at most {d.tokens_per_s_per_sequence:,.1f} tok/s per sequence, "
                  f"{d.tokens_per_s:,.0f} tok/s total")
    if (f := row.prefill) is not None:
        out.print(f"prefill of {f.prompt_tokens:,} tokens: {_limits(f, '', 'KV written')} -> "
                  f"{f.bound} bound: time to first token {_time(f.ttft_seconds)}")


SIMULATE_EPILOG = """
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


@kvmem_app.command("simulate", epilog=SIMULATE_EPILOG)
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
        f"{install_hint('plot')}).")] = None,
    force: PlotForceOpt = False,
    json_out: JsonOpt = False,
    catalog: CatalogOpt = None) -> None:
    """Serve a stream of requests under each allocation policy and show where memory goes."""
    result = with_progress("serving", tokcost.simulate, tokcost.SimulationRequest.of(**given(ctx)))
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
    _render_simulation(result)
    if plot is not None:
        err.print(f"wrote {plot}")


def _render_simulation(result: Any) -> None:
    n, head = result.samples_per_request, f"{result.requests} requests"
    where = f"{result.model}, " if result.model else ""
    grid = table("policy", "tokens", "reserved", "int.frag", "ext.frag", "free", "peak", "mean",
                 "steps", "preempt", title=f"{head}{f' x {n} samples' if n > 1 else ''}; {where}"
                 f"{result.capacity_tokens:,} token slots of KV memory, max length "
                 f"{result.max_len:,}")
    for r in result.policies:
        if r.infeasible:
            grid.add_row(r.label, "[red]infeasible[/red]", *["-"] * 8)
            continue
        grid.add_row(r.label, f"{r.token_states:.1%}", f"{r.reserved:.1%}",
                     f"{r.internal_fragmentation:.1%}", f"{r.external_fragmentation:.1%}",
                     f"{r.free:.1%}", str(r.peak_batch), f"{r.mean_batch:.1f}", f"{r.steps:,}",
                     f"{r.preemptions:,}")
    out.print(grid)
    for r in result.policies:
        if r.prefix_sharing_saved is not None:
            out.print(f"prefix sharing: the {n} samples of each request share the prompt's blocks, "
                      f"saving {r.prefix_sharing_saved:.1%} of the paged blocks", markup=False)
    for r in result.policies:
        if r.infeasible:
            out.print(f"{r.label} is infeasible: {r.infeasible}", markup=False)
    # The notes and the legend explain the table; they are not data, so stderr.
    for r in result.policies:
        if r.saturated_steps == 0 and not r.infeasible:
            err.print(f"note: {r.policy} never ran out of memory (no request waited); its "
                      "shares are averaged over every busy step, so 'free' is memory nobody "
                      "needed", markup=False)
    err.print("tokens = token states; peak/mean = sequences running at once; shares of KV memory "
              "averaged over the steps where requests waited for memory (PagedAttention paper, "
              "Figure 2: 20.4-38.2% token states for existing systems, 96.3% for vLLM)",
              markup=False, style="dim")


QUALITY_EPILOG = """
Examples:

  tokcost kvmem quality
      tiny-ref, held-out text, every policy family
  tokcost kvmem quality --policy int4 --policy int4:per-token --residual 0
  tokcost kvmem quality --policy window:64 --policy streaming:4+60 \\
    --policy h2o:32+32
  tokcost kvmem quality --text notes.txt --max-tokens 1k --prompt 64
  tokcost kvmem quality --gpu H100 --context 1k
      sequences each policy fits on the GPU
  tokcost kvmem quality --json --plot frontier.png
"""


@kvmem_app.command("quality", epilog=QUALITY_EPILOG)
def quality(
    model: Annotated[str, typer.Option("--model", "-m", help="Catalog model with weights "
                                       "(tiny-ref ships them), or hf:ORG/REPO.")] = "tiny-ref",
    model_dir: ModelDirOpt = None,
    text: Annotated[str | None, typer.Option(
        "--text", metavar="FILE", help="Held-out text to evaluate, or - "
        "for stdin (default: the held-out last 10% of the shipped prose corpora).")] = None,
    max_tokens: Annotated[int | None, count_option("--max-tokens", help="Evaluate the text's "
        "first COUNT tokens (default: the length the model trained on, at most 512; a longer one "
        "is warned about).")] = None,
    prompt: Annotated[int | None, count_option(
        "--prompt", help="Tokens prefilled at once before token-by-token decoding (default: an "
        "eighth of the text); SnapKV compresses them.")] = None,
    policies: Annotated[list[str] | None, typer.Option(
        "--policy", help="Cache policy (repeatable, or a comma list): fp8, int8, int4, "
        "int4:per-token, window:N, streaming:SINKS+N, h2o:HEAVY+RECENT, snapkv:BUDGET[+WINDOW]; N "
        "a count or a fraction of the text (default: one of each family).")] = None,
    residual: Annotated[int | None, count_option("--residual", help="Most recent tokens int8/int4 "
        "keep in full precision (default: KIVI's R, 128, at most a quarter of the text).")] = None,
    kv_group_size: Annotated[int, count_option(
        "--kv-group-size", help="Quantization group of int8/int4: channels per token for values "
        "and per-token keys, tokens per channel for keys.")] = 64,
    gpu: Annotated[str | None, typer.Option("--gpu", help="GPU from the catalog: show how many "
        "sequences each policy fits (bf16 cache, the model's weights).")] = None,
    context: Annotated[int | None, count_option("--context", help="Tokens per sequence for --gpu's "
        "concurrency (default: the model's context window).")] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write the memory-quality frontier "
        f"(PNG/SVG; needs: {install_hint('plot')}).")] = None,
    force: PlotForceOpt = False,
    json_out: JsonOpt = False,
    catalog: CatalogOpt = None) -> None:
    """Teacher-force a held-out text through each KV-cache policy and score it against the
    full cache: perplexity, top-1 agreement, KL divergence, bytes held."""
    status: Any = err.status("full cache") if progress_enabled() else nullcontext()
    with status:
        result = tokcost.kvmem_quality(tokcost.QualityRequest.of(
            model=None if model_dir else model, model_dir=model_dir, catalog=catalog, text=text,
            max_tokens=max_tokens, prompt=prompt, policies=policies, residual=residual,
            kv_group_size=kv_group_size, gpu=gpu, context=context, plot=plot, force=force,
            on_progress=(lambda name: status.update(f"evaluating {name}"))
            if progress_enabled() else None))
    if json_out:
        print_json(result.to_dict())
        return
    _render_quality(result)
    if plot is not None:
        err.print(f"wrote {plot}", markup=False)


def _render_quality(result: Any) -> None:
    dtype = result.cache_dtype
    grid = table("policy", f"{dtype} bytes", "share", "perplexity", "change", "top-1", "KL",
                 title=f"{result.model}: {result.tokens:,} tokens of {result.text}, prompt "
                 f"{result.prompt:,}, then one token at a time")
    planned = result.gpu is not None
    if planned:
        grid.add_column(f"seqs on {result.gpu}", justify="right")
    full = ["full cache", format_bytes(result.rows[0].quality.bytes_in_dtype[1]), "100%",
            f"{result.baseline_perplexity:,.3f}", "", "", ""]
    grid.add_row(*full, *([f"{result.baseline_concurrency or 0:,.1f}"] if planned else []))
    for row in result.rows:
        q = row.quality
        grid.add_row(row.policy, format_bytes(q.bytes_in_dtype[0]), f"{q.bytes_ratio:.1%}",
                     f"{q.perplexity:,.3f}", f"{q.perplexity_change:+.2%}",
                     f"{q.top1_agreement:.1%}", f"{q.mean_kl:.4f}",
                     *([f"{row.concurrency or 0:,.1f}"] if planned else []))
    out.print(grid)
    notes = [f"{dtype} bytes, share = held in {result.model}'s own {dtype} cache, against its "
             "full cache (the reference computes in float32: --json's bytes_held); change = "
             "perplexity against the full cache; top-1 = the full cache's most likely next token "
             "kept; KL = mean KL(full || policy) per predicted token"]
    if planned:
        notes.append(f"seqs = sequences of {result.context:,} tokens whose bf16 KV cache fits "
                     f"the memory {result.model}'s weights leave on {result.gpu}")
    for note in [*notes, *result.render_notes(current_words())]:
        err.print(f"note: {note}", style="dim", markup=False)
    for line in result.render_notes(current_words(), warnings=True):
        warn(line)
