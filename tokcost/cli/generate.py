"""``tokcost generate``: run the reference model and watch the word-chain loop."""

from __future__ import annotations

import os
import sys
import textwrap
from typing import TYPE_CHECKING, Annotated, Any

import typer

import tokcost
from tokcost.cli.console import err, out, print_json, warn
from tokcost.cli.options import CatalogOpt, JsonOpt, count_option
from tokcost.errors import UsageError

if TYPE_CHECKING:
    from tokcost import AttentionRequest, GenerateRequest

MODEL_HELP = ("Catalog model to run (tiny-ref ships weights), or hf:ORG/REPO from the local "
              "Hugging Face cache.")
ModelDirOpt = Annotated[str | None, typer.Option("--model-dir", help="A Hugging Face model folder "
    "(config.json, *.safetensors, tokenizer.json) instead of --model.")]
WeightsOpt = Annotated[str | None, typer.Option(
    "--weights", help="Weights .npz or .safetensors instead of the shipped ones.")]


def read_prompt(prompt: str | None, file: str | None = None) -> tuple[bytes, str]:
    """The prompt's bytes and what to call them: PROMPT, stdin ('-', or piped) or --file."""
    if prompt is not None and file is not None:
        raise UsageError("give PROMPT or --file, not both")
    source = file if file is not None else prompt
    if source is None:
        if sys.stdin.isatty():
            raise UsageError("give PROMPT, --file PATH, or pipe text on stdin")
        source = "-"
    if source == "-":
        return sys.stdin.buffer.read(), "stdin"
    if file is None:
        # argv holds undecodable bytes as surrogates (PEP 383); fsencode gives the bytes back.
        return os.fsencode(source), "the prompt"
    try:
        with open(file, "rb") as fh:
            return fh.read(), file
    except IsADirectoryError:
        raise UsageError(f"--file {file} is a folder; give a text file") from None
    except FileNotFoundError:
        raise UsageError(f"--file {file}: no such file") from None
    except OSError as exc:
        raise UsageError(f"--file {file}: cannot read it ({exc.strerror})") from None


def warn_replaced(request: GenerateRequest | AttentionRequest) -> None:
    bad = request.invalid_utf8_bytes
    if bad:
        warn(f"{request.prompt_source}: {bad} {'byte' if bad == 1 else 'bytes'} of invalid "
             "UTF-8, replaced with U+FFFD")


def warn_untrained(result: Any, shows: str) -> None:
    if not result.trained:
        warn(f"no trained weights for '{result.model}': using {result.weights}, {shows}")


# The notation of --explain, printed once above its steps and in --help.
LEGEND = (("*", "the chosen token; × a candidate the draw could not pick (cut by --top-k or "
           "--top-p, or its probability rounds to 0)"),
          ("p", "the distribution drawn from: softmax(logits / temperature), cut by --top-k and "
           "--top-p, renormalized to sum to 1; model = the softmax of the raw logits"),
          ("greedy", "--temperature 0: the likeliest token is taken and nothing is drawn; the bars "
           "show the model's probabilities"),
          ("cache", "after each step (with --n, once the last sample's events are shown): tokens "
           "held per sample, bytes held by all samples, physical blocks (logical: without "
           "sharing), beside kvmem estimate"),
          ("paged", "block events as they happen: allocated from the pool, shared by the --n "
           "samples, copied on write, dropped once outside a sliding window (#N: a physical block, "
           "with the positions it holds; sliding layers keep their own block table)"),
          ("attention Ll: hH→'tok'@P W", "in layer l, query head H of the newest token puts its "
           "largest attention weight W on 'tok', at position P (0 = the first prompt token)"))
HEADS_HELP = (
    "query heads share KV heads under grouped-query attention (the cache holds KV heads "
    "only): tiny-ref's 4 query heads h0-h3 read 2 KV heads, h0-h1 KV head 0, h2-h3 KV head 1")


def _legend_lines(extra: str, cache: str | None = None) -> list[str]:
    """LEGEND and a heads line, indented, wrapped for 80 columns; with ``cache``, what it shows."""
    drop = {"none": {"cache", "paged"}, "contiguous": {"paged"}}.get(cache or "", set())
    entries = [*(e for e in LEGEND if e[0] not in drop), ("heads", extra)]
    return [textwrap.fill(f"{term}  {text}", width=78, initial_indent="  ",
                          subsequent_indent="      ") for term, text in entries]


EPILOG = (
    """
Examples:

  tokcost generate "The baker opens the shop"
      greedy, streamed, tiny-ref
  tokcost generate "Every morning" --temperature 0.8 --top-p 0.9 --seed 7
  tokcost generate "Every morning" --cache paged --block-size 4 --explain
  tokcost generate "Every morning" --n 4 --temperature 1 --seed 1 \\
    --cache paged --json
  tokcost generate "Hello" --cache none --max-new-tokens 8
      recompute (no KV cache)
  tokcost generate "Hi" -m hf:HuggingFaceTB/SmolLM2-135M-Instruct \\
    --chat-template
  tokcost generate "Once upon" --model-dir ./my-model
      a model folder

Reading --explain:

"""
    + "\n".join(_legend_lines(HEADS_HELP))
    + "\n")

BAR = 20


def generate(
    prompt: Annotated[str, typer.Argument(
        metavar="PROMPT", help="Text to continue ('-' reads stdin).")],
    # "[default: tiny-ref]" is written out: --model-dir may replace the model.
    model: Annotated[str | None, typer.Option(
        "--model", "-m", help=f"{MODEL_HELP} [default: tiny-ref]")] = None,
    max_new_tokens: Annotated[int, count_option(
        "--max-new-tokens", help="Tokens to generate per sample (32, 1k).")] = 32,
    temperature: Annotated[float, typer.Option(
        "--temperature", "-T", help="0 = greedy; higher = more random.")] = 0.0,
    top_k: Annotated[int, count_option("--top-k", help="Keep the k likeliest (0 = off).")] = 0,
    top_p: Annotated[float, typer.Option(
        "--top-p", help="Keep the smallest set with this mass (1 = off).")] = 1.0,
    seed: Annotated[int | None, typer.Option(help="Seed for repeatable sampling.")] = None,
    cache: Annotated[str, typer.Option(
        help="KV cache: none (recompute), contiguous, paged.")] = "paged",
    block_size: Annotated[int, count_option(
        "--block-size", help="Tokens per block of the paged cache.")] = 16,
    n: Annotated[int, count_option(
        "--n", help="Parallel samples sharing the prompt's cache blocks.")] = 1,
    explain: Annotated[bool, typer.Option("--explain", help="Show every step: the distribution "
        "sampled from, cache blocks, attention (notation below).")] = False,
    top_candidates: Annotated[int, count_option(
        "--top", help="Candidates shown by --explain.")] = 5,
    weights: WeightsOpt = None,
    model_dir: ModelDirOpt = None,
    chat: Annotated[bool, typer.Option("--chat-template", help="Send PROMPT as a user message "
        "through the checkpoint's chat template (tokenizer_config.json).")] = False,
    json_out: JsonOpt = False,
    catalog: CatalogOpt = None) -> None:
    """Continue PROMPT with the numpy reference transformer and its real KV cache."""
    data, source = read_prompt(prompt)
    stream = _Streamer() if not json_out and not explain and n == 1 else None

    def on_start(start: Any) -> None:
        # Every input check has passed: warnings now cannot precede an error.
        _warn_sampling(n, temperature, top_k, top_p)
        if json_out:
            return
        warn_untrained(start, "so text is noise")
        if stream is not None:
            stream.prompt = start.prompt_text
        elif explain:
            pairs = zip(start.prompt_ids, start.prompt_tokens, strict=True)
            out.print("\n".join([*_legend(start, cache), f"\nprompt: {len(start.prompt_ids)} "
                                 f"tokens {list(start.prompt_ids)}",
                                 "  " + " ".join(f"{i}:{t!r}" for i, t in pairs)]), markup=False)

    def on_step(step: Any) -> None:
        if stream is not None:
            stream.push(step.text)
        elif explain and not json_out:
            out.print("\n".join(_explain_step(step, n, block_size, cache)), markup=False)

    request = tokcost.GenerateRequest.of(
        prompt=data, prompt_source=source, model=model, model_dir=model_dir, weights=weights,
        catalog=catalog, max_new_tokens=max_new_tokens, temperature=temperature, top_k=top_k,
        top_p=top_p, seed=seed, n=n, cache=cache, block_size=block_size, explain=explain,
        top_candidates=top_candidates, chat=chat, on_start=on_start, on_step=on_step)
    warn_replaced(request)
    result = tokcost.generate(request)
    if json_out:
        print_json(result.to_dict())
        return
    if stream is not None:
        stream.push(result.samples[0].text, end="\n")
    else:
        for s, sample in enumerate(result.samples):
            label = f"[sample {s + 1}] " if n > 1 else ""
            out.print(label + request.text + sample.text, markup=False)
    if result.cache.value != "none":
        (out if explain else err).print(_cache_line(result, n, block_size), markup=False)


def _warn_sampling(n: int, temperature: float, top_k: int, top_p: float) -> None:
    if temperature == 0 and (top_k or top_p < 1):
        warn("--top-k and --top-p have no effect with greedy decoding (--temperature 0); "
             "set --temperature above 0 to sample")
    if n > 1 and (temperature == 0 or top_k == 1):
        why, fix = (("greedy decoding (--temperature 0)", "set --temperature above 0")
                    if temperature == 0 else ("--top-k 1", "set --top-k 0 (off) or above 1"))
        warn(f"--n {n} with {why} gives {n} identical samples; {fix} to sample")


def _legend(start: Any, cache: str) -> list[str]:
    """The legend, with the running model's heads in place of tiny-ref's."""
    nh, nkv = start.attention_heads, start.kv_heads
    heads = HEADS_HELP
    if nh and nkv:
        g = nh // nkv
        if g == 1:
            heads = f"{start.model} has {nh} query heads, each with its own KV head"
        else:
            reads = ", ".join(f"h{k * g}-h{k * g + g - 1} KV head {k}" for k in range(nkv))
            heads = (f"{start.model}'s {nh} query heads share {nkv} KV head"
                     f"{'s' if nkv != 1 else ''} (grouped-query attention; the cache holds "
                     f"KV heads only): {reads}")
    return ["legend (also in --help):", *_legend_lines(heads, cache)]


def _cache_line(result: Any, n: int, block_size: int) -> str:
    kv = result.kv_cache
    line = (f"KV cache: {kv.tokens} token{_s(kv.tokens)} x {n} sample{_s(n)}, {kv.bytes:,} B "
            f"held; kvmem estimate {kv.estimate_bytes:,} B")
    if kv.saved_by_sharing:
        line += f" unshared (sharing saved {kv.saved_by_sharing:,} B)"
    if kv.blocks is not None:
        line += (f"; {kv.blocks} block{_s(kv.blocks)} of {block_size} "
                 f"({kv.logical_blocks} without sharing, {kv.copy_on_write} copied on write)")
    return line


_EXCLUDED = {"top_k": "excluded by --top-k", "top_p": "excluded by --top-p",
             "zero": "p rounds to 0", "greedy": "not the likeliest"}


def _explain_step(step: Any, n: int, block: int, mode: str) -> list[str]:
    who = f" sample {step.sample + 1}" if n > 1 else ""
    head = f"\nstep {step.index + 1}{who}: chose {step.token_id} {step.token!r} "
    if step.greedy:
        lines = [head + f"greedy: the likeliest token (model p={_p(step.model_prob)})"]
    else:
        lines = [head + f"(p={_p(step.prob)}, model {_p(step.model_prob)}; drawn from "
                 f"{step.candidates} candidate{_s(step.candidates)})"]
    # Greedy draws nothing: its rows show what the model thought of the alternatives.
    shown = [c.model_prob if step.greedy else c.prob for c in step.top]
    best = max(shown, default=0.0) or 1.0
    for c, p in zip(step.top, shown, strict=True):
        mark, model = "*" if c.token_id == step.token_id else " ", f"  model {_p(c.model_prob)}"
        if step.greedy or c.excluded is None:
            filled = round(BAR * p / best)
            bar = f"{'█' * filled}{'·' * (BAR - filled)} {_p(p)}"
            model = "" if step.greedy else model
        else:
            mark, bar = "×", f"{_EXCLUDED.get(c.excluded, c.excluded):<{BAR + 6}}"
        lines.append(f"  {mark} {c.token_id:>6} {c.token!r:<16} {bar}{model}")
    lines += _event_lines(step, n, block)
    # The samples share one forward pass, so one cache state per step, after the last sample.
    if mode != "none" and step.sample == n - 1:
        blocks = ("" if step.cache_blocks is None else
                  f", {step.cache_blocks} block{_s(step.cache_blocks)} of {block} "
                  f"({step.logical_blocks} logical)")
        shared = " before sharing" if n > 1 and mode == "paged" else ""
        label = "cache" if n == 1 else f"cache after step {step.index + 1}, all {n} samples"
        lines.append(f"  {label}: {step.cache_tokens} token{_s(step.cache_tokens)}, "
                     f"{step.cache_bytes:,} B{blocks}; "
                     f"kvmem estimate {step.estimate_bytes:,} B{shared}")
    layers: dict[int, list[str]] = {}
    for f in step.attention:
        piece = "?" if f.token is None else repr(f.token)
        layers.setdefault(f.layer, []).append(f"h{f.head}→{piece}@{f.position} {f.weight:.2f}")
    lines += [f"  attention L{layer}: " + "  ".join(heads) for layer, heads in layers.items()]
    return lines


def _p(p: float) -> str:
    """A probability in 5 characters; a drawable one never reads 0.000."""
    return f"{p:.3f}" if p >= 0.0005 or p == 0 else f"{p:.0e}"


def _s(count: int) -> str:
    return "" if count == 1 else "s"


def _event_lines(step: Any, n: int, block: int) -> list[str]:
    """The step's block events, one line per kind and holder: allocations, the prompt's
    drops (while it is prefilled), shares, copies, the samples' drops."""
    def span(e: Any) -> str:
        return f"positions {e.block * block}-{e.block * block + block - 1}"
    def owner(sample: int | None) -> str:
        return "the prompt" if sample is None else (
            f"sample {sample + 1}" if n > 1 else "the sequence")

    by: dict[tuple[str, str, int | None], list[Any]] = {}
    for e in step.events:
        by.setdefault((e.kind, e.group, None if e.kind == "share" else e.sample), []).append(e)
    lines: list[str] = []
    for kind, prompt in (("allocate", None), ("free", True), ("share", None),
                         ("copy_on_write", None), ("free", False)):
        for (k, group, sample), es in by.items():
            if k != kind or (prompt is not None and prompt != (sample is None)):
                continue
            head = "  paged (sliding layers):" if group == "sliding" else "  paged:"
            if kind == "allocate":
                blocks = ", ".join(f"#{e.physical} ({span(e)})" for e in es)
                lines.append(f"{head} allocated block{_s(len(es))} {blocks} for {owner(sample)}")
            elif kind == "free":
                blocks = ", ".join(f"#{e.physical} ({span(e)}" + (")" if e.holders == 0 else
                                   f"; {e.holders} holder{_s(e.holders)} left)") for e in es)
                back = "; back in the pool" if all(e.holders == 0 for e in es) else ""
                lines.append(f"{head} {owner(sample)} drops block{_s(len(es))} {blocks}: "
                             f"outside the window of position {es[-1].position}{back}")
            elif kind == "share":
                ids, holders = " ".join(f"#{e.physical}" for e in es), es[0].holders
                lines.append(f"{head} {holders} samples share the prompt's block{_s(len(es))} "
                             f"{ids} (reference count {holders}; nothing copied)")
            else:
                lines += [f"{head} copy-on-write: {owner(e.sample)} writes position {e.position} "
                          f"into shared block #{e.source} ({span(e)}), so it gets a copy, "
                          f"#{e.physical}; #{e.source} keeps {e.holders} holder{_s(e.holders)}"
                          for e in es]
    return lines


class _Streamer:
    """Print text as tokens arrive; hold back bytes of a half-decoded character."""

    def __init__(self) -> None:
        self.prompt: str | None = ""  # echoed with the first token, once every check passed
        self.shown = 0

    def push(self, text: str, end: str = "") -> None:
        if self.prompt is not None:
            sys.stdout.write(self.prompt)
            self.prompt = None
        if text.endswith("\ufffd") and not end:
            return  # a multi-byte character is not complete yet
        sys.stdout.write(text[self.shown :] + end)
        sys.stdout.flush()
        self.shown = len(text)
