"""Validated catalog files (validating takes ~0.25 s, more than all of ``tokcost price``) by the
sha256 of their bytes and of the field modules, as checksummed entries (``tokcost.cachefile``)."""

from __future__ import annotations

import functools
import hashlib
import io
import pickle
import sys
from pathlib import Path
from typing import Any

from tokcost import cachefile
from tokcost.catalog import schema

_FORMAT = "catalog-v3"
# What the validated objects depend on besides the file's bytes.
_SOURCES = ("document.py", "validation.py", "schema.py", "rules.py", "loader.py", "../units.py")
# A cache file is data: it may name the records, Decimal and date, and nothing else.
_CLASSES = {"decimal": {"Decimal"}, "datetime": {"date"}, schema.__name__: {
    n for n, c in vars(schema).items() if isinstance(c, type) and issubclass(c, schema.Record)}}


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if name not in _CLASSES.get(module, ()):
            raise pickle.UnpicklingError(f"{module}.{name} is not a catalog value")
        return super().find_class(module, name)


@functools.cache
def _fingerprint() -> bytes:
    digest = hashlib.sha256(f"{_FORMAT} {sys.version_info[:2]}".encode())
    here = Path(__file__).parent
    for name in _SOURCES:
        try:
            digest.update((here / name).read_bytes())
        except OSError:  # pragma: no cover - e.g. a zipped install: fall back to the version
            from importlib.metadata import version
            digest.update(version("tokcost").encode())
    return digest.digest()


def _key(data: bytes) -> bytes:
    return hashlib.sha256(_fingerprint() + data).digest()


def _entry(path: Path) -> Path:
    # One entry per catalog file, replaced when it changes: the edits of a file never pile up.
    name = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:32]
    return cachefile.cache_dir() / f"{name}.{_FORMAT}"


def load(path: Path, data: bytes) -> Any | None:
    """What validating ``data`` (the bytes of ``path``) gave, or None when not cached."""
    payload = cachefile.read(_entry(path))
    if payload is None:
        return None
    try:
        key, value = _Unpickler(io.BytesIO(payload)).load()
    except Exception:  # a payload this version did not write: validate again
        return None
    return value if key == _key(data) else None


def store(path: Path, data: bytes, value: Any) -> None:
    """Write atomically; a read-only or missing cache folder only costs the next validation."""
    cachefile.write(_entry(path), pickle.dumps((_key(data), value), pickle.HIGHEST_PROTOCOL))
