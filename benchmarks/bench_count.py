"""Counting throughput: tokcount against raw tiktoken, ttok and count-tokens, in one run.

    pip install '.[bench]' && python benchmarks/bench_count.py [--mb 40] [--repeat 3]

Builds a corpus of real text already on this machine (the Python standard library's
sources, then /usr/share/doc) in a temporary folder, never committed. Peers that
download tiktoken's rank files at run time get a seeded TIKTOKEN_CACHE_DIR holding
the same verified bytes (DESIGN §8). Whole processes are timed several times,
alternating tools; medians and ratios are printed. Peak RSS comes from getrusage.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def _text_files() -> Iterator[Path]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    yield from sorted(stdlib.rglob("*.py"))
    yield from sorted(p for p in Path("/usr/share/doc").rglob("*") if p.suffix in ("", ".txt"))


def build_corpus(folder: Path, megabytes: int) -> tuple[Path, Path, int]:
    """A tree of UTF-8 text files of at least ``megabytes`` MB, and one file of it all."""
    tree = folder / "tree"
    tree.mkdir()
    total = 0
    parts: list[bytes] = []
    for i, src in enumerate(_text_files()):
        if total >= megabytes * 1_000_000:
            break
        try:
            if not src.is_file() or src.is_symlink():
                continue
            data = src.read_bytes()
            if b"\x00" in data[:8000]:
                continue
            data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        (tree / f"{i:06d}_{src.name}").write_bytes(data)
        parts.append(data)
        total += len(data)
    whole = folder / "corpus.txt"
    whole.write_bytes(b"".join(parts))
    return tree, whole, total


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


RAW = """
import sys, tiktoken
from pathlib import Path
from tokcost.adapters.registry import get_tokenizer
enc = get_tokenizer("tiktoken:o200k_base").encoding
texts = []
for p in sorted(Path(sys.argv[1]).iterdir()):
    with open(p, encoding="utf-8", newline="") as f:  # keep CRLF, as tokcount does
        texts.append(f.read())
import time; t = time.perf_counter()
n = sum(len(x) for x in enc.encode_ordinary_batch(texts, num_threads=int(sys.argv[2])))
print(n, time.perf_counter() - t)
"""


def run(cmd: list[str], env: dict[str, str], stdin: Path | None = None) -> tuple[float, str, int]:
    """Wall seconds, stdout, and the child's peak RSS in KiB."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    with open(stdin, "rb") if stdin else open(os.devnull, "rb") as handle:
        proc = subprocess.run(cmd, stdin=handle, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.strip()[:300]}")
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, proc.stdout.strip(), max(rss, before)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=40, help="corpus size in MB (default 40)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per tool (default 3)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="tokcost-bench-"))
    try:
        tree, whole, size = build_corpus(work, args.mb)
        cache = work / "tiktoken-cache"
        cache.mkdir()
        seed_tiktoken_cache(cache)
        env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(cache)}
        mb = size / 1e6
        nfiles = len(list(tree.iterdir()))
        print(f"corpus: {nfiles} files, {mb:.1f} MB of text ({tree})\n")

        bin_dir = Path(sys.executable).parent
        tools: dict[str, tuple[list[str], Path | None]] = {
            "tokcount --jobs 2 (tree)": (
                [str(bin_dir / "tokcount"), str(tree), "--jobs", "2", "--total"], None),
            "tokcount --jobs 1 (tree)": (
                [str(bin_dir / "tokcount"), str(tree), "--jobs", "1", "--total"], None),
            "raw tiktoken, 2 threads (whole process)": (
                [sys.executable, "-c", RAW, str(tree), "2"], None),
        }
        if shutil.which("ttok"):
            tools["ttok -m gpt-4o (stdin)"] = (["ttok", "-m", "gpt-4o"], whole)
        if shutil.which("count-tokens"):
            tools["count-tokens -d -r (tree)"] = (
                ["count-tokens", "-q", "-e", "o200k_base", "-d", str(tree), "-r",
                 "-p", "*"], None)
        times: dict[str, list[float]] = {k: [] for k in tools}
        outputs: dict[str, str] = {}
        rss: dict[str, int] = {}
        raw_encode: list[float] = []
        for _ in range(args.repeat):
            for name, (cmd, stdin) in tools.items():  # alternate the tools each round
                wall, out, peak = run(cmd, env, stdin)
                times[name].append(wall)
                outputs[name] = out
                rss[name] = peak
                if name.startswith("raw"):
                    raw_encode.append(float(out.split()[1]))

        raw_tokens = int(outputs["raw tiktoken, 2 threads (whole process)"].split()[0])
        base = statistics.median(times["raw tiktoken, 2 threads (whole process)"])
        enc_only = statistics.median(raw_encode)
        print(f"raw tiktoken encode_ordinary_batch, 2 threads, encode only: {enc_only:.2f} s "
              f"= {mb / enc_only:.1f} MB/s ({raw_tokens:,} tokens)\n")
        print(f"{'tool':42} {'median s':>9} {'MB/s':>7} {'vs raw process':>15} "
              f"{'vs raw encode':>14}  tokens")
        for name in tools:
            med = statistics.median(times[name])
            print(f"{name:42} {med:9.2f} {mb / med:7.1f} {base / med:14.2f}x "
                  f"{enc_only / med:13.2f}x  {outputs[name].split()[0] if outputs[name] else '?'}")
        print("\n(ratios > 1 mean faster than raw tiktoken; 'vs raw process' includes loading the"
              " encoding and reading files, as every CLI must)")

        print("\nstart-up (--help), median of 7:")
        helps = {"tokcost --help": [str(bin_dir / "tokcost"), "--help"]}
        if shutil.which("ttok"):
            helps["ttok --help"] = ["ttok", "--help"]
        helps["python -c pass"] = [sys.executable, "-c", "pass"]
        med_help = {}
        for _ in range(7):
            for name, cmd in helps.items():
                med_help.setdefault(name, []).append(run(cmd, env)[0])
        for name, values in med_help.items():
            print(f"  {name:20} {statistics.median(values) * 1000:7.0f} ms")
        print(f"\npeak RSS of the child processes so far: {max(rss.values()) / 1024:.0f} MiB")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
