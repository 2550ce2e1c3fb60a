"""--engine dask (a 2-worker LocalCluster) against --jobs 2, for counting and BPE pre-tokenization.

    pip install '.[dask]' && python benchmarks/bench_dask.py [--mb 200] [--files 8] [--repeat 1]

Builds a corpus of at least ``--mb`` MB from text already on this machine (the
Python standard library's sources, repeated) in a temporary folder, never
committed. Each variant runs in a fresh process, variants alternate, medians and
ratios are printed:

- count:       ``count_paths(..., run=RunConfig(jobs=2))`` (threads) vs
               ``DaskRunner(...)`` on a 2-worker LocalCluster
- pretokenize: ``count_words(..., jobs=2)`` (processes) vs ``TrainingInputs(DaskRunner(...))``

Dask times are given with and without starting the cluster. Peak memory: the
driver's peak RSS, and for Dask each worker's peak RSS (``getrusage`` in the
worker); for the local pre-tokenizer the largest child's. Results must agree
exactly, or the benchmark fails.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import resource
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

SPEC = "tiktoken:o200k_base"
PATTERN = "o200k"


def build_corpus(folder: Path, megabytes: int, files: int) -> int:
    """``files`` UTF-8 files that together hold at least ``megabytes`` MB of stdlib source."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    parts: list[bytes] = []
    for src in sorted(stdlib.rglob("*.py")):
        try:
            data = src.read_bytes()
            data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if b"\x00" not in data:
            parts.append(data)
    base = b"".join(parts)
    per_file = -(-megabytes * 1_000_000 // files)
    total = 0
    for i in range(files):
        reps = -(-per_file // len(base))
        data = (base * reps)[:per_file]
        cut = data.rfind(b"\n") + 1  # end on a whole line
        (folder / f"part{i:02d}.py").write_bytes(data[:cut])
        total += cut
    return total


def _peak_rss_mb(pid: int | str = "self") -> float:
    """Peak RSS of a process (VmHWM). Not getrusage: on Linux its ru_maxrss survives
    fork + exec, so a child would report its parent's peak."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 if pid == "self" else 0.0


class ChildPeaks:
    """Samples the peak RSS of this process's children (the local engine's pool)."""

    def __init__(self) -> None:
        import threading

        self.peaks: dict[int, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _children(self) -> list[int]:
        pids: list[int] = []
        for task in Path("/proc/self/task").iterdir():
            with contextlib.suppress(OSError):
                pids += [int(p) for p in (task / "children").read_text().split()]
        return pids

    def _run(self) -> None:
        while not self.stop.wait(0.25):
            for pid in self._children():
                peak = _peak_rss_mb(pid)
                if peak:
                    self.peaks[pid] = max(self.peaks.get(pid, 0.0), peak)

    def close(self) -> list[float]:
        self.stop.set()
        self.thread.join()
        return sorted(round(v, 1) for v in self.peaks.values())


def worker(name: str, corpus: Path, shard_mb: int | None) -> dict[str, Any]:
    """One variant, in this (fresh) process."""
    from tokcost import get_tokenizer

    paths = sorted(str(p) for p in corpus.iterdir())
    result: dict[str, Any] = {"variant": name}
    t0 = time.perf_counter()
    if name.endswith("local"):
        if name.startswith("count"):
            from tokcost.counting import Inputs, count_paths
            from tokcost.runner import RunConfig

            report = count_paths(Inputs(paths=[str(corpus)]), {SPEC: get_tokenizer(SPEC)},
                                 run=RunConfig(jobs=2))
            result["answer"] = report.total_tokens(SPEC)
        else:
            from tokcost.bpe.pretokenize import PretokenizeSpec, count_words

            sampler = ChildPeaks()
            words = count_words(paths, PretokenizeSpec(PATTERN), jobs=2)
            result["answer"] = [len(words), sum(words.values())]
            result["worker_peak_rss_mb"] = sampler.close()
        result["seconds"] = time.perf_counter() - t0
    else:
        from tokcost.bpe.pretokenize import PretokenizeSpec
        from tokcost.counting import Inputs, TrainingInputs, count_paths
        from tokcost.scale import DaskRunner, dask_client

        with dask_client(None, workers=2) as client:
            t1 = time.perf_counter()
            result["seconds_startup"] = t1 - t0
            engine = DaskRunner(client=client, shard_bytes=shard_mb and shard_mb << 20)
            if name.startswith("count"):
                report = count_paths(Inputs(paths=[str(corpus)]), {SPEC: get_tokenizer(SPEC)},
                                     run=engine)
                result["answer"] = report.total_tokens(SPEC)
            else:
                words = TrainingInputs(engine).count_words(paths, PretokenizeSpec(PATTERN))
                result["answer"] = [len(words), sum(words.values())]
            result["seconds_work"] = time.perf_counter() - t1
            peaks = client.run(_peak_rss_mb)
            result["worker_peak_rss_mb"] = sorted(round(v, 1) for v in peaks.values())
        result["seconds"] = time.perf_counter() - t0
    result["driver_peak_rss_mb"] = round(_peak_rss_mb(), 1)
    return result


def run(name: str, corpus: Path, shard_mb: int | None) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", name, "--corpus", str(corpus),
         *(["--shard-mb", str(shard_mb)] if shard_mb else [])],
        capture_output=True, text=True, check=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=int, default=200, help="corpus size in MB (default 200)")
    ap.add_argument("--files", type=int, default=8, help="files in the corpus (default 8)")
    ap.add_argument("--repeat", type=int, default=1, help="runs of each variant (default 1)")
    ap.add_argument("--shard-mb", type=int, help="Dask shard size (default: tokcost's choice, "
                    "about 16 shards per worker)")
    ap.add_argument("--only", choices=["count", "pretokenize"], help="run one of the two")
    ap.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.corpus, args.shard_mb)))
        return

    with tempfile.TemporaryDirectory(prefix="tokcost-bench-dask-") as tmp:
        corpus = Path(tmp)
        size = build_corpus(corpus, args.mb, args.files)
        print(f"corpus: {size / 1e6:,.0f} MB in {args.files} files (Python stdlib sources, "
              f"repeated); 2 CPU cores shared with other work: figures are noisy")
        tasks = [args.only] if args.only else ["count", "pretokenize"]
        for task in tasks:
            runs: dict[str, list[dict[str, Any]]] = {"local": [], "dask": []}
            for _ in range(args.repeat):
                for engine in ("local", "dask"):  # alternate
                    runs[engine].append(run(f"{task}-{engine}", corpus, args.shard_mb))
            answers = {json.dumps(r["answer"]) for rs in runs.values() for r in rs}
            if len(answers) != 1:
                sys.exit(f"{task}: engines disagree: {answers}")
            loc = statistics.median(r["seconds"] for r in runs["local"])
            dsk = statistics.median(r["seconds"] for r in runs["dask"])
            work = statistics.median(r["seconds_work"] for r in runs["dask"])
            start = statistics.median(r["seconds_startup"] for r in runs["dask"])
            last_l, last_d = runs["local"][-1], runs["dask"][-1]
            print(f"\n{task} (answer {answers.pop()}, identical on both engines)")
            pool = last_l.get("worker_peak_rss_mb")
            print(f"  --jobs 2              {loc:8.1f} s  {size / 1e6 / loc:6.1f} MB/s  "
                  f"driver peak {last_l['driver_peak_rss_mb']:,.0f} MB"
                  + (f", worker peaks {', '.join(f'{m:,.0f}' for m in pool)} MB"
                     if pool else " (threads in the driver)"))
            print(f"  --engine dask (2 w.)  {dsk:8.1f} s  {size / 1e6 / dsk:6.1f} MB/s  "
                  f"driver peak {last_d['driver_peak_rss_mb']:,.0f} MB, worker peaks "
                  f"{', '.join(f'{m:,.0f}' for m in last_d['worker_peak_rss_mb'])} MB")
            print(f"    of which cluster start {start:.1f} s, work {work:.1f} s")
            print(f"  ratio dask/local: {dsk / loc:.2f}x end to end, "
                  f"{work / loc:.2f}x without cluster start")


if __name__ == "__main__":
    main()
