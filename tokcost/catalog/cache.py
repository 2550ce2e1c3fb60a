"""A cache of validated catalog files, so commands skip YAML parsing and pydantic.

Validating models.yaml imports pydantic and builds its validator, about 0.25 s; the
whole of ``tokcost price`` takes less than that. A file that validated once is kept
here, as ``marshal`` data, with the sha256 of its bytes and of the modules that
declare and parse the fields: a changed byte, or a changed declaration, does not
match, so an entry can only ever stand for what validation produced.
The cache lives in ``$TOKCOST_CACHE_DIR`` (default ``~/.cache/tokcost``); when it
cannot be read or written tokcost simply validates again.

Values are encoded with tags marshal does not have: records, ``Decimal`` and dates.

>>> from decimal import Decimal
>>> from tokcost.catalog.schema import Pricing
>>> p = Pricing(input=Decimal("2.5"), output=Decimal("10"))
>>> decode(encode(p)) == p
True
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import hashlib
import marshal
import os
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

from tokcost.atomic import write_bytes_atomic
from tokcost.catalog.schema import RECORDS, Record

_FORMAT = "catalog-v2"
# What the validated objects depend on besides the file's bytes.
_SOURCES = ("document.py", "validation.py", "schema.py", "rules.py", "loader.py",
            "../units.py")


def cache_dir() -> Path:
    explicit = os.environ.get("TOKCOST_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "tokcost"


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


_FINGERPRINT: bytes | None = None


def _key(data: bytes) -> str:
    global _FINGERPRINT
    if _FINGERPRINT is None:
        _FINGERPRINT = _fingerprint()
    return hashlib.sha256(_FINGERPRINT + data).hexdigest()


def _entry(path: Path) -> Path:
    # One entry per catalog file, replaced when the file changes: the cache never grows
    # with the edits of a file.
    name = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:32]
    return cache_dir() / f"{name}.{_FORMAT}"


def load(path: Path, data: bytes) -> Any | None:
    """What validating ``data`` (the bytes of ``path``) gave, or None when not cached."""
    try:
        stored = marshal.loads(_entry(path).read_bytes())
        if isinstance(stored, tuple) and len(stored) == 2 and stored[0] == _key(data):
            return decode(stored[1])
    except (OSError, EOFError, ValueError, TypeError, KeyError, IndexError):
        pass
    return None


def store(path: Path, data: bytes, value: Any) -> None:
    """Write atomically; a read-only or missing cache folder only costs the next validation."""
    try:
        entry = _entry(path)
        entry.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(entry, marshal.dumps((_key(data), encode(value))))
    except OSError:
        pass


def encode(value: Any) -> Any:
    """Records, Decimals, dates and tuples as marshal's plain types."""
    if isinstance(value, Record):
        fields = {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}  # type: ignore[arg-type]
        return ("r", type(value).__qualname__, fields)
    if isinstance(value, Decimal):
        return ("d", str(value))
    if isinstance(value, _dt.date):
        return ("t", value.isoformat())
    if isinstance(value, tuple):
        return [encode(v) for v in value]  # lists never appear in records: tuples do
    return value


def decode(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(decode(v) for v in value)
    if isinstance(value, tuple):
        tag = value[0]
        if tag == "r":
            cls = RECORDS[value[1]]
            return cls(**{k: decode(v) for k, v in value[2].items()})
        if tag == "d":
            return Decimal(value[1])
        if tag == "t":
            return _dt.date.fromisoformat(value[1])
        raise ValueError(f"unknown cache tag {tag!r}")
    return value
