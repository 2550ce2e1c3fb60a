"""The ``tokcost`` application: command registration and the one error handler."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer
from rich.markup import escape
from typer.core import TyperGroup

from tokcost.cli.console import err
from tokcost.errors import TokcostError


class TokcostGroup(TyperGroup):
    """Turns every TokcostError into one line on stderr and its exit code (DESIGN §3).

    ``TOKCOST_DEBUG=1`` lets the traceback through instead.
    """

    def invoke(self, ctx: Any) -> Any:  # a click Context (typer vendors click)
        try:
            return super().invoke(ctx)
        except TokcostError as exc:
            if os.environ.get("TOKCOST_DEBUG"):
                raise
            # escape: "pip install 'tokcost[dask]'" must not lose "[dask]" as markup
            err.print(f"[bold red]error:[/bold red] {escape(str(exc))}", markup=True,
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


def _register() -> None:
    # One line per command module; each module only defines its commands.
    from tokcost.cli import check, count

    count.register(app)
    from tokcost.cli import bpe

    bpe.register(app)
    from tokcost.cli import kvmem

    kvmem.register(app)
    from tokcost.cli import models, price

    models.register(app)
    price.register(app)
    check.register(app)
    from tokcost.cli import compare

    compare.register(app)
    from tokcost.cli import generate, simulate

    generate.register(app)
    simulate.register(app)  # adds `kvmem simulate`, so after kvmem


_register()


def main() -> None:
    """Entry point of the ``tokcost`` console script and ``python -m tokcost``."""
    try:
        app()
    except BrokenPipeError:
        # `tokcost count ... | head` closed the pipe: not an error worth a traceback.
        sys.stderr.close()
        sys.exit(0)


def count_main() -> None:
    """``tokcount`` = ``tokcost count``."""
    sys.argv[1:1] = ["count"]
    main()
