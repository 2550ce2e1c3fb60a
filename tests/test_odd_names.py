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


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tokcost", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_compare_shows_names_as_they_are(tmp_path: Path) -> None:
    (tmp_path / "[red]x.txt").write_text("Hello world, how are you today?\n")
    (tmp_path / "a[bold]b.txt").write_text("Hallo Welt, wie geht es dir heute?\n")
    proc = _run("compare", "[red]x.txt", "a[bold]b.txt", "--baseline", "[red]x", "--no-chart",
                cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "premium vs [red]x" in proc.stdout
    assert "\n[red]x " in proc.stdout and "\na[bold]b " in proc.stdout  # the code cells
    chart = _run("compare", "[red]x.txt", "a[bold]b.txt", "--baseline", "[red]x", cwd=tmp_path)
    bars = [line for line in chart.stdout.splitlines() if "█" in line]
    assert {line.split()[0] for line in bars} == {"[red]x", "a[bold]b"}
    assert len({line.index("█") for line in bars}) == 1  # the bars start in one column


def test_check_shows_names_as_they_are(tmp_path: Path) -> None:
    (tmp_path / "a[bold]b.txt").write_text("one two three four five\n")
    proc = _run("check", "a[bold]b.txt", "--max-tokens", "1", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "a[bold]b.txt" in proc.stdout and "Traceback" not in proc.stderr


def test_a_bracket_glob_warns_nothing_from_python(tmp_path: Path) -> None:
    (tmp_path / "[red]x.txt").write_text("hi\n")
    proc = _run("count", ".", "--include", "[[]red]*", "--total", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == "2\n" and proc.stderr == ""
