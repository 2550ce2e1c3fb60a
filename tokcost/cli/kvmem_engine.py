"""The engine part of ``kvmem estimate``'s table: budget, groups or pools, the log lines.

Split from tokcost.cli.kvmem so the engine profiles' rendering stays in one place.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from tokcost import units
from tokcost.cli.console import out
from tokcost.cli.errors import in_cli_words

if TYPE_CHECKING:
    from tokcost import KvEstimate

ENGINE_PARAMS = ("block_size", "max_num_batched_tokens", "mem_fraction_static")
_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "ideal": "ideal"}


def _human(n: float) -> str:
    return units.format_bytes(n)


def engine_header(r: KvEstimate) -> None:
    """One line under the model line: whose accounting, with which block and settings."""
    e = r.engine
    if e is None:
        return
    out.print(f"engine {e.name}: {e.version}", highlight=False, markup=False)
    parts = [f"block {in_cli_words(e.block_size_reason, ENGINE_PARAMS)}"]
    if e.name == "vllm":
        source = in_cli_words(str(e.settings["max_num_batched_tokens_source"]), ENGINE_PARAMS)
        parts.append(f"max_num_batched_tokens {e.settings['max_num_batched_tokens']:,} ({source})")
        if not e.settings["hybrid_manager"]:
            parts.append("hybrid KV cache manager off")
    if e.name == "sglang" and e.settings.get("mem_fraction_static") is not None:
        source = in_cli_words(str(e.settings["mem_fraction_static_source"]), ENGINE_PARAMS)
        parts.append(f"mem_fraction_static {e.settings['mem_fraction_static']:g} ({source})")
    out.print("; ".join(parts), highlight=False, markup=False)


def render_fit(r: KvEstimate) -> None:
    """The budget and what the engine makes of it."""
    f, e = r.fit, r.engine
    if f is None or e is None:
        return
    per_gpu = " per GPU" if r.tp > 1 or r.pp > 1 else ""
    name = _NAMES[e.name]
    if f.memory_bytes is not None and f.util is not None:
        if e.name == "sglang":
            out.print(f"GPU {r.gpu}: {_human(f.memory_bytes)} x {f.util:g} (mem_fraction_static) "
                      f"- weights {_human(f.weights_bytes)} = {_human(f.available_bytes)} for "
                      "the KV pool")
        else:
            out.print(
                f"GPU {r.gpu}: {_human(f.memory_bytes)} x {f.util:g} "
                f"- weights {_human(f.weights_bytes)} - reserve {_human(f.reserve_bytes)} "
                f"= {_human(f.available_bytes)} for the KV cache"
            )
    else:
        out.print(f"KV cache memory{per_gpu}: {_human(f.available_bytes)} (given)")
    if e.name == "vllm":
        _vllm(r)
    elif e.name == "sglang":
        _sglang(r)
    else:
        out.print(
            f"blocks: floor({f.available_bytes:,} / {f.page_bytes:,} B per block) = "
            f"{f.num_blocks:,} -> {f.cache_tokens:,} tokens"
            + ("" if r.layout.uniform
               else " at short context (windowed/linear layers cap long ones)")
        )
    if e.lines:
        out.print(f"{name} logs (max_model_len {e.max_model_len:,}):", highlight=False)
        newer = e.settings.get("logged_tokens") if e.name == "vllm" else None
        for line in e.lines:
            if line.startswith("ValueError"):
                continue
            tag = ""
            if isinstance(newer, dict) and line.startswith("GPU KV cache size"):
                older = newer["v0.20_and_earlier"]
                if newer["v0.21_and_later"] != older:
                    tag = ("   (v0.20 and earlier: num_blocks // groups x block)"
                           if line == f"GPU KV cache size: {older:,} tokens"
                           else "   (v0.21 and later: concurrency x max_model_len)")
            out.print(f"  {line}{tag}", highlight=False, markup=False)
    if e.refuses_to_start and e.refusal:
        if e.refusal_cause == "model_len":
            advice = "lower --context to the model's context window"
        elif e.name == "vllm":
            advice = "lower --max-model-len (--context) or raise --gpu-memory-utilization"
        else:
            advice = "lower --context or raise --mem-fraction-static"
        out.print(f"[red]{name} refuses to start[/red] ({advice}): ", end="", markup=True)
        out.print(e.refusal, highlight=False, markup=False)


def _vllm(r: KvEstimate) -> None:
    e, f = r.engine, r.fit
    assert e is not None and f is not None
    size = int(e.settings["group_size"])
    kinds: Counter[str] = Counter()
    layers: Counter[str] = Counter()
    for g in e.groups:
        kinds[g.kind] += 1
        layers[g.kind] += g.layers
    desc = []
    for kind, n in kinds.items():
        pad = n * size - layers[kind]
        desc.append(f"{n} {kind} ({layers[kind]} layers" + (f" + {pad} padding)" if pad else ")"))
    page = e.groups[0].page_bytes
    out.print(f"vLLM groups: {len(e.groups)} of {size} layer slots: {', '.join(desc)}; "
              f"page {page:,} B ({e.block_size} tokens x 1 layer)", highlight=False)
    out.print(
        f"blocks: floor({f.available_bytes:,} / {page:,} B / {size} layers per group) = "
        f"{f.num_blocks:,} blocks of {f.page_bytes:,} B", highlight=False,
    )
    per = e.settings["blocks_per_request"]
    out.print(f"per request of {e.max_model_len:,} tokens: {per:,} blocks summed over the "
              "groups", highlight=False)


def _sglang(r: KvEstimate) -> None:
    e = r.engine
    assert e is not None
    pools = [f"{g.kind} pool: {g.layers} layers" for g in e.groups]
    s = e.settings
    tokens = [f"full pool {s['full_pool_tokens']:,} tokens"]
    if s.get("swa_pool_tokens") is not None:
        tokens.append(f"SWA pool {s['swa_pool_tokens']:,} tokens "
                      f"(ratio {s['swa_full_tokens_ratio']:g})")
    if s.get("max_mamba_cache_size") is not None:
        tokens.append(f"{s['max_mamba_cache_size']:,} mamba states")
    out.print(f"SGLang pools: {', '.join(pools)}; cell {s['cell_size_bytes']:,} B per token; "
              f"{', '.join(tokens)}", highlight=False)
    if s.get("sliding_layers_in_full_pool"):
        out.print("SGLang keeps this model's sliding-window layers in the full pool (only "
                  "Llama-4, gpt-oss, MiMo-V2, Step-3.5 and Gemma-4 get a sliding-window pool)",
                  highlight=False)
