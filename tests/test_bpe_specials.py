"""Special tokens in the training corpus and the token-length limit, against HF BpeTrainer.

HF's ``AddedVocabulary`` splits the special tokens that its tokenizer has been given
(``add_special_tokens``) out of each sequence before pre-tokenization; tokcost does the
same split, and then, unlike HF, does not learn merges from the special tokens'
occurrences. The oracles below prove both halves against the installed ``tokenizers``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bpe import as_hf, corpus_text

from tokcost.bpe import (
    PATTERNS,
    BPEModel,
    Encoder,
    TrainerConfig,
    train,
    train_counted,
    train_from_counts,
    train_from_texts,
)
from tokcost.bpe.io import hf_pattern
from tokcost.bpe.model import to_byte_level
from tokcost.bpe.pretokenize import (
    PretokenizeSpec,
    count_block,
    count_words,
    pretokenize,
    special_regex,
)
from tokcost.bpe.train import DEFAULT_MAX_TOKEN_LENGTH

SPECIALS = ("<|endoftext|>", "<|fim|>", "[SEP]")


def special_corpus(repeat: int = 2) -> str:
    """The team's sentences with special tokens glued to words, between words, at line
    starts and ends, side by side, and one inside another's reach (``<|fim|>`` and
    ``<|endoftext|>`` share ``<|``)."""
    out = []
    for i, line in enumerate(corpus_text(repeat).splitlines()):
        s = SPECIALS[i % len(SPECIALS)]
        out.append(f"{s}{line}" if i % 2 else f"{line} {s}x{s}")
    out.append("<|endoftext|><|endoftext|>[SEP]word<|fim|>")
    out.append("<|endoftext|")  # almost one: plain text
    return "\n".join(out) + "\n"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("specials") / "corpus.txt"
    path.write_bytes(special_corpus().encode("utf-8"))
    return path


def hf_tokenizer(pattern: str) -> Any:
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import Regex, models, pre_tokenizers

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(hf_pattern(pattern)), "isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    return tok


def hf_trainer(vocab: int, specials: tuple[str, ...], max_len: int | None = None) -> Any:
    from tokenizers import pre_tokenizers, trainers

    return trainers.BpeTrainer(
        vocab_size=vocab, min_frequency=0, show_progress=False, special_tokens=list(specials),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), max_token_length=max_len,
    )


def hf_model(tok: Any) -> tuple[dict[str, int], list[list[str]]]:
    model = json.loads(tok.to_str())["model"]
    merges = [m if isinstance(m, list) else m.split(" ") for m in model["merges"]]
    return model["vocab"], merges


def hf_train_added(path: Path, vocab: int, pattern: str,
                   specials: tuple[str, ...]) -> tuple[dict[str, int], list[list[str]]]:
    """HF with the special tokens added to the tokenizer first: its AddedVocabulary
    splits them out of every line, and it counts each occurrence as a word."""
    tok = hf_tokenizer(pattern)
    tok.add_special_tokens(list(specials))
    tok.train([str(path)], hf_trainer(vocab, specials))
    return hf_model(tok)


def hf_train_texts(texts: list[str], vocab: int, pattern: str, specials: tuple[str, ...] = (),
                   max_len: int | None = None) -> tuple[dict[str, int], list[list[str]]]:
    tok = hf_tokenizer(pattern)
    tok.train_from_iterator(texts, hf_trainer(vocab, specials, max_len))
    return hf_model(tok)


def merges_text(model: BPEModel) -> list[tuple[str, str]]:
    dec = model.decoder
    return [(to_byte_level(dec[a]), to_byte_level(dec[b])) for a, b, _ in model.merges]


# --- the split is HF's ----------------------------------------------------------------------


@pytest.mark.parametrize("pattern", ["o200k", "gpt2"])
def test_split_is_hfs_added_vocabulary(corpus: Path, pattern: str) -> None:
    """Oracle: tokcost's pre-tokens (each special occurrence one of them, as HF counts
    it) give exactly HF's merges, HF's merges inside the special tokens included."""
    _hf_vocab, hf_merges = hf_train_added(corpus, 600, PATTERNS[pattern], SPECIALS)
    words = count_words([corpus], PretokenizeSpec(PATTERNS[pattern], SPECIALS))
    text = corpus.read_text(encoding="utf-8")
    assert {s: words[s] for s in SPECIALS} == {s: text.count(s) for s in SPECIALS}
    # Learned as plain words (no special ids): HF spends one merge per special token it
    # rebuilds without a new id, so the same merges need that many more new ids here.
    config = TrainerConfig(vocab_size=256 + len(hf_merges), pattern=pattern,
                           max_token_length=None)
    _, mine = as_hf(train_from_counts(dict(words), config).model)
    assert mine == hf_merges
    assert ["<|endof", "text|>"] in hf_merges or ["<|endoftext", "|>"] in hf_merges


def test_single_character_special_equals_hf_exactly(tmp_path: Path) -> None:
    """A special token of one character leaves HF nothing to merge inside it, so HF with
    the token added and tokcost agree id for id."""
    path = tmp_path / "c.txt"
    path.write_text(corpus_text(2).replace(" the ", " the∎").replace("e,", "∎e,"),
                    encoding="utf-8")
    hf_vocab, hf_merges = hf_train_added(path, 500, PATTERNS["o200k"], ("∎",))
    model = train([path], TrainerConfig(vocab_size=500, special_tokens=("∎",))).model
    assert as_hf(model) == (hf_vocab, hf_merges)


# --- and the special tokens are not learned from ------------------------------------------------


@pytest.mark.parametrize(
    "pattern, vocab",
    [pytest.param("o200k", 700, id="o200k"), pytest.param("cl100k", 450, id="cl100k"),
     pytest.param(r"\w+|[^\w\s]+", 500, id="user-regex")],
)
def test_merges_are_hfs_on_the_text_between_specials(corpus: Path, pattern: str,
                                                     vocab: int) -> None:
    """Oracle: the merges are HF's trained on the pieces of each line between the special
    tokens, id for id; no learned token holds special-token text."""
    find = special_regex(SPECIALS)
    lines = corpus.read_text(encoding="utf-8").splitlines(keepends=True)
    pieces = [p for line in lines for p in find.split(line) if p]
    regex = PATTERNS.get(pattern, pattern)
    hf = hf_train_texts(pieces, vocab, regex, SPECIALS)
    model = train([corpus], TrainerConfig(vocab_size=vocab, pattern=pattern,
                                          special_tokens=SPECIALS)).model
    assert as_hf(model) == hf
    learned = {to_byte_level(model.decoder[c]) for *_, c in model.merges}
    assert not {"<|", "|>", "endoftext", "SEP"} & learned


def test_the_old_cut_learned_special_pieces(corpus: Path) -> None:
    """What the split prevents: without it the pattern cuts ``<|endoftext|>`` into
    ``<|``, ``endoftext`` and ``|>``, and BPE learns them (as HF's trainer does when the
    tokenizer has not been given the special tokens)."""
    text = corpus.read_text(encoding="utf-8")
    plain = train_from_texts(text.splitlines(keepends=True),
                             TrainerConfig(vocab_size=700)).model
    learned = {to_byte_level(plain.decoder[c]) for *_, c in plain.merges}
    assert {"<|", "endoftext"} <= learned


def test_every_way_in_splits_them_alike(corpus: Path, tmp_path: Path) -> None:
    config = TrainerConfig(vocab_size=600, special_tokens=SPECIALS)
    one = train([corpus], config)
    two = train([corpus], TrainerConfig(vocab_size=600, special_tokens=SPECIALS, jobs=2))
    text = corpus.read_text(encoding="utf-8")
    piped = train([], config, texts=[text])
    texts = train_from_texts(text.splitlines(keepends=True), config)
    for other in (two, piped, texts):
        assert other.model.merges == one.model.merges
        assert other.distinct_pretokens == one.distinct_pretokens
    assert one.total_pretokens == sum(
        n for w, n in count_block(text, PretokenizeSpec(PATTERNS["o200k"], SPECIALS)).items()
        if w not in SPECIALS)


def test_encoder_reads_the_specials_it_was_trained_around(corpus: Path) -> None:
    model = train([corpus], TrainerConfig(vocab_size=600, special_tokens=SPECIALS)).model
    enc = Encoder(model)
    ids = enc.encode("word<|fim|>[SEP]", allow_special=True)
    assert ids[-2:] == [model.special_tokens["<|fim|>"], model.special_tokens["[SEP]"]]


@pytest.mark.parametrize(
    "text, pieces",
    [
        pytest.param("a<|endoftext|>b", ["a", "<|endoftext|>", "b"], id="glued"),
        pytest.param("<|fim|><|fim|>", ["<|fim|>", "<|fim|>"], id="side-by-side"),
        pytest.param(" <|fim|> x", [" ", "<|fim|>", " x"], id="spaces-stay-apart"),
        pytest.param("<|endoftext|", ["<|", "endoftext", "|"], id="almost"),
        pytest.param("<|a|>x", ["<|a|>x"], id="longest-wins"),
    ],
)
def test_pretokenize_cases(text: str, pieces: list[str]) -> None:
    spec = PretokenizeSpec(PATTERNS["o200k"], (*SPECIALS, "<|a|>", "<|a|>x"))
    assert pretokenize(text, spec) == pieces


@settings(max_examples=100, deadline=None)
@given(specials=st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=5),
       pattern=st.sampled_from(sorted(PATTERNS.values())))
def test_spec_round_trip(specials: list[str], pattern: str) -> None:
    """Any special tokens survive the spec, which crosses process and cluster boundaries
    as the pattern it holds."""
    import pickle

    spec = PretokenizeSpec(pattern, specials)
    assert (spec.pattern, spec.special_tokens) == (pattern, tuple(dict.fromkeys(specials)))
    assert pickle.loads(pickle.dumps(spec)) == spec


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.one_of(st.sampled_from(["<s>", "x\ny", "y<s>", "\n", " ", "<"]),
                                st.text(alphabet="ab y<s>\n", max_size=6)), max_size=20),
       pattern=st.sampled_from([PATTERNS["o200k"], r"\w+"]))
def test_block_counts_equal_line_by_line(parts: list[str], pattern: str) -> None:
    """``count_block`` finds the lines that hold special tokens in the whole block at once;
    its counts are those of each line pre-tokenized on its own (a special token with a
    line break in it never matches across lines, as HF reads lines)."""
    block = "".join(parts)
    spec = PretokenizeSpec(pattern, ("<s>", "x\ny", "y<s>"))
    lines = block.splitlines(keepends=True)  # only "\n" breaks lines in this alphabet
    want = Counter(w for line in lines for w in pretokenize(line, spec))
    assert count_block(block, spec) == want


# --- the token-length limit -----------------------------------------------------------------


@pytest.mark.parametrize(
    "texts, vocab, special, max_len",
    [
        pytest.param([" a", " aa"], 258, "Ġa", 3, id="special-equals-Ġa"),
        pytest.param(["鉄鉄鉄 鉄鉄", "鉄鉄"], 262, "é", 3, id="special-equals-byte-é"),
    ],
)
def test_special_tokens_count_their_bytes_not_their_utf8(texts: list[str], vocab: int,
                                                         special: str, max_len: int) -> None:
    """A special token whose text spells a byte-level token ("Ġa" is b" a", "é" is byte
    0xE9) is as long as those bytes when a merge reaches it, as in HF."""
    hf = hf_train_texts(texts, vocab, PATTERNS["o200k"], (special,), max_len + 1)
    model = train_from_texts(texts, TrainerConfig(vocab_size=vocab, special_tokens=(special,),
                                                  max_token_length=max_len)).model
    assert as_hf(model) == hf
    if special == "Ġa":
        assert hf[1] == [["Ġ", "a"], ["Ġa", "a"]]


def test_default_limit_on_a_run_of_one_letter(tmp_path: Path) -> None:
    """Without a limit, one long run learns tokens of 2, 4, 8, ... bytes up to the whole
    run; the default stops at 128 bytes, as HF does with max_token_length=129."""
    text = "a" * 5000 + "\n"
    path = tmp_path / "a.txt"
    path.write_text(text, encoding="utf-8")
    capped = train([path], TrainerConfig(vocab_size=300)).model
    assert DEFAULT_MAX_TOKEN_LENGTH == 128
    assert max(map(len, capped.ranks)) == 128
    assert as_hf(capped) == hf_train_texts([text], 300, PATTERNS["o200k"], max_len=129)
    free = train([path], TrainerConfig(vocab_size=300, max_token_length=None)).model
    assert max(map(len, free.ranks)) == 5000
    assert as_hf(free) == hf_train_texts([text], 300, PATTERNS["o200k"])


def test_words_counter_is_not_changed_by_the_split() -> None:
    """Text without special tokens pre-tokenizes as before (the spec costs nothing)."""
    text = corpus_text(1)
    plain = count_block(text, PretokenizeSpec(PATTERNS["cl100k"]))
    assert count_block(text, PretokenizeSpec(PATTERNS["cl100k"], SPECIALS)) == plain
    assert isinstance(plain, Counter)


def test_dask_workers_split_them_alike(corpus: Path, tmp_path: Path) -> None:
    """The spec carries the special tokens to the Dask workers: the same merges. (Threads,
    not processes, to start quickly: the spec pickles either way.)"""
    distributed = pytest.importorskip("distributed")
    from tokcost.counting import TrainingInputs
    from tokcost.scale import DaskRunner

    config = TrainerConfig(vocab_size=500, special_tokens=SPECIALS)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        with distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
            local_directory=str(tmp_path), silence_logs=50,
        ) as lc, distributed.Client(lc) as client:
            runner = TrainingInputs(DaskRunner(client=client, shard_bytes=2000))
            remote = train_counted(runner.count_words([corpus], config.reader_spec()), config)
    local = train([corpus], config)
    assert remote.model.merges == local.model.merges
    assert remote.distinct_pretokens == local.distinct_pretokens
