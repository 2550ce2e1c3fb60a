"""Every command's examples read well at 80 columns (also piped, which renders at 80):
no example line wraps, each description sits on its own line under its command, and
one blank line follows "Examples:"."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from tokcost.cli.app import app

runner = CliRunner()

COMMANDS = [
    ["count"], ["compare"], ["price"], ["check"], ["generate"], ["attention"],
    ["kvmem", "estimate"], ["kvmem", "quality"], ["kvmem", "simulate"],
    ["bpe", "train"],
    ["models", "list"], ["models", "show"], ["models", "validate"], ["models", "sync-prices"],
    ["models", "import"],
]


def _help(command: list[str], columns: int) -> list[str]:
    result = runner.invoke(app, [*command, "--help"], env={"COLUMNS": str(columns)})
    assert result.exit_code == 0, result.output
    assert "\b" not in result.stdout  # click's no-rewrap mark printed as a blank-looking line
    return [line.rstrip() for line in result.stdout.splitlines()]


def _examples(lines: list[str]) -> list[str]:
    """The "Examples:" line and the lines under it, up to the next panel or the next
    paragraph at the margin (bpe train's examples, in its docstring, are at the margin:
    up to the panel)."""
    start = next(i for i, line in enumerate(lines) if line.strip() == "Examples:")
    first = next(line for line in lines[start + 1:] if line.strip())
    indented = first.startswith("   ")
    block: list[str] = []
    for line in lines[start + 1:]:
        if line.startswith("╭") or (indented and line.strip() and not line.startswith("   ")):
            break
        block.append(line)
    while block and not block[-1].strip():
        block.pop()
    return [lines[start], *block]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_examples_do_not_wrap_at_80_columns(command: list[str]) -> None:
    wide = _help(command, 200)
    narrow = _help(command, 80)
    examples = [line for line in _examples(wide)[1:] if line.strip()]
    assert examples, "no examples"
    for line in examples:
        assert len(line) <= 80 and line in narrow, f"wraps at 80 columns: {line.strip()!r}"
    # Indented prose under a heading (a legend, the exit codes) does not wrap either.
    for line in wide[wide.index(_examples(wide)[-1]) + 1:]:
        if line.startswith("   ") and not line.lstrip().startswith(("│", "╰", "╭")):
            assert line in narrow, f"wraps at 80 columns: {line.strip()!r}"


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_one_blank_line_after_the_examples_heading(command: list[str]) -> None:
    lines = _examples(_help(command, 80))
    assert lines[1] == "" and lines[2].strip(), lines[:3]


@pytest.mark.parametrize("command", [c for c in COMMANDS if c != ["bpe", "train"]],
                         ids=" ".join)
def test_a_description_sits_under_its_command(command: list[str]) -> None:
    """Commands at two spaces, a continued command at four, its description at six:
    no description column to align (it was misaligned even at 200 columns)."""
    for line in _examples(_help(command, 200))[1:]:
        if line.strip():
            indent = len(line) - len(line.lstrip()) - 1  # help text has one column of margin
            assert indent in (2, 4, 6), line
            assert "   " not in line.strip() or indent == 6, f"two columns in {line!r}"
