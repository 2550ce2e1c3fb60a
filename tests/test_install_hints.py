"""Install hints (issue 30, part 6): every hint for a missing optional package names the
packages of its pyproject.toml extra, so it works for a user who installed from an index and
for one who installed from a clone alike ('tokcost[plot]' fails for the second)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tokcost.cli.app import app
from tokcost.errors import EXTRAS, MissingDependency, install_hint

ROOT = Path(__file__).resolve().parents[1]


def _pyproject_extras() -> dict[str, list[str]]:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    extras: dict[str, list[str]] = tomllib.loads(
        (ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    return extras


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_the_hint_names_the_packages_of_the_extra(extra: str) -> None:
    wanted = _pyproject_extras()[extra]
    assert list(EXTRAS[extra]) == wanted
    named = re.findall(r"'([^']+)'", install_hint(extra))
    assert install_hint(extra) == "pip install " + " ".join(f"'{p}'" for p in named)
    assert named == [req.split(";")[0].strip() for req in wanted]  # markers left out
    assert "tokcost[" not in install_hint(extra) and ".[" not in install_hint(extra)


def test_every_extra_the_code_names_has_a_hint() -> None:
    from tokcost.catalog.schema import PACKAGE_PLACEHOLDERS
    source = "\n".join(p.read_text() for p in (ROOT / "tokcost").rglob("*.py"))
    named = set(re.findall(r'MissingDependency\(\s*"[^"]+",\s*"([^"]+)"', source))
    named |= set(re.findall(r"install_hint\(['\"](\w+)['\"]\)", source))
    named |= {extra for dist, extra in PACKAGE_PLACEHOLDERS.values() if dist != "tokcost"}
    assert {"dask", "plot", "prices", "mistral", "fast", "chat", "safetensors"} <= named
    assert named <= set(EXTRAS)
    assert "pip install 'tokcost[" not in source


def test_the_message_carries_the_hint() -> None:
    exc = MissingDependency("matplotlib", "plot", "plotting")
    assert str(exc) == "plotting needs the 'matplotlib' package: pip install 'matplotlib>=3.7'"


def test_a_plot_without_matplotlib_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runner: Any
) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    png = tmp_path / "m.png"
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--plot", str(png)])
    assert result.exit_code == 1
    assert result.stderr == ("error: plotting needs the 'matplotlib' package: "
                             "pip install 'matplotlib>=3.7'\n")
    assert not png.exists()
