"""``tokcost attention``: what each head of the reference model attends to on a prompt."""

from __future__ import annotations

from typing import Annotated, Any

import typer

import tokcost
from tokcost.cli import generate as gen
from tokcost.cli.console import err, out, print_json, table
from tokcost.cli.options import CatalogOpt, JsonOpt, PlotForceOpt
from tokcost.errors import install_hint

EPILOG = """
Examples:

  tokcost attention "The baker opens the shop and the baker sells bread"
  tokcost attention --file notes.txt --json
  tokcost attention "the cat sat on the mat, the cat" --plot heads.png \\
    --head L3H0 --head L0H1
  tokcost attention "Once upon a time" -m hf:HuggingFaceTB/SmolLM2-135M --json
  tokcost attention "Once upon a time" --model-dir ./my-model

Scores, per head, averaged over query positions 1..T-1 (0 sees only itself):
  entropy   -sum a ln a of a row, in nats; ent/max = entropy / ln(i+1)
            (1 = uniform)
  dist      mean distance back, in tokens (sum a_ij (i - j)); rel = dist / i
            (0..1)
  first     mass on the first token (attention sink)
  prev      mass on the token just before; self: mass on its own position
  dup       mass on earlier copies of the same token id (rows that have one;
            - if none)
A head is named when a score passes its threshold (printed under the table).
"""


def attention(
    prompt: Annotated[str | None, typer.Argument(
        metavar="PROMPT", help="Text to run ('-' reads stdin; or --file).")] = None,
    file: Annotated[str | None, typer.Option(
        "--file", help="Read the prompt from a file ('-' = stdin).")] = None,
    model: Annotated[str, typer.Option("--model", "-m", help=gen.MODEL_HELP)] = "tiny-ref",
    model_dir: gen.ModelDirOpt = None,
    weights: gen.WeightsOpt = None,
    seed: Annotated[int | None, typer.Option(
        "--seed", help="Seed for random weights (a model without any).")] = None,
    plot: Annotated[str | None, typer.Option("--plot", help="Write heat maps of the heads to "
        f"PNG/SVG/PDF (needs: {install_hint('plot')}).")] = None,
    heads: Annotated[list[str] | None, typer.Option(
        "--head", help="A head to plot, L<layer>H<head> (repeatable; "
        "default: every head of a small model, else the named ones).")] = None,
    force: PlotForceOpt = False,
    json_out: JsonOpt = False,
    catalog: CatalogOpt = None) -> None:
    """Score every attention head on PROMPT: entropy, distance, sinks, previous/duplicate tokens."""
    data, source = gen.read_prompt(prompt, file)
    request = tokcost.AttentionRequest.of(
        prompt=data, prompt_source=source, model=None if model_dir else model,
        model_dir=model_dir, weights=weights, seed=seed, catalog=catalog, plot=plot,
        heads=tuple(heads or ()), force=force)
    gen.warn_replaced(request)
    result = tokcost.attention(request)
    if json_out:
        print_json(result.to_dict())
    else:
        gen.warn_untrained(result, "so the heads show a random model")
        _render(result)
    if result.plot is not None:
        err.print(f"wrote {result.plot} ({len(result.plotted)} heads)", markup=False)


def _render(result: Any) -> None:
    grid = table("head", "entropy", "ent/max", "dist", "rel", "first", "prev", "self", "dup",
                 title=f"{result.model}: {result.layers} layers x {result.attention_heads} "
                 f"heads on {len(result.prompt_ids)} tokens")
    grid.add_column("label")
    for s in result.heads:
        dup = "-" if s.duplicate_token is None else f"{s.duplicate_token:.2f}"
        grid.add_row(s.name, f"{s.entropy:.2f}", f"{s.entropy_norm:.2f}",
                     f"{s.mean_distance:.1f}", f"{s.relative_distance:.2f}",
                     f"{s.first_token:.2f}", f"{s.previous_token:.2f}", f"{s.self_token:.2f}",
                     dup, ", ".join(s.labels))
    out.print(grid)
    sliding = [f"L{i}" for i, kind in enumerate(result.layer_kinds) if kind == "sliding"]
    lines = [f"sliding-window layers (window {result.sliding_window}): {' '.join(sliding)}; "
             "their ent/max and rel are over the keys the window shows"] if sliding else []
    if result.notable:
        lines += ["notable heads:", *(f"  {n.text}" for n in result.notable)]
    else:
        lines.append("no head passes a threshold")
    th = result.thresholds
    lines.append(
        f"thresholds: sink first >= {th['first_token']:g}, previous-token prev >= "
        f"{th['previous_token']:g}, self >= {th['self_token']:g}, duplicate-token dup >= "
        f"{th['duplicate_token']:g}, broad ent/max >= {th['entropy_norm']:g}, local dist <= "
        f"{th['mean_distance']:g} or long-range rel >= {th['relative_distance']:g} (when no "
        "other label fits)")
    for line in lines:
        out.print(line, markup=False, soft_wrap=True)
