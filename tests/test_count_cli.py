"""``tokcost count`` / ``tokcount`` as a user runs it: tables of arguments and outputs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tokcost import get_tokenizer
from tokcost.adapters import Tokenizer
from tokcost.cli.app import app
from tokcost.counting import Inputs
from tokcost.tokenizers import TokenizerSelection

TEXT = "The kettle whistled while the cat slept on the warm windowsill.\n"


@pytest.fixture
def o200k() -> Tokenizer:
    return get_tokenizer("tiktoken:o200k_base")


@pytest.fixture
def cl100k() -> Tokenizer:
    return get_tokenizer("tiktoken:cl100k_base")


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text(TEXT)
    (tmp_path / "b.md").write_text("# Title\n\nTokens cost money.\n")
    return tmp_path


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(["count", "{a}"], ["{o200k}", "o200k_base"], id="default"),
        pytest.param(["count", "{a}", "-t", "cl100k_base"], ["{cl100k}", "cl100k_base"],
                     id="cl100k"),
        pytest.param(["count", "{a}", "--total"], ["{o200k}\n"], id="total"),
        pytest.param(["count", "{a}", "-m", "gpt-4o"], ["gpt-4o", "of its 128,000-token"],
                     id="model-window"),
        pytest.param(["count", "{a}", "--truncate", "3"], ["The kettle wh"], id="truncate"),
    ],
)
def test_count_outputs(runner, files: Path, args: list[str], expected: list[str],  # type: ignore[no-untyped-def]
                       o200k: Tokenizer, cl100k: Tokenizer) -> None:
    argv = [a.format(a=files / "a.txt") for a in args]
    result = runner.invoke(app, argv)
    assert result.exit_code == 0, result.output
    counts = {"o200k": o200k.count(TEXT), "cl100k": cl100k.count(TEXT)}
    for text in expected:
        assert text.format(**counts) in result.stdout


def test_json_keys_and_totals(runner, files: Path, o200k: Tokenizer) -> None:  # type: ignore[no-untyped-def]
    result = runner.invoke(app, ["count", str(files), "-t", "o200k_base", "-t", "cl100k_base",
                                 "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == {"tokenizers", "files", "total", "models", "skipped"}
    assert [t["label"] for t in data["tokenizers"]] == ["o200k_base", "cl100k_base"]
    assert [Path(f["path"]).name for f in data["files"]] == ["a.txt", "b.md"]
    both = TEXT + "# Title\n\nTokens cost money.\n"
    assert data["total"]["tokens"]["o200k_base"] == o200k.count(TEXT) + o200k.count(
        "# Title\n\nTokens cost money.\n")
    assert data["total"]["bytes"] == len(both.encode())


def test_csv(runner, files: Path, o200k: Tokenizer) -> None:  # type: ignore[no-untyped-def]
    result = runner.invoke(app, ["count", str(files / "a.txt"), "--csv"])
    lines = result.stdout.splitlines()
    assert lines[0] == "path,bytes,chars,o200k_base"
    assert lines[-1] == f"TOTAL,{len(TEXT)},{len(TEXT)},{o200k.count(TEXT)}"


def test_stdin(runner) -> None:  # type: ignore[no-untyped-def]
    result = runner.invoke(app, ["count", "-", "--total"], input="hello world")
    assert result.stdout.strip() == "2"


def test_tokens_shows_pieces(runner, files: Path, o200k: Tokenizer) -> None:  # type: ignore[no-untyped-def]
    result = runner.invoke(app, ["count", str(files / "a.txt"), "--tokens"])
    assert result.exit_code == 0
    assert f"{o200k.count(TEXT)} tokens (o200k_base)" in result.stdout


def test_chat_overhead_follows_cookbook_rule(runner, tmp_path: Path, o200k: Tokenizer) -> None:  # type: ignore[no-untyped-def]
    messages = [
        {"role": "system", "content": "You answer in one short sentence."},
        {"role": "user", "name": "ada", "content": "How many tokens is this?"},
    ]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(messages))
    result = runner.invoke(app, ["count", "--chat", str(path), "-m", "gpt-4o", "--json"])
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)["models"][0]
    content = sum(o200k.count(v) for m in messages for v in m.values())
    assert got["content_tokens"] == content
    assert got["overhead_tokens"] == 3 * 2 + 1 + 3  # per message, per name, reply priming
    assert got["total"] == content + 10


def test_a_chat_row_names_the_tokenizer_that_counted(runner, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """-t cl100k_base counts with cl100k under gpt-4o's overhead: the row says both."""
    path = tmp_path / "hichat.json"
    path.write_text('[{"role": "user", "content": "hi"}]')
    result = runner.invoke(app, ["count", "--chat", str(path), "-t", "cl100k_base"])
    assert result.exit_code == 0, result.output
    header, row = result.stdout.splitlines()[:2]
    assert header.split()[:2] == ["model", "tokenizer"]
    assert row.split()[:2] == ["gpt-4o", "cl100k_base"]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        pytest.param(["count", "/nonexistent/file.txt"], 2, "no such file", id="missing-path"),
        pytest.param(["count", "{a}", "-t", "o300k"], 2, "unknown tokenizer spec",
                     id="unknown-tokenizer"),
        pytest.param(["count", "{a}", "-m", "gpt-4p"], 2, "did you mean", id="unknown-model"),
        pytest.param(["count", "{a}", "-t", "sp:{a}"], 1, "not a valid SentencePiece",
                     id="corrupt-tokenizer"),
        pytest.param(["count", "--chat", "{a}"], 1, "not JSON", id="bad-chat"),
        pytest.param(["count", "--chat", ""], 2, "chat file not found: ''", id="empty-chat"),
        pytest.param(["count", "{a}", "--jobs", "0"], 2, "", id="bad-jobs"),
        # output options that cannot all be honoured: one is never dropped silently
        *[pytest.param(["count", "{a}", *flags], 2, f"{x} and {y} cannot be combined",
                       id=f"{x}{y}") for flags, x, y in [
            (["--json", "--csv"], "--json", "--csv"),
            (["--json", "--total"], "--json", "--total"),
            (["--csv", "--total"], "--csv", "--total"),
            (["--tokens", "--truncate", "5"], "--tokens", "--truncate"),
            (["--truncate", "5", "--csv"], "--csv", "--truncate"),
            (["--tokens", "--total"], "--total", "--tokens"),
            (["--tokens", "--truncate", "2", "--json"], "--tokens", "--truncate")]],
        pytest.param(["count", "--chat", "{a}", "{a}"], 2, "--chat counts one message list",
                     id="chat-and-files"),
        pytest.param(["count", "--chat", "{a}", "--total"], 2, "drop --total",
                     id="chat-and-total"),
        pytest.param(["count", "{a}", "-t", "o200k_base", "-t", "o200k_base"], 2,
                     "tokenizer given twice: o200k_base", id="same-tokenizer-twice"),
        pytest.param(["count", "{a}", "-m", "gpt-4o", "-m", "gpt-4o"], 2,
                     "model given twice: gpt-4o", id="same-model-twice"),
    ],
)
def test_bad_input_is_one_line(runner, files: Path, args: list[str], code: int,  # type: ignore[no-untyped-def]
                               message: str) -> None:
    argv = [a.format(a=files / "a.txt") for a in args]
    result = runner.invoke(app, argv)
    assert result.exit_code == code, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_binary_skip_is_reported(runner, files: Path) -> None:  # type: ignore[no-untyped-def]
    (files / "blob.bin").write_bytes(b"\x00\x01\x02")
    result = runner.invoke(app, ["count", str(files)])
    assert result.exit_code == 0
    assert "skipped" in result.stderr and "binary" in result.stderr


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout


HEAVY = ("numpy", "tokenizers", "sentencepiece", "matplotlib", "dask")


def test_import_tokcost_stays_light() -> None:
    loaded = _run("import sys, tokcost; print(' '.join(sorted(sys.modules)))").split()
    assert not [m for m in HEAVY if m in loaded]


def test_help_stays_light() -> None:
    code = (
        "import sys\n"
        "from tokcost.cli.app import app\n"
        "from typer.testing import CliRunner\n"
        "CliRunner().invoke(app, ['--help'])\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    loaded = _run(code).split()
    assert not [m for m in HEAVY if m in loaded]


def test_python_dash_m_and_tokcount_script(tmp_path: Path) -> None:
    (tmp_path / "x.txt").write_text("hello world")
    out = subprocess.run([sys.executable, "-m", "tokcost", "count", str(tmp_path / "x.txt"),
                          "--total"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "2"


def test_every_listed_command_loads_and_has_help(runner) -> None:  # type: ignore[no-untyped-def]
    """The root help lists commands from a table without importing them; each must load."""
    from tokcost.cli.app import COMMANDS

    listed = runner.invoke(app, ["--help"]).stdout
    for name in COMMANDS:
        assert f"│ {name} " in listed
        result = runner.invoke(app, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)
        assert "Usage" in result.stdout
    assert runner.invoke(app, ["no-such-command"]).exit_code == 2


def test_only_binary_input_is_a_failure(runner, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02")
    result = runner.invoke(app, ["count", str(tmp_path / "blob.bin")])
    assert result.exit_code == 1
    assert "nothing to count" in result.stderr and "binary" in result.stderr


def test_overflowing_context_says_so(runner, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "long.txt").write_text("token " * 9000)
    result = runner.invoke(app, ["count", str(tmp_path / "long.txt"), "-m", "gpt-4"])
    assert result.exit_code == 0
    assert "does not fit" in result.stdout


def test_model_spec_is_the_same_as_dash_m(runner, files: Path) -> None:  # type: ignore[no-untyped-def]
    via_t = runner.invoke(app, ["count", str(files / "a.txt"), "-t", "model:claude-sonnet-4-5", "--json"])
    via_m = runner.invoke(app, ["count", str(files / "a.txt"), "-m", "claude-sonnet-4-5", "--json"])
    assert json.loads(via_t.stdout)["tokenizers"] == json.loads(via_m.stdout)["tokenizers"]
    assert json.loads(via_t.stdout)["tokenizers"][0]["exact"] is False


# --- the CLI's JSON is the library's result -------------------------------------------------


def _same(cli_stdout: str, result: object) -> None:
    assert json.loads(cli_stdout) == json.loads(json.dumps(result.to_dict()))  # type: ignore[attr-defined]


def test_count_json_is_the_results_to_dict(runner, files: Path) -> None:  # type: ignore[no-untyped-def]
    import tokcost

    (files / "blob.bin").write_bytes(b"\x00\x01")
    (files / "latin1.txt").write_bytes("café".encode("latin-1"))
    selection = TokenizerSelection(tokenizers=["cl100k_base", "model:gpt-4"],
                                           models=["gpt-4o"])
    cli = runner.invoke(app, ["count", str(files), "-t", "cl100k_base", "-t", "model:gpt-4",
                              "-m", "gpt-4o", "--exclude", "*.md", "--json"])
    assert cli.exit_code == 0, cli.output
    result = tokcost.count(tokcost.CountRequest(
        inputs=Inputs(paths=[str(files)], exclude=["*.md"]), tokenizers=selection))
    _same(cli.stdout, result)
    assert [s.reason for s in result.skipped] == ["binary (NUL byte at offset 0)"]
    assert [w.id for w in result.windows] == ["gpt-4", "gpt-4o"]


def test_count_chat_json_is_the_results_to_dict(runner, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import tokcost

    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": [
        {"type": "text", "text": "What is in this picture?"}, {"type": "image_url"}]}]))
    cli = runner.invoke(app, ["count", "--chat", str(chat), "-m", "gpt-4o", "-m", "gpt-4",
                              "--json"])
    assert cli.exit_code == 0, cli.output
    result = tokcost.count_chat(tokcost.ChatRequest(
        chat=chat, tokenizers=TokenizerSelection(models=["gpt-4o", "gpt-4"])))
    _same(cli.stdout, result)
    assert result.warnings == ("1 non-text parts (images, audio, tool calls) not counted",)
    assert "1 non-text parts" in cli.stderr


def test_model_spec_reads_the_users_catalog(runner, files: Path, cl100k: Tokenizer) -> None:  # type: ignore[no-untyped-def]
    """-t model:ID resolves through --catalog: a model only the user's catalog has."""
    mine = files / "mine.yaml"
    mine.write_text("extends: shipped\nmodels:\n"
                    "  - {id: my-model, tokenizer: 'tiktoken:cl100k_base', context_window: 1000}\n")
    result = runner.invoke(app, ["count", str(files / "a.txt"), "-t", "model:my-model",
                                 "--catalog", str(mine), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    # which counted: tiktoken for this small run, a fast backend where it is asked for
    assert data["tokenizers"][0].pop("backend") in ("gigatoken", "toktok-rs", "tiktoken")
    assert data["tokenizers"] == [{"label": "my-model", "spec": "tiktoken:cl100k_base",
                                   "exact": True, "model": "my-model"}]
    assert data["models"][0]["tokens"] == cl100k.count(TEXT)
    assert data["models"][0]["context_window"] == 1000
    shipped = runner.invoke(app, ["count", str(files / "a.txt"), "-t", "model:my-model"])
    assert shipped.exit_code == 2 and "my-model" in shipped.stderr


def test_nothing_to_count_is_the_results_decision(tmp_path: Path) -> None:
    import tokcost
    from tokcost.errors import InputError

    (tmp_path / "blob.bin").write_bytes(b"\x00")
    skipped = tokcost.count([str(tmp_path)])
    assert skipped.warnings == (f"skipped {tmp_path / 'blob.bin'}: binary (NUL byte at offset 0)",)
    with pytest.raises(InputError, match="every input was skipped"):
        skipped.raise_for_empty()
    (tmp_path / "blob.bin").unlink()
    empty = tokcost.count([str(tmp_path)])
    assert empty.warnings == (f"no files in {tmp_path}/",)
    empty.raise_for_empty()  # not an error: exit 0, nothing to show


def test_a_folder_given_as_the_chat_names_the_flag(runner, files: Path) -> None:  # type: ignore[no-untyped-def]
    result = runner.invoke(app, ["count", "--chat", str(files)])
    assert result.exit_code == 2
    assert f"{files} is a folder; --chat PATH takes a JSON file of messages" in result.stderr


@pytest.mark.parametrize("args", [["--tokens", "--json"], ["--truncate", "2", "--json"]])
def test_json_goes_with_tokens_and_truncate(runner, files: Path, args: list[str]) -> None:  # type: ignore[no-untyped-def]
    result = runner.invoke(app, ["count", str(files / "a.txt"), *args])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["files"][0]["ids"]


def test_a_model_and_its_tokenizer_are_two_columns(runner, files: Path) -> None:  # type: ignore[no-untyped-def]
    result = runner.invoke(app, ["count", str(files / "a.txt"), "-t", "o200k_base", "-m",
                                 "gpt-4o", "--json"])
    assert result.exit_code == 0, result.output
    assert [t["label"] for t in json.loads(result.stdout)["tokenizers"]] == ["o200k_base",
                                                                               "gpt-4o"]


@pytest.mark.parametrize("n", range(0, 7))
def test_truncate_never_prints_half_a_character(runner, tmp_path: Path, o200k: Tokenizer,  # type: ignore[no-untyped-def]
                                                n: int) -> None:
    # rare characters take several byte-level tokens each: a cut inside one must not
    # print U+FFFD; a U+FFFD the input really has is kept
    text = "\U00013000\U00013001 x \ufffd y\U0001F9D1\u200d\U0001F4BB"
    (tmp_path / "rare.txt").write_text(text, encoding="utf-8")
    result = runner.invoke(app, ["count", str(tmp_path / "rare.txt"), "--truncate", str(n),
                                 "--json"])
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)["files"][0]["text"]
    assert text.startswith(got)  # only whole characters of the input, in order
    whole = o200k.decode(o200k.encode(text)[:n])
    assert whole.startswith(got) and len(whole) - len(got) <= 2  # at most the split one
