"""Consoles and small rendering helpers shared by every command module.

The consoles are created on first use: importing rich costs tens of
milliseconds that ``tokcost --help`` should not pay.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from rich.console import Console


def make_console(**options: Any) -> Console:
    """A rich Console whose closed pipe reaches tokcost's handler (death by SIGPIPE,
    like ``cat``): rich would swallow the BrokenPipeError and exit 1 by itself."""
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
        if self._console is None:
            self._console = make_console(stderr=self._stderr, highlight=False, soft_wrap=True)
        return getattr(self._console, name)

    def real(self) -> Console:
        """The rich Console itself, created on first use."""
        self.__getattr__("print")
        assert self._console is not None
        return self._console

    def print(self, *objects: Any, **kwargs: Any) -> None:
        # Rich sizes a pipe as 80 columns and squeezes tables into "poli… toke…"
        # headers; in a file or a CI log a table prints at its natural width instead.
        console = self.real()
        if not self._stderr and not console.is_terminal and len(objects) == 1 and not kwargs:
            from rich.table import Table

            if isinstance(objects[0], Table):
                print_wide(objects[0])
                return
        console.print(*objects, **kwargs)

    # rich's Live display (progress bars) enters the console as a context manager;
    # special methods are looked up on the type, so __getattr__ does not forward them.
    def __enter__(self) -> Any:
        return self.__getattr__("__enter__")()

    def __exit__(self, *exc: object) -> None:
        self.__getattr__("__exit__")(*exc)


# Data goes to stdout, diagnostics and progress to stderr, so pipes stay clean.
out = cast("Console", _LazyConsole(stderr=False))
err = cast("Console", _LazyConsole(stderr=True))


def print_json(data: Any) -> None:
    """Print JSON to stdout exactly (no rich markup, no wrapping)."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def warn(message: str) -> None:
    err.print(f"[yellow]warning:[/yellow] {message}", markup=True, highlight=False)


def progress_enabled() -> bool:
    """Progress bars only when a person is watching stderr."""
    return bool(err.is_terminal)


def print_wide(table: Any) -> None:
    """Print a table at its natural width, even when stdout is a pipe (rich assumes 80):
    ids, specs and numbers must not be cut or wrapped in a file or a CI log."""
    from rich.measure import Measurement

    console = cast("_LazyConsole", out).real()
    needed = Measurement.get(console, console.options.update_width(1000), table).maximum
    if needed <= console.width:
        console.print(table)
        return
    wide = make_console(file=sys.stdout, width=needed, highlight=False, soft_wrap=True,
                   force_terminal=out.is_terminal, no_color=out.no_color)
    wide.print(table)
