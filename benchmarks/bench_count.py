"""Counting throughput: tokcount against raw tiktoken, the raw fast backend, ttok and
count-tokens, in one run.

    pip install '.[fast,bench]' && python benchmarks/bench_count.py [--mb 40] [--repeat 3]

Builds corpora of real text already on this machine (the Python standard library's
sources, then /usr/share/doc) in a temporary folder, never committed. Peers that
download tiktoken's rank files at run time get a seeded TIKTOKEN_CACHE_DIR holding
the same verified bytes (DESIGN §8). Whole processes are timed several times,
alternating rows; medians, MB/s and ratios to each corpus's reference row are
printed, with each child's peak RSS (wait4). Every row of a corpus must print the
same token count: the table says whether they agree.

Then the sizes (``--no-sizes`` skips them): a folder of 5,000 small files, one 100 MB
file of ordinary text, a 50 MB file of one letter (a single pre-token, no cut point:
the worst case for memory) and a 10 MB file of long runs (five times 1 MB of text, then
1 MiB of one letter, another each time: where auto's gigatoken hands texts to toktok-rs),
each counted by
tokcount (defaults), tokcount with tiktoken forced, raw tiktoken on 2 threads and raw
toktok-rs, with wall time and peak RSS. Every
corpus also has tokcount with each Rust backend forced (FORCED: toktok-rs, gigatoken,
fastokens; issue 29). Then start-up and small inputs ('hi', the first 300 KB, 1, 2 and 4 MB
of the file) with each tokcount backend and ttok. The goals of issue 13 are checked at the
end. ``--rows TEXT`` keeps only the rows whose name holds TEXT (and the references).

Extending: add a corpus to CORPORA (a builder) and rows to ``rows()`` (each names its
corpus); ratios are against the corpus's row marked ``reference``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

BIN = Path(sys.executable).parent
ENCODING = "o200k_base"


def _text_files() -> Iterator[Path]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    yield from sorted(stdlib.rglob("*.py"))
    yield from sorted(p for p in Path("/usr/share/doc").rglob("*") if p.suffix in ("", ".txt"))


def text_bytes(src: Path) -> bytes | None:
    """A regular file's bytes if they are UTF-8 text (no NUL early on), else None."""
    try:
        if not src.is_file() or src.is_symlink():
            return None
        data = src.read_bytes()
        if b"\x00" in data[:8000]:
            return None
        data.decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return data


def build_corpus(folder: Path, megabytes: float) -> tuple[Path, Path, int]:
    """A tree of UTF-8 text files of at least ``megabytes`` MB, and one file of it all."""
    tree = folder / "tree"
    tree.mkdir()
    total = 0
    parts: list[bytes] = []
    for i, src in enumerate(_text_files()):
        if total >= megabytes * 1_000_000:
            break
        data = text_bytes(src)
        if data is None:
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


# --- corpora ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Corpus:
    """What rows count: a folder of files (``tree``) or one file."""

    name: str
    path: Path
    bytes: int
    tree: bool


def _mixed(work: Path, args: argparse.Namespace) -> list[Corpus]:
    tree, whole, size = build_corpus(work, args.mb)
    return [Corpus("tree", tree, size, True), Corpus("file", whole, size, False)]


SMALL_FILES = 5000
BIG_BYTES = 100_000_000
LETTER_BYTES = 50_000_000
RUNS = 5  # the long-runs file: this many times 1 MB of text, then 1 MiB of one letter
LETTER_TIMEOUT = 120.0  # a forced peer past this has lost to toktok-rs (about 1 s) anyway


def _sizes(work: Path, args: argparse.Namespace) -> list[Corpus]:
    """5,000 small files (the first text files found, whatever --mb), one 100 MB file of
    them repeated, and 50 MB of one letter."""
    if args.no_sizes:
        return []
    small = work / "small"
    small.mkdir()
    total, parts = 0, list[bytes]()
    for i, src in enumerate(_text_files()):
        if len(parts) >= SMALL_FILES:
            break
        try:
            if not src.is_file() or src.is_symlink():
                continue
            data = src.read_bytes()
            if not data or b"\x00" in data[:8000]:
                continue
            data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        (small / f"{i:06d}_{src.name}").write_bytes(data)
        parts.append(data)
        total += len(data)
    base = b"".join(parts)
    big = work / "big100.txt"
    with open(big, "wb") as out:
        left = BIG_BYTES
        while left > 0:
            piece = base[:left]
            out.write(piece)
            left -= len(piece)
    letter = work / "letter50.txt"
    letter.write_bytes(b"a" * LETTER_BYTES)
    runs = work / "runs10.txt"
    text = base[:1_000_000].decode("utf-8", "ignore").encode()  # whole characters
    # a different letter each time: gigatoken remembers a piece it has encoded, and five
    # equal pieces would cost it one
    runs.write_bytes(b"".join(text + b"\n" + bytes([ord("b") + i]) * (1 << 20) + b"\n"
                              for i in range(RUNS)))
    return [Corpus("small", small, total, True), Corpus("big", big, BIG_BYTES, False),
            Corpus("letter", letter, LETTER_BYTES, False),
            Corpus("runs", runs, runs.stat().st_size, False)]


# builder(work folder, arguments) -> corpora, built in this order
CORPORA: list[Callable[[Path, argparse.Namespace], list[Corpus]]] = [_mixed, _sizes]


# --- rows ------------------------------------------------------------------------------

# A bare script doing the same counting: read every file (keeping CRLF, as tokcount
# does), count on 2 threads, print the total and the counting seconds.
_READ = """
import sys, time
from pathlib import Path
p = Path(sys.argv[1])
files = sorted(p.iterdir()) if p.is_dir() else [p]
texts = []
for f in files:
    with open(f, encoding="utf-8", newline="") as h:
        texts.append(h.read())
t = time.perf_counter()
"""
RAW_TIKTOKEN = """
import sys
from tokcost.adapters.openai_encodings import ENCODINGS
from tokcost.adapters.tiktoken_enc import load_named
enc = load_named(ENCODINGS[sys.argv[2]])
""" + _READ + """
n = sum(len(x) for x in enc.encode_ordinary_batch(texts, num_threads=2))
print(n, time.perf_counter() - t)
"""
RAW_FAST = """
import sys, toktok
toktok.batch_count([""], sys.argv[2], 1)  # build the encoder before the clock starts
""" + _READ + """
n = sum(toktok.batch_count(texts, sys.argv[2], 2))
print(n, time.perf_counter() - t)
"""


@dataclass(frozen=True)
class Row:
    name: str
    corpus: str
    cmd: list[str]
    stdin: bool = False  # the corpus file on standard input
    env: dict[str, str] = field(default_factory=dict)
    reference: bool = False  # this corpus's ratios are against this row
    needs: str | None = None  # an executable or module without which the row is left out
    runs: int | None = None  # at most this many runs (a row that takes minutes)
    timeout: float | None = None  # seconds before the run is stopped and the row marked failed


# The exact Rust backends tokcount can be forced to (TOKCOST_COUNT_BACKEND): value, module.
FORCED = (("toktok", "toktok"), ("gigatoken", "gigatoken"), ("fastokens", "fastokens"))


def forced_rows(label: str, corpus: str, cmd: list[str], slow: int | None = None,
                timeout: float | None = None) -> list[Row]:
    """``cmd`` once per backend of FORCED, each asked for by name."""
    return [Row(f"{label}, {value} forced", corpus, cmd, env={"TOKCOST_COUNT_BACKEND": value},
                needs=module, runs=None if value == "toktok" else slow,
                timeout=None if value == "toktok" else timeout) for value, module in FORCED]


def rows(corpora: dict[str, Corpus]) -> list[Row]:
    tree, whole = str(corpora["tree"].path), str(corpora["file"].path)
    tokcount = str(BIN / "tokcount")
    tiktoken_forced = {"TOKCOST_COUNT_BACKEND": "tiktoken"}
    return [
        Row("tokcount (defaults)", "tree", [tokcount, tree, "--total"]),
        Row("tokcount -j 2 (default backend)", "tree", [tokcount, tree, "-j", "2", "--total"]),
        Row("tokcount -j 2, tiktoken forced", "tree", [tokcount, tree, "-j", "2", "--total"],
            env=tiktoken_forced),
        *forced_rows("tokcount -j 2", "tree", [tokcount, tree, "-j", "2", "--total"]),
        Row("tokcount -j 1 (default backend)", "tree", [tokcount, tree, "-j", "1", "--total"]),
        Row("raw tiktoken, 2 threads", "tree", [sys.executable, "-c", RAW_TIKTOKEN, tree,
                                                ENCODING], reference=True),
        Row("raw toktok-rs, 2 threads", "tree", [sys.executable, "-c", RAW_FAST, tree, ENCODING],
            needs="toktok"),
        Row("count-tokens -d -r", "tree", ["count-tokens", "-q", "-e", ENCODING, "-d", tree,
                                           "-r", "-p", "*"], needs="count-tokens"),
        Row("tokcount FILE (default backend)", "file", [tokcount, whole, "--total"]),
        Row("tokcount FILE, tiktoken forced", "file", [tokcount, whole, "--total"],
            env=tiktoken_forced),
        *forced_rows("tokcount FILE", "file", [tokcount, whole, "--total"]),
        Row("raw tiktoken", "file", [sys.executable, "-c", RAW_TIKTOKEN, whole, ENCODING],
            reference=True),
        Row("raw toktok-rs", "file", [sys.executable, "-c", RAW_FAST, whole, ENCODING],
            needs="toktok"),
        Row("ttok -m gpt-4o (stdin)", "file", ["ttok", "-m", "gpt-4o"], stdin=True,
            needs="ttok"),
        *[row for name in ("small", "big", "letter", "runs") if name in corpora
          for row in size_rows(name, str(corpora[name].path))],
    ]


def size_rows(corpus: str, path: str) -> list[Row]:
    """tokcount and the raw encoders on one of the sizes."""
    tokcount = str(BIN / "tokcount")
    # One pre-token of 50 MB: tiktoken's BPE is superlinear in it (a minute or more); once.
    # The long runs: 1 MiB pieces, about a second each for tiktoken and fastokens; once.
    slow = 1 if corpus in ("letter", "runs") else None
    return [
        Row("tokcount (defaults)", corpus, [tokcount, path, "--total"]),
        Row("tokcount, tiktoken forced", corpus, [tokcount, path, "--total"],
            env={"TOKCOST_COUNT_BACKEND": "tiktoken"}, runs=slow),
        # gigatoken and fastokens take 1-3 s per MB of one letter (superlinear): once, bounded.
        *forced_rows("tokcount", corpus, [tokcount, path, "--total"], slow,
                     LETTER_TIMEOUT if corpus == "letter" else None),
        Row("raw tiktoken, 2 threads", corpus,
            [sys.executable, "-c", RAW_TIKTOKEN, path, ENCODING], reference=True, runs=slow),
        Row("raw toktok-rs, 2 threads", corpus, [sys.executable, "-c", RAW_FAST, path, ENCODING],
            needs="toktok"),
    ]


def _available(row: Row) -> bool:
    if row.needs is None:
        return True
    if shutil.which(row.needs):
        return True
    import importlib.util

    return importlib.util.find_spec(row.needs) is not None


# --- running ---------------------------------------------------------------------------


@dataclass
class Result:
    walls: list[float] = field(default_factory=list)
    out: str = ""
    rss_kib: int = 0
    failed: str | None = None

    @property
    def tokens(self) -> int | None:
        first = self.out.split()[0] if self.out.split() else ""
        return int(first.replace(",", "")) if first.replace(",", "").isdigit() else None


def run(cmd: list[str], env: dict[str, str], stdin: Path | None,
        timeout: float | None = None) -> tuple[float, str, int, str]:
    """Wall seconds, stdout, the child's own peak RSS in KiB (wait4), and stderr on failure
    (coreutils' ``timeout`` stops a run past ``timeout`` s; its waited child's RSS counts)."""
    if timeout is not None:
        cmd = ["timeout", str(timeout), *cmd]
    with open(stdin or os.devnull, "rb") as handle, tempfile.TemporaryFile() as out, \
            tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=handle, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text = out.read().decode(errors="replace").strip()
        problem = "" if proc.returncode == 0 else (
            f"over {timeout:.0f} s" if timeout is not None and proc.returncode == 124
            else err.read().decode(errors="replace").strip())
    return wall, text, usage.ru_maxrss, problem


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mb", type=float, default=40, help="corpus size in MB (default 40)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per row (default 3)")
    parser.add_argument("--no-sizes", action="store_true",
                        help="skip the 5,000-file folder, 100 MB, one-letter and long-run rows")
    parser.add_argument("--rows", default="", help="only rows whose name holds this text "
                        "(with the reference rows), e.g. 'tokcount'")
    parser.add_argument("--no-startup", action="store_true", help="skip the small inputs")
    parser.add_argument("--build", type=Path, help=argparse.SUPPRESS)  # the builder child
    args = parser.parse_args()
    if args.build is not None:
        built = [c for build in CORPORA for c in build(args.build, args)]
        (args.build / "corpora.json").write_text(json.dumps(
            [[c.name, str(c.path), c.bytes, c.tree] for c in built]))
        return

    work = Path(tempfile.mkdtemp(prefix="tokcost-bench-"))
    try:
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        # Built in a child: a child's peak RSS (wait4) starts at its parent's RSS when it
        # was forked, so this process stays small or every row reads its corpora's size.
        subprocess.run([sys.executable, __file__, "--build", str(work), "--mb", str(args.mb),
                        *(["--no-sizes"] if args.no_sizes else [])], check=True)
        corpora = {name: Corpus(name, Path(path), size, tree) for name, path, size, tree
                   in json.loads((work / "corpora.json").read_text())}
        compile_tokcost()
        cache = work / "tiktoken-cache"
        cache.mkdir()
        seed_tiktoken_cache(cache)
        env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(cache)}
        for c in corpora.values():
            kind = f"{len(list(c.path.iterdir()))} files" if c.tree else "one file"
            print(f"corpus {c.name}: {kind}, {c.bytes / 1e6:.1f} MB ({c.path})")
        print()

        floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"(peak MiB below is each child's own; none reads under {floor:.0f} MiB, "
              "this process's own peak, which a forked child starts from)\n")
        table = [r for r in rows(corpora) if _available(r)
                 and (args.rows in r.name or r.reference)]
        left_out = [r.name for r in rows(corpora) if not _available(r)]
        results = {(r.corpus, r.name): Result() for r in table}
        for _ in range(args.repeat):
            for row in table:  # alternate the rows each round
                res = results[row.corpus, row.name]
                if res.failed or (row.runs is not None and len(res.walls) >= row.runs):
                    continue
                stdin = corpora[row.corpus].path if row.stdin else None
                wall, out, rss, problem = run(row.cmd, {**env, **row.env}, stdin, row.timeout)
                if problem:
                    res.failed = (problem.splitlines() or ["?"])[-1][:100]
                    continue
                res.walls.append(wall)
                res.out, res.rss_kib = out, max(res.rss_kib, rss)
        report(table, results, corpora)
        if left_out:
            print(f"\nleft out (not installed): {', '.join(left_out)}")
        if not args.no_startup:
            startup(env, corpora["file"].path, work)
        goals(results)
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(table: list[Row], results: dict[tuple[str, str], Result],
           corpora: dict[str, Corpus]) -> None:
    print(f"{'row':36} {'corpus':7} {'median s':>9} {'MB/s':>7} {'x ref':>7} "
          f"{'peak MiB':>9} {'tokens':>12}")
    for name in corpora:
        group = [r for r in table if r.corpus == name]
        if not group:
            continue
        ref = next((r for r in group if r.reference and results[name, r.name].walls), None)
        base = statistics.median(results[name, ref.name].walls) if ref else None
        mb = corpora[name].bytes / 1e6
        counts: dict[str, int | None] = {}
        for row in group:
            res = results[name, row.name]
            if res.failed or not res.walls:
                print(f"{row.name:36} {name:7} failed: {res.failed}")
                continue
            med = statistics.median(res.walls)
            ratio = f"{base / med:6.2f}x" if base else "      ?"
            counts[row.name] = res.tokens
            tokens = f"{res.tokens:,}" if res.tokens is not None else res.out[:12]
            runs = f" ({len(res.walls)} run)" if len(res.walls) == 1 else ""
            print(f"{row.name:36} {name:7} {med:9.2f} {mb / med:7.1f} {ratio} "
                  f"{res.rss_kib / 1024:9.0f} {tokens:>12}{runs}")
        # Agreement is judged against the reference row (raw tiktoken), row by row.
        want = counts.get(ref.name) if ref else None
        off = [f"{n} ({t:,})" if t is not None else n for n, t in counts.items() if t != want]
        agree = ("agree" if not off else f"DISAGREE with {want:,}: " + "; ".join(off)
                 if want is not None else "unchecked (no reference)")
        print(f"  {name}: counts {agree}; x ref = speed relative to "
              f"'{ref.name if ref else '?'}' (whole processes, > 1 is faster)\n")


def goals(results: dict[tuple[str, str], Result]) -> None:
    """Issue 13's goals, from this run's medians (whole processes, 2 cores)."""

    def med(corpus: str, row: str) -> float | None:
        res = results.get((corpus, row))
        return statistics.median(res.walls) if res and res.walls and not res.failed else None

    print("\ngoals (issue 13):")
    tool = med("tree", "tokcount (defaults)")
    for label, raw, want in (("raw tiktoken, 2 threads", "raw tiktoken, 2 threads", 5.0),
                             ("raw toktok-rs, 2 threads", "raw toktok-rs, 2 threads", 0.7)):
        base = med("tree", raw)
        if tool is None or base is None:
            print(f"  tokcount >= {want}x {label}: not measured")
            continue
        ratio = base / tool
        verdict = "holds" if ratio >= want else "DOES NOT HOLD"
        print(f"  tokcount (defaults) on the tree >= {want}x {label}: {ratio:.2f}x, {verdict}")
    # The tool against a bare script doing the same counting, on every corpus.
    for corpus, tool_row, raw_row in (("file", "tokcount FILE (default backend)", "raw toktok-rs"),
                                      *((c, "tokcount (defaults)", "raw toktok-rs, 2 threads")
                                        for c in ("small", "big", "letter", "runs"))):
        mine, raw = med(corpus, tool_row), med(corpus, raw_row)
        if mine is not None and raw is not None:
            verdict = "holds" if raw / mine >= 0.7 else "DOES NOT HOLD"
            print(f"  tokcount on {corpus} >= 0.7x raw toktok-rs: {raw / mine:.2f}x, {verdict}")
    big = results.get(("big", "tokcount (defaults)"))
    if big and big.walls:
        peak = big.rss_kib / 1024
        verdict = "holds" if peak * 1.048576 < 300 else "DOES NOT HOLD"
        print(f"  100 MB file under 300 MB peak RSS: {peak:.0f} MiB "
              f"({peak * 1.048576:.0f} MB), {verdict}")


SMALL_SIZES = (3, 300_000, 1_000_000, 2_000_000, 4_000_000)  # bytes: 'hi' on stdin, files


def startup(env: dict[str, str], source: Path, work: Path) -> None:
    """Start-up and small inputs, where loading the vocabulary is most of the time: each
    tokcount backend, ttok and bare Python on 'hi' and on the first 300 KB, 1, 2 and 4 MB
    of the mixed file (tokcount's default picks tiktoken for runs under SMALL_RUN_CHARS)."""
    print("start-up and small inputs, median of 7 (whole process, ms):")
    data = source.read_bytes()
    inputs: list[tuple[str, Path]] = []
    for size in SMALL_SIZES:
        path = work / f"first_{size}.txt"
        # cut on a character: a partial one at the end would be replaced and reported
        path.write_bytes(b"hi\n" if size == 3 else data[:size].decode("utf-8", "ignore").encode())
        inputs.append(("'hi' (stdin)" if size == 3 else f"{size / 1e6:g} MB", path))
    tokcount = str(BIN / "tokcount")
    cmds: dict[str, tuple[list[str], dict[str, str]]] = {
        "tokcount (defaults)": ([tokcount, "-", "--total"], {}),
        "tokcount, tiktoken forced": ([tokcount, "-", "--total"],
                                      {"TOKCOST_COUNT_BACKEND": "tiktoken"}),
    }
    for row in forced_rows("tokcount", "", [tokcount, "-", "--total"]):
        if _available(row):
            cmds[row.name] = (row.cmd, row.env)
    if shutil.which("ttok"):
        cmds["ttok -m gpt-4o"] = (["ttok", "-m", "gpt-4o"], {})
    walls: dict[tuple[str, str], list[float]] = {}
    for _ in range(7):
        for label, path in inputs:
            for name, (cmd, extra) in cmds.items():
                walls.setdefault((name, label), []).append(run(cmd, {**env, **extra}, path)[0])
    for name, cmd in (("tokcost --help", [str(BIN / "tokcost"), "--help"]),
                      ("python -c pass", [sys.executable, "-c", "pass"])):
        walls[name, ""] = [run(cmd, env, None)[0] for _ in range(7)]
    labels = [label for label, _ in inputs]
    print(f"  {'':30}" + "".join(f"{label:>14}" for label in labels))
    for name in cmds:
        print(f"  {name:30}" + "".join(
            f"{statistics.median(walls[name, label]) * 1000:14.0f}" for label in labels))
    for name in ("tokcost --help", "python -c pass"):
        print(f"  {name:30}{statistics.median(walls[name, '']) * 1000:14.0f}")


def compile_tokcost() -> None:
    """Byte-compile tokcost as pip does at install: an editable checkout run under
    PYTHONDONTWRITEBYTECODE would otherwise compile its modules on every run (about
    60 ms that no installed copy pays, and that the peers, installed, never pay)."""
    import tokcost

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(tokcost.__file__).parent)],
                   env=env, check=True, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
