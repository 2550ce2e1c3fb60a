"""BPE training at scale: wall time and peak memory of four trainers at three corpus sizes,
in one run (not a test).

    pip install '.[bench]' && python benchmarks/bench_bpe_scale.py [--mb 40 400 2000]
        [--vocab 32768] [--jobs 2] [--timeout 600] [--cap-gb 8] [--repeat 1]

1. Builds each corpus (at least MB megabytes) from text already on the machine (the
   Python standard library, /usr/share/doc, man pages: ``bench_bpe.build_corpus``; the
   sources repeat when the machine holds less text) in ``--workdir`` under /tmp, never
   committed, and deletes it at the end unless ``--keep``. Check ``df -h /tmp`` first:
   the 2 GB size needs about 2.5 GB free.
2. Trains tokcost, Hugging Face ``tokenizers`` BpeTrainer, ``rustbpe`` and ``bpeasy``
   ONE AT A TIME (never two trainers at once: the figures are per tool, and the machine
   may be shared), each in a fresh process, with the same vocabulary size and the cl100k
   pattern. tokcost and HF are configured to learn the same merges (HF's
   ``max_token_length`` = tokcost's + 1, as tokcost's trainer documents); rustbpe and
   bpeasy learn their own (rustbpe has no token-length limit; bpeasy's is 128 bytes).
3. Each run is capped: ``prlimit --as`` (``--cap-gb`` of address space per process) and
   a watchdog that samples the resident memory of the run's whole process tree
   (``/proc``, every 0.2 s) and kills the tree when it passes ``--cap-gb`` or when the
   run passes ``--timeout`` seconds. Peak RSS is the largest sampled tree total (the
   parent and its pre-tokenizing workers together), and getrusage's ``ru_maxrss`` of
   the largest single process is printed beside it.
4. CPU seconds (user + system) of the run's process tree are printed beside the wall
   time: ``wait4``'s usage of the run, which includes the workers it reaped (threads
   are in their process's own). On a loaded machine wall time grows with the load and
   CPU time does not, so compare CPU seconds between runs made at different times.
   Each run's row is printed as soon as it ends; the table with medians follows.

Machines are shared and noisy: quote ratios measured in the same run, not single
numbers; ``--repeat`` alternates the trainers and prints medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_bpe import build_corpus, train_hf

PATTERN_NAME = "cl100k"
TRAINERS = ("tokcost", "hf", "rustbpe", "bpeasy")
MAX_TOKEN_LENGTH = 128  # tokcost's default; HF gets 129 (it keeps tokens strictly shorter)


def run_trainer(name: str, corpus: str, vocab: int, jobs: int) -> dict[str, float]:
    """Runs inside the capped child process; returns what it can say about the run."""
    from tokcost.bpe.pretokenize import PATTERNS

    pattern = PATTERNS[PATTERN_NAME]
    info: dict[str, float] = {}
    t0 = time.perf_counter()
    if name == "tokcost":
        from tokcost.bpe import TrainerConfig, train

        result = train([corpus], TrainerConfig(vocab_size=vocab, pattern=PATTERN_NAME, jobs=jobs))
        info["vocab"] = result.model.n_tokens
        info["distinct_pretokens"] = result.distinct_pretokens
        info["seconds_pretokenize"] = result.seconds_pretokenize
        info["seconds_merge"] = result.seconds_merge
    elif name == "hf":
        info["vocab"] = train_hf(corpus, pattern, vocab, max_token_length=MAX_TOKEN_LENGTH + 1)
    elif name in ("rustbpe", "bpeasy"):

        def lines() -> Iterator[str]:
            with open(corpus, encoding="utf-8", newline="") as fh:
                yield from fh

        if name == "rustbpe":
            import rustbpe

            rtok = rustbpe.Tokenizer()
            rtok.train_from_iterator(lines(), vocab, pattern=pattern)
            info["vocab"] = rtok.vocab_size
        else:
            import bpeasy

            info["vocab"] = len(bpeasy.train_bpe(lines(), pattern, MAX_TOKEN_LENGTH, vocab))
    else:
        raise SystemExit(f"unknown trainer {name}")
    info["seconds"] = time.perf_counter() - t0
    return info


def _tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and all its descendants, from /proc."""
    parent: dict[int, int] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry)
        parent[pid] = int(fields[1])
        rss[pid] = int(fields[21]) * page
    total = 0
    for pid in rss:
        p = pid
        while p > 1 and p != root:
            p = parent.get(p, 0)
        if p == root:
            total += rss[pid]
    return total


def time_trainer(
    name: str, corpus: Path, vocab: int, jobs: int, timeout: float, cap: int
) -> dict[str, float | str]:
    cmd = ["prlimit", f"--as={cap}", "--", sys.executable, __file__, "--worker", name]
    cmd += ["--corpus", str(corpus), "--vocab", str(vocab), "--jobs", str(jobs)]
    out = tempfile.TemporaryFile("w+")  # noqa: SIM115 (read back after the run)
    err = tempfile.TemporaryFile("w+")  # noqa: SIM115
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, start_new_session=True)
    peak, why = 0, ""
    while True:
        try:
            _, status, usage = os.wait4(proc.pid, os.WNOHANG)
        except ChildProcessError:
            break
        if _:
            break
        peak = max(peak, _tree_rss(proc.pid))
        wall = time.perf_counter() - t0
        if peak > cap or wall > timeout:
            why = f"stopped: peak RSS over {cap / 2**30:.0f} GiB" if peak > cap else (
                f"stopped: past the {timeout:.0f} s timeout")
            os.killpg(proc.pid, signal.SIGKILL)
            _, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.2)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    row: dict[str, float | str] = {
        "wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss_mb": peak / 1e6,
        "maxrss_mb": usage.ru_maxrss / 1024,
    }
    if why:
        row["failed"] = why
        return row
    out.seek(0)
    err.seek(0)
    if proc.returncode != 0:
        last = (err.read().strip().splitlines() or ["failed"])[-1]
        row["failed"] = f"exit {proc.returncode}: {last[:90]}"
        return row
    row.update(json.loads(out.read().strip().splitlines()[-1]))
    return row


HEADER = (f"{'trainer':<10}{'wall s':>9}{'CPU s':>8}{'peak RSS MB':>13}{'maxrss MB':>11}"
          f"{'wall/HF':>9}{'RSS/HF':>8}  notes")


def _median(runs: list[dict[str, float | str]], key: str) -> float | None:
    return statistics.median(float(r[key]) for r in runs) if runs else None


def _row(name: str, runs: list[dict[str, float | str]], hf_wall: float | None,
         hf_rss: float | None) -> str:
    """One table line: the medians of ``runs`` (a failed run alone: its reason)."""
    last = runs[-1]
    if "failed" in last:
        return (f"{name:<10}{float(last['wall']):>9.1f}{float(last['cpu']):>8.1f}"
                f"{float(last['rss_mb']):>13.0f}{float(last['maxrss_mb']):>11.0f}{'-':>9}"
                f"{'-':>8}  {last['failed']}")
    wall, cpu = _median(runs, "wall") or 0.0, _median(runs, "cpu") or 0.0
    rss, maxrss = _median(runs, "rss_mb") or 0.0, _median(runs, "maxrss_mb") or 0.0
    rw = f"{wall / hf_wall:.2f}" if hf_wall else "-"
    rr = f"{rss / hf_rss:.2f}" if hf_rss else "-"
    notes = f"vocab {int(float(last['vocab']))}"
    if "distinct_pretokens" in last:
        notes += (f", {int(float(last['distinct_pretokens'])):,} distinct pre-tokens,"
                  f" pretokenize {float(last['seconds_pretokenize']):.1f} s,"
                  f" merge {float(last['seconds_merge']):.1f} s")
    return f"{name:<10}{wall:>9.1f}{cpu:>8.1f}{rss:>13.0f}{maxrss:>11.0f}{rw:>9}{rr:>8}  {notes}"


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--mb", type=float, nargs="+", default=[40.0, 400.0, 2000.0])
    ap.add_argument("--vocab", type=int, default=32768)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per run")
    ap.add_argument("--cap-gb", type=float, default=8.0, help="memory cap per run (GiB)")
    ap.add_argument("--trainers", nargs="+", default=list(TRAINERS))
    ap.add_argument("--keep", action="store_true", help="keep the corpora")
    ap.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "tokcost-bench-bpe-scale"
    )
    ap.add_argument("--worker")
    ap.add_argument("--corpus")
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    if args.worker:
        print(json.dumps(run_trainer(args.worker, args.corpus, args.vocab, args.jobs)))
        return
    cap = int(args.cap_gb * 2**30)
    args.workdir.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(args.workdir).free
    need = int(max(args.mb) * 1e6 * 1.1)
    if free < need:
        raise SystemExit(f"{args.workdir}: {free / 1e9:.1f} GB free, the corpus needs {need / 1e9:.1f}")
    print(f"{os.cpu_count()} CPUs; pattern {PATTERN_NAME}; vocab {args.vocab}; tokcost --jobs "
          f"{args.jobs}; one trainer at a time; cap {args.cap_gb:g} GiB, {args.timeout:.0f} s a run")
    try:
        for mb in args.mb:
            corpus = args.workdir / f"corpus-{mb:g}MB.txt"
            if not corpus.exists() or corpus.stat().st_size < mb * 1e6:
                build_corpus(corpus, mb)
            size = corpus.stat().st_size
            rows: dict[str, list[dict[str, float | str]]] = {}
            print(f"\ncorpus {size / 1e6:.0f} MB (each run as it ends; load = 1-min load average "
                  f"before it)")
            print(HEADER)
            for _ in range(args.repeat):
                for name in args.trainers:
                    load = os.getloadavg()[0]
                    got = time_trainer(name, corpus, args.vocab, args.jobs, args.timeout, cap)
                    got["load"] = load
                    rows.setdefault(name, []).append(got)
                    print(_row(name, [got], None, None) + f", load {load:.2f}")
            print(f"\ncorpus {size / 1e6:.0f} MB: medians of {args.repeat} run(s)")
            print(HEADER)
            ok = {n: [r for r in rs if "failed" not in r] for n, rs in rows.items()}
            hf_wall, hf_rss = _median(ok.get("hf", []), "wall"), _median(ok.get("hf", []), "rss_mb")
            for name, runs in rows.items():
                print(_row(name, ok[name] or runs[-1:], hf_wall, hf_rss))
    finally:
        if not args.keep:
            shutil.rmtree(args.workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
