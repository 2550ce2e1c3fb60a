"""``tokcost kvmem quality``: what quantizing or evicting the KV cache costs in quality."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

import tokcost
from tokcost import units
from tokcost.cli.checkpoint_options import ModelDirOpt
from tokcost.cli.console import err, print_json, progress_enabled
from tokcost.cli.counts import COUNT, count_parser
from tokcost.cli.errors import in_cli_words
from tokcost.cli.options import CatalogOpt, JsonOpt, PlotForceOpt

if TYPE_CHECKING:
    from tokcost import QualityResult

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

# Policies, with their budgets: a count of tokens or a fraction of the text (0.25).
POLICY_HELP = ("Cache policy (repeatable, or a comma list): fp8, int8, int4, int4:per-token, "
               "window:N, streaming:SINKS+N, h2o:HEAVY+RECENT, snapkv:BUDGET[+WINDOW]; N a "
               "count or a fraction of the text (default: one of each family).")


def quality(
    model: Annotated[
        str, typer.Option("--model", "-m", help="Catalog model with weights (tiny-ref ships "
                          "them), or hf:ORG/REPO.")
    ] = "tiny-ref",
    model_dir: ModelDirOpt = None,
    text: Annotated[
        str | None,
        typer.Option("--text", metavar="FILE", show_default=False,
                     help="Held-out text to evaluate, or - for stdin (default: the held-out "
                     "last 10% of the shipped prose corpora)."),
    ] = None,
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", metavar=COUNT, parser=count_parser("--max-tokens"),
                          help="Evaluate the text's first COUNT tokens (at most the model's "
                          "context window).")
    ] = 512,
    prompt: Annotated[
        int | None,
        typer.Option("--prompt", metavar=COUNT, parser=count_parser("--prompt"),
                     show_default=False,
                     help="Tokens prefilled at once before token-by-token decoding (default: "
                     "an eighth of the text); SnapKV compresses them."),
    ] = None,
    policies: Annotated[
        list[str] | None,
        typer.Option("--policy", show_default=False, help=POLICY_HELP),
    ] = None,
    residual: Annotated[
        int, typer.Option("--residual", metavar=COUNT, parser=count_parser("--residual"),
                          help="Most recent tokens int8/int4 keep in full precision (KIVI's R).")
    ] = 128,
    kv_group_size: Annotated[
        int, typer.Option("--kv-group-size", metavar=COUNT,
                          parser=count_parser("--kv-group-size"),
                          help="Quantization group of int8/int4: channels per token for values "
                          "and per-token keys, tokens per channel for keys.")
    ] = 64,
    gpu: Annotated[
        str | None, typer.Option("--gpu", show_default=False,
                                 help="GPU from the catalog: show how many sequences each policy "
                                 "fits (bf16 cache, the model's weights).")
    ] = None,
    context: Annotated[
        int | None,
        typer.Option("--context", metavar=COUNT, parser=count_parser("--context"),
                     show_default=False,
                     help="Tokens per sequence for --gpu's concurrency (default: the model's "
                     "context window)."),
    ] = None,
    plot: Annotated[
        Path | None,
        typer.Option("--plot", help="Write the memory-quality frontier (PNG/SVG; needs: pip "
                     "install 'tokcost\\[plot]')."),
    ] = None,
    force: PlotForceOpt = False,
    json_out: JsonOpt = False,
    catalog: CatalogOpt = None,
) -> None:
    """Teacher-force a held-out text through each KV-cache policy and score it against the
    full cache: perplexity, top-1 agreement, KL divergence, bytes held."""
    chosen = [p.strip() for spec in (policies or []) for p in spec.split(",") if p.strip()]
    status: Any = err.status("full cache") if progress_enabled() else nullcontext()
    with status:
        result = tokcost.kvmem_quality(
            model,
            model_dir=model_dir,
            text=text,
            max_tokens=max_tokens,
            prompt=prompt,
            policies=chosen or None,
            residual=residual,
            kv_group_size=kv_group_size,
            gpu=gpu,
            context=context,
            catalog=catalog,
            plot=plot,
            force=force,
            on_progress=(lambda name: status.update(f"evaluating {name}")) if progress_enabled()
            else None,
        )
    if json_out:
        print_json(result.to_dict())
        return
    _render(result)
    if plot is not None:
        err.print(f"wrote {plot}", highlight=False, markup=False)


def _render(result: QualityResult) -> None:
    from rich import box
    from rich.table import Table

    from tokcost.cli.console import print_wide

    human = units.format_bytes
    table = Table(
        title=f"{result.model}: {result.tokens:,} tokens of {result.text}, prompt "
        f"{result.prompt:,}, then one token at a time",
        box=box.SIMPLE_HEAD, pad_edge=False,
    )
    for col in ("policy", "bytes held", "share", "perplexity", "change", "top-1", "KL"):
        table.add_column(col, justify="left" if col == "policy" else "right")
    planned = result.gpu is not None
    if planned:
        table.add_column(f"seqs on {result.gpu}", justify="right")
    full = ["full cache", human(result.baseline_bytes), "100%",
            f"{result.baseline_perplexity:,.3f}", "", "", ""]
    if planned:
        full.append(f"{result.baseline_concurrency or 0:,.1f}")
    table.add_row(*full)
    for row in result.rows:
        q = row.quality
        cells = [row.policy, human(q.bytes_held), f"{q.bytes_ratio:.1%}",
                 f"{q.perplexity:,.3f}", f"{q.perplexity_change:+.2%}",
                 f"{q.top1_agreement:.1%}", f"{q.mean_kl:.4f}"]
        if planned:
            cells.append(f"{row.concurrency or 0:,.1f}")
        table.add_row(*cells)
    print_wide(table)
    notes = ["change = perplexity against the full cache; top-1 = the full cache's most likely "
             "next token kept; KL = mean KL(full || policy) per predicted token"]
    if planned:
        notes.append(f"seqs = sequences of {result.context:,} tokens whose bf16 KV cache fits "
                     f"the memory {result.model}'s weights leave on {result.gpu}")
    notes.extend(in_cli_words(note, ("residual",)) for note in result.notes)
    for note in notes:
        err.print(f"note: {note}", style="dim", highlight=False, markup=False)


def register(app: typer.Typer) -> None:
    """Adds ``quality`` to the ``kvmem`` sub-app (tokcost.cli.kvmem)."""
    from tokcost.cli.kvmem import kvmem_app

    kvmem_app.command("quality", epilog=EPILOG)(quality)
