"""TRANSITIONAL: the regex rewriting of API names into flags, for the library messages
and notes not yet written with placeholders (``tokcost.errors.arg``). Each package
converts its messages as it is redesigned; this module goes when none is left.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tokcost.cli.base import _flag


def to_flags(message: str, param: str | None, params: Sequence[Any]) -> str:
    """Rewrite the API's name of ``param`` in ``message`` as the command's flag.

    ``name=True`` -> ``--flag``; ``name=False`` -> ``--no-flag`` (or ``no --flag``);
    ``name=VALUE`` -> ``--flag VALUE``. A message that names the parameter in that
    ``name=`` form keeps its other words as they are ("pass batch=True, or drop the
    batch discount"); one that does not has each bare ``name`` rewritten.
    """
    if param is None:
        return message
    match = next((p for p in params if p.name == param), None)
    if match is None:
        return message
    flag, negative = _flag(match)
    name = re.escape(param)
    assigned = rf"(?<![\w.-]){name}="
    if re.search(assigned, message):
        message = re.sub(rf"{assigned}True\b", flag, message)
        message = re.sub(rf"{assigned}False\b", negative or f"no {flag}", message)
        return re.sub(assigned, f"{flag} ", message)
    # Quoted text is what the user typed (a value, a path): never rewritten.
    parts = re.split(r"('[^']*')", message)
    bare = re.compile(rf"(?<![\w./-]){name}(?![\w/-])")
    return "".join(p if p.startswith("'") else bare.sub(flag, p) for p in parts)


def in_cli_words(text: str, params: Sequence[str]) -> str:
    """A library note (not an error) as the running command's user reads it: each of
    ``params`` that the note names becomes that command's flag.

    The running command is found through Click's current context; outside one (a
    library caller rendering the same note), the text is left as it is.
    """
    import typer.main  # typer 0.26+ vendors Click; its current-context lookup lives here

    try:
        command_params = typer.main.get_current_context().command.params  # type: ignore[attr-defined]
    except RuntimeError:
        return text
    for name in params:
        text = to_flags(text, name, command_params)
    return text
