"""Exact counting backends against tiktoken: exactness, MB/s, memory and start-up, in one run.

    pip install '.[fast,bench]' && python benchmarks/bench_backends.py [--mb 10] [--rounds 3]

Each candidate runs in a fresh process per round (alternating, so a noisy machine
hurts all alike): import and build the encoder (timed: start-up), count every file
of a mixed corpus on one thread and on two, count a set of adversarial texts, and
report per-file counts, which must all equal tiktoken's. Medians over rounds are
printed with ratios to tiktoken. A candidate that is not importable is listed as
such; install others next to tokcost to include them (PYTHONPATH works too).

The corpus: the tokcost corpora (21 languages of prose, code, data), the Python
standard library's sources and /usr/share/doc, in that mix, never committed. Facts
that no run can measure (licence, latest release, wheels offered) are in FACTS,
checked with ``pip index versions`` and ``pip download --only-binary :all:
--python-version 3.X --platform P`` for CPython 3.10-3.13 on manylinux x86_64/aarch64,
musllinux, macOS arm64/x86_64 and Windows.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_count import text_bytes

ROOT = Path(__file__).resolve().parent.parent

Count = Callable[[str], int]
Batch = Callable[[list[str]], list[int]]


@dataclass(frozen=True)
class Candidate:
    """One backend: how to build it, count one text, and count a batch on 2 threads."""

    name: str
    dist: str  # the package on the registry
    module: str
    build: Callable[[str], tuple[Count, Batch | None]]  # encoding -> (count, batch2)
    # Untimed, once per encoding in the parent (files it leaves in $TOKCOST_BENCH_CACHE)
    prepare: Callable[[str, Path], None] | None = None


def _tiktoken(encoding: str) -> tuple[Count, Batch | None]:
    from tokcost.adapters.openai_encodings import ENCODINGS
    from tokcost.adapters.tiktoken_enc import load_named

    enc = load_named(ENCODINGS[encoding])
    return (lambda t: len(enc.encode_ordinary(t)),
            lambda ts: [len(x) for x in enc.encode_ordinary_batch(ts, num_threads=2)])


def _toktok(encoding: str) -> tuple[Count, Batch | None]:
    import toktok

    toktok.batch_count([""], encoding, 1)
    return (lambda t: toktok.batch_count([t], encoding, 1)[0],
            lambda ts: toktok.batch_count(ts, encoding, 2))


def _quicktok(encoding: str) -> tuple[Count, Batch | None]:
    import quicktok

    enc = quicktok.get_encoding(encoding)
    enc.count("")
    return enc.count, lambda ts: [int(n) for n in quicktok.count_batch(enc, ts, threads=2)]


def _riptoken(encoding: str) -> tuple[Count, Batch | None]:
    import riptoken

    from tokcost.adapters.openai_encodings import ENCODINGS, find_verified_ranks

    enc = ENCODINGS[encoding]
    core = riptoken.CoreBPE(find_verified_ranks(enc), enc.special_tokens, enc.pattern)
    return lambda t: len(core.encode_ordinary(t)), None


def _bpe_openai(encoding: str) -> tuple[Count, Batch | None]:
    import bpe_openai

    enc = bpe_openai.get_encoding(encoding)
    return (lambda t: len(enc.encode_ordinary(t)),
            lambda ts: [len(x) for x in enc.encode_ordinary_batch(ts, num_threads=2)])


def _rs_bpe(encoding: str) -> tuple[Count, Batch | None]:
    from rs_bpe import openai

    tok = getattr(openai, encoding)()
    return tok.count, None


def _kitoken(encoding: str) -> tuple[Count, Batch | None]:
    from kitoken import Kitoken

    from tokcost.adapters.openai_encodings import ENCODINGS, candidate_files, read_rank_bytes

    path = next(p for p in candidate_files(ENCODINGS[encoding]) if p.is_file())
    tok = Kitoken.from_tiktoken(read_rank_bytes(path))
    return lambda t: len(tok.encode(t, False)), None


def _byte_chars() -> dict[int, str]:
    """GPT-2's printable stand-in for each byte, as Hugging Face byte-level BPE writes
    tokens: printable Latin-1 bytes stand for themselves, the rest from U+0100 on."""
    kept = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    moved = [b for b in range(256) if b not in kept]
    return {**{b: chr(b) for b in kept}, **{b: chr(0x100 + i) for i, b in enumerate(moved)}}


def tiktoken_as_hf_json(encoding: str, path: Path) -> None:
    """Write ``encoding`` as a Hugging Face tokenizer.json: the same ranks as BPE merges
    (each token's two parts are what BPE leaves of its bytes using only lower ranks),
    the same split pattern, no normalizer. HF tokenizers counts the benchmark corpus
    with it exactly as tiktoken does; it is how a candidate that reads only
    tokenizer.json files gets an OpenAI encoding here."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    from tokcost.adapters.openai_encodings import ENCODINGS, find_verified_ranks

    enc = ENCODINGS[encoding]
    ranks = find_verified_ranks(enc)
    assert ranks is not None, f"{encoding}: no verified rank file here"
    chars = _byte_chars()

    def shown(token: bytes) -> str:
        return "".join(chars[b] for b in token)

    def halves(token: bytes, rank: int) -> tuple[bytes, bytes]:
        parts = [bytes([b]) for b in token]
        while len(parts) > 2:
            found = [(ranks.get(parts[i] + parts[i + 1], rank), i) for i in range(len(parts) - 1)]
            best, i = min(found)
            if best >= rank:
                break
            parts[i:i + 2] = [parts[i] + parts[i + 1]]
        assert len(parts) == 2, token
        return parts[0], parts[1]

    merges = [tuple(map(shown, halves(tok, r))) for tok, r in sorted(ranks.items(), key=lambda kv: kv[1])
              if len(tok) > 1]
    tok = Tokenizer(models.BPE(vocab={shown(t): r for t, r in ranks.items()}, merges=merges,
                               ignore_merges=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(enc.pattern), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.save(str(path))


def _prepare_tokie(encoding: str, cache: Path) -> None:
    """tokie's own binary file of the encoding (its fast load), made once per run."""
    import tokie

    json_path = cache / f"{encoding}.json"
    tiktoken_as_hf_json(encoding, json_path)
    tokie.Tokenizer.from_json(str(json_path)).save(str(cache / f"{encoding}.tkz"))


def _tokie(encoding: str) -> tuple[Count, Batch | None]:
    import tokie

    tok = tokie.Tokenizer.from_file(str(Path(os.environ[CACHE_ENV]) / f"{encoding}.tkz"))
    return tok.count_tokens, tok.count_tokens_batch  # its batch uses every core (2 here)


def _prepare_rank_file(encoding: str, cache: Path) -> None:
    """The encoding's verified rank file, uncompressed, as ``{encoding}.tiktoken`` (gigatoken
    and fastokens read a plain .tiktoken path; the one on this machine is gzipped)."""
    from tokcost.adapters.openai_encodings import ENCODINGS, candidate_files, read_rank_bytes

    path = next(p for p in candidate_files(ENCODINGS[encoding]) if p.is_file())
    (cache / f"{encoding}.tiktoken").write_bytes(read_rank_bytes(path))


def _gigatoken(encoding: str) -> tuple[Count, Batch | None]:
    # Tokenizer.from_tiktoken(path, pretokenizer=...): the split scheme named, since the
    # file name is ours; no special tokens, so "<|endoftext|>" is ordinary text, as in
    # tiktoken's encode_ordinary. encode() returns a uint32 array; encode_batch an awkward
    # Array, encoded on its own thread pool (every core: 2 here).
    import awkward
    import gigatoken

    rank_file = Path(os.environ[CACHE_ENV]) / f"{encoding}.tiktoken"
    tok = gigatoken.Tokenizer.from_tiktoken(rank_file, pretokenizer=encoding.split("_")[0])
    return (lambda t: len(tok.encode(t)),
            lambda ts: [int(n) for n in awkward.num(tok.encode_batch(ts), axis=1)])


def _fastokens(encoding: str) -> tuple[Count, Batch | None]:
    # Tokenizer.from_tiktoken(path, encoding=...) takes OpenAI's pattern and special
    # tokens for the name; encode_ordinary ignores the specials. encode_batch_flat (its
    # own pool) returns the ids and len+1 uint64 offsets: counts are their differences;
    # split_special_tokens=True reads special-token text as ordinary text.
    import numpy
    from fastokens import Tokenizer

    rank_file = Path(os.environ[CACHE_ENV]) / f"{encoding}.tiktoken"
    tok = Tokenizer.from_tiktoken(str(rank_file), encoding=encoding)

    def batch(ts: list[str]) -> list[int]:
        _, offsets = tok.encode_batch_flat(ts, split_special_tokens=True)
        return [int(n) for n in numpy.diff(numpy.frombuffer(offsets, numpy.uint64))]

    return lambda t: len(tok.encode_ordinary(t).ids), batch


CACHE_ENV = "TOKCOST_BENCH_CACHE"  # where prepare() leaves files for the workers

CANDIDATES = [
    Candidate("tiktoken", "tiktoken", "tiktoken", _tiktoken),
    Candidate("toktok-rs", "toktok-rs", "toktok", _toktok),
    Candidate("quicktok-v1", "quicktok-v1", "quicktok", _quicktok),
    Candidate("riptoken", "riptoken", "riptoken", _riptoken),
    Candidate("bpe-openai", "bpe-openai", "bpe_openai", _bpe_openai),
    Candidate("rs-bpe", "rs-bpe", "rs_bpe", _rs_bpe),
    Candidate("kitoken", "kitoken", "kitoken", _kitoken),
    Candidate("tokie", "tokie", "tokie", _tokie, _prepare_tokie),
    Candidate("gigatoken", "gigatoken", "gigatoken", _gigatoken, _prepare_rank_file),
    Candidate("fastokens", "fastokens", "fastokens", _fastokens, _prepare_rank_file),
]

# What no run measures, as the registry showed it (see the module doc for how).
# wheels: CPython versions x platforms with a binary wheel ("sdist" = needs a Rust build).
FACTS: dict[str, dict[str, str]] = {
    "tiktoken": {"licence": "MIT", "latest": "0.14.0 (2026-08)",
                 "wheels": "3.9-3.14, Linux x86_64/aarch64/musl, macOS, Windows"},
    "toktok-rs": {"licence": "MIT", "latest": "0.3.0 (2026-10), 6 releases",
                  "wheels": "3.11+ only (abi3): Linux x86_64/aarch64, macOS, Windows; no musl"},
    "quicktok-v1": {"licence": "MIT", "latest": "0.4.0 (2026-06), 3 releases",
                    "wheels": "3.10-3.13: Linux x86_64/aarch64/musl, macOS arm64, Windows; "
                              "no macOS x86_64"},
    "riptoken": {"licence": "MIT", "latest": "0.2.4 (2026-04), 6 releases",
                 "wheels": "3.10-3.13: Linux x86_64/aarch64, macOS; no Windows, no musl"},
    "bpe-openai": {"licence": "MIT", "latest": "0.1.4 (2025-10), 5 releases",
                   "wheels": "abi3 3.9+: Linux x86_64/aarch64, macOS arm64, Windows"},
    "rs-bpe": {"licence": "MIT", "latest": "0.1.0 (2025-03), 1 release",
               "wheels": "not surveyed (a single release)"},
    "kitoken": {"licence": "BSD-2-Clause", "latest": "0.11.1 (2026-10)",
                "wheels": "abi3 3.10+"},
    "tokie": {"licence": "MIT OR Apache-2.0", "latest": "0.1.4",
              "wheels": "3.10-3.14 (cp311 manylinux x86_64 used here)"},
    # From the installed wheels' metadata (the registry's index was not reachable here).
    "gigatoken": {"licence": "MIT", "latest": "0.10.0 (measured; history not checked)",
                  "wheels": "abi3 3.10+ (manylinux x86_64 used here)"},
    "fastokens": {"licence": "Apache-2.0", "latest": "0.3.5 (measured; history not checked)",
                  "wheels": "abi3 3.9+ (manylinux x86_64 used here)"},
}
NOT_EVALUATED = {
    "wordchipper": "downloads its vocabularies at run time; offline it builds a 256-byte one",
    "tokendagger, runtoken, nanotok": "no wheel for CPython 3.11 on Linux x86_64",
}


def adversarial() -> list[str]:
    """Texts that break shortcuts: long runs, CRLF, marks, emoji, special-token text."""
    return [
        "a" * 200_000, "1" * 20_011, " " * 20_000 + "x", "\r\n" * 10_000, "!" * 40_000,
        "e\u0301" * 20_000, "👨‍👩‍👧‍👦" * 4000, "'s'S'll'LL're" * 2000, "\x00" * 2000,
        "<|endoftext|>" * 2000, "x<|endoftext|> y<|endofprompt|>" * 1000,
        " ".join(str(i) for i in range(40_000)), "".join(chr(c) for c in range(32, 0x3000)),
        "a\ud800b\udfffc" * 100,  # lone surrogates: tiktoken replaces them
    ]


# --- the worker: one candidate in a fresh process ---------------------------------------


def worker(name: str, encoding: str, folder: str) -> None:
    cand = next(c for c in CANDIDATES if c.name == name)
    start = time.perf_counter()
    try:
        __import__(cand.module)
    except ImportError as exc:
        print(json.dumps({"missing": str(exc)}))
        return
    imported = time.perf_counter()
    count, batch2 = cand.build(encoding)
    count("warm")
    loaded = time.perf_counter()
    rss_loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    texts = [p.read_text(encoding="utf-8") for p in sorted(Path(folder).iterdir())]

    t = time.perf_counter()
    counts = [count(x) for x in texts]
    one = time.perf_counter() - t
    t = time.perf_counter()
    if batch2 is not None:
        counts2 = batch2(texts)
        how2 = "own pool"
    else:
        with ThreadPoolExecutor(2) as pool:
            counts2 = list(pool.map(count, texts))
        how2 = "2 Python threads"
    two = time.perf_counter() - t

    from tokcost.adapters.fast_count import replace_surrogates

    adv: list[int | str] = []
    raised: list[str] = []
    adv_s = 0.0
    for i, text in enumerate(adversarial()):
        t = time.perf_counter()
        try:
            adv.append(count(text))
        except Exception as exc:
            # A raw API that refuses a str UTF-8 cannot hold is noted, then given what
            # tiktoken itself encodes for it (as tokcost's adapter does).
            raised.append(f"text {i}: {type(exc).__name__}")
            try:
                adv.append(count(replace_surrogates(text)))
            except Exception as again:
                adv.append(type(again).__name__)
        adv_s += time.perf_counter() - t
    print(json.dumps({
        "import_s": imported - start, "load_s": loaded - imported,
        "one_s": one, "two_s": two, "how2": how2, "counts": counts,
        "same_two": counts2 == counts, "adversarial": adv, "adversarial_s": adv_s, "raised": raised,
        "rss_loaded_mb": rss_loaded / 1024,
        "rss_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }))


# --- the corpus --------------------------------------------------------------------------


def _sources() -> Iterator[Path]:
    """Prose in 21 languages, code and data first, then Python and English docs."""
    yield from sorted(p for p in (ROOT / "corpora").rglob("*") if p.suffix != ".yaml")
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    docs = sorted(p for p in Path("/usr/share/doc").rglob("*") if p.suffix in ("", ".txt"))
    code = sorted(stdlib.rglob("*.py"))
    # Interleave code and docs so any size has both.
    for i in range(max(len(code), len(docs))):
        yield from (lst[i] for lst in (code, docs) if i < len(lst))


def build_corpus(folder: Path, megabytes: float) -> int:
    """Files of UTF-8 text, at least ``megabytes`` MB; the corpora's multilingual prose
    is repeated to about a fifth of the total (it is only 0.4 MB)."""
    total, n = 0, 0
    prose = sorted((ROOT / "corpora" / "prose").glob("*.txt"))
    target = megabytes * 1e6
    for src in _sources():
        if total >= target:
            break
        data = text_bytes(src)
        if data is None:
            continue
        (folder / f"{n:06d}_{src.name}").write_bytes(data)
        n, total = n + 1, total + len(data)
        if n % 40 == 0:  # keep other languages in the mix as the corpus grows
            for p in prose[(n // 40) % len(prose):][:4]:
                data = p.read_bytes()
                (folder / f"{n:06d}_{p.name}").write_bytes(data)
                n, total = n + 1, total + len(data)
    return total


# --- the parent --------------------------------------------------------------------------


def _run_worker(name: str, encoding: str, folder: Path, timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", name, encoding, str(folder)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                  [str(ROOT), os.environ.get("PYTHONPATH", "")])})
    except subprocess.TimeoutExpired:
        return {"failed": f"over {timeout:.0f} s"}
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return {"failed": last[:120]}
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mb", type=float, default=10, help="corpus size in MB (default 10)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per backend (default 3)")
    parser.add_argument("--encodings", default="o200k_base,cl100k_base")
    parser.add_argument("--only", default="", help="comma-separated candidate names")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per worker run")
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    parser.add_argument("--prepare", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    if args.prepare:
        name, encoding, cache = args.prepare
        prepare = next(c.prepare for c in CANDIDATES if c.name == name)
        assert prepare is not None
        prepare(encoding, Path(cache))
        return

    cands = [c for c in CANDIDATES if not args.only or c.name in args.only.split(",")]
    with tempfile.TemporaryDirectory(prefix="tokcost-backends-") as tmp:
        folder, cache = Path(tmp) / "corpus", Path(tmp) / "cache"
        folder.mkdir()
        cache.mkdir()
        size = build_corpus(folder, args.mb)
        mb = size / 1e6
        print(f"corpus: {len(list(folder.iterdir()))} files, {mb:.1f} MB (prose in 21 "
              f"languages, code, data, Python sources, docs); {args.rounds} rounds\n")
        os.environ[CACHE_ENV] = str(cache)
        for encoding in args.encodings.split(","):
            for cand in cands:
                if cand.prepare is not None and importlib.util.find_spec(cand.module):
                    # In a child: a worker's peak RSS (wait4) starts at this process's
                    # size when forked, so this process must not load a vocabulary.
                    subprocess.run([sys.executable, __file__, "--prepare", cand.name, encoding,
                                    str(cache)], check=True,
                                   env={**os.environ, "PYTHONPATH": os.pathsep.join(
                                       [str(ROOT), os.environ.get("PYTHONPATH", "")])})
            runs: dict[str, list[dict[str, Any]]] = {c.name: [] for c in cands}
            for _ in range(args.rounds):
                for cand in cands:  # alternate: every round runs every backend once
                    runs[cand.name].append(_run_worker(cand.name, encoding, folder,
                                                       args.timeout))
            _report(encoding, mb, runs, sorted(p.name for p in folder.iterdir()))
    _facts([c.name for c in cands])
    print("\nnot evaluated:")
    for name, why in NOT_EVALUATED.items():
        print(f"  {name}: {why}")


def _why_not_exact(r0: dict[str, Any], truth: dict[str, Any], files: list[str]) -> str:
    """Why a backend is disqualified: its first count that differs from tiktoken's."""
    for what, mine, theirs in (("file", r0["counts"], truth["counts"]),
                               ("adversarial text", r0["adversarial"], truth["adversarial"])):
        off = [i for i, (a, b) in enumerate(zip(mine, theirs, strict=True)) if a != b]
        if off:
            i = off[0]
            name = files[i] if what == "file" else str(i)
            return (f"{what} {name}: {mine[i]} tokens, tiktoken {theirs[i]}"
                    + (f" ({len(off) - 1} more {what}s differ)" if len(off) > 1 else ""))
    return "its 2-thread counts differ from its own 1-thread counts"


def _report(encoding: str, mb: float, runs: dict[str, list[dict[str, Any]]],
            files: list[str]) -> None:
    ok = {n: [r for r in rs if "counts" in r] for n, rs in runs.items()}
    truth = ok["tiktoken"][0] if ok.get("tiktoken") else None
    base1 = statistics.median(r["one_s"] for r in ok["tiktoken"]) if truth else None
    base2 = statistics.median(r["two_s"] for r in ok["tiktoken"]) if truth else None
    print(f"== {encoding}" + (f": {sum(truth['counts']):,} tokens (tiktoken)" if truth else ""))
    head = (f"{'backend':13} {'version':8} {'exact':>12} {'MB/s 1t':>8} {'x tt':>6} "
            f"{'MB/s 2t':>8} {'x tt 2t':>7} {'import':>7} {'load':>6} {'RSS MB':>7} "
            f"{'peak MB':>7} {'adv s':>6}")
    print(head)
    for name, results in runs.items():
        good = ok[name]
        if not good:
            why = results[0].get("missing") or results[0].get("failed") or "?"
            print(f"{name:13} not run: {why}")
            continue
        med = {k: statistics.median(r[k] for r in good) for k in
               ("one_s", "two_s", "import_s", "load_s", "rss_loaded_mb", "rss_peak_mb",
                "adversarial_s")}
        r0 = good[0]
        if truth is None:
            exact = "?"
        else:
            wrong_files = sum(a != b for a, b in zip(r0["counts"], truth["counts"], strict=True))
            wrong_adv = sum(a != b for a, b in zip(r0["adversarial"], truth["adversarial"], strict=True))
            exact = "yes" if not wrong_files and not wrong_adv and r0["same_two"] else (
                f"{wrong_files}f/{wrong_adv}a off")
        version = _version(name)
        x1 = f"{base1 / med['one_s']:6.2f}" if base1 else "     ?"
        x2 = f"{base2 / med['two_s']:7.2f}" if base2 else "      ?"
        print(f"{name:13} {version:8} {exact:>12} {mb / med['one_s']:8.1f} {x1} "
              f"{mb / med['two_s']:8.1f} {x2} {med['import_s']:7.3f} {med['load_s']:6.2f} "
              f"{med['rss_loaded_mb']:7.0f} {med['rss_peak_mb']:7.0f} "
              f"{med['adversarial_s']:6.2f}")
    print("  (exact: per-file counts and adversarial texts equal tiktoken's, also on 2 threads;"
          " 'Nf/Ma off': N files, M adversarial texts differ or crash; 2t: the backend's"
          " own pool where it has one, else 2 Python threads; adv s: time for the"
          " adversarial texts)")
    for name, rs in ok.items():
        if rs and truth is not None and name != "tiktoken":
            r0 = rs[0]
            if (r0["counts"] != truth["counts"] or r0["adversarial"] != truth["adversarial"]
                    or not r0["same_two"]):
                print(f"  {name} DISQUALIFIED (a count differs from tiktoken's):"
                      f" {_why_not_exact(r0, truth, files)}")
    for name, rs in ok.items():
        if rs and rs[0]["raised"]:
            print(f"  {name} raised on {', '.join(rs[0]['raised'])} (counted after"
                  " replacing surrogates as tiktoken does)")
    print()


def _facts(names: list[str]) -> None:
    print(f"{'backend':13} {'licence':13} {'latest release':32} wheels")
    for name in names:
        facts = FACTS.get(name, {})
        print(f"{name:13} {facts.get('licence', '?'):13} {facts.get('latest', '?'):32} "
              f"{facts.get('wheels', '?')}")


def _version(dist_name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    dist = next(c.dist for c in CANDIDATES if c.name == dist_name)
    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


if __name__ == "__main__":
    main()
