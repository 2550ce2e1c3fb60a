"""tokcost.bpe: golden, oracle (HF BpeTrainer, tiktoken, tokenizer.json) and property tests."""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokcost.bpe import (
    PATTERNS,
    BPEModel,
    Encoder,
    TrainerConfig,
    export_hf,
    export_tiktoken,
    load_any,
    load_model,
    save_model,
    train,
    train_from_texts,
)
from tokcost.bpe.encode import bpe_merge
from tokcost.bpe.io import hf_pattern
from tokcost.bpe.model import DisallowedSpecial, InvalidTokenId, to_byte_level
from tokcost.bpe.pretokenize import PretokenizeSpec, count_words, split_text, splitter
from tokcost.errors import InputError, UsageError
from tokcost.runner import plan_shards

# The team's own sentences (no copied text): prose, code, numbers, other scripts, CRLF.
_SENTENCES = [
    "The harbour bell rang twice before the ferry pulled away from the pier.",
    "She counted the tokens in every file, then priced them by the million.",
    "A kettle whistled somewhere upstairs while the rain kept drumming on the roof.",
    "Our tokenizer learns merges by counting neighbouring symbols again and again.",
    "Don't split the words we'll need later; they're useful, aren't they?",
    "Numbers like 1234567, 3.14159 and 2026-12-01 show how digits are grouped.",
    "def count_pairs(words):\n    return {pair: n for pair, n in words.items() if n > 1}",
    "for (int i = 0; i < n; ++i) { total += weights[i] * values[i]; }",
    "Le café était fermé, alors nous avons marché jusqu'à la gare.",
    "Die Brücke über den Fluss wurde im Frühling neu gestrichen.",
    "東京の駅で友達と待ち合わせをしました。",
    "Привет, как дела? Всё хорошо, спасибо!",
    "Emoji travel as bytes too: 🚲🌧️☕ and the tokens must round-trip.",
    "Tabs\tand  double  spaces   and trailing spaces   ",
    "WINDOWS LINES END WITH CRLF\r",
    "   indented line with    irregular     gaps",
    "MixedCASE wordsLikeThis and ALLCAPS and snake_case_names",
    "The cache grows by one block of sixteen tokens at a time.",
    "Prices rose from $0.15 to $2.50 per million input tokens in 2025.",
    "A quiet morning; the market opened late and closed early.",
]


def corpus_text(repeat: int = 6) -> str:
    """About 30 KB: every sentence, shuffled deterministically with counters mixed in."""
    lines = []
    for r in range(repeat):
        for i, s in enumerate(_SENTENCES):
            j = (i * 7 + r * 3) % len(_SENTENCES)
            lines.append(f"{s} {_SENTENCES[j].split()[0]} item {r * 37 + i}")
        lines.append("")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bpe") / "corpus.txt"
    path.write_bytes(corpus_text().encode("utf-8"))
    return path


@pytest.fixture(scope="module")
def trained(corpus: Path) -> BPEModel:
    cfg = TrainerConfig(vocab_size=700, pattern="o200k", special_tokens=("<|endoftext|>",))
    return train([corpus], cfg).model


def hf_train(
    path: Path, vocab: int, pattern: str, specials: tuple[str, ...] = (), max_len: int | None = None
) -> tuple[dict[str, int], list[list[str]]]:
    """The oracle: HF BpeTrainer configured as tokcost's trainer documents."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import Regex, models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(hf_pattern(pattern)), "isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=vocab,
        min_frequency=0,
        show_progress=False,
        special_tokens=list(specials),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        max_token_length=max_len,
    )
    tok.train([str(path)], trainer)
    model = json.loads(tok.to_str())["model"]
    merges = [m if isinstance(m, list) else m.split(" ") for m in model["merges"]]
    return model["vocab"], merges


def as_hf(model: BPEModel) -> tuple[dict[str, int], list[list[str]]]:
    """tokcost's model in HF's terms; HF keeps a pair merged twice only at its last rank."""
    vocab = {to_byte_level(b): i for b, i in model.ranks.items()}
    vocab.update(model.special_tokens)
    dec = model.decoder
    pairs = [(to_byte_level(dec[a]), to_byte_level(dec[b])) for a, b, _ in model.merges]
    last = {p: k for k, p in enumerate(pairs)}
    return vocab, [list(p) for k, p in enumerate(pairs) if last[p] == k]


# --- pre-tokenization -------------------------------------------------------------------


def test_named_patterns_are_tiktokens(monkeypatch: pytest.MonkeyPatch) -> None:
    from tiktoken_ext import openai_public

    # tiktoken's constructors load rank files first; a stub keeps this offline.
    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", lambda *a, **k: {})
    assert PATTERNS["gpt2"] == openai_public.r50k_base()["pat_str"]
    assert PATTERNS["cl100k"] == openai_public.cl100k_base()["pat_str"]
    assert PATTERNS["o200k"] == openai_public.o200k_base()["pat_str"]


@pytest.mark.parametrize(
    "text, pieces",
    [
        pytest.param("Hello world!!", ["Hello", " world", "!!"], id="words"),
        pytest.param("a\r\nb", ["a", "\r\n", "b"], id="crlf"),
        pytest.param("x 12345", ["x", " ", "123", "45"], id="digits-by-three"),
        pytest.param("they're", ["they", "'re"], id="contraction"),
    ],
)
def test_split_cl100k(text: str, pieces: list[str]) -> None:
    assert split_text(text, PATTERNS["cl100k"]) == pieces


def test_user_regex_keeps_gaps_like_hf_isolated() -> None:
    assert split_text("ab--cd", r"[a-z]+") == ["ab", "--", "cd"]


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
def test_ascii_fast_path_matches_regex(text: str) -> None:
    import regex

    for pattern in PATTERNS.values():
        assert splitter(pattern)(text) == regex.findall(pattern, text)


def test_lines_split_only_on_newline(tmp_path: Path) -> None:
    path = tmp_path / "odd.txt"
    # \x0b, \x1c and U+2028 are line breaks to str.splitlines, not to tokcost.
    path.write_bytes("a\x0bb\x1cc\u2028d\r\ne\n".encode())
    counts = count_words([path], PretokenizeSpec(PATTERNS["gpt2"]))
    assert counts["\r\n"] == 1  # CRLF survives
    assert sum(len(w) * n for w, n in counts.items()) == len("a\x0bb\x1cc\u2028d\r\ne\n")


def test_jobs_give_the_same_counts(corpus: Path, tmp_path: Path) -> None:
    other = tmp_path / "b.txt"
    other.write_text("second file\nwith two lines\n", encoding="utf-8")
    one = count_words([corpus, other], PretokenizeSpec(PATTERNS["o200k"]), jobs=1)
    two = count_words([corpus, other], PretokenizeSpec(PATTERNS["o200k"]), jobs=2)
    assert one == two


def test_shards_cover_everything() -> None:
    parts = plan_shards([("a", 10), ("b", 6), ("c", 0)], 6)
    covered = Counter((p.path, i) for part in parts for p in part for i in range(p.start, p.end))
    assert sum(covered.values()) == 16 and max(covered.values()) == 1


# --- training: golden and oracle ---------------------------------------------------------


def test_wikipedia_example() -> None:
    """minbpe's example: 3 merges turn "aaabdaaabac" into [aaab, d, aaab, a, c]."""
    model = train_from_texts(["aaabdaaabac"], TrainerConfig(vocab_size=259, pattern="gpt2")).model
    dec = model.decoder
    # HF's tie rule picks a+b over aa+a (smaller left id), then aa+ab; same tokens as minbpe.
    assert [dec[c] for _, _, c in model.merges] == [b"aa", b"ab", b"aaab"]
    ids = Encoder(model).encode("aaabdaaabac")
    assert [dec[i] for i in ids] == [b"aaab", b"d", b"aaab", b"a", b"c"]
    raw = {bytes([b]): b for b in range(256)} | {b"aa": 256, b"aaa": 257, b"aaab": 258}
    assert bpe_merge(b"aaabdaaabac", raw) == [258, 100, 258, 97, 99]


@pytest.mark.parametrize(
    "pattern, vocab, specials",
    [
        pytest.param("gpt2", 300, (), id="gpt2-300"),
        pytest.param("gpt2", 900, ("<|endoftext|>",), id="gpt2-900-special"),
        pytest.param("cl100k", 600, (), id="cl100k-600"),
        pytest.param("cl100k", 1500, ("<pad>", "<|endoftext|>"), id="cl100k-1500-specials"),
        pytest.param("o200k", 450, (), id="o200k-450"),
        pytest.param("o200k", 1200, (), id="o200k-1200"),
    ],
)
def test_merges_identical_to_hf_bpetrainer(
    corpus: Path, pattern: str, vocab: int, specials: tuple[str, ...]
) -> None:
    hf_vocab, hf_merges = hf_train(corpus, vocab, PATTERNS[pattern], specials)
    cfg = TrainerConfig(vocab_size=vocab, pattern=pattern, special_tokens=specials)
    mine_vocab, mine_merges = as_hf(train([corpus], cfg).model)
    assert mine_merges == hf_merges
    assert mine_vocab == hf_vocab


def test_max_token_length_matches_hf_plus_one(corpus: Path) -> None:
    hf_vocab, hf_merges = hf_train(corpus, 800, PATTERNS["o200k"], max_len=5)
    cfg = TrainerConfig(vocab_size=800, pattern="o200k", max_token_length=4)
    model = train([corpus], cfg).model
    assert max(len(b) for b in model.ranks) <= 4
    assert as_hf(model) == (hf_vocab, hf_merges)


def test_user_regex_matches_hf(corpus: Path) -> None:
    pattern = r"\w+|[^\w\s]+"
    hf_vocab, hf_merges = hf_train(corpus, 500, pattern)
    model = train([corpus], TrainerConfig(vocab_size=500, pattern=pattern)).model
    assert model.pattern_name is None
    assert as_hf(model) == (hf_vocab, hf_merges)


@pytest.mark.parametrize(
    "config, error",
    [
        pytest.param({"vocab_size": 256, "special_tokens": ("<s>",)}, UsageError, id="too-small"),
        pytest.param({"vocab_size": 300, "pattern": "(unclosed"}, UsageError, id="bad-regex"),
        pytest.param({"vocab_size": 300, "min_frequency": -1}, UsageError, id="neg-freq"),
    ],
)
def test_bad_config(config: dict[str, object], error: type[Exception]) -> None:
    # The config checks itself on construction, before any text is read.
    with pytest.raises(error):
        train_from_texts(["some text"], TrainerConfig(**config))  # type: ignore[arg-type]


def test_empty_corpus(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="empty"):
        train([empty], TrainerConfig(vocab_size=300))


def test_too_few_pairs_gives_the_merges_it_could_make() -> None:
    result = train_from_texts(["abcabc"], TrainerConfig(vocab_size=1000, pattern="gpt2"))
    assert result.exhausted and result.warnings
    assert [result.model.decoder[c] for *_, c in result.model.merges][-1] == b"abcabc"


# --- encoding: oracle (tiktoken, tokenizer.json) and properties -------------------------


def test_ids_identical_to_tiktoken_and_tokenizer_json(
    trained: BPEModel, corpus: Path, tmp_path: Path
) -> None:
    import tiktoken
    from tokenizers import Tokenizer

    enc = Encoder(trained)
    tk = tiktoken.Encoding(
        "t",
        pat_str=trained.pattern,
        mergeable_ranks=trained.ranks,
        special_tokens=trained.special_tokens,
    )
    export_hf(trained, tmp_path / "tokenizer.json")
    hf = Tokenizer.from_file(str(tmp_path / "tokenizer.json"))
    texts = [
        *corpus.read_text(encoding="utf-8").split("\n"),
        "unseen words: zyzzyva quokka 9876543210",
        "ÜBER naïve façade — «quotes» …",
        "日本語のテキストと한국어 텍스트",
        "  \n\n\t\r\n  trailing  ",
    ]
    for text in texts:
        mine = enc.encode_ordinary(text)
        assert mine == tk.encode_ordinary(text), text
        assert mine == hf.encode(text, add_special_tokens=False).ids, text
    special = "before <|endoftext|> after"
    assert enc.encode(special, allow_special=True) == tk.encode(special, allowed_special="all")
    assert (
        enc.encode(special, allow_special=True) == hf.encode(special, add_special_tokens=False).ids
    )


def test_tiktoken_export_round_trip(trained: BPEModel, tmp_path: Path) -> None:
    paths = export_tiktoken(trained, tmp_path / "t.tiktoken")
    assert [p.name for p in paths] == ["t.tiktoken", "t.tiktoken.json"]
    again = load_any(str(tmp_path / "t.tiktoken"))
    assert again.ranks == trained.ranks and again.special_tokens == trained.special_tokens
    assert again.pattern == trained.pattern
    import tokcost

    tok = tokcost.get_tokenizer(f"tiktoken:{tmp_path / 't.tiktoken'}")
    assert tok.encode("the harbour bell") == Encoder(trained).encode("the harbour bell")


@pytest.fixture(scope="module")
def shared_model() -> BPEModel:
    """One cl100k model for the property tests (module scope: hypothesis reruns each test)."""
    cfg = TrainerConfig(vocab_size=600, pattern="cl100k", special_tokens=("<|endoftext|>",))
    return train_from_texts(corpus_text(2).split("\n"), cfg).model


@pytest.fixture(scope="module")
def shared_encoder(shared_model: BPEModel) -> Encoder:
    return Encoder(shared_model)


@pytest.fixture(scope="module")
def shared_tiktoken(shared_model: BPEModel):  # type: ignore[no-untyped-def]
    import tiktoken

    m = shared_model
    return tiktoken.Encoding(
        "t", pat_str=m.pattern, mergeable_ranks=m.ranks, special_tokens=m.special_tokens
    )


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=80))
def test_round_trip_text(shared_encoder: Encoder, shared_tiktoken, text: str) -> None:  # type: ignore[no-untyped-def]
    enc = shared_encoder
    ids = enc.encode_ordinary(text)
    fixed = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    assert enc.decode(ids) == fixed
    # Letters newer than Python's own Unicode tables (e.g. Unicode 17 scripts) are letters
    # to the `regex` package but not yet to tiktoken's Rust regex: compare on the rest.
    if all(unicodedata.category(ch) != "Cn" for ch in fixed):
        assert ids == shared_tiktoken.encode_ordinary(fixed)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=80))
def test_round_trip_bytes(shared_encoder: Encoder, data: bytes) -> None:
    enc = shared_encoder
    assert enc.decode_bytes(enc.encode_bytes(data)) == data


def test_special_tokens_like_tiktoken(trained: BPEModel) -> None:
    enc = Encoder(trained)
    text = "end <|endoftext|>"
    with pytest.raises(DisallowedSpecial, match="allow_special"):
        enc.encode(text)
    eot = trained.special_tokens["<|endoftext|>"]
    assert enc.encode(text, allow_special=True)[-1] == eot
    assert eot not in enc.encode_ordinary(text)
    assert enc.count(text) == len(enc.encode_ordinary(text))
    assert enc.count(text, allow_special=True) == len(enc.encode(text, allow_special=True))


@pytest.mark.parametrize(
    "bad", [pytest.param(10**6, id="too-large"), pytest.param(-1, id="negative")]
)
def test_invalid_token_id(trained: BPEModel, bad: int) -> None:
    with pytest.raises(InvalidTokenId, match="not in this vocabulary"):
        Encoder(trained).decode([1, bad])


# --- files --------------------------------------------------------------------------------


def test_save_load_round_trip(trained: BPEModel, tmp_path: Path) -> None:
    model_path, vocab_path = save_model(trained, tmp_path / "tok.bpe")
    assert vocab_path.name == "tok.vocab"
    header = vocab_path.read_text(encoding="utf-8").splitlines()[0]
    assert header.startswith("# tokcost-bpe v1")
    again = load_model(model_path)
    assert again.ranks == trained.ranks
    assert again.merges == trained.merges
    assert again.special_tokens == trained.special_tokens
    assert json.loads(model_path.read_text(encoding="utf-8"))["version"] == 1
    with pytest.raises(UsageError, match="force=True"):
        save_model(trained, model_path)
    save_model(trained, model_path, force=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tok.bpe", "tok.vocab"]  # no temp files


def test_load_rejects_other_versions(tmp_path: Path) -> None:
    from tokcost.bpe.model import BPEError

    bad = tmp_path / "future.bpe"
    bad.write_text(json.dumps({"format": "tokcost-bpe", "version": 99}), encoding="utf-8")
    with pytest.raises(BPEError, match="version 99"):
        load_model(bad)
    with pytest.raises(UsageError, match="not found"):
        load_model(tmp_path / "missing.bpe")


def test_cl100k_import_known_answers() -> None:
    import tokcost

    tok = tokcost.get_tokenizer("tiktoken:cl100k_base")
    if getattr(tok, "encoding", None) is None:
        pytest.skip("the tiktoken adapter exposes no encoding")
    model = load_any("tiktoken:cl100k_base")
    enc = Encoder(model)
    assert enc.encode("hello world") == [15339, 1917]
    assert enc.encode("hello <|endoftext|>", allow_special=True) == [15339, 220, 100257]
    for text in ["  multiple  spaces\n\n", "rock'n'roll 12345", "Ünïcödé ✓ 東京"]:
        assert enc.encode_ordinary(text) == tok.encode(text)


# --- the bpe: adapter ---------------------------------------------------------------------


def test_adapter(trained: BPEModel, tmp_path: Path) -> None:
    from tokcost.adapters.base import Tokenizer
    from tokcost.adapters.bpe import BPETokenizer, load

    path, _ = save_model(trained, tmp_path / "a.bpe")
    tok = load(str(path))
    assert isinstance(tok, Tokenizer)
    assert tok.streamable and tok.releases_gil and tok.exact
    text = "The ferry <|endoftext|> left"
    with pytest.raises(DisallowedSpecial):
        tok.encode_strict(text)
    assert trained.special_tokens["<|endoftext|>"] not in tok.encode(text)  # plain text
    ref = BPETokenizer(trained, "ref", use_tiktoken=False)
    assert not ref.releases_gil
    assert tok.encode(text, allow_special=True) == ref.encode(text, allow_special=True)
    assert tok.count(text) == ref.count(text) == len(Encoder(trained).encode_ordinary(text))
    assert tok.decode(tok.encode("round trip")) == "round trip"
    user = BPETokenizer(
        train_from_texts(["ab ab"], TrainerConfig(vocab_size=257, pattern=r"\w+")).model, "u"
    )
    assert not user.streamable and not user.releases_gil


@settings(max_examples=25, deadline=None)
@given(
    words=st.lists(st.text(alphabet="abc", min_size=1, max_size=10), min_size=2, max_size=20),
    picks=st.lists(st.integers(min_value=0, max_value=19), min_size=1, max_size=60),
    extra=st.integers(min_value=1, max_value=120),
)
def test_merges_identical_to_hf_on_random_corpora(
    words: list[str], picks: list[int], extra: int
) -> None:
    """Property oracle: many ties and overlapping pairs (aaa, abab), same merges as HF."""
    import tempfile

    text = " ".join(words[i % len(words)] for i in picks) + "\n"
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "c.txt"
        path.write_text(text, encoding="utf-8")
        hf_vocab, hf_merges = hf_train(path, 256 + extra, PATTERNS["gpt2"])
        model = train([path], TrainerConfig(vocab_size=256 + extra, pattern="gpt2")).model
    assert as_hf(model) == (hf_vocab, hf_merges)


def test_interrupted_write_leaves_nothing(
    trained: BPEModel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    def ctrl_c(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        save_model(trained, tmp_path / "tok.bpe")
    assert list(tmp_path.iterdir()) == []
