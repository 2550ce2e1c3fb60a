"""Cache entries that check themselves: a header with the tokcost version and the sha256 of
the payload, verified before the payload is parsed, so an entry that was damaged or changed
(a CI cache restored from another branch) is rebuilt with a warning instead of silently
changing every result."""

from __future__ import annotations

import contextlib
import hashlib
import os
import warnings
from pathlib import Path

from tokcost.atomic import write_bytes_atomic
from tokcost.errors import TokcostWarning

_MAGIC = "tokcost-cache-v1"


def cache_dir() -> Path:
    """``$TOKCOST_CACHE_DIR``, else ``$XDG_CACHE_HOME/tokcost`` (``~/.cache/tokcost``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(os.environ.get("TOKCOST_CACHE_DIR") or Path(base) / "tokcost")


def _version() -> str:
    from tokcost import __version__

    return __version__


def read(path: Path) -> bytes | None:
    """The payload of the entry at ``path``, or None: missing, from another tokcost version,
    or failing its checksum (then with a warning)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    header, _, payload = data.partition(b"\n")
    words = header.decode("ascii", "replace").split(" ")
    if len(words) != 3 or words[:2] != [_MAGIC, _version()]:
        return None  # not an entry of this tokcost: rebuilt quietly
    if words[2] == hashlib.sha256(payload).hexdigest():
        return payload
    warnings.warn(f"cache entry {path} is damaged or was changed (its checksum does not "
                  "match); rebuilding it", TokcostWarning, stacklevel=2)
    return None


def write(path: Path, payload: bytes) -> None:
    """Write atomically; a read-only or missing cache folder only costs the next rebuild."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        header = f"{_MAGIC} {_version()} {hashlib.sha256(payload).hexdigest()}\n"
        write_bytes_atomic(path, header.encode() + payload)
