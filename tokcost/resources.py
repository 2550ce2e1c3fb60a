"""Where the shipped data lives: inside the wheel (force-included into ``tokcost/``), or at the
repository's top level in a checkout or editable install."""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def shipped_path(name: str) -> Path:
    """Path of a shipped data file or folder (``models.yaml``, ``corpora``)."""
    inside = _PACKAGE_DIR / name
    return inside if inside.exists() else _PACKAGE_DIR.parent / name
