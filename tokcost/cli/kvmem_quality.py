"""``tokcost kvmem quality``: what quantizing or evicting the KV cache costs in quality."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import Annotated, Any

import typer

import tokcost
from tokcost.cli.base import current_words
from tokcost.cli.checkpoint_options import ModelDirOpt
from tokcost.cli.console import err, out, print_json, progress_enabled, table
from tokcost.cli.kvmem import kvmem_app
from tokcost.cli.options import CatalogOpt, JsonOpt, PlotForceOpt, count_option
from tokcost.units import format_bytes

EPILOG = """
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


@kvmem_app.command("quality", epilog=EPILOG)
def quality(
    model: Annotated[str, typer.Option("--model", "-m", help="Catalog model with weights "
                                       "(tiny-ref ships them), or hf:ORG/REPO.")] = "tiny-ref",
    model_dir: ModelDirOpt = None,
    text: Annotated[str | None, typer.Option(
        "--text", metavar="FILE", help="Held-out text to evaluate, or - "
        "for stdin (default: the held-out last 10% of the shipped prose corpora).")] = None,
    max_tokens: Annotated[int, count_option("--max-tokens", help="Evaluate the text's first COUNT "
        "tokens (at most the model's context window).")] = 512,
    prompt: Annotated[int | None, count_option(
        "--prompt", help="Tokens prefilled at once before token-by-token decoding (default: an "
        "eighth of the text); SnapKV compresses them.")] = None,
    policies: Annotated[list[str] | None, typer.Option(
        "--policy", help="Cache policy (repeatable, or a comma list): fp8, int8, int4, "
        "int4:per-token, window:N, streaming:SINKS+N, h2o:HEAVY+RECENT, snapkv:BUDGET[+WINDOW]; N "
        "a count or a fraction of the text (default: one of each family).")] = None,
    residual: Annotated[int, count_option("--residual", help="Most recent tokens int8/int4 keep "
        "in full precision (KIVI's R).")] = 128,
    kv_group_size: Annotated[int, count_option(
        "--kv-group-size", help="Quantization group of int8/int4: channels per token for values "
        "and per-token keys, tokens per channel for keys.")] = 64,
    gpu: Annotated[str | None, typer.Option("--gpu", help="GPU from the catalog: show how many "
        "sequences each policy fits (bf16 cache, the model's weights).")] = None,
    context: Annotated[int | None, count_option("--context", help="Tokens per sequence for --gpu's "
        "concurrency (default: the model's context window).")] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="Write the memory-quality frontier "
        "(PNG/SVG; needs: pip install 'tokcost\\[plot]').")] = None,
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
    _render(result)
    if plot is not None:
        err.print(f"wrote {plot}", markup=False)


def _render(result: Any) -> None:
    grid = table("policy", "bytes held", "share", "perplexity", "change", "top-1", "KL",
                 title=f"{result.model}: {result.tokens:,} tokens of {result.text}, prompt "
                 f"{result.prompt:,}, then one token at a time")
    planned = result.gpu is not None
    if planned:
        grid.add_column(f"seqs on {result.gpu}", justify="right")
    full = ["full cache", format_bytes(result.baseline_bytes), "100%",
            f"{result.baseline_perplexity:,.3f}", "", "", ""]
    grid.add_row(*full, *([f"{result.baseline_concurrency or 0:,.1f}"] if planned else []))
    for row in result.rows:
        q = row.quality
        grid.add_row(row.policy, format_bytes(q.bytes_held), f"{q.bytes_ratio:.1%}",
                     f"{q.perplexity:,.3f}", f"{q.perplexity_change:+.2%}",
                     f"{q.top1_agreement:.1%}", f"{q.mean_kl:.4f}",
                     *([f"{row.concurrency or 0:,.1f}"] if planned else []))
    out.print(grid)
    notes = ["change = perplexity against the full cache; top-1 = the full cache's most likely "
             "next token kept; KL = mean KL(full || policy) per predicted token"]
    if planned:
        notes.append(f"seqs = sequences of {result.context:,} tokens whose bf16 KV cache fits "
                     f"the memory {result.model}'s weights leave on {result.gpu}")
    for note in [*notes, *result.render_notes(current_words())]:
        err.print(f"note: {note}", style="dim", markup=False)
