"""The fast counting backends (under auto gigatoken, toktok-rs for texts with a long run;
fastokens when asked for by name) count exactly what tiktoken counts.

Every count is compared with ``len(tiktoken.Encoding.encode_ordinary(text))`` (or
``encode(text, allowed_special="all")`` with allow_special), for each encoding the
backend serves: random Unicode, digits, whitespace runs, CRLF, combining marks, emoji
sequences, special-token text, invalid UTF-8 replaced by the streaming decoder, lone
surrogates, the corpora, and the chunks tokcost's stream cuts a text into. One token
of difference fails. Each check runs for every backend installed in a proven release; the
others skip, and the fallback tests (which hide the packages) still run: tiktoken then
counts, with the same totals.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tokcost.adapters import fast_count, registry, tiktoken_enc
from tokcost.adapters.base import count_backend
from tokcost.adapters.openai_encodings import ENCODINGS
from tokcost.cli.app import app
from tokcost.counting import Reader
from tokcost.errors import TokenizerNotFound, UsageError

ENCODING_NAMES = sorted(fast_count.FAST_ENCODINGS)
CORPORA = Path(__file__).resolve().parent.parent / "corpora"
CORPUS_FILES = sorted(p for p in CORPORA.rglob("*") if p.is_file() and p.suffix != ".yaml")

needs_toktok = pytest.mark.skipif(
    fast_count._toktok_module() is None,
    reason="toktok-rs (the 'fast' extra) is not installed: tiktoken counts everywhere",
)
# Every backend TOKCOST_COUNT_BACKEND can name, each skipped where not installed and proven.
each_backend = pytest.mark.parametrize("backend", [
    pytest.param(b.choice, marks=pytest.mark.skipif(
        fast_count._release(b)[0] is None, reason=f"{b.dist} is not installed in a proven release"))
    for b in fast_count.BACKENDS.values()])
CHECKS = settings(max_examples=80, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow])


@cache
def oracle(name: str) -> Any:
    """tiktoken's own encoding, built from tokcost's verified rank file."""
    return tiktoken_enc.load_named(ENCODINGS[name])


def tiktoken_count(name: str, text: str, allow_special: bool) -> int:
    enc = oracle(name)
    if allow_special:
        return len(enc.encode(text, allowed_special="all"))
    return len(enc.encode_ordinary(text))


@cache
def fast(name: str, backend: str = fast_count.TOKTOK) -> tiktoken_enc.TiktokenTokenizer:
    """The tokenizer counting uses with ``backend`` asked for by name (outside the registry's
    cache), the default toktok-rs also as auto picks it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(fast_count.BACKEND_ENV, backend)
        tok = tiktoken_enc.load(name)
        if backend in fast_count.AUTO_ORDER[:1]:
            patch.delenv(fast_count.BACKEND_ENV)
            assert tiktoken_enc.load(name).count_backend == tok.count_backend
    assert tok.count_backend == fast_count.BACKENDS[backend].dist
    return tok


def assert_same(name: str, text: str, allow_special: bool,
                backend: str = fast_count.TOKTOK) -> None:
    got = fast(name, backend).count(text, allow_special=allow_special)
    want = tiktoken_count(name, text, allow_special)
    assert got == want, (name, allow_special, text[:200])


@pytest.fixture(autouse=True)
def _fresh_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test sees the backend its environment asks for, not one cached by another."""
    monkeypatch.delenv(fast_count.BACKEND_ENV, raising=False)
    registry._get_tokenizer.cache_clear()
    yield
    registry._get_tokenizer.cache_clear()


@pytest.fixture
def no_toktok(monkeypatch: pytest.MonkeyPatch) -> None:
    """toktok-rs made unimportable."""
    monkeypatch.setitem(sys.modules, "toktok", None)


AUTO_MODULES = [fast_count.BACKENDS[name].module for name in fast_count.AUTO_ORDER]


@pytest.fixture
def no_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every backend auto may use made unimportable, as on a machine without the 'fast' extra."""
    for module in AUTO_MODULES:
        monkeypatch.setitem(sys.modules, module, None)


def auto_dist() -> str | None:
    """The package auto counts large runs with here (None: tiktoken counts them)."""
    counter = fast_count.fast_counter("o200k_base")
    return None if counter is None else counter.name


# --- the text strategies -----------------------------------------------------------------

SPECIALS = sorted({s for n in ENCODING_NAMES for s in ENCODINGS[n].special_tokens})[:40]
EMOJI = ["👨‍👩‍👧‍👦", "🏳️‍🌈", "👍🏽", "🇺🇸🇫🇷", "1️⃣", "🧑🏿‍🚀", "❤️‍🔥", "😀", "\u200d", "\ufe0f"]
COMBINING = ["\u0301", "\u0308", "\u0323", "\u0330", "\u20dd", "\u0e31", "\u094d", "\u3099"]
WHITESPACE = [" ", "  ", "\t", "\n", "\r", "\r\n", "\x0b", "\x0c", "\u00a0", "\u2003",
              "\u3000", "\u2028", "\u0085"]
WORDS = ["a", "Hello", "WORLD", "don't", "'s", "'LL", "é", "naïve", "日本語", "Привет",
         "مرحبا", "नमस्ते", "ภาษาไทย", "한국어", "x1", "_", "/", "//", "<|", "|>", "<|endof",
         "endoftext", "-", "...", "(", "{}", "\x00", "\ufeff", "\u200f"]

digits = st.text(alphabet="0123456789٠١٢٣४५६ .,-+e", max_size=60)
whitespace_runs = st.lists(
    st.sampled_from(WHITESPACE) | st.sampled_from(WORDS), max_size=40).map("".join)
crlf = st.lists(st.sampled_from(["\r\n", "\r", "\n", " ", "a", "A", "1", ".", "\t"]),
                max_size=60).map("".join)
combining = st.lists(st.sampled_from(COMBINING) | st.sampled_from(WORDS) | st.just(" "),
                     max_size=40).map("".join)
emoji = st.lists(st.sampled_from(EMOJI) | st.sampled_from([" ", "a", "1", "!"]),
                 max_size=30).map("".join)
special_text = st.lists(st.sampled_from(SPECIALS) | st.sampled_from(WORDS)
                        | st.sampled_from(WHITESPACE), max_size=30).map("".join)
mixed = st.lists(st.one_of(st.text(max_size=8), st.sampled_from(WORDS),
                           st.sampled_from(WHITESPACE), st.sampled_from(EMOJI),
                           st.sampled_from(SPECIALS), digits),
                 max_size=25).map("".join)

STRATEGIES = {
    "unicode": st.text(max_size=200),
    "digits": digits,
    "whitespace": whitespace_runs,
    "crlf": crlf,
    "combining": combining,
    "emoji": emoji,
    "special": special_text,
    "mixed": mixed,
}


@each_backend
@pytest.mark.parametrize("kind", sorted(STRATEGIES))
@pytest.mark.parametrize("name", ENCODING_NAMES)
def test_counts_equal_tiktokens(name: str, kind: str, backend: str) -> None:
    @CHECKS
    @given(text=STRATEGIES[kind], allow_special=st.booleans())
    def check(text: str, allow_special: bool) -> None:
        assert_same(name, text, allow_special, backend)

    check()


@each_backend
@pytest.mark.parametrize("name", ENCODING_NAMES)
@CHECKS
@given(text=st.text(alphabet=st.characters(categories=["Cs", "Ll", "Zs", "Nd"]), max_size=80),
       allow_special=st.booleans())
def test_surrogates_count_as_tiktoken_replaces_them(
    name: str, backend: str, text: str, allow_special: bool
) -> None:
    # A str that UTF-8 cannot hold (lone surrogates) must not crash: tiktoken encodes it
    # with the surrogates replaced, and the fast backend counts that same text.
    assert_same(name, text, allow_special, backend)


@each_backend
@pytest.mark.parametrize("name", ENCODING_NAMES)
@CHECKS
@given(data=st.binary(max_size=300), block=st.integers(1, 64), allow_special=st.booleans())
def test_invalid_utf8_replaced_by_the_stream(
    name: str, backend: str, data: bytes, block: int, allow_special: bool
) -> None:
    # The streaming decoder puts U+FFFD for invalid bytes, and the stream cuts the text
    # into chunks: their counts add up to tiktoken's count of the whole replaced text.
    total = stream_count(fast(name, backend), data, block, allow_special)
    assert total == tiktoken_count(name, data.decode("utf-8", "replace"), allow_special)


def stream_count(tok: Any, data: bytes, block: int, allow_special: bool) -> int:
    """``data`` counted through tokcost's stream, as files are: chunk by chunk."""
    counts: list[int] = []
    Reader({"t": tok}, block, allow_special).read(
        io.BytesIO(data),
        lambda _spec, chunk: counts.append(tok.count(chunk, allow_special=allow_special)),
        name="data")
    return sum(counts)


@each_backend
@pytest.mark.parametrize("name", ENCODING_NAMES)
@CHECKS
@given(text=mixed | whitespace_runs | crlf, block=st.integers(1, 48), allow_special=st.booleans())
def test_stream_cuts_keep_the_count(
    name: str, backend: str, text: str, block: int, allow_special: bool
) -> None:
    data = text.encode("utf-8")
    assert stream_count(fast(name, backend), data, block, allow_special) == tiktoken_count(
        name, text, allow_special)


ADVERSARIAL = [
    "",
    "a" * 100_000,
    "A" * 50_001 + "b" * 3,
    "1" * 10_007,
    " " * 10_000 + "x",
    "\n" * 5000 + " " * 5000,
    "\r\n" * 4000,
    " \r\n" * 3000 + "end",
    "!" * 20_000,
    "'s'S'll'LL're've'm'd" * 500,
    "ab" * 30_000,
    "é" * 20_000,
    "e\u0301" * 10_000,
    "日本語のテキスト" * 3000,
    "👨‍👩‍👧‍👦" * 2000,
    "\x00" * 1000,
    "\ufffd" * 3000,
    "<|endoftext|>" * 1000,
    "<|endoftext|><|endofprompt|><|fim_prefix|>" * 300,
    "<|endoftext" * 1000 + "|>",
    "<<||endoftext||>>" * 500,
    "x<|endoftext|>y z<|endofprompt|> " * 500,
    "<|reserved_200000|><|start|>user<|message|>hi<|end|>" * 200,
    " ".join(str(i) for i in range(20_000)),
    "".join(chr(c) for c in range(32, 0x3000)),
]


@each_backend
@pytest.mark.parametrize("allow_special", [False, True])
@pytest.mark.parametrize("name", ENCODING_NAMES)
def test_adversarial_texts(name: str, allow_special: bool, backend: str) -> None:
    for text in ADVERSARIAL:
        assert_same(name, text, allow_special, backend)


@each_backend
@pytest.mark.parametrize("name", ENCODING_NAMES)
def test_corpora_whole_and_streamed(name: str, backend: str) -> None:
    assert CORPUS_FILES, "the corpora are missing"
    tok = fast(name, backend)
    for path in CORPUS_FILES:
        data = path.read_bytes()
        text = data.decode("utf-8")
        for allow_special in (False, True):
            want = tiktoken_count(name, text, allow_special)
            assert tok.count(text, allow_special=allow_special) == want, path
            assert stream_count(tok, data, 257, allow_special) == want, path


@needs_toktok
@pytest.mark.parametrize("name", ENCODING_NAMES)
def test_vocabulary_and_special_tokens_are_tiktokens(name: str) -> None:
    """The backend's own tables, entry by entry: the reason its counts can be equal."""
    import toktok

    theirs = toktok._encoding(name)
    ranks = oracle(name)._mergeable_ranks
    values = theirs.token_byte_values()
    assert len(values) == len(ranks)
    assert all(ranks[b] == i for i, b in enumerate(values))
    assert dict(theirs.special_tokens()) == oracle(name)._special_tokens
    assert theirs.n_vocab == oracle(name).n_vocab


@each_backend
def test_threads_and_batches_count_the_same(backend: str) -> None:
    # Counting threads share one encoder (toktok-rs releases the GIL in its core; gigatoken's
    # is taken one thread at a time): concurrent and batched counts are the sequential ones.
    texts = [p.read_text(encoding="utf-8") for p in CORPUS_FILES]
    tok = fast("o200k_base", backend)
    want = [tiktoken_count("o200k_base", t, False) for t in texts]
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(tok.count, texts)) == want
    assert tok.count_many(texts, threads=2) == want
    assert tok.releases_gil


@needs_toktok
def test_ids_still_come_from_tiktoken() -> None:
    tok = tiktoken_enc.load("o200k_base")
    assert tok._encoding is None  # counting needs no tiktoken encoding
    assert tok.count("hello world") == 2
    assert tok._encoding is None
    assert tok.encode("hello world") == [24912, 2375]
    assert tok.decode(tok.encode("héllo")) == "héllo"
    assert tok.streamable and tok.pattern() == ENCODINGS["o200k_base"].pattern


@needs_toktok
def test_unproven_release_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    import toktok

    monkeypatch.setitem(sys.modules, "gigatoken", None)  # auto's first choice, hidden
    monkeypatch.setattr(toktok, "__version__", "0.9.0")
    assert fast_count.fast_counter("o200k_base") is None
    assert tiktoken_enc.load("o200k_base").count_backend == "tiktoken"
    # asked for by name, the error names the release found, not "not importable"
    monkeypatch.setenv(fast_count.BACKEND_ENV, "toktok")
    with pytest.raises(TokenizerNotFound, match=r"toktok-rs 0\.9\.0 is installed, a release"):
        fast_count.fast_counter("o200k_base")


@needs_toktok
def test_encodings_it_does_not_serve_stay_on_tiktoken() -> None:
    assert fast_count.fast_counter("p50k_base") is None
    assert fast_count.fast_counter("r50k_base") is None


# --- choosing the backend; the fallback without toktok-rs ------------------------------------


def test_tiktoken_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(fast_count.BACKEND_ENV, "tiktoken")
    tok = tiktoken_enc.load("o200k_base")
    assert tok.count_backend == "tiktoken" and tok.counter is None
    assert tok.count("hello world") == 2


def test_fallback_without_fast_backends(no_fast: None) -> None:
    assert fast_count.fast_counter("o200k_base") is None
    for name in ENCODING_NAMES:
        tok = tiktoken_enc.load(name)
        assert tok.count_backend == "tiktoken"
        for path in CORPUS_FILES[:6]:
            text = path.read_text(encoding="utf-8")
            assert tok.count(text) == tiktoken_count(name, text, False)
        assert tok.count("a\ud800b<|endoftext|>", allow_special=True) == tiktoken_count(
            name, "a\ud800b<|endoftext|>", True)
        assert tok.count_many(["a b", "c"]) == [tok.count("a b"), tok.count("c")]


def test_forcing_toktok_without_it_says_how_to_get_it(
    no_toktok: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(fast_count.BACKEND_ENV, "toktok")
    with pytest.raises(TokenizerNotFound, match=r"pip install 'toktok-rs>=0.3,<0.4' \(Python 3.11\+\)"):
        fast_count.fast_counter("o200k_base")


@pytest.mark.parametrize("value", ["TIKTOKEN", " auto ", "", "toktok-rs", "TOKTOK_RS"])
def test_backend_names_are_forgiving_about_case_and_space(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(fast_count.BACKEND_ENV, value)
    assert fast_count.requested_backend() in fast_count.CHOICES


def test_unknown_backend_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(fast_count.BACKEND_ENV, "rust")
    with pytest.raises(UsageError, match="TOKCOST_COUNT_BACKEND=rust"):
        fast_count.requested_backend()


SMALL_TEXT = "hello world <|endoftext|>\r\n" * 50


def _cli_count(backend: str | None, hide: bool, text: str = SMALL_TEXT) -> Any:
    """``count --json`` of ``text`` (default a small one), under
    ``TOKCOST_COUNT_BACKEND=backend``, with auto's backends hidden when ``hide``; everything
    is restored afterwards."""
    with pytest.MonkeyPatch.context() as patch:
        if backend is None:
            patch.delenv(fast_count.BACKEND_ENV, raising=False)
        else:
            patch.setenv(fast_count.BACKEND_ENV, backend)
        if hide:
            for module in AUTO_MODULES:
                patch.setitem(sys.modules, module, None)
        registry._get_tokenizer.cache_clear()
        try:
            return CliRunner().invoke(app, ["count", "-", "--json", "-t", "o200k_base",
                                            "-t", "cl100k_base"],
                                      input=text)
        finally:
            registry._get_tokenizer.cache_clear()


@pytest.mark.parametrize(("backend", "hide", "code", "fragment"), [
    ("tiktoken", False, 0, '"backend": "tiktoken"'),
    (None, True, 0, '"backend": "tiktoken"'),
    ("bogus", False, 2, "TOKCOST_COUNT_BACKEND=bogus is not a counting backend"),
    ("toktok", True, 2, "pip install 'toktok-rs>=0.3,<0.4' (Python 3.11+)"),
])
def test_cli_backend_choice(backend: str | None, hide: bool, code: int, fragment: str) -> None:
    result = _cli_count(backend, hide)
    assert result.exit_code == code, result.output
    assert fragment in result.output
    assert "Traceback" not in result.output
    if code:
        errors = [line for line in result.output.splitlines() if line.startswith("error")]
        assert len(errors) == 1


def _backends(doc: Any) -> set[str]:
    return {t["backend"] for t in doc["tokenizers"]}


# Two tokenizers count each text: the run's size is the text's, not twice it.
@pytest.mark.parametrize("text", [SMALL_TEXT, "Größe 12,5 — ok?\n" * 40_000,
                                  "Größe 12,5 — ok?\n" * 66_000],
                         ids=["small", "under SMALL_RUN_CHARS", "past SMALL_RUN_CHARS"])
def test_cli_counts_agree_across_backends(text: str) -> None:
    has_toktok = fast_count._toktok_module() is not None
    large = len(text) >= fast_count.SMALL_RUN_CHARS
    rows = [("tiktoken", False, "tiktoken"), (None, True, "tiktoken"),
            # auto: tiktoken for a run known to be small, its first backend past that
            (None, False, (large and auto_dist()) or "tiktoken")]
    if has_toktok:
        rows.append(("toktok", False, fast_count.TOKTOK_BACKEND))  # named: small runs too
    totals = set()
    for backend, hide, expected in rows:
        result = _cli_count(backend, hide, text)
        assert result.exit_code == 0, result.output
        doc = json.loads(result.stdout)
        assert _backends(doc) == {expected}, (backend, hide)
        totals.add(json.dumps(doc["total"]))
    assert len(totals) == 1
    want = {name: tiktoken_count(name, text, False) for name in ("o200k_base", "cl100k_base")}
    assert json.loads(totals.pop())["tokens"] == want


def test_plan_run_picks_tiktoken_for_a_small_run_only() -> None:
    tok = tiktoken_enc.load("o200k_base")
    if tok.counter is None:
        pytest.skip("no fast backend is installed")
    small = fast_count.SMALL_RUN_CHARS - 1
    tok.plan_run(small)
    assert tok.count_backend == "tiktoken" and not tok.counter.ready
    assert tok.count("hello world") == 2 and not tok.counter.ready  # tiktoken counted it
    for chars in (None, fast_count.SMALL_RUN_CHARS):
        tok.plan_run(chars)
        assert tok.count_backend == tok.counter.backend.dist
    assert tok.count_many(["hello world", "x"]) == [2, 1] and tok.counter.ready
    tok.plan_run(small)  # built now: a small run costs it nothing more
    assert tok.count_backend == tok.counter.backend.dist


def test_plan_run_keeps_a_backend_asked_for_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    if fast_count._toktok_module() is None:
        pytest.skip("toktok-rs is not installed")
    monkeypatch.setenv(fast_count.BACKEND_ENV, "toktok")
    tok = tiktoken_enc.load("cl100k_base")
    assert tok.counter is not None and tok.counter.forced
    tok.plan_run(10)
    assert tok.count_backend == fast_count.TOKTOK_BACKEND
    monkeypatch.setenv(fast_count.BACKEND_ENV, "tiktoken")
    forced_tiktoken = tiktoken_enc.load("cl100k_base")
    forced_tiktoken.plan_run(None)
    assert forced_tiktoken.count_backend == "tiktoken"


def test_an_approximate_proxy_passes_the_plan_and_the_batches_on() -> None:
    from tokcost.adapters.base import Approximate

    inner = tiktoken_enc.load("o200k_base")
    proxy = Approximate(inner)
    proxy.plan_run(5)
    assert proxy.count_backend == inner.count_backend == "tiktoken"
    assert proxy.count_many(["hello world", "x y"]) == [2, 2]
    proxy.plan_run(None)
    assert proxy.count_backend == inner.count_backend


def test_backend_reported_for_every_family() -> None:
    class Bare:
        pass

    class OnTiktoken:
        encoding = object()

    assert count_backend(Bare()) == "python"  # type: ignore[arg-type]
    assert count_backend(OnTiktoken()) == "tiktoken"  # type: ignore[arg-type]


# --- gigatoken and fastokens, asked for by name ----------------------------------------------

PEERS = [fast_count.GIGATOKEN, fast_count.FASTOKENS]


@pytest.mark.parametrize("backend", PEERS)
def test_a_peer_not_installed_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    monkeypatch.setitem(sys.modules, fast_count.BACKENDS[backend].module, None)
    monkeypatch.setenv(fast_count.BACKEND_ENV, backend)
    with pytest.raises(TokenizerNotFound, match=rf"pip install '{backend}>=0\.\d+,<0\.\d+'"):
        fast_count.fast_counter("o200k_base")
    monkeypatch.delenv(fast_count.BACKEND_ENV)  # auto never needs them
    assert tiktoken_enc.load("o200k_base").count("hello world") == 2


@pytest.mark.parametrize("backend", PEERS)
def test_a_peer_in_an_unproven_release_is_refused(
    monkeypatch: pytest.MonkeyPatch, backend: str
) -> None:
    module = pytest.importorskip(fast_count.BACKENDS[backend].module)
    monkeypatch.setattr(module, "__version__", "9.1.0", raising=False)
    monkeypatch.setenv(fast_count.BACKEND_ENV, backend)
    with pytest.raises(TokenizerNotFound, match=rf"{backend} 9\.1\.0 is installed, a release"):
        fast_count.fast_counter("o200k_base")


def test_the_rank_file_for_peers_is_verified_and_rewritten(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    import hashlib

    from tokcost.adapters.openai_encodings import verified_rank_file

    monkeypatch.setenv("TOKCOST_CACHE_DIR", str(tmp_path))
    enc = ENCODINGS["cl100k_base"]
    path = verified_rank_file(enc)
    assert path.parent == tmp_path and hashlib.sha256(path.read_bytes()).hexdigest() == enc.sha256
    path.write_bytes(path.read_bytes().replace(b"IQ== 0", b"Ig== 0", 1))  # changed: rewritten
    assert verified_rank_file(enc) == path
    assert hashlib.sha256(path.read_bytes()).hexdigest() == enc.sha256
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tiktoken"] == [path.name]


@each_backend
def test_a_whole_process_prints_only_the_count(backend: str, tmp_path: Path) -> None:
    # Rust code may write to file descriptor 2 directly (gigatoken can say "Using 2 threads
    # for pretokenization"), which CliRunner cannot see: a real process, a run past
    # SMALL_RUN_CHARS on 2 threads, must print the exact count and nothing else.
    import os
    import subprocess

    text = "".join(p.read_text(encoding="utf-8") for p in CORPUS_FILES) * 6
    assert len(text) >= fast_count.SMALL_RUN_CHARS
    (tmp_path / "in.txt").write_text(text, encoding="utf-8", newline="")
    proc = subprocess.run([sys.executable, "-m", "tokcost", "count", str(tmp_path / "in.txt"),
                           "--total", "-j", "2", "-t", "o200k_base"], capture_output=True,
                          text=True, env={**os.environ, fast_count.BACKEND_ENV: backend},
                          timeout=300, check=False)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == f"{tiktoken_count('o200k_base', text, False)}\n"


# --- auto: gigatoken, with toktok-rs for texts holding a long run -----------------------------

needs_both = pytest.mark.skipif(
    any(fast_count._release(fast_count.BACKENDS[name])[0] is None
        for name in (fast_count.GIGATOKEN, fast_count.TOKTOK)),
    reason="gigatoken and toktok-rs are not both installed in proven releases")
LONG = fast_count.GIGATOKEN_LONG_RUN


@pytest.fixture
def two_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine of GIGATOKEN_MAX_CPUS CPUs, where auto counts with gigatoken."""
    monkeypatch.setattr(fast_count, "_cpus", lambda: fast_count.GIGATOKEN_MAX_CPUS)


@needs_both
def test_auto_sends_long_runs_to_toktok(monkeypatch: pytest.MonkeyPatch, two_cpus: None) -> None:
    counter = fast_count.fast_counter("o200k_base")
    assert counter is not None and counter.fallback is not None
    assert (counter.backend.choice, counter.fallback.backend.choice) == ("gigatoken", "toktok")
    sent: list[str] = []
    own = counter.fallback._own
    monkeypatch.setattr(counter.fallback, "_own",
                        lambda batch, threads: sent.extend(batch) or own(batch, threads))
    ordinary = CORPUS_FILES[0].read_text(encoding="utf-8")
    assert counter.count(ordinary, False) == tiktoken_count("o200k_base", ordinary, False)
    assert (sent, counter.name) == ([], "gigatoken")
    texts = [ordinary, "x" + "a" * LONG + " y", "b" * (LONG - 1), " " * LONG + "z", "=" * LONG]
    assert counter.count_many(texts, False, 2) == [
        tiktoken_count("o200k_base", t, False) for t in texts]
    assert sent == [texts[1], texts[3], texts[4]]
    assert counter.name == "gigatoken+toktok-rs"  # what counted, as count --json says


@cache
def routed(name: str, limit: int) -> fast_count.FastCounter:
    """gigatoken sending texts with a run of ``limit`` characters to toktok-rs (a small limit:
    random texts go both ways)."""
    from dataclasses import replace

    specials = ENCODINGS[name].special_tokens
    return fast_count.FastCounter(
        replace(fast_count.BACKENDS[fast_count.GIGATOKEN], long_run=limit), name, specials,
        fallback=fast_count.FastCounter(fast_count.BACKENDS[fast_count.TOKTOK], name, specials))


@needs_both
@CHECKS
@given(st.lists(mixed | whitespace_runs | crlf | st.text(alphabet="a =\n中", max_size=60),
                min_size=1, max_size=6), st.booleans(), st.sampled_from(ENCODING_NAMES))
def test_routed_counts_equal_tiktokens_either_way(texts: list[str], allow_special: bool,
                                                  name: str) -> None:
    got = routed(name, 6).count_many(texts, allow_special, 2)
    assert got == [tiktoken_count(name, t, allow_special) for t in texts]


@needs_both
def test_whole_process_auto_with_a_long_run_prints_only_the_count(tmp_path: Path) -> None:
    # A run past SMALL_RUN_CHARS, one of its chunks holding 40k spaces: gigatoken and
    # toktok-rs both count in one process, on 2 threads; nothing reaches stderr.
    import os
    import subprocess

    corpus = "".join(p.read_text(encoding="utf-8") for p in CORPUS_FILES) * 3
    text = corpus + " " * (LONG + 8000) + "end\n" + corpus
    assert len(text) >= fast_count.SMALL_RUN_CHARS
    (tmp_path / "in.txt").write_text(text, encoding="utf-8", newline="")
    env = {k: v for k, v in os.environ.items() if k != fast_count.BACKEND_ENV}
    proc = subprocess.run([sys.executable, "-m", "tokcost", "count", str(tmp_path / "in.txt"),
                           "--json", "-j", "2", "-t", "o200k_base"], capture_output=True,
                          text=True, env=env, timeout=300, check=False)
    assert (proc.returncode, proc.stderr) == (0, "")
    doc = json.loads(proc.stdout)
    assert doc["total"]["tokens"] == {"o200k_base": tiktoken_count("o200k_base", text, False)}
    on_two = fast_count._cpus() <= fast_count.GIGATOKEN_MAX_CPUS  # the child's CPUs are ours
    assert _backends(doc) == {"gigatoken+toktok-rs" if on_two else "toktok-rs"}


@needs_both
def test_auto_counts_with_toktok_on_more_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    # gigatoken counts one text at a time; toktok-rs on a thread per CPU is faster from 3 CPUs
    monkeypatch.setattr(fast_count, "_cpus", lambda: fast_count.GIGATOKEN_MAX_CPUS + 1)
    counter = fast_count.fast_counter("o200k_base")
    assert counter is not None and counter.fallback is None
    assert counter.backend.choice == fast_count.TOKTOK
    assert counter.count("x" + "a" * LONG, False) == tiktoken_count("o200k_base",
                                                                     "x" + "a" * LONG, False)


def test_auto_without_toktok_counts_long_runs_on_gigatoken(no_toktok: None,
                                                           two_cpus: None) -> None:
    if fast_count._release(fast_count.BACKENDS[fast_count.GIGATOKEN])[0] is None:
        pytest.skip("gigatoken is not installed in a proven release")
    counter = fast_count.fast_counter("cl100k_base")
    assert counter is not None and counter.fallback is None  # tiktoken is slower there still
    text = "q" * (LONG + 5) + " end"
    assert counter.count(text, False) == tiktoken_count("cl100k_base", text, False)
    assert counter.name == "gigatoken"


def test_auto_finds_gigatoken_without_importing_it() -> None:
    # Its import (about 60 ms) and importlib.metadata's (70 ms) are paid only when a large run
    # builds it; a small count, which tiktoken does, pays neither (nor numpy's).
    import subprocess

    script = ("import sys\n"
              "from tokcost.adapters import tiktoken_enc\n"
              "tok = tiktoken_enc.load('o200k_base')\n"
              "tok.plan_run(11)\n"
              "n = tok.count('hello world')\n"
              "print(n, tok.counter and tok.counter.name, tok.count_backend,\n"
              "      sorted({'gigatoken', 'toktok', 'numpy', 'importlib.metadata'}"
              " & set(sys.modules)))\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != fast_count.BACKEND_ENV}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=120, check=True).stdout.split(maxsplit=3)
    assert out[:3] == ["2", auto_dist() or "None", "tiktoken"]
    assert "gigatoken" not in out[3] and "numpy" not in out[3] and "metadata" not in out[3]


def test_a_backend_its_dist_info_names_that_does_not_import_is_one_error(
    monkeypatch: pytest.MonkeyPatch, two_cpus: None
) -> None:
    monkeypatch.setattr(fast_count, "_dist_info_version", lambda backend: "0.10.0")
    monkeypatch.setattr(fast_count, "_release", lambda backend: (None, "not importable"))
    monkeypatch.setattr(fast_count, "AUTO_ORDER", (fast_count.GIGATOKEN,))
    monkeypatch.setitem(sys.modules, "gigatoken", None)
    monkeypatch.delitem(sys.modules, "gigatoken")  # restored afterwards, absent now
    counter = fast_count.fast_counter("o200k_base")
    assert counter is not None
    with pytest.raises(TokenizerNotFound, match=r"gigatoken does not import here; reinstall it "
                       r"\(pip install 'toktok-rs>=0\.3,<0\.4' 'gigatoken>=0\.10,<0\.11'\)"):
        counter.count("hello", False)
