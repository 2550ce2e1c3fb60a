"""The ``tokcost`` application: command registration and the one error handler."""

from __future__ import annotations

import contextlib
import errno
import importlib
import inspect
import itertools
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from tokcost.cli.console import err
from tokcost.errors import TokcostError


class TokcostGroup(TyperGroup):
    """Loads commands lazily and turns every error into one line on stderr and its
    exit code (DESIGN §3). ``TOKCOST_DEBUG=1`` lets the traceback through.
    """

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in COMMANDS:
            return _load_command(cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(name, text) for name, (_, text) in COMMANDS.items()])

    def invoke(self, ctx: Any) -> Any:  # a click Context (typer vendors click)
        with reported_errors():
            return super().invoke(ctx)

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True,
             windows_expand_args: bool = True, **extra: Any) -> Any:
        return run_command(super().main, args, prog_name=prog_name, complete_var=complete_var,
                           standalone_mode=standalone_mode,
                           windows_expand_args=windows_expand_args, **extra)


def run_command(main: Any, args: Any, *, standalone_mode: bool = True, **kwargs: Any) -> Any:
    """Run a click ``main`` so that usage errors are one line and pipes close quietly.

    Click's standalone mode prints usage errors as a block (or a Rich box) and
    turns a closed pipe into exit 1; here a usage error is one ``error:`` line with
    a "did you mean" where one fits, and ``| head`` ends the process the way it ends
    ``cat``: by SIGPIPE, with no message.
    """
    argv = list(sys.argv[1:] if args is None else args)
    try:
        result = main(args=argv, standalone_mode=False, **kwargs)
    except typer.TyperException as exc:  # typer's vendored click.ClickException family
        if not standalone_mode or not hasattr(exc, "format_message"):
            raise
        if os.environ.get("TOKCOST_DEBUG"):
            raise
        if type(exc).__name__ == "NoArgsIsHelpError":
            # The help is the message (plain groups); a Rich group has printed its own.
            if exc.format_message().strip():
                exc.show()  # type: ignore[attr-defined]
            sys.exit(exc.exit_code)
        from tokcost.cli.errors import usage_line

        code = int(getattr(exc, "exit_code", 2))
        line = usage_line(exc, _command_path(main, kwargs.get("prog_name"), argv))
        report(line, code, wants_json=_wants_json(argv), kind="UsageError")
        sys.exit(code)
    except typer.Abort:  # EOF on a prompt, or Ctrl-C inside click itself
        if not standalone_mode:
            raise
        err.print("interrupted", highlight=False)
        sys.exit(130)
    except BrokenPipeError:
        _die_of_sigpipe()
    except OSError as exc:
        if exc.errno != errno.EPIPE:
            raise
        _die_of_sigpipe()
    if not standalone_mode:
        return result
    # With standalone_mode=False click returns a command's exit code from typer.Exit.
    sys.exit(result if isinstance(result, int) else 0)


def _command_path(main: Any, prog_name: str | None, argv: list[str]) -> str:
    """``tokcost kvmem estimate`` for argv ``kvmem estimate --bad``: the command whose
    help to point at when Click's error carries no context."""
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
    """``--json``, ``--format json`` or ``-f json`` (any case, joined or not) in argv: a
    usage error is raised before the command's own parameters say so."""
    words = [a.lower() for a in argv]
    if "--json" in words or any(w in ("--format=json", "-fjson", "-f=json") for w in words):
        return True
    return any(w in ("--format", "-f") and nxt == "json" for w, nxt in itertools.pairwise(words))


def report(line: str, code: int, *, wants_json: bool, kind: str) -> None:
    """An error as the user sees it: one line on stderr and, when the command was
    asked for ``--json``, a JSON error object on stdout so scripts get a document."""
    from tokcost.cli.console import error, print_json

    if wants_json:
        print_json({"error": {"type": kind, "message": line, "exit_code": code}})
    error(line)  # escaped: "pip install 'tokcost[dask]'" must not lose "[dask]" as markup


def _die_of_sigpipe() -> None:
    """Leave as ``cat`` does when its reader goes away: killed by SIGPIPE (the shell's
    exit status 141), no message. Where there is no SIGPIPE (Windows), exit 1 quietly."""
    import signal

    # Python would complain on exit that it cannot flush the closed stdout.
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGPIPE)
    sys.exit(1)


@contextlib.contextmanager
def reported_errors() -> Iterator[None]:
    """The one place a TokcostError becomes a line on stderr and an exit code."""
    try:
        yield
    except TokcostError as exc:
        if os.environ.get("TOKCOST_DEBUG"):
            raise
        from tokcost.cli.errors import render_error

        report(render_error(exc), exc.exit_code, wants_json=getattr(exc, "cli_json", False),
               kind=type(exc).__name__)
        raise typer.Exit(code=exc.exit_code) from None
    except KeyboardInterrupt:
        err.print("interrupted", highlight=False)
        raise typer.Exit(code=130) from None
    except BrokenPipeError:  # here, before typer's own handler turns it into exit 1
        _die_of_sigpipe()


app = typer.Typer(
    name="tokcost",
    cls=TokcostGroup,
    help=(
        "How many tokens is this, what will it cost, and how much GPU memory does "
        "serving it take?"
    ),
    no_args_is_help=True,
    # Completion lives at the root only (--install-completion / --show-completion):
    # typer registers its bash/zsh/fish/powershell protocol classes with it.
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from tokcost import __version__

        typer.echo(f"tokcost {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Show the version."),
    ] = False,
) -> None:
    """How many tokens is this, what will it cost, and how much GPU memory does serving it take?

    Every command has --help with examples and --json for scripts.
    """


# Commands are imported only when used: `tokcost --help` lists them from this
# table, so start-up does not pay for the catalog, YAML, pricing or tokenizers.
# name -> (modules whose register() adds the command, in order; one-line help)
COMMANDS: dict[str, tuple[tuple[str, ...], str]] = {
    "count": (("tokcost.cli.count",), "Count tokens in files, folders and stdin."),
    "compare": (("tokcost.cli.compare",),
                "Token inflation across languages, scripts, code and data."),
    "price": (("tokcost.cli.price",), "Price a request from token counts or files."),
    "kvmem": (("tokcost.cli.kvmem", "tokcost.cli.simulate", "tokcost.cli.kvmem_quality"),
              "KV-cache memory: estimate per engine and GPU, simulate paging, measure cache "
              "policies."),
    "models": (("tokcost.cli.models",),
               "The model catalog: list, show, validate, sync prices, import a model."),
    "check": (("tokcost.cli.check",), "Fail the build when prompts outgrow token or cost budgets."),
    "bpe": (("tokcost.cli.bpe",), "Train, use, inspect and export tokcost's own byte-level BPE."),
    "generate": (("tokcost.cli.generate",),
                 "Run the numpy reference transformer with a real KV cache."),
    "attention": (("tokcost.cli.attention",), "What each attention head looks at on a prompt."),
}

# Loaded commands, per process: registering twice would add `kvmem simulate` twice.
_loaded: dict[str, Any] = {}


def reflow_help(command: Any) -> None:
    """Join the lines of each paragraph of every command's help into one: typer keeps a
    docstring's line breaks, which a narrow terminal then wraps raggedly ("as du" /
    "counts it"). A paragraph with an indented line, or marked with \\b, stays as written."""
    for sub in (getattr(command, "commands", None) or {}).values():
        reflow_help(sub)
    if not command.help:
        return
    paragraphs = inspect.cleandoc(command.help).split("\n\n")
    command.help = "\n\n".join(
        p if p.startswith("\b") or any(line[:1].isspace() for line in p.splitlines())
        else " ".join(p.split("\n")) for p in paragraphs)


def _load_command(name: str) -> Any:
    if name not in _loaded:
        modules, _ = COMMANDS[name]
        holder = typer.Typer(add_completion=False)
        for module in modules:
            importlib.import_module(module).register(holder)
        built = typer.main.get_command(holder)
        from tokcost.cli.errors import tag_errors

        tag_errors(built)
        reflow_help(built)
        # A holder with one plain command becomes that command; otherwise a group.
        sub = getattr(built, "commands", {}).get(name)
        _loaded[name] = sub if sub is not None else built
    return _loaded[name]




def _run(entry: Any, prog_name: str) -> None:
    try:
        entry(prog_name=prog_name)
    except BrokenPipeError:
        # The pipe closed while Python flushed stdout on the way out.
        _die_of_sigpipe()


def main() -> None:
    """Entry point of the ``tokcost`` console script and ``python -m tokcost``."""
    _run(app, "tokcost")


class _StandaloneCount:
    """``tokcount``: the count command on its own, so usage lines say ``tokcount``."""

    def __call__(self, prog_name: str) -> None:
        command = _load_command("count")
        # -h as in `tokcost count -h`: the root group's setting does not reach a lone command
        command.context_settings = {**command.context_settings,
                                    "help_option_names": ["-h", "--help"]}
        original = command.invoke

        def invoke(ctx: Any) -> Any:
            with reported_errors():
                return original(ctx)

        command.invoke = invoke
        run_command(command.main, None, prog_name=prog_name)


def count_main() -> None:
    """``tokcount`` = ``tokcost count``."""
    _run(_StandaloneCount(), "tokcount")
