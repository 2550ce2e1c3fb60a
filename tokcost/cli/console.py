"""Consoles and small rendering helpers shared by every command module."""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

# Data goes to stdout, diagnostics and progress to stderr, so pipes stay clean.
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def print_json(data: Any) -> None:
    """Print JSON to stdout exactly (no rich markup, no wrapping)."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def warn(message: str) -> None:
    err.print(f"[yellow]warning:[/yellow] {message}", markup=True, highlight=False)


def progress_enabled() -> bool:
    """Progress bars only when a person is watching stderr."""
    return err.is_terminal
