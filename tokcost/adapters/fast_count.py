"""Exact counts without ids for the OpenAI encodings from a Rust backend (``tokcost[fast]``:
toktok-rs), chosen by ``TOKCOST_COUNT_BACKEND``: ``auto``, ``tiktoken``, ``toktok``, or the
measured peers ``gigatoken`` and ``fastokens`` (docs/count.md, docs/counting-speed.md)."""

from __future__ import annotations

import os
import re
import sys
import threading
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from tokcost.adapters.long_runs import has_long_run
from tokcost.adapters.openai_encodings import ENCODINGS
from tokcost.errors import TokenizerNotFound, UsageError, install_hint

BACKEND_ENV = "TOKCOST_COUNT_BACKEND"
CHOICES = AUTO, TIKTOKEN, TOKTOK, GIGATOKEN, FASTOKENS = (
    "auto", "tiktoken", "toktok", "gigatoken", "fastokens")
# Vocabulary and specials equal tiktoken's (tests/test_fast_backend.py checks each entry).
FAST_ENCODINGS = frozenset({"o200k_base", "cl100k_base", "o200k_harmony"})
# Shorter runs are tiktoken's under auto: its ranks load 0.2 s sooner (bench_count.py).
SMALL_RUN_CHARS = 1 << 20

BatchCount = Callable[[list[str], int], list[int]]  # (texts, threads) -> counts


def _toktok(module: Any, encoding: str) -> BatchCount:
    module.batch_count([""], encoding, 1, False)  # builds the encoder
    return lambda texts, threads: list(module.batch_count(texts, encoding, threads, False))


def _gigatoken(module: Any, encoding: str) -> BatchCount:
    from tokcost.adapters.openai_encodings import verified_rank_file

    # from_tiktoken(path, pretokenizer=...): the split named, as our file name is a digest; no
    # specials, so their text is ordinary (ours are cut out before). One encode() per text:
    # it holds the GIL, and its encode_batch was slower here (docs/counting-speed.md). Two
    # threads in one Tokenizer raise "RuntimeError: Already borrowed": one at a time.
    tok = module.Tokenizer.from_tiktoken(verified_rank_file(ENCODINGS[encoding]),
                                         pretokenizer=encoding.split("_")[0])
    lock = threading.Lock()

    def count(texts: list[str], threads: int) -> list[int]:
        with lock:
            return [len(tok.encode(t)) for t in texts]

    return count


def _fastokens(module: Any, encoding: str) -> BatchCount:
    from tokcost.adapters.openai_encodings import verified_rank_file

    # encoding= gives OpenAI's split and specials; split_special_tokens=True reads special-token
    # text as ordinary text. encode_batch_flat (its own pool) returns ids and len+1 uint64 offsets.
    tok = module.Tokenizer.from_tiktoken(str(verified_rank_file(ENCODINGS[encoding])),
                                         encoding=encoding.replace("harmony", "base"))

    def count(texts: list[str], threads: int) -> list[int]:
        ends = array("Q", tok.encode_batch_flat(texts, split_special_tokens=True)[1])
        return [b - a for a, b in pairwise(ends)]

    return count


@dataclass(frozen=True)
class Backend:
    """A counting backend: its package, the releases the tests prove, how to build a counter."""

    choice: str  # the TOKCOST_COUNT_BACKEND value
    dist: str  # the package, as ``count --json`` reports the backend
    module: str
    proven: frozenset[tuple[int, int]]  # (major, minor); other releases go unused
    make: Callable[[Any, str], BatchCount]
    # Under auto, a text holding a run of this many characters of one class (a candidate for
    # one huge pre-token, tokcost/adapters/long_runs.py) goes to the next backend of AUTO_ORDER.
    long_run: int | None = None
    # Auto passes over it on a machine with more CPUs than this (it counts one text at a time).
    max_cpus: int | None = None

    @property
    def hint(self) -> str:
        """The pip command for the proven release (the ``fast`` extra installs toktok-rs and
        gigatoken both)."""
        (major, minor), = self.proven
        wheels = " (Python 3.11+)" if self.choice == TOKTOK else ""
        return f"pip install '{self.dist}>={major}.{minor},<{major}.{minor + 1}'{wheels}"


# gigatoken is quick on ordinary text, whose pieces are short and recur (it remembers pieces
# it has encoded), and slow on long new ones: 30-120 ms per MB of distinct pieces of a
# repeated letter or of whitespace, 256 to 262,144 characters long, where toktok-rs takes
# 7-16 ms and tiktoken 100-190 (benchmarks/bench_long_pieces.py; 50 MB of one letter, one
# piece: 35 s, toktok-rs 2 s). Past 4,096 characters in one run, auto sends the text to
# toktok-rs. A shorter limit costs more to check (1 MiB texts of the standard library and
# /usr/share/doc: 0.74 ms per MB at 1,024, 0.31 at 4,096, 0.06 at 32,768, against gigatoken's
# 5-7 ms; none of 178 MB holds such a run) and a longer one lets more through (docs/
# counting-speed.md, issue 29).
GIGATOKEN_LONG_RUN = 1 << 12
# gigatoken holds the GIL and one tokenizer serves one thread at a time, so tokcount counts
# with it on one core; toktok-rs releases the GIL, a thread per CPU. Per core gigatoken is
# about 2.5x toktok-rs on ordinary text (108 against 42 MB/s on o200k_base, docs/
# counting-speed.md): on 2 CPUs it was as fast or faster in whole processes, using 16-28% less
# CPU; from 3 CPUs on, toktok-rs's threads are faster (3 x 42 > 108).
GIGATOKEN_MAX_CPUS = 2

BACKENDS = {b.choice: b for b in (
    Backend(TOKTOK, "toktok-rs", "toktok", frozenset({(0, 3)}), _toktok),
    Backend(GIGATOKEN, "gigatoken", "gigatoken", frozenset({(0, 10)}), _gigatoken,
            GIGATOKEN_LONG_RUN, GIGATOKEN_MAX_CPUS),
    Backend(FASTOKENS, "fastokens", "fastokens", frozenset({(0, 3)}), _fastokens),
)}
# What auto uses for runs of SMALL_RUN_CHARS and more, first one installed in a proven release
# (and within its max_cpus); the next one counts the texts the first sends away (its long_run).
# On 2 CPUs gigatoken was the fastest exact backend for whole tokcount processes on ordinary
# text, toktok-rs on long pieces (issue 29, docs/counting-speed.md).
AUTO_ORDER = (GIGATOKEN, TOKTOK)
TOKTOK_BACKEND = BACKENDS[TOKTOK].dist

_build_lock = threading.Lock()


def requested_backend() -> str:
    """``$TOKCOST_COUNT_BACKEND`` read and checked (``auto`` when unset or empty)."""
    value = os.environ.get(BACKEND_ENV, "").strip().lower() or AUTO
    # count --json names the backend "toktok-rs" (the package): accept that name too.
    value = {"toktok-rs": "toktok", "toktok_rs": "toktok"}.get(value, value)
    if value not in CHOICES:
        raise UsageError(f"{BACKEND_ENV}={value} is not a counting backend; set it to "
                         f"{', '.join(CHOICES)} or unset it")
    return value


def replace_surrogates(text: str) -> str:
    """What tiktoken encodes for a str UTF-8 cannot hold: pairs joined, lone ones U+FFFD."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _proven(backend: Backend, version: str) -> bool:
    try:
        major, minor = (int(p) for p in version.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) in backend.proven


def _release(backend: Backend) -> tuple[Any, str]:
    """The backend's module (None when not importable or not a proven release), and its version."""
    try:
        module = __import__(backend.module)
    except ImportError:
        return None, "not importable"
    version = getattr(module, "__version__", None)
    if version is None:
        from importlib import metadata
        try:
            version = metadata.version(backend.dist)
        except metadata.PackageNotFoundError:
            return None, "of unknown version"
    return (module if _proven(backend, str(version)) else None), str(version)


def _dist_info_version(backend: Backend) -> str | None:
    """The version in the name of the one ``DIST-VERSION.dist-info`` folder beside the backend's
    package, read without importing it, or None (not found: import it to know)."""
    from importlib.util import find_spec
    from pathlib import Path

    try:
        spec = find_spec(backend.module)
    except (ImportError, ValueError):
        return None
    if spec is None or spec.origin is None:
        return None
    prefix = re.sub(r"[-_.]+", "_", backend.dist).lower() + "-"
    found = [p.name for p in Path(spec.origin).parent.parent.glob(f"{prefix}*.dist-info")]
    return found[0][len(prefix):-len(".dist-info")] if len(found) == 1 else None


def _installed(backend: Backend) -> bool:
    """Whether the backend is installed in a proven release, without importing it where its
    dist-info says (gigatoken's import takes about 60 ms, importlib.metadata's 70 ms: a small
    count, which tiktoken does, must not pay them; docs/counting-speed.md)."""
    if backend.module not in sys.modules:
        version = _dist_info_version(backend)
        if version is not None:
            return _proven(backend, version)
    return _release(backend)[0] is not None


def _cpus() -> int:
    """The CPUs this process may run on (its affinity where the system has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows
        return os.cpu_count() or 1


def _toktok_module() -> Any | None:
    """toktok-rs when it is importable and a proven release, else None."""
    return _release(BACKENDS[TOKTOK])[0]


class FastCounter:
    """One encoding's counts from a backend, its module imported and encoder built on the first
    count; under auto, texts with a long run (``backend.long_run``) go to ``fallback``."""

    def __init__(self, backend: Backend, encoding: str, specials: Iterable[str], *,
                 forced: bool = False, module: Any = None,
                 fallback: FastCounter | None = None) -> None:
        self.backend, self.forced, self.fallback = backend, forced, fallback
        self._module, self._encoding = module, encoding
        self._batch_count: BatchCount | None = None
        self._fell_back = False  # whether fallback has counted a text
        # Longest first: where one special starts another, the longer wins.
        ordered = sorted(specials, key=lambda s: (-len(s), s))
        self._specials = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    @property
    def name(self) -> str:
        """What counted, as ``count --json`` reports it: ``gigatoken+toktok-rs`` once the
        fallback has counted a text."""
        if self._fell_back and self.fallback is not None:
            return f"{self.backend.dist}+{self.fallback.name}"
        return self.backend.dist

    @property
    def ready(self) -> bool:
        return self._batch_count is not None

    def _build(self) -> BatchCount:
        # Two counting threads must not build the same encoder twice.
        with _build_lock:
            if self._batch_count is None:
                module = self._module or _release(self.backend)[0]
                if module is None:  # its dist-info said installed, its import failed
                    hint = self.backend.hint if self.forced else install_hint("fast")
                    raise TokenizerNotFound(f"{self.backend.dist} does not import here; "
                                            f"reinstall it ({hint}) or set {BACKEND_ENV}=tiktoken")
                self._batch_count = self.backend.make(module, self._encoding)
            return self._batch_count

    def count(self, text: str, allow_special: bool) -> int:
        return self.count_many([text], allow_special, 1)[0]

    def count_many(self, texts: Sequence[str], allow_special: bool, threads: int) -> list[int]:
        batch = texts if isinstance(texts, list) else list(texts)
        if allow_special and self._specials is not None:
            return [self._count_with_specials(t, threads) for t in batch]
        return self._ordinary(batch, threads)

    def _ordinary(self, batch: list[str], threads: int) -> list[int]:
        limit, fallback = self.backend.long_run, self.fallback
        if limit is None or fallback is None:
            return self._own(batch, threads)
        away = [has_long_run(t, limit) for t in batch]
        if not any(away):
            return self._own(batch, threads)
        self._fell_back = True
        theirs = iter(fallback._ordinary([t for t, a in zip(batch, away, strict=True) if a],
                                         threads))
        ours = iter(self._own([t for t, a in zip(batch, away, strict=True) if not a], threads))
        return [next(theirs) if a else next(ours) for a in away]

    def _own(self, batch: list[str], threads: int) -> list[int]:
        if not batch:
            return []
        counts = self._batch_count or self._build()
        try:
            return counts(batch, max(1, threads))
        except (UnicodeEncodeError, TypeError):  # lone surrogates (gigatoken: TypeError)
            return counts([replace_surrogates(t) for t in batch], max(1, threads))

    def _count_with_specials(self, text: str, threads: int) -> int:
        assert self._specials is not None
        pieces = self._specials.split(text)
        # split() leaves len(pieces) - 1 matches: one token each.
        return sum(self._ordinary([p for p in pieces if p], threads)) + len(pieces) - 1


def _auto_counter(encoding: str) -> FastCounter | None:
    """What auto counts ``encoding`` with: the first backend of AUTO_ORDER installed in a
    proven release, the next one counting the texts the first sends away; None: tiktoken."""
    cpus = _cpus()
    found = [b for b in (BACKENDS[name] for name in AUTO_ORDER)
             if (b.max_cpus is None or cpus <= b.max_cpus) and _installed(b)]
    if not found or encoding not in FAST_ENCODINGS:
        return None
    specials = ENCODINGS[encoding].special_tokens
    fallback = (FastCounter(found[1], encoding, specials)
                if len(found) > 1 and found[0].long_run is not None else None)
    return FastCounter(found[0], encoding, specials, fallback=fallback)


def fast_counter(encoding: str) -> FastCounter | None:
    """The fast counter for a tiktoken encoding, or None: tiktoken counts then."""
    wanted = requested_backend()
    if wanted == TIKTOKEN:
        return None
    if wanted == AUTO:
        return _auto_counter(encoding)
    backend = BACKENDS[wanted]
    module, found = _release(backend)
    if module is None:
        proven = " or ".join(f"{a}.{b}.x" for a, b in sorted(backend.proven))
        found = (f"{backend.dist} {found} is installed, a release the tests have not proven"
                 if found != "not importable" else "which is not importable here")
        raise TokenizerNotFound(f"{BACKEND_ENV}={wanted} needs {backend.dist} {proven}, "
                                f"{found}; {backend.hint}, or unset {BACKEND_ENV}")
    if encoding not in FAST_ENCODINGS:
        return None
    return FastCounter(backend, encoding, ENCODINGS[encoding].special_tokens, forced=True,
                       module=module)
