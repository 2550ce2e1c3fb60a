"""The ``tokcost`` application: command registration and the one error handler."""

from __future__ import annotations

import copy
import errno
import functools
import importlib
import inspect
import itertools
import os
import sys
import warnings
from typing import Any

import typer

from tokcost.cli.base import (
    App,
    Group,
    StdoutFailed,
    die_of_sigpipe,
    finish_stdout,
    guard_stdout,
    report,
    usage_line,
)
from tokcost.cli.console import err, warn
from tokcost.cli.options import VersionOpt
from tokcost.errors import TokcostWarning


class TokcostGroup(Group):
    """The root: loads commands lazily and lists them from ``COMMANDS``."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in COMMANDS:
            return _load_command(cmd_name)
        return super().get_command(ctx, cmd_name)

    def command_rows(self, ctx: Any) -> list[tuple[str, str]]:
        # from the table: listing them must not import every command
        return [(name, text) for name, (_, text) in COMMANDS.items()]

    def main(self, args: Any = None, prog_name: str | None = None,  # type: ignore[override]
             complete_var: str | None = None, standalone_mode: bool = True,
             **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        run_command(super().main, args, prog_name=prog_name or "tokcost")
        return None


def _show_warning(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
    """The library's TokcostWarning as one ``warning:`` line, others as Python shows them."""
    if issubclass(category, TokcostWarning):
        warn(str(message))
    else:
        warnings._showwarning_orig(message, category, *args, **kwargs)  # type: ignore[attr-defined]


def run_command(main: Any, args: Any, *, prog_name: str) -> None:
    """Run a click ``main``: a usage error is one ``error:`` line (Click's standalone mode
    prints a block), and ``| head`` ends the process by SIGPIPE as it ends ``cat``."""
    argv = list(sys.argv[1:] if args is None else args)
    guard_stdout()
    warnings.showwarning = _show_warning
    try:
        result = main(args=argv, prog_name=prog_name, standalone_mode=False)
    except typer.TyperException as exc:  # typer's vendored click.ClickException family
        if os.environ.get("TOKCOST_DEBUG") or not hasattr(exc, "format_message"):
            raise
        if type(exc).__name__ == "NoArgsIsHelpError":
            # The help is the message (plain groups); a Rich group has printed its own.
            if exc.format_message().strip():
                exc.show()  # type: ignore[attr-defined]
            finish_stdout()
            sys.exit(exc.exit_code)
        code = int(getattr(exc, "exit_code", 2))
        line = usage_line(exc, _command_path(main, prog_name, argv))
        report(line, code, wants_json=_wants_json(argv), kind="UsageError")
        finish_stdout()
        sys.exit(code)
    except typer.Abort:  # EOF on a prompt, or Ctrl-C inside click itself
        err.print("interrupted")
        sys.exit(130)
    except StdoutFailed as exc:  # while parsing: --help, --version
        report(str(exc), 1, wants_json=False, kind="InputError")
        sys.stdout = None  # nothing more to write: no second complaint at exit
        sys.exit(1)
    except OSError as exc:
        if not isinstance(exc, BrokenPipeError) and exc.errno != errno.EPIPE:
            raise
        die_of_sigpipe()
    finish_stdout()
    # With standalone_mode=False click returns a command's exit code from typer.Exit.
    sys.exit(result if isinstance(result, int) else 0)


def _command_path(main: Any, prog_name: str | None, argv: list[str]) -> str:
    """``tokcost kvmem estimate`` for argv ``kvmem estimate --bad`` (Click gave no context)."""
    command = getattr(main, "__self__", None)
    path = [prog_name or "tokcost"]
    for arg in argv:
        if not hasattr(command, "get_command"):  # a leaf command: its path is complete
            break
        sub = command.get_command(None, arg)  # type: ignore[union-attr]
        if sub is None:
            break
        path.append(arg)
        command = sub
    return " ".join(path)


def _wants_json(argv: list[str]) -> bool:
    """``--json``, ``--format json`` or ``-f json`` (any case, joined or not) in argv."""
    words = [a.lower() for a in argv]
    if "--json" in words or any(w in ("--format=json", "-fjson", "-f=json") for w in words):
        return True
    return any(w in ("--format", "-f") and nxt == "json" for w, nxt in itertools.pairwise(words))


app = App(
    name="tokcost",
    cls=TokcostGroup,
    help="How many tokens is this, what will it cost, and how much GPU memory does serving it "
    "take?",
    no_args_is_help=True,
    # completion lives at the root only: typer registers its shells' protocol classes with it
    add_completion=True,
    pretty_exceptions_enable=False)


@app.callback()
def _root(version: VersionOpt = False) -> None:
    """The root's options (its help is the app's; every command has --help and --json)."""


# name -> (its module, one-line help): commands are imported only when used, `tokcost --help`
# lists them from this table.
COMMANDS: dict[str, tuple[str, str]] = {
    "count": ("tokcost.cli.count", "Count tokens in files, folders and stdin."),
    "compare": ("tokcost.cli.compare", "Token inflation across languages, scripts, code and data."),
    "price": ("tokcost.cli.price", "Price a request from token counts or files."),
    "kvmem": ("tokcost.cli.kvmem", "KV-cache memory: estimate per engine and GPU, simulate paging, "
              "measure cache policies."), "models": ("tokcost.cli.models",
               "The model catalog: list, show, validate, sync prices, import a model."),
    "check": ("tokcost.cli.check", "Fail the build when prompts outgrow token or cost budgets."),
    "bpe": ("tokcost.cli.bpe", "Train, use, inspect and export tokcost's own byte-level BPE."),
    "generate": ("tokcost.cli.generate",
                 "Run the numpy reference transformer with a real KV cache."),
    "attention": ("tokcost.cli.attention", "What each attention head looks at on a prompt.")}


def reflow_help(command: Any) -> None:
    """Join each paragraph of every command's help into one line (typer keeps a docstring's
    line breaks); a paragraph with an indented line, or marked with \\b, stays as written."""
    for sub in (getattr(command, "commands", None) or {}).values():
        reflow_help(sub)
    if not command.help:
        return
    paragraphs = inspect.cleandoc(command.help).split("\n\n")
    command.help = "\n\n".join(
        p if p.startswith("\b") or any(line[:1].isspace() for line in p.splitlines())
        else " ".join(p.split("\n")) for p in paragraphs)


@functools.cache  # each command is built once per process
def _load_command(name: str) -> Any:
    module = importlib.import_module(COMMANDS[name][0])
    holder = App()
    group = getattr(module, f"{name}_app", None)
    if group is not None:  # a group, built without its commands: each is built when named
        shell = copy.copy(group)
        shell.registered_commands = []
        holder.add_typer(shell, name=name)
    else:  # one command: the module's function of that name, with its EPILOG
        holder.command(name, epilog=module.EPILOG)(getattr(module, name))
    built = typer.main.get_command(holder)
    reflow_help(built)
    # A holder with one plain command becomes that command; otherwise a group.
    sub = getattr(built, "commands", {}).get(name)
    if sub is None or group is None:
        return built if sub is None else sub
    sub.pending = {info.name: functools.partial(_build, info, holder)
                   for info in group.registered_commands}
    return sub


def _build(info: Any, holder: App) -> Any:
    """One command of a group (kvmem builds one of its three: 10 ms of a 0.25 s start)."""
    command = typer.main.get_command_from_info(
        info, pretty_exceptions_short=holder.pretty_exceptions_short,
        rich_markup_mode=holder.rich_markup_mode)
    reflow_help(command)
    return command


def main() -> None:
    """The ``tokcost`` command line (its entry point, ``tokcost.__main__``, may answer
    ``--help`` first)."""
    app(prog_name="tokcost")


def root_help() -> str:
    """``tokcost --help`` as it prints here, rendered without running the command."""
    command = typer.main.get_command(app)
    with command.make_context("tokcost", [], resilient_parsing=True) as ctx:
        return str(command.get_help(ctx)) + "\n"


def count_main() -> None:
    """``tokcount`` = ``tokcost count``, so usage lines say ``tokcount``."""
    run_command(_load_command("count").main, None, prog_name="tokcount")
