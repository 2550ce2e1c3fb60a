"""Library modules speak the API's words: no ``--flag`` in their messages (issue 11, item 4).

The CLI's one error handler turns an error's ``param`` into the command's flag; a
library string that spells a flag would be wrong for every caller but the CLI.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "tokcost"
# Every module below the CLI.
# The command line's modules: cli/, and __main__.py (the tokcost command, which answers --help).
MODULES = sorted(p for p in ROOT.rglob("*.py")
                 if "cli" not in p.relative_to(ROOT).parts and p.name != "__main__.py")
# Report text of `tokcost check`, read in CI logs: it tells the reader which command to run
# next, so it names that command's flags on purpose. Nothing else may.
REPORT_TEXT = {"run: tokcost check --update-baseline", " --update-baseline", " (--strict)"}
# An engine's own error, quoted verbatim as it logs it (SGLang's model_runner.py): its flag is
# SGLang's, not tokcost's, and the quote is tested against the engine's words.
ENGINE_QUOTES = {"Not enough memory. Please try to increase --mem-fraction-static."}
FLAG = re.compile(r"(?<![\w-])--[a-z]")


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """Every string literal that is not a docstring (docstrings may describe the CLI)."""
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    ]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_flag_text_in_library_strings(path: Path) -> None:
    found = [(line, text) for line, text in _strings(ast.parse(path.read_text("utf-8")))
             if FLAG.search(text) and text not in REPORT_TEXT | ENGINE_QUOTES]
    assert found == []
