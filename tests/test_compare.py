"""``tokcost compare`` as a user runs it: tables of arguments and expected output."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tokcost import get_tokenizer
from tokcost.cli.app import app
from tokcost.inflation import builtin_dir

CL100K = get_tokenizer("tiktoken:cl100k_base")
PROSE = builtin_dir() / "prose"
EN, HI = (PROSE / "en.txt").read_text(), (PROSE / "hi.txt").read_text()


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for code in ("en", "hi", "zh"):
        (tmp_path / f"{code}.txt").write_text((PROSE / f"{code}.txt").read_text())
    return tmp_path


def _run(runner: CliRunner, args: list[str], code: int = 0) -> tuple[str, str]:
    result = runner.invoke(app, ["compare", *args])
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result.stdout, result.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(["{f}", "-t", "cl100k_base"],
                     ["prose · cl100k_base · premium vs en", "Hindi", "Chinese", "words/tok",
                      f"{CL100K.count(HI):,}", f"{CL100K.count(HI) / CL100K.count(EN):.2f}x"],
                     id="folder-table"),
        pytest.param(["{f}", "-t", "cl100k_base"], ["prose: premium vs en", "█"], id="chart"),
        pytest.param(["--builtin", "-k", "code", "-t", "cl100k_base"],
                     ["code · cl100k_base · premium vs python", "tok/line", "Rust"], id="code"),
        pytest.param(["--builtin", "-k", "data", "-t", "cl100k_base", "--no-chart"],
                     ["JSON (minified)", "CSV"], id="data"),
        pytest.param(["{f}/en.txt", "{f}/hi.txt", "-t", "cl100k_base"], ["Hindi"], id="files"),
        pytest.param(["{f}", "-m", "gpt-4o"],
                     ["input cost", "On gpt-4o, the Hindi version costs", "x the English one"],
                     id="model-cost"),
        pytest.param(["{f}", "-t", "cl100k_base", "--baseline", "hi"], ["premium vs hi"],
                     id="baseline"),
    ],
)
def test_compare_outputs(runner: CliRunner, folder: Path, args: list[str],
                         expected: list[str]) -> None:
    stdout, _ = _run(runner, [a.format(f=folder) for a in args])
    for text in expected:
        assert text in stdout


def test_table_is_sorted_by_premium(runner: CliRunner, folder: Path) -> None:
    stdout, _ = _run(runner, [str(folder), "-t", "cl100k_base", "--no-chart"])
    order = [line.split("│")[1].strip() for line in stdout.splitlines()
             if line.startswith("│")]
    assert order == ["hi", "zh", "en"]


def test_json_keys_and_premiums(runner: CliRunner, folder: Path) -> None:
    stdout, _ = _run(runner, [str(folder), "-t", "cl100k_base", "-m", "gpt-4o", "--json"])
    doc = json.loads(stdout)
    assert set(doc) == {"tokenizers", "groups", "warnings"}
    assert [t["label"] for t in doc["tokenizers"]] == ["cl100k_base", "gpt-4o"]
    assert doc["tokenizers"][1]["priced"] is True
    (group,) = doc["groups"]
    assert group["kind"] == "prose" and group["baseline"] == "en"
    hi = next(s for s in group["samples"] if s["code"] == "hi")
    cl = hi["results"][0]
    assert cl["tokens"] == CL100K.count(HI)
    assert cl["premium"] == pytest.approx(CL100K.count(HI) / CL100K.count(EN), abs=1e-4)
    assert cl["cost_usd"] is None
    priced = hi["results"][1]
    assert priced["cost_usd"] is not None and priced["cost_ratio"] == pytest.approx(
        priced["premium"], abs=1e-3)
    zh = next(s for s in group["samples"] if s["code"] == "zh")
    assert zh["words"] is None and zh["results"][0]["words_per_token"] is None


def test_csv(runner: CliRunner, folder: Path) -> None:
    stdout, _ = _run(runner, [str(folder), "-t", "cl100k_base", "--csv"])
    rows = list(csv.DictReader(io.StringIO(stdout)))
    assert len(rows) == 3
    assert {r["code"] for r in rows} == {"en", "hi", "zh"}
    assert float(next(r for r in rows if r["code"] == "en")["premium"]) == 1.0


def test_markdown(runner: CliRunner, folder: Path) -> None:
    stdout, _ = _run(runner, [str(folder), "-t", "cl100k_base", "--markdown"])
    assert stdout.startswith("### prose (premium vs `en`)")
    assert "| `hi` | Hindi | Devanagari |" in stdout  # the script is read off the letters
    assert "| `zh` | Chinese | Han |" in stdout and "cl100k_base premium" in stdout


@pytest.mark.parametrize(
    ("files", "args", "code", "message"),
    [
        pytest.param({"de.txt": "Hallo.\n"}, [], 2, "no baseline en.txt", id="no-baseline"),
        pytest.param({"en.txt": "A.\n\nB.\n", "fr.txt": "A.\n"}, [], 0,
                     "not parallel", id="not-parallel"),
        pytest.param({"en.txt": "A.\n", "fr.txt": ""}, [], 0, "is empty; skipped", id="empty"),
        pytest.param({"en.txt": "A.\n\nB.\n", "fr.txt": "A.\n"}, ["--strict"], 1,
                     "not parallel", id="strict"),
        pytest.param({"en.txt": "A.\n"}, ["--kind", "poetry"], 2, "unknown --kind",
                     id="bad-kind"),
        pytest.param({"en.txt": "A.\n"}, ["--json", "--csv"], 2, "pick one", id="two-formats"),
        pytest.param({"en.txt": "A.\n"}, ["-t", "nope:thing"], 2, "unknown tokenizer spec",
                     id="bad-spec"),
        pytest.param({"en.txt": "A.\n"}, ["-m", "gpt-4p"], 2, "gpt-4", id="bad-model"),
    ],
)
def test_bad_input(runner: CliRunner, tmp_path: Path, files: dict[str, str], args: list[str],
                   code: int, message: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    _, stderr = _run(runner, [str(tmp_path), "-t", "cl100k_base", *args], code)
    assert message in stderr
    assert "Traceback" not in stderr


def test_unknown_language_code_is_shown_as_given(runner: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "en.txt").write_text("Good morning.\n")
    (tmp_path / "tlh.txt").write_text("nuqneH.\n")
    stdout, _ = _run(runner, [str(tmp_path), "-t", "cl100k_base"])
    assert "tlh" in stdout


def test_plot(runner: CliRunner, folder: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / "out" / "premium.svg"
    out.parent.mkdir()
    _, stderr = _run(runner, [str(folder), "-t", "cl100k_base", "--plot", str(out)])
    assert out.read_bytes().lstrip().startswith(b"<?xml") and f"wrote {out}" in stderr
    _, stderr = _run(runner, [str(folder), "-t", "cl100k_base", "--plot", str(out)], 2)
    assert "--force" in stderr


def test_help_has_examples(runner: CliRunner) -> None:
    result = runner.invoke(app, ["compare", "--help"])
    assert result.exit_code == 0 and "tokcost compare --builtin" in result.stdout


def test_compare_imports_stay_light() -> None:
    code = (
        "import sys, tokcost.cli.compare, tokcost.inflation; "
        "heavy = {'matplotlib', 'numpy', 'tokenizers', 'sentencepiece', 'dask'} & set(sys.modules); "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
