"""``tokcost generate``: run the reference model and watch the word-chain loop."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer

from tokcost.cli.console import out, print_json, warn
from tokcost.cli.options import CatalogOpt, JsonOpt

if TYPE_CHECKING:
    from tokcost.adapters.base import Tokenizer
    from tokcost.reference import GenerationResult, Step

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
    samples: Annotated[
        int, typer.Option("--n", help="Parallel samples sharing the prompt's cache blocks.")
    ] = 1,
    explain: Annotated[
        bool,
        typer.Option("--explain", help="Show every step: candidates, cache, attention."),
    ] = False,
    top: Annotated[int, typer.Option("--top", help="Candidates shown by --explain.")] = 5,
    weights: Annotated[
        str | None,
        typer.Option("--weights", help="Weights .npz or .safetensors instead of the shipped ones."),
    ] = None,
    json_out: JsonOpt = False,
    catalog: CatalogOpt = None,
) -> None:
    """Continue PROMPT with the numpy reference transformer and its real KV cache."""
    from tokcost.catalog import load_catalog
    from tokcost.errors import UsageError
    from tokcost.reference import CACHE_MODES, SamplingParams
    from tokcost.reference import generate as run
    from tokcost.reference.from_catalog import (
        estimate_cache_bytes,
        load_model,
        load_tokenizer,
    )

    if cache not in CACHE_MODES:
        raise UsageError(f"unknown --cache '{cache}'; use one of: {', '.join(CACHE_MODES)}")
    if top < 1:
        raise UsageError(f"--top must be >= 1, got {top}")
    text = sys.stdin.read() if prompt == "-" else prompt
    entry = load_catalog(catalog).resolve(model)
    loaded = load_model(entry, weights=weights, seed=seed or 0)
    if not loaded.trained and not json_out:
        warn(f"no trained weights for '{entry.id}': using {loaded.weights}, so text is noise")
    tok = load_tokenizer(entry, loaded.model.cfg)
    ids = tok.encode(text)
    sampling = SamplingParams(temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
    stream = _Streamer(tok, ids) if not json_out and not explain and samples == 1 else None

    def on_step(step: Step) -> None:
        if stream is not None:
            stream.push(step.token_id)
        elif explain and not json_out:
            _explain_step(step, tok, ids_so_far, block_size, cache, predict)
        if explain:
            ids_so_far[step.sample].append(step.token_id)

    ids_so_far: list[list[int]] = [list(ids) for _ in range(samples)]
    reserved = len(ids) + max_new_tokens - 1

    def predict(tokens: int) -> int:
        """kvmem estimate for what the cache holds after ``tokens`` tokens."""
        if cache == "contiguous":
            return int(estimate_cache_bytes(entry, reserved, batch=samples))
        return int(estimate_cache_bytes(entry, tokens, block_size=block_size, batch=samples))

    if explain and not json_out:
        out.print(f"prompt: {len(ids)} tokens {ids}", markup=False)
        out.print("  " + " ".join(f"{i}:{_piece(tok, i)}" for i in ids), markup=False)
    result = run(
        loaded.model,
        ids,
        max_new_tokens=max_new_tokens,
        cache=cache,
        block_size=block_size,
        n=samples,
        sampling=sampling,
        explain=explain,
        top_candidates=top,
        on_step=on_step,
    )
    if stream is not None:
        stream.finish()
    tokens = result.cache_tokens
    estimate = _estimate(entry, result, samples, estimate_cache_bytes)
    if json_out:
        print_json(
            _as_json(entry.id, loaded.weights, text, tok, result, sampling, estimate, explain)
        )
        return
    if stream is None:
        for s, new in enumerate(result.samples):
            label = f"[sample {s + 1}] " if samples > 1 else ""
            out.print(label + text + tok.decode(new), markup=False)
    if cache != "none":
        line = (
            f"KV cache: {tokens} tokens x {samples} sample(s), {result.cache_bytes:,} B held; "
            f"kvmem estimate {estimate['estimate_bytes']:,} B"
        )
        if estimate.get("saved_by_sharing"):
            line += f" unshared (sharing saved {estimate['saved_by_sharing']:,} B)"
        if result.cache_blocks is not None:
            line += (
                f"; {result.cache_blocks} block{'s' if result.cache_blocks != 1 else ''} "
                f"of {block_size} "
                f"({result.logical_blocks} without sharing, {result.copy_on_write} copied on write)"
            )
        (out if explain else _stderr()).print(line, markup=False)


def _stderr() -> Any:
    from tokcost.cli.console import err

    return err


def _estimate(entry: Any, result: GenerationResult, n: int, est: Any) -> dict[str, Any]:
    """What ``kvmem estimate`` predicts for this cache, beside what it holds."""
    tokens = result.cache_tokens
    if result.cache_mode == "none" or tokens == 0:
        return {"estimate_bytes": 0, "matches": True}
    if result.cache_mode == "contiguous":
        # The contiguous cache reserves prompt + new tokens for every sample.
        reserved = result.cache_reserved_tokens
        predicted = est(entry, reserved, batch=n)
        return {
            "estimate_bytes": predicted,
            "matches": predicted == result.cache_bytes,
            "tokens_reserved": reserved,
        }
    per_sample = est(entry, tokens, block_size=result.block_size)
    held_unshared = per_sample * n
    return {
        "estimate_bytes": held_unshared,
        "estimate_bytes_per_sample": per_sample,
        # One sample: exactly the estimate. n samples: less, by the shared prompt blocks.
        "matches": result.cache_bytes == held_unshared
        if n == 1
        else result.cache_bytes <= held_unshared,
        "saved_by_sharing": held_unshared - result.cache_bytes,
    }


def _piece(tok: Tokenizer, token_id: int) -> str:
    return repr(tok.decode([token_id]))


def _explain_step(
    step: Step,
    tok: Tokenizer,
    seqs: list[list[int]],
    block: int,
    mode: str,
    predict: Callable[[int], int],
) -> None:
    seq = seqs[step.sample]
    who = f" sample {step.sample + 1}" if len(seqs) > 1 else ""
    out.print(
        f"\nstep {step.index + 1}{who}: chose {step.token_id} {_piece(tok, step.token_id)} "
        f"(p={step.prob:.3f})",
        markup=False,
    )
    best = step.top[0][1] if step.top else 1.0
    for tid, p in step.top:
        filled = round(BAR * p / best) if best else 0
        mark = "*" if tid == step.token_id else " "
        out.print(
            f"  {mark} {tid:>6} {_piece(tok, tid):<16} "
            f"{'█' * filled}{'·' * (BAR - filled)} {p:.3f}",
            markup=False,
        )
    if mode != "none":
        blocks = ""
        if step.cache_blocks is not None:
            blocks = f", {step.cache_blocks} blocks of {block} ({step.logical_blocks} logical)"
        shared = " before sharing" if len(seqs) > 1 and mode == "paged" else ""
        out.print(
            f"  cache: {step.cache_tokens} tokens, {step.cache_bytes:,} B{blocks}; "
            f"kvmem estimate {predict(step.cache_tokens):,} B{shared}",
            markup=False,
        )
    if step.focus:
        layers: dict[int, list[str]] = {}
        for f in step.focus:
            piece = _piece(tok, seq[f.position]) if f.position < len(seq) else "?"
            layers.setdefault(f.layer, []).append(f"h{f.head}→{piece}@{f.position} {f.weight:.2f}")
        for layer, heads in layers.items():
            out.print(f"  attention L{layer}: " + "  ".join(heads), markup=False)


class _Streamer:
    """Print text as tokens arrive; hold back bytes of a half-decoded character."""

    def __init__(self, tok: Tokenizer, prompt_ids: list[int]) -> None:
        self.tok = tok
        self.prompt = prompt_ids
        self.ids: list[int] = []
        self.shown = 0

    def push(self, token_id: int) -> None:
        if not self.ids:
            # The prompt is echoed with the first token, after every input check passed.
            sys.stdout.write(self.tok.decode(self.prompt))
        self.ids.append(token_id)
        text = self.tok.decode(self.ids)
        if text.endswith("\ufffd"):
            return  # a multi-byte character is not complete yet
        sys.stdout.write(text[self.shown :])
        sys.stdout.flush()
        self.shown = len(text)

    def finish(self) -> None:
        if not self.ids:
            sys.stdout.write(self.tok.decode(self.prompt))
        text = self.tok.decode(self.ids)
        sys.stdout.write(text[self.shown :] + "\n")
        sys.stdout.flush()


def _as_json(
    model_id: str,
    weights: str,
    text: str,
    tok: Tokenizer,
    r: GenerationResult,
    sampling: Any,
    estimate: dict[str, Any],
    explain: bool,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "model": model_id,
        "weights": weights,
        "tokenizer": tok.name,
        "prompt": text,
        "prompt_tokens": len(r.prompt_ids),
        "prompt_ids": r.prompt_ids,
        "cache": r.cache_mode,
        "block_size": r.block_size,
        "sampling": {
            "temperature": sampling.temperature,
            "top_k": sampling.top_k,
            "top_p": sampling.top_p,
            "seed": sampling.seed,
        },
        "samples": [{"text": tok.decode(s), "token_ids": s} for s in r.samples],
        "kv_cache": {
            "tokens": r.cache_tokens,
            "bytes": r.cache_bytes,
            "bytes_per_sample": r.cache_bytes_per_sample,
            "blocks": r.cache_blocks,
            "logical_blocks": r.logical_blocks,
            "copy_on_write": r.copy_on_write,
            **estimate,
        },
    }
    if explain:
        data["steps"] = [
            {
                "index": s.index,
                "sample": s.sample,
                "token_id": s.token_id,
                "token": tok.decode([s.token_id]),
                "prob": round(s.prob, 6),
                "top": [
                    {"token_id": i, "token": tok.decode([i]), "prob": round(p, 6)} for i, p in s.top
                ],
                "cache_tokens": s.cache_tokens,
                "cache_bytes": s.cache_bytes,
                "cache_blocks": s.cache_blocks,
                "attention": [
                    {
                        "layer": f.layer,
                        "head": f.head,
                        "position": f.position,
                        "weight": round(f.weight, 4),
                    }
                    for f in s.focus
                ],
            }
            for s in r.steps
        ]
    return data


def register(app: typer.Typer) -> None:
    app.command("generate", epilog=EPILOG)(generate)
