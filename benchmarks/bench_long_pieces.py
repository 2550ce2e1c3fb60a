"""Where gigatoken is slow, and what the guard that sends those texts to toktok-rs costs.

    pip install '.[fast]' && python benchmarks/bench_long_pieces.py [--mb 1]

gigatoken is slow on long pre-tokens. For pieces of n/2 to n characters (n from 256 to
262,144) of one kind (a letter repeated, random letters, whitespace, punctuation, a CJK
letter repeated), each followed by a digit (which ends a piece), about ``--mb`` MB of them are
counted once in one process by gigatoken, toktok-rs and (to 16k) tiktoken; the table prints
ms per MB and gigatoken / toktok-rs (> 1: toktok-rs is faster). The pieces' lengths and
characters are drawn at random so that almost every piece is new: gigatoken remembers the
pieces it has encoded (a second count of the same text took 3 ms per MB where the first took
hundreds), which would hide the cost. Every count must equal the others. Then the guard,
``has_long_run(text, limit)`` at 1,024, GIGATOKEN_LONG_RUN (4,096) and 32,768: ms per MB on
ordinary text (the Python standard library and /usr/share/doc in 1 MiB texts, and how many
of those hold such a run), on CJK prose, and on its worst case (runs one
short of the limit, the samples all inside them; best of 5). One process: the ratios within
the run are what to read.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from pathlib import Path

from tokcost.adapters.fast_count import GIGATOKEN_LONG_RUN
from tokcost.adapters.long_runs import has_long_run
from tokcost.adapters.openai_encodings import ENCODINGS, verified_rank_file
from tokcost.adapters.tiktoken_enc import load_named

ENCODING = "o200k_base"
LENGTHS = (256, 1024, 4096, 16384, 32768, 65536, 262144)
TIKTOKEN_UP_TO = 16384  # past this tiktoken takes seconds per MB (and overflows its stack
# on a megabyte of spaces)
_rnd = random.Random(29)
# kind -> the characters a piece repeats (one, drawn per piece), or None: random letters
KINDS: dict[str, str | None] = {
    "a letter repeated": "abcdefghijklmnopqrstuvwxyz",
    "random letters": None,
    "whitespace": " \t\u2003\u3000",
    "punctuation": "=-*#~_+.",
    "a CJK letter": "中文字語言",
}


def make_piece(kind: str, n: int) -> str:
    """One piece of n/2 to n characters of ``kind``, then the digit that ends it."""
    length = _rnd.randint(max(1, n // 2), n)
    chars = KINDS[kind]
    if chars is None:
        return "".join(_rnd.choices("abcdefghijklmnopqrstuvwxyz", k=length)) + "1"
    return _rnd.choice(chars) * length + "1"


def best(fn: Callable[[], int], rounds: int = 3) -> tuple[float, int]:
    times, result = [], 0
    for _ in range(rounds):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def pieces(mb: float) -> None:
    import gigatoken
    import toktok

    giga = gigatoken.Tokenizer.from_tiktoken(verified_rank_file(ENCODINGS[ENCODING]),
                                             pretokenizer="o200k")
    giga.encode("warm up")  # its first call does one-off work (0.1-0.2 s)
    toktok.batch_count([""], ENCODING, 1, False)
    tik = load_named(ENCODINGS[ENCODING])
    print(f"ms per MB, {ENCODING}, pieces of n/2 to n characters, each ended by a digit:")
    print(f"{'kind':18} {'n':>7} {'MB':>5} {'gigatoken':>10} {'toktok-rs':>10} "
          f"{'tiktoken':>9} {'giga/toktok':>12}")
    for kind in KINDS:
        for n in LENGTHS:
            parts: list[str] = []
            while sum(map(len, parts)) < mb * 1e6 / (3 if kind == "a CJK letter" else 1):
                parts.append(make_piece(kind, n))
            text = "".join(parts)
            size = len(text.encode()) / 1e6
            tg, g = best(lambda: len(giga.encode(text)), 1)  # noqa: B023
            tt, k = best(lambda: toktok.batch_count([text], ENCODING, 1, False)[0], 1)  # noqa: B023
            if n <= TIKTOKEN_UP_TO:
                tr, r = best(lambda: len(tik.encode_ordinary(text)), 1)  # noqa: B023
                tiktoken_ms = f"{tr / size * 1000:9.1f}"
            else:
                r, tiktoken_ms = g, f"{'-':>9}"
            if not g == k == r:
                raise SystemExit(f"counts differ on {kind} x {n}: {g}, {k}, {r}")
            print(f"{kind:18} {n:7} {size:5.2f} {tg / size * 1000:10.1f} "
                  f"{tt / size * 1000:10.1f} {tiktoken_ms} {tg / tt:12.2f}")


def chunks(megabytes: float) -> list[str]:
    """The standard library's sources then /usr/share/doc, in texts of about 1 MiB (the size
    tokcount hands a backend at once), up to ``megabytes``."""
    from bench_count import _text_files, text_bytes

    out, part, size = [], list[str](), 0
    for path in _text_files():
        data = text_bytes(path)
        if data is None:
            continue
        part.append(data.decode("utf-8"))
        size += len(data)
        if size >= 1 << 20:
            out.append("".join(part))
            part, size = [], 0
            if len(out) >= megabytes:
                break
    return out


def guard(megabytes: float) -> None:
    ordinary = chunks(megabytes)
    zh = (Path(__file__).resolve().parent.parent / "corpora" / "prose" / "zh.txt").read_text(
        encoding="utf-8")
    cjk = zh * (2_000_000 // len(zh.encode()) + 1)
    total = sum(len(t.encode()) for t in ordinary) / 1e6
    for limit in sorted({1024, GIGATOKEN_LONG_RUN, 32768}):
        print(f"\nthe guard, has_long_run(text, {limit:,}), ms per MB:")
        start, found = time.perf_counter(), sum(has_long_run(t, limit) for t in ordinary)
        seconds = time.perf_counter() - start
        print(f"  {len(ordinary)} texts of the standard library and /usr/share/doc, {total:.0f} MB: "
              f"{seconds / total * 1000:7.3f} ms/MB, {found} hold such a run")
        for name, text in {"CJK prose": cjk, "runs one short":
                           ("a" * (limit - 1) + "1") * (2_000_000 // limit)}.items():
            seconds, hit = best(lambda: has_long_run(text, limit), 5)  # noqa: B023
            size = len(text.encode()) / 1e6
            print(f"  {name:16} {size:5.2f} MB  {seconds / size * 1000:7.3f} ms/MB  "
                  f"found={bool(hit)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mb", type=float, default=1.0, help="MB per cell (default 1)")
    parser.add_argument("--guard-mb", type=float, default=256,
                        help="MB of ordinary text the guard reads (default 256: all there is)")
    args = parser.parse_args()
    pieces(args.mb)
    guard(args.guard_mb)


if __name__ == "__main__":
    main()
