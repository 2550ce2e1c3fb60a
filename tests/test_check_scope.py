"""tokcost check where teams already are (issue 15, items 4-6): ad-hoc limits without a
config, human limits in budget files, monorepos (discovery, several configs, --all),
--quiet and --hide-passed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import tokcost
import tokcost.units
from tokcost.app.check import AdhocBudget, CheckResult, Growth
from tokcost.budget import BudgetConfigError, load_config
from tokcost.budget.config import adhoc_config, discover_config
from tokcost.cli.app import app
from tokcost.errors import UsageError

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
"""
SMALL = "You are a careful assistant. Answer in plain English.\n"  # about a dozen tokens
BIG = "lorem ipsum dolor " * 300  # about 900 tokens: 90% of small-priced's window

BUDGET = """\
budgets:
  - name: prompts
    paths: [prompts/]
    max_tokens_per_file: {limit}
"""



def adhoc(*, config: Any = (), growth: Any = None, **budget: Any) -> CheckResult:
    """Paths with limits checked through the library, as ``tokcost check PATHS`` does."""
    request = tokcost.CheckRequest(adhoc=AdhocBudget(**budget), config=config,
                                   growth=growth or Growth())
    return tokcost.check(request)


def invoke(runner: Any, *args: str) -> Any:
    return runner.invoke(app, ["check", *args])


def one_line_error(result: Any) -> str:
    """The error a failed command printed: one line, no traceback."""
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr
    return lines[0]


@pytest.fixture
def prompts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with a small and a big prompt and a catalog, and no config file."""
    root = tmp_path / "repo"
    (root / "prompts" / "sub").mkdir(parents=True)
    (root / "prompts" / "small.md").write_text(SMALL, encoding="utf-8")
    (root / "prompts" / "sub" / "big.md").write_text(BIG, encoding="utf-8")
    (root / "notes.txt").write_text(BIG, encoding="utf-8")
    (root / "models.yaml").write_text(CATALOG, encoding="utf-8")
    monkeypatch.chdir(root)
    return root


# --- item 4: ad-hoc limits without a config ------------------------------------------------

PRICED = ("-m", "small-priced", "--catalog", "models.yaml")


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        pytest.param(["prompts/**/*.md", "--max-tokens", "10k"], 0, "the budget holds",
                     id="tokens-pass"),
        pytest.param(["prompts/**/*.md", "--max-tokens", "100"], 1, "max_tokens_per_file",
                     id="tokens-fail"),
        pytest.param(["prompts/small.md", "--max-tokens", "100"], 0, "the budget holds",
                     id="one-file"),
        pytest.param(["prompts", "--max-tokens", "1.5k"], 0, "the budget holds",
                     id="folder"),
        pytest.param(["prompts/small.md", "--max-cost", "$0.05", *PRICED], 0,
                     "the budget holds", id="cost-pass"),
        pytest.param(["prompts/small.md", "--max-cost", "0.001c", *PRICED], 1,
                     "max_cost_per_call", id="cost-fail-cents"),
        pytest.param(["prompts/**/*.md", "--max-window", "80%", *PRICED], 1,
                     "context_window", id="window-fail"),
        pytest.param(["prompts/small.md", "--max-window", "80%", *PRICED], 0,
                     "the budget holds", id="window-pass"),
        # The model's window is checked as in a config: 100% with no --max-window.
        pytest.param(["notes.txt", "--max-tokens", "10k", *PRICED], 0, "the budget holds",
                     id="window-implicit-fits"),
        pytest.param(["prompts/**/*.md", "--max-tokens", "10k", "-t", "tiktoken:o200k_base"],
                     0, "o200k_base", id="tokenizer"),
        pytest.param(["x/*.md", "--max-tokens", "5", "--strict"], 2,
                     "glob 'x/*.md' matches no file", id="no-match-strict"),
    ],
)
def test_adhoc_limits(prompts: Path, runner: Any, args: list[str], code: int,
                      fragment: str) -> None:
    result = invoke(runner, *args)
    assert result.exit_code == code, result.output
    assert fragment in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        pytest.param(["prompts/", "--max-cost", "$0.05"],
                     "--max-cost needs a model for its prices; add -m MODEL", id="cost-no-model"),
        pytest.param(["prompts/", "--max-window", "80%"],
                     "--max-window needs a model for its context window", id="window-no-model"),
        pytest.param(["prompts/"], "PATHS need a limit", id="no-limit"),
        pytest.param(["prompts/", "--max-tokens", "lots"], "--max-tokens 'lots' is not a count",
                     id="bad-count"),
        pytest.param(["prompts/", "--max-tokens", "0"], "--max-tokens must be positive",
                     id="zero-count"),
        pytest.param(["prompts/", "--max-cost", "€5", *PRICED], "not in US dollars",
                     id="euro"),
        pytest.param(["prompts/", "--max-window", "lots", *PRICED],
                     "--max-window 'lots' is not a percentage", id="bad-percent"),
        pytest.param(["--max-tokens", "10k"], "--max-tokens applies to PATHS", id="no-paths"),
        pytest.param(["-m", "gpt-4o"], "--model applies to PATHS", id="model-no-paths"),
        pytest.param(["prompts/", "--max-tokens", "1k", "-c", "tokcost.yaml"],
                     "not both", id="with-config"),
        pytest.param(["prompts/", "--max-tokens", "1k", "--all"], "not both", id="with-all"),
        pytest.param(["prompts/", "--max-tokens", "1k", "--update-baseline"],
                     "--update-baseline needs a config file", id="update-baseline"),
        pytest.param(["nope.md", "--max-tokens", "1k"], "no such file or folder: 'nope.md'",
                     id="missing-file"),
        pytest.param(["../outside.md", "--max-tokens", "1k"], "lies outside", id="outside"),
        pytest.param(["prompts/", "--max-tokens", "1k", "-m", "no-such-model"],
                     "unknown model 'no-such-model'", id="unknown-model"),
    ],
)
def test_adhoc_usage_errors_are_one_line(prompts: Path, runner: Any, args: list[str],
                                         fragment: str) -> None:
    (prompts / "tokcost.yaml").write_text(BUDGET.format(limit=5), encoding="utf-8")
    result = invoke(runner, *args)
    assert result.exit_code == 2, result.output
    assert fragment in one_line_error(result)


def test_adhoc_ignores_a_config_in_the_folder(prompts: Path, runner: Any) -> None:
    """PATHS with limits are the whole check: a tokcost.yaml beside them is not read."""
    (prompts / "tokcost.yaml").write_text(BUDGET.format(limit=5), encoding="utf-8")
    assert invoke(runner).exit_code == 1
    assert invoke(runner, "prompts/", "--max-tokens", "10k").exit_code == 0


def test_adhoc_config_equals_the_tokcost_yaml(prompts: Path) -> None:
    """The in-memory config is the one the equivalent file gives (only the name differs)."""
    (prompts / "tokcost.yaml").write_text(
        "model: small-priced\nbudgets:\n  - name: x\n    paths: [\"prompts/**/*.md\"]\n"
        "    tokenizer: tiktoken:o200k_base\n    max_tokens_per_file: 10k\n"
        "    max_cost_per_call: $0.05\n    max_context_percent: 80%\n",
        encoding="utf-8")
    from_file = load_config("tokcost.yaml")
    flags = {"max_tokens_per_file": tokcost.units.parse_count("10k"),
             "max_cost_per_call": tokcost.units.parse_money("$0.05"),
             "max_context_percent": tokcost.units.parse_percent("80%")}
    adhoc = adhoc_config(["prompts/**/*.md"], flags, model="small-priced",
                         tokenizer="tiktoken:o200k_base")
    # every value but the name (and the line, where a file holds it)
    assert adhoc.budgets[0].model_dump() | {"name": "x"} == from_file.budgets[0].model_dump()
    assert (adhoc.model, adhoc.root) == (from_file.model, from_file.root)
    # Written as a file would hold them, the limits give the same budget too.
    raw = adhoc_config(["prompts/**/*.md"], {"max_tokens_per_file": "10k",
                                             "max_cost_per_call": "$0.05",
                                             "max_context_percent": "80%"},
                       model="small-priced", tokenizer="tiktoken:o200k_base")
    assert raw.budgets == adhoc.budgets


def test_adhoc_report_matches_the_configs(prompts: Path, runner: Any) -> None:
    (prompts / "tokcost.yaml").write_text(
        "model: small-priced\ncatalog: models.yaml\nbudgets:\n  - name: x\n"
        "    paths: [\"prompts/**/*.md\"]\n    max_tokens_per_file: 100\n",
        encoding="utf-8")
    by_file = json.loads(invoke(runner, "--json").stdout)
    adhoc = json.loads(invoke(runner, "prompts/**/*.md", "--max-tokens", "100", *PRICED,
                              "--json").stdout)
    assert adhoc["config"] == "(command line)" and adhoc["baseline"] == ""
    for key in ("passed", "exit_code", "summary"):
        assert adhoc[key] == by_file[key]
    for key in ("files", "limits", "total_tokens", "model", "tokenizer"):
        assert adhoc["budgets"][0][key] == by_file["budgets"][0][key]


@pytest.mark.parametrize("fmt", ["json", "github", "markdown", "junit", "text"])
def test_adhoc_every_format(prompts: Path, runner: Any, fmt: str) -> None:
    result = invoke(runner, "prompts/", "missing/*.md", "--max-tokens", "100", "-f", fmt)
    assert result.exit_code == 1, result.output
    out = result.stdout
    if fmt == "json":
        data = json.loads(out)
        assert data["failures"][0]["path"] == "prompts/sub/big.md"
        assert data["warnings"][0]["file"] is None  # no config file to point at
    elif fmt == "github":
        assert "::error file=prompts/sub/big.md," in out
        assert "(command line)" not in out  # the notice has no file=
        assert "::warning title=tokcost check::budget 'prompts/ missing/*.md': glob" in out
    elif fmt == "markdown":
        assert "`prompts/sub/big.md:1`" in out and "baseline" not in out
    elif fmt == "junit":
        root = ET.fromstring(out)
        assert root.get("failures") == "1"
    else:
        assert "prompts/sub/big.md" in out and "max_tokens_per_file" in out


def test_adhoc_library_call(prompts: Path) -> None:
    result = adhoc(paths=["prompts/"], limits={"max_tokens_per_file": "100"})
    assert result.exit_code == 1 and result.failures[0].path == "prompts/sub/big.md"
    [config] = result.configs
    assert config.baseline == "" and not config.baseline_found


@pytest.mark.parametrize(
    ("kwargs", "param", "fragment"),
    [
        pytest.param({"limits": {"max_cost_per_call": "$0.05"}}, "model",
                     "needs a model for its price; pass model=ID", id="cost-no-model"),
        pytest.param({"limits": {}}, "limits", "sets no limit", id="empty"),
        pytest.param({"limits": {"max_tokenz": 5}}, "limits", "unknown key 'max_tokenz'",
                     id="unknown-key"),
        pytest.param({"limits": {"max_tokens_per_file": "lots"}}, "limits",
                     "limits: max_tokens_per_file: expected a whole number >= 1, got 'lots'",
                     id="bad-value"),
        pytest.param({"limits": {"max_growth_percent": 5}}, "limits", "needs a baseline",
                     id="growth"),
        pytest.param({"limits": {"max_tokens_per_file": 5},
                      "growth": Growth(update_baseline=True)},
                     "update_baseline", "needs a config file", id="update-baseline"),
        pytest.param({"limits": {"max_tokens_per_file": 5}, "config": "tokcost.yaml"},
                     "paths", "not both", id="config"),
    ],
)
def test_adhoc_library_errors_speak_the_api(prompts: Path, kwargs: dict[str, Any], param: str,
                                            fragment: str) -> None:
    with pytest.raises(UsageError) as info:
        adhoc(paths=["prompts/"], **kwargs)
    assert info.value.param == param and fragment in str(info.value)
    assert "--" not in str(info.value)


def test_limits_without_paths_is_refused_by_the_library(prompts: Path) -> None:
    with pytest.raises(UsageError) as info:
        adhoc(limits={"max_tokens_per_file": 5})
    assert info.value.param == "limits"


def test_an_existing_file_with_glob_characters_is_that_file(prompts: Path) -> None:
    (prompts / "prompts" / "[draft].md").write_text(SMALL, encoding="utf-8")
    result = adhoc(paths=["prompts/[draft].md"], limits={"max_tokens_per_file": 100})
    assert [f.path for f in result.budgets[0].files] == ["prompts/[draft].md"]


# --- item 5: human limits in budget files ---------------------------------------------------

SPELLINGS = [
    # key, as written in tokcost.yaml, as written in pyproject.toml, the value read
    ("max_tokens_per_file", "10k", '"10k"', 10_000),
    ("max_tokens_per_file", "8Ki", '"8Ki"', 8192),
    ("max_tokens_per_file", "1e4", "1e4", 10_000),  # TOML: a float, 10000.0
    ("max_tokens_per_file", "10_000", "10_000", 10_000),
    ("max_total_tokens", "1.5M", '"1.5M"', 1_500_000),
    ("max_total_tokens", '"8,000"', '"8,000"', 8000),
    ("max_cost_per_call", '"$0.05"', '"$0.05"', Decimal("0.05")),
    ("max_cost_per_call", "$0.05", '"0.05 USD"', Decimal("0.05")),
    ("max_cost_per_call", "5c", '"5c"', Decimal("0.05")),
    ("max_cost_per_call", "5¢", '"5¢"', Decimal("0.05")),
    ("max_cost_per_call", "0.05", "0.05", Decimal("0.05")),
    ("max_cost_per_call", "$1.2k", '"$1.2k"', Decimal("1200")),
    ("max_context_percent", "80%", '"80%"', 80.0),
    ("max_context_percent", "80", "80", 80.0),
    ("max_growth_percent", "12.5 %", '"12.5 %"', 12.5),
    ("max_file_growth_percent", "10%", '"10%"', 10.0),
]
EXTRA = [
    ("output_tokens", "2Ki", '"2Ki"', 2048),
    ("reserve_output_tokens", "4k", '"4k"', 4000),
    ("cached_share", "50%", '"50%"', Decimal("0.5")),
    ("cached_share", "0.5", "0.5", Decimal("0.5")),
]


def _yaml(key: str, value: str) -> str:
    limit = "" if key in dict.fromkeys(k for k, *_ in SPELLINGS) else "    max_total_tokens: 5\n"
    return (f"model: small-priced\nbudgets:\n  - name: a\n    paths: [x]\n{limit}"
            f"    {key}: {value}\n")


def _toml(key: str, value: str) -> str:
    limit = "" if key in dict.fromkeys(k for k, *_ in SPELLINGS) else "max_total_tokens = 5\n"
    return (f'[tool.tokcost]\nmodel = "small-priced"\n\n[[tool.tokcost.budgets]]\n'
            f'name = "a"\npaths = ["x"]\n{limit}{key} = {value}\n')


@pytest.mark.parametrize(("key", "yaml_value", "toml_value", "expected"), SPELLINGS + EXTRA,
                         ids=lambda v: str(v))
def test_human_limits_in_tokcost_yaml_and_pyproject(
    tmp_path: Path, key: str, yaml_value: str, toml_value: str, expected: Any
) -> None:
    (tmp_path / "tokcost.yaml").write_text(_yaml(key, yaml_value), encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(_toml(key, toml_value), encoding="utf-8")
    for name in ("tokcost.yaml", "pyproject.toml"):
        budget = load_config(tmp_path / name).budgets[0]
        assert getattr(budget, key) == expected, name
        assert type(getattr(budget, key)) is type(expected), name


@pytest.mark.parametrize(
    ("text", "parse", "key"),
    [("10k", tokcost.units.parse_count, "max_tokens_per_file"),
     ("1.5M", tokcost.units.parse_count, "max_total_tokens"),
     ("$0.05", tokcost.units.parse_money, "max_cost_per_call"),
     ("5c", tokcost.units.parse_money, "max_cost_per_call"),
     ("80%", tokcost.units.parse_percent, "max_context_percent")],
)
def test_a_file_and_a_flag_read_a_value_alike(tmp_path: Path, text: str, parse: Any,
                                              key: str) -> None:
    (tmp_path / "tokcost.yaml").write_text(_yaml(key, f'"{text}"'), encoding="utf-8")
    assert getattr(load_config(tmp_path / "tokcost.yaml").budgets[0], key) == parse(text)


@pytest.mark.parametrize(
    ("key", "toml_value", "fragment"),
    [("max_tokens_per_file", "1.5", "max_tokens_per_file: expected a whole number >= 1, got 1.5"),
     ("max_tokens_per_file", '"10kb"', "max_tokens_per_file: expected a whole number"),
     ("max_cost_per_call", '"5 EUR"', "max_cost_per_call: expected an amount in USD"),
     ("max_context_percent", '"80 percent"', "max_context_percent: expected a percentage"),
     ("cached_share", "50", "cached_share: expected a fraction in [0, 1]")],
)
def test_human_limit_mistakes_name_the_toml_line(tmp_path: Path, key: str, toml_value: str,
                                                 fragment: str) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(_toml(key, toml_value), encoding="utf-8")
    with pytest.raises(BudgetConfigError) as info:
        load_config(path)
    line = 8 if key == "cached_share" else 7  # after the max_total_tokens line
    assert f"pyproject.toml:{line}: budgets[0] 'a': " in str(info.value)
    assert fragment in str(info.value) and "\n" not in str(info.value)


# --- item 6: monorepos ----------------------------------------------------------------------


def git_init(root: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)


@pytest.fixture
def mono(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git work tree: svc/ holds (passes), web/ fails, vendor/ is .gitignored."""
    root = tmp_path / "mono"
    root.mkdir()
    git_init(root)
    (root / ".gitignore").write_text("vendor/\n", encoding="utf-8")
    for name, text in (("svc", SMALL), ("web", BIG), ("vendor", BIG)):
        (root / name / "prompts").mkdir(parents=True)
        (root / name / "prompts" / "p.md").write_text(text, encoding="utf-8")
        (root / name / "tokcost.yaml").write_text(BUDGET.format(limit=100), encoding="utf-8")
    monkeypatch.chdir(root)
    return root


def test_discovery_walks_up_to_the_config(mono: Path, runner: Any,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    deep = mono / "web" / "prompts" / "a" / "b"
    deep.mkdir(parents=True)
    # A pyproject.toml without [tool.tokcost] on the way up is some package's, not ours.
    (mono / "web" / "prompts" / "pyproject.toml").write_text('[project]\nname = "x"\n',
                                                             encoding="utf-8")
    monkeypatch.chdir(deep)
    assert discover_config() == ((mono / "web" / "tokcost.yaml").resolve(), ())
    result = invoke(runner, "--json")
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert data["config"] == "../../../tokcost.yaml"
    # Paths in the config are relative to its own folder, wherever the check runs.
    assert data["failures"][0]["path"] == "prompts/p.md"


def test_discovery_stops_at_the_work_tree_root(tmp_path: Path, runner: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "tokcost.yaml").write_text(BUDGET.format(limit=100), encoding="utf-8")
    inner = tmp_path / "repo"
    (inner / "sub").mkdir(parents=True)
    git_init(inner)
    monkeypatch.chdir(inner / "sub")
    result = invoke(runner)
    assert result.exit_code == 2
    assert "no tokcost.yaml" in one_line_error(result)
    # Outside a work tree only the current folder is searched.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "plain").mkdir()
    monkeypatch.chdir(tmp_path / "plain")
    assert invoke(runner).exit_code == 2


def test_a_broken_pyproject_of_another_package_is_skipped(mono: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    (mono / "web" / "prompts" / "pyproject.toml").write_text("[project\n", encoding="utf-8")
    monkeypatch.chdir(mono / "web" / "prompts")
    assert discover_config()[0] == (mono / "web" / "tokcost.yaml").resolve()


def test_pyproject_tool_table_is_found_walking_up(mono: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (mono / "svc" / "tokcost.yaml").unlink()
    (mono / "svc" / "pyproject.toml").write_text(
        '[tool.tokcost]\n[[tool.tokcost.budgets]]\nname = "p"\npaths = ["prompts/"]\n'
        'max_tokens_per_file = "1k"\n', encoding="utf-8")
    monkeypatch.chdir(mono / "svc" / "prompts")
    result = tokcost.check(tokcost.CheckRequest())
    assert result.configs[0].config == "../pyproject.toml" and result.exit_code == 0


def test_repeated_config_reports_each_under_its_folder(mono: Path, runner: Any) -> None:
    result = invoke(runner, "-c", "svc/tokcost.yaml", "-c", "web/tokcost.yaml")
    assert result.exit_code == 1, result.output
    out = result.stdout
    assert out.index("── svc/tokcost.yaml") < out.index("── web/tokcost.yaml")
    assert out.rstrip().endswith("FAIL 1 of 2 configs failed (web/tokcost.yaml)")
    data = json.loads(invoke(runner, "-c", "svc/tokcost.yaml", "-c", "web/tokcost.yaml",
                             "--json").stdout)
    assert [d["config"] for d in data] == ["svc/tokcost.yaml", "web/tokcost.yaml"]
    assert [d["exit_code"] for d in data] == [0, 1]


def test_all_checks_every_config_not_ignored(mono: Path, runner: Any) -> None:
    result = invoke(runner, "--all", "--json")
    assert result.exit_code == 1, result.output
    assert [d["config"] for d in json.loads(result.stdout)] == ["svc/tokcost.yaml",
                                                                "web/tokcost.yaml"]
    run = tokcost.check(tokcost.CheckRequest(under="."))
    assert run.exit_code == 1 and [r.config for r in run.failed] == ["web/tokcost.yaml"]


def test_exit_code_is_the_worst_of_all(mono: Path, runner: Any) -> None:
    # svc gets a glob that matches nothing: under --strict that is exit code 2, worse than 1.
    (mono / "svc" / "tokcost.yaml").write_text(
        BUDGET.format(limit=100).replace("[prompts/]", "[prompts/, none/]"), encoding="utf-8")
    assert invoke(runner, "--all").exit_code == 1
    assert invoke(runner, "--all", "--strict").exit_code == 2
    assert invoke(runner, "-c", "web/tokcost.yaml", "-c", "svc/tokcost.yaml",
                  "--strict").exit_code == 2


@pytest.mark.parametrize(
    ("args", "fragment"),
    [(["--all", "-c", "svc/tokcost.yaml"], "drop --config"),
     (["--all", "--baseline", "b.json"], "drop --baseline"),
     (["-c", "svc/tokcost.yaml", "-c", "nope.yaml"], "does not exist")],
)
def test_several_configs_usage_errors(mono: Path, runner: Any, args: list[str],
                                      fragment: str) -> None:
    result = invoke(runner, *args)
    assert result.exit_code == 2, result.output
    assert fragment in one_line_error(result)


def test_all_with_no_config_below(tmp_path: Path, runner: Any,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke(runner, "--all")
    assert result.exit_code == 2 and "no tokcost.yaml" in one_line_error(result)


def test_several_configs_in_markdown_junit_and_github(mono: Path, runner: Any) -> None:
    md = invoke(runner, "--all", "-f", "markdown").stdout
    assert md.startswith("<!-- tokcost-check -->\n### ❌ tokcost check: 1 of 2 configs failed")
    assert md.count("<!-- tokcost-check -->") == 1
    assert "#### ✅ `svc/tokcost.yaml`: the budget holds" in md
    assert "#### ❌ `web/tokcost.yaml`: 1 of 1 budget exceeded" in md
    root = ET.fromstring(invoke(runner, "--all", "-f", "junit").stdout)
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["svc/tokcost.yaml", "web/tokcost.yaml"]
    assert [s.get("failures") for s in suites] == ["0", "1"] and root.get("failures") == "1"
    assert root.get("tests") == str(sum(int(s.get("tests") or 0) for s in suites))
    gh = invoke(runner, "--all", "-f", "github").stdout
    assert "::error file=web/prompts/p.md," in gh
    assert "tokcost check web/tokcost.yaml: FAIL: 1 of 1 budget exceeded" in gh
    assert gh.rstrip().endswith("tokcost check: FAIL: 1 of 2 configs failed (web/tokcost.yaml)")


def test_several_configs_update_their_own_baselines(mono: Path, runner: Any) -> None:
    result = invoke(runner, "--all", "--update-baseline")
    assert result.exit_code == 1
    assert (mono / "svc" / ".tokcost-baseline.json").is_file()
    assert (mono / "web" / ".tokcost-baseline.json").is_file()
    assert "wrote baseline svc/.tokcost-baseline.json" in result.stderr


def test_two_configs_in_one_folder_warn(mono: Path, runner: Any,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    (mono / "svc" / "pyproject.toml").write_text(
        '[tool.tokcost]\n[[tool.tokcost.budgets]]\nname = "q"\npaths = ["x"]\n'
        'max_tokens_per_file = 1\n', encoding="utf-8")
    expected = ("both tokcost.yaml and [tool.tokcost] in pyproject.toml in svc/; using "
                "tokcost.yaml")
    result = invoke(runner, "--all")
    assert f"warning: svc/tokcost.yaml: {expected}" in result.stderr
    data = json.loads(invoke(runner, "--all", "--json").stdout)
    assert data[0]["warnings"][0]["message"].startswith(expected)
    assert [b["name"] for b in data[0]["budgets"]] == ["prompts"]  # the yaml's
    gh = invoke(runner, "--all", "-f", "github").stdout
    assert "::warning file=svc/pyproject.toml,title=tokcost check::both" in gh
    # Found from the folder itself, too; a config named with -c is the user's choice.
    result = invoke(runner, "-c", "svc/tokcost.yaml")
    assert "both" not in result.stderr
    assert invoke(runner, "-c", "svc/tokcost.yaml", "--strict").exit_code == 0
    monkeypatch.chdir(mono / "svc")
    result = invoke(runner)
    assert "in this folder; using tokcost.yaml" in result.stderr
    assert invoke(runner, "--strict").exit_code == 2


# --- --quiet and --hide-passed ----------------------------------------------------------------


@pytest.fixture
def two_budgets(prompts: Path) -> Path:
    (prompts / "tokcost.yaml").write_text(
        "budgets:\n  - name: holds\n    paths: [prompts/small.md]\n    max_tokens_per_file: 100\n"
        "  - name: breaks\n    paths: [prompts/sub/]\n    max_tokens_per_file: 100\n"
        "  - name: unmatched\n    paths: [none/]\n    max_tokens_per_file: 100\n",
        encoding="utf-8")
    return prompts


def test_quiet_shows_failures_and_the_verdict(two_budgets: Path, runner: Any) -> None:
    result = invoke(runner, "--quiet")
    assert result.exit_code == 1
    assert "Failures" in result.stdout and "Budgets" not in result.stdout
    assert result.stdout.rstrip().endswith("FAIL 1 of 3 budgets exceeded (1 failure)")
    assert "warning" not in result.stderr
    strict = invoke(runner, "--quiet", "--strict")
    assert strict.exit_code == 2 and "error: budget 'unmatched'" in strict.stderr
    md = invoke(runner, "-q", "-f", "markdown").stdout
    assert "| `breaks` | `prompts/sub/big.md:1` |" in md and "| budget | model |" not in md
    assert "**Warnings**" not in md and "<sub>" not in md


def test_hide_passed_leaves_out_budgets_that_hold(two_budgets: Path, runner: Any) -> None:
    full = invoke(runner).stdout
    assert "holds" in full
    result = invoke(runner, "--hide-passed")
    assert result.exit_code == 1
    assert "holds" not in result.stdout and "breaks" in result.stdout
    assert "Budgets" in result.stdout
    md = invoke(runner, "--hide-passed", "-f", "markdown").stdout
    assert "| ❌ | `breaks` |" in md and "| ✅ |" not in md
    # Machine formats stay complete.
    data = json.loads(invoke(runner, "--hide-passed", "-q", "--json").stdout)
    assert [b["name"] for b in data["budgets"]] == ["holds", "breaks", "unmatched"]


def test_quiet_with_several_configs_shows_only_the_failing(mono: Path, runner: Any) -> None:
    result = invoke(runner, "--all", "-q")
    assert "svc/tokcost.yaml" not in result.stdout.split("FAIL 1 of 2")[0]
    assert "── web/tokcost.yaml" in result.stdout
    md = invoke(runner, "--all", "--hide-passed", "-f", "markdown").stdout
    assert "`svc/tokcost.yaml`" not in md and "`web/tokcost.yaml`" in md
    passing = invoke(runner, "-c", "svc/tokcost.yaml", "-c", "svc/tokcost.yaml", "-q")
    assert passing.exit_code == 0 and passing.stdout == "ok all 2 configs hold\n"


# --- the request: checked once, on construction, in the caller's words ----------------------


@pytest.mark.parametrize(
    ("fields", "param", "fragment"),
    [
        pytest.param({"config": "svc/tokcost.yaml", "under": "."}, "under",
                     "under finds every config below a folder; drop config", id="config-and-under"),
        pytest.param({"under": "nope"}, "under", "under='nope' is not a folder", id="no-folder"),
        pytest.param({"config": ("a.yaml", "b.yaml"), "growth": Growth(baseline="b.json")},
                     "baseline", "baseline names one file", id="one-baseline-for-several"),
        pytest.param({"jobs": "lots"}, "jobs", "jobs 'lots' is not a count", id="bad-jobs"),
        pytest.param({"jobs": 0}, "jobs", "jobs must be positive", id="zero-jobs"),
    ],
)
def test_a_check_request_refuses_what_cannot_run(mono: Path, fields: dict[str, Any], param: str,
                                                 fragment: str) -> None:
    with pytest.raises(UsageError) as info:
        tokcost.CheckRequest(**fields)
    assert info.value.param == param and fragment in str(info.value), str(info.value)


def test_a_check_request_reads_what_people_write(mono: Path) -> None:
    request = tokcost.CheckRequest(config="svc/tokcost.yaml", jobs="1k", under=None)
    assert request.config == (Path("svc/tokcost.yaml"),)  # a bare string is one config
    assert request.jobs == 1000 and not request.several
    adhoc = AdhocBudget(paths="svc/prompts/", limits={"max_tokens_per_file": "10k"})
    assert adhoc.paths == ("svc/prompts/",)
    assert adhoc.budget_config.budgets[0].max_tokens_per_file == 10_000


def test_one_result_for_one_config_or_several(mono: Path) -> None:
    one = tokcost.check(tokcost.CheckRequest(config="web/tokcost.yaml"))
    assert isinstance(one.to_dict(), dict) and one.render("json") == json.dumps(
        one.configs[0].to_dict(), indent=2, ensure_ascii=False) + "\n"
    both = tokcost.check(tokcost.CheckRequest(config=("svc/tokcost.yaml", "web/tokcost.yaml")))
    assert both.several and [d["config"] for d in both.to_dict()] == [  # type: ignore[index]
        "svc/tokcost.yaml", "web/tokcost.yaml"]
    assert both.exit_code == 1 and both.failures == one.failures
