"""Bad input to every command: one line on stderr, the right exit code, nothing written.

ttok's style: a table of argument lists, each with the exit code and a fragment of
the one-line message a user must see. A last test checks that the table has a row
for every command and subcommand tokcost has, so a new command cannot ship without.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_tree import subcommands
from typer.testing import CliRunner

from tokcost.cli.app import COMMANDS, _load_command, app

# {text}: a UTF-8 file, {bin}: a binary file, {bad}: invalid UTF-8, {ro}: a path in a
# missing folder (writable by nobody), {yaml}: a broken catalog, {model}: a .bpe file,
# {none}: a path that does not exist.
ROWS = [
    # count
    (["count", "{none}"], 2, "no such file or folder"),
    (["count", "{text}", "-t", "o300k_base"], 2, "unknown tokenizer"),
    (["count", "{text}", "--truncate", "-1"], 2, "--truncate"),
    (["count", "{bin}"], 1, "every input was skipped"),
    (["count", "https://example.invalid/x.txt"], 2, "URLs need --engine dask"),
    # compare
    (["compare", "{none}"], 2, "does not exist"),
    (["compare", "--builtin", "--kind", "poetry"], 2, "--kind"),
    (["compare", "--builtin", "--plot", "{ro}.png"], 1, "cannot write"),
    # price
    (["price", "-i", "1k"], 2, "needs a model"),
    (["price", "-m", "gpt-4o", "-i", "-5"], 2, "must not be negative"),
    (["price", "-m", "gpt-4o", "-i", "1e30"], 2, "beyond"),
    (["price", "-m", "no-such-model", "-i", "5"], 2, "unknown model 'no-such-model'"),
    # check
    (["check", "--config", "{none}"], 2, "{none}"),
    (["check", "--format", "yaml"], 2, "--format"),
    # kvmem estimate
    (["kvmem", "estimate", "-m", "llama-3.1-8b", "--context", "1e30"], 2, "beyond"),
    (["kvmem", "estimate", "-m", "llama-3.1-8b", "--kv-memory", "80G"], 2, "80GB"),
    (["kvmem", "estimate", "-m", "llama-3.1-8b", "--gpu", "h1000"], 2, "h1000"),
    (["kvmem", "estimate", "-m", "llama-3.1-8b", "--plot", "{ro}.png"], 1, "cannot write"),
    # kvmem simulate
    (["kvmem", "simulate", "--max-len", "0"], 2, "--max-len"),
    (["kvmem", "simulate", "--policy", "paged,paged"], 2, "twice"),
    (["kvmem", "simulate", "--block-size", "100000"], 2, "--block-size"),
    # kvmem quality
    (["kvmem", "quality", "--max-tokens", "5000"], 2, "context window"),
    (["kvmem", "quality", "--policy", "int3"], 2, "unknown policy 'int3'"),
    (["kvmem", "quality", "--max-tokens", "32", "--plot", "{ro}.png"], 1, "cannot write"),
    (["kvmem", "quality", "--text", "{none}"], 2, "{none}"),
    # kvmem estimate --evict
    (["kvmem", "estimate", "-m", "llama-3.1-8b", "--evict", "lru:4"], 2, "not a policy"),
    # models
    (["models", "list", "--provider", "nobody"], 2, "nobody"),
    (["models", "show", "gtp-4o"], 2, "unknown model 'gtp-4o'"),
    (["models", "validate", "{yaml}"], 1, "2 problems"),
    (["models", "validate", "{none}"], 2, "{none}"),
    (["models", "sync-prices", "--catalog", "{none}"], 2, "{none}"),
    (["models", "import", "{none}"], 2, "does not exist; give a config.json or a model folder"),
    # bpe
    (["bpe", "train", "{text}", "-v", "10", "-o", "{out}"], 2, "--vocab-size"),
    (["bpe", "train", "{text}", "-v", "300", "-o", "{ro}.bpe"], 1, "cannot write"),
    (["bpe", "encode", "{none}", "hello"], 2, "{none}"),
    (["bpe", "decode", "{model}", "999999"], 2, "999999"),
    (["bpe", "inspect", "{model}", "--top", "-1"], 2, "--top"),
    (["bpe", "export", "{model}", "-o", "{ro}.json"], 1, "cannot write"),
    (["bpe", "sweep", "{text}", "--eval", "{text}", "--vocab-sizes", "100"], 2,
     "--vocab-sizes 100"),
    (["bpe", "sweep", "{text}", "--eval", "{none}", "--vocab-sizes", "300"], 2, "{none}"),
    (["bpe", "sweep", "{text}", "--eval", "{text}", "--plot", "{ro}.png"], 1, "cannot write"),
    # generate
    (["generate", "hello", "--top-p", "1.5"], 2, "--top-p"),
    (["generate", "hello", "-m", "no-such-model"], 2, "unknown model"),
    (["generate", "hello", "--temperature", "-1"], 2, "--temperature"),
    # attention
    (["attention", "a"], 2, "needs at least 2"),
    (["attention", "hello world", "--head", "L9H0", "--plot", "{ro}.png"], 1, "cannot write"),
    (["attention", "hello world", "--head", "L9H0", "--plot", "{out}.png"], 2, "--head 'L9H0'"),
    (["attention", "--file", "{bin}"], 1, "not text"),
]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("bad")
    (root / "text.txt").write_text("the cat sat on the mat; the dog sat on the log.\n" * 30)
    (root / "blob.bin").write_bytes(b"GIF89a\x00\x01\x02")
    (root / "bad.yaml").write_text("models:\n- id: a\n  context_window: 1e30\n- id: a\n")
    result = CliRunner().invoke(app, ["bpe", "train", str(root / "text.txt"), "-v", "280",
                                      "-o", str(root / "m.bpe")])
    assert result.exit_code == 0, result.output
    return {"text": str(root / "text.txt"), "bin": str(root / "blob.bin"),
            "yaml": str(root / "bad.yaml"), "model": str(root / "m.bpe"),
            "none": str(root / "nothing-here.txt"), "ro": str(root / "no-folder" / "out"),
            "out": str(root / "fresh.bpe")}


@pytest.mark.parametrize(("args", "code", "fragment"), ROWS,
                         ids=[" ".join(r[0][:3]) for r in ROWS])
def test_bad_input_is_one_line(files: dict[str, str], args: list[str], code: int,
                               fragment: str) -> None:
    argv = [a.format(**files) for a in args]
    before = sorted(Path(files["text"]).parent.rglob("*"))
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == code, (argv, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    if args[:2] == ["models", "validate"] and code == 1:
        # the problems are the report (one per line, file:line first), then a count
        lines = result.stderr.strip().splitlines()[-1:]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    assert fragment.format(**files) in lines[0], lines[0]
    assert sorted(Path(files["text"]).parent.rglob("*")) == before  # nothing written


def _leaves() -> set[str]:
    names: set[str] = set()

    def walk(command: object, path: str) -> None:
        subs = subcommands(command)
        if subs:
            for name, sub in subs.items():
                walk(sub, f"{path} {name}")
        else:
            names.add(path)

    for name in COMMANDS:
        walk(_load_command(name), name)
    return names


def test_every_command_has_a_bad_input_row() -> None:
    covered = {" ".join(args[:2]) if " ".join(args[:2]) in _leaves() else args[0]
               for args, _, _ in ROWS}
    assert _leaves() - covered == set()
