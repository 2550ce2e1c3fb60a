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

import tokcost
from tokcost import get_tokenizer
from tokcost.app.compare import CompareResult
from tokcost.cli.app import app
from tokcost.errors import UsageError
from tokcost.inflation import Corpus, CorpusKind, builtin_dir


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def prose() -> Path:
    return builtin_dir() / "prose"


@pytest.fixture
def hi_counts(prose: Path) -> dict[str, str]:
    """Hindi's cl100k_base tokens and premium over English, as the table prints them."""
    cl100k = get_tokenizer("tiktoken:cl100k_base")
    en, hi = (cl100k.count((prose / f"{code}.txt").read_text()) for code in ("en", "hi"))
    return {"hi_tokens": f"{hi:,}", "hi_premium": f"{hi / en:.2f}x"}


@pytest.fixture
def folder(tmp_path: Path, prose: Path) -> Path:
    for code in ("en", "hi", "zh"):
        (tmp_path / f"{code}.txt").write_text((prose / f"{code}.txt").read_text())
    return tmp_path


@pytest.fixture
def mpl_config(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """matplotlib keeps its font cache here, not in the user's home."""
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path_factory.getbasetemp() / "matplotlib"))


def compare(sources: object = (), **fields: object) -> CompareResult:
    """``tokcost.compare`` on the request these fields make (the corpus's apart)."""
    corpus = {k: fields.pop(k) for k in ("kinds", "baseline") if k in fields}
    request = tokcost.CompareRequest(corpus=Corpus(sources=sources, **corpus),  # type: ignore[arg-type]
                                     **fields)  # type: ignore[arg-type]
    return tokcost.compare(request)


def _run(runner: CliRunner, args: list[str], code: int = 0) -> tuple[str, str]:
    result = runner.invoke(app, ["compare", *args])
    assert result.exit_code == code, (result.stdout, result.stderr)
    return result.stdout, result.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(["{f}", "-t", "cl100k_base"],
                     ["prose · cl100k_base · premium vs en", "Hindi", "Chinese", "words/tok",
                      "{hi_tokens}", "{hi_premium}"],
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
def test_compare_outputs(runner: CliRunner, folder: Path, hi_counts: dict[str, str],
                         args: list[str], expected: list[str]) -> None:
    stdout, _ = _run(runner, [a.format(f=folder) for a in args])
    for text in expected:
        assert text.format(**hi_counts) in stdout


def test_table_is_sorted_by_premium(runner: CliRunner, folder: Path) -> None:
    stdout, _ = _run(runner, [str(folder), "-t", "cl100k_base", "--no-chart"])
    order = [line.split()[0] for line in stdout.splitlines()[2:]]  # title, header, rows
    assert order == ["hi", "zh", "en"]


def test_json_keys_and_premiums(runner: CliRunner, folder: Path, prose: Path) -> None:
    cl100k = get_tokenizer("tiktoken:cl100k_base")
    en, hi_text = ((prose / f"{code}.txt").read_text() for code in ("en", "hi"))
    stdout, _ = _run(runner, [str(folder), "-t", "cl100k_base", "-m", "gpt-4o", "--json"])
    doc = json.loads(stdout)
    assert set(doc) == {"tokenizers", "groups", "warnings"}
    assert [t["label"] for t in doc["tokenizers"]] == ["cl100k_base", "gpt-4o"]
    assert doc["tokenizers"][1]["priced"] is True
    (group,) = doc["groups"]
    assert group["kind"] == "prose" and group["baseline"] == "en"
    hi = next(s for s in group["samples"] if s["code"] == "hi")
    cl = hi["results"][0]
    assert cl["tokens"] == cl100k.count(hi_text)
    assert cl["premium"] == pytest.approx(cl100k.count(hi_text) / cl100k.count(en), abs=1e-4)
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


def test_plot(runner: CliRunner, folder: Path, tmp_path: Path, mpl_config: None) -> None:
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


# ----------------------------------------------------------- the library call under it


@pytest.mark.parametrize(
    ("args", "request_"),
    [
        pytest.param(["{f}", "-t", "cl100k_base", "-m", "gpt-4o"],
                     {"sources": ["{f}"], "tokenizers": ["cl100k_base"], "models": ["gpt-4o"]},
                     id="folder-priced"),
        pytest.param(["--builtin", "-k", "code", "-k", "data", "-t", "cl100k_base"],
                     {"kinds": [CorpusKind.CODE, "data"], "tokenizers": ["cl100k_base"]},
                     id="builtin-kinds"),
        pytest.param(["{f}/en.txt", "{f}/hi.txt", "-t", "o200k_base", "--baseline", "hi"],
                     {"sources": ["{f}/en.txt", "{f}/hi.txt"], "tokenizers": ["o200k_base"],
                      "baseline": "hi"},
                     id="files-baseline"),
    ],
)
def test_json_is_the_results_to_dict(runner: CliRunner, folder: Path, args: list[str],
                                     request_: dict[str, object]) -> None:
    stdout, _ = _run(runner, [*(a.format(f=folder) for a in args), "--json"])
    if "sources" in request_:
        request_ = {**request_, "sources": [s.format(f=folder) for s in request_["sources"]]}  # type: ignore[attr-defined]
    result = compare(**request_)
    assert json.loads(stdout) == json.loads(json.dumps(result.to_dict()))


@pytest.fixture
def my_catalog(tmp_path: Path) -> Path:
    """A user catalog that adds a model the shipped one lacks."""
    path = tmp_path / "mine.yaml"
    path.write_text("version: 1\nextends: shipped\nmodels:\n"
                    "  - id: my-model\n    tokenizer: tiktoken:cl100k_base\n"
                    "    pricing: {input: 3.00, output: 6.00}\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("flags", [["-t", "model:my-model"], ["-m", "my-model"]],
                         ids=["t-model", "m"])
def test_a_model_from_the_users_catalog(runner: CliRunner, folder: Path, my_catalog: Path,
                                        prose: Path, flags: list[str]) -> None:
    _, stderr = _run(runner, [str(folder), *flags], 2)  # the shipped catalog lacks it
    assert "unknown model 'my-model'" in stderr
    stdout, _ = _run(runner, [str(folder), *flags, "--catalog", str(my_catalog), "--json"])
    doc = json.loads(stdout)
    backend = doc["tokenizers"][0].pop("backend")
    assert backend in ("gigatoken", "gigatoken+toktok-rs", "toktok-rs", "tiktoken")  # tokcost[fast]
    assert doc["tokenizers"] == [{"label": "my-model", "spec": "tiktoken:cl100k_base",
                                  "exact": True, "model": "my-model", "priced": True}]
    hi = next(s for s in doc["groups"][0]["samples"] if s["code"] == "hi")
    cl100k = get_tokenizer("tiktoken:cl100k_base")
    assert hi["results"][0]["tokens"] == cl100k.count((prose / "hi.txt").read_text())
    assert hi["results"][0]["cost_usd"] is not None
    stdout, _ = _run(runner, [str(folder), *flags, "--catalog", str(my_catalog), "--no-chart"])
    assert "prose · my-model · premium vs en" in stdout and "input cost" in stdout


def test_library_takes_the_users_catalog(folder: Path, my_catalog: Path) -> None:
    by_spec = compare([folder], tokenizers=["model:my-model"], catalog=my_catalog)
    by_id = compare([str(folder)], models=["my-model"], catalog=str(my_catalog))
    assert by_spec.to_dict() == by_id.to_dict()
    assert [m.model.id for m in by_spec.report.meters if m.model] == ["my-model"]


def test_library_errors_name_the_parameter(folder: Path) -> None:
    with pytest.raises(UsageError, match="unknown kinds='poetry'") as info:
        compare([folder], kinds=["poetry"])
    assert info.value.param == "kinds"
    with pytest.raises(UsageError, match="tokenizer given twice") as info:
        compare([folder], tokenizers=["cl100k_base", "tiktoken:cl100k_base"])
    assert info.value.param == "tokenizers"


def test_library_writes_the_plot(folder: Path, tmp_path: Path, mpl_config: None) -> None:
    pytest.importorskip("matplotlib")
    picture = tmp_path / "premium.svg"
    result = compare([folder], tokenizers=["cl100k_base"], plot=picture)
    assert result.plot == picture and picture.read_bytes().lstrip().startswith(b"<?xml")
    with pytest.raises(UsageError):
        compare([folder], plot=picture)  # exists: refused before any work
    assert compare([folder], plot=picture, force=True).plot == picture


def test_library_takes_one_folder_as_is(folder: Path) -> None:
    assert (compare(str(folder)).to_dict()
            == compare([folder], tokenizers=["o200k_base"]).to_dict())



def test_a_small_comparison_starts_on_the_quicker_backend(
    runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The builtin corpora are 0.4 MB, all in hand before counting: tiktoken, which loads
    # sooner, counts them unless toktok-rs is asked for by name; the counts are the same.
    from tokcost.adapters import fast_count, registry

    rows = [(None, "tiktoken"), ("tiktoken", "tiktoken")]
    if fast_count._toktok_module() is not None:
        rows.append(("toktok", "toktok-rs"))
    tokens = []
    for backend, expected in rows:
        if backend is None:
            monkeypatch.delenv(fast_count.BACKEND_ENV, raising=False)
        else:
            monkeypatch.setenv(fast_count.BACKEND_ENV, backend)
        registry._get_tokenizer.cache_clear()
        try:
            stdout, _ = _run(runner, ["--builtin", "--json"])
        finally:
            registry._get_tokenizer.cache_clear()
        doc = json.loads(stdout)
        assert [t["backend"] for t in doc["tokenizers"]] == [expected], backend
        tokens.append([r["tokens"] for g in doc["groups"] for s in g["samples"]
                       for r in s["results"]])
    assert all(t == tokens[0] for t in tokens) and sum(tokens[0]) > 0


# ----------------------------------------------------------- the request, checked once


@pytest.mark.parametrize(
    ("fields", "param", "fragment"),
    [
        pytest.param({"kinds": ["poetry"]}, "kinds", "unknown kinds='poetry'", id="kind"),
        pytest.param({"split": "train"}, "split", "unknown split='train'", id="split"),
        pytest.param({"builtin": True, "sources": ["x"]}, "builtin", "not both", id="builtin"),
    ],
)
def test_a_corpus_refuses_what_it_cannot_read(fields: dict[str, object], param: str,
                                              fragment: str) -> None:
    with pytest.raises(UsageError) as info:
        Corpus(**fields)  # type: ignore[arg-type]
    assert info.value.param == param and fragment in str(info.value)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--split", "train"], "unknown --split 'train'; use one of dev, devtest",
                     id="split"),
        pytest.param(["--builtin", "{f}"], "pass either --builtin or folders/files, not both",
                     id="builtin"),
        pytest.param(["{f}", "--plot", "{f}/p.jpg"], "plot needs a .png, .svg or .pdf file",
                     id="plot-suffix"),
    ],
)
def test_request_errors_name_the_flag(runner: CliRunner, folder: Path, args: list[str],
                                      message: str) -> None:
    _, stderr = _run(runner, [a.format(f=folder) for a in args], 2)
    assert stderr.startswith("error: ") and message in stderr and len(stderr.splitlines()) == 1


def test_a_bare_string_is_one_source(folder: Path) -> None:
    assert Corpus(sources=str(folder)).sources == (folder,)
    assert tokcost.CompareRequest(tokenizers="cl100k_base").tokenizers == ("cl100k_base",)
