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
from tokcost.bpe import TrainerConfig
from tokcost.cli.app import app
from tokcost.counting import Inputs, LineBlocks, Utf8Decoder, decode_utf8
from tokcost.errors import UsageError
from tokcost.inflation import Corpus
from tokcost.tokenizers import TokenizerSelection

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
        "config": tmp_path / "tokcost.yaml",  # check's budget over the files here
    }
    paths["text"].write_text(TEXT, encoding="utf-8")
    paths["bad"].write_bytes(BAD)
    paths["bin"].write_bytes(BINARY)
    paths["chat"].write_text(json.dumps(CHAT), encoding="utf-8")
    paths["badchat"].write_bytes(b'[{"role": "user", "content": "caf\xe9 \xff\xfe"}]')
    paths["config"].write_text('tokenizer: cl100k_base\nbudgets:\n  - name: all\n'
                               '    paths: ["*.txt", "*.gif"]\n    max_total_tokens: 100000\n',
                               encoding="utf-8")
    paths["out"].parent.mkdir()
    config = TrainerConfig(vocab_size=300, special_tokens=("<|endoftext|>",))
    tokcost.train_bpe(tokcost.BPETrainRequest(files=(paths["text"],), trainer=config,
                                              output=paths["tok"]))
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
                 lambda w: tokcost.tokenize([w["text"], w["bad"], w["bin"]]),
                 id="count-tokens-files"),
    pytest.param(["count", "-", "--tokens", "--json", "-t", "cl100k_base"], BAD,
                 lambda w: tokcost.tokenize(tokcost.TokenizeRequest(
                     inputs=Inputs(paths="-", stdin=io.BytesIO(BAD)),
                     tokenizers=TokenizerSelection(tokenizers="cl100k_base"))),
                 id="count-tokens-stdin"),
    pytest.param(["count", "{text}", "--truncate", "5", "--json"], None,
                 lambda w: tokcost.tokenize(tokcost.TokenizeRequest(
                     inputs=Inputs(paths=w["text"]), max_tokens=5)),
                 id="count-truncate"),
    pytest.param(["count", "{dir}", "--truncate", "2", "--json", "-m", "gpt-4o"], None,
                 lambda w: tokcost.tokenize(tokcost.TokenizeRequest(
                     inputs=Inputs(paths=w["dir"]), max_tokens=2,
                     tokenizers=TokenizerSelection(models="gpt-4o"))),
                 id="count-truncate-folder"),
    pytest.param(["count", "--chat", "{badchat}", "--json"], None,
                 lambda w: tokcost.count_chat(w["badchat"]), id="count-chat"),
    pytest.param(["count", "--chat", "-", "--json", "-m", "gpt-4o"], json.dumps(CHAT).encode(),
                 lambda w: tokcost.count_chat(tokcost.ChatRequest(
                     chat="-", tokenizers=TokenizerSelection(models="gpt-4o"),
                     stdin=io.BytesIO(json.dumps(CHAT).encode()))),
                 id="count-chat-stdin"),
    pytest.param(["bpe", "encode", "{tok}", "the kettle", "--json"], None,
                 lambda w: tokcost.encode_bpe(tokcost.BPEEncodeRequest(
                     tokenizer=w["tok"], text="the kettle")), id="encode-text"),
    pytest.param(["bpe", "encode", "-t", "o200k_base", "--file", "{bad}", "--json"], None,
                 lambda w: tokcost.encode_bpe(tokcost.BPEEncodeRequest(
                     tokenizer="o200k_base", path=w["bad"])), id="encode-file"),
    pytest.param(["bpe", "encode", "-t", "model:gpt-4o", "-", "--json"], BAD,
                 lambda w: tokcost.encode_bpe(tokcost.BPEEncodeRequest(
                     tokenizer="model:gpt-4o", path="-", stdin=io.BytesIO(BAD))),
                 id="encode-stdin-model"),
    pytest.param(["bpe", "decode", "-t", "cl100k_base", "15339", "1917", "--json"], None,
                 lambda w: tokcost.decode_bpe(tokcost.BPEDecodeRequest(
                     tokenizer="cl100k_base", ids=[15339, 1917])), id="decode"),
    pytest.param(["bpe", "inspect", "{tok}", "--top", "3", "--json"], None,
                 lambda w: tokcost.inspect_bpe(tokcost.BPEInspectRequest(tokenizer=w["tok"], top=3)),
                 id="inspect-bpe"),
    pytest.param(["bpe", "inspect", "-t", "cl100k_base", "--top", "2", "--json"], None,
                 lambda w: tokcost.inspect_bpe(tokcost.BPEInspectRequest(tokenizer="cl100k_base", top=2)),
                 id="inspect-tiktoken"),
    pytest.param(["price", "-m", "gpt-4o", "{text}", "{bad}", "{bin}", "--json"], None,
                 lambda w: tokcost.price(tokcost.PriceRequest(
                     model="gpt-4o", paths=[w["text"], w["bad"], w["bin"]])),
                 id="price-files"),
    pytest.param(["compare", "{text}", "{bad}", "{bin}", "--baseline", "text", "--json"], None,
                 lambda w: tokcost.compare(tokcost.CompareRequest(corpus=Corpus(
                     sources=[w["text"], w["bad"], w["bin"]], baseline="text"))),
                 id="compare-files"),
    pytest.param(["compare", "{text}", "-", "--baseline", "text", "--json"], BAD,
                 lambda w: tokcost.compare(tokcost.CompareRequest(corpus=Corpus(
                     sources=[w["text"], "-"], baseline="text", stdin=io.BytesIO(BAD)))),
                 id="compare-stdin"),
    pytest.param(["bpe", "train", "{text}", "{bad}", "{bin}", *TRAIN, "-o", "{out}", "--json"],
                 None, lambda w: tokcost.train_bpe(tokcost.BPETrainRequest(
                     files=(w["text"], w["bad"], w["bin"]),
                     trainer=TrainerConfig(vocab_size=280, pattern="gpt2"),
                     output=w["out"], force=True)),
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
    assert info == _plain(tokcost.inspect_bpe(
        tokcost.BPEInspectRequest(tokenizer=f"{family}:{path}")).to_dict())
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


def test_export_is_the_same_under_any_hash_seed(tmp_path: Path) -> None:
    # o200k_harmony's specials come from a set, and two of them share id 200018.
    written = []
    for seed in (1, 2):
        out = tmp_path / f"seed{seed}" / "o200k_harmony.tiktoken"  # one name: the sidecar's
        out.parent.mkdir()
        _run_seeded(["bpe", "export", "tiktoken:o200k_harmony", "--format", "tiktoken",
                     "-o", str(out)], seed)
        written.append((out.read_bytes(), Path(f"{out}.json").read_bytes()))
    assert written[0] == written[1]
    specials = list(json.loads(written[0][1])["special_tokens"].items())
    assert specials == sorted(specials, key=lambda item: (item[1], item[0]))
    assert ("<|endofprompt|>", 200018) in specials and ("<|reserved_200018|>", 200018) in specials


class _Encoding:
    """A tiktoken encoding whose special tokens come in a chosen order, and which may
    hide its rank dict (so the public API is read instead)."""

    def __init__(self, encoding: Any, *, reverse: bool, ranks: bool = True) -> None:
        self._encoding, self._reverse = encoding, reverse
        self._mergeable_ranks = encoding._mergeable_ranks if ranks else None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._encoding, name)

    @property
    def special_tokens_set(self) -> list[str]:
        return sorted(self._encoding.special_tokens_set, reverse=self._reverse)


def test_model_from_encoding_orders_specials_by_id_then_text() -> None:
    from tokcost.bpe.io import model_from_encoding

    harmony = tokcost.get_tokenizer("tiktoken:o200k_harmony").encoding  # type: ignore[attr-defined]
    one, other = (model_from_encoding(_Encoding(harmony, reverse=r), "h") for r in (False, True))
    assert list(one.special_tokens.items()) == list(other.special_tokens.items())
    assert list(one.special_tokens.items()) == sorted(one.special_tokens.items(),
                                                      key=lambda item: (item[1], item[0]))
    cl100k = tokcost.get_tokenizer("tiktoken:cl100k_base").encoding  # type: ignore[attr-defined]
    fast = model_from_encoding(_Encoding(cl100k, reverse=False), "c")
    public = model_from_encoding(_Encoding(cl100k, reverse=False, ranks=False), "c")
    assert fast.ranks == public.ranks and len(fast.ranks) == 100256
    assert fast.ranks[b"hello"] == cl100k.encode_single_token(b"hello")


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
        pytest.param(["price", "-m", "gpt-4o", "-", "{text}", "--json"], b"hello world",
                     '"warnings": []', id="price-with-a-file"),
        pytest.param(["compare", "{text}", "-", "--baseline", "text", "--csv"], b"hello world",
                     "prose,stdin,stdin,Latin,o200k_base,2,True,11,", id="compare"),
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
    config = TrainerConfig(vocab_size=290, pattern="gpt2")
    from_file = tokcost.train_bpe(tokcost.BPETrainRequest(
        files=(tmp_path / "corpus.txt",), trainer=config, output=tmp_path / "f.bpe"))
    from_stdin = tokcost.train_bpe(tokcost.BPETrainRequest(
        files=("-",), trainer=config, output=tmp_path / "s.bpe", stdin=io.BytesIO(data)))
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
        pytest.param(["price", "-m", "gpt-4o", "{bad}"], None, "{bad}: " + BAD_NOTE,
                     id="price"),
        pytest.param(["price", "-m", "gpt-4o", "{text}", "-"], BAD,
                     "<stdin>: " + BAD_NOTE, id="price-stdin"),
        pytest.param(["compare", "{text}", "{bad}", "--baseline", "text"], None, "{bad}: " + BAD_NOTE,
                     id="compare"),
        pytest.param(["compare", "{text}", "-", "--baseline", "text", "--markdown"], BAD,
                     "<stdin>: " + BAD_NOTE, id="compare-stdin"),
        pytest.param(["check", "-c", "{config}"], None, "bad.txt: " + BAD_NOTE, id="check"),
    ],
)
def test_invalid_utf8_is_replaced_and_reported(work: dict[str, str], args: list[str],
                                               stdin: bytes | None, note: str) -> None:
    result = _invoke(args, work, stdin)
    assert result.exit_code == 0, result.output
    assert f"warning: {note.format(**work)}" in result.stderr
    assert "warning" not in result.stdout


def test_check_reports_each_file_once_in_every_format(work: dict[str, str]) -> None:
    # Two budgets with two tokenizers read the same files: one notice per file still.
    Path(work["config"]).write_text(
        "budgets:\n"
        "  - {name: a, paths: ['*.txt', '*.gif'], tokenizer: cl100k_base, max_total_tokens: 1e5}\n"
        "  - {name: b, paths: ['*.txt', '*.gif'], tokenizer: o200k_base, max_total_tokens: 1e5}\n",
        encoding="utf-8")
    notes = [f"bad.txt: {BAD_NOTE}", "skipped logo.gif: " + BINARY_REASON]
    github = _invoke(["check", "-c", "{config}", "--format", "github"], work)
    assert github.exit_code == 0, github.output
    annotations = [line for line in github.stdout.splitlines() if line.startswith("::warning")]
    assert [a.split("::")[-1] for a in annotations] == notes
    assert [a.split(",")[0].endswith(name) for a, name in
            zip(annotations, ("bad.txt", "logo.gif"), strict=True)] == [True, True]
    doc = json.loads(_invoke(["check", "-c", "{config}", "--json"], work).stdout)
    assert [(w["message"], w["file"]) for w in doc["warnings"]] == [
        (notes[0], "bad.txt"), (notes[1], "logo.gif")]


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
        pytest.param(["price", "-m", "gpt-4o", "{bin}"], None, 1,
                     "nothing to count: every input was skipped (skipped {bin}: " + BINARY_REASON,
                     id="price-only"),
        pytest.param(["price", "-m", "gpt-4o", "{bin}", "{text}"], None, 0,
                     "warning: skipped {bin}: " + BINARY_REASON, id="price"),
        pytest.param(["price", "-m", "gpt-4o", "{dir}", "--json"], None, 0,
                     "warning: skipped {bin}: " + BINARY_REASON, id="price-folder"),
        pytest.param(["price", "-m", "gpt-4o", "-"], BINARY, 1,
                     "skipped <stdin>: " + BINARY_REASON, id="price-stdin"),
        pytest.param(["compare", "{text}", "{bin}", "--baseline", "text"], None, 0,
                     "warning: skipped {bin}: " + BINARY_REASON, id="compare"),
        pytest.param(["compare", "{text}", "-", "--baseline", "text", "--json"], BINARY, 0,
                     "warning: skipped <stdin>: " + BINARY_REASON, id="compare-stdin"),
        pytest.param(["compare", "{text}", "{bin}", "--baseline", "text", "--strict"], None, 1,
                     "warning: skipped {bin}: " + BINARY_REASON, id="compare-strict"),
        pytest.param(["compare", "{bin}", "{text}", "--baseline", "logo"], None, 1,
                     "the baseline 'logo' was skipped in the files given (skipped {bin}: "
                     + BINARY_REASON + "); give it as a text file or pass --baseline CODE",
                     id="compare-baseline"),
        pytest.param(["check", "-c", "{config}"], None, 0,
                     "warning: skipped logo.gif: " + BINARY_REASON, id="check"),
        pytest.param(["check", "-c", "{config}", "--strict"], None, 2,
                     "error: skipped logo.gif: " + BINARY_REASON, id="check-strict"),
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
    if code and "--strict" not in args:  # --strict: a line for each warning
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


@pytest.mark.parametrize("path", [["-"], "-"], ids=["a-list", "a-bare-string"])
def test_the_library_shows_one_tokenizers_tokens(path: Any) -> None:
    call = tokcost.tokenize
    with pytest.raises(UsageError, match=r"one tokenizer at a time, got 2 "
                       r"\(cl100k_base, gpt-4o\)") as caught:
        call(tokcost.TokenizeRequest(
            inputs=Inputs(paths=path, stdin=io.BytesIO(b"hi")),
            tokenizers=TokenizerSelection(tokenizers=["cl100k_base"], models=["gpt-4o"])))
    assert caught.value.param == "tokenizers" and caught.value.related == ("models",)
    one = call(tokcost.TokenizeRequest(
        inputs=Inputs(paths=path, stdin=io.BytesIO(b"hello world")),
        tokenizers=TokenizerSelection(models=["gpt-4o"])))
    assert one.tokenizer.label == "gpt-4o"


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
        # One tokenizer's tokens: a second one is refused, never silently dropped.
        pytest.param(["count", "--tokens", "{text}", "-m", "gpt-4o", "-m", "claude-sonnet-4-5"],
                     "--tokens takes one tokenizer, got 2 (gpt-4o, claude-sonnet-4-5); run it "
                     "once per tokenizer", id="tokens-two-models"),
        pytest.param(["count", "--tokens", "-", "-t", "o200k_base", "-m", "gpt-4o", "--json"],
                     "--tokens takes one tokenizer, got 2 (o200k_base, gpt-4o)",
                     id="tokens-spec-and-model"),
        pytest.param(["count", "{text}", "--truncate", "3", "-t", "o200k_base", "-t",
                      "cl100k_base"], "--truncate takes one tokenizer, got 2",
                     id="truncate-two-tokenizers"),
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


# --- the Dask engine follows the same policy ------------------------------------------------

LATIN1 = "café crème, naïve façade\n".encode("latin-1") * 40  # 4 bytes a line are not UTF-8


def _dask_corpus(root: Path) -> dict[str, str]:
    files = {"text": root / "a.txt", "latin1": root / "b.txt", "bin": root / "c.txt"}
    root.mkdir(exist_ok=True)
    files["text"].write_text(TEXT, encoding="utf-8")
    files["latin1"].write_bytes(LATIN1)
    files["bin"].write_bytes(BINARY + b"\n" + TEXT.encode() * 3)  # a NUL near the start
    return {k: str(v) for k, v in files.items()}


@pytest.mark.parametrize("shard_bytes", [7, 300, 1 << 20], ids=lambda n: f"shard{n}")
def test_shards_report_what_the_local_scan_reports(tmp_path: Path, shard_bytes: int) -> None:
    from tokcost.bpe.pretokenize import PretokenizeSpec, count_words
    from tokcost.scale import merge_word_counts, plan_shards, pretokenize_shard

    files = _dask_corpus(tmp_path)
    paths = list(files.values())
    shards = plan_shards([(p, os.path.getsize(p)) for p in paths], shard_bytes)
    spec = PretokenizeSpec("gpt2")
    merged = merge_word_counts(pretokenize_shard(s, spec) for s in reversed(shards))
    # Every piece of the binary file sniffs its head: none of its lines is counted.
    assert merged == count_words([files["text"], files["latin1"]], spec)
    # What a whole-file scan finds: the binary file's reason, the bytes replaced.
    assert merged.skipped == {files["bin"]: BINARY_REASON}
    assert merged.invalid_utf8_bytes == {files["latin1"]: 160}
    assert merged.in_order(paths).warnings == (
        f"skipped {files['bin']}: {BINARY_REASON}",
        f"{files['latin1']}: 160 bytes of invalid UTF-8 replaced with U+FFFD",
    )


def test_dask_train_skips_binary_and_reports_invalid_utf8(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    from tokcost.bpe.pretokenize import PretokenizeSpec
    from tokcost.counting import TrainingInputs
    from tokcost.scale import DaskRunner

    files = _dask_corpus(tmp_path)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, protocol="tcp://",
        host="127.0.0.1", dashboard_address="127.0.0.1:0", silence_logs=50,
    ) as cluster, distributed.Client(cluster) as client:
        engine = TrainingInputs(DaskRunner(client=client, shard_bytes=500))
        # A quoted glob: the driver never opens these files, the workers do.
        counts = engine.count_words([str(tmp_path / "*.txt")], PretokenizeSpec("gpt2"))
        config = TrainerConfig(vocab_size=300, pattern="gpt2")
        remote = tokcost.bpe.train_counted(
            engine.count_words([str(tmp_path / "*.txt")], config.reader_spec()), config)
    assert counts.warnings == (
        f"skipped {files['bin']}: {BINARY_REASON}",
        f"{files['latin1']}: 160 bytes of invalid UTF-8 replaced with U+FFFD",
    )
    local = tokcost.bpe.train([files["text"], files["latin1"]], config)
    assert remote.model.merges == local.model.merges  # the binary file was left out


def test_cli_dask_train_reports_as_the_local_engine(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    files = _dask_corpus(tmp_path / "data")
    out = tmp_path / "m.bpe"
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://",
        host="127.0.0.1", dashboard_address="127.0.0.1:0", silence_logs=50,
    ) as cluster:
        args = ["bpe", "train", str(tmp_path / "data" / "*.txt"), *TRAIN, "--engine", "dask",
                "--scheduler", cluster.scheduler_address]
        result = runner.invoke(app, [*args, "-o", str(out), "--json"])
        only_binary = runner.invoke(app, [*args[:2], str(tmp_path / "data" / "[c].txt"),
                                          *args[3:], "-o", str(tmp_path / "none.bpe")])
    assert result.exit_code == 0, result.output
    assert f"warning: skipped {files['bin']}: {BINARY_REASON}" in result.stderr
    assert (f"warning: {files['latin1']}: 160 bytes of invalid UTF-8 replaced with U+FFFD"
            in result.stderr)
    doc = json.loads(result.stdout)
    assert doc["skipped"] == [{"path": files["bin"], "reason": BINARY_REASON}]
    assert doc["invalid_utf8_bytes"] == {files["latin1"]: 160}
    assert only_binary.exit_code == 1, only_binary.output
    assert "nothing to train on: every input was skipped (skipped " in only_binary.stderr
    _one_line_error(only_binary)
    assert not (tmp_path / "none.bpe").exists()
