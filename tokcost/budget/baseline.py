"""The baseline: per-budget, per-file token counts that growth is measured against, as
sorted JSON without timestamps (``{"version": 1, "generator": "tokcost", "budgets": {NAME:
{"tokenizer": SPEC, "total_tokens": N, "files": {PATH: N}}}}``), so it diffs cleanly."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tokcost.atomic import write_text_atomic
from tokcost.errors import InputError, UsageError, arg

BASELINE_VERSION = 1


class BaselineError(UsageError):
    """The baseline file cannot be read or written (exit code 2)."""


@dataclass(frozen=True)
class BaselineEntry:
    """One budget's counts; ``renamed`` (never written): path now -> path at a git base."""

    tokenizer: str
    files: Mapping[str, int] = field(default_factory=dict)
    renamed: Mapping[str, str] = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return sum(self.files.values())


@dataclass(frozen=True)
class Baseline:
    budgets: Mapping[str, BaselineEntry] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"version": BASELINE_VERSION, "generator": "tokcost", "budgets": {
            name: {"tokenizer": entry.tokenizer, "total_tokens": entry.total_tokens,
                   "files": dict(sorted(entry.files.items()))}
            for name, entry in sorted(self.budgets.items())}}


@dataclass(frozen=True)
class BaseRef:
    """A git ref that growth is measured against instead of a baseline file."""

    ref: str  # as given: main, origin/main, v1.2, a commit id
    commit: str  # the commit it names, in full

    @property
    def short(self) -> str:
        return self.commit[:7]

    @property
    def label(self) -> str:
        """The ref as given, or the short commit id when a commit id was given."""
        given = self.ref.lower()
        is_id = len(given) >= 4 and all(c in "0123456789abcdef" for c in given)
        return self.short if is_id and self.commit.startswith(given) else self.ref


def read_baseline(path: Path) -> Baseline | None:
    """The baseline at ``path``, or None when there is none yet."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"cannot read baseline '{path}': {exc}") from None

    def broken(why: str) -> BaselineError:
        return BaselineError(f"{path}{why}; fix it or regenerate it with "
                             f"{arg('update_baseline', True)}", param="update_baseline")

    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise broken(f":{exc.lineno}: baseline is not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict) or data.get("version") != BASELINE_VERSION:
        raise broken(f": not a tokcost baseline of version {BASELINE_VERSION}")
    raw = data.get("budgets")
    if not isinstance(raw, dict):
        raise broken(": 'budgets' must be an object")
    budgets: dict[str, BaselineEntry] = {}
    for name, entry in raw.items():
        files = entry.get("files") if isinstance(entry, dict) else None
        tokenizer = entry.get("tokenizer") if isinstance(entry, dict) else None
        if not (isinstance(files, dict) and isinstance(tokenizer, str) and all(
                isinstance(v, int) and not isinstance(v, bool) for v in files.values())):
            raise broken(f": budget '{name}' needs 'tokenizer' and 'files' (path -> tokens)")
        budgets[str(name)] = BaselineEntry(tokenizer, {str(k): int(v) for k, v in files.items()})
    return Baseline(budgets)


def write_baseline(path: Path, baseline: Baseline) -> None:
    """Write ``baseline`` to ``path`` atomically (temp file + rename), making its folder."""
    text = json.dumps(baseline.to_json(), indent=2, ensure_ascii=False) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write baseline '{path}': {exc.strerror or exc}; "
                         "choose a folder you can write to") from None
    write_text_atomic(path, text)


def growth_percent(now: int, before: int | None) -> float | None:
    """Growth in percent, or None when there is nothing to compare with."""
    return None if before is None or before <= 0 else (now - before) * 100.0 / before
