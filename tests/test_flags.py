"""One grammar for flags: a short flag means one thing in every command, and a long
flag is a switch everywhere or takes a value everywhere (docs/grammar.md, "Flags")."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from cli_tree import subcommands

from tokcost.cli.app import COMMANDS, _load_command

# The table of short flags (docs/grammar.md): short -> the long flag it abbreviates.
SHORT_FLAGS = {
    "-h": "--help", "-t": "--tokenizer", "-m": "--model", "-j": "--jobs", "-o": "--output",
    "-c": "--config", "-f": "--format", "-b": "--batch", "-i": "--input-tokens",
    "-k": "--kind", "-s": "--special", "-T": "--temperature", "-p": "--provider",
    "-v": "--vocab-size", "-q": "--quiet",
}


def _options() -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []

    def walk(command: Any, path: str) -> None:
        for name, sub in subcommands(command).items():
            walk(sub, f"{path} {name}")
        found.extend((path, p) for p in command.params if p.param_type_name == "option")

    for name in COMMANDS:
        walk(_load_command(name), f"tokcost {name}")
    return found


def test_each_short_flag_means_one_thing() -> None:
    meanings: dict[str, set[str]] = defaultdict(set)
    for _, param in _options():
        longs = [o for o in param.opts if o.startswith("--")]
        for short in (o for o in param.opts if len(o) == 2):
            meanings[short].add(longs[0])
    assert {s: m for s, m in meanings.items() if len(m) > 1} == {}
    used = {s: next(iter(m)) for s, m in meanings.items()}
    assert used == {s: long for s, long in SHORT_FLAGS.items() if s in used}, \
        "a short flag the table of docs/grammar.md does not list"


def test_a_long_flag_is_a_switch_everywhere_or_nowhere() -> None:
    kinds: dict[str, set[str]] = defaultdict(set)
    for _, param in _options():
        for long in (o for o in param.opts if o.startswith("--")):
            kinds[long].add("switch" if param.is_flag else "value")
    assert {flag: k for flag, k in kinds.items() if len(k) > 1} == {}


# --- a single-valued option given twice ---------------------------------------------------


def _value_options() -> list[tuple[str, Any]]:
    """Every option that takes one value, in every command (not --help, not flags)."""
    return [(path, p) for path, p in _options()
            if not p.is_flag and not p.multiple and not p.count and p.nargs == 1]


def test_every_single_valued_option_given_twice_is_a_usage_error() -> None:
    """Click keeps the last value; tokcost refuses, naming both (issue 25 part 6). Parsed
    by each command itself, so this covers every option of every command."""
    import typer

    from tokcost.cli.base import Command

    checked = 0
    for path, param in _value_options():
        command = _find(path)
        assert isinstance(command, Command), path  # every command gets the refusal
        flag = param.opts[0]
        ctx = typer.Context(command, info_name=path)
        try:
            command.parse_args(ctx, [flag, "first-value", flag, "second-value"])
        except Exception as exc:  # typer's vendored click.UsageError
            message = exc.format_message()  # type: ignore[attr-defined]
            assert type(exc).__name__ == "UsageError", (path, flag, message)
            assert f"{flag} given twice ('first-value' and 'second-value')" in message
            checked += 1
        else:
            raise AssertionError(f"{path} {flag} given twice was accepted")
    assert checked > 100  # every command's options, not a handful


def test_contradicting_switches_are_a_usage_error_and_a_repeated_one_is_not() -> None:
    from typer.testing import CliRunner

    from tokcost.cli.app import app

    runner = CliRunner()
    both = ["kvmem", "estimate", "-m", "llama-3.1-8b", "--hybrid-manager", "--no-hybrid-manager"]
    result = runner.invoke(app, both)
    assert result.exit_code == 2
    assert "--hybrid-manager and --no-hybrid-manager contradict each other" in result.stderr
    twice = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--json", "--json"])
    assert twice.exit_code == 0, twice.output


def test_options_that_repeat_say_so_in_help() -> None:
    import typer

    from tokcost.cli.help import _help

    repeating = [(path, p) for path, p in _options() if p.multiple]
    assert len(repeating) > 10
    for path, param in repeating:
        record = param.get_help_record(typer.Context(_find(path)))
        assert "repeatable" in _help(param, record[1]).plain, (path, param.opts)


def _find(path: str) -> Any:
    words = path.split()[1:]
    command = _load_command(words[0])
    for word in words[1:]:
        command = command.get_command(None, word)  # groups build their commands lazily
    return command
