"""A shared helper for the kvmem CLI tests: a refusal is one line on exit code 2."""

from __future__ import annotations

from typer.testing import CliRunner

from tokcost.cli.app import app

runner = CliRunner()


def refused(*args: str) -> str:
    """``kvmem estimate ARGS``'s one-line refusal (exit 2, no traceback)."""
    result = runner.invoke(app, ["kvmem", "estimate", *args])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return lines[0]
