"""One grammar for flags: a short flag means one thing in every command, and a long
flag is a switch everywhere or takes a value everywhere (docs/grammar.md, "Flags")."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

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
        for name, sub in (getattr(command, "commands", None) or {}).items():
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
