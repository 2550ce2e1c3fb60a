"""Library errors in the CLI's words: the parameter an error names becomes its flag.

The library speaks its API (``tp=3 does not divide kv_heads=8``, ``pass
allow_special=True``) and says which parameter is at fault (``exc.param``). Here,
through the failing command's own Click parameter list, that name becomes the flag
the user typed (``--tp 3 does not divide kv_heads=8``, ``pass --allow-special``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tokcost.errors import GpuNotFound, ModelNotFound, TokcostError

# Hints only a CLI can give: the command that lists what the user can choose from.
_LIST_HINTS: tuple[tuple[type[TokcostError], str], ...] = (
    (ModelNotFound, "`tokcost models list` shows the ids"),
    (GpuNotFound, "`tokcost models list --gpus` lists them"),
)


def tag_errors(command: Any) -> None:
    """Make every leaf command record its parameters on a TokcostError it raises."""
    subcommands = getattr(command, "commands", None)
    if subcommands is not None:
        for sub in subcommands.values():
            tag_errors(sub)
        return
    original = command.invoke

    def invoke(ctx: Any) -> Any:
        try:
            return original(ctx)
        except TokcostError as exc:
            if not hasattr(exc, "cli_params"):
                exc.cli_params = list(ctx.command.params)  # type: ignore[attr-defined]
                # a command run with --json answers with a JSON error object too
                exc.cli_json = json_requested(ctx)  # type: ignore[attr-defined]
            raise

    command.invoke = invoke


def json_requested(ctx: Any) -> bool:
    """Whether the running command was asked for JSON (``--json`` or ``--format json``)."""
    for param in ctx.command.params:
        value = ctx.params.get(param.name)
        if "--json" in getattr(param, "opts", ()) and value:
            return True
        chosen = str(getattr(value, "value", value))  # an Enum choice or a plain string
        if "--format" in getattr(param, "opts", ()) and chosen == "json":
            return True
    return False


def _flag(param: Any) -> tuple[str, str | None]:
    """The flag a user types for a Click parameter, and its --no- form if it has one."""
    if param.param_type_name == "argument":  # Click's Argument (typer vendors Click)
        # "IDS..." in usage; in a sentence, the name alone ("(IDS run 0..N)")
        return str(param.human_readable_name).removesuffix("..."), None
    longs = [o for o in param.opts if o.startswith("--")] or list(param.opts)
    negative = next((o for o in getattr(param, "secondary_opts", []) if o.startswith("--")),
                    None)
    return longs[0], negative


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


def render_error(exc: TokcostError) -> str:
    """The one line the user sees for ``exc`` (without the ``error:`` prefix)."""
    params = getattr(exc, "cli_params", ())
    message = str(exc)
    for name in (exc.param, *exc.related):
        message = to_flags(message, name, params)
    for kind, hint in _LIST_HINTS:
        if isinstance(exc, kind) and hint not in message:
            message += f"; {hint}"
    return message


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


def usage_line(exc: Any, command_path: str) -> str:
    """A Click usage error as one line: the problem, a "did you mean" where one fits,
    and where to look (``see 'tokcost count -h'``).

    Click words an unknown option as "No such option: --jsn (Possible options:
    --json)" and an unknown command without any suggestion; both become
    "... (did you mean --json?)".
    """
    import difflib

    message = " ".join(exc.format_message().split()).rstrip(".")
    possible = re.search(r"\s*\(Possible options: ([^)]*)\)", message)
    if possible:
        options = possible.group(1).split(", ")
        typed = getattr(exc, "option_name", None) or ""
        # closest first: "--jsn" is nearer "--json" than "--csv"
        options.sort(key=lambda o: -difflib.SequenceMatcher(None, typed, o).ratio())
        message = message.replace(possible.group(0), "")
        message += f" (did you mean {' or '.join(options[:3])}?)"
    suggested = re.search(r"\.? Did you mean (.+)\?$", message)
    if suggested:
        names = [n.strip(" '") for n in suggested.group(1).split(",")]
        message = message[:suggested.start()] + f" (did you mean {' or '.join(names)}?)"
    ctx = getattr(exc, "ctx", None)
    unknown = re.match(r"No such command '([^']*)'", message)
    if unknown and not suggested and ctx is not None and hasattr(ctx.command, "list_commands"):
        close = difflib.get_close_matches(unknown.group(1), ctx.command.list_commands(ctx), n=2)
        if close:
            message += f" (did you mean {' or '.join(close)}?)"
    # Click's context can be a parent's (an option's missing value is raised while the
    # subcommand parses): the longer of the two paths names the command that failed.
    path = max((ctx.command_path if ctx is not None else "", command_path), key=len)
    message += f"; see '{path} -h'"
    return message[:1].lower() + message[1:]
