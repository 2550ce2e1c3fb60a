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
_resolved: dict[tuple[str, ...], str] = {}  # the patterns a name matched -> Pygments' pick


@cache
def _table() -> tuple[dict[str, list[str]], list[str]]:
    """(exact name or '*.ext' -> the lexers claiming it, the other globs): built once, ~25 ms."""
    from pygments.lexers import get_all_lexers

    claims: dict[str, list[str]] = {}
    for name, _aliases, patterns, _mimetypes in get_all_lexers(plugins=False):
        for pattern in patterns:
            claims.setdefault(pattern, []).append(name)
    other = [p for p in claims if _GLOB & set(p) and not (p.startswith("*.")
                                                           and not _GLOB & set(p[1:]))]
    return claims, other


def language(path: str) -> str:
    """'src/app.py' -> 'Python', 'Makefile' -> 'Makefile', 'x.h' -> 'C'; else UNKNOWN."""
    base = os.path.basename(path)
    claims, other = _table()
    matched = [base] if base in claims else []
    matched += [p for i, c in enumerate(base) if c == "." and (p := "*" + base[i:]) in claims]
    matched += [p for p in other if fnmatch.fnmatchcase(base, p)]
    lexers = {name for p in matched for name in claims[p]}
    if len(lexers) < 2:
        return lexers.pop() if lexers else UNKNOWN
    key = tuple(matched)  # Pygments' pick depends only on the patterns matched
    if key not in _resolved:
        from pygments.lexers import find_lexer_class_for_filename

        found = find_lexer_class_for_filename(base)
        _resolved[key] = found.name if found is not None else UNKNOWN
    return _resolved[key]
