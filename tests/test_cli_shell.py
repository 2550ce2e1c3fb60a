"""How tokcost behaves in a shell: usage errors, pipes, piped tables, JSON errors, completion.

These run the real console scripts in subprocesses where the behaviour lives in the
process (SIGPIPE, environment-driven completion), and CliRunner elsewhere.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tokcost.cli.app import app

runner = CliRunner()


def _run(*args: str, env: dict[str, str] | None = None, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tokcost", *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=120, **kw)  # type: ignore[call-overload]


# (arguments, expected exit code, fragment of the one line on stderr)
USAGE_ROWS = [
    (["cuont"], 2, "no such command 'cuont' (did you mean count?); see 'tokcost -h'"),
    (["kvmem", "estmate"], 2, "(did you mean estimate"),
    (["bpe", "trian"], 2, "(did you mean train?); see 'tokcost bpe -h'"),
    (["models", "lst"], 2, "(did you mean list?)"),
    (["count", "--jsn"], 2, "no such option: --jsn (did you mean "),
    (["count", "-t"], 2, "option '-t' requires an argument; see 'tokcost count -h'"),
    (["generate"], 2, "missing argument 'PROMPT'; see 'tokcost generate -h'"),
    (["generate", "x", "--seed", "abc"], 2, "invalid value for '--seed': 'abc'"),
    (["kvmem", "estimate", "-m", "llama-3.1-8b", "--batch", "many"], 2, "--batch 'many' is not"),
    (["price", "--bogus"], 2, "no such option: --bogus"),
]


@pytest.mark.parametrize(("args", "code", "fragment"), USAGE_ROWS)
def test_usage_errors_are_one_line(args: list[str], code: int, fragment: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == code, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: ")
    assert fragment in lines[0]
    assert "Traceback" not in result.output and "╭" not in result.output


def test_usage_error_in_json_mode_gives_a_json_object() -> None:
    proc = _run("kvmem", "estimate", "-m", "llama-3.1-8b", "--batch", "x", "--json")
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    assert doc["error"]["exit_code"] == 2 and "--batch" in doc["error"]["message"]
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: ")


def test_library_error_in_json_mode_gives_a_json_object() -> None:
    proc = _run("kvmem", "estimate", "-m", "no-such-model", "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 2 == doc["error"]["exit_code"]
    assert doc["error"]["type"] == "ModelNotFound"
    assert "unknown model 'no-such-model'" in doc["error"]["message"]
    # the same line a person sees on stderr
    assert proc.stderr.strip() == f"error: {doc['error']['message']}"


def test_error_without_json_leaves_stdout_empty() -> None:
    proc = _run("kvmem", "estimate", "-m", "no-such-model")
    assert proc.returncode == 2 and proc.stdout == ""


@pytest.mark.skipif(not hasattr(signal, "SIGPIPE"), reason="no SIGPIPE on this platform")
@pytest.mark.parametrize("script", ["tokcost", "tokcount"])
def test_a_closed_pipe_ends_the_process_like_cat(tmp_path: Path, script: str) -> None:
    # More CSV than a pipe buffers (64 KiB), so the writer is still writing when the
    # reader leaves: 1,500 rows of about 100 bytes.
    for i in range(1500):
        (tmp_path / f"{'a-rather-long-file-name-' * 3}{i:04}.txt").write_text(f"hello {i}\n")
    entry = "main" if script == "tokcost" else "count_main"
    command = [sys.executable, "-c", f"import sys; from tokcost.cli.app import {entry}; "
               f"sys.argv[0] = '{script}'; {entry}()"]
    args = ["count"] if script == "tokcost" else []
    proc = subprocess.Popen([*command, *args, str(tmp_path), "--csv"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # what `| head -1` does
    stderr = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert first.startswith(b"path,bytes,chars")
    assert proc.returncode == -signal.SIGPIPE  # the shell shows 141
    assert stderr == ""


@pytest.mark.skipif(not hasattr(signal, "SIGPIPE"), reason="no SIGPIPE on this platform")
@pytest.mark.parametrize("args", [["models", "list"], ["kvmem", "simulate", "--requests", "20"]])
def test_a_reader_gone_before_a_rich_table_is_sigpipe_too(args: list[str]) -> None:
    # `tokcost models list | true`: rich catches the broken pipe itself and would exit 1
    proc = subprocess.Popen([sys.executable, "-m", "tokcost", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    proc.wait(timeout=120)
    assert proc.returncode == -signal.SIGPIPE, stderr
    assert "error" not in stderr and "Traceback" not in stderr


FULL = Path("/dev/full")


@pytest.mark.skipif(not FULL.exists(), reason="no /dev/full on this platform")
@pytest.mark.parametrize("args", [["count", "README.md"], ["kvmem", "estimate", "-m",
                                                             "llama-3.1-8b", "--json"],
                                  ["models", "list"], ["count", "--help"], ["--help"], ["-h"]],
                         ids=" ".join)
def test_a_full_disk_on_stdout_is_one_error_line(args: list[str]) -> None:
    """`tokcount README.md > /dev/full` ended in an OSError traceback (issue 25)."""
    root = Path(__file__).resolve().parent.parent
    with FULL.open("w") as full:
        proc = subprocess.run([sys.executable, "-m", "tokcost", *args], stdout=full,
                              stderr=subprocess.PIPE, text=True, cwd=root, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr == "error: cannot write to standard output: No space left on device\n"


@pytest.mark.parametrize("args", [["count", "README.md"], ["kvmem", "estimate", "-m",
                                                             "llama-3.1-8b", "--json"],
                                  ["--help"], ["-h"]], ids=" ".join)
def test_a_closed_stdout_is_one_error_line(args: list[str]) -> None:
    """`tokcount README.md >&-` exited 0 with its output lost; `--json >&-` raised an
    AttributeError (issue 25)."""
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-m", "tokcost", *args], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, cwd=root, timeout=120,
                          preexec_fn=lambda: os.close(1))
    assert proc.returncode == 1
    assert proc.stderr == "error: cannot write to standard output: it is closed\n"


def test_the_root_help_is_printed_from_its_cache_as_rendered(tmp_path: Path) -> None:
    """`tokcost --help` prints the help rendered last time for this width without loading
    Typer; the text is the same, and an entry changed on disk is rendered again."""
    env = {**os.environ, "TOKCOST_CACHE_DIR": str(tmp_path), "COLUMNS": "93"}
    first = subprocess.run([sys.executable, "-m", "tokcost", "--help"], env=env,
                           capture_output=True, text=True, timeout=120)
    (entry,) = tmp_path.glob("help-93-*.txt")
    second = subprocess.run([sys.executable, "-m", "tokcost", "-h"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert first.returncode == second.returncode == 0 and first.stderr == second.stderr == ""
    assert second.stdout == first.stdout and "Usage: tokcost" in first.stdout
    typer_path = subprocess.run(  # the CLI itself, which never reads the cache
        [sys.executable, "-c", "import sys; from tokcost.cli.app import main; sys.argv[0] = "
         "'tokcost'; main()", "--help"], env=env, capture_output=True, text=True, timeout=120)
    assert typer_path.stdout == first.stdout
    entry.write_bytes(entry.read_bytes().replace(b"Usage", b"Usagf"))  # checksum now fails
    third = subprocess.run([sys.executable, "-m", "tokcost", "-h"], env=env,
                           capture_output=True, text=True, timeout=120)
    assert (third.stdout, third.stderr) == (first.stdout, "")


def test_no_arguments_prints_the_help() -> None:
    proc = _run()
    assert proc.returncode == 2 and "Usage: tokcost" in proc.stdout + proc.stderr
    assert "count" in proc.stdout + proc.stderr and "error:" not in proc.stderr


@pytest.mark.parametrize("flags", [["--json"], ["--format", "json"], ["-f", "JSON"], ["-fjson"],
                                   ["--format=json"]])
def test_every_spelling_of_json_gets_a_json_usage_error(flags: list[str]) -> None:
    proc = _run("check", *flags, "--bogus")
    assert proc.returncode == 2 and json.loads(proc.stdout)["error"]["exit_code"] == 2


def test_piped_tables_print_at_full_width() -> None:
    # rich assumes 80 columns for a pipe; the simulate table is wider and used to
    # come out as "poli… toke… rese…"
    proc = _run("kvmem", "simulate", "--requests", "40", env={"COLUMNS": "40"})
    assert proc.returncode == 0, proc.stderr
    assert "…" not in proc.stdout
    header = next(line for line in proc.stdout.splitlines() if "policy" in line)
    assert {"tokens", "reserved", "preempt"} <= set(header.split())


COMPLETIONS = [
    ("bash", {"COMP_WORDS": "tokcost co", "COMP_CWORD": "1"}, ["count", "compare"]),
    ("bash", {"COMP_WORDS": "tokcost kvmem es", "COMP_CWORD": "2"}, ["estimate"]),
    ("zsh", {"_TYPER_COMPLETE_ARGS": "tokcost count --js"}, ["--json"]),
    ("fish", {"_TYPER_COMPLETE_ARGS": "tokcost bpe ", "_TYPER_COMPLETE_FISH_ACTION": "get-args"},
     ["train", "encode", "decode", "inspect", "export"]),
]


@pytest.mark.parametrize(("shell", "env", "expected"), COMPLETIONS)
def test_completion_protocol(shell: str, env: dict[str, str], expected: list[str]) -> None:
    proc = _run(env={"_TOKCOST_COMPLETE": f"complete_{shell}", **env})
    assert proc.returncode == 0, proc.stderr
    for word in expected:
        assert word in proc.stdout, proc.stdout
    assert "not supported" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(shell: str) -> None:
    proc = _run(env={"_TOKCOST_COMPLETE": f"source_{shell}"})
    assert proc.returncode == 0 and "_TOKCOST_COMPLETE=complete_" in proc.stdout


def test_completion_is_offered_at_the_root_only() -> None:
    root = runner.invoke(app, ["--help"]).output
    assert "--install-completion" in root and "--show-completion" in root
    for sub in (["count"], ["kvmem", "estimate"], ["bpe", "train"], ["models", "list"]):
        assert "--install-completion" not in runner.invoke(app, [*sub, "--help"]).output


def test_help_paragraphs_fill_the_terminal_width() -> None:
    # typer keeps a docstring's line breaks; tokcost joins a paragraph's lines, so a
    # narrow terminal does not break "as du" / "counts it" where the source did.
    wide = runner.invoke(app, ["count", "--help"], env={"COLUMNS": "200"}).output
    assert "counted once, as du counts it; a symlink, FIFO, socket or" in wide
    narrow = runner.invoke(app, ["compare", "--help"], env={"COLUMNS": "80"}).output
    lines = [line.strip() for line in narrow.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith("For every text"))
    paragraph = lines[start:lines.index("", start)]
    assert len(paragraph) > 1 and all(len(line) > 60 for line in paragraph[:-1]), paragraph


def test_reflow_keeps_indented_and_marked_paragraphs() -> None:
    from types import SimpleNamespace

    from tokcost.cli.app import reflow_help

    leaf = SimpleNamespace(help="First line.\n\nOne\nparagraph.\n\n\bkept\nas is\n\n"
                                "Example:\n  tokcost count .\n  tokcount x")
    group = SimpleNamespace(help=None, commands={"leaf": leaf})
    reflow_help(group)
    assert leaf.help == ("First line.\n\nOne paragraph.\n\n\bkept\nas is\n\n"
                         "Example:\n  tokcost count .\n  tokcount x")
