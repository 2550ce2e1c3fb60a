"""``tokcost bpe ...`` through the real Typer app (CliRunner), as tables of arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tokcost.cli.app import app

runner = CliRunner()

TEXT = (
    "the kettle sang while the kettle cooled\n"
    "we counted tokens and then we counted bytes\n"
    "tokens, bytes, merges: the counting never stops\n"
) * 20


@pytest.fixture()
def model(tmp_path: Path) -> Path:
    corpus = tmp_path / "c.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    out = tmp_path / "tok.bpe"
    result = runner.invoke(
        app,
        ["bpe", "train", str(corpus), "--vocab-size", "300", "-s", "<|endoftext|>", "-o", str(out)],
    )
    assert result.exit_code == 0, result.output
    return out


def test_train_json(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    out = tmp_path / "m.bpe"
    args = [
        "bpe",
        "train",
        str(corpus),
        "-v",
        "280",
        "-p",
        "cl100k",
        "-j",
        "2",
        "-o",
        str(out),
        "--json",
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["vocab_size"] == 280 and summary["merges"] == 24
    assert summary["pattern"] == "cl100k"
    assert summary["outputs"] == [str(out), str(tmp_path / "m.vocab")]
    for key in ("distinct_pretokens", "seconds", "seconds_merge", "exhausted"):
        assert key in summary
    again = runner.invoke(app, args)
    assert again.exit_code == 2 and "--force" in again.output
    assert runner.invoke(app, [*args, "--force"]).exit_code == 0


@pytest.mark.parametrize(
    "args, code, message",
    [
        pytest.param(["-v", "100"], 2, "too small", id="vocab-too-small"),
        pytest.param(
            ["-v", "300", "-p", "(oops"], 2, "invalid pre-tokenization regex", id="bad-regex"
        ),
        pytest.param(["-v", "300", "--jobs", "0"], 2, "--jobs", id="bad-jobs"),
    ],
)
def test_train_errors(tmp_path: Path, args: list[str], code: int, message: str) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    result = runner.invoke(app, ["bpe", "train", str(corpus), *args, "-o", str(tmp_path / "x.bpe")])
    assert result.exit_code == code
    assert message in result.output
    assert not (tmp_path / "x.bpe").exists()


def test_train_missing_file(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["bpe", "train", str(tmp_path / "nope.txt"), "-v", "300", "-o", str(tmp_path / "x.bpe")],
    )
    assert result.exit_code == 2 and "not found" in result.output


def test_encode_decode_round_trip(model: Path) -> None:
    enc = runner.invoke(app, ["bpe", "encode", str(model), "the kettle counted"])
    assert enc.exit_code == 0, enc.output
    ids = enc.stdout.split()
    dec = runner.invoke(app, ["bpe", "decode", str(model), *ids])
    assert dec.stdout == "the kettle counted\n"
    ref = runner.invoke(app, ["bpe", "encode", f"bpe:{model}", "--reference", "the kettle counted"])
    assert ref.stdout.split() == ids
    piped = runner.invoke(app, ["bpe", "encode", str(model), "--json"], input="bytes and merges")
    assert json.loads(piped.stdout)["count"] == len(json.loads(piped.stdout)["ids"])


@pytest.mark.parametrize(
    "args, code, message",
    [
        pytest.param(["encode", "{m}", "a <|endoftext|>"], 1, "--allow-special", id="special"),
        pytest.param(["decode", "{m}", "1", "999999"], 2, "not in this vocabulary", id="bad-id"),
        pytest.param(["decode", "{m}", "x"], 2, "integers", id="not-int"),
        pytest.param(["inspect", "missing.bpe"], 2, "not found", id="missing-model"),
        pytest.param(
            ["export", "{m}", "--format", "onnx", "-o", "x"], 2, "--format", id="bad-format"
        ),
    ],
)
def test_command_errors(model: Path, args: list[str], code: int, message: str) -> None:
    result = runner.invoke(app, ["bpe", *[a.replace("{m}", str(model)) for a in args]])
    assert result.exit_code == code, result.output
    assert message in result.output


def test_allow_special(model: Path) -> None:
    result = runner.invoke(app, ["bpe", "encode", str(model), "--allow-special", "a <|endoftext|>"])
    assert result.exit_code == 0 and result.stdout.split()[-1] == "0"


def test_inspect(model: Path) -> None:
    result = runner.invoke(app, ["bpe", "inspect", str(model), "--json", "--top", "3"])
    info = json.loads(result.stdout)
    assert info["vocab_size"] == 300 and info["special_tokens"] == {"<|endoftext|>": 0}
    assert len(info["first_merges"]) == 3
    table = runner.invoke(app, ["bpe", "inspect", str(model)])
    assert "first merges" in table.stdout


def test_export_both_formats(model: Path, tmp_path: Path) -> None:
    hf = tmp_path / "tokenizer.json"
    result = runner.invoke(
        app, ["bpe", "export", str(model), "--format", "hf", "-o", str(hf), "--json"]
    )
    assert json.loads(result.stdout)["outputs"] == [str(hf)]
    tt = tmp_path / "tok.tiktoken"
    result = runner.invoke(
        app, ["bpe", "export", str(model), "--format", "tiktoken", "-o", str(tt)]
    )
    assert result.exit_code == 0 and tt.exists() and (tmp_path / "tok.tiktoken.json").exists()
    refused = runner.invoke(
        app, ["bpe", "export", str(model), "--format", "tiktoken", "-o", str(tt)]
    )
    assert refused.exit_code == 2 and "--force" in refused.output
    back = runner.invoke(app, ["bpe", "encode", str(tt), "the kettle"])
    assert back.stdout == runner.invoke(app, ["bpe", "encode", str(model), "the kettle"]).stdout


def test_count_with_bpe_spec(model: Path, tmp_path: Path) -> None:
    f = tmp_path / "x.txt"
    f.write_text("the kettle sang", encoding="utf-8")
    result = runner.invoke(app, ["count", str(f), "-t", f"bpe:{model}", "--json"])
    assert result.exit_code == 0, result.output
    assert '"bpe:' in result.stdout


def test_ctrl_c_during_training_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tokcost.bpe

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(tokcost.bpe, "train", interrupted)
    corpus = tmp_path / "c.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    result = runner.invoke(
        app, ["bpe", "train", str(corpus), "-v", "300", "-o", str(tmp_path / "x.bpe")]
    )
    assert result.exit_code == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt"]
