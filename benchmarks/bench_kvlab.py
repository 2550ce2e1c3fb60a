"""Teacher-forced tokens/s of each KV-cache policy against the full cache, tiny-ref, numpy.

    PYTHONPATH=. python benchmarks/bench_kvlab.py [TOKENS] [REPEATS]

Each policy decodes the same held-out text (prefill an eighth, then one token at a time);
the best of REPEATS runs is reported, as tokens predicted per second.
"""

from __future__ import annotations

import sys
import time

import numpy as np


def main() -> None:
    from tokcost.app.quality import DEFAULT_POLICIES, held_out_text
    from tokcost.catalog import load_catalog
    from tokcost.memory.cache_policy import parse_policy
    from tokcost.reference.from_catalog import load_model, load_tokenizer
    from tokcost.reference.kvpolicy import policy_cache, teacher_forced

    tokens = int(sys.argv[1]) if len(sys.argv) > 1 else 512
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    entry = load_catalog().resolve("tiny-ref")
    model = load_model(entry).model
    ids = load_tokenizer(entry, model.cfg).encode(held_out_text())[:tokens]
    prompt = len(ids) // 8
    predicted = len(ids) - prompt
    print(f"tiny-ref, {len(ids)} tokens, prompt {prompt}, best of {repeats}; numpy "
          f"{np.__version__}")
    full = None
    for name in ("full cache", *DEFAULT_POLICIES):
        best = float("inf")
        for _ in range(repeats):
            cache = None
            if name != "full cache":
                p = parse_policy(name)
                cache = policy_cache(model.cfg, quant=p.quant, evict=p.evict, prompt=prompt)
            start = time.perf_counter()
            teacher_forced(model, ids, prompt=prompt, cache=cache)
            best = min(best, time.perf_counter() - start)
        rate = predicted / best
        full = full or rate
        print(f"{name:18s} {rate:8.0f} tok/s  {best * 1000 / predicted:6.2f} ms/token  "
              f"{rate / full:5.2f}x the full cache")


if __name__ == "__main__":
    main()
