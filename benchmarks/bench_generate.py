"""Milliseconds per new token of the reference model: no cache, contiguous, paged, and
transformers' CPU eager decode on the same weights; peak memory while generating.

Two shapes, both on seeded random weights (time does not depend on the values):

- ``tiny-ref``: 4 layers, width 128, 4 query / 2 KV heads, vocabulary 1,024. Its window is
  1,024 tokens, so its contexts stop there (longer ones are skipped and said so).
- ``smol-135m``: SmolLM2-135M's Llama shape, 30 layers, width 576, 9 query / 3 KV heads of
  64, MLP 1,536, vocabulary 49,152, tied embeddings (134.5M parameters), a window of 8,192:
  built from a ``RefConfig`` and the reference model's random init, no download.

For each context C one decode step is timed (median of ``--reps``):

- recompute: no cache, the whole context of C tokens runs through the model (up to
  ``--recompute-max``; past it a step takes seconds to minutes on one core);
- contiguous / paged (block 16): the cache holds C - 1 positions, one new token runs;
- transformers: ``LlamaForCausalLM`` in eager mode, float32, one thread, holding the same
  weights, one token on a ``DynamicCache`` of C - 1 positions (when torch and transformers
  import; ``ratio`` = contiguous / transformers, below 1 is faster).

The caches are filled with random keys and values instead of a prefill: a decode step does
the same work on any values, and a 2,048-token prefill of the 135M model costs a minute.
Peak RSS is measured in a child process that builds the model and generates
``--rss-new`` tokens after a ``--rss-prompt``-token prompt with the paged cache (prefill
included), against 1.5x the float32 weights; the high-water mark is reset after the model
is built (Linux ``/proc/self/clear_refs``), so it is the generation's peak.

    python benchmarks/bench_generate.py [--models tiny-ref,smol-135m] [--reps 5]
        [--contexts 32,64,...,2048] [--recompute-max 512] [--no-transformers]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

# One BLAS thread (and one torch thread below): the same single core for both sides, and
# on a shared machine spinning BLAS threads turn small matmuls into noise.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np

from tokcost.reference import (
    CacheSpec,
    ContiguousCache,
    PagedCache,
    RefConfig,
    SamplingParams,
    Transformer,
    generate,
    init_weights,
)

SHAPES = {
    "tiny-ref": dict(layers=4, hidden_size=128, attention_heads=4, kv_heads=2, head_dim=32,
                     vocab_size=1024, context_window=1024),
    "smol-135m": dict(layers=30, hidden_size=576, attention_heads=9, kv_heads=3, head_dim=64,
                      vocab_size=49152, context_window=8192, intermediate_size=1536,
                      rope_theta=100000.0),
}


def config(name: str) -> RefConfig:
    return RefConfig(**SHAPES[name])  # type: ignore[arg-type]


def _median_ms(fn: Callable[[], object], reps: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def _fill(cache: ContiguousCache | PagedCache, cfg: RefConfig, tokens: int,
          rng: np.random.Generator) -> None:
    """``tokens`` random positions in every layer, as a prefill would leave them."""
    shape = (1, cfg.kv_heads, tokens, cfg.head_dim)
    for layer in range(cfg.layers):
        k = rng.standard_normal(shape, dtype=np.float32)
        cache.update(layer, k, rng.standard_normal(shape, dtype=np.float32))
    cache.advance(tokens)


def hf_model(cfg: RefConfig, weights: dict[str, np.ndarray]) -> object | None:
    """transformers' Llama holding ``weights`` (None when torch/transformers are missing)."""
    try:
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM
    except ImportError:
        return None
    torch.set_num_threads(1)
    hc = LlamaConfig(
        vocab_size=cfg.vocab_size, hidden_size=cfg.hidden_size,
        intermediate_size=cfg.ffn_hidden, num_hidden_layers=cfg.layers,
        num_attention_heads=cfg.attention_heads, num_key_value_heads=cfg.kv_heads,
        head_dim=cfg.head_dim, max_position_embeddings=cfg.context_window,
        rms_norm_eps=cfg.norm_eps, rope_theta=cfg.rope_theta,
        tie_word_embeddings=cfg.tie_embeddings, attn_implementation="eager",
    )
    model = LlamaForCausalLM(hc).eval()
    names = {"attn_norm": "input_layernorm", "mlp_norm": "post_attention_layernorm",
             "wq": "self_attn.q_proj", "wk": "self_attn.k_proj", "wv": "self_attn.v_proj",
             "wo": "self_attn.o_proj", "w_gate": "mlp.gate_proj", "w_up": "mlp.up_proj",
             "w_down": "mlp.down_proj"}
    state = {"model.embed_tokens.weight": weights["tok_emb"], "model.norm.weight": weights["norm"]}
    for i in range(cfg.layers):
        for ours, theirs in names.items():
            w = weights[f"layers.{i}.{ours}"]
            # ours multiply on the right (h @ W); torch's Linear keeps W transposed
            state[f"model.layers.{i}.{theirs}.weight"] = w if w.ndim == 1 else w.T
    if "lm_head" in weights:
        state["lm_head.weight"] = weights["lm_head"].T
    tensors = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state.items()}
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    assert not unexpected and all(m == "lm_head.weight" for m in missing), (missing, unexpected)
    if cfg.tie_embeddings:
        model.tie_weights()
    return model


def _check_same_logits(model: Transformer, hf: object, cfg: RefConfig) -> float:
    """Max |logit difference| on a short prompt: the two hold the same model."""
    import torch

    ids = np.arange(1, 9, dtype=np.int64)[None] % cfg.vocab_size
    ours = model.forward(ids).logits
    with torch.no_grad():
        theirs = hf(torch.from_numpy(ids)).logits.numpy()  # type: ignore[operator]
    return float(np.abs(ours - theirs).max())


def _hf_step_ms(hf: object, cfg: RefConfig, c: int, reps: int, rng: np.random.Generator
                ) -> float:
    import torch
    from transformers import DynamicCache

    cache = DynamicCache()
    shape = (1, cfg.kv_heads, c - 1, cfg.head_dim)
    for layer in range(cfg.layers):
        cache.update(torch.from_numpy(rng.standard_normal(shape, dtype=np.float32)),
                     torch.from_numpy(rng.standard_normal(shape, dtype=np.float32)), layer)
    one = torch.tensor([[1]])
    import inspect

    # transformers 5.x renames past_key_values to cache (the old name warns)
    key = "cache" if "cache" in inspect.signature(hf.forward).parameters else "past_key_values"  # type: ignore[attr-defined]

    def step() -> object:
        with torch.no_grad():
            return hf(input_ids=one, use_cache=True, **{key: cache})  # type: ignore[operator]

    return _median_ms(step, reps)


ONE = np.array([[1]], dtype=np.int64)  # the new token of every timed step


def bench(name: str, contexts: list[int], reps: int, block: int, recompute_max: int,
          use_hf: bool) -> None:
    cfg = config(name)
    weights = init_weights(cfg, seed=0)
    model = Transformer(cfg, weights)
    rng = np.random.default_rng(0)
    hf = hf_model(cfg, weights) if use_hf else None
    print(f"\n{name}: {cfg.params:,} parameters, window {cfg.context_window:,}; numpy "
          f"{np.__version__}, one thread; median of {reps} steps, ms per new token")
    if hf is not None:
        import torch
        import transformers

        diff = _check_same_logits(model, hf, cfg)
        print(f"transformers {transformers.__version__} / torch {torch.__version__} eager, "
              f"float32, one thread, same weights (max |logit diff| {diff:.1e})")
    elif use_hf:
        print("transformers or torch not installed: no comparison (pip install torch "
              "transformers)")
    print(f"{'context':>8} {'recompute':>10} {'contiguous':>11} {'paged':>8} "
          f"{'transformers':>13} {'ratio':>6} {'cache speedup':>14}")
    del weights
    for c in contexts:
        if c > cfg.context_window:
            print(f"{c:>8}  skipped: past {name}'s {cfg.context_window:,}-token window")
            continue
        # the timed steps (warm-up + reps) must stay inside the window
        c = min(c, cfg.context_window - reps - 2)
        full = float("nan")
        if c <= recompute_max:
            ids = rng.integers(0, cfg.vocab_size, size=(1, c), dtype=np.int64)
            full = _median_ms(lambda ids=ids: model.forward(ids), reps)
        contiguous = ContiguousCache(cfg, capacity=c + reps + 1)
        _fill(contiguous, cfg, c - 1, rng)
        cont = _median_ms(lambda cache=contiguous: model.forward(ONE, cache), reps)
        paged_cache = PagedCache(cfg, block_size=block, num_blocks=-(-(c + reps + 1) // block))
        _fill(paged_cache, cfg, c - 1, rng)
        paged = _median_ms(lambda cache=paged_cache: model.forward(ONE, cache), reps)
        contiguous = paged_cache = None  # type: ignore[assignment]  # free before the next C
        theirs = _hf_step_ms(hf, cfg, c, reps, rng) if hf is not None else float("nan")

        def show(x: float, width: int) -> str:
            return f"{x:>{width}.2f}" if x == x else f"{'-':>{width}}"

        ratio = f"{cont / theirs:>5.2f}x" if theirs == theirs else f"{'-':>6}"
        speedup = f"{full / cont:>13.1f}x" if full == full else f"{'-':>14}"
        print(f"{c:>8} {show(full, 10)} {show(cont, 11)} {show(paged, 8)} "
              f"{show(theirs, 13)} {ratio} {speedup}")


def rss_child(name: str, prompt: int, new: int) -> None:
    """Build ``name``, reset the memory high-water mark, generate, print the peak as JSON."""
    cfg = config(name)
    base = _status("VmRSS")  # the interpreter, numpy and tokcost, before any weights
    model = Transformer(cfg, init_weights(cfg, seed=0))
    reset = True
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")  # resets VmHWM to the current RSS
    except OSError:
        reset = False
    ids = list(np.random.default_rng(0).integers(0, cfg.vocab_size, size=prompt))
    t = time.perf_counter()
    generate(model, ids, SamplingParams(max_new_tokens=new), CacheSpec(cache="paged"))
    seconds = time.perf_counter() - t
    peak = _status("VmHWM")
    if not peak:
        import resource

        peak, reset = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, False
    print(json.dumps({"peak": peak, "base": base, "reset": reset, "weights": cfg.params * 4,
                      "seconds": seconds}))


def _status(field: str) -> int:
    """A /proc/self/status memory field in bytes (0 where there is none)."""
    try:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) * 1024 for line in fh if line.startswith(field))
    except (OSError, StopIteration):
        return 0


def rss(name: str, prompt: int, new: int) -> None:
    cfg = config(name)
    prompt = min(prompt, cfg.context_window - new)
    out = subprocess.run([sys.executable, __file__, "--rss-child", name, str(prompt), str(new)],
                         capture_output=True, text=True, check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    limit = 1.5 * r["weights"]
    since = "since the model was built" if r["reset"] else "whole process (no reset)"
    print(f"{name}: peak RSS generating {new} tokens after a {prompt}-token prompt (paged, "
          f"{r['seconds']:.1f} s): {r['peak'] / 2**20:,.0f} MiB ({since}; the interpreter "
          f"with numpy alone {r['base'] / 2**20:,.0f} MiB); float32 weights "
          f"{r['weights'] / 2**20:,.0f} MiB, 1.5x = {limit / 2**20:,.0f} MiB: "
          f"{r['peak'] / r['weights']:.2f}x, {'within' if r['peak'] <= limit else 'OVER'}")


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--rss-child":
        rss_child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        return
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--models", default="tiny-ref,smol-135m")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--contexts", default="32,64,128,256,512,1024,2048")
    ap.add_argument("--block-size", type=int, default=16)
    ap.add_argument("--recompute-max", type=int, default=512,
                    help="longest context timed without a cache")
    ap.add_argument("--no-transformers", action="store_true")
    ap.add_argument("--rss-prompt", type=int, default=1024)
    ap.add_argument("--rss-new", type=int, default=16)
    args = ap.parse_args()
    contexts = [int(c) for c in args.contexts.split(",")]
    for name in args.models.split(","):
        bench(name, contexts, args.reps, args.block_size, args.recompute_max,
              not args.no_transformers)
    print()
    for name in args.models.split(","):
        rss(name, args.rss_prompt, args.rss_new)


if __name__ == "__main__":
    main()
