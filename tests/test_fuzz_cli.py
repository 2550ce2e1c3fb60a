"""Random arguments and random files into every command: never a traceback.

For each command and subcommand, hypothesis builds argument lists from that
command's own options (each given a value drawn from numbers, words, sizes, model
and tokenizer names, and paths to random files) and checks what a user would see:
the exit code is 0, 1 or 2, an error is one ``error:`` line on stderr, no Python
exception escapes, and no half-written file (``.*.tmp``) is left behind.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tokcost.cli.app import COMMANDS, _load_command, app

# Options whose values start servers, reach the network or run without bound; the
# fuzz leaves them at their defaults (they have their own tests).
SKIP_OPTIONS = {"--scheduler", "--engine", "--workers", "--help", "--install-completion",
                "--show-completion", "--version", "--requests", "--max-tokens", "--vocab-size",
                "--timeout", "--n", "--write", "--context", "--max-new-tokens", "--rate"}

WORDS = ["-1", "0", "1", "3", "1.5", "x", "", "nan", "1e30", "8k", "80GB", "1B",
         "o200k_base", "o200k", "cl100k_base", "llama-3.1-8b", "gpt-4o", "h100", "paged",
         "tiny-ref", "$0.05", "80%", "{file}", "{binary}", "{missing}", "{folder}", "-"]

CONTENTS = st.one_of(
    st.text(max_size=200).map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.binary(max_size=200),
    st.sampled_from([b"", b"models:\n- id: x\n", b"\x00\x01\x02", b"\xff\xfe bad utf-8 \xc3",
                     b"{\"a\": 1}", b"[budgets]\nx = 1\n"]),
)


def _leaf_commands() -> list[tuple[list[str], Any]]:
    leaves: list[tuple[list[str], Any]] = []

    def walk(command: Any, path: list[str]) -> None:
        if hasattr(command, "list_commands"):  # a group: its commands are built when named
            for name in command.list_commands(None):
                walk(command.get_command(None, name), [*path, name])
        else:
            leaves.append((path, command))

    for name in COMMANDS:
        walk(_load_command(name), [name])
    return leaves


LEAVES = _leaf_commands()


def _options(command: Any) -> list[tuple[str, bool]]:
    found = []
    for param in command.params:
        opts = [o for o in getattr(param, "opts", ()) if o.startswith("--")]
        if param.param_type_name == "option" and opts and opts[0] not in SKIP_OPTIONS:
            found.append((opts[0], bool(param.is_flag)))
    return found


# Arguments a command always gets, to keep each example short: kvmem quality evaluates
# the first 24 tokens (the default is 512, nine teacher-forced passes), simulate serves 50
# requests (the default is 1,000 under each policy).
FIXED = {("kvmem", "quality"): ["--max-tokens", "24"], ("kvmem", "simulate"): ["--requests", "50"]}

# Values that get past parsing, so the fuzz reaches the commands' own checks.
GOOD = {"--model": ["llama-3.1-8b", "gpt-4o", "tiny-ref", "qwen2.5-7b"],
        "--tokenizer": ["o200k_base", "cl100k_base", "{bpe}"], "--gpu": ["h100", "a100-80gb"]}


@st.composite
def _argv(draw: st.DrawFn, command: Any, path: tuple[str, ...] = ()) -> list[str]:
    argv: list[str] = []
    for param in command.params:
        opts = [o for o in getattr(param, "opts", ()) if o.startswith("--")]
        if param.param_type_name == "option" and param.required and opts:
            argv += [opts[0], draw(st.sampled_from(GOOD.get(opts[0], WORDS)))]
    options = _options(command)
    for _ in range(draw(st.integers(0, 4))):
        if not options:
            break
        flag, is_flag = draw(st.sampled_from(options))
        argv.append(flag)
        if not is_flag:
            argv.append(draw(st.sampled_from(GOOD.get(flag, []) + WORDS)))
    if any(p.param_type_name == "argument" for p in command.params):
        argv += draw(st.lists(st.sampled_from(["{file}", "{folder}", "{bpe}", *WORDS]),
                              max_size=2))
    argv = draw(st.permutations(argv)) if len(argv) < 3 else argv
    return [*FIXED.get(path, []), *argv]


@pytest.mark.parametrize(("path", "command"), LEAVES, ids=[" ".join(p) for p, _ in LEAVES])
@settings(max_examples=20, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), content=CONTENTS, binary=st.binary(min_size=1, max_size=64))
def test_random_arguments_never_crash(tmp_path_factory: pytest.TempPathFactory,
                                      path: list[str], command: Any, data: st.DataObject,
                                      content: bytes, binary: bytes, bpe_model: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path_factory.mktemp("fuzz")
    folder = root / "folder"
    folder.mkdir()
    (folder / "note.txt").write_bytes(content)
    (root / "input.txt").write_bytes(content)
    (root / "blob.bin").write_bytes(b"\x00" + binary)
    names = {"file": str(root / "input.txt"), "binary": str(root / "blob.bin"),
             "missing": str(root / "missing" / "x.txt"), "folder": str(folder),
             "bpe": str(bpe_model)}
    argv = [a.format(**names) if "{" in a and "}" in a and "$" not in a else a
            for a in data.draw(_argv(command, tuple(path)))]
    monkeypatch.chdir(root)
    result = CliRunner().invoke(app, [*path, *argv], input=content.decode("utf-8", "replace"))
    where = f"tokcost {' '.join(path + argv)}"
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"{where} raised {result.exception!r}") from result.exception
    assert result.exit_code in (0, 1, 2), f"{where} -> {result.exit_code}"
    assert "Traceback" not in result.output, where
    if path == ["models", "validate"] and result.exit_code == 1:
        # the problems are validate's report: one per line and their number, or JSON
        if "--json" in argv:
            assert json.loads(result.stdout)["problems"], where
        else:
            assert result.stderr.rstrip().endswith(("problem", "problems")), where
    elif result.exit_code != 0:
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, f"{where}: {result.stderr!r}"
    leftovers = [p for p in Path(root).rglob(".*.tmp")]
    assert not leftovers, f"{where} left {leftovers}"
