"""Bounded work on any input (issue 26, parts 3 and 4): each file a stranger can write ends in
one ``error:`` line and an exit code, within the harness's 10 s and 1 GiB."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from .conftest import Sandbox

TINY_LLAMA = Path(__file__).resolve().parents[1] / "fixtures" / "hf_tiny" / "llama"


def alias_bomb(levels: int = 9) -> str:
    """A YAML document of a few hundred bytes that expands to 9**levels nodes."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_in_tokcost_yaml(sandbox: Sandbox) -> None:
    (sandbox.repo / "tokcost.yaml").write_text(
        "version: 1\ntokenizer: cl100k_base\n" + alias_bomb() + "budgets: *a8\n")
    line = sandbox.one_error("check", code=2)
    assert "tokcost.yaml" in line and "alias" in line


def test_an_alias_bomb_is_a_catalog_problem(sandbox: Sandbox) -> None:
    (sandbox.repo / "bomb.yaml").write_text(alias_bomb() + "models: *a8\n")
    ran = sandbox.run("models", "validate", "bomb.yaml")
    assert ran.code == 1 and "alias bomb" in ran.stderr, ran.stderr


@pytest.mark.parametrize("command", [["models", "list", "--catalog", "bomb.yaml"],
                                     ["price", "-m", "m", "--catalog", "bomb.yaml", "1000"]])
def test_an_alias_bomb_in_a_catalog(sandbox: Sandbox, command: list[str]) -> None:
    (sandbox.repo / "bomb.yaml").write_text(alias_bomb() + "models: *a8\n")
    line = sandbox.one_error(*command, code=2)
    assert "bomb.yaml" in line and "alias" in line


def test_deep_json_chat(sandbox: Sandbox) -> None:
    (sandbox.repo / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    line = sandbox.one_error("count", "--chat", "deep.json", "-t", "cl100k_base", code=1)
    assert "deep.json" in line and "nested" in line


def test_deep_and_huge_request_bodies(sandbox: Sandbox) -> None:
    (sandbox.repo / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    line = sandbox.one_error("count", "--request", "deep.json", code=1)
    assert "deep.json" in line and "nested" in line
    line = sandbox.one_error("price", "-m", "gpt-4o", "--request", "/dev/zero", code=1)
    assert "over 64 MiB" in line


def test_deep_toml_pyproject(sandbox: Sandbox) -> None:
    (sandbox.repo / "pyproject.toml").write_text(
        "[tool.tokcost]\nversion = 1\nx = " + "[" * 5000 + "]" * 5000 + "\n")
    line = sandbox.one_error("check", code=2)
    assert "pyproject.toml" in line and "nested" in line


@pytest.mark.parametrize("pattern", ["*a*a*a*a*a*b", "x/*a*a*a*a*a*a*b/y"])
def test_a_glob_that_would_backtrack(sandbox: Sandbox, pattern: str) -> None:
    (sandbox.repo / ("a" * 200 + ".txt")).write_text("hello\n")
    (sandbox.repo / "tokcost.yaml").write_text(
        "version: 1\ntokenizer: cl100k_base\nbudgets:\n"
        f"  - name: b\n    paths: ['{pattern}']\n    max_tokens_per_file: 10\n")
    line = sandbox.one_error("check", code=2)
    assert "'*'" in line


def test_a_gitignore_line_that_would_backtrack(sandbox: Sandbox) -> None:
    (sandbox.repo / ("a" * 200 + ".txt")).write_text("hello\n")
    (sandbox.repo / ".gitignore").write_text("*a*a*a*a*a*a*b\n")
    line = sandbox.one_error("count", ".", "-t", "cl100k_base", code=2)
    assert ".gitignore" in line and "'*'" in line


def test_symlinks_in_a_walked_folder_are_not_followed(sandbox: Sandbox) -> None:
    repo = sandbox.repo
    (repo / "real.txt").write_text("hello world\n")
    (repo / "zero.txt").symlink_to("/dev/zero")
    (repo / "pw.txt").symlink_to(sandbox.outside / "victim.txt")
    os.mkfifo(repo / "fifo.txt")
    ran = sandbox.run("count", ".", "-t", "cl100k_base", "--json")
    assert ran.code == 0, ran.stderr
    counted = [f["path"] for f in json.loads(ran.stdout)["files"]]
    assert counted == ["real.txt"]


def test_follow_reads_links_to_files_never_to_devices(sandbox: Sandbox) -> None:
    repo = sandbox.repo
    (repo / "real.txt").write_text("hello world\n")
    (repo / "zero.txt").symlink_to("/dev/zero")
    (repo / "link.txt").symlink_to(repo / "real.txt")
    ran = sandbox.run("count", ".", "-t", "cl100k_base", "--json", "--follow")
    assert ran.code == 0, ran.stderr
    assert [f["path"] for f in json.loads(ran.stdout)["files"]] == ["link.txt"]
    assert "real.txt: the same file as link.txt" in ran.stderr
    assert "zero.txt: a character device" in ran.stderr


def test_a_nul_after_the_first_block_is_binary(sandbox: Sandbox) -> None:
    with open(sandbox.repo / "late.txt", "wb") as f:
        f.write(b"text " * 20_000)
        f.truncate(600 * 1024 * 1024)  # sparse: 600 MiB of NUL bytes after the text
    (sandbox.repo / "ok.txt").write_text("fine\n")
    ran = sandbox.run("count", ".", "-t", "cl100k_base", "--json", "--verbose")
    assert ran.code == 0, ran.stderr
    assert [f["path"] for f in json.loads(ran.stdout)["files"]] == ["ok.txt"]
    assert "late.txt: binary (NUL byte at offset 100000)" in ran.stderr


@pytest.mark.parametrize("pattern", ["(a|aa)+$", "(a+)+b", "(\\w+\\s?)*$"])
def test_a_backtracking_pattern_is_refused(sandbox: Sandbox, pattern: str) -> None:
    (sandbox.repo / "corpus.txt").write_text("a" * 5000 + "\n")
    line = sandbox.one_error("bpe", "train", "corpus.txt", "--vocab-size", "260",
                             "--pattern", pattern, "-o", "tok.bpe", code=2)
    assert "--pattern" in line


@pytest.mark.parametrize(("template", "word"), [
    ("{{ 'a' * 4000000 }}", "limits"),
    ("{{ 'a' * 999999 * 999999 }}", "limits"),
    ("{% for i in range(9000) %}{{ 'x' * 900 }}{% endfor %}", "characters"),
    ("{% for i in range(9999) %}{% for j in range(9999) %}{% for k in range(9999) %}"
     "{% endfor %}{% endfor %}{% endfor %}",
     "seconds"),
    ("{% include 'x.jinja' %}", "chat template"),
    ("{% extends 'base.jinja' %}", "chat template"),
    ("{{ 1 / 0 }}", "division by zero"),
    ("{% macro m() %}{{ m() }}{% endmacro %}{{ m() }}", "chat template"),
    ("{% for i in range(10**6) %}x{% endfor %}", "chat template"),
])
def test_a_hostile_chat_template(sandbox: Sandbox, template: str, word: str) -> None:
    pytest.importorskip("jinja2")
    folder = sandbox.repo / "ckpt"
    shutil.copytree(TINY_LLAMA, folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["chat_template"] = template
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    line = sandbox.one_error("generate", "hello", "--model-dir", "ckpt", "--chat-template",
                             "--max-new-tokens", "1", code=1)
    assert word in line


def _npy_header(shape: tuple[int, ...]) -> bytes:
    header = f"{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}"
    header += " " * (127 - len(header) - 10) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode()


def test_an_npz_that_inflates_past_its_shapes(sandbox: Sandbox) -> None:
    import zipfile

    # 1.6 GB of zeros deflate to about 7 MB (at level 1, three times quicker to write than
    # the 1.5 MB of level 6): written in chunks, never held whole.
    with zipfile.ZipFile(sandbox.repo / "w.npz", "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z, \
            z.open("tok_emb.npy", "w", force_zip64=True) as f:
        f.write(_npy_header((20_000, 20_000)))
        chunk = bytes(1 << 24)
        for _ in range(20_000 * 20_000 * 4 // len(chunk)):
            f.write(chunk)
    assert (sandbox.repo / "w.npz").stat().st_size < 8_000_000
    line = sandbox.one_error("generate", "hello", "-m", "tiny-ref", "--weights", "w.npz",
                             code=1)
    assert "w.npz" in line


def test_an_npz_header_declaring_a_huge_array(sandbox: Sandbox) -> None:
    import zipfile

    with zipfile.ZipFile(sandbox.repo / "w.npz", "w") as z:
        z.writestr("tok_emb.npy", _npy_header((1_000_000, 1_000_000)))
    line = sandbox.one_error("generate", "hello", "-m", "tiny-ref", "--weights", "w.npz",
                             code=1)
    assert "w.npz" in line


def test_an_npz_header_that_numpy_cannot_tokenize(sandbox: Sandbox) -> None:
    import zipfile

    # An unclosed bracket: numpy's fallback header filter raises tokenize.TokenError (found by
    # tests/hostile/test_fuzz.py), which is neither a ValueError nor an OSError.
    header = b"{'descr': ('<f4',".ljust(117) + b"\n"
    with zipfile.ZipFile(sandbox.repo / "w.npz", "w") as z:
        z.writestr("tok_emb.npy", b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header)
    line = sandbox.one_error("generate", "hello", "-m", "tiny-ref", "--weights", "w.npz",
                             code=1)
    assert "w.npz" in line


def test_a_tokenizer_json_whose_split_regex_backtracks(sandbox: Sandbox) -> None:
    data = json.loads((TINY_LLAMA / "tokenizer.json").read_text())
    data["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "(a|aa)+$"}, "behavior": "Isolated",
         "invert": False}, data["pre_tokenizer"]]}
    (sandbox.repo / "tokenizer.json").write_text(json.dumps(data))
    (sandbox.repo / "a.txt").write_text("a" * 5000 + "!\n")
    line = sandbox.one_error("count", "a.txt", "-t", "hf:tokenizer.json", code=1)
    assert "(a|aa)+" in line and "exponential" in line


def test_a_deep_config_json(sandbox: Sandbox) -> None:
    (sandbox.repo / "config.json").write_text('{"a": ' * 100_000 + "1" + "}" * 100_000)
    line = sandbox.one_error("kvmem", "estimate", "--config", "config.json", "--gpu", "H100",
                             code=1)
    assert "config.json" in line and "nested" in line


def test_a_sentencepiece_model_with_a_piece_that_is_not_utf8(sandbox: Sandbox) -> None:
    spm = pytest.importorskip("sentencepiece")
    (sandbox.repo / "c.txt").write_text("the ferry left at noon and the gulls followed it\n" * 200)
    spm.SentencePieceTrainer.train(input=str(sandbox.repo / "c.txt"), vocab_size=40,
                                   model_prefix=str(sandbox.repo / "m"), model_type="bpe",
                                   minloglevel=2)
    raw = (sandbox.repo / "m.model").read_bytes()
    piece = spm.SentencePieceProcessor(model_file=str(sandbox.repo / "m.model")).id_to_piece(10)
    field = b"\n" + bytes([len(piece.encode())]) + piece.encode()
    assert field in raw
    (sandbox.repo / "bad.model").write_bytes(raw.replace(field, field[:2] + b"\xff" * (
        len(field) - 2), 1))
    line = sandbox.one_error("count", "c.txt", "-t", "sp:bad.model", code=1)
    assert "bad.model is not a valid SentencePiece .model file" in line


def test_bpe_train_on_text_that_turns_to_zeros(sandbox: Sandbox) -> None:
    with open(sandbox.repo / "late.txt", "wb") as f:
        f.write(b"text more words here\n" * 5000)
        f.truncate(600 * 1024 * 1024)  # sparse: 600 MiB of NUL bytes, no line end among them
    (sandbox.repo / "ok.txt").write_text("the ferry left at noon and the gulls followed it\n" * 300)
    ran = sandbox.run("bpe", "train", "late.txt", "ok.txt", "--vocab-size", "270", "-o", "t.bpe")
    assert ran.code == 0, ran.stderr
    assert "warning: skipped late.txt: binary (NUL byte at offset 105000)" in ran.stderr
