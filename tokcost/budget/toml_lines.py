"""Where each key of a TOML text is written (tomllib keeps no positions): a scanner of
TOML's shapes (headers, dotted and quoted keys, arrays and inline tables across lines,
strings that hide ``=`` or brackets) run on text tomllib has already accepted.

>>> lines = key_lines('[tool.tokcost]\\nmodel = "x"\\n\\n[[tool.tokcost.budgets]]\\nname = "a"\\n')
>>> lines[("tool", "tokcost", "model")], lines[("tool", "tokcost", "budgets", 0, "name")]
(2, 5)
"""

from __future__ import annotations

import bisect
import contextlib
import re
from collections.abc import Mapping

KeyPath = tuple[str | int, ...]

_BARE = re.compile(r"[A-Za-z0-9_-]+")


def key_lines(text: str) -> dict[KeyPath, int]:
    """1-based line of every table, array element and key, by its full path."""
    scanner = _Scanner(text)
    with contextlib.suppress(IndexError, ValueError):  # tomllib accepted the text already
        scanner.document()
    return scanner.lines


def nearest(lines: Mapping[KeyPath, int], path: KeyPath) -> int | None:
    """The line of ``path``, else of its closest written parent."""
    return next((lines[path[:end]] for end in range(len(path), 0, -1) if path[:end] in lines),
                None)


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.newlines = [n for n, ch in enumerate(text) if ch == "\n"]
        self.lines: dict[KeyPath, int] = {}
        self.last: dict[KeyPath, int] = {}  # array-of-tables path -> its last element

    def line(self) -> int:
        return bisect.bisect_left(self.newlines, self.i) + 1

    def peek(self, n: int = 1) -> str:
        return self.text[self.i : self.i + n]

    def mark(self, path: KeyPath, line: int) -> None:
        """Mark ``path`` and each of its parents at ``line``, unless already marked."""
        for end in range(1, len(path) + 1):
            self.lines.setdefault(path[:end], line)

    def blank(self, newlines: bool) -> None:
        """Skip spaces and comments (and line ends when ``newlines``)."""
        while self.i < len(self.text):
            ch = self.text[self.i]
            if ch in " \t\r" or (newlines and ch == "\n"):
                self.i += 1
            elif ch == "#":
                end = self.text.find("\n", self.i)
                self.i = len(self.text) if end < 0 else end
            else:
                return

    def document(self) -> None:
        table: KeyPath = ()
        while True:
            self.blank(newlines=True)
            if self.i >= len(self.text):
                return
            line = self.line()
            if self.peek(2) == "[[":
                self.i += 2
                array = self.resolve(self.key())
                self.expect("]]")
                self.last[array] = self.last.get(array, -1) + 1
                table = (*array, self.last[array])
                self.mark(table, line)
            elif self.peek() == "[":
                self.i += 1
                table = self.resolve(self.key())
                self.expect("]")
                self.mark(table, line)
            else:
                self.assignment(table, line)

    def assignment(self, table: KeyPath, line: int) -> None:
        path = (*table, *self.key())
        self.mark(path, line)
        self.expect("=")
        self.value(path)

    def resolve(self, parts: tuple[str, ...]) -> KeyPath:
        """A header's path, through the last element of each array of tables on the way."""
        path: KeyPath = ()
        for n, part in enumerate(parts):
            path = (*path, part)
            if n < len(parts) - 1 and path in self.last:
                path = (*path, self.last[path])
        return path

    def expect(self, token: str) -> None:
        self.blank(newlines=False)
        if self.peek(len(token)) != token:
            raise ValueError(token)
        self.i += len(token)

    def key(self) -> tuple[str, ...]:
        """A dotted key: ``a``, ``"a.b"``, ``a . 'b' . c``."""
        parts: list[str] = []
        while True:
            self.blank(newlines=False)
            ch = self.peek()
            if ch == '"':
                parts.append(self.basic_string())
            elif ch == "'":
                end = self.text.index("'", self.i + 1)
                parts.append(self.text[self.i + 1 : end])
                self.i = end + 1
            else:
                bare = _BARE.match(self.text, self.i)
                if bare is None:
                    raise ValueError("key")
                parts.append(bare.group())
                self.i = bare.end()
            self.blank(newlines=False)
            if self.peek() != ".":
                return tuple(parts)
            self.i += 1

    def value(self, path: KeyPath) -> None:
        self.blank(newlines=False)
        ch = self.peek()
        if self.peek(3) in ('"""', "'''"):
            quote = self.peek(3)
            self.i += 3
            while self.peek(3) != quote:
                self.i += 2 if quote == '"""' and self.peek() == "\\" else 1
            self.i += 3
            while self.peek() == quote[0]:  # up to two quotes may end the content
                self.i += 1
        elif ch == '"':
            self.basic_string()
        elif ch == "'":
            self.i = self.text.index("'", self.i + 1) + 1
        elif ch in "[{":
            self.i += 1
            self.items(path, "]" if ch == "[" else "}")
        else:
            while self.i < len(self.text) and self.text[self.i] not in ",]}\n#":
                self.i += 1

    def basic_string(self) -> str:
        start = self.i + 1
        self.i = start
        while self.text[self.i] != '"':
            self.i += 2 if self.text[self.i] == "\\" else 1
        self.i += 1
        return self.text[start : self.i - 1]  # keys with escapes are rare; kept as written

    def items(self, path: KeyPath, end: str) -> None:
        """An array's values (numbered) or an inline table's assignments, up to ``end``."""
        index = 0
        while True:
            self.blank(newlines=True)
            if self.peek() == end:
                self.i += 1
                return
            if end == "]":
                self.lines.setdefault((*path, index), self.line())
                self.value((*path, index))
                index += 1
            else:
                self.assignment(path, self.line())
            self.blank(newlines=True)
            if self.peek() == ",":
                self.i += 1
