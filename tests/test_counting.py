"""Counting: exact streaming (property tests), walking, binary and bad input."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from tokcost import get_tokenizer
from tokcost.adapters.openai_encodings import PATTERNS
from tokcost.adapters.tiktoken_enc import TEKKEN_PATTERN
from tokcost.counting import Inputs, TextStream, count_paths, find_boundary, split_text, walk
from tokcost.errors import InputError, UsageError
from tokcost.runner import RunConfig

# Pieces that stress the pre-tokenizers: letters of several scripts, combining
# marks, apostrophes (o200k glues 's to words), digits, CR/LF, odd spaces.
PIECES = [
    *"ab cdE  \n\n\r\t.,'!?/-_0123456789",
    "é", "e\u0301", "Я", "中文", "हि", "ال", "'s", "'LL", "’", "<|endoftext|>",
    "\u00a0", "🙂", "\u200d", "  ", "\r\n",
]
texts = st.lists(st.sampled_from(PIECES), max_size=80).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=texts, size=st.integers(2, 12))
def test_split_points_never_change_pretokenization(text: str, size: int) -> None:
    """Cutting at find_boundary points gives the same pieces for gpt2, cl100k, o200k, Tekken."""
    parts = split_text(text, size)
    assert "".join(parts) == text
    for pattern in [*PATTERNS.values(), TEKKEN_PATTERN]:
        rx = regex.compile(pattern)
        assert [p for part in parts for p in rx.findall(part)] == rx.findall(text)


@settings(max_examples=60, deadline=None)
@given(text=texts, block=st.integers(1, 9))
def test_streamed_count_equals_whole_count(text: str, block: int) -> None:
    data = text.encode("utf-8")
    for spec in ("tiktoken:cl100k_base", "tiktoken:o200k_base"):
        tok = get_tokenizer(spec)
        stream = TextStream(io.BytesIO(data), block_bytes=block)
        assert sum(tok.count(c) for c in stream.chunks()) == tok.count(text)
        assert stream.bytes == len(data) and stream.chars == len(text)


def test_large_file_counts_exactly_in_chunks(tmp_path: Path) -> None:
    words = ["token", "cost", "Größe", "東京", "l'été", "it's", "x=1;", "\n", "  "]
    text = " ".join(words[i % len(words)] + str(i % 7) for i in range(60_000))
    path = tmp_path / "big.txt"
    path.write_text(text, encoding="utf-8", newline="")
    toks = {s: get_tokenizer(s) for s in ("tiktoken:cl100k_base", "tiktoken:o200k_base")}
    report = count_paths(Inputs(paths=[str(path)]), toks, block_bytes=4096)
    for spec, tok in toks.items():
        assert report.files[0].tokens[spec] == tok.count(text)
    threaded = count_paths(Inputs(paths=[str(path)]), toks, run=RunConfig(jobs=2), block_bytes=4096)
    assert threaded.files[0].tokens == report.files[0].tokens


def test_find_boundary_example() -> None:
    assert find_boundary("one two") == 3
    assert find_boundary("abc") == -1
    assert find_boundary("it's") == -1  # never between a word and 's


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "build").mkdir()
    (root / ".git").mkdir()
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "src" / ".gitignore").write_text("secret.txt\n")
    (root / "a.md").write_text("hello world\n")
    (root / "debug.log").write_text("ignored\n")
    (root / "build" / "out.txt").write_text("ignored\n")
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "src" / "main.py").write_text("print('hi')\n")
    (root / "src" / "secret.txt").write_text("ignored by the nested .gitignore\n")
    (root / "src" / "deep" / "notes.txt").write_text("deep notes\n")
    (root / "src" / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    return root


def _rel(root: Path, paths: list[str]) -> list[str]:
    return [Path(p).relative_to(root).as_posix() for p in paths]


def test_walk_respects_gitignore_and_globs(tree: Path) -> None:
    files = [s.path for s in walk([str(tree)])]
    assert _rel(tree, files) == [
        ".gitignore", "a.md", "src/.gitignore", "src/image.png", "src/main.py",
        "src/deep/notes.txt",
    ]
    only_py = [s.path for s in walk([str(tree)], include=["*.py"])]
    assert _rel(tree, only_py) == ["src/main.py"]
    no_src = [s.path for s in walk([str(tree)], exclude=["src/"])]
    assert _rel(tree, no_src) == [".gitignore", "a.md"]
    everything = _rel(tree, [s.path for s in walk([str(tree)], gitignore=False)])
    assert "build/out.txt" in everything and "debug.log" in everything
    assert ".git/HEAD" not in everything


def test_binary_files_are_skipped_with_reason(tree: Path) -> None:
    report = count_paths(Inputs(paths=[str(tree)]), {"o": get_tokenizer("o200k_base")})
    assert [s.reason for s in report.skipped] == ["binary (NUL byte at offset 8)"]
    assert all(not f.path.endswith(".png") for f in report.files)


def test_empty_file_is_zero_tokens(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("")
    report = count_paths(Inputs(paths=[str(tmp_path / "empty.txt")]), {"o": get_tokenizer("o200k_base")})
    assert report.files[0].tokens == {"o": 0} and report.files[0].bytes == 0


def test_invalid_utf8_counts_with_replacement(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("café crème".encode("latin-1"))
    tok = get_tokenizer("o200k_base")
    report = count_paths(Inputs(paths=[str(path)]), {"o": tok})
    assert report.files[0].invalid_utf8_bytes == 2
    assert report.files[0].tokens["o"] == tok.count("caf\ufffd cr\ufffdme")


def test_missing_path_is_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        list(walk([str(tmp_path / "nope.txt")]))


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_symlink_loop(tmp_path: Path) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(InputError, match="symlink loop"):
        list(walk([str(loop)]))
    # Inside a folder, a looping link is reported and the walk goes on.
    (tmp_path / "ok.txt").write_text("fine")
    report = count_paths(Inputs(paths=[str(tmp_path)]), {"o": get_tokenizer("o200k_base")})
    assert [Path(f.path).name for f in report.files] == ["ok.txt"]
    assert report.skipped and "loop" in report.skipped[0].path


def test_non_streamable_tokenizers_use_processes(tmp_path: Path, tiny_sp_model: Path) -> None:
    for i in range(3):
        (tmp_path / f"f{i}.txt").write_text(f"The kettle whistled {i} times.\n" * (i + 1))
    spec = f"sp:{tiny_sp_model}"
    toks = {spec: get_tokenizer(spec)}
    serial = count_paths(Inputs(paths=[str(tmp_path)]), toks)
    parallel = count_paths(Inputs(paths=[str(tmp_path)]), toks, run=RunConfig(jobs=2))
    assert [f.tokens for f in parallel.files] == [f.tokens for f in serial.files]
    assert serial.files[0].tokens[spec] == toks[spec].count(
        (tmp_path / "f0.txt").read_text()
    )


def test_allow_special_never_cuts_inside_a_special_token(tmp_path: Path) -> None:
    text = "1234, 5678<|endoftext|>\n" * 3000
    path = tmp_path / "s.txt"
    path.write_text(text)
    tok = get_tokenizer("tiktoken:o200k_base")
    report = count_paths(Inputs(paths=[str(path)]), {"o": tok}, allow_special=True, block_bytes=1000)
    assert report.files[0].tokens["o"] == tok.count(text, allow_special=True)


def test_text_without_letters_still_streams_in_chunks() -> None:
    """Digits and punctuation give cut points too, so numeric files stay bounded."""
    text = "0123456789, 42.5 " * 4000
    stream = TextStream(io.BytesIO(text.encode()), block_bytes=4096)
    chunks = list(stream.chunks())
    assert len(chunks) > 10 and "".join(chunks) == text
    tok = get_tokenizer("tiktoken:cl100k_base")
    assert sum(tok.count(c) for c in chunks) == tok.count(text)


def test_gitignore_negation_and_ancestors_follow_git(tmp_path: Path) -> None:
    """A deeper !pattern re-includes; walking a subfolder still honours the files above it."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "sub").mkdir()
    (tmp_path / ".gitignore").write_text("*.txt\n")
    (tmp_path / "sub" / ".gitignore").write_text("!keep.txt\n")
    for name in ("sub/keep.txt", "sub/drop.txt", "top.txt", "a.md"):
        (tmp_path / name).write_text("hi\n")
    whole = _rel(tmp_path, [s.path for s in walk([str(tmp_path)])])
    assert whole == [".gitignore", "a.md", "sub/.gitignore", "sub/keep.txt"]
    below = _rel(tmp_path, [s.path for s in walk([str(tmp_path / "sub")])])
    assert below == ["sub/.gitignore", "sub/keep.txt"]
