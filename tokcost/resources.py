"""Where the shipped data lives: inside the wheel, or beside the package in a checkout.

The wheel force-includes ``models.yaml`` and ``corpora/`` into ``tokcost/``; an
editable install or a plain checkout keeps them at the repository's top level.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def shipped_path(name: str) -> Path:
    """Path of a shipped data file or folder (``models.yaml``, ``corpora``)."""
    inside = _PACKAGE_DIR / name
    if inside.exists():
        return inside
    return _PACKAGE_DIR.parent / name
