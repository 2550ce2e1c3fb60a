"""Where each key of a TOML text is written: tomllib keeps no positions, so scan for them.

The scanner knows TOML's shapes, not its values: table headers (``[a.b]``,
``[[a.b]]`` with their element numbers, a ``[a.b.c]`` below the last ``[[a.b]]``),
dotted keys (``budgets.prompts.max_tokens = 1``), quoted keys, inline tables and
arrays (element by element, across lines), and strings that may hide ``=``, ``#``
or brackets (basic, literal, multi-line). The text has already parsed with tomllib,
so it is valid TOML; anything unexpected ends the scan with what was found.

>>> lines = key_lines('[tool.tokcost]\\nmodel = "x"\\n\\n[[tool.tokcost.budgets]]\\nname = "a"\\n')
>>> lines[("tool", "tokcost", "model")], lines[("tool", "tokcost", "budgets", 0, "name")]
(2, 5)
"""

from __future__ import annotations

import bisect
import contextlib
from collections.abc import Mapping

KeyPath = tuple[str | int, ...]

_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def key_lines(text: str) -> dict[KeyPath, int]:
    """1-based line of every table, array element and key, by its full path."""
    scanner = _Scanner(text)
    with contextlib.suppress(IndexError, ValueError):  # tomllib accepted the text already
        scanner.document()
    return scanner.lines


def nearest(lines: Mapping[KeyPath, int], path: KeyPath) -> int | None:
    """The line of ``path``, else of its closest written parent."""
    for end in range(len(path), 0, -1):
        if path[:end] in lines:
            return lines[path[:end]]
    return None


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.newlines = [n for n, ch in enumerate(text) if ch == "\n"]
        self.lines: dict[KeyPath, int] = {}
        self.last: dict[KeyPath, int] = {}  # array-of-tables path -> its last element

    # -- positions ----------------------------------------------------------------------

    def line(self) -> int:
        return bisect.bisect_left(self.newlines, self.i) + 1

    def peek(self, n: int = 1) -> str:
        return self.text[self.i : self.i + n]

    def mark(self, path: KeyPath, line: int) -> None:
        self.lines.setdefault(path, line)

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

    # -- structure ----------------------------------------------------------------------

    def document(self) -> None:
        table: KeyPath = ()
        while True:
            self.blank(newlines=True)
            if self.i >= len(self.text):
                return
            line = self.line()
            if self.peek(2) == "[[":
                self.i += 2
                parts = self.key()
                self.expect("]]")
                array = self.resolve(parts)
                index = self.last.get(array, -1) + 1
                self.last[array] = index
                table = (*array, index)
                self.mark_parents(array, line)
                self.mark(table, line)
            elif self.peek() == "[":
                self.i += 1
                table = self.resolve(self.key())
                self.expect("]")
                self.mark_parents(table, line)
            else:
                parts = self.key()
                self.mark_parents((*table, *parts), line)
                self.expect("=")
                self.value((*table, *parts))

    def resolve(self, parts: tuple[str, ...]) -> KeyPath:
        """A header's path, through the last element of each array of tables on the way.

        After ``[[a.b]]`` twice, ``[a.b.c]`` is ``("a", "b", 1, "c")``.
        """
        path: KeyPath = ()
        for n, part in enumerate(parts):
            path = (*path, part)
            if n < len(parts) - 1 and path in self.last:
                path = (*path, self.last[path])
        return path

    def mark_parents(self, path: KeyPath, line: int) -> None:
        for end in range(1, len(path) + 1):
            self.mark(path[:end], line)

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
                start = self.i
                while self.i < len(self.text) and self.text[self.i] in _BARE:
                    self.i += 1
                if start == self.i:
                    raise ValueError("key")
                parts.append(self.text[start : self.i])
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
        elif ch == "[":
            self.array(path)
        elif ch == "{":
            self.inline_table(path)
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

    def array(self, path: KeyPath) -> None:
        self.i += 1
        index = 0
        while True:
            self.blank(newlines=True)
            if self.peek() == "]":
                self.i += 1
                return
            self.mark((*path, index), self.line())
            self.value((*path, index))
            index += 1
            self.blank(newlines=True)
            if self.peek() == ",":
                self.i += 1

    def inline_table(self, path: KeyPath) -> None:
        self.i += 1
        while True:
            self.blank(newlines=True)
            if self.peek() == "}":
                self.i += 1
                return
            line = self.line()
            parts = self.key()
            self.mark_parents((*path, *parts), line)
            self.expect("=")
            self.value((*path, *parts))
            self.blank(newlines=True)
            if self.peek() == ",":
                self.i += 1
