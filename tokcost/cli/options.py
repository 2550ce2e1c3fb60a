"""Options several commands share, so their flags and help read the same everywhere."""

from __future__ import annotations

from typing import Annotated

import typer

CatalogOpt = Annotated[
    str | None, typer.Option(
        "--catalog", metavar="FILE", show_default=False,
        help="Model catalog YAML (default: $TOKCOST_CATALOG, else the shipped models.yaml).")]
JsonOpt = Annotated[bool, typer.Option("--json",
                                       help="Print JSON (its keys: docs/, the command's page).")]
PlotForceOpt = Annotated[
    bool, typer.Option("--force", help="Overwrite the --plot file if it exists.")]
TokenizersOpt = Annotated[
    list[str] | None, typer.Option(
        "--tokenizer", "-t", metavar="SPEC", show_default=False,
        help="Tokenizer spec (repeatable): o200k_base, cl100k_base, hf:PATH/tokenizer.json, "
        "hf:ORG/REPO, sp:PATH.model, tekken:PATH.json, bpe:PATH, model:ID.")]
SchedulerOpt = Annotated[str | None, typer.Option(
                             "--scheduler", show_default=False,
                             help="Dask scheduler address (tcp://HOST:8786) for --engine dask.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite existing output files.")]
DaskTimeoutOpt = Annotated[
    float | None, typer.Option(
        "--timeout", show_default=False,
        help="Seconds --engine dask waits for the scheduler, its workers and http(s) servers, and "
        "for a worker when none is left mid-run, before it gives up (default 10).")]
