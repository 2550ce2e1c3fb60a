"""File names a terminal or an encoder trips on: brackets (Rich markup), control
characters, bytes that are not UTF-8, with stdout strict about its encoding."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file names")


def _tokcount(*args: str, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}  # as under en_US.UTF-8
    return subprocess.run([sys.executable, "-c", "from tokcost.cli.app import count_main; "
                           "count_main()", *args], cwd=cwd, env=env, capture_output=True,
                          timeout=120)


@pytest.fixture
def odd(tmp_path: Path) -> Path:
    (tmp_path / os.fsdecode(b"bad\xffname.txt")).write_text("hello\n")
    (tmp_path / "a[red]b.txt").write_text("x y\n")
    (tmp_path / "c[bold]d.bin").write_bytes(b"\x00")
    return tmp_path


def test_csv_writes_a_name_that_is_not_utf8_as_its_bytes(odd: Path) -> None:
    proc = _tokcount(".", "--csv", cwd=odd)
    assert proc.returncode == 0, proc.stderr
    assert b"bad\xffname.txt,6,6,2\n" in proc.stdout and b"a[red]b.txt,4,4,3\n" in proc.stdout


def test_json_escapes_a_name_that_is_not_utf8(odd: Path) -> None:
    proc = _tokcount(".", "--json", cwd=odd)
    assert proc.returncode == 0, proc.stderr
    paths = {f["path"] for f in json.loads(proc.stdout)["files"]}
    assert paths == {os.fsdecode(b"bad\xffname.txt"), "a[red]b.txt"}


def test_table_and_warnings_show_names_as_they_are(odd: Path) -> None:
    proc = _tokcount(".", cwd=odd)
    assert proc.returncode == 0, proc.stderr
    out, err = proc.stdout.decode(), proc.stderr.decode()
    assert "bad\\377name.txt" in out and "a[red]b.txt" in out  # escaped as ls -b, not markup
    assert err == "warning: skipped c[bold]d.bin: binary (NUL byte at offset 0)\n"
