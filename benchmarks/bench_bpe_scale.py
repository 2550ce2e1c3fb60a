"""BPE training at scale: wall time and peak memory of six trainers at three corpus sizes,
in one run (not a test).

    pip install '.[bench]' && python benchmarks/bench_bpe_scale.py [--mb 40 400 2000]
        [--vocab 32768] [--jobs 2] [--timeout 600] [--cap-gb 8] [--repeat 1]
        [--pattern cl100k|o200k|gpt2] [--trainers tokcost hf gigabpe ...]

    # issue 29's comparison: tokcost against gigabpe on the GPT-2 byte-level split
    python benchmarks/bench_bpe_scale.py --mb 48 --pattern gpt2 --repeat 2 \
        --trainers tokcost hf gigabpe

1. Builds each corpus (at least MB megabytes) from text already on the machine (the
   Python standard library, /usr/share/doc, man pages: ``bench_bpe.build_corpus``; the
   sources repeat when the machine holds less text) in ``--workdir`` under /tmp, never
   committed, and deletes it at the end unless ``--keep``. Check ``df -h /tmp`` first:
   the 2 GB size needs about 2.5 GB free.
2. Trains tokcost, Hugging Face ``tokenizers`` BpeTrainer, ``rustbpe`` and ``bpeasy``
   ONE AT A TIME (never two trainers at once: the figures are per tool, and the machine
   may be shared), each in a fresh process, with the same vocabulary size and the
   ``--pattern`` split (cl100k unless named). tokcost and HF are configured to learn the
   same merges (HF's ``max_token_length`` = tokcost's + 1, as tokcost's trainer
   documents); rustbpe and bpeasy learn their own (rustbpe has no token-length limit;
   bpeasy's is 128 bytes). ``gigabpe`` (``train_bpe``, Rust) offers only the GPT-2
   byte-level and whitespace pre-tokenizers, so it runs with ``--pattern gpt2`` only
   (``pretokenizer="bytelevel"``, HF's ``max_token_length``, no minimum frequency);
   ``gigatoken``'s ``train_bpe`` likewise splits as GPT-2 only, and it reads the file as
   one text instead of line by line, so its merges are not HF's (printed below). gigabpe's
   alphabet is the bytes the corpus holds, HF's here all 256 (as tokcost's), so it is
   asked for ``vocab - 256 + distinct bytes`` tokens: the same number of merges.
   Every trainer's merges but rustbpe's and bpeasy's are written and compared with HF's after the
   runs (each as its (left, right) pairs, HF's spelling; a merge that spells a token made
   before counts as HF counts it), and the
   tokcost / gigabpe ratios of wall time and peak RSS are printed (issue 29's bar: 2.0).
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

TRAINERS = ("tokcost", "hf", "gigabpe", "gigatoken", "rustbpe", "bpeasy")
MAX_TOKEN_LENGTH = 128  # tokcost's default; HF gets 129 (it keeps tokens strictly shorter)


def run_trainer(name: str, corpus: str, vocab: int, jobs: int, pattern_name: str,
                merges_out: str, alphabet: int) -> dict[str, float]:
    """Runs inside the capped child process; returns what it can say about the run. The
    merges are written to ``merges_out`` after the clock stops (tokcost's, HF's, gigabpe's)."""
    from tokcost.bpe.pretokenize import PATTERNS

    pattern = PATTERNS[pattern_name]
    info: dict[str, float] = {}
    merges: list[list[str]] | None = None
    t0 = time.perf_counter()
    if name == "tokcost":
        from tokcost.bpe import TrainerConfig, train

        result = train([corpus], TrainerConfig(vocab_size=vocab, pattern=pattern_name, jobs=jobs))
        info["vocab"] = result.model.n_tokens
        info["distinct_pretokens"] = result.distinct_pretokens
        info["seconds_pretokenize"] = result.seconds_pretokenize
        info["seconds_merge"] = result.seconds_merge
    elif name == "hf":
        info["vocab"] = train_hf(corpus, pattern, vocab, max_token_length=MAX_TOKEN_LENGTH + 1,
                                 merges_out=merges_out)
    elif name == "gigabpe":
        if pattern_name != "gpt2":
            raise SystemExit("gigabpe offers only the GPT-2 byte-level split: --pattern gpt2")
        import gigabpe

        # Its README: train_bpe(files, vocab_size, ...) -> (vocab, merges), merges as HF
        # serializes them; "bytelevel" is HF's ByteLevel pre-tokenizer (GPT-2's split).
        gvocab, gmerges = gigabpe.train_bpe([corpus], vocab - 256 + alphabet,
                                            pretokenizer="bytelevel",
                                            min_frequency=0,
                                            max_token_length=MAX_TOKEN_LENGTH + 1)
        info["vocab"] = len(gvocab)
        merges = [list(m) for m in gmerges]
    elif name == "gigatoken":
        if pattern_name != "gpt2":
            raise SystemExit("gigatoken's trainer splits as GPT-2 only: --pattern gpt2")
        import gigatoken

        from tokcost.bpe.model import to_byte_level

        # train_bpe(in_data, vocab_size, special_tokens) -> (vocab, merges as byte pairs); it
        # reads the file as one text (no per-line split), so its merges are not HF's.
        gvocab, gmerges = gigatoken.train_bpe(corpus, vocab, [])
        info["vocab"] = len(gvocab)
        merges = [[to_byte_level(a), to_byte_level(b)] for a, b in gmerges]
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
    if name == "tokcost":
        from tokcost.bpe.model import to_byte_level

        # Each merge as its (left, right) pair in HF's byte-level spelling, as HF writes it:
        # a merge that spells a token made before stays in the list (HF keeps it too).
        spell = {i: to_byte_level(b) for b, i in result.model.ranks.items()}
        merges = [[spell[a], spell[b]] for a, b, _ in result.model.merges]
    if merges is not None:  # HF's: train_hf wrote them
        Path(merges_out).write_text(json.dumps(merges))
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
    name: str, corpus: Path, args: argparse.Namespace, cap: int, merges_out: Path
) -> dict[str, float | str]:
    timeout = args.timeout
    cmd = ["prlimit", f"--as={cap}", "--", sys.executable, __file__, "--worker", name]
    cmd += ["--corpus", str(corpus), "--vocab", str(args.vocab), "--jobs", str(args.jobs)]
    cmd += ["--pattern", args.pattern, "--merges-out", str(merges_out)]
    cmd += ["--alphabet", str(args.alphabet)]
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


def _distinct_bytes(corpus: Path) -> int:
    """How many of the 256 byte values the corpus holds (gigabpe's alphabet)."""
    seen = bytearray(256)
    with open(corpus, "rb") as fh:
        while chunk := fh.read(1 << 24):
            for b in set(chunk):
                seen[b] = 1
    return sum(seen)


def _compare_merges(merges: dict[str, list[list[list[str]]]]) -> None:
    """Every run's merges, as (left, right) pairs, against HF's first run."""
    if not merges.get("hf"):
        return
    theirs = merges["hf"][0]
    print(f"\nmerges against HF's ({len(theirs):,}):")
    for name, runs in merges.items():
        for i, mine in enumerate(runs, 1):
            first = next((k for k, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b), None)
            if first is None and len(mine) == len(theirs):
                verdict = f"equal, all {len(mine):,}"
            elif first is None:
                verdict = f"{len(mine):,} merges, HF {len(theirs):,}; the shared prefix is equal"
            else:
                verdict = (f"DIFFER from merge {first + 1}: {mine[first]!r}, HF {theirs[first]!r}"
                           f" ({sum(a != b for a, b in zip(mine, theirs, strict=False)):,} positions differ)")
            print(f"  {name:<10} run {i}: {verdict}")


def _ratios(ok: dict[str, list[dict[str, float | str]]]) -> None:
    """tokcost / gigabpe on medians (issue 29's bar: at most 2.0 for wall and for RSS)."""
    if not ok.get("tokcost") or not ok.get("gigabpe"):
        return
    wall = (_median(ok["tokcost"], "wall") or 0.0) / (_median(ok["gigabpe"], "wall") or 1.0)
    rss = (_median(ok["tokcost"], "rss_mb") or 0.0) / (_median(ok["gigabpe"], "rss_mb") or 1.0)
    met = "met" if wall <= 2.0 and rss <= 2.0 else "NOT met"
    print(f"\ntokcost / gigabpe: wall {wall:.2f}x, peak RSS {rss:.2f}x (bar: both <= 2.0: {met})")


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
    ap.add_argument("--pattern", default="cl100k", choices=["cl100k", "o200k", "gpt2"],
                    help="the pre-tokenizer split (gigabpe runs with gpt2 only)")
    ap.add_argument("--keep", action="store_true", help="keep the corpora")
    ap.add_argument(
        "--workdir", type=Path, default=Path(tempfile.gettempdir()) / "tokcost-bench-bpe-scale"
    )
    ap.add_argument("--worker")
    ap.add_argument("--corpus")
    ap.add_argument("--merges-out")
    ap.add_argument("--alphabet", type=int, default=256)
    args = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    if args.worker:
        print(json.dumps(run_trainer(args.worker, args.corpus, args.vocab, args.jobs,
                                     args.pattern, args.merges_out, args.alphabet)))
        return
    cap = int(args.cap_gb * 2**30)
    args.workdir.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(args.workdir).free
    need = int(max(args.mb) * 1e6 * 1.1)
    if free < need:
        raise SystemExit(f"{args.workdir}: {free / 1e9:.1f} GB free, the corpus needs {need / 1e9:.1f}")
    print(f"{os.cpu_count()} CPUs; pattern {args.pattern}; vocab {args.vocab}; tokcost --jobs "
          f"{args.jobs}; one trainer at a time; cap {args.cap_gb:g} GiB, {args.timeout:.0f} s a run")
    try:
        for mb in args.mb:
            corpus = args.workdir / f"corpus-{mb:g}MB.txt"
            if not corpus.exists() or corpus.stat().st_size < mb * 1e6:
                build_corpus(corpus, mb)
            size = corpus.stat().st_size
            args.alphabet = _distinct_bytes(corpus)
            rows: dict[str, list[dict[str, float | str]]] = {}
            merges: dict[str, list[list[list[str]]]] = {}
            print(f"\ncorpus {size / 1e6:.0f} MB, {args.alphabet} distinct bytes (each run as it ends; load = 1-min load average "
                  f"before it)")
            print(HEADER)
            for _ in range(args.repeat):
                for name in args.trainers:
                    load = os.getloadavg()[0]
                    out = args.workdir / f"merges-{name}.json"
                    out.unlink(missing_ok=True)
                    got = time_trainer(name, corpus, args, cap, out)
                    got["load"] = load
                    rows.setdefault(name, []).append(got)
                    if "failed" not in got and out.exists():
                        merges.setdefault(name, []).append(json.loads(out.read_text()))
                    print(_row(name, [got], None, None) + f", load {load:.2f}")
            print(f"\ncorpus {size / 1e6:.0f} MB: medians of {args.repeat} run(s)")
            print(HEADER)
            ok = {n: [r for r in rs if "failed" not in r] for n, rs in rows.items()}
            hf_wall, hf_rss = _median(ok.get("hf", []), "wall"), _median(ok.get("hf", []), "rss_mb")
            for name, runs in rows.items():
                print(_row(name, ok[name] or runs[-1:], hf_wall, hf_rss))
            _compare_merges(merges)
            _ratios(ok)
    finally:
        if not args.keep:
            shutil.rmtree(args.workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
