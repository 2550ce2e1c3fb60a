"""Options several commands share; count flags (``8k``, ``8Ki``, ``1e6``) are read by
``tokcost.units.parse_count`` as Click parses, a sign passed on (``--top-k -1``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer

from tokcost.errors import UsageError

CatalogOpt = Annotated[str | None, typer.Option("--catalog", metavar="FILE", help=(
    "Model catalog YAML (default: $TOKCOST_CATALOG, else the shipped models.yaml)."))]
JsonOpt = Annotated[bool, typer.Option(
    "--json", help="Print JSON (its keys: docs/, the command's page).")]
PlotForceOpt = Annotated[bool, typer.Option(
    "--force", help="Overwrite the --plot file if it exists.")]
TokenizersOpt = Annotated[list[str] | None, typer.Option("--tokenizer", "-t", metavar="SPEC", help=(
    "Tokenizer spec (repeatable): o200k_base, cl100k_base, hf:PATH/tokenizer.json, hf:ORG/REPO, "
    "sp:PATH.model, tekken:PATH.json, bpe:PATH, model:ID."))]
SchedulerOpt = Annotated[str | None, typer.Option(
    "--scheduler", help="Dask scheduler address (tcp://HOST:8786) for --engine dask.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite existing output files.")]
DaskTimeoutOpt = Annotated[float | None, typer.Option("--timeout", help=(
    "Seconds --engine dask waits for the scheduler, its workers and http(s) servers, and for a "
    "worker when none is left mid-run, before it gives up (default 10)."))]


def _version(ctx: typer.Context, value: bool) -> None:
    if value:  # each program says its name
        from tokcost import __version__
        label = "tokcount (tokcost)" if ctx.find_root().info_name == "tokcount" else "tokcost"
        typer.echo(f"{label} {__version__}")
        raise typer.Exit()


VersionOpt = Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          expose_value=False, help="Show the version.")]


class CountError(typer.BadParameter):
    """A value ``parse_count`` refused, in its words (which name the flag already)."""

    def format_message(self) -> str:
        return self.message


def count_parser(flag: str, *, signed: bool = True) -> Callable[[str | int], int]:
    """A Typer ``parser=`` for ``flag``: its value as a count, sign kept (``signed=False``
    refuses a negative here, for a flag named otherwise in the library: ``--truncate``)."""
    def count(text: str | int) -> int:
        from tokcost.units import parse_count  # not at start-up: the root imports this module
        magnitude: str | int = text.strip() if isinstance(text, str) else abs(text)
        negative = isinstance(text, int) and text < 0
        if isinstance(magnitude, str) and magnitude.startswith("-"):
            magnitude, negative = magnitude[1:], True
        try:
            value = parse_count(magnitude, param="value")
            if negative and value and not signed:
                parse_count(text, param="value")  # the parser's words for a negative
        except UsageError as exc:
            # The message quotes the value as typed, sign included ('-1e30').
            typed = f"'{str(text).strip()}'"
            message = exc.render(lambda _name, value: flag if value is None else f"{flag} {value}")
            raise CountError(message.replace(f"'{magnitude}'", typed, 1)) from None
        return -value if negative else value
    return count


def count_option(*flags: str, signed: bool = True, **option: Any) -> Any:
    """A count flag (``8k``, ``8Ki``...) read by ``count_parser``."""
    return typer.Option(*flags, metavar="COUNT", parser=count_parser(flags[0], signed=signed),
                        **option)
