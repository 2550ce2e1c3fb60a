"""``tokcost bpe ...`` through the real Typer app (CliRunner), as tables of arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tokcost.bpe import TrainerConfig
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
        "--pattern",
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
            ["-v", "300", "--pattern", "(oops"], 2, "invalid pre-tokenization regex", id="bad-regex"
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

    monkeypatch.setattr(tokcost.bpe, "train_counted", interrupted)
    corpus = tmp_path / "c.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    result = runner.invoke(
        app, ["bpe", "train", str(corpus), "-v", "300", "-o", str(tmp_path / "x.bpe")]
    )
    assert result.exit_code == 130
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.txt"]


# --- the library call behind each command: --json is result.to_dict() -------------------

TIMING = ("seconds", "seconds_pretokenize", "seconds_merge")


def _doc(args: list[str]) -> dict[str, object]:
    result = runner.invoke(app, ["bpe", *args, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.stdout)
    return data


def _same(result: object) -> dict[str, object]:
    data: dict[str, object] = json.loads(json.dumps(result.to_dict()))  # type: ignore[attr-defined]
    return data


def test_train_json_is_the_result(tmp_path: Path) -> None:
    import tokcost
    from tokcost.bpe import PatternName

    corpus = tmp_path / "c.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    out = tmp_path / "m.bpe"
    cli = _doc(["train", str(corpus), "-v", "290", "--pattern", "gpt2", "-s", "<|endoftext|>",
                "-j", "2", "-o", str(out)])
    config = TrainerConfig(vocab_size=290, pattern=PatternName.GPT2,
                                   special_tokens=("<|endoftext|>",), jobs=2)
    lib = _same(tokcost.train_bpe(tokcost.BPETrainRequest(files=(corpus,), trainer=config,
                                                          output=out, force=True)))
    for key in TIMING:  # measured in the library, so they differ from run to run
        assert isinstance(cli[key], float) and cli[key] >= 0  # type: ignore[operator]
        assert isinstance(lib[key], float) and lib[key] >= 0  # type: ignore[operator]
    assert {k: v for k, v in cli.items() if k not in TIMING} == {
        k: v for k, v in lib.items() if k not in TIMING
    }
    assert list(cli) == list(lib)


def test_use_json_is_the_result(model: Path, tmp_path: Path) -> None:
    import tokcost
    from tokcost.bpe import ExportFormat

    m = str(model)
    assert _doc(["encode", m, "the kettle <|endoftext|>", "--allow-special"]) == _same(
        tokcost.encode_bpe(tokcost.BPEEncodeRequest(
            tokenizer=m, text="the kettle <|endoftext|>", allow_special=True))
    )
    assert _doc(["encode", m, "the kettle", "--reference"]) == _same(
        tokcost.encode_bpe(tokcost.BPEEncodeRequest(tokenizer=m, text="the kettle",
                                                    reference=True))
    )
    assert _doc(["decode", m, "104", "105", "0"]) == _same(
        tokcost.decode_bpe(tokcost.BPEDecodeRequest(tokenizer=m, ids=[104, 105, 0])))
    assert _doc(["inspect", m, "--top", "4"]) == _same(
        tokcost.inspect_bpe(tokcost.BPEInspectRequest(tokenizer=m, top=4)))
    hf = tmp_path / "tokenizer.json"
    assert _doc(["export", m, "-o", str(hf)]) == _same(
        tokcost.export_bpe(tokcost.BPEExportRequest(model=m, output=hf, force=True)))
    tt = tmp_path / "tok.tiktoken"
    assert _doc(["export", m, "--format", "tiktoken", "-o", str(tt)]) == _same(
        tokcost.export_bpe(tokcost.BPEExportRequest(model=m, output=tt,
                                                    format=ExportFormat.TIKTOKEN, force=True))
    )
    (tmp_path / "tok.tiktoken.json").unlink()  # a rank file alone needs a pattern
    assert _doc(["inspect", str(tt), "--pattern", "o200k", "--top", "2"]) == _same(
        tokcost.inspect_bpe(tokcost.BPEInspectRequest(tokenizer=str(tt), top=2,
                                                      pattern="o200k"))
    )


def test_inspect_result_has_typed_rows(model: Path) -> None:
    import tokcost

    info = tokcost.inspect_bpe(tokcost.BPEInspectRequest(tokenizer=str(model), top=2))
    assert info.vocab_size == 300 and info.special_tokens == {"<|endoftext|>": 0}
    assert len(info.first_merges) == 2 and info.first_merges[0].id == 257
    assert info.pattern == "o200k" and len(info.longest_tokens) == 2


def test_training_warning_names_the_flags(tmp_path: Path) -> None:
    import tokcost

    corpus = tmp_path / "tiny.txt"
    corpus.write_text("ab ab\n", encoding="utf-8")
    args = ["bpe", "train", str(corpus), "-v", "300", "--min-frequency", "5"]
    result = runner.invoke(app, [*args, "-o", str(tmp_path / "t.bpe")])
    assert result.exit_code == 0, result.output
    assert "above --min-frequency" in result.stderr and "smaller --vocab-size" in result.stderr
    config = TrainerConfig(vocab_size=300, min_frequency=5)
    lib = tokcost.train_bpe(tokcost.BPETrainRequest(files=(corpus,), trainer=config,
                                                    output=tmp_path / "u.bpe"))
    assert lib.exhausted and "min_frequency" in lib.warnings[0]
    assert "vocab_size" in lib.warnings[0] and "--" not in lib.warnings[0]


@pytest.mark.parametrize(
    "config, param, words, flag",
    [
        pytest.param({"vocab_size": 100}, "vocab_size", "vocab_size=100 is too small",
                     "--vocab-size 100 is too small", id="vocab"),
        pytest.param({"vocab_size": 300, "jobs": 0}, "jobs", "jobs must be", "--jobs must be",
                     id="jobs"),
        pytest.param({"vocab_size": 300, "min_frequency": -1}, "min_frequency",
                     "min_frequency must be", "--min-frequency must", id="min-frequency"),
        pytest.param({"vocab_size": 300, "max_token_length": 1}, "max_token_length",
                     "max_token_length must be", "--max-token-length must be", id="max-length"),
        pytest.param({"vocab_size": 300, "special_tokens": ("",)}, "special_tokens",
                     "from special_tokens", "from --special", id="empty-special"),
    ],
)
def test_train_errors_name_the_parameter(
    tmp_path: Path, config: dict[str, object], param: str, words: str, flag: str
) -> None:
    import tokcost
    from tokcost.errors import UsageError

    corpus = tmp_path / "c.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        tokcost.train_bpe(tokcost.BPETrainRequest(
            files=(corpus,), trainer=TrainerConfig(**config),  # type: ignore[arg-type]
            output=tmp_path / "x.bpe"))
    assert caught.value.param == param and words in str(caught.value)
    args = {"vocab_size": "-v", "jobs": "-j", "min_frequency": "--min-frequency",
            "max_token_length": "--max-token-length"}
    cli = ["bpe", "train", str(corpus), "-o", str(tmp_path / "x.bpe")]
    for key, value in config.items():
        if key == "special_tokens":
            cli += ["-s", ""]
        else:
            cli += [args[key], str(value)]
    result = runner.invoke(app, cli)
    assert result.exit_code == 2 and flag in result.stderr


def test_existing_output_and_special_text_name_the_parameter(model: Path) -> None:
    import tokcost
    from tokcost.errors import TokcostError

    with pytest.raises(TokcostError) as caught:
        tokcost.encode_bpe(tokcost.BPEEncodeRequest(tokenizer=str(model), text="a <|endoftext|>"))
    assert caught.value.param == "allow_special" and "pass allow_special=True" in str(caught.value)
    with pytest.raises(TokcostError) as caught:
        tokcost.export_bpe(tokcost.BPEExportRequest(model=str(model), output=model, format="hf"))
    assert caught.value.param == "force" and "pass force=True" in str(caught.value)
    with pytest.raises(TokcostError) as caught:
        tokcost.export_bpe(tokcost.BPEExportRequest(model=str(model),
                                                    output=model.with_name("x.json"),
                                                    format="onnx"))
    assert caught.value.param == "format" and "format must be hf or tiktoken" in str(caught.value)


@pytest.mark.parametrize(
    "flags, longest",
    [
        pytest.param([], 128, id="default-128"),
        pytest.param(["--max-token-length", "16"], 16, id="given"),
        pytest.param(["--max-token-length", "1M"], 2000, id="lifted"),
    ],
)
def test_train_max_token_length(tmp_path: Path, flags: list[str], longest: int) -> None:
    """One run of a letter: without a limit its tokens grow to the whole run."""
    corpus = tmp_path / "a.txt"
    corpus.write_text("a" * 2000 + "\n", encoding="utf-8")
    out = tmp_path / "a.bpe"
    result = runner.invoke(app, ["bpe", "train", str(corpus), "-v", "280", *flags, "-o", str(out)])
    assert result.exit_code == 0, result.output
    info = runner.invoke(app, ["bpe", "inspect", str(out), "--json"])
    assert json.loads(info.stdout)["max_token_bytes"] == longest


def test_train_help_states_the_default() -> None:
    result = runner.invoke(app, ["bpe", "train", "--help"], env={"COLUMNS": "200"})
    assert "128 spaces" in result.output and "[default: 128]" in result.output


# --- the requests: checked on construction, counts accepted as text ----------------------


@pytest.mark.parametrize(
    "build, field, value",
    [
        pytest.param(lambda t: TrainerConfig(vocab_size="32k"), "vocab_size", 32000, id="vocab-32k"),
        pytest.param(lambda t: TrainerConfig(vocab_size=300, max_pretokens="2Mi"),
                     "max_pretokens", 2 << 20, id="max-pretokens-2Mi"),
        pytest.param(lambda t: TrainerConfig(vocab_size=300, special_tokens="<|s|>"),
                     "special_tokens", ("<|s|>",), id="one-special-as-a-string"),
        pytest.param(lambda t: t.BPETrainRequest(files="a.txt", output="a.bpe",
                                                 trainer=TrainerConfig(vocab_size=300)),
                     "files", ("a.txt",), id="one-file-as-a-string"),
        pytest.param(lambda t: t.BPEInspectRequest(tokenizer="o200k_base", top="1k"), "top", 1000,
                     id="top-1k"),
        pytest.param(lambda t: t.BPESweepRequest(files=("a",), held_out="b", vocab_sizes=("2k", 1024)),
                     "sizes", (1024, 2000), id="sweep-sizes-sorted"),
        pytest.param(lambda t: t.BPESweepRequest(files=("a",), held_out="b", vocab_sizes=(300,),
                                                 hidden="4Ki"), "hidden", 4096, id="hidden-4Ki"),
    ],
)
def test_requests_take_counts_as_text(build: object, field: str, value: object) -> None:
    import tokcost

    assert getattr(build(tokcost), field) == value  # type: ignore[operator]


@pytest.mark.parametrize(
    "build, param, words",
    [
        pytest.param(lambda t: TrainerConfig(vocab_size="abc"), "vocab_size",
                     "vocab_size 'abc' is not a count", id="vocab-not-a-count"),
        pytest.param(lambda t: TrainerConfig(vocab_size=300, pattern="o300k"), None,
                     "unknown pattern name 'o300k'", id="pattern"),
        pytest.param(lambda t: TrainerConfig(vocab_size=300, max_pretokens=0), "max_pretokens",
                     "max_pretokens=0 must be 1 or more", id="max-pretokens-zero"),
        pytest.param(lambda t: t.BPEInspectRequest(tokenizer="o200k_base", top=-2), "top",
                     "top=-2 must be 0 or more", id="top-negative"),
        pytest.param(lambda t: t.BPEEncodeRequest(tokenizer="o200k_base"), "text",
                     "give the text or a path", id="encode-neither"),
        pytest.param(lambda t: t.BPEExportRequest(model="m.bpe", output="x", format="onnx"),
                     "format", "format must be hf or tiktoken, not 'onnx'", id="export-format"),
        pytest.param(lambda t: t.BPESweepRequest(files=("a",), held_out="b", vocab_sizes=(300,),
                                                 knee_gain=2.0), "knee_gain",
                     "knee_gain=2.0 must be between 0 and 1", id="sweep-knee-gain"),
        pytest.param(lambda t: t.BPESweepRequest(files=("a",), held_out="b", vocab_sizes=(300,),
                                                 hidden=8, model="llama-3.1-8b"), "hidden",
                     "give the width as hidden or as a catalog model", id="sweep-width-twice"),
        pytest.param(lambda t: t.BPESweepRequest(files=("a",), held_out="b", vocab_sizes=(300,),
                                                 special_tokens=("",)), "special_tokens",
                     "drop the empty string from special_tokens", id="sweep-empty-special"),
    ],
)
def test_requests_refuse_bad_values_on_construction(build: object, param: str | None,
                                                    words: str) -> None:
    """Nothing is read or trained: the request refuses itself, naming the field."""
    import tokcost
    from tokcost.errors import UsageError

    with pytest.raises(UsageError) as caught:
        build(tokcost)  # type: ignore[operator]
    assert words in str(caught.value)
    if param is not None:
        assert caught.value.param == param


def test_training_runs_once_through_the_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The app pre-tokenizes (one call to the engine, with the config's reader spec) and
    tokcost.bpe learns from the table: nothing calls back up into the app."""
    import tokcost
    from tokcost.bpe.pretokenize import PretokenizeSpec
    from tokcost.counting import TrainingInputs

    corpus = tmp_path / "c.txt"
    corpus.write_text(TEXT, encoding="utf-8")
    seen: list[PretokenizeSpec] = []
    real = TrainingInputs.count_words

    def spy(self: TrainingInputs, paths: object, spec: PretokenizeSpec, **kw: object) -> object:
        seen.append(spec)
        return real(self, paths, spec, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(TrainingInputs, "count_words", spy)
    config = TrainerConfig(vocab_size=280, special_tokens=("<|s|>",), max_pretokens=50)
    result = tokcost.train_bpe(tokcost.BPETrainRequest(files=(corpus,), trainer=config,
                                                       output=tmp_path / "m.bpe"))
    assert seen == [config.reader_spec()]
    assert result.model.n_tokens == 280 and result.requested_vocab_size == 280


def test_tiktoken_export_loads_in_tiktoken_as_shipped(model: Path, tmp_path: Path) -> None:
    """The sidecar holds tiktoken.Encoding's own arguments: the full regex, the specials."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    tt = tmp_path / "tok.tiktoken"
    assert runner.invoke(app, ["bpe", "export", str(model), "-f", "tiktoken", "-o", str(tt)]
                         ).exit_code == 0
    meta = json.loads((tmp_path / "tok.tiktoken.json").read_text(encoding="utf-8"))
    enc = tiktoken.Encoding(**meta, mergeable_ranks=load_tiktoken_bpe(str(tt)))
    text = "the kettle sang, we counted 12345 bytes <|endoftext|> then stopped"
    mine = runner.invoke(app, ["bpe", "encode", str(model), "--allow-special", text])
    ids = enc.encode(text, allowed_special="all")
    assert len(ids) > 10 and mine.stdout.split() == [str(i) for i in ids]
    assert meta["special_tokens"] == {"<|endoftext|>": 0}


def test_an_older_sidecar_that_names_its_pattern_still_reads(model: Path, tmp_path: Path) -> None:
    tt = tmp_path / "old.tiktoken"
    assert runner.invoke(app, ["bpe", "export", str(model), "-f", "tiktoken", "-o", str(tt)]
                         ).exit_code == 0
    (tmp_path / "old.tiktoken.json").write_text(
        json.dumps({"pattern": "o200k", "special_tokens": {"<|endoftext|>": 0}}), encoding="utf-8")
    want = runner.invoke(app, ["bpe", "encode", str(model), "the kettle sang"]).stdout
    for spec in (str(tt), f"tiktoken:{tt}"):
        assert runner.invoke(app, ["bpe", "encode", spec, "the kettle sang"]).stdout == want
    counted = runner.invoke(app, ["count", "-", "-t", f"tiktoken:{tt}", "--json"],
                            input="the kettle sang")
    assert counted.exit_code == 0, counted.output


@pytest.mark.parametrize("pattern", [None, 5, ["o200k"]])
def test_a_sidecar_pattern_that_is_no_string_is_an_error(model: Path, tmp_path: Path,
                                                         pattern: object) -> None:
    # str() made null the regex "None": every text counted 0 tokens, the issue's own symptom
    tt = tmp_path / "odd.tiktoken"
    assert runner.invoke(app, ["bpe", "export", str(model), "-f", "tiktoken", "-o", str(tt)]
                         ).exit_code == 0
    (tmp_path / "odd.tiktoken.json").write_text(json.dumps({"pat_str": pattern}))
    counted = runner.invoke(app, ["count", "-", "-t", f"tiktoken:{tt}"], input="the kettle")
    assert counted.exit_code == 1 and "odd.tiktoken.json: expected JSON with a 'pat_str'" in (
        counted.stderr), counted.output


def test_inspect_derives_the_merges_of_a_rank_file(model: Path, tmp_path: Path) -> None:
    """A rank file carries no merge list: each token's merge is the split byte-pair merging in
    rank order makes of its bytes; for tokcost's own export that is the trained merge list."""
    tt = tmp_path / "tok.tiktoken"
    assert runner.invoke(app, ["bpe", "export", str(model), "-f", "tiktoken", "-o", str(tt)]
                         ).exit_code == 0
    trained = json.loads(runner.invoke(app, ["bpe", "inspect", str(model), "--json",
                                             "--top", "100"]).stdout)
    for spec in (str(tt), f"tiktoken:{tt}"):
        info = json.loads(runner.invoke(app, ["bpe", "inspect", spec, "--json", "--top", "100"]
                                        ).stdout)
        assert info["merges"] == trained["merges"] == 300 - 1 - 256
        assert info["first_merges"] == trained["first_merges"]
        assert info["unmerged_tokens"] == trained["unmerged_tokens"] == 0


def test_inspect_says_which_tokens_are_no_merge(tmp_path: Path) -> None:
    import base64

    ranks = [bytes([b]) for b in range(256)] + [b"bc", b"ab", b"cd", b"abcd"]
    rows = "".join(f"{base64.b64encode(t).decode()} {i}\n" for i, t in enumerate(ranks))
    (tmp_path / "r.tiktoken").write_text(rows, encoding="ascii")
    info = json.loads(runner.invoke(app, ["bpe", "inspect", str(tmp_path / "r.tiktoken"),
                                          "--pattern", "o200k", "--json"]).stdout)
    # "abcd": "bc" merges first, then no token joins a|bc or bc|d: not a merge of two.
    assert (info["merges"], info["unmerged_tokens"]) == (3, 1)
    assert [m["token"] for m in info["first_merges"]] == ["bc", "ab", "cd"]
    table = runner.invoke(app, ["bpe", "inspect", str(tmp_path / "r.tiktoken"), "--pattern", "o200k"])
    assert "unmerged_tokens   1" in table.stdout


def _folder(root: Path) -> Path:
    """A corpus folder as count walks it: a .gitignore'd file, a binary one, a symlink and
    .git/ are left out, a nested text file read."""
    corpus = root / "corpus"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "a.txt").write_text(TEXT, encoding="utf-8")
    (corpus / "sub" / "b.md").write_text(TEXT.upper(), encoding="utf-8")
    (corpus / "skip.log").write_text("zebra quagga " * 50, encoding="utf-8")
    (corpus / ".gitignore").write_text("*.log\n", encoding="utf-8")
    (corpus / "blob.bin").write_bytes(b"\x00\x01zebra" * 10)
    (corpus / ".git").mkdir()
    (corpus / ".git" / "HEAD").write_text("zebra quagga\n" * 50, encoding="utf-8")
    (corpus / "link.txt").symlink_to(corpus / "a.txt")
    return corpus


def test_train_and_sweep_walk_a_folder_as_count_does(tmp_path: Path) -> None:
    corpus = _folder(tmp_path)
    (tmp_path / "held.txt").write_text("the kettle sang\n", encoding="utf-8")
    files = [corpus / ".gitignore", corpus / "a.txt", corpus / "sub" / "b.md"]
    listed = runner.invoke(app, ["count", str(corpus), "--json"])
    assert sorted(f["path"] for f in json.loads(listed.stdout)["files"]) == sorted(map(str, files))

    def train(inputs: list[Path], out: str) -> dict:  # type: ignore[type-arg]
        done = runner.invoke(app, ["bpe", "train", *map(str, inputs), "-v", "320", "-o",
                                   str(tmp_path / out), "--json"])
        assert done.exit_code == 0, done.output
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    walked, named = train([corpus], "d.bpe"), train(files, "f.bpe")
    assert (tmp_path / "d.bpe").read_text() == (tmp_path / "f.bpe").read_text()
    assert {s["path"] for s in walked["skipped"]} >= {str(corpus / "blob.bin"),
                                                     str(corpus / "link.txt")}
    assert walked["total_pretokens"] == named["total_pretokens"]
    assert train([corpus, corpus / "a.txt"], "twice.bpe")["total_pretokens"] == named[
        "total_pretokens"]  # a file named and walked is read once
    sweep = runner.invoke(app, ["bpe", "sweep", str(corpus), "--eval", str(tmp_path / "held.txt"),
                                "--vocab-sizes", "300", "-t", "cl100k_base", "--json"])
    assert sweep.exit_code == 0, sweep.output
    assert json.loads(sweep.stdout)["total_pretokens"] == named["total_pretokens"]


def test_train_on_an_empty_folder_says_so(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done = runner.invoke(app, ["bpe", "train", str(tmp_path / "empty"), "-v", "300", "-o",
                               str(tmp_path / "x.bpe")])
    assert done.exit_code == 1 and f"no files in {tmp_path / 'empty'}/" in done.output
    assert done.output.count("error:") == 1 and "Traceback" not in done.output
