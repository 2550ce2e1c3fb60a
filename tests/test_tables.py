"""Tables on a terminal (issue: a new user's report): numbers and labels are never cut,
a path folds rather than lose its end, a table that cannot fit comes out wider than the
terminal; an empty count prints no table; control characters in a path are escaped.

A terminal is a rich Console with ``force_terminal=True`` put in place of the lazily made
stdout console, so CliRunner still captures what it prints.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from typer.testing import CliRunner

from tokcost.cli import console as console_module
from tokcost.cli.app import app
from tokcost.cli.console import (
    FOLD_MIN,
    escape_controls,
    fit_table,
    make_console,
    print_fitted,
)

runner = CliRunner()

LONG_PATH = "tokcost/schemas/deeply/nested/folder/tokcost.schema.json"


def _console(width: int) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=width, force_terminal=True, color_system=None,
                   highlight=False, soft_wrap=True), buf


def _count_like_table(paths: list[str], tokenizers: int) -> Table:
    """A table shaped like count's: a path column that folds, then number columns."""
    table = Table(show_footer=True, box=None, pad_edge=False)
    table.add_column("file", footer=f"total ({len(paths)} files)", overflow="fold")
    table.add_column("bytes", justify="right", footer="15,600,000")
    for i in range(tokenizers):
        table.add_column(f"o200k_base_{i}", justify="right", footer="≈2,900,002")
    for path in paths:
        table.add_row(path, "12,000,000", *["≈2,458,771"] * tokenizers)
    return table


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def _file_column(text: str, width: int) -> str:
    """The file column's text, its folded lines joined again (it is the first column)."""
    return "".join(line[:width].strip() for line in _lines(text)[1:-1])


@pytest.mark.parametrize("width", [40, 60, 80, 200])
@pytest.mark.parametrize("tokenizers", [1, 2, 5])
def test_numbers_and_labels_are_never_cut(width: int, tokenizers: int) -> None:
    table = _count_like_table([LONG_PATH, "b.txt"], tokenizers)
    console, buf = _console(width)
    print_fitted(console, table)
    text = buf.getvalue()
    assert "…" not in text
    lines = _lines(text)
    header = lines[0].split()
    assert header == ["file", "bytes", *[f"o200k_base_{i}" for i in range(tokenizers)]]
    footer = lines[-1]
    assert footer.startswith("total (2 files)")
    assert footer.split()[3:] == ["15,600,000", *["≈2,900,002"] * tokenizers]
    for line in lines[1:-1]:  # a number is whole or absent (a path's folded line)
        assert re.sub(r"[\d,≈]+", "", line.split(maxsplit=1)[-1]).strip() in ("", line.strip())
    assert text.count("≈2,458,771") == 2 * tokenizers


@pytest.mark.parametrize("width", [40, 60, 80])
def test_a_path_folds_and_keeps_every_character(width: int) -> None:
    table = _count_like_table([LONG_PATH], 2)
    fitted, needed = fit_table(Console(width=width), table)
    console, buf = _console(width)
    print_fitted(console, table)
    text = buf.getvalue()
    path_width = fitted.columns[0].width
    assert path_width is not None and path_width < len(LONG_PATH)
    assert _file_column(text, path_width) == LONG_PATH
    assert all(len(line) <= max(width, needed) for line in _lines(text))


def test_a_table_that_fits_is_left_as_it_is() -> None:
    table = _count_like_table(["a.txt"], 2)
    fitted, width = fit_table(Console(width=200), table)
    assert fitted is table and width == 200


def test_a_table_too_wide_even_folded_is_printed_wider_than_the_terminal() -> None:
    table = _count_like_table([LONG_PATH], 6)
    console, buf = _console(60)
    fitted, needed = fit_table(console, table)
    assert needed > 60
    assert fitted.columns[0].width == len("total (1 files)")  # the footer never wraps
    print_fitted(console, table)
    lines = _lines(buf.getvalue())
    assert max(len(line) for line in lines) == needed
    assert "…" not in buf.getvalue()


def test_fold_keeps_at_least_fold_min_characters() -> None:
    table = Table(box=None, pad_edge=False)
    table.add_column("f", overflow="fold")
    table.add_column("n", justify="right")
    table.add_row("x" * 40, "9" * 70)
    fitted, needed = fit_table(Console(width=60), table)
    assert fitted.columns[0].width == FOLD_MIN and fitted.columns[1].width == 70
    assert needed == FOLD_MIN + 2 + 70  # a space of padding on each side between them


_cell = st.text(alphabet="ab9,./≈ ", min_size=1, max_size=30).map(str.strip).filter(bool)


@given(rows=st.lists(st.lists(_cell, min_size=3, max_size=3), min_size=1, max_size=4),
       width=st.integers(min_value=20, max_value=120), boxed=st.booleans())
@settings(max_examples=60, deadline=None)
def test_fitting_never_loses_a_character(rows: list[list[str]], width: int,
                                         boxed: bool) -> None:
    """Every cell of a column that does not fold comes out whole, on one line; the
    folded column's text comes out in full; nothing carries an ellipsis; the table is
    no wider than the terminal unless it has to be."""
    from rich import box

    table = Table(box=box.SIMPLE_HEAD if boxed else None, pad_edge=False, show_edge=False)
    table.add_column("path", overflow="fold")
    table.add_column("count", justify="right")
    table.add_column("label")
    for row in rows:
        table.add_row(*row)
    console, buf = _console(width)
    fitted, needed = fit_table(console, table)
    print_fitted(console, table)
    text = buf.getvalue()
    assert "…" not in text
    lines = _lines(text)
    assert max(len(line) for line in lines) <= needed
    for _, count, label in rows:
        assert any(count in line for line in lines) and any(label in line for line in lines)
    path_width = fitted.columns[0].width or max(len(row[0]) for row in [["path"], *rows])
    body = lines[2:] if boxed else lines[1:]  # under the header (and its rule)
    shown = "".join(line[:path_width].replace(" ", "") for line in body)
    assert shown == "".join(row[0].replace(" ", "") for row in rows)


@given(st.text(alphabet="ab 9,.[]/\n\t日本é😀≈", min_size=1, max_size=40))
@settings(max_examples=150, deadline=None)
def test_the_quick_width_is_what_rich_measures(text: str) -> None:
    from rich.errors import MarkupError
    from rich.measure import Measurement
    from rich.text import Text

    from tokcost.cli.console import _natural_width

    console = Console(width=80)
    options = console.options.update_width(10_000)
    for cell in (text, Text(text)):
        try:
            want = Measurement.get(console, options, cell).maximum
        except MarkupError:  # a str cell is markup: "[/]" is no more valid here than in rich
            with pytest.raises(MarkupError):
                _natural_width(console, options, cell)
            continue
        assert _natural_width(console, options, cell) == want, repr(cell)


# --- count on a terminal ---------------------------------------------------------------------


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    """Make stdout a terminal of the given width (CliRunner still captures it)."""

    def make(width: int) -> None:
        console = make_console(width=width, force_terminal=True, color_system=None,
                               highlight=False, soft_wrap=True)
        monkeypatch.setattr(console_module.out, "_console", console)

    return make


def _invoke(args: list[str]) -> Any:
    result = runner.invoke(app, args)
    assert "Traceback" not in result.output
    return result


@pytest.fixture
def deep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "tokcost" / "schemas" / "deeply" / "nested"
    folder.mkdir(parents=True)
    (folder / "tokcost.schema.json").write_text('{"title": "tokcost"}\n' * 400)
    (folder / "b.txt").write_text("hello world\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("width", [80, 200])
def test_count_on_a_terminal_cuts_nothing(terminal: Callable[[int], None], deep: Path,
                                          width: int) -> None:
    terminal(width)
    result = _invoke(["count", "tokcost", "-t", "o200k_base", "-t", "cl100k_base",
                      "-m", "gpt-4o", "-m", "claude-sonnet-4-5"])
    assert result.exit_code == 0, result.output
    table = result.stdout.split("\ngpt-4o:")[0]
    assert "…" not in result.stdout
    lines = _lines(table)
    assert lines[0].split() == ["file", "bytes", "chars", "o200k_base", "cl100k_base",
                                "gpt-4o", "≈claude-sonnet-4-5"]
    assert lines[-1].startswith("total (2 files)")
    numbers = [line.split()[-6:] for line in lines[1:] if re.search(r"\d\s*$", line)]
    assert len(numbers) == 3  # two files and the total, each with six whole numbers
    assert all(re.fullmatch(r"≈?\d{1,3}(,\d{3})*", n) for row in numbers for n in row)
    if width == 200:
        assert "tokcost/schemas/deeply/nested/tokcost.schema.json " in table


def test_count_folds_a_long_path_at_80_columns(terminal: Callable[[int], None],
                                               tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    name = "a-rather-long-folder-name-that-goes-on/and-on-and-on/until-the-file.txt"
    (tmp_path / Path(name).parent).mkdir(parents=True)
    (tmp_path / name).write_text("x " * 5000)
    monkeypatch.chdir(tmp_path)
    terminal(80)
    result = _invoke(["count", name, "-t", "o200k_base", "-t", "cl100k_base"])
    assert result.exit_code == 0, result.output
    lines = _lines(result.stdout)
    assert all(len(line) <= 80 for line in lines)
    assert len(lines) > 2  # header, the folded path over several lines
    assert "".join(line.split()[0] for line in lines[1:]) == name
    assert lines[1].split()[1:3] == ["10,000", "10,000"]


# --- nothing counted: no table ---------------------------------------------------------------


@pytest.mark.parametrize(("extra", "stdout"), [
    ([], ""),
    (["-m", "gpt-4o"], ""),
    (["--csv"], "path,bytes,chars,o200k_base\nTOTAL,0,0,0\n"),
    (["--total"], "0\n"),
])
def test_an_empty_folder_prints_no_table(tmp_path: Path, extra: list[str], stdout: str) -> None:
    (tmp_path / "e").mkdir()
    result = _invoke(["count", str(tmp_path / "e"), *extra])
    assert result.exit_code == 0, result.output
    assert result.stdout == stdout
    assert result.stderr == f"warning: no files in {tmp_path / 'e'}/\n"  # and why


def test_an_empty_folder_still_gives_a_json_document(tmp_path: Path) -> None:
    import json

    result = _invoke(["count", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["files"] == [] and doc["tokenizers"][0]["label"] == "o200k_base"


# --- a path's control characters, escaped in the table ---------------------------------------

posix = pytest.mark.skipif(os.name != "posix", reason="POSIX file names take any byte but / and NUL")

NAMES = [
    pytest.param(b"new\nline.txt", "new\\nline.txt", id="newline"),
    pytest.param(b"tab\there.txt", "tab\\there.txt", id="tab"),
    pytest.param(b"esc\x1b[31mred.txt", "esc\\033[31mred.txt", id="escape-sequence"),
    pytest.param(b"cr\rhere.txt", "cr\\rhere.txt", id="carriage-return"),
    pytest.param(b"bad\xffname.txt", "bad\\377name.txt", id="not-utf8"),
    pytest.param(b"c1\xc2\x85.txt", "c1\\302\\205.txt", id="c1-control"),
    pytest.param(b"a[red]b.txt", "a[red]b.txt", id="brackets-are-no-markup"),
    pytest.param(b"plain \xc3\xa9.txt", "plain \xe9.txt", id="printable-kept"),
]


@posix
@pytest.mark.parametrize(("name", "shown"), NAMES)
def test_a_path_shows_its_control_characters_escaped(tmp_path: Path, name: bytes, shown: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import csv

    folder = tmp_path / "odd"
    folder.mkdir()
    with open(os.path.join(os.fsencode(folder), name), "w") as f:
        f.write("hi")
    (folder / "z.txt").write_text("hi")
    monkeypatch.chdir(tmp_path)
    result = _invoke(["count", "odd"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 4, result.stdout  # header, two files, total: one line each
    assert lines[1].startswith(f"odd/{shown} "), lines[1]
    if b"\xff" in name:
        return  # not UTF-8: CliRunner's strict stdout cannot take it as CSV (a shell's can)
    # CSV quotes what it must and keeps the name as it is.
    as_csv = _invoke(["count", "odd", "--csv"])
    rows = list(csv.reader(io.StringIO(as_csv.stdout, newline="")))
    assert len(rows) == 4 and os.fsencode(rows[1][0]) == b"odd/" + name
    assert rows[1][1:] == ["2", "2", "1"]


def test_escape_controls() -> None:
    assert escape_controls("a\x00b\x7fc") == "a\\000b\\177c"
    assert escape_controls("C:\\Users\\me.txt") == "C:\\Users\\me.txt"
    assert escape_controls("日本語 é") == "日本語 é"


# --- count's options in --help ---------------------------------------------------------------


def _option_rows(help_text: str) -> dict[str, str]:
    """Each option's first help line, by its long name ('│ -j, --jobs N  ...')."""
    rows: dict[str, str] = {}
    for line in help_text.splitlines():
        words = line.strip("│ ").split()
        for word in words[:2]:
            if word.startswith("--"):
                rows[word.rstrip(",")] = line
    return rows


@pytest.mark.parametrize(("flag", "metavar"), [("--jobs", "N"), ("--chat", "FILE"),
                                               ("--catalog", "FILE")])
def test_count_help_metavars(flag: str, metavar: str) -> None:
    result = runner.invoke(app, ["count", "--help"], env={"COLUMNS": "80"})
    row = _option_rows(result.stdout)[flag]
    assert f" {metavar} " in row and "<str>" not in row and "<int range>" not in row, row


def test_count_help_column_is_wide_enough_at_80_columns() -> None:
    result = runner.invoke(app, ["count", "--help"], env={"COLUMNS": "80"})
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip("│ ").startswith("--tokens"))
    rest = next(i for i, line in enumerate(lines[start + 1:], start + 1)
                if line.strip("│ ").startswith("--"))
    assert rest - start <= 6, "\n".join(lines[start:rest])


def test_count_verbose_help_says_what_the_default_does() -> None:
    result = runner.invoke(app, ["count", "--help"], env={"COLUMNS": "200"})
    text = " ".join(result.stdout.replace("│", " ").split())
    assert ("--verbose List every skipped file. By default several binary files, or several "
            "paths to files already counted, are summed up in one line.") in text


def test_count_jobs_is_still_checked() -> None:
    result = _invoke(["count", "-", "--jobs", "0"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "--jobs" in result.stderr


# --- the other commands' tables on a terminal ------------------------------------------------

OTHER_TABLES = [
    pytest.param(["price", "-m", "claude-sonnet-4-5", "--input-tokens", "250k",
                  "--cached-tokens", "200k", "--output-tokens", "2k"], "cached input", id="price"),
    pytest.param(["kvmem", "estimate", "-m", "llama-3.1-70b", "--context", "1k,8k,32k,128k",
                  "--gpu", "H100", "--tp", "4"], "max concurrency", id="kvmem-estimate"),
    pytest.param(["models", "list"], "claude-sonnet-4-5", id="models-list"),
    pytest.param(["models", "list", "--gpus"], "bf16 TFLOP/s", id="models-gpus"),
    pytest.param(["compare", "--builtin", "-t", "o200k_base", "--kind", "prose", "--no-chart"],
                 "Vietnamese", id="compare"),
]


@pytest.mark.parametrize("width", [80, 200])
@pytest.mark.parametrize(("args", "cell"), OTHER_TABLES)
def test_other_tables_on_a_terminal_cut_nothing(terminal: Callable[[int], None],
                                                args: list[str], cell: str, width: int) -> None:
    terminal(width)
    result = _invoke(args)
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout and cell in result.stdout


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
def test_with_progress_bar_only_on_a_terminal(terminal: bool) -> None:
    """kvmem simulate and compare share one bar: on a terminal the library gets a callback
    and the bar draws done/total on stderr; into a pipe it gets none and stderr stays empty."""
    buffer = io.StringIO()
    stderr = Console(file=buffer, force_terminal=terminal, width=80)
    seen: list[bool] = []

    def run(request: int, on_progress: Callable[[int, int], None] | None = None) -> int:
        seen.append(on_progress is not None)
        if on_progress is not None:
            on_progress(3, 7)
        return request * 2

    original = console_module.err._console  # type: ignore[attr-defined]
    console_module.err._console = stderr  # type: ignore[attr-defined]
    try:
        assert console_module.with_progress("serving", run, 21) == 42
    finally:
        console_module.err._console = original  # type: ignore[attr-defined]
    assert seen == [terminal]
    assert ("serving" in buffer.getvalue()) is terminal
