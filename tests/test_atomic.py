"""Atomic writes: a folder that cannot be written is one clear error, and nothing is left."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import pytest

from tokcost.atomic import atomic_path, write_bytes_atomic
from tokcost.errors import InputError


def test_read_only_folder_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # root ignores permission bits, so the read-only file system is simulated where it is met
    def refuse(*args: object, **kwargs: object) -> tuple[int, str]:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    with pytest.raises(InputError, match=r"cannot write .*out\.bin: Read-only file system"):
        write_bytes_atomic(tmp_path / "out.bin", b"data")
    assert list(tmp_path.iterdir()) == []


def test_failed_write_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("interrupted")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
