"""``tiktoken:NAME`` and ``tiktoken:PATH.tiktoken``: OpenAI's BPE, run by tiktoken's Rust core;
``tekken:PATH.json``: Mistral's Tekken files on tiktoken, ids shifted up by the specials' reserve
as mistral-common's Tekkenizer does; specials are never parsed out of user text."""

from __future__ import annotations

import base64
import hashlib
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokcost.adapters.base import special_tokens_by_id
from tokcost.adapters.fast_count import SMALL_RUN_CHARS, FastCounter, fast_counter
from tokcost.adapters.openai_encodings import (
    ENCODINGS,
    PATTERNS,
    OpenAIEncoding,
    download_ranks,
    find_verified_ranks,
    offline_hint,
    parse_ranks,
    read_rank_bytes,
)
from tokcost.errors import TokcostError, TokenizerDataError, TokenizerNotFound, UsageError
from tokcost.limits import loads_json, regex_problem

if TYPE_CHECKING:
    import tiktoken

# Patterns whose pieces never span tokcost.counting's cuts: counts stream chunk by chunk.
_STREAMABLE_PATTERNS = frozenset(PATTERNS.values())

_build_lock = threading.Lock()  # counting threads may ask for a lazy encoding at once


class TiktokenTokenizer:
    """A ``tiktoken.Encoding`` (or a function building it on first use) behind the protocol."""

    releases_gil = True

    def __init__(self, name: str, encoding: tiktoken.Encoding | Callable[[], tiktoken.Encoding],
                 *, exact: bool = True, pattern: str | None = None,
                 counter: FastCounter | None = None) -> None:
        self.name, self.exact = name, exact
        self._build = encoding if callable(encoding) else None
        self._encoding = None if callable(encoding) else encoding
        self._pattern = str(self.encoding._pat_str) if pattern is None else pattern
        self.streamable = self._pattern in _STREAMABLE_PATTERNS
        self.counter = counter
        self._fast = counter is not None  # counts go to ``counter`` (this run)

    @property
    def count_backend(self) -> str:
        return self.counter.name if self._fast and self.counter is not None else "tiktoken"

    def plan_run(self, chars: int | None) -> None:
        """A run of ``chars`` (None: large or unknown) starts: a small one is tiktoken's."""
        if (counter := self.counter) is not None:
            small = chars is not None and chars < SMALL_RUN_CHARS
            self._fast = not small or counter.ready or counter.forced

    @property
    def encoding(self) -> tiktoken.Encoding:
        if self._encoding is None:
            with _build_lock:
                if self._encoding is None:
                    assert self._build is not None
                    self._encoding = self._build()
        return self._encoding

    @property
    def vocab_size(self) -> int:
        return int(self.encoding.n_vocab)

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        # Special-token text is plain text unless asked: a count never fails on user data.
        if allow_special:
            return self.encoding.encode(text, allowed_special="all")
        return self.encoding.encode_ordinary(text)

    def count(self, text: str, *, allow_special: bool = False) -> int:
        if self._fast and self.counter is not None:
            return self.counter.count(text, allow_special)
        return len(self.encode(text, allow_special=allow_special))

    def count_many(self, texts: Sequence[str], *, allow_special: bool = False,
                   threads: int = 1) -> list[int]:
        if self._fast and self.counter is not None:
            return self.counter.count_many(texts, allow_special, threads)
        return [self.count(t, allow_special=allow_special) for t in texts]

    def decode(self, ids: Sequence[int]) -> str:
        try:
            return self.encoding.decode(list(ids))
        except (KeyError, ValueError, OverflowError) as exc:
            raise TokcostError(f"{self.name}: invalid token id among {list(ids)[:8]}; "
                               f"ids run 0..{self.vocab_size - 1}") from exc

    def token_bytes(self, ids: Sequence[int]) -> list[bytes]:
        try:
            return [self.encoding.decode_single_token_bytes(i) for i in ids]
        except KeyError as exc:
            raise TokcostError(f"{self.name}: invalid token id {exc}") from exc

    def special_tokens(self) -> dict[str, int]:
        enc = self.encoding
        return special_tokens_by_id((s, enc.encode_single_token(s)) for s in enc.special_tokens_set)

    def pattern(self) -> str | None:
        return self._pattern


def _encoding_from_ranks(name: str, ranks: dict[bytes, int], pattern: str,
                         specials: dict[str, int], n_vocab: int | None) -> tiktoken.Encoding:
    import tiktoken
    try:
        return tiktoken.Encoding(name=name, pat_str=pattern, mergeable_ranks=ranks,
                                 special_tokens=specials, explicit_n_vocab=n_vocab)
    except (ValueError, AssertionError) as exc:
        raise TokenizerDataError(f"cannot build tiktoken encoding {name}: {exc}") from exc


def _check_untrusted(path: Path, ranks: dict[bytes, int], pattern: str) -> None:
    """Refuse what would hang or panic tiktoken (a Rust PanicException, a BaseException): a
    pattern that backtracks, a byte without a rank, two tokens on one rank. Named encodings,
    checked by sha256, skip this (start-up)."""
    missing = next((b for b in range(256) if bytes([b]) not in ranks), None)
    # tiktoken's ranks are Rust u32s: another number is an OverflowError inside it.
    wrong = next((r for r in ranks.values() if not 0 <= r < 1 << 32), None)
    problem = regex_problem(pattern) or (
        f"no rank for the byte {missing:#04x} (a rank file ranks all 256 single bytes)"
        if missing is not None else f"rank {wrong} is not in 0 to 4,294,967,295"
        if wrong is not None else len(set(ranks.values())) < len(ranks)
        and "two tokens share a rank")
    if problem:
        raise TokenizerDataError(f"{path}: {problem}")


def load_named(enc: OpenAIEncoding) -> tiktoken.Encoding:
    """The encoding from a verified local rank file, else downloaded (within net.TIMEOUT per
    read: tiktoken's own download has none), checked and kept where tiktoken caches it."""
    ranks = find_verified_ranks(enc) or download_ranks(enc)
    return _encoding_from_ranks(enc.name, ranks, enc.pattern, enc.special_tokens,
                                enc.explicit_n_vocab)


def read_sidecar(meta: Path) -> tuple[str, dict[str, int]]:
    """The regex and special tokens in a rank file's ``PATH.json``: ``pat_str`` (tokcost's
    export writes tiktoken.Encoding's own arguments) or an older export's ``pattern`` (a name)."""
    try:
        info = loads_json(meta.read_text(encoding="utf-8"))
        pattern = info["pat_str"] if "pat_str" in info else info["pattern"]
        specials = {str(k): int(v) for k, v in info.get("special_tokens", {}).items()}
        if not isinstance(pattern, str):  # null or 5 read as the regex "None": 0 tokens
            raise TypeError(pattern)
        if any(not 0 <= v < 1 << 32 for v in specials.values()):  # tiktoken's u32 ids
            raise ValueError(specials)
    except (ValueError, KeyError, TypeError, AttributeError, OSError) as exc:
        raise TokenizerDataError(f"{meta}: expected JSON with a 'pat_str' (a regex; older: a "
                                 "'pattern', o200k...) and optional 'special_tokens' (ids from "
                                 "0 to 4,294,967,295)") from exc
    return PATTERNS.get(pattern, pattern), specials


def _pattern_for_file(path: Path, data: bytes) -> tuple[str, dict[str, int], int | None]:
    """Pattern and specials of a rank file: from ``PATH.json`` beside it, else by sha256."""
    meta = path.with_name(path.name + ".json")
    if meta.is_file():
        return *read_sidecar(meta), None
    digest = hashlib.sha256(data).hexdigest()
    for enc in (e for e in ENCODINGS.values() if e.sha256 == digest):
        return enc.pattern, enc.special_tokens, enc.explicit_n_vocab
    raise TokenizerDataError(f"{path}: no pre-tokenization pattern known for this rank file; "
                             f'write {meta.name} beside it with {{"pat_str": REGEX}} (or '
                             '{"pattern": "o200k"}, cl100k, gpt2)')


def load_file(path_str: str) -> TiktokenTokenizer:
    path = Path(path_str).expanduser()
    if not path.is_file():
        raise UsageError(f"tiktoken rank file not found: {path}")
    data = read_rank_bytes(path)
    pattern, specials, n_vocab = _pattern_for_file(path, data)
    ranks = parse_ranks(data, str(path))
    if not ranks:
        raise TokenizerDataError(f"{path}: the rank file is empty")
    _check_untrusted(path, ranks, pattern)
    encoding = _encoding_from_ranks(path.stem, ranks, pattern, specials, n_vocab)
    return TiktokenTokenizer(f"tiktoken:{path}", encoding)


def is_rank_file(arg: str) -> bool:
    """Whether ``tiktoken:ARG`` names a file rather than an encoding."""
    return arg.endswith((".tiktoken", ".tiktoken.gz")) or "/" in arg or Path(arg).exists()


def load(arg: str) -> TiktokenTokenizer:
    if arg in ENCODINGS:
        enc = ENCODINGS[arg]
        counter = fast_counter(arg)
        if counter is None:
            return TiktokenTokenizer(f"tiktoken:{arg}", load_named(enc))
        # Counting never needs tiktoken here: its encoding is built when ids are asked for.
        return TiktokenTokenizer(f"tiktoken:{arg}", lambda: load_named(enc),
                                 pattern=enc.pattern, counter=counter)
    if arg == "gpt2":
        # gpt2 ships as vocab.bpe + encoder.json; its ranks equal r50k_base's.
        import tiktoken
        try:
            return TiktokenTokenizer("tiktoken:gpt2", tiktoken.get_encoding("gpt2"))
        except Exception as exc:
            raise TokenizerDataError("tiktoken:gpt2 needs its files from the network; offline, use "
                                     "tiktoken:r50k_base (the same ranks) with its rank file: "
                                     f"{offline_hint(ENCODINGS['r50k_base'])}") from exc
    if is_rank_file(arg):
        return load_file(arg)
    raise TokenizerNotFound(f"unknown tiktoken encoding '{arg}'; known: "
                            f"{', '.join([*ENCODINGS, 'gpt2'])} or tiktoken:PATH.tiktoken")


# Tekken v3's (o200k's, no contractions, one digit a piece): its counts stream (a test checks).
TEKKEN_PATTERN = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
                  r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
                  r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")


class TekkenTokenizer(TiktokenTokenizer):
    """tiktoken's core on the Tekken vocabulary; ids carry the special-token offset."""

    def __init__(self, name: str, encoding: Any, offset: int, vocab_size: int) -> None:
        super().__init__(name, encoding)
        self.streamable = encoding._pat_str == TEKKEN_PATTERN
        self.offset, self._vocab_size = offset, vocab_size

    @property
    def vocab_size(self) -> int:
        return self._vocab_size

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        return [i + self.offset for i in self.encoding.encode_ordinary(text)]

    def count(self, text: str, *, allow_special: bool = False) -> int:
        return len(self.encoding.encode_ordinary(text))

    def _inner(self, ids: Sequence[int]) -> list[int]:
        bad = [i for i in ids if not self.offset <= i < self._vocab_size]
        if bad:
            raise TokcostError(f"{self.name}: token id {bad[0]} is a special or unknown id; "
                               f"ordinary ids run {self.offset}..{self._vocab_size - 1}")
        return [i - self.offset for i in ids]

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.encoding.decode(self._inner(ids)))

    def token_bytes(self, ids: Sequence[int]) -> list[bytes]:
        return [self.encoding.decode_single_token_bytes(i) for i in self._inner(ids)]


def load_tekken(arg: str) -> TekkenTokenizer:
    path = Path(arg).expanduser()
    if not path.is_file():
        raise UsageError(f"Tekken tokenizer file not found: {path}")
    try:
        data = loads_json(path.read_text(encoding="utf-8"))
        config = data["config"]
        pattern = str(config["pattern"])
        reserve = int(config["default_num_special_tokens"])
        vocab_size = int(config["default_vocab_size"])
        entries = data["vocab"][: vocab_size - reserve]
        ranks = {base64.b64decode(e["token_bytes"]): int(e["rank"]) for e in entries}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TokenizerDataError(f"{path} is not a Mistral Tekken tokenizer file (expected JSON "
                                 f"with 'config' and 'vocab'): {exc}") from exc
    if sorted(ranks.values()) != list(range(len(ranks))):
        raise TokenizerDataError(f"{path}: Tekken ranks are not 0..{len(ranks) - 1} in order")
    _check_untrusted(path, ranks, pattern)
    encoding = _encoding_from_ranks(path.stem, ranks, pattern, {}, None)
    return TekkenTokenizer(f"tekken:{arg}", encoding, reserve, vocab_size)
