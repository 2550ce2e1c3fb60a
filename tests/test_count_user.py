"""What a counting user notices (issue 13, item 5): FIFOs, sockets and devices inside a
folder are skipped with the reason, a FIFO named directly is read; a file named twice is
counted once, as du counts; progress moves with bytes; binary skips are one line;
``tokcount`` is ``tokcost count``.

Everything that could hang on a FIFO runs in a subprocess with a timeout.
"""

from __future__ import annotations

import errno
import io
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokcost
from tokcost import get_tokenizer
from tokcost.counting import Inputs, Skipped, Visited, count_paths, walk
from tokcost.counting.inputs import same_file_reason, skip_notes
from tokcost.counting.local import LISTED_EVERY

posix = pytest.mark.skipif(os.name != "posix", reason="FIFOs, sockets and /dev/null")

TEXT = "The kettle whistled while the cat slept on the warm windowsill.\n"
FIFO_REASON = "a FIFO (named pipe), not a regular file: name it directly to read it"
TIMEOUT = 120  # seconds; a hang fails the test instead of stalling the suite


def _cli(script: str, *args: str, stdin: bytes = b"",
         timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    entry = "main" if script == "tokcost" else "count_main"
    code = (f"import sys; from tokcost.cli.app import {entry}; sys.argv[0] = '{script}'; "
            f"{entry}()")
    proc = subprocess.run([sys.executable, "-c", code, *args], input=stdin,
                          capture_output=True, timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(),
                                       proc.stderr.decode())


def _tokens(text: str) -> int:
    return get_tokenizer("tiktoken:o200k_base").count(text)


@pytest.fixture
def specials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder holding a text file, a FIFO, a socket and a link to a character device."""
    root = tmp_path / "tree"
    root.mkdir()
    (root / "a.txt").write_text(TEXT)
    os.mkfifo(root / "pipe")
    (root / "null").symlink_to(os.devnull)
    # A socket's path must be short (about 100 bytes): bind it by a relative name.
    monkeypatch.chdir(root)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind("s.sock")
    sock.close()
    return root


# --- FIFOs, sockets and devices ---------------------------------------------------------------


@posix
def test_a_walk_skips_fifos_sockets_and_devices_with_the_reason(specials: Path) -> None:
    skipped: list[Skipped] = []
    found = [s.path for s in walk([str(specials)], skipped=skipped)]  # stats only: cannot hang
    assert found == [str(specials / "a.txt")]
    assert {Path(s.path).name: s.reason for s in skipped} == {
        "pipe": FIFO_REASON,
        "s.sock": "a socket, not a regular file",
        "null": "a symlink, not followed: name it directly to read it",
    }
    followed: list[Skipped] = []
    assert [s.path for s in walk([str(specials)], skipped=followed, follow=True)] == found
    assert {Path(s.path).name: s.reason for s in followed}["null"] == (
        "a character device, not a regular file: name it directly to read it")


@posix
@pytest.mark.parametrize("extra", [[], ["--tokens"], ["--json"]], ids=["table", "tokens", "json"])
def test_count_goes_past_a_fifo_in_a_folder(specials: Path, extra: list[str]) -> None:
    # This hung for ever: open() on a FIFO waits for a writer.
    proc = _cli("tokcount", str(specials), *extra)
    assert proc.returncode == 0, proc.stderr
    assert f"warning: skipped {specials / 'pipe'}: {FIFO_REASON}\n" in proc.stderr
    assert "s.sock: a socket" in proc.stderr and "null: a symlink, not followed" in proc.stderr
    assert "Traceback" not in proc.stderr
    if not extra:
        assert "a.txt" in proc.stdout and f" {_tokens(TEXT)}" in proc.stdout


@posix
def test_a_fifo_named_directly_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    data = (TEXT * 50).encode()

    def writer() -> None:
        # Non-blocking open: it fails until the reader has opened the FIFO, so the
        # writer gives up (and the test fails) instead of waiting for ever.
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError as exc:
                if exc.errno != errno.ENXIO:
                    raise
                time.sleep(0.05)
                continue
            os.set_blocking(fd, True)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            return

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    proc = _cli("tokcount", str(fifo), "--json")
    thread.join(timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    doc = tokcost_json(proc.stdout)
    assert doc["total"]["bytes"] == len(data)
    assert doc["total"]["tokens"]["o200k_base"] == _tokens(data.decode())


@posix
@pytest.mark.skipif(shutil.which("bash") is None, reason="process substitution needs bash")
def test_tokcount_reads_a_process_substitution(tmp_path: Path) -> None:
    text = tmp_path / "t.txt"
    text.write_text(TEXT * 3)
    code = ("import sys; from tokcost.cli.app import count_main; sys.argv[0] = 'tokcount'; "
            "count_main()")
    proc = subprocess.run(
        ["bash", "-c", 'exec "$0" -c "$1" --total <(cat "$2") <(cat "$2")', sys.executable,
         code, str(text)], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    # Two pipes, two inputs: the same text through two FIFOs is not one file.
    assert proc.stdout == f"{2 * _tokens(TEXT * 3)}\n"
    assert proc.stderr == ""


def tokcost_json(text: str) -> dict:  # type: ignore[type-arg]
    import json

    doc = json.loads(text)
    assert isinstance(doc, dict)
    return doc


# --- a file named twice is counted once ---------------------------------------------------------


@pytest.fixture
def named(tmp_path: Path) -> Path:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text(TEXT)
    (tmp_path / "d" / "b.txt").write_text("Tokens cost money.\n")
    if os.name == "posix":
        (tmp_path / "link.txt").symlink_to(tmp_path / "d" / "a.txt")
        os.link(tmp_path / "d" / "a.txt", tmp_path / "hard.txt")
    return tmp_path


@pytest.mark.parametrize(
    ("args", "files", "notes"),
    [
        pytest.param(["d/a.txt", "d/a.txt"], 1, ["skipped d/a.txt: the same file as d/a.txt"],
                     id="twice"),
        pytest.param(["d/a.txt", "d"], 2, ["skipped d/a.txt: the same file as d/a.txt"],
                     id="file-then-folder"),
        pytest.param(["d", "d/a.txt"], 2, ["skipped d/a.txt: the same file as d/a.txt"],
                     id="folder-then-file"),
        pytest.param(["d", "d"], 2, ["skipped d: the same folder as d (counted once)"],
                     id="folder-twice"),
        pytest.param(["d", "link.txt"], 2, ["skipped link.txt: the same file as d/a.txt"],
                     id="symlink", marks=posix),
        pytest.param(["hard.txt", "d"], 2, ["skipped d/a.txt: the same file as hard.txt"],
                     id="hard-link", marks=posix),
        pytest.param(["hard.txt", "link.txt", "d"], 2,
                     ["skipped 2 paths to files counted already (the same device and inode, "
                      "as du counts); --verbose lists them"], id="many", marks=posix),
    ],
)
def test_a_file_named_twice_is_counted_once(named: Path, monkeypatch: pytest.MonkeyPatch,
                                            runner, args: list[str], files: int,  # type: ignore[no-untyped-def]
                                            notes: list[str]) -> None:
    from tokcost.cli.app import app

    monkeypatch.chdir(named)
    result = tokcost.count(args)
    once = tokcost.count(["d"]) if files == 2 else tokcost.count(["d/a.txt"])
    assert len(result.files) == files
    assert result.total_tokens() == once.total_tokens()
    assert result.total_bytes == once.total_bytes
    cli = runner.invoke(app, ["count", *args])
    assert cli.exit_code == 0, cli.output
    warnings = [line for line in cli.stderr.splitlines() if line.startswith("warning:")]
    assert [w.removeprefix("warning: ") for w in warnings] == \
        [n if "lists them" in n or "folder" in n else n + " (counted once)" for n in notes]
    assert "Traceback" not in cli.output


@posix
def test_hard_links_are_listed_with_verbose(named: Path, monkeypatch: pytest.MonkeyPatch,
                                            runner) -> None:  # type: ignore[no-untyped-def]
    from tokcost.cli.app import app

    monkeypatch.chdir(named)
    cli = runner.invoke(app, ["count", "d", "hard.txt", "link.txt", "--verbose"])
    assert cli.exit_code == 0, cli.output
    assert cli.stderr.splitlines() == [
        "warning: skipped hard.txt: " + same_file_reason("d/a.txt"),
        "warning: skipped link.txt: " + same_file_reason("d/a.txt"),
    ]


def test_stdin_named_twice_is_read_once() -> None:
    result = tokcost.count(Inputs(paths=["-", "-"], stdin=io.BytesIO(TEXT.encode())))
    assert [f.path for f in result.files] == ["<stdin>"]
    assert result.total_tokens() == _tokens(TEXT)
    assert result.warnings == ("skipped <stdin>: named twice (read once)",)


def test_walk_lists_every_path_unless_asked_for_unique(named: Path) -> None:
    # Other walkers (budgets match paths) still see each path; counting asks for unique.
    a = str(named / "d" / "a.txt")
    assert [s.path for s in walk([a, a])] == [a, a]
    skipped: list[Skipped] = []
    assert [s.path for s in walk([a, a], visited=Visited(), skipped=skipped)] == [a]
    assert skipped == [Skipped(a, same_file_reason(a))]
    toks = {"o": get_tokenizer("o200k_base")}
    assert len(count_paths(Inputs(paths=[a, a]), toks).files) == 2
    once = count_paths(Inputs(paths=[a, a]), toks, unique=True)
    assert len(once.files) == 1 and once.skipped == [Skipped(a, same_file_reason(a))]


# --- progress moves with bytes ------------------------------------------------------------------


def test_progress_moves_block_by_block_and_ends_at_the_total(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_text(TEXT * 1000)  # 65 KB: 16 blocks of 4 KiB
    (tmp_path / "logo.png").write_bytes(b"\x89PNG\x00" + b"x" * 5000)  # skipped: not read
    (tmp_path / "small.txt").write_text("hi\n")
    size = sum(p.stat().st_size for p in tmp_path.iterdir())
    calls: list[tuple[str, int, int]] = []
    report = count_paths(Inputs(paths=[str(tmp_path)]), {"o": get_tokenizer("o200k_base")}, block_bytes=4096, progress=lambda *call: calls.append(call))
    assert {stage for stage, _, _ in calls} == {"count"}
    assert {total for _, _, total in calls} == {size}  # walked first: the total is known
    done = [d for _, d, _ in calls]
    assert done == sorted(set(done)), "done only grows"
    assert done[-1] == size
    # The big file (first in walk order) reports each block as it is read, not once at its end.
    during_big = [d for d in done if d <= big.stat().st_size]
    assert len(during_big) >= big.stat().st_size // 4096
    assert during_big[0] <= 4096
    assert report.total_bytes == size - (tmp_path / "logo.png").stat().st_size


def test_progress_total_is_unknown_with_a_stream(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(TEXT)
    calls: list[tuple[str, int, int]] = []
    tokcost.count(Inputs(paths=[str(tmp_path / "a.txt"), "-"], stdin=io.BytesIO(b"hello")),
                  progress=lambda *call: calls.append(call))
    assert calls == [("count", len(TEXT), 0), ("count", len(TEXT) + 5, 0)]


def test_a_long_walk_reports_the_files_it_finds(tmp_path: Path) -> None:
    for i in range(LISTED_EVERY + 1):
        (tmp_path / f"f{i:04}.txt").write_text("x")
    calls: list[tuple[str, int, int]] = []
    tokcost.count([str(tmp_path)], progress=lambda *call: calls.append(call))
    assert calls[0] == ("walk", LISTED_EVERY, 0)
    assert [c[1] for c in calls[1:]] == list(range(1, LISTED_EVERY + 2))
    assert {c[2] for c in calls[1:]} == {LISTED_EVERY + 1}


# --- binary skips are one line ------------------------------------------------------------------


@pytest.fixture
def binaries(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text(TEXT)
    names = ([f"m{i}.pyc" for i in range(30)] + [f"i{i}.png" for i in range(3)]
             + ["x.so", "y.so", "z.bin", "blob"])
    for name in names:
        (tmp_path / name).write_bytes(b"\x00binary")
    return tmp_path


def test_binary_skips_are_summed_up_in_one_line(runner, binaries: Path) -> None:  # type: ignore[no-untyped-def]
    from tokcost.cli.app import app

    result = runner.invoke(app, ["count", str(binaries)])
    assert result.exit_code == 0, result.output
    assert result.stderr == ("warning: skipped 37 binary files: 30 .pyc, 3 .png, 2 .so, "
                             "2 others; --verbose lists them\n")
    verbose = runner.invoke(app, ["count", str(binaries), "--verbose"])
    lines = verbose.stderr.splitlines()
    assert len(lines) == 37
    assert f"warning: skipped {binaries / 'm0.pyc'}: binary (NUL byte at offset 0)" in lines
    # The JSON document lists every one either way.
    doc = tokcost_json(runner.invoke(app, ["count", str(binaries), "--json"]).stdout)
    assert len(doc["skipped"]) == 37


@posix
def test_other_reasons_stay_one_line_each_beside_the_summary(runner, binaries: Path) -> None:  # type: ignore[no-untyped-def]
    from tokcost.cli.app import app

    os.mkfifo(binaries / "pipe")
    result = runner.invoke(app, ["count", str(binaries)])
    assert result.stderr.splitlines() == [
        f"warning: skipped {binaries / 'pipe'}: {FIFO_REASON}",
        "warning: skipped 37 binary files: 30 .pyc, 3 .png, 2 .so, 2 others; --verbose lists them",
    ]


REASONS = st.sampled_from([
    "binary (NUL byte at offset 0)", same_file_reason("first.txt"), FIFO_REASON,
    "unreadable (Permission denied)", "broken symlink",
])
SKIPS = st.lists(st.builds(Skipped, st.from_regex(r"[a-z]{1,3}(\.[a-z]{1,3})?", fullmatch=True),
                           REASONS), max_size=30)


@settings(max_examples=200, deadline=None)
@given(skipped=SKIPS)
def test_skip_notes_say_everything_in_few_lines(skipped: list[Skipped]) -> None:
    assert skip_notes(skipped, verbose=True) == tuple(s.note for s in skipped)
    binary = [s for s in skipped if s.reason.startswith("binary")]
    same = [s for s in skipped if s.reason.startswith("the same file")]
    others = [s for s in skipped if s not in binary and s not in same]
    notes = skip_notes(skipped, hint="more")
    summed = [n for n in notes if n.endswith("; more")]
    # every other reason is its own line, in order; each kind of many is one line
    assert list(notes[: len(notes) - len(summed)]) == [
        s.note for s in skipped if s in others or (s in binary and len(binary) == 1)
        or (s in same and len(same) == 1)]
    assert len(summed) == (len(binary) > 1) + (len(same) > 1)
    for line in summed:
        n = int(re.match(r"skipped (\d+)", line).group(1))  # type: ignore[union-attr]
        assert n == (len(binary) if "binary" in line else len(same))
        if "binary" in line:
            shown = sum(int(k) for k in re.findall(r"(\d+) (?:\.|with|others)", line))
            assert shown == len(binary)


# --- tokcount is tokcost count ------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["-h"], ["--bogus"], ["{dir}", "--verbose"], ["{dir}", "--json", "-t", "cl100k_base"],
     ["--truncate", "3", "{dir}/a.txt"]],
    ids=["help", "bad-flag", "table", "json", "truncate"],
)
def test_tokcount_takes_what_tokcost_count_takes(binaries: Path, args: list[str]) -> None:
    argv = [a.format(dir=binaries) for a in args]
    alone = _cli("tokcount", *argv)
    sub = _cli("tokcost", "count", *argv)
    assert alone.returncode == sub.returncode
    assert _as_tokcost_count(alone.stdout) == _as_tokcost_count(sub.stdout)
    assert _as_tokcost_count(alone.stderr) == _as_tokcost_count(sub.stderr)
    assert "Traceback" not in alone.stderr + sub.stderr


def _as_tokcost_count(text: str) -> list[str]:
    """The help and the usage errors name the program they came from (and pad to the width)."""
    return [line.rstrip().replace("Usage: tokcount ", "Usage: tokcost count ")
            .replace("'tokcount -h'", "'tokcost count -h'") for line in text.splitlines()]


def test_tokcount_version_says_the_version() -> None:
    alone = _cli("tokcount", "--version")
    sub = _cli("tokcost", "count", "--version")
    assert alone.returncode == sub.returncode == 0
    assert alone.stdout == f"tokcount (tokcost) {tokcost.__version__}\n"
    assert sub.stdout == f"tokcost {tokcost.__version__}\n" == _cli("tokcost", "--version").stdout
