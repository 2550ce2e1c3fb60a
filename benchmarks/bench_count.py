"""Counting throughput: tokcount against raw tiktoken, ttok and count-tokens, in one run.

    pip install '.[bench]' && python benchmarks/bench_count.py [--mb 40] [--repeat 3]

Builds a corpus of real text already on this machine (the Python standard library's
sources, then /usr/share/doc) in a temporary folder, never committed. Peers that
download tiktoken's rank files at run time get a seeded TIKTOKEN_CACHE_DIR holding
the same verified bytes (DESIGN §8). Whole processes are timed several times,
alternating tools; medians and ratios are printed. Peak RSS comes from getrusage.

Then, for a folder of 5,000 small files, one 100 MB file and a 50 MB file of one letter
(a single pre-token: the worst case for memory), tokcount against the raw encoders
(tiktoken, and toktok when installed), each child's own peak RSS from ``os.wait4``
(``--no-sizes`` skips these rows).
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


# --- sizes: many small files, one large file, the worst case (issue 13) ---------------


def build_size_inputs(folder: Path, tree: Path, files: int = 5000) -> dict[str, Path]:
    """A folder of ``files`` small files (the corpus tree's first ones), one 100 MB file of
    ordinary text (the corpus repeated) and a 50 MB file of one letter (no cut point at all)."""
    small = folder / "small"
    small.mkdir()
    for src in sorted(tree.iterdir())[:files]:
        (small / src.name).write_bytes(src.read_bytes())
    base = b"".join(p.read_bytes() for p in sorted(tree.iterdir()))
    big = folder / "big100.txt"
    with open(big, "wb") as out:
        left = 100_000_000
        while left > 0:
            piece = base[:left]
            out.write(piece)
            left -= len(piece)
    letter = folder / "letter50.txt"
    letter.write_bytes(b"a" * 50_000_000)
    return {f"{len(list(small.iterdir())):,}-file folder": small, "one 100 MB file": big,
            "one letter, 50 MB": letter}


RAW_PATHS = """
import sys
from pathlib import Path
root = Path(sys.argv[2])
paths = sorted(root.iterdir()) if root.is_dir() else [root]
texts = []
for p in paths:
    with open(p, encoding="utf-8", newline="") as f:  # keep CRLF, as tokcount does
        texts.append(f.read())
if sys.argv[1] == "tiktoken":
    from tokcost.adapters.registry import get_tokenizer
    enc = get_tokenizer("tiktoken:o200k_base").encoding
    n = sum(len(x) for x in enc.encode_ordinary_batch(texts, num_threads=2))
else:
    import toktok
    n = sum(toktok.batch_count(texts, "o200k_base", threads=2))
print(n)
"""


def size_rows(inputs: dict[str, Path], env: dict[str, str], repeat: int) -> None:
    """tokcount against the raw encoders, whole processes, on each input: median wall time,
    MB/s and peak RSS; the counts must agree."""
    bin_dir = Path(sys.executable).parent
    raws = ["tiktoken"]
    try:
        import toktok  # noqa: F401

        raws.append("toktok")
    except ImportError:
        pass
    print(f"\n{'input':22} {'tool':26} {'median s':>9} {'MB/s':>7} {'peak RSS':>10}  tokens")
    for label, path in inputs.items():
        size = (sum(p.stat().st_size for p in path.iterdir()) if path.is_dir()
                else path.stat().st_size)
        tools = {"tokcount --jobs 2": [str(bin_dir / "tokcount"), str(path), "-j", "2",
                                       "--total"]}
        for raw in raws:
            tools[f"raw {raw}, 2 threads"] = [sys.executable, "-c", RAW_PATHS, raw, str(path)]
        results: dict[str, list[tuple[float, str, int]]] = {k: [] for k in tools}
        # One pre-token of 50 MB: tiktoken's BPE is superlinear in it (about a minute); once.
        for _ in range(1 if "letter" in label else repeat):
            for name, cmd in tools.items():  # alternate the tools each round
                results[name].append(_measured(cmd, env))
        counts = {r[-1][1] for r in results.values()}
        for name, runs in results.items():
            med = statistics.median(r[0] for r in runs)
            peak = max(r[2] for r in runs) / 1024
            print(f"{label:22} {name:26} {med:9.2f} {size / 1e6 / med:7.1f} {peak:7.0f} MiB  "
                  f"{runs[-1][1]}")
        if len(counts) != 1:
            raise SystemExit(f"{label}: the counts differ: {sorted(counts)}")


def _measured(cmd: list[str], env: dict[str, str]) -> tuple[float, str, int]:
    """Wall seconds, the first word of stdout, and the child's own peak RSS in KiB
    (``os.wait4``, as ``/usr/bin/time -v`` reports it)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed: {err.read().decode()[-300:]}")
        return wall, out.read().decode().strip().split()[0], usage.ru_maxrss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=40, help="corpus size in MB (default 40)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per tool (default 3)")
    parser.add_argument("--no-sizes", action="store_true",
                        help="skip the 5,000-file folder, 100 MB file and one-letter rows")
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
        if not args.no_sizes:
            size_rows(build_size_inputs(work, tree), env, args.repeat)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
