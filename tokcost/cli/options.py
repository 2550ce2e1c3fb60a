"""Options several commands share, so their flags and help read the same everywhere."""

from __future__ import annotations

from typing import Annotated

import typer

CatalogOpt = Annotated[
    str | None,
    typer.Option(
        "--catalog",
        show_default=False,
        help="Model catalog YAML (default: $TOKCOST_CATALOG, else the shipped models.yaml).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (keys in the README).")]
PlotForceOpt = Annotated[
    bool, typer.Option("--force", help="Overwrite the --plot file if it exists.")
]
