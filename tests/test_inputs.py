"""One input policy and real --json documents in every command that reads input (issue 14).

The rows are ttok's style: arguments (``{name}`` stands for a file of the ``work``
fixture), the bytes on stdin, the exit code, a fragment of what the user reads.
The policy: invalid UTF-8 is replaced and reported (the input, the bytes replaced);
a binary input is skipped and reported; ``-`` is stdin wherever a file can be.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import tokcost
from tokcost.cli.app import app
from tokcost.counting import LineBlocks, Utf8Decoder, decode_utf8

runner = CliRunner()

TEXT = (
    "the kettle sang while the kettle cooled\n"
    "we counted tokens and then we counted bytes\n"
    "tokens, bytes, merges: the counting never stops\n"
) * 8
BAD = b"caf\xe9 au lait \xff\xfe and then\nsome more text\r\n"  # 3 bytes are not UTF-8
BAD_NOTE = "3 bytes of invalid UTF-8 replaced with U+FFFD"
BINARY = b"GIF89a\x00\x01\x02 not text"
CHAT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "How many?"}]
TRAIN = ["-v", "280", "--pattern", "gpt2"]


@pytest.fixture
def work(tmp_path: Path) -> dict[str, str]:
    """Inputs of every kind, and a small tokcost model trained on the text."""
    paths = {
        "text": tmp_path / "text.txt",
        "bad": tmp_path / "bad.txt",
        "bin": tmp_path / "logo.gif",
        "chat": tmp_path / "chat.json",
        "badchat": tmp_path / "badchat.json",
        "tok": tmp_path / "tok.bpe",
        "out": tmp_path / "out" / "new.bpe",
        "dir": tmp_path,
    }
    paths["text"].write_text(TEXT, encoding="utf-8")
    paths["bad"].write_bytes(BAD)
    paths["bin"].write_bytes(BINARY)
    paths["chat"].write_text(json.dumps(CHAT), encoding="utf-8")
    paths["badchat"].write_bytes(b'[{"role": "user", "content": "caf\xe9 \xff\xfe"}]')
    paths["out"].parent.mkdir()
    config = tokcost.TrainerConfig(vocab_size=300, special_tokens=("<|endoftext|>",))
    tokcost.train_bpe([paths["text"]], config, paths["tok"])
    return {k: str(v) for k, v in paths.items()}


def _argv(args: list[str], work: dict[str, str]) -> list[str]:
    return [a.format(**work) for a in args]


def _invoke(args: list[str], work: dict[str, str], stdin: bytes | None = None) -> Any:
    result = runner.invoke(app, _argv(args, work), input=stdin)
    assert "Traceback" not in result.output, result.output
    return result


def _plain(data: Any) -> Any:
    """A result's to_dict() as it reads back from JSON (tuples become lists)."""
    return json.loads(json.dumps(data))


def _one_line_error(result: Any) -> None:
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert result.stderr.rstrip().endswith(errors[0]), result.stderr  # nothing after it


# --- every --json mode is its library result's to_dict() --------------------------------

TIMING = ("seconds", "seconds_pretokenize", "seconds_merge")
Library = Callable[[dict[str, str]], Any]

JSON_ROWS: list[Any] = [
    pytest.param(["count", "{text}", "{bad}", "--json"], None,
                 lambda w: tokcost.count([w["text"], w["bad"]]), id="count"),
    pytest.param(["count", "{text}", "{bad}", "{bin}", "--tokens", "--json"], None,
                 lambda w: tokcost.tokenize_paths([w["text"], w["bad"], w["bin"]]),
                 id="count-tokens-files"),
    pytest.param(["count", "-", "--tokens", "--json", "-t", "cl100k_base"], BAD,
                 lambda w: tokcost.tokenize_paths(["-"], tokenizers=["cl100k_base"],
                                                  stdin=io.BytesIO(BAD)),
                 id="count-tokens-stdin"),
    pytest.param(["count", "{text}", "--truncate", "5", "--json"], None,
                 lambda w: tokcost.tokenize_paths([w["text"]], max_tokens=5),
                 id="count-truncate"),
    pytest.param(["count", "{dir}", "--truncate", "2", "--json", "-m", "gpt-4o"], None,
                 lambda w: tokcost.tokenize_paths([w["dir"]], models=["gpt-4o"], max_tokens=2),
                 id="count-truncate-folder"),
    pytest.param(["count", "--chat", "{badchat}", "--json"], None,
                 lambda w: tokcost.count_chat(w["badchat"]), id="count-chat"),
    pytest.param(["count", "--chat", "-", "--json", "-m", "gpt-4o"], json.dumps(CHAT).encode(),
                 lambda w: tokcost.count_chat("-", models=["gpt-4o"],
                                              stdin=io.BytesIO(json.dumps(CHAT).encode())),
                 id="count-chat-stdin"),
    pytest.param(["bpe", "encode", "{tok}", "the kettle", "--json"], None,
                 lambda w: tokcost.encode_bpe(w["tok"], "the kettle"), id="encode-text"),
    pytest.param(["bpe", "encode", "-t", "o200k_base", "--file", "{bad}", "--json"], None,
                 lambda w: tokcost.encode_bpe("o200k_base", path=w["bad"]), id="encode-file"),
    pytest.param(["bpe", "encode", "-t", "model:gpt-4o", "-", "--json"], BAD,
                 lambda w: tokcost.encode_bpe("model:gpt-4o", path="-", stdin=io.BytesIO(BAD)),
                 id="encode-stdin-model"),
    pytest.param(["bpe", "decode", "-t", "cl100k_base", "15339", "1917", "--json"], None,
                 lambda w: tokcost.decode_bpe("cl100k_base", [15339, 1917]), id="decode"),
    pytest.param(["bpe", "inspect", "{tok}", "--top", "3", "--json"], None,
                 lambda w: tokcost.inspect_bpe(w["tok"], top=3), id="inspect-bpe"),
    pytest.param(["bpe", "inspect", "-t", "cl100k_base", "--top", "2", "--json"], None,
                 lambda w: tokcost.inspect_bpe("cl100k_base", top=2), id="inspect-tiktoken"),
    pytest.param(["bpe", "train", "{text}", "{bad}", "{bin}", *TRAIN, "-o", "{out}", "--json"],
                 None, lambda w: tokcost.train_bpe(
                     [w["text"], w["bad"], w["bin"]],
                     tokcost.TrainerConfig(vocab_size=280, pattern="gpt2"), w["out"], force=True),
                 id="train"),
]


@pytest.mark.parametrize(("args", "stdin", "library"), JSON_ROWS)
def test_json_is_the_results_to_dict(work: dict[str, str], args: list[str],
                                     stdin: bytes | None, library: Library) -> None:
    result = _invoke(args, work, stdin)
    assert result.exit_code == 0, result.output
    cli = json.loads(result.stdout)  # one JSON document, nothing else on stdout
    lib = _plain(library(work).to_dict())
    for key in TIMING:  # measured, so they differ between two runs
        cli.pop(key, None)
        lib.pop(key, None)
    assert cli == lib


@pytest.mark.parametrize("spec", ["tiny_hf_tokenizer", "tiny_sp_model"])
def test_inspect_any_tokenizer(request: pytest.FixtureRequest, spec: str) -> None:
    path = request.getfixturevalue(spec)
    family = "hf" if spec == "tiny_hf_tokenizer" else "sp"
    result = runner.invoke(app, ["bpe", "inspect", "-t", f"{family}:{path}", "--json"])
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info == _plain(tokcost.inspect_bpe(f"{family}:{path}").to_dict())
    tok = tokcost.get_tokenizer(f"{family}:{path}")
    assert info["vocab_size"] == tok.vocab_size and info["merges"] is None
    if family == "hf":
        assert info["special_tokens"] == {"<|endoftext|>": 0}
        assert info["pattern"] == "gpt2"  # ByteLevel's own regex
    else:
        assert {"<s>", "</s>"} <= set(info["special_tokens"]) and info["pattern"] is None
    table = runner.invoke(app, ["bpe", "inspect", str(path) if family == "sp" else
                                f"hf:{path}"])
    assert table.exit_code == 0 and "vocab_size" in table.stdout, table.output


def test_encode_decode_any_tokenizer(tiny_hf_tokenizer: Path, tiny_sp_model: Path) -> None:
    for spec in (f"hf:{tiny_hf_tokenizer}", f"sp:{tiny_sp_model}", "cl100k_base"):
        tok = tokcost.get_tokenizer(spec)
        enc = runner.invoke(app, ["bpe", "encode", spec, "The kettle whistled."])
        assert enc.exit_code == 0, enc.output
        assert [int(i) for i in enc.stdout.split()] == tok.encode("The kettle whistled.")
        dec = runner.invoke(app, ["bpe", "decode", spec, *enc.stdout.split()])
        assert dec.exit_code == 0 and dec.stdout == tok.decode(tok.encode(
            "The kettle whistled.")) + "\n"


def test_special_text_rule_for_every_tokenizer(tiny_hf_tokenizer: Path,
                                               tiny_sp_model: Path) -> None:
    # Refused where the tokenizer would read it as a special token; SentencePiece never does.
    for spec, refused in ((f"hf:{tiny_hf_tokenizer}", True), ("cl100k_base", True),
                          (f"sp:{tiny_sp_model}", False)):
        text = "end <|endoftext|>" if refused else "end <s>"
        result = runner.invoke(app, ["bpe", "encode", "-t", spec, text])
        assert result.exit_code == (1 if refused else 0), result.output
        if refused:
            assert "--allow-special" in result.stderr
            allowed = runner.invoke(app, ["bpe", "encode", "-t", spec, text, "--allow-special"])
            assert allowed.exit_code == 0, allowed.output


# --- the same document on every run --------------------------------------------------------


def _run_seeded(args: list[str], seed: int) -> str:
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    done = subprocess.run([sys.executable, "-m", "tokcost", *args], capture_output=True,
                          text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize(
    "args",
    [
        # o200k_harmony keeps its specials in a set, and two of them share id 200018.
        pytest.param(["bpe", "inspect", "tiktoken:o200k_harmony", "--top", "2"], id="harmony"),
        pytest.param(["bpe", "inspect", "-t", "hf:{hf}"], id="hf"),
    ],
)
def test_json_is_the_same_under_any_hash_seed(tiny_hf_tokenizer: Path, args: list[str]) -> None:
    argv = [a.format(hf=tiny_hf_tokenizer) for a in args] + ["--json"]
    first, second = _run_seeded(argv, 1), _run_seeded(argv, 2)
    assert json.loads(first) and first == second


# --- '-' is stdin wherever a file can be ---------------------------------------------------


@pytest.mark.parametrize(
    ("args", "stdin", "expected"),
    [
        pytest.param(["count", "-", "--total"], b"hello world", "2", id="count"),
        pytest.param(["count", "-", "{text}", "--csv"], b"hello world", "<stdin>,11,11,2",
                     id="count-with-a-file"),
        pytest.param(["count", "--tokens", "-"], b"hello world", "[24912, 2375]",
                     id="count-tokens"),
        pytest.param(["count", "--truncate", "1", "-"], b"hello world", "hello",
                     id="count-truncate"),
        pytest.param(["count", "--chat", "-", "--json"], json.dumps(CHAT).encode(),
                     '"chat": "<stdin>"', id="count-chat"),
        pytest.param(["price", "-m", "gpt-4o", "-", "--json"], b"hello world",
                     '"input_counted_from_files": true', id="price"),
        pytest.param(["bpe", "encode", "-t", "o200k_base", "-"], b"hello world", "24912 2375",
                     id="encode-dash"),
        pytest.param(["bpe", "encode", "o200k_base", "--file", "-"], b"hello world", "24912 2375",
                     id="encode-file-dash"),
        pytest.param(["bpe", "decode", "-t", "o200k_base", "-"], b"24912 2375", "hello world",
                     id="decode-dash"),
        pytest.param(["bpe", "decode", "o200k_base"], b"24912, 2375", "hello world",
                     id="decode-piped"),
        pytest.param(["bpe", "train", "-", *TRAIN, "-o", "{out}"], TEXT.encode(), "trained",
                     id="train"),
    ],
)
def test_dash_reads_stdin(work: dict[str, str], args: list[str], stdin: bytes,
                          expected: str) -> None:
    result = _invoke(args, work, stdin)
    assert result.exit_code == 0, result.output
    assert expected in result.stdout


def test_training_on_stdin_equals_training_on_the_file(work: dict[str, str],
                                                       tmp_path: Path) -> None:
    data = TEXT.encode() + BAD  # CRLF and invalid bytes read the same way from both
    (tmp_path / "corpus.txt").write_bytes(data)
    config = tokcost.TrainerConfig(vocab_size=290, pattern="gpt2")
    from_file = tokcost.train_bpe([tmp_path / "corpus.txt"], config, tmp_path / "f.bpe")
    from_stdin = tokcost.train_bpe(["-"], config, tmp_path / "s.bpe", stdin=io.BytesIO(data))
    assert from_stdin.model.merges == from_file.model.merges
    assert from_stdin.model.ranks == from_file.model.ranks
    assert from_file.invalid_utf8_bytes == {str(tmp_path / "corpus.txt"): 3}
    assert from_stdin.invalid_utf8_bytes == {"<stdin>": 3}
    assert from_stdin.warnings == (f"<stdin>: {BAD_NOTE}",)


# --- invalid UTF-8 is replaced and reported ------------------------------------------------


@pytest.mark.parametrize(
    ("args", "stdin", "note"),
    [
        pytest.param(["count", "{bad}"], None, "{bad}: " + BAD_NOTE, id="count"),
        pytest.param(["count", "-"], BAD, "<stdin>: " + BAD_NOTE, id="count-stdin"),
        pytest.param(["count", "--tokens", "{bad}"], None, "{bad}: " + BAD_NOTE, id="tokens"),
        pytest.param(["count", "--truncate", "2", "{bad}"], None, "{bad}: " + BAD_NOTE,
                     id="truncate"),
        pytest.param(["count", "--chat", "{badchat}"], None, "{badchat}: " + BAD_NOTE,
                     id="chat"),
        pytest.param(["bpe", "train", "{bad}", "{text}", *TRAIN, "-o", "{out}"], None,
                     "{bad}: " + BAD_NOTE, id="train"),
        pytest.param(["bpe", "train", "-", *TRAIN, "-o", "{out}"], BAD + TEXT.encode(),
                     "<stdin>: " + BAD_NOTE, id="train-stdin"),
        pytest.param(["bpe", "encode", "{tok}", "--file", "{bad}"], None, "{bad}: " + BAD_NOTE,
                     id="encode-file"),
        pytest.param(["bpe", "encode", "-t", "cl100k_base", "-"], BAD, "<stdin>: " + BAD_NOTE,
                     id="encode-stdin"),
    ],
)
def test_invalid_utf8_is_replaced_and_reported(work: dict[str, str], args: list[str],
                                               stdin: bytes | None, note: str) -> None:
    result = _invoke(args, work, stdin)
    assert result.exit_code == 0, result.output
    assert f"warning: {note.format(**work)}" in result.stderr
    assert "warning" not in result.stdout


def test_json_carries_the_replaced_bytes(work: dict[str, str]) -> None:
    counted = json.loads(_invoke(["count", "{bad}", "--json"], work).stdout)
    assert counted["files"][0]["invalid_utf8_bytes"] == 3
    tokens = json.loads(_invoke(["count", "{bad}", "--tokens", "--json"], work).stdout)
    assert tokens["files"][0]["invalid_utf8_bytes"] == 3
    assert "\ufffd" in tokens["files"][0]["text"] and "\r\n" in tokens["files"][0]["text"]
    encoded = json.loads(_invoke(["bpe", "encode", "{tok}", "--file", "{bad}", "--json"],
                                 work).stdout)
    assert encoded["invalid_utf8_bytes"] == 3


# --- binary inputs are skipped and reported ------------------------------------------------

BINARY_REASON = "binary (NUL byte at offset 6)"


@pytest.mark.parametrize(
    ("args", "stdin", "code", "message"),
    [
        pytest.param(["count", "{dir}"], None, 0, "warning: skipped {bin}: " + BINARY_REASON,
                     id="count-folder"),
        pytest.param(["count", "{bin}"], None, 1, "every input was skipped", id="count-only"),
        pytest.param(["count", "-"], BINARY, 1, "skipped <stdin>: " + BINARY_REASON,
                     id="count-stdin"),
        pytest.param(["count", "--tokens", "{bin}", "{text}"], None, 0,
                     "warning: skipped {bin}: " + BINARY_REASON, id="tokens"),
        pytest.param(["count", "--truncate", "3", "{bin}"], None, 1, "every input was skipped",
                     id="truncate-only"),
        pytest.param(["count", "--chat", "{bin}"], None, 1,
                     "skipped {bin}: " + BINARY_REASON + "; give a text file", id="chat"),
        pytest.param(["price", "-m", "gpt-4o", "{bin}"], None, 2, BINARY_REASON, id="price"),
        pytest.param(["bpe", "train", "{bin}", "{text}", *TRAIN, "-o", "{out}"], None, 0,
                     "warning: skipped {bin}: " + BINARY_REASON, id="train"),
        pytest.param(["bpe", "train", "{bin}", *TRAIN, "-o", "{out}"], None, 1,
                     "nothing to train on: every input was skipped", id="train-only"),
        pytest.param(["bpe", "train", "-", *TRAIN, "-o", "{out}"], BINARY, 1,
                     "skipped <stdin>: " + BINARY_REASON, id="train-stdin"),
        pytest.param(["bpe", "encode", "{tok}", "--file", "{bin}"], None, 1,
                     "skipped {bin}: " + BINARY_REASON + "; give a text file", id="encode"),
        pytest.param(["bpe", "encode", "-t", "o200k_base", "-"], BINARY, 1,
                     "skipped <stdin>: " + BINARY_REASON, id="encode-stdin"),
    ],
)
def test_binary_is_skipped_and_reported(work: dict[str, str], args: list[str],
                                        stdin: bytes | None, code: int, message: str) -> None:
    result = _invoke(args, work, stdin)
    assert result.exit_code == code, result.output
    assert message.format(**work) in result.stderr
    if code:
        _one_line_error(result)
    if args[:2] == ["bpe", "train"]:
        assert Path(work["out"]).exists() == (code == 0)


# --- bpe encode with a tiktoken encoding is tiktoken --------------------------------------

ORACLE_TEXTS = ["hello world", "Der Zug fährt um halb acht.  \n\n東京の朝", "x <|endoftext|> y",
                "def f(a, b):\n\treturn a+b  # 123456789"]


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_bpe_encode_equals_tiktoken(oracle: Callable[[str], Any], name: str) -> None:
    enc = oracle(name)
    for text in ORACLE_TEXTS:
        result = runner.invoke(app, ["bpe", "encode", "-t", name, text, "--allow-special",
                                     "--json"])
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["ids"] == enc.encode(text, allowed_special="all")
        plain = runner.invoke(app, ["bpe", "encode", name, text.replace("<|endoftext|>", "")])
        assert [int(i) for i in plain.stdout.split()] == enc.encode(
            text.replace("<|endoftext|>", ""))
        back = runner.invoke(app, ["bpe", "decode", "-t", name,
                                   *map(str, enc.encode(text, allowed_special="all"))])
        assert back.stdout == text + "\n"
    refused = runner.invoke(app, ["bpe", "encode", "-t", name, "x <|endoftext|> y"])
    assert refused.exit_code == 1 and "--allow-special" in refused.stderr
    _one_line_error(refused)


# --- numbers that make no sense are refused, in one line -----------------------------------


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        pytest.param(["bpe", "inspect", "{tok}", "--top", "-1"], 2, "--top -1 must be 0 or more",
                     id="top-negative"),
        pytest.param(["bpe", "inspect", "-t", "cl100k_base", "--top", "-5"], 2,
                     "--top -5 must be 0 or more", id="top-negative-tiktoken"),
        pytest.param(["bpe", "train", "{text}", "-v", "0", "-o", "{out}"], 2,
                     "--vocab-size 0 is too small", id="vocab-zero"),
        pytest.param(["bpe", "train", "{text}", "-v", "-3", "-o", "{out}"], 2,
                     "--vocab-size must not be negative", id="vocab-negative"),
        pytest.param(["bpe", "train", "{text}", "-v", "256", "-s", "<|eot|>", "-o", "{out}"], 2,
                     "need at least 257", id="vocab-below-bytes-and-specials"),
        pytest.param(["bpe", "train", "{text}", "-v", "300", "-j", "0", "-o", "{out}"], 2,
                     "--jobs must be 1 or more", id="jobs-zero"),
        pytest.param(["bpe", "train", "{text}", "-v", "300", "-j", "-2", "-o", "{out}"], 2,
                     "--jobs must be 1 or more", id="jobs-negative"),
        pytest.param(["bpe", "train", "{text}", "-v", "300", "--min-frequency", "-1", "-o",
                      "{out}"], 2, "--min-frequency must not be negative", id="min-frequency"),
        pytest.param(["bpe", "train", "{text}", "-v", "300", "--max-token-length", "0", "-o",
                      "{out}"], 2, "--max-token-length must be at least 2", id="max-length"),
        pytest.param(["bpe", "decode", "{tok}", "--", "-1"], 2, "token id -1 is not in this "
                     "vocabulary", id="decode-negative-id"),
        pytest.param(["bpe", "decode", "-t", "cl100k_base", "100277"], 2,
                     "token id 100277 is not in this vocabulary", id="decode-past-the-end"),
        pytest.param(["count", "{text}", "--truncate", "-1"], 2, "-1", id="truncate-negative"),
        pytest.param(["count", "{text}", "--jobs", "0"], 2, "0", id="count-jobs-zero"),
    ],
)
def test_nonsense_numbers_are_refused(work: dict[str, str], args: list[str], code: int,
                                      message: str) -> None:
    result = _invoke(args, work)
    assert result.exit_code == code, result.output
    assert message in result.stderr
    assert result.stdout == ""
    assert not Path(work["out"]).exists()


def test_top_zero_is_only_the_summary(work: dict[str, str]) -> None:
    info = json.loads(_invoke(["bpe", "inspect", "{tok}", "--top", "0", "--json"], work).stdout)
    assert info["first_merges"] == [] and info["longest_tokens"] == []
    assert info["vocab_size"] == 300 and info["special_tokens"] == {"<|endoftext|>": 0}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["bpe", "encode"], "give a tokenizer", id="encode-none"),
        pytest.param(["bpe", "encode", "{tok}", "-t", "o200k_base", "hi"], "give the tokenizer "
                     "once", id="encode-twice"),
        pytest.param(["bpe", "inspect", "o300k"], "o300k",
                     id="inspect-unknown"),
        pytest.param(["bpe", "encode", "-t", "hf:{hf}", "hi", "--reference"],
                     "--reference runs tokcost's own encoder", id="reference-needs-a-bpe"),
        pytest.param(["bpe", "inspect", "-t", "cl100k_base", "--pattern", "gpt2"],
                     "--pattern is for a .tiktoken rank file", id="pattern-needs-rank-file"),
    ],
)
def test_tokenizer_argument_errors(work: dict[str, str], tiny_hf_tokenizer: Path,
                                   args: list[str], message: str) -> None:
    result = _invoke(args, {**work, "hf": str(tiny_hf_tokenizer)}, b"")
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    _one_line_error(result)


# --- the decoder behind the policy ---------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300), cuts=st.lists(st.integers(0, 300), max_size=6))
def test_decoding_in_pieces_is_decoding_whole(data: bytes, cuts: list[int]) -> None:
    # Python's own "replace" is the reference; any split of the bytes changes nothing.
    text, invalid = decode_utf8(data)
    assert text == data.decode("utf-8", "replace")
    assert (invalid == 0) == (text == data.decode("utf-8", "ignore"))
    decoder, pieces, start = Utf8Decoder(), [], 0
    for cut in sorted(c for c in cuts if c <= len(data)):
        pieces.append(decoder.decode(data[start:cut]))
        start = cut
    pieces.append(decoder.decode(data[start:], final=True))
    assert "".join(pieces) == text and decoder.invalid_bytes == invalid
    blocks = LineBlocks(io.BytesIO(data), block_bytes=7)
    joined = "".join(blocks)
    assert joined == text and blocks.invalid_bytes == invalid and blocks.bytes == len(data)
    assert all(b.endswith("\n") for b in list(LineBlocks(io.BytesIO(data), block_bytes=5))[:-1])
