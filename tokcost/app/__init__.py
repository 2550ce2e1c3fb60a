"""The application layer: one module per use case, between the CLI and the parts; each takes a
frozen request and returns a frozen result whose ``to_dict()`` is the command's ``--json``
document (re-exported by ``tokcost/__init__.py``: the public API the CLI imports)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def names(given: str | Path | Sequence[str | Path]) -> tuple[str, ...]:
    """A bare string or path is one name, not its characters."""
    return (str(given),) if isinstance(given, (str, Path)) else tuple(map(str, given))
