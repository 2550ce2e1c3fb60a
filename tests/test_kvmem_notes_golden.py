"""The notes ``kvmem estimate`` and ``kvmem simulate`` print on stderr, pinned byte for byte.

Issue 14 moved the notes and the simulate legend from stdout to stderr, out of the stdout
goldens (tests/test_kvmem_golden.py); these goldens keep them pinned: the same cases, stderr
in ``tests/golden/kvmem/<case>.stderr.txt`` (no file: the case prints nothing on stderr).
Regenerate after an intended change with
``TOKCOST_UPDATE_GOLDEN=1 pytest tests/test_kvmem_notes_golden.py`` and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_kvmem_golden import CASES, GOLDEN, write_trace
from typer.testing import CliRunner

from tokcost.cli.app import app


@pytest.mark.parametrize("args", [pytest.param(p.values, id=p.id) for p in CASES])
def test_golden_notes(request: pytest.FixtureRequest, tmp_path: Path, args: tuple[str, ...]
                      ) -> None:
    trace = tmp_path / "trace.jsonl"
    write_trace(trace)
    argv = [str(trace) if a == "TRACE" else a for a in args]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    text = result.stderr.replace(str(trace), "TRACE")
    path = GOLDEN / f"{request.node.callspec.id}.stderr.txt"
    if os.environ.get("TOKCOST_UPDATE_GOLDEN"):
        if text:
            path.write_text(text, encoding="utf-8")
        else:
            path.unlink(missing_ok=True)
    if not text:
        assert not path.exists(), f"{path} expected notes, got none"
        return
    assert path.is_file(), f"missing golden {path}; run with TOKCOST_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8")
    for line in result.stdout.splitlines():  # and none of them on stdout
        assert line not in text.splitlines(), line
