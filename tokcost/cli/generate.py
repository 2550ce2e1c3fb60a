"""``tokcost generate``: run the reference model and watch the word-chain loop."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

import tokcost
from tokcost.cli.console import err, out, print_json, warn
from tokcost.cli.options import CatalogOpt, JsonOpt

if TYPE_CHECKING:
    from tokcost import GenerateResult, GenerationStart, GenerationStep

EPILOG = """
Examples:

\b
  tokcost generate "The baker opens the shop"            greedy, streamed, tiny-ref
  tokcost generate "Every morning" --temperature 0.8 --top-p 0.9 --seed 7
  tokcost generate "Every morning" --cache paged --block-size 4 --explain
  tokcost generate "Every morning" --n 4 --temperature 1 --seed 1 --cache paged --json
  tokcost generate "Hello" --cache none --max-new-tokens 8    recompute (no KV cache)
"""

BAR = 20


def generate(
    prompt: Annotated[str, typer.Argument(help="Text to continue ('-' reads stdin).")],
    model: Annotated[
        str, typer.Option("--model", "-m", help="Catalog model to run (tiny-ref ships weights).")
    ] = "tiny-ref",
    max_new_tokens: Annotated[
        int, typer.Option("--max-new-tokens", help="Tokens to generate per sample.")
    ] = 32,
    temperature: Annotated[
        float, typer.Option("--temperature", "-T", help="0 = greedy; higher = more random.")
    ] = 0.0,
    top_k: Annotated[int, typer.Option("--top-k", help="Keep the k likeliest (0 = off).")] = 0,
    top_p: Annotated[
        float, typer.Option("--top-p", help="Keep the smallest set with this mass (1 = off).")
    ] = 1.0,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Seed for repeatable sampling.")
    ] = None,
    cache: Annotated[
        str, typer.Option("--cache", help="KV cache: none (recompute), contiguous, paged.")
    ] = "paged",
    block_size: Annotated[
        int, typer.Option("--block-size", help="Tokens per block of the paged cache.")
    ] = 16,
    n: Annotated[
        int, typer.Option("--n", help="Parallel samples sharing the prompt's cache blocks.")
    ] = 1,
    explain: Annotated[
        bool,
        typer.Option("--explain", help="Show every step: candidates, cache, attention."),
    ] = False,
    top_candidates: Annotated[
        int, typer.Option("--top", help="Candidates shown by --explain.")
    ] = 5,
    weights: Annotated[
        str | None,
        typer.Option("--weights", help="Weights .npz or .safetensors instead of the shipped ones."),
    ] = None,
    json_out: JsonOpt = False,
    catalog: CatalogOpt = None,
) -> None:
    """Continue PROMPT with the numpy reference transformer and its real KV cache."""
    text = sys.stdin.read() if prompt == "-" else prompt
    stream = _Streamer() if not json_out and not explain and n == 1 else None

    def on_start(start: GenerationStart) -> None:
        if json_out:
            return
        if not start.trained:
            warn(f"no trained weights for '{start.model}': using {start.weights}, "
                 "so text is noise")
        if stream is not None:
            stream.prompt = start.prompt_text
        elif explain:
            ids = list(start.prompt_ids)
            out.print(f"prompt: {len(ids)} tokens {ids}", markup=False)
            pieces = (f"{i}:{t!r}" for i, t in zip(ids, start.prompt_tokens, strict=True))
            out.print("  " + " ".join(pieces), markup=False)

    def on_step(step: GenerationStep) -> None:
        if stream is not None:
            stream.push(step.text)
        elif explain and not json_out:
            _explain_step(step, n, block_size, cache)

    result = tokcost.generate(
        text, model=model, catalog=catalog, weights=weights, max_new_tokens=max_new_tokens,
        temperature=temperature, top_k=top_k, top_p=top_p, seed=seed, cache=cache,
        block_size=block_size, n=n, explain=explain, top_candidates=top_candidates,
        on_start=on_start, on_step=on_step,
    )
    if json_out:
        print_json(result.to_dict())
        return
    if stream is not None:
        stream.finish(result.samples[0].text)
    else:
        for s, sample in enumerate(result.samples):
            label = f"[sample {s + 1}] " if n > 1 else ""
            out.print(label + text + sample.text, markup=False)
    if result.cache.value != "none":
        (out if explain else err).print(_cache_line(result, n, block_size), markup=False)


def _cache_line(result: GenerateResult, n: int, block_size: int) -> str:
    kv = result.kv_cache
    line = (
        f"KV cache: {kv.tokens} tokens x {n} sample(s), {kv.bytes:,} B held; "
        f"kvmem estimate {kv.estimate_bytes:,} B"
    )
    if kv.saved_by_sharing:
        line += f" unshared (sharing saved {kv.saved_by_sharing:,} B)"
    if kv.blocks is not None:
        line += (
            f"; {kv.blocks} block{'s' if kv.blocks != 1 else ''} of {block_size} "
            f"({kv.logical_blocks} without sharing, {kv.copy_on_write} copied on write)"
        )
    return line


def _explain_step(step: GenerationStep, n: int, block: int, mode: str) -> None:
    who = f" sample {step.sample + 1}" if n > 1 else ""
    out.print(
        f"\nstep {step.index + 1}{who}: chose {step.token_id} {step.token!r} "
        f"(p={step.prob:.3f})",
        markup=False,
    )
    best = step.top[0].prob if step.top else 1.0
    for c in step.top:
        filled = round(BAR * c.prob / best) if best else 0
        mark = "*" if c.token_id == step.token_id else " "
        out.print(
            f"  {mark} {c.token_id:>6} {c.token!r:<16} "
            f"{'█' * filled}{'·' * (BAR - filled)} {c.prob:.3f}",
            markup=False,
        )
    if mode != "none":
        blocks = ""
        if step.cache_blocks is not None:
            blocks = f", {step.cache_blocks} blocks of {block} ({step.logical_blocks} logical)"
        shared = " before sharing" if n > 1 and mode == "paged" else ""
        out.print(
            f"  cache: {step.cache_tokens} tokens, {step.cache_bytes:,} B{blocks}; "
            f"kvmem estimate {step.estimate_bytes:,} B{shared}",
            markup=False,
        )
    if step.attention:
        layers: dict[int, list[str]] = {}
        for f in step.attention:
            piece = "?" if f.token is None else repr(f.token)
            layers.setdefault(f.layer, []).append(f"h{f.head}→{piece}@{f.position} {f.weight:.2f}")
        for layer, heads in layers.items():
            out.print(f"  attention L{layer}: " + "  ".join(heads), markup=False)


class _Streamer:
    """Print text as tokens arrive; hold back bytes of a half-decoded character."""

    def __init__(self) -> None:
        self.prompt = ""
        self.started = False
        self.shown = 0

    def push(self, text: str) -> None:
        """``text``: the sample's new text so far."""
        if not self.started:
            # The prompt is echoed with the first token, after every input check passed.
            self.started = True
            sys.stdout.write(self.prompt)
        if text.endswith("\ufffd"):
            return  # a multi-byte character is not complete yet
        sys.stdout.write(text[self.shown :])
        sys.stdout.flush()
        self.shown = len(text)

    def finish(self, text: str) -> None:
        if not self.started:
            sys.stdout.write(self.prompt)
        sys.stdout.write(text[self.shown :] + "\n")
        sys.stdout.flush()


def register(app: typer.Typer) -> None:
    app.command("generate", epilog=EPILOG)(generate)
