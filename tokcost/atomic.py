"""Atomic file output: nothing half-written is ever left under the final name.

Every file tokcost writes for the user goes through ``atomic_path``: the content
goes to a temporary file in the same folder, which replaces the target with
``os.replace`` only once it is complete. Ctrl-C, a full disk or a failed check
leaves the old file (or none) and no temporary file behind.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tokcost.errors import InputError


def _default_mode(path: Path) -> int:
    """An existing file keeps its mode; a new one gets what open() would give it."""
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it becomes ``path``.

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "out.txt"
    >>> with atomic_path(target) as tmp:
    ...     _ = tmp.write_text("done")
    >>> target.read_text()
    'done'
    """
    path = Path(path)
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:  # a read-only or missing folder: say so, before any work is lost
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        # mkstemp makes the file 0600; the result should look like any other output.
        os.chmod(tmp, _default_mode(path))
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, flushed to disk before the rename."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def write_text_atomic(path: Path, text: str) -> None:
    """UTF-8 text with ``\\n`` line ends, written atomically."""
    write_bytes_atomic(path, text.encode("utf-8"))
