"""The public API (tokcost/__init__.py) and the CLI's one error handler."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tokcost
from tokcost.cli.base import render_error
from tokcost.errors import ModelNotFound, TokcostError, UsageError


@pytest.mark.parametrize("module", sorted(tokcost._EXPORTS), ids=str)
def test_exports_resolve_and_match_the_modules_all(module: str) -> None:
    names = tokcost._EXPORTS[module]
    mod = importlib.import_module(module)
    for name in names:
        assert getattr(tokcost, name) is getattr(mod, name)
    if module.startswith("tokcost.app."):
        # a use case module's __all__ is its public surface, all of it re-exported
        assert sorted(names) == sorted(mod.__all__)


def test_no_name_is_exported_twice() -> None:
    names = [n for names in tokcost._EXPORTS.values() for n in names]
    assert len(names) == len(set(names))
    assert sorted(tokcost.__all__) == sorted([*names, "__version__"])


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        tokcost.nope  # noqa: B018


def test_import_tokcost_loads_nothing_heavy() -> None:
    code = ("import sys, tokcost; heavy = {'numpy', 'tokenizers', 'sentencepiece', "
            "'matplotlib', 'dask', 'yaml', 'rich', 'typer'}; "
            "print(sorted(heavy & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


class _Option:
    """The two attributes of a Click option the handler reads."""

    param_type_name = "option"

    def __init__(self, name: str, *opts: str, secondary: tuple[str, ...] = ()) -> None:
        self.name, self.opts, self.secondary_opts = name, list(opts), list(secondary)


PARAMS: list[Any] = [
    _Option("allow_special", "--allow-special"),
    _Option("tp", "--tp"),
    _Option("gitignore", "--gitignore", secondary=("--no-gitignore",)),
    _Option("input_tokens", "-i", "--input-tokens"),
]


@pytest.mark.parametrize(
    ("message", "param", "expected"),
    [
        pytest.param("pass {allow_special=True} to encode it", "allow_special",
                     "pass --allow-special to encode it", id="bool-true"),
        pytest.param("set {gitignore=False}", "gitignore", "set --no-gitignore", id="bool-false"),
        pytest.param("{tp=3} does not divide kv_heads=8", "tp",
                     "--tp 3 does not divide kv_heads=8", id="value"),
        pytest.param("{input_tokens} must be >= 0", "input_tokens", "--input-tokens must be >= 0",
                     id="bare-long-flag-preferred"),
        pytest.param("{tp} must be 1 or more; stop={tp}", "tp", "--tp must be 1 or more; stop=--tp",
                     id="every-mention"),
        pytest.param("{tp} is bad; tpx and my_tp stay", "tp", "--tp is bad; tpx and my_tp stay",
                     id="whole-words-only"),
        pytest.param("{tp} needs a number, got 'tp'", "tp", "--tp needs a number, got 'tp'",
                     id="quoted-values-are-the-users"),
        pytest.param("{tp} must divide 8; see /tmp/tp/x", "tp", "--tp must divide 8; see /tmp/tp/x",
                     id="paths-stay"),
        pytest.param("pass {allow_special=True}; allow_special text is kept", "allow_special",
                     "pass --allow-special; allow_special text is kept",
                     id="assigned-form-leaves-other-words"),
        pytest.param("{jobs} must be 1 or more", "jobs", "jobs must be 1 or more",
                     id="not-a-parameter-of-this-command"),
        pytest.param("{tp} is bad", None, "{tp} is bad", id="no-param"),
        pytest.param("regex a{2,3} and {x} stay", "tp", "regex a{2,3} and {x} stay",
                     id="other-braces-are-text"),
    ],
)
def test_placeholders_become_flags(message: str, param: str | None, expected: str) -> None:
    assert render_error(UsageError(message, param=param), PARAMS) == expected


def test_placeholders_read_as_the_api_in_the_library() -> None:
    exc = UsageError("{tp=3} does not divide; pass {batch=True} or drop {gpu}", param="tp",
                     related=("batch", "gpu"))
    assert str(exc) == "tp=3 does not divide; pass batch=True or drop gpu"


def test_render_error_names_the_flag_and_adds_the_cli_hint() -> None:
    exc = UsageError("{tp=3} does not divide kv_heads=8", param="tp")
    assert render_error(exc, PARAMS) == "--tp 3 does not divide kv_heads=8"
    missing = ModelNotFound("unknown model 'gpt-9'")
    assert render_error(missing, PARAMS) == ("unknown model 'gpt-9'; `tokcost models list` "
                                             "shows the ids")
    assert render_error(TokcostError("plain"), PARAMS) == "plain"


def test_cli_shows_the_flag_for_a_library_parameter(runner: Any) -> None:
    from tokcost.cli.app import app

    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--gpu-memory", "80"])
    assert result.exit_code == 2
    assert "--gpu-memory '80' has no unit" in result.output
    assert "Traceback" not in result.output


def test_tokcount_takes_dash_h_like_tokcost() -> None:
    code = "import sys; sys.argv = ['tokcount', '-h']; from tokcost.cli.app import count_main; count_main()"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "Usage: tokcount" in out.stdout


def test_the_cli_names_only_the_public_api_even_for_type_hints() -> None:
    """import-linter checks the imports that run; this also covers the TYPE_CHECKING ones:
    the CLI's types come from ``tokcost`` (its exports), never from the layers below."""
    cli = Path(tokcost.__file__).parent / "cli"
    allowed = re.compile(r"tokcost(\.cli(\.\w+)*|\.errors|\.units)?$")
    found = []
    for path in sorted(cli.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{path.name}: {n}" for n in names
                      if n.startswith("tokcost") and not allowed.match(n)]
    assert found == []


def test_the_api_is_the_use_cases_their_requests_and_the_errors() -> None:
    """At most 45 names (issue 25): each use case and the request it takes, the catalog's
    small views, get_tokenizer and the errors; everything else stays in its package."""
    names = [n for n in tokcost.__all__ if n != "__version__"]
    assert len(names) <= 45
    for name in names:
        value = getattr(tokcost, name)
        if isinstance(value, type) and not issubclass(value, Exception):
            assert name.endswith("Request"), name  # a request type, never a part or a result
    for name in (n for n in names if n.endswith("Request")):
        assert hasattr(getattr(tokcost, name), "__dataclass_fields__"), name
