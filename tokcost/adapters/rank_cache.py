"""A cache of parsed rank files, keyed by the sha256 of the verified file.

Parsing o200k_base's 200,000 base64 lines costs about half a second at every
start; loading the same dict from ``marshal`` takes a fraction of that. The key is
the hash tokcost has just checked, so a cache entry can only ever stand for the
verified bytes. The cache lives in ``$TOKCOST_CACHE_DIR`` (default
``~/.cache/tokcost``); when it cannot be read or written tokcost simply parses.
"""

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
    """Write atomically (temp file + rename); any failure only costs the next parse."""
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
