"""What every plot shares (path checks, lazy matplotlib, atomic save); one module per figure
family beside it. matplotlib is an optional extra (``tokcost[plot]``), imported only here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tokcost.atomic import atomic_path, ensure_writable
from tokcost.errors import MissingDependency, UsageError, arg

FORMATS = (".png", ".svg", ".pdf")


def check_plot_path(path: Path | None, *, force: bool = False) -> None:
    """Fail before any work when the picture (if any) could not be written."""
    if path is None:
        return
    if path.suffix.lower() not in FORMATS:
        raise UsageError(f"{arg('plot')} needs a .png, .svg or .pdf file name, got "
                         f"'{path.name}'", param="plot", value=path)
    if path.exists() and not force:
        raise UsageError(f"{path} exists; pass {arg('force', True)} to overwrite it", param="force")
    ensure_writable(path)  # a missing or read-only folder, tried by writing there


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingDependency("matplotlib", "plot", "plotting") from None
    return plt


def save_figure(fig: Any, path: Path) -> None:
    """Write ``fig`` to ``path`` atomically, in the format its suffix names, and close it."""
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=path.suffix.lstrip(".").lower())
    finally:
        pyplot().close(fig)
