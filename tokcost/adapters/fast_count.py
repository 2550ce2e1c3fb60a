"""Exact counts without ids for the OpenAI encodings, from toktok-rs (``tokcost[fast]``), chosen
by ``TOKCOST_COUNT_BACKEND``: ``auto``, ``tiktoken`` or ``toktok`` (docs/count.md)."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Sequence
from typing import Any

from tokcost.adapters.openai_encodings import ENCODINGS
from tokcost.errors import TokenizerNotFound, UsageError, install_hint

BACKEND_ENV = "TOKCOST_COUNT_BACKEND"
AUTO, TIKTOKEN, TOKTOK = "auto", "tiktoken", "toktok"
CHOICES = (AUTO, TIKTOKEN, TOKTOK)
TOKTOK_BACKEND = "toktok-rs"  # the name ``count --json`` reports
# Vocabulary and specials equal tiktoken's (tests/test_fast_backend.py checks each entry).
FAST_ENCODINGS = frozenset({"o200k_base", "cl100k_base", "o200k_harmony"})
PROVEN_VERSIONS = frozenset({(0, 3)})  # (major, minor) the tests prove; others go unused
FAST_EXTRA_HINT = f"{install_hint('fast')} (Python 3.11+)"
# Shorter runs are tiktoken's under auto: its ranks load 0.2 s sooner (bench_count.py).
SMALL_RUN_CHARS = 1 << 20

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


def _toktok_module() -> Any | None:
    """toktok-rs when it is importable and one of ``PROVEN_VERSIONS``, else None."""
    try:
        import toktok
    except ImportError:
        return None
    try:
        major, minor = (int(p) for p in str(toktok.__version__).split(".")[:2])
    except (AttributeError, ValueError):
        return None
    return toktok if (major, minor) in PROVEN_VERSIONS else None


class ToktokCounter:
    """One encoding's counts from toktok-rs, its encoder built on the first count."""

    name = TOKTOK_BACKEND

    def __init__(self, module: Any, encoding: str, specials: Iterable[str],
                 *, forced: bool = False) -> None:
        self.forced = forced
        self._batch_count = module.batch_count
        self._encoding = encoding
        # Longest first: where one special starts another, the longer wins.
        ordered = sorted(specials, key=lambda s: (-len(s), s))
        self._specials = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self.ready = False

    def _build(self) -> None:
        # Two counting threads must not build the same encoder twice.
        with _build_lock:
            if not self.ready:
                self._batch_count([""], self._encoding, 1, False)
                self.ready = True

    def count(self, text: str, allow_special: bool) -> int:
        return self.count_many([text], allow_special, 1)[0]

    def count_many(self, texts: Sequence[str], allow_special: bool, threads: int) -> list[int]:
        if not self.ready:
            self._build()
        batch = texts if isinstance(texts, list) else list(texts)
        if allow_special and self._specials is not None:
            return [self._count_with_specials(t, threads) for t in batch]
        return self._ordinary(batch, threads)

    def _ordinary(self, batch: list[str], threads: int) -> list[int]:
        try:
            counts: list[int] = self._batch_count(batch, self._encoding, max(1, threads), False)
        except UnicodeEncodeError:
            counts = self._batch_count([replace_surrogates(t) for t in batch], self._encoding,
                                       max(1, threads), False)
        return counts

    def _count_with_specials(self, text: str, threads: int) -> int:
        assert self._specials is not None
        pieces = self._specials.split(text)
        # split() leaves len(pieces) - 1 matches: one token each.
        return sum(self._ordinary([p for p in pieces if p], threads)) + len(pieces) - 1


def fast_counter(encoding: str) -> ToktokCounter | None:
    """The fast counter for a tiktoken encoding, or None: tiktoken counts then."""
    wanted = requested_backend()
    if wanted == TIKTOKEN:
        return None
    module = _toktok_module()
    if module is None and wanted == TOKTOK:
        try:
            import toktok
            version = getattr(toktok, "__version__", "of unknown version")
            found = f"toktok-rs {version} is installed, a release the tests have not proven"
        except ImportError:
            found = "which is not importable here"
        proven = " or ".join(f"{a}.{b}.x" for a, b in sorted(PROVEN_VERSIONS))
        raise TokenizerNotFound(f"{BACKEND_ENV}=toktok needs toktok-rs {proven}, {found}; "
                                f"{FAST_EXTRA_HINT}, or unset {BACKEND_ENV}")
    if module is None or encoding not in FAST_ENCODINGS:
        return None
    return ToktokCounter(module, encoding, ENCODINGS[encoding].special_tokens,
                         forced=wanted == TOKTOK)
