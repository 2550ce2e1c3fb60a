"""Benchmark tokcost's BPE against its peers, in one run (not a test).

    python benchmarks/bench_bpe.py [--mb 40] [--vocab 8192 32768] [--jobs 2]

1. Builds a corpus of at least ``--mb`` MB from text already on the machine (the
   Python standard library, /usr/share/doc, man pages), in a temp folder; it is
   never committed.
2. Trains at each vocabulary size with tokcost (``--jobs`` pre-tokenizing
   processes), Hugging Face ``tokenizers`` BpeTrainer (configured as tokcost's
   trainer documents), ``rustbpe`` and ``bpeasy`` (``pip install '.[bench]'`` in a clone),
   each in a fresh process; prints wall time, peak RSS and the ratios to HF.
3. Encodes the corpus (in ~64 KB blocks cut at newlines, one thread) with
   tokcost's pure-Python encoder (cold cache), the tiktoken-backed ``bpe:``
   adapter, tiktoken and HF built from the same model.

All trainers use the cl100k pattern. Machines are shared and noisy: quote the
medians of several runs (``--repeat``) and the ratios, not single numbers.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

PATTERN_NAME = "cl100k"
TRAINERS = ("tokcost", "hf", "rustbpe", "bpeasy")


def _texts() -> Iterator[tuple[str, str]]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for p in sorted(stdlib.rglob("*.py")):
        yield str(p), p.read_bytes().decode("utf-8", "replace")
    for root in (Path("/usr/share/doc"), Path("/usr/share/man")):
        for p in sorted(root.rglob("*")):
            if not p.is_file() or p.is_symlink():
                continue
            try:
                if p.suffix == ".gz":
                    with gzip.open(p) as gz:
                        raw = gz.read()
                else:
                    raw = p.read_bytes()
            except (OSError, EOFError):
                continue
            if b"\0" in raw[:4096]:
                continue
            yield str(p), raw.decode("utf-8", "replace")


def build_corpus(path: Path, mb: float) -> int:
    """Write at least ``mb`` MB of text to ``path``; returns its size in bytes."""
    want = int(mb * 1e6)
    size = 0
    with open(path, "w", encoding="utf-8", newline="") as fh:
        while size < want:  # repeat the sources if the machine has little text
            before = size
            for _, text in _texts():
                fh.write(text if text.endswith("\n") else text + "\n")
                size += len(text.encode("utf-8")) + 1
                if size >= want:
                    break
            if size == before:
                raise SystemExit("no text found on this machine to build a corpus from")
    return path.stat().st_size



def train_hf(corpus: str, pattern: str, vocab: int, max_token_length: int | None = None,
             merges_out: str | None = None) -> int:
    """HF's BpeTrainer set up as tokcost trains (the pattern split, byte-level alphabet, no
    minimum frequency); the vocabulary size it reached. Shared by bench_bpe_scale, which
    also has the merges written to ``merges_out`` (JSON, [left, right] pairs in order)."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    from tokcost.bpe.io import hf_pattern

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(hf_pattern(pattern)), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        min_frequency=0,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        max_token_length=max_token_length,
    )
    tok.train([corpus], trainer)
    if merges_out:
        merges = json.loads(tok.to_str())["model"]["merges"]
        Path(merges_out).write_text(json.dumps([list(m) for m in merges]))
    return int(tok.get_vocab_size())

def _peak_rss_mb() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return (own + kids) / 1024  # kilobytes on Linux; children = the largest worker


def run_trainer(name: str, corpus: str, vocab: int, jobs: int) -> dict[str, float]:
    """Runs inside a fresh process (``--worker``); returns seconds and peak RSS."""
    from tokcost.bpe.pretokenize import PATTERNS

    pattern = PATTERNS[PATTERN_NAME]
    t0 = time.perf_counter()
    if name == "tokcost":
        from tokcost.bpe import TrainerConfig, train

        result = train([corpus], TrainerConfig(vocab_size=vocab, pattern=PATTERN_NAME, jobs=jobs))
        n = result.model.n_tokens
    elif name == "hf":
        n = train_hf(corpus, pattern, vocab)
    elif name == "rustbpe":
        import rustbpe

        def lines() -> Iterator[str]:
            with open(corpus, encoding="utf-8", newline="") as fh:
                yield from fh

        rtok = rustbpe.Tokenizer()
        rtok.train_from_iterator(lines(), vocab, pattern=pattern)
        n = rtok.vocab_size
    elif name == "bpeasy":
        import bpeasy

        def lines2() -> Iterator[str]:
            with open(corpus, encoding="utf-8", newline="") as fh:
                yield from fh

        ranks = bpeasy.train_bpe(lines2(), pattern, 128, vocab)
        n = len(ranks)
    else:
        raise SystemExit(f"unknown trainer {name}")
    return {"seconds": time.perf_counter() - t0, "rss_mb": _peak_rss_mb(), "vocab": n}


def time_trainer(name: str, corpus: Path, vocab: int, jobs: int) -> dict[str, float] | str:
    cmd = [sys.executable, __file__, "--worker", name, "--corpus", str(corpus)]
    cmd += ["--vocab", str(vocab), "--jobs", str(jobs)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["failed"])[-1]
        return f"skipped ({last[:80]})"
    info: dict[str, float] = json.loads(proc.stdout.strip().splitlines()[-1])
    info["wall"] = wall
    return info


def bench_encode(corpus: Path, workdir: Path) -> None:
    import tiktoken
    from tokenizers import Tokenizer

    from tokcost.adapters.bpe import BPETokenizer
    from tokcost.bpe import Encoder, TrainerConfig, export_hf, train

    text = corpus.read_text(encoding="utf-8")
    blocks: list[str] = []
    pos = 0
    while pos < len(text):
        cut = text.find("\n", pos + 65536)
        cut = len(text) if cut < 0 else cut + 1
        blocks.append(text[pos:cut])
        pos = cut
    mb = len(text.encode("utf-8")) / 1e6
    model = train([corpus], TrainerConfig(vocab_size=32768, pattern=PATTERN_NAME, jobs=2)).model
    export_hf(model, workdir / "tokenizer.json", force=True)
    tk = tiktoken.Encoding(
        name="bench",
        pat_str=model.pattern,
        mergeable_ranks=model.ranks,
        special_tokens=model.special_tokens,
    )
    adapter = BPETokenizer(model, "bpe:bench")
    hf = Tokenizer.from_file(str(workdir / "tokenizer.json"))
    enc = Encoder(model)

    def run(fn: object) -> tuple[float, int]:
        t0 = time.perf_counter()
        n = sum(len(fn(b)) for b in blocks)  # type: ignore[operator]
        return time.perf_counter() - t0, n

    results = {
        "tokcost pure Python (cold cache)": run(enc.encode_ordinary),
        "tokcost bpe: adapter (tiktoken core)": run(adapter.encode),
        "tiktoken (same ranks)": run(tk.encode_ordinary),
        "HF tokenizers (exported tokenizer.json)": run(
            lambda b: hf.encode(b, add_special_tokens=False).ids
        ),
    }
    base = results["tiktoken (same ranks)"][0]
    print(f"\nencode {mb:.1f} MB, one thread, {len(blocks)} blocks")
    print(f"{'encoder':<42}{'seconds':>9}{'MB/s':>8}{'tokens':>12}{'x tiktoken':>12}")
    for name, (sec, n) in results.items():
        print(f"{name:<42}{sec:>9.2f}{mb / sec:>8.1f}{n:>12,}{base / sec:>12.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--mb", type=float, default=40.0)
    ap.add_argument("--vocab", type=int, nargs="+", default=[8192, 32768])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--trainers", nargs="+", default=list(TRAINERS))
    ap.add_argument("--no-encode", action="store_true")
    ap.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "tokcost-bench-bpe"
    )
    ap.add_argument("--worker")
    ap.add_argument("--corpus")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    if args.worker:
        print(json.dumps(run_trainer(args.worker, args.corpus, args.vocab[0], args.jobs)))
        return

    args.workdir.mkdir(parents=True, exist_ok=True)
    corpus = args.workdir / "corpus.txt"
    if not corpus.exists() or corpus.stat().st_size < args.mb * 1e6:
        build_corpus(corpus, args.mb)
    size = corpus.stat().st_size
    print(f"corpus {corpus}: {size / 1e6:.1f} MB; {os.cpu_count()} CPUs; pattern {PATTERN_NAME}")
    print("(a shared machine: figures are noisy; ratios are what to compare)")
    for vocab in args.vocab:
        rows: dict[str, list[dict[str, float]] | str] = {}
        for _ in range(args.repeat):
            for name in args.trainers:  # alternate trainers between repeats
                got = time_trainer(name, corpus, vocab, args.jobs)
                if isinstance(got, str):
                    rows[name] = got
                elif not isinstance(rows.get(name), str):
                    runs = rows.setdefault(name, [])
                    assert isinstance(runs, list)
                    runs.append(got)
        print(f"\ntrain vocab {vocab}")
        print(f"{'trainer':<10}{'wall s':>9}{'peak RSS MB':>13}{'wall/HF':>9}{'RSS/HF':>8}")
        hf = rows.get("hf")
        hf_wall = statistics.median(r["wall"] for r in hf) if isinstance(hf, list) else None
        hf_rss = statistics.median(r["rss_mb"] for r in hf) if isinstance(hf, list) else None
        for name, runs in rows.items():
            if isinstance(runs, str):
                print(f"{name:<10}{runs}")
                continue
            wall = statistics.median(r["wall"] for r in runs)
            rss = statistics.median(r["rss_mb"] for r in runs)
            rw = f"{wall / hf_wall:.2f}" if hf_wall else "-"
            rr = f"{rss / hf_rss:.2f}" if hf_rss else "-"
            print(f"{name:<10}{wall:>9.2f}{rss:>13.0f}{rw:>9}{rr:>8}")
    if not args.no_encode:
        bench_encode(corpus, args.workdir)


if __name__ == "__main__":
    main()
