"""Benchmark tokcost's pure-Python encoder on long pre-tokens, against its peers (not a test).

    python benchmarks/bench_bpe_encode.py [--repeat 3] [--sizes 10000 1000000]

One pre-token of ``n`` bytes is what a minified line, a base64 blob or a run of one
character becomes under a ``bpe:`` model's regex. Each input is encoded on o200k_base
with:

* tokcost now: ``Encoder.encode_ordinary`` (the queue from 16 bytes on);
* tokcost before: the same encoder with the pair scan for every length (the encoder as
  it was); run only up to ``--before-max`` bytes, since it is quadratic, and estimated
  past that from the largest size run (``n^2`` scaling, marked ``est.``);
* tiktoken (Rust, a heap from 100 bytes on);
* bpe-openai, the Python bindings of GitHub's ``bpe`` crate (linear), when installed.

Every encoder gets a fresh cache per run; the runs alternate between encoders and the
table quotes medians and ratios to tiktoken. Machines are shared and noisy: trust the
ratios more than the seconds.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

import tokcost
import tokcost.bpe.encode as encode_mod
from tokcost.bpe import Encoder, load_any

ENCODING = "o200k_base"


@contextmanager
def scan_only() -> Any:
    """The encoder as it was: the pair scan at every length, every piece cached."""
    saved = encode_mod.LARGE_PIECE, encode_mod.CACHED_BELOW
    encode_mod.LARGE_PIECE = encode_mod.CACHED_BELOW = 1 << 62
    try:
        yield
    finally:
        encode_mod.LARGE_PIECE, encode_mod.CACHED_BELOW = saved


def inputs(sizes: list[int]) -> list[tuple[str, str]]:
    rng = random.Random(0)
    out = [(f'"x" * {n:_}', "x" * n) for n in sizes]
    n = min(sizes)
    out.append((f"{n:_} random a-z", "".join(rng.choice("abcdefghijklmnopqrstuvwxyz")
                                            for _ in range(n))))
    return out


Runner = Callable[[], Callable[[str], list[int]]]  # makes a fresh encoder for one run


def encoders() -> dict[str, Runner]:
    model = load_any(f"tiktoken:{ENCODING}")
    tiktoken_enc = tokcost.get_tokenizer(f"tiktoken:{ENCODING}").encoding

    def before() -> Callable[[str], list[int]]:
        enc = Encoder(model)

        def run(text: str) -> list[int]:
            with scan_only():
                return enc.encode_ordinary(text)

        return run

    found: dict[str, Runner] = {
        "tokcost now (queue)": lambda: Encoder(model).encode_ordinary,
        "tokcost before (scan)": before,
        "tiktoken": lambda: tiktoken_enc.encode_ordinary,
    }
    try:
        import bpe_openai

        crate = bpe_openai.get_encoding(ENCODING)
        found["bpe-openai (GitHub bpe crate)"] = lambda: crate.encode_ordinary
    except Exception:  # not installed, or no offline data: leave it out
        pass
    for make in found.values():
        make()("warm up the regex and the tables")
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 1_000_000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--before-max", type=int, default=40_000,
                    help="largest input the quadratic 'before' encoder runs on")
    args = ap.parse_args()
    encs = encoders()
    rows: list[tuple[str, str, str, float | None, str]] = []
    for label, text in inputs(args.sizes):
        times: dict[str, list[float]] = {name: [] for name in encs}
        notes: dict[str, str] = {}
        want = encs["tiktoken"]()(text)
        for _ in range(args.repeat):
            for name, fn in encs.items():
                if name in notes:
                    continue
                if name.startswith("tokcost before") and len(text) > args.before_max:
                    notes[name] = "skipped"
                    continue
                encode = fn()
                t0 = time.perf_counter()
                try:
                    ids = encode(text)
                except Exception as exc:  # bpe-openai refuses very long inputs
                    notes[name] = f"refused ({type(exc).__name__})"
                    continue
                times[name].append(time.perf_counter() - t0)
                if ids != want:
                    raise SystemExit(f"{name} gives other ids than tiktoken on {label}")
        base = statistics.median(times["tiktoken"])
        for name in encs:
            if times[name]:
                sec = statistics.median(times[name])
                rows.append((label, name, f"{sec:.3g}", sec / base, ""))
            else:
                rows.append((label, name, "-", None, notes.get(name, "")))
    _estimate_before(rows, args.before_max)
    print(f"{'input':<22}{'encoder':<32}{'seconds':>10}{'x tiktoken':>12}  note")
    for label, name, sec, ratio, note in rows:
        shown = "-" if ratio is None else f"{ratio:.2g}" if ratio < 10 else f"{ratio:,.0f}"
        print(f"{label:<22}{name:<32}{sec:>10}{shown:>12}  {note}")


def _estimate_before(rows: list[tuple[str, str, str, float | None, str]], before_max: int) -> None:
    """Fill the skipped 'before' rows of "x" runs from the largest run measured (n^2)."""
    runs = {label: int(label.split("*")[1].replace("_", "")) for label, *_ in rows
            if label.startswith('"x" *')}
    measured = [(runs[label], float(sec), ratio) for label, name, sec, ratio, _ in rows
                if label in runs and name.startswith("tokcost before") and ratio is not None]
    if not measured:
        return
    n0, sec0, _ = max(measured)
    for k, (label, name, _, ratio, _) in enumerate(rows):
        if label in runs and name.startswith("tokcost before") and ratio is None:
            est = sec0 * (runs[label] / n0) ** 2
            tk = next(float(s) for lab, nm, s, *_ in rows if lab == label and nm == "tiktoken")
            shown = f"{est:,.0f}" if est >= 100 else f"{est:.3g}"
            rows[k] = (label, name, shown, est / tk, f"est. from {n0:_} bytes (n^2)")


if __name__ == "__main__":
    main()
