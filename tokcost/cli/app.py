"""The ``tokcost`` application: command registration and the one error handler."""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Iterator
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from tokcost.cli.console import err
from tokcost.errors import TokcostError


class TokcostGroup(TyperGroup):
    """Loads commands lazily and turns every TokcostError into one line on stderr
    and its exit code (DESIGN §3). ``TOKCOST_DEBUG=1`` lets the traceback through.
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


@contextlib.contextmanager
def reported_errors() -> Iterator[None]:
    """The one place a TokcostError becomes a line on stderr and an exit code."""
    try:
        yield
    except TokcostError as exc:
        if os.environ.get("TOKCOST_DEBUG"):
            raise
        from rich.markup import escape  # only on the error path

        from tokcost.cli.errors import render_error

        # escape: "pip install 'tokcost[dask]'" must not lose "[dask]" as markup
        err.print(f"[bold red]error:[/bold red] {escape(render_error(exc))}", markup=True,
                  highlight=False)
        raise typer.Exit(code=exc.exit_code) from None
    except KeyboardInterrupt:
        err.print("interrupted", highlight=False)
        raise typer.Exit(code=130) from None


app = typer.Typer(
    name="tokcost",
    cls=TokcostGroup,
    help=(
        "How many tokens is this, what will it cost, and how much GPU memory does "
        "serving it take?"
    ),
    no_args_is_help=True,
    add_completion=False,
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
    "kvmem": (("tokcost.cli.kvmem", "tokcost.cli.simulate"),
              "KV-cache memory: estimate per model and GPU, simulate paged allocation."),
    "models": (("tokcost.cli.models",), "The model catalog: list, show, validate, sync prices."),
    "check": (("tokcost.cli.check",), "Fail the build when prompts outgrow token or cost budgets."),
    "bpe": (("tokcost.cli.bpe",), "Train, use, inspect and export tokcost's own byte-level BPE."),
    "generate": (("tokcost.cli.generate",),
                 "Run the numpy reference transformer with a real KV cache."),
}

# Loaded commands, per process: registering twice would add `kvmem simulate` twice.
_loaded: dict[str, Any] = {}


def _load_command(name: str) -> Any:
    if name not in _loaded:
        modules, _ = COMMANDS[name]
        holder = typer.Typer()
        for module in modules:
            importlib.import_module(module).register(holder)
        built = typer.main.get_command(holder)
        from tokcost.cli.errors import tag_errors

        tag_errors(built)
        # A holder with one plain command becomes that command; otherwise a group.
        sub = getattr(built, "commands", {}).get(name)
        _loaded[name] = sub if sub is not None else built
    return _loaded[name]




def _run(entry: Any, prog_name: str) -> None:
    try:
        entry(prog_name=prog_name)
    except BrokenPipeError:
        # `tokcost count ... | head` closed the pipe: not an error worth a traceback.
        sys.stderr.close()
        sys.exit(0)


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
        command.main(prog_name=prog_name)


def count_main() -> None:
    """``tokcount`` = ``tokcost count``."""
    _run(_StandaloneCount(), "tokcount")
