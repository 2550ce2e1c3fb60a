"""Bounds on reading what tokcost does not trust: any file may come from a stranger's pull
request or a download, so each parser runs under a stated limit (SECURITY.md lists them)."""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

MAX_YAML_NODES = 1_000_000  # a YAML document's nodes with every alias expanded
MAX_STARS = 3  # '*' runs in one path segment of a glob: k of them cost O(len(name) ** k)
TEMPLATE_OUTPUT = 1_000_000  # characters a chat template may render
TEMPLATE_SECONDS = 5.0  # wall-clock seconds a chat template may render for
TEMPLATE_RANGE = 10_000  # the longest range() a chat template may build
MAX_HTTP_BYTES = 1 << 40  # the largest file --engine dask reads over HTTP (1 TiB)
MAX_REQUEST_BYTES = 64 << 20  # a request body (count/price --request): base64 images included
MAX_CONFIG_BYTES = 16 << 20  # a model's config.json (real ones: kilobytes, with quantization)


class TooNested(ValueError):
    """JSON or TOML nested deeper than Python's parsers recurse."""

    def __init__(self) -> None:
        super().__init__(f"nested deeper than about {sys.getrecursionlimit()} levels")


def loads_json(data: str | bytes) -> Any:
    """``json.loads`` that fails on a deeply nested document with a ValueError, like any
    other malformed one (the C decoder recurses once per level)."""
    try:
        return json.loads(data)
    except RecursionError:
        raise TooNested() from None


def loads_toml(text: str) -> dict[str, Any]:
    """``tomllib.loads`` (tomli before 3.11), a deeply nested document a ValueError."""
    # tomllib is in the standard library from 3.11; tomli is the same parser for 3.10.
    tomllib = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")
    try:
        return dict(tomllib.loads(text))
    except RecursionError:
        raise TooNested() from None


def glob_problem(pattern: str) -> str | None:
    """Why matching ``pattern`` could take exponential time, or None."""
    for segment in pattern.split("/"):
        if segment == "**":
            continue
        runs = sum(1 for i, c in enumerate(segment) if c == "*" and segment[i - 1 : i] != "*")
        if runs > MAX_STARS:
            return (f"'{pattern}' has {runs} '*' in one path segment; at most {MAX_STARS} "
                    "(matching more can take minutes on a long file name)")
    return None


def regex_problem(pattern: str) -> str | None:
    """Why ``pattern`` can backtrack catastrophically, or None: a group repeated without
    bound whose body repeats or alternates, the shapes of ``(a+)+`` and ``(a|aa)*``."""
    groups: list[bool] = []  # per open group: its body repeats or alternates
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 1
        elif c == "[":  # a class is one atom: skip to its closing bracket
            i += 2 if pattern[i + 1 : i + 2] == "^" else 1
            i += 1 if pattern[i : i + 1] == "]" else 0
            while i < n and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
        elif c == "(":
            groups.append(False)
            i += 1 if pattern[i + 1 : i + 2] == "?" else 0  # (?:, (?i:, (?= are not quantifiers
        elif c == ")" and groups:
            risky, quantifier = groups.pop(), _quantifier(pattern, i + 1)
            if risky and quantifier == "unbounded":
                return (f"'{pattern}' repeats a group that itself repeats or alternates "
                        f"('{pattern[: i + 2]}'): it can take exponential time on some text")
            if groups:
                groups[-1] |= risky or quantifier is not None
        elif groups and (c == "|" or _quantifier(pattern, i) is not None):
            groups[-1] = True
        i += 1
    return None


def _quantifier(pattern: str, i: int) -> str | None:
    """The quantifier starting at ``i``: "unbounded" (``*``, ``+``, ``{n,}``), "variable"
    (``?``, ``{m,n}``) or None (none, or a fixed ``{n}``)."""
    c = pattern[i : i + 1]
    if c in ("*", "+"):
        return "unbounded"
    if c == "?":
        return "variable"
    end = pattern.find("}", i)
    if c != "{" or end < 0:
        return None
    low, comma, high = pattern[i + 1 : end].partition(",")
    if not low.isdigit() or (high and not high.isdigit()):
        return None  # a literal brace
    if comma and not high:
        return "unbounded"
    return "variable" if comma and high != low else None
