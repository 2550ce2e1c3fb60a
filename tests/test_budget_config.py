"""Where a budget config's problem is: the line of the key in tokcost.yaml or pyproject.toml."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokcost.budget import BudgetConfigError, load_config
from tokcost.budget.config import key_lines, nearest

# the standard library's parser from 3.11; tomli, the same parser, before
tomllib = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")

HEAD = '[project]\nname = "x"\n\n'


def problem(tmp_path: Path, text: str, name: str = "pyproject.toml") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BudgetConfigError) as info:
        load_config(path)
    return str(info.value).split(" (and ")[0].removeprefix(f"{path}:")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            # The dotted key the old regex locator could not read: it said line 4.
            HEAD + '[tool.tokcost]\nmodel = "gpt-4o"\nbudgets.prompts.max_tokens = 1\n',
            "6: budgets: expected a non-empty list under 'budgets', got {'prompts': {'max_tokens': 1}}",
            id="dotted-key",
        ),
        pytest.param(
            # A table below the second [[budgets]] element: the old locator said line 11.
            HEAD + '[tool.tokcost]\n\n[[tool.tokcost.budgets]]\nname = "a"\npaths = ["x"]\n'
            'max_total_tokens = 5\n\n[[tool.tokcost.budgets]]\nname = "b"\npaths = ["y"]\n'
            'max_total_tokens = 5\n\n[tool.tokcost.budgets.extra]\nx = 1\n',
            "16: budgets[1] 'b': extra: unknown key; expected one of name, paths",
            id="table-below-array-element",
        ),
        pytest.param(
            HEAD + '[[tool.tokcost.budgets]]\nname = "a"\npaths = ["x"]\nmax_total_tokens = 5\n'
            'limits.max = 3\n',
            "8: budgets[0] 'a': limits: unknown key",
            id="dotted-key-in-array-element",
        ),
        pytest.param(
            HEAD + '[tool]\ntokcost.model = "m"\ntokcost.budgets = [\n'
            '  {name = "a", paths = ["x"], max_total_tokens = 5},\n'
            '  {name = "b", paths = [\n    "y",\n  ], max_total_tokens = -1},\n]\n',
            "10: budgets[1] 'b': max_total_tokens: expected a whole number >= 1, got -1",
            id="inline-tables-across-lines",
        ),
        pytest.param(
            HEAD + '[tool]\n"tokcost" . model = 5\ntokcost.budgets = [{name = "a", paths = "x", '
            "max_total_tokens = 1}]\n",
            "5: model: expected a non-empty string, got 5",
            id="quoted-dotted-key",
        ),
        pytest.param(
            HEAD + '[tool.tokcost]\nmodel = """\n[tool.tokcost.nope]\nx = 1"""\n'
            '[[tool.tokcost.budgets]]\nname = "a"\npaths = ["x"]\ncached_share = 2\n'
            "max_total_tokens = 1\n",
            "11: budgets[0] 'a': cached_share: expected a fraction in [0, 1] such as 0.5, got 2",
            id="headers-inside-a-string-are-text",
        ),
    ],
)
def test_toml_problems_point_at_their_line(tmp_path: Path, text: str, expected: str) -> None:
    tomllib.loads(text)  # each case is valid TOML: only the config is wrong
    assert problem(tmp_path, text).startswith(expected), problem(tmp_path, text)


def test_yaml_problems_point_at_their_line(tmp_path: Path) -> None:
    text = "model: gpt-4o\nbudgets:\n  - name: a\n    paths: [x]\n    combine: 'yes'\n" \
           "    max_total_tokens: 5\n"
    assert problem(tmp_path, text, "tokcost.yaml") == (
        "5: budgets[0] 'a': combine: expected true or false, got 'yes'"
    )


# --- property: the scanner finds every key where it was written --------------------------

KEYS = st.sampled_from(["name", "paths", "max_total_tokens", "model", "x-y", "a.b", "é"])
VALUES = st.sampled_from(['"v"', "5", "-1.5", '["a", "b"]', "[\n  1,\n  2,\n]", "'lit'",
                          '"""\nmulti\n[not.a.header]\n"""', "{ p = 1, q = [2] }", "true"])


def _key(name: str) -> str:
    return name if name.replace("_", "").replace("-", "").isalnum() and name.isascii() else (
        f'"{name}"'
    )


@settings(max_examples=80, deadline=None)
@given(
    tables=st.lists(
        st.tuples(st.booleans(), st.dictionaries(KEYS, VALUES, min_size=1, max_size=4)),
        min_size=1, max_size=4,
    )
)
def test_scanner_finds_each_key_on_its_line(tables: list[tuple[bool, dict[str, str]]]) -> None:
    lines = ["[tool.tokcost]", 'model = "m"']
    expected: dict[tuple[str | int, ...], int] = {("tool", "tokcost", "model"): 2}
    elements = 0
    for as_array, keys in tables:
        if as_array:
            lines.append("[[tool.tokcost.budgets]]")
            where: tuple[str | int, ...] = ("tool", "tokcost", "budgets", elements)
            elements += 1
        else:
            lines.append(f"[tool.tokcost.t{len(lines)}]")
            where = ("tool", "tokcost", f"t{len(lines) - 1}")
        expected[where] = len(lines)
        for name, value in keys.items():
            lines.append(f"{_key(name)} = {value}  # a comment with = and [brackets]")
            expected[(*where, name)] = len(lines)
            lines = "\n".join(lines).split("\n")  # multi-line values take their lines
    text = "\n".join(lines) + "\n"
    tomllib.loads(text)
    found = key_lines(text)
    for path, line in expected.items():
        assert nearest(found, path) == line, (path, text)
