"""Atomic file output for every file tokcost writes: nothing half-written is ever left under
the final name, Ctrl-C or a full disk leaves the old files (docs/api.md, "Writing files").
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from tokcost.errors import InputError, UsageError

__all__ = ["atomic_path", "atomic_set", "ensure_writable", "write_bytes_atomic",
           "write_files_atomic", "write_text_atomic"]

# An OSError with one of these while the temp file is written is about the writing,
# even when it names no file (write(2) on a full disk does not).
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO})


def _cannot_write(path: Path, exc: OSError) -> InputError:
    advice = ("free some space or choose another folder"
              if exc.errno in (errno.ENOSPC, errno.EDQUOT) else "choose a folder you can write to")
    return InputError(f"cannot write {path}: {exc.strerror or exc}; {advice}")


def _no_folder(path: Path) -> InputError:
    # Exit 1 as any unwritable output: the flag was well formed, the filesystem refuses it.
    return InputError(f"cannot write {path}: folder {path.parent} does not exist; create it first")


def _reserve(path: Path, folder: Path | None = None) -> Path:
    """Create an empty temp file beside ``path`` (or in ``folder``), named after it."""
    where = folder if folder else path.parent
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=where)
    except OSError as exc:  # a read-only or missing folder: say so, before any work is lost
        if exc.errno == errno.ENOENT and not where.exists():
            raise _no_folder(path) from None
        raise _cannot_write(path, exc) from None
    os.close(fd)
    return Path(name)


def _landing(path: Path) -> Path:
    """Where writing ``path`` lands: through a symlink to its target (the link stays), and
    only onto a regular file: never a directory, device, FIFO or socket."""
    real = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        mode = os.stat(real).st_mode
    except OSError:  # a new file; a folder that is missing or unreadable is reported later
        return real
    if stat.S_ISDIR(mode):
        raise UsageError(f"{path} is a directory; give a file name")
    if not stat.S_ISREG(mode):
        raise UsageError(f"{path} is not a regular file (a device, FIFO or socket); "
                         "give a file name")
    return real


def ensure_writable(path: str | Path, *, create_folder: bool = False) -> None:
    """Raise now, before any work, unless a temp file can be written beside ``path`` (``os.access``
    is wrong for root and read-only mounts); ``create_folder``: try the nearest existing parent."""
    path = _landing(Path(path))
    folder = path.parent
    if not folder.exists():
        if not create_folder:
            raise _no_folder(path)
        folder = next((p for p in folder.parents if p.exists()), Path("."))
    probe = _reserve(path, folder)
    with contextlib.suppress(FileNotFoundError):
        probe.unlink()


def _default_mode(path: Path) -> int:
    """An existing file keeps its mode; a new one gets what open() would give it."""
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM back for what must not be cut short (the renames that complete a
    set, a Dask cluster's start), and act on them after (handlers run in the main thread only,
    so swapping them there is enough)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[tuple[int, FrameType | None]] = []
    previous: dict[int, Any] = {}
    for held in (signal.SIGINT, signal.SIGTERM):
        # An ignored signal stays ignored; one whose handler is not Python's is left alone.
        if callable(signal.getsignal(held)) or signal.getsignal(held) == signal.SIG_DFL:
            previous[held] = signal.signal(held, lambda n, frame: caught.append((n, frame)))
    try:
        yield
    finally:
        for restored, handler in previous.items():
            signal.signal(restored, handler)
        if caught:
            signum, frame = caught[0]
            handler = previous[signum]
            if callable(handler):
                handler(signum, frame)  # SIGINT: KeyboardInterrupt, now that the set is in
            else:
                signal.raise_signal(signum)  # the default action, with the handler back


def _backup_name(tmp: Path) -> Path:
    # ".x.bpe.k3j9_a2q.tmp" -> ".x.bpe.k3j9_a2q.bak.tmp": unique while the temp file exists
    return tmp.with_name(tmp.name[: -len(".tmp")] + ".bak.tmp")


def _backup(target: Path, name: Path) -> Path | None:
    """``name`` as a second name for the file now at ``target`` (None when there is
    none), so it can be put back; a hard link costs nothing, a copy where refused."""
    try:
        os.link(target, name, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError:  # FAT, some network filesystems: no hard links
        if not os.path.lexists(target):
            return None
        shutil.copy2(target, name, follow_symlinks=False)
    return name


def _commit(targets: Sequence[Path], temps: Sequence[Path]) -> None:
    """Move every temp file onto its target; on any failure put every target back."""
    backups: list[Path | None] = []
    try:
        for target, tmp in zip(targets, temps, strict=True):
            # The name is recorded before the link exists, so that nothing outlives a failure.
            backups.append(_backup_name(tmp))
            backups[-1] = _backup(target, _backup_name(tmp))
            os.replace(tmp, target)
    except BaseException as exc:
        # A target was moved in exactly when its temp file is gone: undo those, newest first.
        moved = [i for i, tmp in enumerate(temps[: len(backups)]) if not tmp.exists()]
        for i in reversed(moved):
            with contextlib.suppress(OSError):
                saved = backups[i]
                if saved is not None:
                    os.replace(saved, targets[i])
                else:
                    os.unlink(targets[i])
        if isinstance(exc, OSError):
            raise _cannot_write(targets[len(backups) - 1], exc) from None
        raise
    finally:
        for saved in backups:
            if saved is not None:
                with contextlib.suppress(OSError):
                    saved.unlink()


@contextlib.contextmanager
def atomic_set(paths: Sequence[str | Path]) -> Iterator[list[Path]]:
    """Yield one temporary path per target; when the block ends every target is replaced
    by its temporary file, or (on any error or Ctrl-C) none is: a rename that fails puts
    the targets already replaced back, so files that belong together are never half new."""
    targets = [_landing(Path(p)) for p in paths]
    if len({os.path.abspath(p) for p in targets}) != len(targets):
        raise ValueError(f"atomic_set: a path is given twice in {[str(p) for p in targets]}")
    temps: list[Path] = []
    try:
        for target in targets:
            temps.append(_reserve(target))
        try:
            yield list(temps)
        except OSError as exc:
            named = [t for t, tmp in zip(targets, temps, strict=True)
                     if exc.filename in (tmp, str(tmp))]
            if exc.errno not in _WRITE_ERRNOS and not named:
                raise
            raise _cannot_write(named[0] if named else targets[0], exc) from None
        for target, tmp in zip(targets, temps, strict=True):
            try:
                os.chmod(tmp, _default_mode(target))
            except OSError as exc:
                raise _cannot_write(target, exc) from None
        with signals_deferred():
            _commit(targets, temps)
    finally:
        for tmp in temps:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it becomes ``path``."""
    with atomic_set([path]) as (tmp,):
        yield tmp


def _write_synced(path: Path, data: bytes) -> None:
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def write_bytes_atomic(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, flushed to disk before the rename."""
    with atomic_path(path) as tmp:
        _write_synced(tmp, data)


def write_text_atomic(path: str | Path, text: str) -> None:
    """UTF-8 text with ``\\n`` line ends, written atomically."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_files_atomic(files: Mapping[Path, bytes | str]) -> None:
    """Write several files as one set (``atomic_set``; ``str`` as UTF-8): all of them, or none."""
    targets = list(files)
    with atomic_set(targets) as temps:
        for target, tmp in zip(targets, temps, strict=True):
            data = files[target]
            _write_synced(tmp, data.encode("utf-8") if isinstance(data, str) else data)
