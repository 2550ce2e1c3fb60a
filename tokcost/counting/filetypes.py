"""A file's language from its name, as Pygments' lexer table names it (``count --by lang``).

Pygments (which rich already depends on) keeps the table: each lexer's filename patterns
(``*.py``, ``Makefile``, ``*.[1-9]``), in ``pygments.lexers._mapping``, read here through its
public ``get_all_lexers``, which imports no lexer. A name only one lexer claims is answered from
that table; a name several claim (``*.h``: C and Objective-C; ``*.sql``) is resolved as Pygments
resolves it from a name alone (``find_lexer_class_for_filename``: an exact name first, then the
lexers' priority), which imports the candidates' modules, once per pattern.
"""

from __future__ import annotations

import fnmatch
import os
from functools import cache

UNKNOWN = "(unknown)"  # no lexer claims the name (Pygments' names hold no parentheses)
_GLOB = frozenset("*?[")


@cache
def _table() -> tuple[dict[str, list[str]], dict[str, list[str]], list[tuple[str, str]]]:
    """(exact name -> lexers, ".ext" -> lexers, other globs): built once, about 25 ms."""
    from pygments.lexers import get_all_lexers

    exact: dict[str, list[str]] = {}
    suffix: dict[str, list[str]] = {}
    other: list[tuple[str, str]] = []
    for name, _aliases, patterns, _mimetypes in get_all_lexers(plugins=False):
        for pattern in patterns:
            if not _GLOB & set(pattern):
                exact.setdefault(pattern, []).append(name)
            elif pattern.startswith("*.") and not _GLOB & set(pattern[1:]):
                suffix.setdefault(pattern[1:], []).append(name)
            else:
                other.append((pattern, name))
    return exact, suffix, other


@cache
def _resolve(name: str) -> str:
    from pygments.lexers import find_lexer_class_for_filename

    found = find_lexer_class_for_filename(name)
    return found.name if found is not None else UNKNOWN


def language(path: str) -> str:
    """'src/app.py' -> 'Python', 'Makefile' -> 'Makefile', 'x.h' -> 'C'; else UNKNOWN."""
    base = os.path.basename(path)
    exact, suffix, other = _table()
    if base in exact:
        names = exact[base]
        return names[0] if len(names) == 1 else _resolve(base)
    dots = [i for i, c in enumerate(base) if c == "."]
    for i in dots:  # the longest suffix first: '.min.js' before '.js'
        names = suffix.get(base[i:], [])
        if names:
            return names[0] if len(names) == 1 else _resolve("x" + base[i:])
    return next((name for pattern, name in other if fnmatch.fnmatchcase(base, pattern)), UNKNOWN)
