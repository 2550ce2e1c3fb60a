"""Walking the command tree as Click does: a group's subcommands through ``list_commands`` and
``get_command``, since groups build theirs lazily (``cli/base.Group.pending``). Reading a group's
``commands`` dict sees only the ones some earlier test happened to build."""

from __future__ import annotations

from typing import Any


def subcommands(command: Any) -> dict[str, Any]:
    """``{name: command}`` of a group (empty for a leaf command)."""
    if not hasattr(command, "list_commands"):  # Typer carries its own Click: no isinstance
        return {}
    return {name: command.get_command(None, name) for name in command.list_commands(None)}
