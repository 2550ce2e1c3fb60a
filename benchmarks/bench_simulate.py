"""``kvmem simulate`` at 10k, 100k and 1M requests: seconds and peak memory, against the
step-by-step loop it replaced.

    python benchmarks/bench_simulate.py [--sizes 10k,100k,1M]

Each size runs as a whole process (``python -m tokcost kvmem simulate --requests N
--json``: OPT-13B in 12 GB, ShareGPT-like lengths, the four policies); the table shows wall
and CPU seconds and the peak resident memory of that process. The previous implementation
(one Python iteration per decode step) is not kept in the package: its CPU seconds, peak
memory and JSON output, recorded where it finished in reasonable time, are in
``benchmarks/simulate_previous.json``; a size that has them shows the speed-up and whether
the figures are the same (the new ``infeasible`` key aside). Issue 28's bar: 1M requests
in at most 60 s on one core.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PREVIOUS = Path(__file__).with_name("simulate_previous.json")
ROOT = Path(__file__).resolve().parent.parent


def run(requests: int) -> tuple[float, float, int, dict[str, Any]]:
    """Wall and CPU seconds, peak RSS in KiB, and the JSON document of one run."""
    argv = [sys.executable, "-m", "tokcost", "kvmem", "simulate", "--requests", str(requests),
            "--json"]
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage, its peak RSS
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode:
        sys.exit(f"{' '.join(argv)} failed with exit code {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, json.loads(out)


def core_speed() -> float:
    """CPU seconds of ten million Python additions: how fast this core runs Python now (a
    loaded or slow core takes longer), to compare the figures between machines."""
    start, x = time.process_time(), 0
    for i in range(10_000_000):
        x += i
    return time.process_time() - start


def same(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """The same figures, the key added since (``infeasible``, null here) aside."""
    rows = [{k: v for k, v in p.items() if k != "infeasible"} for p in new["policies"]]
    return {**new, "policies": rows} == old


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10k,100k,1M", help="comma list (default 10k,100k,1M)")
    args = parser.parse_args()
    scale = {"k": 10**3, "M": 10**6}
    sizes = [int(s[:-1]) * scale[s[-1]] if s[-1] in scale else int(s)
             for s in args.sizes.split(",")]
    previous = json.loads(PREVIOUS.read_text(encoding="utf-8"))
    print(f"kvmem simulate, OPT-13B 12 GB, ShareGPT-like, 4 policies; load average "
          f"{os.getloadavg()[0]:.2f}; 10M Python additions {core_speed():.2f} s CPU; previous: "
          f"{previous['implementation']}")
    print(f"{'requests':>10} {'wall s':>8} {'CPU s':>8} {'peak RSS':>10} {'prev CPU s':>11} "
          f"{'prev RSS':>10} {'speed-up':>9}  same figures")
    for n in sizes:
        wall, cpu, rss, doc = run(n)
        old = previous["runs"].get(str(n))
        cells = [f"{n:>10,}", f"{wall:>8.1f}", f"{cpu:>8.1f}", f"{rss / 1024:>7.0f} MiB"]
        if old is None:
            cells += [f"{'-':>11}", f"{'-':>10}", f"{'-':>9}", " (previous not run: too slow)"]
        else:
            cells += [f"{old['cpu_s']:>11.1f}", f"{old['peak_rss_kib'] / 1024:>6.0f} MiB",
                      f"{old['cpu_s'] / cpu:>8.0f}x", " yes" if same(doc, old["output"]) else
                      " NO: the figures differ"]
        print(" ".join(cells), flush=True)


if __name__ == "__main__":
    main()
