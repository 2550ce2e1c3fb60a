"""Exact token counts without token ids: the counting backend of the OpenAI encodings.

toktok-rs (``pip install 'tokcost[fast]'``) runs tiktoken's byte-level BPE over the same
vocabulary and returns the count alone, about ten times faster than taking ``len`` of
tiktoken's ids (``benchmarks/bench_backends.py``, docs/counting-speed.md). It counts only,
for the encodings whose vocabulary and special tokens equal tiktoken's (the tests prove
it, and every count equal); ids always come from tiktoken. ``TOKCOST_COUNT_BACKEND``
chooses: ``auto`` (toktok-rs where it serves the encoding, but tiktoken for a run known
to be small: ``SMALL_RUN_CHARS``), ``tiktoken``, or ``toktok`` (an error when missing).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from tokcost.adapters.openai_encodings import ENCODINGS
from tokcost.errors import TokenizerNotFound, UsageError

BACKEND_ENV = "TOKCOST_COUNT_BACKEND"
AUTO, TIKTOKEN, TOKTOK = "auto", "tiktoken", "toktok"
CHOICES = (AUTO, TIKTOKEN, TOKTOK)

#: The name ``count --json`` reports for counts that toktok-rs made.
TOKTOK_BACKEND = "toktok-rs"

#: Encodings toktok-rs ships whose vocabulary and special tokens equal tiktoken's
#: (tests/test_fast_backend.py compares them entry by entry).
FAST_ENCODINGS = frozenset({"o200k_base", "cl100k_base", "o200k_harmony"})

#: toktok-rs releases whose counts the tests have proven (major, minor); another one
#: is left unused rather than trusted (the ``fast`` extra asks for these).
PROVEN_VERSIONS = frozenset({(0, 3)})

FAST_EXTRA_HINT = "pip install 'tokcost[fast]' (toktok-rs, Python 3.11+)"

#: A count run of fewer characters than this, all of it known before counting starts,
#: is counted by tiktoken under ``auto``: toktok-rs builds its o200k_base encoder in
#: about 0.45 s, tiktoken loads its ranks in about 0.25 s, and the 0.2 s difference is
#: more than toktok-rs saves counting up to about 3 MB (``benchmarks/bench_count.py``'s
#: small-input rows measure it). Past this, or when the size is unknown, toktok-rs.
SMALL_RUN_CHARS = 1 << 20

_build_lock = threading.Lock()


class Counter(Protocol):
    """Counts tokens as ``len(tiktoken.Encoding.encode*(text))`` would, without the ids."""

    name: str
    #: True when ``$TOKCOST_COUNT_BACKEND`` asks for this backend by name: it then
    #: counts every run, small ones too.
    forced: bool

    @property
    def ready(self) -> bool:
        """Whether its encoder is built (a small run costs it nothing more then)."""
        ...

    def count(self, text: str, allow_special: bool) -> int: ...

    def count_many(self, texts: Sequence[str], allow_special: bool, threads: int) -> list[int]:
        ...


def requested_backend() -> str:
    """``$TOKCOST_COUNT_BACKEND`` read and checked (``auto`` when unset or empty).

    >>> import os; os.environ.pop(BACKEND_ENV, None) and None; requested_backend()
    'auto'
    """
    value = os.environ.get(BACKEND_ENV, "").strip().lower() or AUTO
    # count --json names the backend "toktok-rs" (the package): accept that name too.
    value = {"toktok-rs": "toktok", "toktok_rs": "toktok"}.get(value, value)
    if value not in CHOICES:
        raise UsageError(
            f"{BACKEND_ENV}={value} is not a counting backend; set it to "
            f"{', '.join(CHOICES)} or unset it"
        )
    return value


def replace_surrogates(text: str) -> str:
    """What tiktoken encodes for a str that UTF-8 cannot hold: surrogate pairs joined,
    lone surrogates as U+FFFD (its own fallback, so both backends count the same text).

    >>> replace_surrogates("a\\ud800b"), replace_surrogates("\\ud83d\\ude00")
    ('a\\ufffdb', '😀')
    """
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
    """One encoding's counts from toktok-rs; its encoder is built on the first count
    (about 0.45 s for o200k_base), so a tokenizer loaded only for ids never pays for it.

    With ``allow_special`` the text is cut at each special token here and only the text
    between them goes to toktok-rs, whose own ``with_special`` is quadratic in the
    number of specials; tiktoken counts the same way (one id per special).
    """

    name = TOKTOK_BACKEND

    def __init__(self, module: Any, encoding: str, specials: Iterable[str],
                 *, forced: bool = False) -> None:
        self.forced = forced
        self._batch_count = module.batch_count
        self._encoding = encoding
        # Longest first: where one special text starts another, the longer one wins.
        ordered = sorted(specials, key=lambda s: (-len(s), s))
        self._specials = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        self._ready = False

    def _build(self) -> None:
        # toktok caches its encoders per process; the lock keeps two counting threads
        # from building the same one twice at start.
        with _build_lock:
            if not self._ready:
                self._batch_count([""], self._encoding, 1, False)
                self._ready = True

    @property
    def ready(self) -> bool:
        return self._ready

    def count(self, text: str, allow_special: bool) -> int:
        return self.count_many([text], allow_special, 1)[0]

    def count_many(self, texts: Sequence[str], allow_special: bool, threads: int) -> list[int]:
        """Counts of ``texts`` on ``threads`` threads (toktok's own pool; >= 1)."""
        if not self._ready:
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


def fast_counter(encoding: str) -> Counter | None:
    """The fast counter for a tiktoken encoding name, or None: tiktoken counts then.

    None when ``$TOKCOST_COUNT_BACKEND`` is ``tiktoken``, when toktok-rs is missing
    (an error instead under ``toktok``) or does not serve ``encoding``.
    """
    wanted = requested_backend()
    if wanted == TIKTOKEN:
        return None
    module = _toktok_module()
    if module is None:
        if wanted == TOKTOK:
            installed = _installed_version()
            found = (f"toktok-rs {installed} is installed, a release the tests have not "
                     "proven" if installed else "which is not importable here")
            raise TokenizerNotFound(
                f"{BACKEND_ENV}=toktok needs toktok-rs {_proven()}, {found}; "
                f"{FAST_EXTRA_HINT}, or unset {BACKEND_ENV}"
            )
        return None
    if encoding not in FAST_ENCODINGS:
        return None
    return ToktokCounter(module, encoding, ENCODINGS[encoding].special_tokens,
                         forced=wanted == TOKTOK)


def _installed_version() -> str | None:
    """The version of an importable toktok module, whatever it is (None: not importable)."""
    try:
        import toktok
    except ImportError:
        return None
    return str(getattr(toktok, "__version__", "of unknown version"))


def _proven() -> str:
    return " or ".join(f"{a}.{b}.x" for a, b in sorted(PROVEN_VERSIONS))
