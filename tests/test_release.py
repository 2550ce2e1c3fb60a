"""The release's parts that live outside the package: the version in each place it is
written, the pre-commit hook manifest, and the pre-commit example of docs/check.md."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import tokcost
from tokcost.cli.app import app

REPO_ROOT = Path(__file__).resolve().parent.parent


def _checkout_file(name: str) -> Path:
    path = REPO_ROOT / name
    if not path.is_file():
        pytest.skip("not a tokcost checkout")
    return path


def _project_version() -> str:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - the tomli dependency on 3.10
        import tomli as tomllib
    data = tomllib.loads(_checkout_file("pyproject.toml").read_text(encoding="utf-8"))
    return str(data["project"]["version"])


def _hooks() -> dict[str, dict[str, Any]]:
    hooks = yaml.safe_load(_checkout_file(".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    assert isinstance(hooks, list)
    return {hook["id"]: hook for hook in hooks}


def test_one_version_everywhere() -> None:
    # pyproject.toml is what a wheel is built with; tokcost.__version__ is what --version
    # and the Dask workers' check read: they must say the same.
    assert tokcost.__version__ == _project_version()
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout == f"tokcost {tokcost.__version__}\n"


def test_pre_commit_manifest_has_both_hooks() -> None:
    hooks = _hooks()
    assert sorted(hooks) == ["tokcost-check", "tokcost-update-baseline"]
    check, update = hooks["tokcost-check"], hooks["tokcost-update-baseline"]
    assert check["entry"] == "tokcost check"
    assert "stages" not in check  # every stage the user's config runs
    assert update["entry"] == "tokcost check --update-baseline"
    assert update["stages"] == ["manual"]  # never rewrites the baseline on a commit by itself
    assert update["always_run"] is True  # not skipped for want of staged files
    for hook in (check, update):
        assert hook["language"] == "python"
        assert hook["pass_filenames"] is False  # the config names the files, not the commit
        assert hook["name"] and hook["description"]


def test_docs_pin_the_release_and_show_both_hooks() -> None:
    page = _checkout_file("docs/check.md").read_text(encoding="utf-8")
    start = page.index("# .pre-commit-config.yaml")
    example = page[start:page.index("```", start)]
    config = yaml.safe_load(example)
    remote = next(r for r in config["repos"] if r["repo"] != "local")
    assert remote["rev"] == f"v{tokcost.__version__}"
    assert [h["id"] for h in remote["hooks"]] == ["tokcost-check", "tokcost-update-baseline"]
    local = next(r for r in config["repos"] if r["repo"] == "local")
    hooks = _hooks()
    for hook in local["hooks"]:  # the local variant runs what the published hook runs
        assert hook["entry"] == hooks[hook["id"]]["entry"]
        assert hook.get("stages") == hooks[hook["id"]].get("stages")
    # no other rev or action tag in the README and docs points at another release
    pages = [_checkout_file("README.md"), *sorted((REPO_ROOT / "docs").glob("*.md"))]
    text = "".join(p.read_text(encoding="utf-8") for p in pages)
    assert set(re.findall(r"rev: (v[\d.]+)", text)) == {f"v{tokcost.__version__}"}
    assert set(re.findall(r"tokcost@(v[\d.]+)", text)) == {f"v{tokcost.__version__}"}


def test_changelog_has_this_version() -> None:
    changelog = _checkout_file("CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## {re.escape(tokcost.__version__)}\b", changelog, re.MULTILINE)
