"""Time per new token of the reference model with and without a KV cache.

For each context length C, one decode step is timed three ways on the tiny-ref
shape (4 layers, width 128, 4 query heads, 2 KV heads):

- recompute: no cache, the whole context of C tokens runs through the model;
- contiguous: the cache holds C - 1 tokens, one new token runs;
- paged: the same with a block table (block 16), gathering blocks every step.

The cached step should stay close to flat while recompute grows with C (target:
>= 10x faster at C = 512). Medians of ``--reps`` runs; numbers from a shared,
loaded machine are noisy, so read the ratios rather than the absolute times.

    python benchmarks/bench_generate.py [--reps 5] [--contexts 32,64,...,1024]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

# One BLAS thread: on a shared machine, spinning BLAS threads turn small matmuls into
# noise. Set OPENBLAS_NUM_THREADS yourself to override.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from tokcost.reference import (
    ContiguousCache,
    PagedCache,
    RefConfig,
    Transformer,
    init_weights,
)


def _median_ms(fn: object, reps: int) -> float:
    fn()  # type: ignore[operator]  # warm-up
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--contexts", default="32,64,128,256,512,1024")
    ap.add_argument("--block-size", type=int, default=16)
    args = ap.parse_args()
    contexts = [int(c) for c in args.contexts.split(",")]
    top = max(contexts) + 2 * args.reps + 2
    cfg = RefConfig(
        layers=4,
        hidden_size=128,
        attention_heads=4,
        kv_heads=2,
        head_dim=32,
        vocab_size=1024,
        context_window=top,
    )
    model = Transformer(cfg, init_weights(cfg, seed=0))
    rng = np.random.default_rng(0)

    print(
        f"tiny-ref shape, {cfg.params:,} parameters, numpy {np.__version__}; "
        f"median of {args.reps} steps, ms per new token"
    )
    print(
        f"{'context':>8} {'recompute':>10} {'contiguous':>11} {'paged':>8} "
        f"{'speedup (contig.)':>18} {'speedup (paged)':>16}"
    )
    for c in contexts:
        ids = rng.integers(0, cfg.vocab_size, size=(1, c), dtype=np.int64)
        full = _median_ms(lambda ids=ids: model.forward(ids), args.reps)

        contiguous = ContiguousCache(cfg, capacity=c + args.reps + 1)
        model.forward(ids[:, :-1], contiguous)
        one = ids[:, -1:]
        cont = _median_ms(lambda cache=contiguous, one=one: model.forward(one, cache), args.reps)

        blocks = -(-(c + args.reps + 1) // args.block_size)
        paged_cache = PagedCache(cfg, block_size=args.block_size, num_blocks=blocks)
        model.forward(ids[:, :-1], paged_cache)
        paged = _median_ms(lambda cache=paged_cache, one=one: model.forward(one, cache), args.reps)
        print(
            f"{c:>8} {full:>10.2f} {cont:>11.2f} {paged:>8.2f} {full / cont:>17.1f}x "
            f"{full / paged:>15.1f}x"
        )


if __name__ == "__main__":
    main()
