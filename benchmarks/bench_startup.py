"""Start-up of the commands people run most, against the floors under them.

    python benchmarks/bench_startup.py [--repeat 9]

Each command runs as a whole process, alternated with the others, ``--repeat`` times;
the table shows median wall and CPU (user + system) seconds and the ratio to the floor
of a bare ``python -c pass``, and to ``import typer`` (what any Typer CLI pays). The
budgets of issue 25: ``tokcost --help`` <= 100 ms, ``kvmem estimate`` and ``price`` <=
0.3 s CPU.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

COMMANDS: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "python -c 'import typer'": [sys.executable, "-c", "import typer"],
    "tokcost --help": ["tokcost", "--help"],
    "tokcost count --help": ["tokcost", "count", "--help"],
    "tokcost kvmem estimate -m llama-3.1-8b": ["tokcost", "kvmem", "estimate", "-m",
                                                "llama-3.1-8b"],
    "tokcost price -m gpt-4o -i 1k": ["tokcost", "price", "-m", "gpt-4o", "-i", "1k"],
    "tokcost price -m grok-4 -i 1k (genai-prices)": ["tokcost", "price", "-m", "grok-4",
                                                     "-i", "1k"],
    "tokcost price -m gpt-4o -m 'claude-*' -i 1k": ["tokcost", "price", "-m", "gpt-4o", "-m",
                                                    "claude-*", "-i", "1k"],
    "tokcost models list": ["tokcost", "models", "list"],
}


def run(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one whole process (its children's rusage)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9, help="runs per command (default 9)")
    args = parser.parse_args()
    if shutil.which("tokcost") is None:
        sys.exit("tokcost is not on PATH: pip install . first")
    env_note = f"load average {os.getloadavg()[0]:.2f}"
    for argv in COMMANDS.values():  # warm the page cache and __pycache__
        run(argv)
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeat):
        for name, argv in COMMANDS.items():  # alternate, so noise hits every command
            times[name].append(run(argv))
    floor = statistics.median(c for _, c in times["python -c pass"])
    typer_cpu = statistics.median(c for _, c in times["python -c 'import typer'"])
    print(f"median of {args.repeat} runs ({env_note})")
    print(f"{'command':46} {'wall ms':>8} {'cpu ms':>8} {'x python':>9} {'x typer':>8}")
    for name, runs in times.items():
        wall = statistics.median(w for w, _ in runs) * 1000
        cpu = statistics.median(c for _, c in runs)
        print(f"{name:46} {wall:8.0f} {cpu * 1000:8.0f} {cpu / floor:9.1f} "
              f"{cpu / typer_cpu:8.2f}")


if __name__ == "__main__":
    main()
