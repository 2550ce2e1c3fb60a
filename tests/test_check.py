"""tokcost check: budgets on a fixture repository, golden reports, exit codes, baselines.

Goldens live in tests/golden/check/; regenerate them after an intended change with
``TOKCOST_UPDATE_GOLDEN=1 pytest tests/test_check.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokcost
from tokcost.app.check import CheckResult, Growth
from tokcost.budget import (
    Budget,
    BudgetConfig,
    BudgetConfigError,
    judge,
    load_config,
    measure,
    read_baseline,
    render,
)
from tokcost.budget.baseline import Baseline, BaselineEntry, BaselineError, write_baseline
from tokcost.budget.evaluate import FileResult, Measured, Measurement
from tokcost.cli.app import app
from tokcost.cli.check import render_text

GOLDEN = Path(__file__).parent / "golden" / "check"

CATALOG = """\
version: 1
models:
  - id: small-priced
    provider: test
    tokenizer: tiktoken:cl100k_base
    context_window: 1000
    pricing: {input: 2.50, cached_input: 1.25, output: 10.00}
  - id: unpriced
    provider: test
    tokenizer: tiktoken:cl100k_base
    context_window: 8192
"""

CONFIG = """\
model: small-priced
catalog: models.yaml
budgets:
  - name: system
    paths: [prompts/system.md]
    max_tokens_per_file: 25
    max_cost_per_call: 0.00055
    output_tokens: 50
    max_growth_percent: 10
  - name: prompts
    paths: ["prompts/*.md", "templates/**"]
    exclude: [prompts/system.md]
    max_tokens_per_file: 500
    max_total_tokens: 1000
    reserve_output_tokens: 100
    max_file_growth_percent: 20
  - name: docs
    paths: [docs/]
    model: unpriced
    max_total_tokens: 5000
"""

SYSTEM = "You are a careful assistant. Answer in plain English and cite the file you used.\n"
FEWSHOT = "".join(
    f"Q: What is {a} plus {b}?\nA: {a} plus {b} is {a + b}.\n\n" for a in range(5) for b in range(3)
)
GUIDE = "# Guide\n\nKeep prompts short; every token is paid for on every call.\n"


def make_repo(root: Path, config: str = CONFIG) -> Path:
    """A small repository: a catalog, prompts, docs, and a budget config."""
    (root / "prompts").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "models.yaml").write_text(CATALOG, encoding="utf-8")
    (root / "prompts" / "system.md").write_text(SYSTEM, encoding="utf-8")
    (root / "prompts" / "fewshot.md").write_text(FEWSHOT, encoding="utf-8")
    (root / "docs" / "guide.md").write_text(GUIDE, encoding="utf-8")
    (root / "tokcost.yaml").write_text(config, encoding="utf-8")
    return root


def break_budgets(root: Path) -> None:
    """Edits that break every rule: growth, per-file, total, cost and the context window."""
    (root / "prompts" / "system.md").write_text(
        SYSTEM + "Always think step by step and explain every step in detail.\n", encoding="utf-8"
    )
    (root / "prompts" / "fewshot.md").write_text(FEWSHOT * 2, encoding="utf-8")
    (root / "prompts" / "huge.md").write_text("lorem ipsum dolor " * 400, encoding="utf-8")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = make_repo(tmp_path / "repo")
    monkeypatch.chdir(root)
    return root


def invoke(runner: Any, *args: str) -> Any:
    return runner.invoke(app, ["check", *args])


def report(result: Any, fmt: str, *, width: int = 100) -> str:
    """A report in any --format: the terminal table is the CLI's, the others the library's."""
    if fmt == "text":
        return render_text(CheckResult((result,)), width=width)
    return render(result, fmt)


def assert_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("TOKCOST_UPDATE_GOLDEN"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"missing golden {path}; run with TOKCOST_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8")


# --- goldens -------------------------------------------------------------------------------


def failing_result(repo: Path) -> Any:
    config = load_config("tokcost.yaml")
    write_baseline(config.baseline, _baseline_of(config))
    break_budgets(repo)
    return judge(measure(config), read_baseline(config.baseline))


def _baseline_of(config: BudgetConfig) -> Baseline:
    from tokcost.budget import baseline_from

    return baseline_from(measure(config))


@pytest.mark.parametrize(
    ("fmt", "golden"),
    [
        pytest.param("text", "fail.txt", id="text"),
        pytest.param("json", "fail.json", id="json"),
        pytest.param("github", "fail.github.txt", id="github"),
        pytest.param("markdown", "fail.md", id="markdown"),
        pytest.param("junit", "fail.junit.xml", id="junit"),
    ],
)
def test_golden_failing_report(repo: Path, fmt: str, golden: str) -> None:
    assert_golden(golden, report(failing_result(repo), fmt, width=110))


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_golden_passing_report(repo: Path, fmt: str) -> None:
    config = load_config("tokcost.yaml")
    write_baseline(config.baseline, _baseline_of(config))
    result = judge(measure(config), read_baseline(config.baseline))
    assert result.exit_code == 0
    assert_golden(f"pass.{'txt' if fmt == 'text' else 'md'}", report(result, fmt, width=110))


def test_failing_report_names_every_rule(repo: Path) -> None:
    result = failing_result(repo)
    rules = {(f.budget, f.rule, f.path) for f in result.failures}
    assert rules == {
        ("system", "max_tokens_per_file", "prompts/system.md"),
        ("system", "max_cost_per_call", "prompts/system.md"),
        ("system", "max_growth_percent", None),
        ("prompts", "max_tokens_per_file", "prompts/huge.md"),
        ("prompts", "context_window", "prompts/huge.md"),
        ("prompts", "max_tokens_per_file", "prompts/fewshot.md"),
        ("prompts", "max_file_growth_percent", "prompts/fewshot.md"),
        ("prompts", "max_total_tokens", None),
    }
    assert [n.message for n in result.notices] == [
        "budget 'prompts': glob 'templates/**' matches no file"
    ]


def test_reports_are_deterministic(repo: Path) -> None:
    first = failing_result(repo)
    config = load_config("tokcost.yaml")
    second = judge(measure(config), read_baseline(config.baseline))
    for fmt in ("text", "json", "github", "markdown", "junit"):
        assert report(first, fmt) == report(second, fmt)


# --- exit codes through the CLI ---------------------------------------------------------------


def test_pass_exits_0(repo: Path, runner: Any) -> None:
    assert invoke(runner, "--update-baseline").exit_code == 0
    result = invoke(runner)
    assert result.exit_code == 0, result.output
    assert "all 3 budgets hold" in result.stdout
    assert "glob 'templates/**' matches no file" in result.stderr


def test_fail_exits_1(repo: Path, runner: Any) -> None:
    invoke(runner, "--update-baseline")
    break_budgets(repo)
    result = invoke(runner, "--format", "json")
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["passed"] is False and data["exit_code"] == 1
    assert data["summary"] == {"budgets": 3, "failed_budgets": 2, "failures": 8, "warnings": 1}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        pytest.param(
            "budgets:\n  - name: a\n    paths: [x]\n    max_tokens_per_file: lots\n",
            "tokcost.yaml:4: budgets[0] 'a': max_tokens_per_file: expected a whole number >= 1, "
            "got 'lots'",
            id="bad-number",
        ),
        pytest.param(
            "budgets:\n  - name: a\n    paths: [x]\n    max_token_per_file: 5\n",
            "tokcost.yaml:4: budgets[0] 'a': max_token_per_file: unknown key (did you mean: "
            "max_tokens_per_file",
            id="unknown-key-suggests",
        ),
        pytest.param(
            "budgets:\n  - name: a\n    max_total_tokens: 5\n",
            "tokcost.yaml:2: budgets[0] 'a': missing key 'paths'",
            id="missing-paths",
        ),
        pytest.param(
            "budgets:\n  - {name: a, paths: x, max_total_tokens: 5}\n"
            "  - {name: a, paths: y, max_total_tokens: 5}\n",
            "tokcost.yaml:3: budgets[1] 'a': name: duplicate budget name",
            id="duplicate-name",
        ),
        pytest.param(
            "budgets:\n  - name: a\n    paths: [x]\n",
            "tokcost.yaml:2: budgets[0] 'a': sets no limit",
            id="no-limit",
        ),
        pytest.param(
            "budgets:\n  - name: a\n    paths: [x\n",
            "tokcost.yaml:4: not valid YAML",
            id="invalid-yaml",
        ),
        pytest.param(
            "model: gpt-nope\nbudgets:\n  - {name: a, paths: x, max_total_tokens: 5}\n",
            "tokcost.yaml:3: budget 'a': unknown model 'gpt-nope'",
            id="unknown-model",
        ),
        pytest.param(
            "catalog: models.yaml\nbudgets:\n  - name: docs\n    paths: [docs/]\n"
            "    model: unpriced\n    max_cost_per_call: 0.01\n",
            "budget 'docs': model 'unpriced' has no price in the catalog",
            id="unpriced-model-under-cost-budget",
        ),
        pytest.param(
            "budgets:\n  - name: a\n    paths: [x]\n    cached_share: 1.5\n"
            "    max_total_tokens: 5\n",
            "tokcost.yaml:4: budgets[0] 'a': cached_share: expected a fraction in [0, 1]",
            id="share-out-of-range",
        ),
    ],
)
def test_config_errors_exit_2_with_file_line_key(
    repo: Path, runner: Any, config: str, message: str
) -> None:
    (repo / "tokcost.yaml").write_text(config, encoding="utf-8")
    result = invoke(runner)
    assert result.exit_code == 2, result.output
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.output


def test_no_config_is_a_usage_error(tmp_path: Path, runner: Any,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke(runner)
    assert result.exit_code == 2
    assert "no tokcost.yaml" in result.stderr and "--config" in result.stderr


def test_glob_matching_nothing_errors_with_strict(repo: Path, runner: Any) -> None:
    invoke(runner, "--update-baseline")
    result = invoke(runner, "--strict", "--format", "github")
    assert result.exit_code == 2, result.output
    assert ("::error file=tokcost.yaml,line=10,title=tokcost check::budget 'prompts': "
            "glob 'templates/**' matches no file") in result.stdout


def test_missing_baseline_warns(repo: Path, runner: Any) -> None:
    result = invoke(runner)
    assert result.exit_code == 0
    assert "budget 'system': no baseline file, growth not checked" in result.stderr


# --- baseline -------------------------------------------------------------------------------


def test_update_baseline_writes_counts_atomically(repo: Path, runner: Any) -> None:
    result = invoke(runner, "--update-baseline")
    assert result.exit_code == 0, result.output
    data = json.loads((repo / ".tokcost-baseline.json").read_text(encoding="utf-8"))
    assert data["version"] == 1
    assert set(data["budgets"]) == {"docs", "prompts", "system"}
    system = data["budgets"]["system"]
    assert system["tokenizer"] == "tiktoken:cl100k_base"
    assert list(system["files"]) == ["prompts/system.md"]
    assert system["total_tokens"] == system["files"]["prompts/system.md"] > 0
    leftovers = [p.name for p in repo.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_baseline_growth_per_file_and_budget(repo: Path, runner: Any) -> None:
    invoke(runner, "--update-baseline", "--baseline", "base.json")
    before = json.loads((repo / "base.json").read_text(encoding="utf-8"))["budgets"]
    (repo / "prompts" / "fewshot.md").write_text(FEWSHOT + FEWSHOT[: len(FEWSHOT) // 2],
                                                 encoding="utf-8")
    result = invoke(runner, "--baseline", "base.json", "--format", "json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    prompts = next(b for b in data["budgets"] if b["name"] == "prompts")
    fewshot = next(f for f in prompts["files"] if f["path"] == "prompts/fewshot.md")
    old = before["prompts"]["files"]["prompts/fewshot.md"]
    assert fewshot["baseline_tokens"] == old
    assert fewshot["growth_percent"] == round((fewshot["tokens"] - old) * 100 / old, 2)
    assert 40 < fewshot["growth_percent"] < 60
    assert prompts["baseline_total_tokens"] == before["prompts"]["total_tokens"]
    assert [f["rule"] for f in data["failures"]] == ["max_file_growth_percent"]
    # Accepting the growth makes the check pass again.
    assert invoke(runner, "--baseline", "base.json", "--update-baseline").exit_code == 0
    assert invoke(runner, "--baseline", "base.json").exit_code == 0


def test_changes_list_new_grown_and_removed_files(repo: Path) -> None:
    config = load_config("tokcost.yaml")
    write_baseline(config.baseline, _baseline_of(config))
    (repo / "docs" / "guide.md").unlink()
    (repo / "docs" / "new.md").write_text("fresh", encoding="utf-8")
    result = judge(measure(config), read_baseline(config.baseline))
    [docs] = [b for b in result.budgets if b.name == "docs"]
    assert [(p, before is None, now is None) for p, before, now in docs.changes()] == [
        ("docs/guide.md", False, True),
        ("docs/new.md", True, False),
    ]
    assert "removed" in report(result, "text") and "new" in render(result, "markdown")
    data = json.loads(render(result, "json"))
    [docs_json] = [b for b in data["budgets"] if b["name"] == "docs"]
    assert [r["path"] for r in docs_json["removed_files"]] == ["docs/guide.md"]


def test_baseline_with_other_tokenizer_is_not_compared(repo: Path) -> None:
    config = load_config("tokcost.yaml")
    stale = Baseline({"system": BaselineEntry("tiktoken:o200k_base", {"prompts/system.md": 1})})
    result = judge(measure(config), stale)
    assert not [f for f in result.failures if f.rule == "max_growth_percent"]
    assert any("baseline counted with tiktoken:o200k_base" in n.message for n in result.notices)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("{not json", id="not-json"),
        pytest.param('{"version": 9, "budgets": {}}', id="wrong-version"),
        pytest.param('{"version": 1, "budgets": {"a": {"files": {"x": "many"}}}}', id="bad-entry"),
    ],
)
def test_corrupt_baseline_is_a_usage_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "b.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(BaselineError, match="update_baseline=True"):
        read_baseline(path)


def test_corrupt_baseline_through_the_cli_names_the_flag(repo: Path, runner: Any) -> None:
    (repo / "base.json").write_text("{not json", encoding="utf-8")
    result = invoke(runner, "--baseline", "base.json")
    assert result.exit_code == 2
    assert "regenerate it with --update-baseline" in result.stderr


# --- the library call behind the command -----------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        pytest.param([], id="plain"),
        pytest.param(["--strict"], id="strict"),
        pytest.param(["--baseline", "base.json"], id="baseline"),
        pytest.param(["--catalog", "models.yaml"], id="catalog"),
    ],
)
def test_cli_json_is_the_results_to_dict(repo: Path, runner: Any, args: list[str]) -> None:
    invoke(runner, "--update-baseline", *args)
    break_budgets(repo)
    result = invoke(runner, "--json", *args)
    options = dict(zip(args[::2], args[1::2], strict=False))
    expected = tokcost.check(tokcost.CheckRequest(
        strict="--strict" in args, growth=Growth(baseline=options.get("--baseline")),
        catalog=options.get("--catalog"),
    ))
    assert result.exit_code == expected.exit_code == (2 if "--strict" in args else 1)
    assert json.loads(result.stdout) == json.loads(json.dumps(expected.to_dict()))
    assert expected.render("json") == result.stdout


def test_engine_and_jobs_do_not_change_the_report(repo: Path) -> None:
    one = tokcost.check(tokcost.CheckRequest(growth=Growth(update_baseline=True)))
    break_budgets(repo)
    serial = tokcost.check(tokcost.CheckRequest()).to_dict()
    assert tokcost.check(tokcost.CheckRequest(engine="local", jobs=2)).to_dict() == serial
    assert one.exit_code == 0 and serial["exit_code"] == 1


MINE = """\
version: 1
models:
  - id: my-model
    tokenizer: tiktoken:o200k_base
    context_window: 2000
    pricing: {input: 4.00, output: 16.00}
"""


@pytest.mark.parametrize(
    "budget",
    [
        pytest.param("tokenizer: model:my-model\n    max_total_tokens: 100000", id="tokenizer"),
        pytest.param("model: my-model\n    max_cost_per_call: 1", id="model"),
    ],
)
def test_user_catalog_model_in_a_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        runner: Any, budget: str) -> None:
    """``model:ID`` tokenizers and models resolve through the config's own catalog."""
    root = make_repo(tmp_path / "r")
    (root / "mine.yaml").write_text(MINE, encoding="utf-8")
    (root / "tokcost.yaml").write_text(
        f"catalog: mine.yaml\nbudgets:\n  - name: docs\n    paths: [docs/]\n    {budget}\n",
        encoding="utf-8")
    monkeypatch.chdir(root)
    result = invoke(runner, "--update-baseline", "--json")
    assert result.exit_code == 0, result.output
    [docs] = json.loads(result.stdout)["budgets"]
    import tokcost

    expected = tokcost.get_tokenizer("tiktoken:o200k_base").count(GUIDE)
    assert docs["tokenizer"] == "tiktoken:o200k_base"  # the catalog's spec, in the baseline too
    assert docs["total_tokens"] == expected
    base = json.loads((root / ".tokcost-baseline.json").read_text(encoding="utf-8"))
    assert base["budgets"]["docs"]["tokenizer"] == "tiktoken:o200k_base"
    if "max_cost_per_call" in budget:
        assert docs["model"] == "my-model"
        assert docs["cost_per_call_usd"] == str(Decimal(expected) * 4 / 1_000_000)
    # The shipped catalog has no my-model: the config's catalog key is what found it.
    (root / "tokcost.yaml").write_text(
        (root / "tokcost.yaml").read_text(encoding="utf-8").replace("catalog: mine.yaml\n", ""),
        encoding="utf-8")
    missing = invoke(runner)
    assert missing.exit_code == 2
    assert "budget 'docs': unknown model 'my-model'" in missing.stderr


# --- rules ----------------------------------------------------------------------------------


def test_prompt_overflowing_the_window(repo: Path) -> None:
    (repo / "prompts" / "huge.md").write_text("lorem ipsum dolor " * 400, encoding="utf-8")
    result = judge(measure(load_config("tokcost.yaml")), None)
    [overflow] = [f for f in result.failures if f.rule == "context_window"]
    assert overflow.path == "prompts/huge.md"
    assert overflow.limit == 100.0 and overflow.actual > 100
    assert "reserved output tokens" in overflow.message
    assert "small-priced's 1,000-token window" in overflow.message


def test_combined_prompt_and_cached_share(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = CONFIG.split("budgets:")[0] + (
        "budgets:\n"
        "  - name: chain\n    paths: [prompts/]\n    combine: true\n"
        "    max_cost_per_call: 1\n    max_context_percent: 50\n"
        "  - name: cached\n    paths: [prompts/]\n    combine: true\n    cached_share: 0.5\n"
        "    max_cost_per_call: 1\n"
    )
    root = make_repo(tmp_path / "r", config)
    monkeypatch.chdir(root)
    result = judge(measure(load_config()), None)
    chain, cached = result.budgets
    assert chain.cost is not None and cached.cost is not None
    assert cached.cost < chain.cost
    assert all(f.cost is None for f in chain.files)  # one combined call, not one per file
    total = chain.total_tokens
    assert chain.context_percent == pytest.approx(total * 100 / 1000)
    assert [f.rule for f in chain.failures] == (["context_window"] if total > 500 else [])


def test_exclude_and_gitignore_style_globs(repo: Path) -> None:
    (repo / ".gitignore").write_text("ignored/\n", encoding="utf-8")
    (repo / "ignored").mkdir()
    (repo / "ignored" / "x.md").write_text("secret", encoding="utf-8")
    (repo / "docs" / "deep").mkdir()
    (repo / "docs" / "deep" / "more.md").write_text("more", encoding="utf-8")
    config = BudgetConfig(
        path=repo / "tokcost.yaml",
        root=repo,
        budgets=(Budget(name="md", paths=("*.md",), exclude=("prompts/",),
                        max_total_tokens=10**6),),
    )
    [budget] = measure(config).budgets
    assert [f.path for f in budget.files] == ["docs/deep/more.md", "docs/guide.md"]


def test_pyproject_tool_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              runner: Any) -> None:
    root = make_repo(tmp_path / "r")
    (root / "tokcost.yaml").unlink()
    (root / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.tokcost]\nmodel = "small-priced"\n'
        'catalog = "models.yaml"\n\n[[tool.tokcost.budgets]]\nname = "docs"\n'
        'paths = ["docs/"]\nmax_total_tokens = 5000\n\n[[tool.tokcost.budgets]]\n'
        'name = "bad"\npaths = ["prompts/"]\nmax_total_tokens = -1\n',
        encoding="utf-8",
    )
    monkeypatch.chdir(root)
    with pytest.raises(BudgetConfigError) as info:
        load_config()
    assert str(info.value).startswith(
        "pyproject.toml:16: budgets[1] 'bad': max_total_tokens: expected a whole number >= 1"
    )
    text = (root / "pyproject.toml").read_text(encoding="utf-8").replace("= -1", "= 100000")
    (root / "pyproject.toml").write_text(text, encoding="utf-8")
    result = invoke(runner, "--format", "json")
    assert result.exit_code == 0, result.output
    assert [b["name"] for b in json.loads(result.stdout)["budgets"]] == ["docs", "bad"]


def test_binary_file_is_skipped_with_a_warning(repo: Path) -> None:
    (repo / "docs" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    result = judge(measure(load_config("tokcost.yaml")), None)
    assert [f.path for b in result.budgets if b.name == "docs" for f in b.files] == [
        "docs/guide.md"
    ]
    assert any(n.message.startswith("skipped docs/logo.png: binary") for n in result.notices)


def test_invalid_toml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.tokcost]\nmodel = gpt-4o\n', encoding="utf-8")
    with pytest.raises(BudgetConfigError, match=r"pyproject.toml:2: not valid TOML: Invalid"):
        load_config(path)


def test_github_format_appends_job_summary(repo: Path, runner: Any, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    invoke(runner, "--update-baseline")
    break_budgets(repo)
    result = invoke(runner, "--format", "github")
    assert result.exit_code == 1
    assert ("::error file=prompts/huge.md,line=1,title=tokcost%3A context_window (budget prompts)::"
            in result.stdout)
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n<!-- tokcost-check -->\n### ❌ tokcost check")


def test_github_paths_are_relative_to_the_checkout(repo: Path, runner: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    break_budgets(repo)
    monkeypatch.chdir(repo.parent)
    result = invoke(runner, "--config", "repo/tokcost.yaml", "--format", "github")
    assert result.exit_code == 1
    assert "::error file=repo/prompts/huge.md," in result.stdout
    assert "::error file=repo/tokcost.yaml,line=" in result.stdout


def test_junit_is_valid_and_counts_failures(repo: Path) -> None:
    root = ET.fromstring(render(failing_result(repo), "junit"))
    assert root.tag == "testsuites"
    assert root.get("failures") == "5"
    cases = root.findall(".//testcase")
    assert int(root.get("tests", "0")) == len(cases)
    failed = {c.get("name") for c in cases if c.find("failure") is not None}
    assert failed == {"(budget)", "prompts/system.md", "prompts/huge.md", "prompts/fewshot.md"}


def test_help_has_examples(runner: Any) -> None:
    result = runner.invoke(app, ["check", "--help"])
    assert result.exit_code == 0
    assert "--update-baseline" in result.stdout and "Examples" in result.stdout


# --- property: a limit fails exactly when it is exceeded --------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    tokens=st.lists(st.integers(min_value=0, max_value=10_000), min_size=0, max_size=6),
    per_file=st.integers(min_value=1, max_value=10_000),
    total=st.integers(min_value=1, max_value=40_000),
    base=st.lists(st.integers(min_value=1, max_value=10_000), min_size=6, max_size=6),
    growth=st.floats(min_value=0, max_value=200, allow_nan=False),
)
def test_limits_fail_exactly_when_exceeded(
    tokens: list[int], per_file: int, total: int, base: list[int], growth: float
) -> None:
    budget = Budget(name="b", paths=("*",), max_tokens_per_file=per_file, max_total_tokens=total,
                    max_file_growth_percent=growth)
    files = tuple(FileResult(f"f{i}.txt", 0, n) for i, n in enumerate(tokens))
    config = BudgetConfig(path=Path("tokcost.yaml"), root=Path.cwd(), budgets=(budget,))
    measured = Measurement(config, (Measured(budget, None, "tiktoken:o200k_base", True, files),),
                           ())
    baseline = Baseline({"b": BaselineEntry("tiktoken:o200k_base",
                                            {f"f{i}.txt": n for i, n in enumerate(base)})})
    result = judge(measured, baseline)
    got = {(f.rule, f.path) for f in result.failures}
    want = {("max_tokens_per_file", f.path) for f in files if f.tokens > per_file}
    want |= {("max_file_growth_percent", f.path) for f, b in zip(files, base, strict=False)
             if (f.tokens - b) * 100.0 / b > growth}
    if sum(tokens) > total:
        want.add(("max_total_tokens", None))
    assert got == want
    assert result.exit_code == (1 if want else 0)


# --- the project's own budgets and hook ----------------------------------------------------------

REPO_ROOT = Path(__file__).resolve().parent.parent


def test_project_budgets_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    config_path = REPO_ROOT / "tokcost.yaml"
    if not (config_path.is_file() and (REPO_ROOT / "corpora").is_dir()):
        pytest.skip("not a tokcost checkout")
    monkeypatch.chdir(REPO_ROOT)
    result = judge(measure(load_config(config_path)), None)
    assert result.failures == [], [f.message for f in result.failures]
    assert result.notices == ()
    assert {b.name for b in result.budgets} >= {"prose corpora", "README"}


def test_pre_commit_manifest() -> None:
    import yaml

    path = REPO_ROOT / ".pre-commit-hooks.yaml"
    if not path.is_file():
        pytest.skip("not a tokcost checkout")
    hooks = yaml.safe_load(path.read_text(encoding="utf-8"))
    [hook] = [h for h in hooks if h["id"] == "tokcost-check"]  # tests/test_release.py: all
    assert hook["id"] == "tokcost-check"
    assert hook["entry"] == "tokcost check"
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is False  # the config names the files, not the commit


def test_a_catalog_named_by_the_config_is_blamed_on_the_config(tmp_path: Path, runner: Any) -> None:
    from tokcost.cli.app import app

    (tmp_path / "p.md").write_text("hello\n", encoding="utf-8")
    (tmp_path / "tokcost.yaml").write_text(
        "version: 1\ncatalog: nope.yaml\nbudgets:\n  - name: a\n    paths: ['*.md']\n"
        "    model: gpt-4o\n    max_tokens_per_file: 100\n", encoding="utf-8")
    result = runner.invoke(app, ["check", "--config", str(tmp_path / "tokcost.yaml")])
    assert result.exit_code == 2
    assert "tokcost.yaml: catalog: '" in result.output
    assert "nope.yaml' does not exist" in result.output
    assert "--catalog" not in result.output  # the user passed no such flag


def test_an_unknown_budget_model_names_the_flag_not_the_parameter(tmp_path: Path, runner: Any) -> None:
    from tokcost.cli.app import app

    (tmp_path / "p.md").write_text("hello\n", encoding="utf-8")
    (tmp_path / "tokcost.yaml").write_text(
        "version: 1\nbudgets:\n  - name: a\n    paths: ['*.md']\n    model: nope-model\n"
        "    max_tokens_per_file: 100\n", encoding="utf-8")
    result = runner.invoke(app, ["check", "--config", str(tmp_path / "tokcost.yaml")])
    assert result.exit_code == 2
    assert "budget 'a': unknown model 'nope-model'" in result.output
    assert "catalog=" not in result.output


def test_an_unreadable_budget_file_fails_the_check(repo: Path, runner: Any,
                                                   refuse_reads: Any) -> None:
    # Counted without it, the budgets would hold short of its tokens: exit 1, one line.
    assert invoke(runner, "--update-baseline").exit_code == 0
    refuse_reads("fewshot.md")
    result = invoke(runner)
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error")]
    assert errors == ["error: prompts/fewshot.md: unreadable (Permission denied); the budgets "
                      "cannot be checked without it"]
    assert "Traceback" not in result.output
