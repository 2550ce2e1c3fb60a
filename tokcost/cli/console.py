"""Consoles and rendering helpers shared by every command; the consoles are made on first
use, so ``tokcost --help`` does not pay for importing rich."""

from __future__ import annotations

import io
import json
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

T = TypeVar("T")

def make_console(**options: Any) -> Console:
    """A rich Console that lets a BrokenPipeError through to tokcost's handler (SIGPIPE)."""
    from rich.console import Console
    class _PipeConsole(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError
    return _PipeConsole(**options)


class _LazyConsole:
    def __init__(self, stderr: bool) -> None:
        self._stderr = stderr
        self._console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real(), name)

    def real(self) -> Console:
        """The rich Console itself, created on first use."""
        if self._console is None:
            self._console = make_console(stderr=self._stderr, highlight=False, soft_wrap=True)
        return self._console

    def print(self, *objects: Any, **kwargs: Any) -> None:
        # Rich squeezes a wide table by cutting its cells ("poli… toke…", "2,458,7…"):
        # on a terminal it is fitted without losing a character; in a file or a CI log
        # (rich sizes a pipe as 80 columns) it prints at its natural width.
        console = self.real()
        if len(objects) == 1 and not kwargs and (console.is_terminal or not self._stderr):
            from rich.table import Table
            if isinstance(objects[0], Table):
                print_wide(objects[0], console)
                return
        console.print(*objects, **kwargs)

    # rich's progress bars enter the console: special methods are not found by __getattr__
    def __enter__(self) -> Any:
        return self.__getattr__("__enter__")()

    def __exit__(self, *exc: object) -> None:
        self.__getattr__("__exit__")(*exc)


# Data goes to stdout, diagnostics and progress to stderr, so pipes stay clean.
out = cast("Console", _LazyConsole(stderr=False))
err = cast("Console", _LazyConsole(stderr=True))


def table(*columns: str, title: str | None = None, footer: bool = False, header: bool = True,
          text: int = 1) -> Table:
    """A table in tokcost's one style: no box, a bold header, no padding at either end; of
    ``columns``, the first ``text`` are left-justified, the others (numbers) right; callers
    fold paths."""
    from rich.table import Table
    grid = Table(box=None, pad_edge=False, show_edge=False, header_style="bold",
                 title=title, title_justify="left", title_style="", show_footer=footer,
                 show_header=header, footer_style="", padding=(0, 1))
    for i, name in enumerate(columns):
        grid.add_column(name, justify="right" if i >= text else "left")
    return grid


def print_json(data: Any) -> None:
    """JSON on stdout; ASCII with \\u escapes where stdout's encoding cannot hold a string."""
    text = json.dumps(data, indent=2, ensure_ascii=False)
    try:
        text.encode(sys.stdout.encoding or "utf-8")
    except UnicodeEncodeError:
        text = json.dumps(data, indent=2, ensure_ascii=True)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def error(message: str) -> None:
    """``error: message`` on stderr, one line, as ``warn`` prints a warning (escaped)."""
    from rich.markup import escape
    err.print(f"[bold red]error:[/bold red] {escape(escape_controls(message))}", markup=True)


def warn(message: str) -> None:
    """``warning: message`` on stderr, one line, brackets and control characters escaped."""
    from rich.markup import escape
    err.print(f"[yellow]warning:[/yellow] {escape(escape_controls(message))}", markup=True)


# C0 and C1 controls, DEL, and lone surrogates (os.fsdecode's stand-ins for non-UTF-8 bytes).
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_C_ESCAPES = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v",
              "\f": "\\f", "\r": "\\r"}


def escape_controls(text: str) -> str:
    r"""``text`` with control characters escaped as ``ls -b`` does (``\n``, ``\033``, ``\377``)."""
    return _CONTROLS.sub(_escape_control, text)


def _escape_control(match: re.Match[str]) -> str:
    char = match.group()
    if char in _C_ESCAPES:
        return _C_ESCAPES[char]
    if "\udc80" <= char <= "\udcff":  # surrogateescape: the byte itself
        return f"\\{ord(char) - 0xDC00:03o}"
    return "".join(f"\\{b:03o}" for b in char.encode("utf-8", "surrogatepass"))


def progress_enabled() -> bool:
    """Progress bars only when a person is watching stderr."""
    return bool(err.is_terminal)


def with_progress(label: str, run: Callable[..., T], request: Any) -> T:
    """``run(request, on_progress=...)`` behind a done/total bar on stderr when a person
    watches it; ``run(request)`` alone into a pipe."""
    if not progress_enabled():
        return run(request)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), console=err,
                  transient=True) as progress:
        task = progress.add_task(label, total=None)
        return run(request, on_progress=lambda done, total: progress.update(
            task, completed=done, total=total))


def print_wide(table: Any, console: Console | None = None) -> None:
    """Print a table at its natural width even into a pipe (rich assumes 80 columns)."""
    from rich.measure import Measurement
    console = console or cast("_LazyConsole", out).real()
    if console.is_terminal:
        print_fitted(console, table)
        return
    needed = Measurement.get(console, console.options.update_width(_UNBOUNDED), table).maximum
    # Rich pads every line to the table's width: a file gets them without the padding.
    buffer = io.StringIO()
    make_console(file=buffer, width=max(needed, console.width), highlight=False, soft_wrap=True,
                 force_terminal=False, no_color=console.no_color,
                 color_system=console.color_system).print(table)
    console.file.write("".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines()))


#: A column that folds (a path) keeps this many characters a line, even past the terminal.
FOLD_MIN = 12
_UNBOUNDED = 100_000


def print_fitted(console: Console, table: Table) -> None:
    """Print ``table`` on ``console`` (a terminal) without cutting a cell: see ``fit_table``."""
    fitted, width = fit_table(console, table)
    if width <= console.width:
        console.print(fitted)
        return
    # rich cuts a renderable to its console's width: print on a console ``width`` wide
    make_console(file=console.file, width=width, highlight=False, soft_wrap=True,
                 force_terminal=console.is_terminal, no_color=console.no_color,
                 color_system=console.color_system).print(fitted)


def fit_table(console: Console, table: Table) -> tuple[Table, int]:
    """``table`` laid out for ``console.width`` columns, and the width it then takes: only
    ``overflow="fold"`` columns give way, widest first, down to their header or ``FOLD_MIN``."""
    import copy
    from dataclasses import replace

    from rich.measure import Measurement
    if table.width is not None:
        return table, console.width
    options = console.options.update_width(_UNBOUNDED)
    naturals: list[int] = []
    floors: list[int] = []
    for column in table.columns:
        labels = [column.header] if table.show_header else []
        labels += [column.footer] if table.show_footer else []
        label = max((_natural_width(console, options, c) for c in labels), default=0)
        cells = (_natural_width(console, options, c) for c in column.cells)
        natural = column.width if column.width is not None else max([label, *cells], default=0)
        natural = max(natural, 1)  # rich gives an empty column one character too
        naturals.append(natural)
        foldable = column.overflow == "fold" and column.width is None and not column.no_wrap
        floors.append(max(label, min(natural, FOLD_MIN)) if foldable else natural)
    # What the columns' own widths leave out (padding, borders, the edge), measured on
    # one row of cells as wide as each column: rich measures a big table slowly.
    skeleton = copy.copy(table)
    skeleton.columns = [replace(column, _cells=["x" * n])
                        for column, n in zip(table.columns, naturals, strict=True)]
    overhead = Measurement.get(console, options, skeleton).maximum - sum(naturals)
    excess = sum(naturals) + overhead - console.width
    if excess <= 0:
        return table, console.width
    widths = list(naturals)
    while excess > 0:
        give = [i for i, w in enumerate(widths) if w > floors[i]]
        if not give:
            break
        top = max(widths[i] for i in give)
        for i in give:
            if widths[i] == top and excess > 0:
                widths[i] -= 1
                excess -= 1
    fitted = copy.copy(table)
    fitted.columns = [replace(column, width=w)
                      for column, w in zip(table.columns, widths, strict=True)]
    return fitted, max(console.width, sum(widths) + overhead)


def _natural_width(console: Console, options: Any, cell: Any) -> int:
    """The width ``cell`` takes unwrapped (plain text measured many times faster than rich)."""
    from rich.cells import cell_len
    from rich.measure import Measurement
    from rich.text import Text
    plain = cell.plain if isinstance(cell, Text) else cell
    markup = isinstance(cell, str) and "[" in cell
    if isinstance(plain, str) and "\t" not in plain and not markup:
        return max(cell_len(line) for line in plain.split("\n"))
    return Measurement.get(console, options, cell).maximum

