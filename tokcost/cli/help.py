"""``--help`` from Click's help records: unlike typer's, it never cuts a long flag
(``--max-num-batched-…``) and lists a group's commands without importing them."""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence
from typing import Any

#: A flag's spellings share a line while they fit in this many characters.
_SPELLINGS_WIDTH = 26


def render_help(ctx: Any, commands: Sequence[tuple[str, str]] = ()) -> str:
    """The help of ``ctx.command`` as text (styled when stdout is a terminal)."""
    from rich.console import Console, Group
    from rich.padding import Padding
    from rich.panel import Panel
    from rich.text import Text
    command = ctx.command
    usage = " ".join([ctx.command_path, *command.collect_usage_pieces(ctx)])
    parts: list[Any] = [Text(f"Usage: {usage}", style="bold")]
    if command.help:
        parts += [Text(""), _plain(command.help)]
    records = [(p, p.get_help_record(ctx)) for p in command.get_params(ctx)]
    arguments = [(p, r) for p, r in records if r and p.param_type_name == "argument"]
    options = [(p, r) for p, r in records if r and p.param_type_name == "option"]
    for title, rows in (("Arguments", arguments), ("Options", options)):
        if rows:
            cells = [(_spellings(record[0]), _help(p, record[1])) for p, record in rows]
            parts += [Text(""), _panel(title, cells)]
    if commands:
        parts += [Text(""), _panel("Commands", [(name, Text(text)) for name, text in commands])]
    if command.epilog:
        parts += [Text(""), Text(command.epilog.replace("\b\n", "").strip("\n"))]
    buffer = io.StringIO()
    console = Console(file=buffer, width=_width(), highlight=False, soft_wrap=False,
                      force_terminal=_stdout_is_terminal(), no_color="NO_COLOR" in os.environ)
    # Text sits one column in from the panels' edges, as in typer's help.
    console.print(Group(*(p if isinstance(p, Panel) else Padding(p, (0, 1)) for p in parts)))
    return "".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines())


def _panel(title: str, rows: list[tuple[str, Any]]) -> Any:
    from rich.panel import Panel
    from rich.table import Table
    table = Table(box=None, show_header=False, pad_edge=False, expand=True, padding=(0, 2, 0, 0))
    table.add_column(no_wrap=True, style="bold cyan")
    table.add_column(ratio=1, overflow="fold")
    for spellings, text in rows:
        table.add_row(spellings, text)
    return Panel(table, title=title, title_align="left", border_style="dim")


def _spellings(opts: str) -> str:
    """Click's ``--a / --no-a, --disable-a`` as lines that fit the column, ``--no-`` apart."""
    lines: list[str] = []
    for group in opts.split(" / "):
        line = ""
        for word in group.split(", "):
            joined = f"{line}, {word}" if line else word
            if line and len(joined) > _SPELLINGS_WIDTH:
                lines.append(line + ",")
                line = word
            else:
                line = joined
        lines.append(line)
    return "\n".join(lines)


def _help(param: Any, text: str) -> Any:
    if getattr(param, "multiple", False) and "repeatable" not in text:
        first, sep, rest = text.partition("  [")
        text = f"{first.rstrip('.')} (repeatable).{sep}{rest}" if first else "(repeatable)"
    return _plain(text)


def _plain(text: str) -> Any:
    """Help text as written, unescaping typer's Rich markup (``tokcost\\[plot]``)."""
    from rich.text import Text
    return Text(text.replace("\\[", "[").replace("\b\n", ""))


def root_key() -> str:
    """What the root help's text depends on in this terminal: its width and its styling."""
    return f"{_width()}-{_stdout_is_terminal():d}{'NO_COLOR' in os.environ:d}"


def _width() -> int:
    try:
        return int(os.environ.get("COLUMNS", "")) or os.get_terminal_size().columns
    except (ValueError, OSError):
        return 80


def _stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False
