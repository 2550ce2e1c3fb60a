"""``tokcost compare`` on the built-in corpora: wall time, against raw tiktoken, in one run.

    python benchmarks/bench_compare.py [--repeat 5]

What is timed (whole processes, alternating, medians):

* ``tokcost compare --builtin -t o200k_base -t cl100k_base -t bpe:MODEL --json``: the
  issue's figure (three tokenizers over 21 prose languages, 9 code files, 8 data
  formats; target under 2 s). MODEL is a 1,024-token BPE trained here on the corpora.
* the same with the two tiktoken encodings only, against a raw tiktoken script that does
  the same work (load both encodings, count the 38 texts, divide by the baseline) -
  tokcost's overhead over the library it wraps.

Then an in-process breakdown: loading each tokenizer, and counting + metrics.
tiktoken gets a seeded TIKTOKEN_CACHE_DIR (the verified rank files tokcost ships with),
so nothing touches the network (DESIGN §8).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RAW = """
import json, sys, tiktoken
from pathlib import Path
import yaml
root = Path(sys.argv[1])
index = yaml.safe_load((root / "index.yaml").read_text())
texts = [(e["kind"], e["code"], (root / e["path"]).read_text(encoding="utf-8"))
         for e in index["files"]]
base = {k: v["baseline"] for k, v in index["kinds"].items()}
out = {}
for name in ("o200k_base", "cl100k_base"):
    enc = tiktoken.get_encoding(name)
    counts = {(k, c): len(enc.encode_ordinary(t)) for k, c, t in texts}
    out[name] = {f"{k}/{c}": n / counts[k, base[k]] for (k, c), n in counts.items()}
print(json.dumps(out))
"""


def seed_tiktoken_cache(cache: Path) -> None:
    from tokcost.adapters.openai_encodings import ENCODINGS, candidate_files, read_rank_bytes

    for name in ("o200k_base", "cl100k_base"):
        enc = ENCODINGS[name]
        for path in candidate_files(enc):
            if path.is_file():
                data = read_rank_bytes(path)
                if hashlib.sha256(data).hexdigest() == enc.sha256:
                    (cache / hashlib.sha1(enc.url.encode()).hexdigest()).write_bytes(data)
                    break


def _time(cmd: list[str], env: dict[str, str]) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from tokcost.inflation import builtin_dir

    corpora = builtin_dir()
    tokcost = [sys.executable, "-m", "tokcost"]
    with tempfile.TemporaryDirectory(prefix="bench-compare-") as tmp:
        folder = Path(tmp)
        cache = folder / "tiktoken-cache"
        cache.mkdir()
        seed_tiktoken_cache(cache)
        env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(cache), "NO_COLOR": "1"}
        model = folder / "all.bpe"
        subprocess.run(
            [*tokcost, "bpe", "train", *map(str, sorted((corpora / "prose").glob("*.txt"))),
             "-v", "1024", "-o", str(model)],
            env=env, check=True, stdout=subprocess.DEVNULL,
        )
        three = [*tokcost, "compare", "--builtin", "-t", "o200k_base", "-t", "cl100k_base",
                 "-t", f"bpe:{model}", "--json"]
        two = [*tokcost, "compare", "--builtin", "-t", "o200k_base", "-t", "cl100k_base",
               "--json"]
        raw = [sys.executable, "-c", RAW, str(corpora)]
        runs: dict[str, list[float]] = {"three": [], "two": [], "raw": []}
        for cmd in (three, two, raw):  # warm the page cache once
            _time(cmd, env)
        for _ in range(args.repeat):
            runs["three"].append(_time(three, env))
            runs["two"].append(_time(two, env))
            runs["raw"].append(_time(raw, env))
        med = {k: statistics.median(v) for k, v in runs.items()}

        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
        from tokcost.adapters.registry import get_tokenizer
        from tokcost.inflation import Meter, load_builtin, measure

        t = time.perf_counter()
        groups = load_builtin()
        t_load_texts = time.perf_counter() - t
        loads = {}
        meters = []
        for spec in ("tiktoken:o200k_base", "tiktoken:cl100k_base", f"bpe:{model}"):
            t = time.perf_counter()
            tok = get_tokenizer(spec)
            loads[spec.split("/")[-1]] = time.perf_counter() - t
            meters.append(Meter(spec, spec, tok))
        t = time.perf_counter()
        measure(groups, meters)
        t_measure = time.perf_counter() - t

    n_texts = sum(len(g.samples) for g in groups)
    print(f"tokcost compare --builtin, {n_texts} texts, median of {args.repeat} whole runs:")
    print(f"  3 tokenizers (o200k_base, cl100k_base, bpe 1,024): {med['three']:.2f} s "
          f"(target < 2 s: {'met' if med['three'] < 2 else 'NOT met'})")
    print(f"  2 tokenizers (o200k_base, cl100k_base):            {med['two']:.2f} s")
    print(f"  raw tiktoken script, same 2 encodings, same texts:  {med['raw']:.2f} s "
          f"(tokcost/raw = {med['two'] / med['raw']:.2f}x)")
    print("in-process breakdown:")
    print(f"  read corpora: {t_load_texts * 1000:.0f} ms")
    for name, secs in loads.items():
        print(f"  load {name}: {secs * 1000:.0f} ms")
    print(f"  count {n_texts} texts x 3 tokenizers + metrics: {t_measure * 1000:.0f} ms")


if __name__ == "__main__":
    main()
