"""The trainer's C core (csrc/tokcost_bpe.c) against its pure-Python twins: the same merges
and the same pre-token counts, on generated inputs; and it is built where the tests run."""

from __future__ import annotations

import importlib
import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokcost.bpe import TrainerConfig
from tokcost.bpe.core import compiled_core
from tokcost.bpe.pretokenize import PATTERNS, PretokenizeSpec, count_block, split_text

pre = importlib.import_module("tokcost.bpe.pretokenize")
train_mod = importlib.import_module("tokcost.bpe.train")

needs_core = pytest.mark.skipif(compiled_core() is None, reason="C core not built")


@contextmanager
def core(on: bool) -> Iterator[None]:
    """Run with the C core (when built) or with the Python twins; the environment and the
    cached lookups are put back afterwards."""
    saved = os.environ.get("TOKCOST_PURE_PYTHON")

    def reset() -> None:
        compiled_core.cache_clear()
        pre._ascii_counter.cache_clear()

    if on:
        os.environ.pop("TOKCOST_PURE_PYTHON", None)
    else:
        os.environ["TOKCOST_PURE_PYTHON"] = "1"
    reset()
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("TOKCOST_PURE_PYTHON", None)
        else:
            os.environ["TOKCOST_PURE_PYTHON"] = saved
        reset()


def test_core_is_built_where_tests_run() -> None:
    """CI installs with a C compiler: the wheel must carry the core (TOKCOST_PURE_PYTHON=1
    is the one way to run without it)."""
    if os.environ.get("TOKCOST_PURE_PYTHON"):
        pytest.skip("TOKCOST_PURE_PYTHON is set")
    core = compiled_core()
    assert core is not None, "the C core _tokcost_bpe was not built: install a C compiler"
    assert callable(core.merge) and callable(core.count_ascii)


def _train(counts: dict[str, int], config: TrainerConfig, *, on: bool) -> Any:
    with core(on):
        return train_mod.train_from_counts(dict(counts), config)


# Words over a small alphabet repeat pairs often, so the late merges tie and the queue's
# order (count, then pair, then age) decides; "ab" and "aab"-style words make merges that
# spell a token made before.
words = st.dictionaries(st.text(alphabet="abcé \n", min_size=1, max_size=12),
                        st.integers(min_value=1, max_value=50), min_size=1, max_size=60)


@needs_core
@settings(max_examples=150)
@given(counts=words, vocab=st.integers(min_value=257, max_value=330),
       longest=st.sampled_from([None, 2, 3, 5, 128]), floor=st.sampled_from([0, 2, 5]))
def test_merges_equal_the_python_loop(counts: dict[str, int], vocab: int,
                                      longest: int | None, floor: int) -> None:
    config = TrainerConfig(vocab_size=vocab, max_token_length=longest, min_frequency=floor,
                           pattern="gpt2")
    c = _train(counts, config, on=True)
    p = _train(counts, config, on=False)
    assert c.model.merges == p.model.merges
    assert c.model.ranks == p.model.ranks
    assert c.exhausted == p.exhausted


@needs_core
def test_merges_equal_on_a_repeated_token() -> None:
    """'aaaa' merges a+a, then aa+aa; 'aaa' then holds aa+a, which spells 'aaa' anew."""
    config = TrainerConfig(vocab_size=262, pattern="gpt2")
    counts = {"aaaa": 9, "aaa": 4, "baaab": 3}
    c, p = (_train(counts, config, on=on) for on in (True, False))
    assert c.model.merges == p.model.merges and len(c.model.merges) >= 3


@needs_core
@pytest.mark.parametrize("name", ["gpt2", "cl100k", "o200k"])
@settings(max_examples=300)
@given(parts=st.lists(st.sampled_from(
    [*"aZ09 '\t\r\n/.,_-é", "'s", "'LL", "'re", " 'd", "ABc", "aBC", "\x0b", "\x1c", "\x1f",
     "\x00", "\x7f", "  ", "\r\n", " \n"]), max_size=40))
def test_ascii_counts_equal_regex(name: str, parts: list[str]) -> None:
    """The C splitter of ASCII lines against ``regex`` on every line; a line with a
    non-ASCII character ('é') goes back to Python."""
    block = "".join(parts)
    spec = PretokenizeSpec(PATTERNS[name])
    with core(True):
        got = count_block(block, spec)
    expected: Counter[str] = Counter()
    for line in pre._lines(block):
        expected.update(split_text(line, PATTERNS[name]))
    assert got == expected


@needs_core
def test_ascii_counts_with_special_tokens() -> None:
    spec = PretokenizeSpec(PATTERNS["cl100k"], ("<|end|>",))
    block = "it's 123 done<|end|>next\nplain line  \n\nlast"
    with core(True):
        with_core = count_block(block, spec)
    with core(False):
        assert with_core == count_block(block, spec)
    assert with_core["<|end|>"] == 1


@needs_core
@pytest.mark.parametrize("args", [
    (bytearray(b"\x00" * 4), b"\x00" * 8, bytearray(b"\x02\x00\x00\x00"), b"\x00" * 8),  # word past the end
    (bytearray(b"\x05\x00\x00\x00"), b"\x00" * 8, bytearray(b"\x01\x00\x00\x00"), b"\x00" * 8),  # id >= n_keys
    (bytearray(b"\x00" * 3), b"", bytearray(b""), b""),  # not whole items
])
def test_merge_refuses_inconsistent_buffers(args: tuple[object, ...]) -> None:
    core = compiled_core()
    assert core is not None
    with pytest.raises(ValueError):
        core.merge(*args, b"\x01\x00\x00\x00", 1, 10, 0, 0, lambda a, b: 1)


@needs_core
def test_count_ascii_refuses_bad_arguments() -> None:
    core = compiled_core()
    assert core is not None
    with pytest.raises(ValueError):
        core.count_ascii(b"abc", 0, b"\x00" * 10, {})
    with pytest.raises(ValueError):
        core.count_ascii(b"abc", 3, b"\x00" * 128, {})


# --- HF's Unicode tables for the trainer's split ------------------------------------------

def test_hf_tables_agree_with_tokenizers() -> None:
    """The shipped ranges against HF's engine itself: on every code point where they differ
    from ``regex`` (the ones that matter) and on a spread of the others."""
    import regex
    from tokenizers import Regex, pre_tokenizers

    from tokcost.bpe.hf_unicode import CLASSES, tables

    t = tables()
    everything = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    text = "".join(map(chr, everything))
    for name, cls in CLASSES.items():
        ours = {c for a, b in t[name] for c in range(a, b + 1)}
        theirs_regex = {ord(ch) for ch in regex.findall(cls, text)}
        sample = sorted((ours ^ theirs_regex) | set(everything[::97]))
        probe = "".join(map(chr, sample))
        gaps = pre_tokenizers.Split(Regex(cls), "removed").pre_tokenize_str(probe)
        outside = {sample[i] for _, (a, b) in gaps for i in range(a, b)}
        hf = set(sample) - outside
        assert hf == ours & set(sample), name


NEW_CHARACTERS = "\ua7cf\U00016ebb\u0295\U00010d4a\u0558\U00011de0"  # Unicode 16/17, U+0295


@pytest.mark.parametrize("name", ["gpt2", "cl100k", "o200k"])
def test_characters_newer_than_hf_train_as_hf(tmp_path: Path, name: str) -> None:
    """Letters and numbers that ``regex`` knows and HF's tables do not: split as HF does,
    so the merges stay HF's."""
    from test_bpe import as_hf, hf_train

    from tokcost.bpe import train

    lines = [f'x = "{ch}"),  # {ch}{ch} Ab{ch}cd {ch}12 \'s\n' for ch in NEW_CHARACTERS]
    corpus = tmp_path / "new.txt"
    corpus.write_text("".join(lines * 40) + "plain ascii text, repeated words words\n" * 30,
                      encoding="utf-8")
    hf_vocab, hf_merges = hf_train(corpus, 330, PATTERNS[name])
    model = train([corpus], TrainerConfig(vocab_size=330, pattern=name)).model
    assert as_hf(model) == (hf_vocab, hf_merges)


@pytest.mark.parametrize("name", ["gpt2", "cl100k", "o200k"])
@settings(max_examples=150)
@given(parts=st.lists(st.sampled_from([*NEW_CHARACTERS, *"aZ9 '\n\r.é\u0301", "'S", "ab"]),
                      max_size=30))
def test_training_split_equals_hf_split(name: str, parts: list[str]) -> None:
    """The trainer's split of a line with characters HF's tables class otherwise, against
    HF's own Split on the same line."""
    from tokenizers import Regex, pre_tokenizers

    from tokcost.bpe.io import hf_pattern
    from tokcost.bpe.pretokenize import training_splitter

    line = "".join(parts)
    hf = pre_tokenizers.Split(Regex(hf_pattern(PATTERNS[name])), "isolated")
    assert training_splitter(PATTERNS[name])(line) == [p for p, _ in hf.pre_tokenize_str(line)]
