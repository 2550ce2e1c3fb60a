"""Parsed rank files in ``marshal`` (parsing o200k_base takes 0.5 s), keyed by the sha256 just
verified, in ``$TOKCOST_CACHE_DIR`` (default ``~/.cache/tokcost``); failing costs a parse."""

from __future__ import annotations

import marshal
import os
import tempfile
from pathlib import Path

_FORMAT = "ranks-v1"


def cache_dir() -> Path:
    explicit = os.environ.get("TOKCOST_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tokcost"


def load(sha256: str) -> dict[bytes, int] | None:
    path = cache_dir() / f"{sha256}.{_FORMAT}"
    try:
        data = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    return data if isinstance(data, dict) else None


def store(sha256: str, ranks: dict[bytes, int]) -> None:
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".ranks-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(marshal.dumps(ranks))
            os.replace(tmp, folder / f"{sha256}.{_FORMAT}")
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        pass
