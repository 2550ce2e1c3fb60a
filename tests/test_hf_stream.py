"""Hugging Face tokenizers count chunk by chunk exactly where tokcost.adapters.hf_cuts proves
it: for each supported pipeline (tiny models trained here, no network), the counts of the
pieces between random cut points add up to ``tokenizers``' count of the whole text; other
pipelines count whole texts, within a stated bound."""

from __future__ import annotations

import itertools
from functools import cache
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import (
    AddedToken,
    Regex,
    Tokenizer,
    models,
    normalizers,
    pre_tokenizers,
    processors,
    trainers,
)

from tokcost.adapters import hf_cuts
from tokcost.adapters.hf import HFTokenizerAdapter
from tokcost.counting import CutRule, Inputs, count_paths
from tokcost.errors import InputError

PIECES = [
    *"ab cdE  \n\r\t.,'!?/-_0123456789", "é", "e\u0301", "Я", "中文", "東京", "हि", "ال", "'s",
    "’", "\u00a0", "🙂", "\u200d", "  ", "\r\n", "42", "3.14", "x=1;", "\ufffd", "\u0958.",
    "\u212b", "ｈｅｌｌｏ", "ﬁ", "ア・イ", "゠", "ß", "İ", "ΟΣ", "▁", " ▁x", "Hello", " world",
    "<|endoftext|>", "<|tool|>", "<tool>", "a <x y>", "\u00a8", "\u3000", "1234567",
]
texts = st.lists(st.sampled_from(PIECES), max_size=50).map("".join)
CORPUS = ["".join(PIECES) * 3, "Hello world, it's 2024: the quick brown fox. " * 20,
          "中文東京アイ 1234567 ΟΣ ßİ hello ｈｅｌｌｏ " * 10]
ADDED = [AddedToken("<|tool|>", special=False, normalized=False),
         AddedToken("a <x y>", special=False, normalized=False),
         AddedToken("<|endoftext|>", special=True, normalized=False)]


def _byte_level(pre: pre_tokenizers.PreTokenizer, norm: normalizers.Normalizer | None = None
                ) -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre
    if norm is not None:
        tok.normalizer = norm
    trainer = trainers.BpeTrainer(vocab_size=400, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer)
    return tok


def _split(*regexes: str) -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.Sequence(
        [*(pre_tokenizers.Split(Regex(r), "isolated") for r in regexes),
         pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])


def _unigram(pre: pre_tokenizers.PreTokenizer, norm: normalizers.Normalizer | None) -> Tokenizer:
    tok = Tokenizer(models.Unigram())
    tok.pre_tokenizer = pre
    if norm is not None:
        tok.normalizer = norm
    tok.train_from_iterator(CORPUS, trainers.UnigramTrainer(vocab_size=200, show_progress=False,
                                                            unk_token="<unk>"))
    return tok


def _wordpiece(pre: pre_tokenizers.PreTokenizer) -> Tokenizer:
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.pre_tokenizer = pre
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Lowercase()])
    tok.train_from_iterator(CORPUS, trainers.WordPieceTrainer(
        vocab_size=300, show_progress=False, special_tokens=["[UNK]"]))
    return tok


KINDS = {  # kind -> a builder
    "gpt2-bytelevel": lambda: _byte_level(pre_tokenizers.ByteLevel(add_prefix_space=False)),
    "gpt2-prefix-space": lambda: _byte_level(pre_tokenizers.ByteLevel(add_prefix_space=True)),
    "llama3": lambda: _byte_level(_split(hf_cuts.LLAMA3_REGEX)),
    "qwen2-nfc": lambda: _byte_level(_split(hf_cuts.QWEN2_REGEX), normalizers.NFC()),
    "o200k": lambda: _byte_level(_split(hf_cuts.PATTERNS["o200k"])),
    "deepseek-v3": lambda: _byte_level(_split(*hf_cuts.DEEPSEEK_REGEXES)),
    "metaspace-always-nfkc-lower": lambda: _unigram(
        pre_tokenizers.Metaspace(prepend_scheme="always"),
        normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])),
    "metaspace-first": lambda: _unigram(pre_tokenizers.Metaspace(prepend_scheme="first"), None),
    "whitespace-nfd-lower": lambda: _wordpiece(pre_tokenizers.Whitespace()),
    "whitespacesplit-metaspace": lambda: _unigram(pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace()]), normalizers.NFC()),
}


@cache
def adapter(kind: str) -> HFTokenizerAdapter:
    tok = KINDS[kind]()
    tok.add_tokens(ADDED[:2])
    tok.add_special_tokens(ADDED[2:])
    # A BOS as Llama-3 adds it: counts leave it out, per chunk as for the whole text.
    tok.post_processor = processors.TemplateProcessing(
        single="<|endoftext|> $A",
        special_tokens=[("<|endoftext|>", tok.token_to_id("<|endoftext|>"))])
    return HFTokenizerAdapter(f"hf:{kind}", tok)


def _cuts(rule: CutRule, text: str) -> list[int]:
    found, at = [], 1
    while (cut := rule.first(text, at, len(text))) >= 0:
        found.append(cut)
        at = cut + 1
    return found


@pytest.mark.parametrize("kind", KINDS)
def test_supported_kinds_stream(kind: str) -> None:
    tok = adapter(kind)
    assert tok.streamable
    assert CutRule.for_tokenizers([tok], allow_special=False).punct is False  # spaces only


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, picks=st.lists(st.integers(0, 10**6), max_size=8),
       allow_special=st.booleans())
def test_counts_between_random_cuts_add_up(kind: str, text: str, picks: list[int],
                                           allow_special: bool) -> None:
    tok = adapter(kind)
    rule = CutRule.for_tokenizers([tok], allow_special=allow_special)
    cuts = _cuts(rule, text)
    chosen = sorted({cuts[p % len(cuts)] for p in picks}) if cuts else []
    bounds = [0, *chosen, len(text)]
    parts = [text[a:b] for a, b in itertools.pairwise(bounds)]
    assert sum(tok.count(p, allow_special=allow_special) for p in parts) == tok.count(
        text, allow_special=allow_special), (text, chosen)


@pytest.mark.parametrize("kind", ["llama3", "metaspace-always-nfkc-lower", "deepseek-v3"])
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, block=st.integers(1, 40), piece=st.integers(1, 30))
def test_count_paths_streams_equal_whole(tmp_path: Path, kind: str, text: str, block: int,
                                         piece: int) -> None:
    """Through the reader: small blocks, chunks cut again to ``stream_chars``."""
    tok = adapter(kind)
    path = tmp_path / "t.txt"
    path.write_bytes((text * 3).encode())
    with mock.patch.object(tok, "stream_chars", piece):
        report = count_paths(Inputs(paths=[str(path)]), {"hf": tok}, block_bytes=block)
    assert report.files[0].tokens["hf"] == tok.count(text * 3)


def test_cuts_the_rule_does_not_make_would_change_counts() -> None:
    """The property above can fail: inside a word; before punctuation after a letter that NFC
    ends with a mark (hf_cuts: why Hugging Face pipelines cut at spaces only)."""
    tok = adapter("llama3")
    assert tok.count("Hel") + tok.count("lo world") != tok.count("Hello world")
    nfc = adapter("qwen2-nfc")
    assert nfc.count("\u0958") + nfc.count(".") != nfc.count("\u0958.")


def test_regexes_spelled_with_literal_characters_are_known() -> None:
    """tokenizer.json files write CR, LF (DeepSeek's) and U+3040 as characters or escapes."""
    literal = [r.replace(r"\u3040", "\u3040").replace(r"\r", "\r").replace(r"\n", "\n")
               for r in hf_cuts.DEEPSEEK_REGEXES]
    assert literal != list(hf_cuts.DEEPSEEK_REGEXES)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = _split(*literal)
    assert hf_cuts.streamable(tok)


def _fallback(tok: Tokenizer) -> HFTokenizerAdapter:
    return HFTokenizerAdapter("hf:x", tok)


def test_unproven_pipelines_count_whole_texts() -> None:
    llama2 = _unigram(pre_tokenizers.Metaspace(prepend_scheme="first", split=False), None)
    assert not _fallback(llama2).streamable  # one piece: nothing proves a cut
    other = _byte_level(_split(r"\w+|\s+|."))
    assert not _fallback(other).streamable  # a regex hf_cuts does not know
    nfkc = _byte_level(_split(hf_cuts.LLAMA3_REGEX), normalizers.NFKC())
    assert not _fallback(nfkc).streamable  # regex splits are argued under NFC at most
    stripped = _byte_level(pre_tokenizers.ByteLevel(add_prefix_space=False))
    stripped.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True)])
    assert not _fallback(stripped).streamable  # lstrip looks past the token


def test_a_file_too_large_for_a_whole_text_count_is_one_clear_error(tmp_path: Path) -> None:
    tok = _fallback(_unigram(pre_tokenizers.Metaspace(split=False), None))
    path = tmp_path / "big.txt"
    path.write_text("hello world " * 90_000, encoding="utf-8")  # over 1 Mi characters
    with mock.patch.object(tok, "max_chars", 1 << 20), pytest.raises(InputError, match=(
            r"big.txt: too large for exact counting with hf \(over 1 M characters\)")):
        count_paths(Inputs(paths=[str(path)]), {"hf": tok})
    with mock.patch.object(tok, "max_chars", 1000), pytest.raises(InputError, match="one piece"):
        tok.count("x" * 1001)


@pytest.mark.parametrize("kind", ["llama3", "metaspace-first"])
@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=texts, shard_bytes=st.integers(1, 48), allow_special=st.booleans())
def test_byte_range_shards_add_up(tmp_path: Path, kind: str, text: str, shard_bytes: int,
                                  allow_special: bool) -> None:
    """The shards of --engine dask cut a file's bytes where the stream would cut its text."""
    from tokcost.scale import count_shard, merge_shard_counts, plan_shards
    tok = adapter(kind)
    spec = f"hf:{tmp_path / 'tokenizer.json'}"
    tok.tokenizer.save(spec[3:])
    data = (text * 2).encode()
    path = tmp_path / "t.txt"
    path.write_bytes(data)
    shards = plan_shards([(str(path), len(data))], shard_bytes)
    part = merge_shard_counts(count_shard(s, [spec], allow_special=allow_special)
                              for s in shards)[str(path)]
    assert part.tokens[spec] == tok.count(text * 2, allow_special=allow_special)
