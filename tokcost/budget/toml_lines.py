"""Where each key of a TOML text is written (tomllib keeps no positions): a scanner of
TOML's shapes (headers, dotted and quoted keys, arrays and inline tables across lines,
strings that hide ``=`` or brackets) run on text tomllib has already accepted."""

from __future__ import annotations

import bisect
import contextlib
import re
from collections.abc import Mapping

KeyPath = tuple[str | int, ...]

_SPACE = re.compile(r"(?:[ \t\r]+|#[^\n]*)*")  # spaces and a comment, within the line
_BLANK = re.compile(r"(?:[ \t\r\n]+|#[^\n]*)*")  # ... and line ends
# One part of a dotted key: bare, "basic" (kept as written) or 'literal'.
_KEY = re.compile(r"""[ \t]*(?:([A-Za-z0-9_-]+)|"((?:\\.|[^"\\])*)"|'([^']*)')[ \t]*""")
_DOTTED = re.compile(rf"{_KEY.pattern}(?:\.{_KEY.pattern})*")
# A string (a multi-line one may end in up to five quotes), else all up to a delimiter.
_SCALAR = re.compile(r'"""(?:\\.|[^\\])*?"""+' r"|'''.*?'''+" r'|"(?:\\.|[^"\\])*"' r"|'[^']*'"
                     r"|[^,\]}\n#]*", re.DOTALL)


def key_lines(text: str) -> dict[KeyPath, int]:
    """1-based line of every table, array element and key, by its full path."""
    scanner = _Scanner(text)
    with contextlib.suppress(IndexError, ValueError):  # tomllib accepted the text already
        scanner.document()
    return scanner.lines


def nearest(lines: Mapping[KeyPath, int], path: KeyPath) -> int | None:
    """The line of ``path``, else of its closest written parent."""
    return next((lines[path[:n]] for n in range(len(path), 0, -1) if path[:n] in lines), None)


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.newlines = [n for n, ch in enumerate(text) if ch == "\n"]
        self.lines: dict[KeyPath, int] = {}
        self.last: dict[KeyPath, int] = {}  # array-of-tables path -> its last element

    def line(self) -> int:
        return bisect.bisect_left(self.newlines, self.i) + 1

    def skip(self, pattern: re.Pattern[str]) -> str:
        """Move past ``pattern``; the character then under the cursor ('' at the end)."""
        # Each pattern may match nothing, so it always matches.
        self.i = pattern.match(self.text, self.i).end()  # type: ignore[union-attr]
        return self.text[self.i : self.i + 1]

    def expect(self, token: str) -> None:
        self.skip(_SPACE)
        if not self.text.startswith(token, self.i):
            raise ValueError(token)
        self.i += len(token)

    def mark(self, path: KeyPath, line: int) -> None:
        """Mark ``path`` and each of its parents at ``line``, unless already marked."""
        for end in range(1, len(path) + 1):
            self.lines.setdefault(path[:end], line)

    def document(self) -> None:
        table: KeyPath = ()
        while self.skip(_BLANK):
            line = self.line()
            if self.text.startswith("[", self.i):
                double = self.text.startswith("[[", self.i)
                self.i += 2 if double else 1
                table = self.resolve(self.key())
                self.expect("]]" if double else "]")
                if double:
                    self.last[table] = self.last.get(table, -1) + 1
                    table = (*table, self.last[table])
                self.mark(table, line)
            else:
                self.assignment(table, line)

    def resolve(self, parts: tuple[str, ...]) -> KeyPath:
        """A header's path, through the last element of each array of tables on the way."""
        path: KeyPath = ()
        for n, part in enumerate(parts):
            path = (*path, part)
            if n < len(parts) - 1 and path in self.last:
                path = (*path, self.last[path])
        return path

    def key(self) -> tuple[str, ...]:
        """A dotted key: ``a``, ``"a.b"``, ``a . 'b' . c``."""
        found = _DOTTED.match(self.text, self.i)
        if found is None:
            raise ValueError("key")
        self.i = found.end()
        return tuple(next(g for g in part.groups() if g is not None)
                     for part in _KEY.finditer(found.group()))

    def assignment(self, table: KeyPath, line: int) -> None:
        path = (*table, *self.key())
        self.mark(path, line)
        self.expect("=")
        self.value(path)

    def value(self, path: KeyPath) -> None:
        opening = self.skip(_SPACE)
        if opening in ("[", "{"):
            self.i += 1
            self.items(path, "]" if opening == "[" else "}")
        else:
            self.skip(_SCALAR)

    def items(self, path: KeyPath, end: str) -> None:
        """An array's values (numbered) or an inline table's assignments, up to ``end``."""
        index = 0
        while (ahead := self.skip(_BLANK)) != end:
            if not ahead:
                raise ValueError(end)
            if end == "]":
                self.lines.setdefault((*path, index), self.line())
                self.value((*path, index))
                index += 1
            else:
                self.assignment(path, self.line())
            if self.skip(_BLANK) == ",":
                self.i += 1
        self.i += 1
