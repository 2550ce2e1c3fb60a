"""tokcost check in real CI: annotation paths and lines, JUnit against Jenkins' schema, the
text report's hint, and ``--base REF`` on a git repository built commit by commit here.

The schema is tests/fixtures/junit-10.xsd (written after Jenkins xunit's junit-10.xsd).
"""

from __future__ import annotations

import json
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import tokcost
from tokcost import get_tokenizer
from tokcost.app.check import CheckResult, Growth
from tokcost.budget.evaluate import crossing_line, window_allowance
from tokcost.budget.report import render_github
from tokcost.cli.app import app
from tokcost.cli.check import render_text
from tokcost.errors import UsageError

FIXTURES = Path(__file__).parent / "fixtures"
GOLDEN = Path(__file__).parent / "golden" / "check"
TOK = "tiktoken:cl100k_base"

CONFIG = f"""\
budgets:
  - name: prompts
    paths: ["prompts/**"]
    tokenizer: {TOK}
    max_tokens_per_file: 60
    max_file_growth_percent: 20
"""


def lines_of(n: int, word: str = "alpha") -> str:
    """``n`` lines of a few tokens each, all different so no two files are equal."""
    return "".join(f"{word} line {i} says something short\n" for i in range(n))


def count(text: str) -> int:
    return get_tokenizer(TOK).count(text)


def one_line(text: str) -> bool:
    return "\n" not in text.strip() and "Traceback" not in text


@pytest.fixture(autouse=True)
def _no_runner_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # The suite may itself run in GitHub Actions; these tests set what they need.
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)


# --- a git repository made here ---------------------------------------------------------------


def check(*, strict: bool = False, **growth: Any) -> CheckResult:
    """The config found here, checked through the library; ``growth`` as given."""
    return tokcost.check(tokcost.CheckRequest(growth=Growth(**growth), strict=strict))


def git(repo: Path, *args: str) -> str:
    run = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return run.stdout.strip()


@pytest.fixture
def git_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Neither the machine's nor the user's git config may change what git does here.
    (tmp_path / "gitconfig").write_text("", encoding="utf-8")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def init_repo(repo: Path) -> Path:
    repo.mkdir(parents=True, exist_ok=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "tokcost tests")
    git(repo, "config", "user.email", "tests@example.invalid")
    git(repo, "config", "commit.gpgsign", "false")
    return repo


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


BASE_FILES = {
    "tokcost.yaml": CONFIG,
    "prompts/grows.md": lines_of(4, "grows"),
    "prompts/same.md": lines_of(3, "same"),
    "prompts/moved.md": lines_of(3, "moved"),
    "prompts/moved_edited.md": lines_of(4, "edited"),
    "prompts/gone.md": lines_of(2, "gone"),
}


@pytest.fixture
def history(tmp_path: Path, git_env: None, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """main: five prompts; feature (checked out): one grown, one new, one removed, one
    renamed as is, one renamed and edited."""
    repo = init_repo(tmp_path / "repo")
    write(repo, BASE_FILES)
    main = commit(repo, "base")
    git(repo, "checkout", "-q", "-b", "feature")
    write(repo, {"prompts/grows.md": lines_of(6, "grows"), "prompts/new.md": lines_of(2, "new")})
    git(repo, "rm", "-q", "prompts/gone.md")
    (repo / "prompts" / "sub").mkdir()
    git(repo, "mv", "prompts/moved.md", "prompts/sub/moved.md")
    git(repo, "mv", "prompts/moved_edited.md", "prompts/renamed.md")
    write(repo, {"prompts/renamed.md": lines_of(4, "edited") + "one more line\n"})
    commit(repo, "feature")
    monkeypatch.chdir(repo)
    return {"repo": repo, "main": main}


def test_base_growth_new_removed_and_renamed(history: dict[str, Any]) -> None:
    result = check(base="main")
    [budget] = result.budgets
    before = {f.path: f.baseline_tokens for f in budget.files}
    assert before == {
        "prompts/grows.md": count(lines_of(4, "grows")),
        "prompts/new.md": None,
        "prompts/renamed.md": count(lines_of(4, "edited")),  # compared with its old self
        "prompts/same.md": count(lines_of(3, "same")),
        "prompts/sub/moved.md": count(lines_of(3, "moved")),
    }
    assert budget.removed == (("prompts/gone.md", count(lines_of(2, "gone"))),)
    assert budget.renamed == (("prompts/renamed.md", "prompts/moved_edited.md"),
                              ("prompts/sub/moved.md", "prompts/moved.md"))
    assert budget.baseline_total == sum(count(t) for n, t in BASE_FILES.items()
                                        if n.startswith("prompts/"))
    [failure] = result.failures
    assert (failure.rule, failure.path) == ("max_file_growth_percent", "prompts/grows.md")
    assert "against main (" in failure.message and "update-baseline" not in failure.message
    assert result.exit_code == 1
    [config] = result.configs
    assert config.base is not None and config.base.commit == history["main"]


def test_base_reports_carry_the_label(history: dict[str, Any]) -> None:
    result = check(base="main")
    data = result.to_dict()
    assert data["base"] == {"ref": "main", "commit": history["main"], "label": "main"}
    assert data["baseline"] is None and data["baseline_found"] is True
    [budget] = data["budgets"]
    assert budget["renamed_files"] == [
        {"path": "prompts/renamed.md", "from": "prompts/moved_edited.md"},
        {"path": "prompts/sub/moved.md", "from": "prompts/moved.md"},
    ]
    assert budget["removed_files"] == [{"path": "prompts/gone.md",
                                        "baseline_tokens": count(lines_of(2, "gone"))}]
    markdown = result.render("markdown")
    assert "vs `main`" in markdown.splitlines()[1]
    assert f"vs `main` (`{history['main'][:7]}`)" in markdown
    assert "<summary>Changes vs main</summary>" in markdown
    assert "prompts/sub/moved.md (renamed from prompts/moved.md)" in markdown
    assert result.render("github").rstrip().endswith("(1 failure) vs main")
    assert ET.fromstring(result.render("junit")).get("name") == "tokcost check vs main"
    text = render_text(result, width=140)
    assert "Changes vs main" in text and "FAIL 1 of 1 budget exceeded (1 failure) vs main" in text
    assert "update-baseline" not in text  # no baseline file to update
    assert "prompts/gone.md" in text and "removed" in text and "new" in text


def test_base_as_a_commit_id_is_labelled_by_its_short_id(history: dict[str, Any]) -> None:
    result = check(base=history["main"])
    [config] = result.configs
    assert config.base is not None and config.base.label == history["main"][:7]
    assert f"vs {history['main'][:7]}" in result.render("github")


def test_a_move_not_yet_added_is_a_rename_by_content(history: dict[str, Any]) -> None:
    repo = history["repo"]
    (repo / "prompts" / "same.md").rename(repo / "prompts" / "untracked.md")  # no git mv
    [budget] = check(base="main").budgets
    assert ("prompts/untracked.md", "prompts/same.md") in budget.renamed
    assert all(path != "prompts/same.md" for path, _ in budget.removed)


def test_base_applies_the_trees_gitignore_to_tracked_files(tmp_path: Path, git_env: None,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    repo = init_repo(tmp_path / "repo")
    write(repo, {"tokcost.yaml": CONFIG, "prompts/kept.md": lines_of(2),
                 "prompts/draft/x.md": lines_of(2, "draft"), "prompts/notes.md": lines_of(2, "n"),
                 ".gitignore": "prompts/draft/\nnotes.md\n"})
    git(repo, "add", "-A")
    git(repo, "add", "-f", "prompts/draft/x.md", "prompts/notes.md")  # tracked, yet ignored
    git(repo, "commit", "-q", "-m", "base")
    monkeypatch.chdir(repo)
    result = check(base="main")
    [budget] = result.budgets
    # Ignored now and at main alike: neither "removed" nor counted at the base.
    assert [f.path for f in budget.files] == ["prompts/kept.md"]
    assert budget.removed == () and budget.baseline_total == count(lines_of(2))


def test_base_with_the_config_in_a_subfolder(tmp_path: Path, git_env: None,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    repo = init_repo(tmp_path / "ws")
    write(repo, {"svc/tokcost.yaml": CONFIG, "svc/prompts/p.md": lines_of(3),
                 "other/prompts/p.md": lines_of(9)})
    commit(repo, "base")
    write(repo, {"svc/prompts/p.md": lines_of(6)})
    monkeypatch.chdir(repo / "svc")
    [budget] = check(base="main").budgets
    assert [(f.path, f.baseline_tokens) for f in budget.files] == [
        ("prompts/p.md", count(lines_of(3)))]
    assert budget.failures[0].rule == "max_file_growth_percent"


def test_base_through_the_cli(history: dict[str, Any], runner: Any) -> None:
    result = runner.invoke(app, ["check", "--base", "main", "--json"])
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout)["base"]["label"] == "main"
    result = runner.invoke(app, ["check", "--base", "main"])
    assert "Changes vs main" in result.stdout and "renamed from prompts/moved.md" in result.stdout


def test_base_wins_over_baseline_and_says_so(history: dict[str, Any], runner: Any) -> None:
    (history["repo"] / "broken.json").write_text("{not json", encoding="utf-8")
    result = runner.invoke(app, ["check", "--base", "main", "--baseline", "broken.json"])
    assert result.exit_code == 1, result.output  # the broken file is never read
    assert "--base main wins over --baseline" in result.stderr


def test_base_and_update_baseline_write_the_file_and_judge_against_the_ref(
        history: dict[str, Any]) -> None:
    result = check(base="main", update_baseline=True)
    assert (history["repo"] / ".tokcost-baseline.json").is_file()
    assert [f.rule for f in result.failures] == ["max_file_growth_percent"]


@pytest.mark.parametrize(
    ("setup", "args", "fragment"),
    [
        pytest.param("plain", ["--base", "main"], "--base 'main' needs a git work tree",
                     id="not-a-work-tree"),
        pytest.param("git", ["--base", "nope"], "--base 'nope' names no commit",
                     id="unknown-ref"),
        pytest.param("git", ["--base=-x"], "--base '-x' is not a git ref", id="dash-ref"),
        pytest.param("nogit", ["--base", "main"], "needs git, and there is no 'git' program",
                     id="no-git"),
    ],
)
def test_base_errors_are_one_line_exit_2(tmp_path: Path, git_env: None, runner: Any,
                                         monkeypatch: pytest.MonkeyPatch, setup: str,
                                         args: list[str], fragment: str) -> None:
    root = tmp_path / "repo"
    write(root, {"tokcost.yaml": CONFIG, "prompts/p.md": lines_of(2)})
    if setup == "git":
        init_repo(root)
        commit(root, "base")
    if setup == "nogit":
        (tmp_path / "empty-bin").mkdir()
        monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.chdir(root)
    result = runner.invoke(app, ["check", *args])
    assert result.exit_code == 2, result.output
    assert fragment in result.output
    assert one_line(result.stderr)


def test_base_library_errors_name_the_parameter(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {"tokcost.yaml": CONFIG, "prompts/p.md": lines_of(2)})
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match=r"^base='main' needs a git work tree") as info:
        check(base="main")
    assert info.value.param == "base"


# --- GitHub annotations ------------------------------------------------------------------------


def failing_service(ws: Path) -> Path:
    """ws/svc/tokcost.yaml with one prompt over its per-file limit from line 5 on."""
    write(ws, {"svc/tokcost.yaml": CONFIG, "svc/prompts/p.md": lines_of(12)})
    return ws / "svc"


def expected_line(text: str, limit: int) -> int:
    """The first line through which the text has more than ``limit`` tokens, by a scan."""
    upto = ""
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        upto += line
        if count(upto) > limit:
            return number
    raise AssertionError("the text is within the limit")


@pytest.mark.parametrize(
    ("workspace", "git_top", "prefix"),
    [
        pytest.param(True, False, "svc/", id="GITHUB_WORKSPACE"),
        pytest.param(False, True, "svc/", id="git-work-tree-top"),
        pytest.param(False, False, "", id="current-folder"),
        pytest.param("elsewhere", False, "", id="workspace-not-holding-the-files"),
    ],
)
def test_annotation_paths_and_lines(tmp_path: Path, git_env: None, runner: Any,
                                    monkeypatch: pytest.MonkeyPatch, workspace: Any,
                                    git_top: bool, prefix: str) -> None:
    ws = tmp_path / "ws"
    svc = failing_service(ws)
    if git_top:
        init_repo(ws)
    if workspace is True:
        monkeypatch.setenv("GITHUB_WORKSPACE", str(ws))
    elif workspace:
        (tmp_path / workspace).mkdir()
        monkeypatch.setenv("GITHUB_WORKSPACE", str(tmp_path / workspace))
    monkeypatch.chdir(svc)  # working-directory: svc
    result = runner.invoke(app, ["check", "--format", "github"])
    assert result.exit_code == 1, result.output
    line = expected_line(lines_of(12), 60)
    assert line > 1
    assert (f"::error file={prefix}prompts/p.md,line={line},title=tokcost%3A "
            "max_tokens_per_file (budget prompts)::") in result.stdout


def test_budget_wide_annotations_point_at_the_config_in_the_workspace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    write(ws, {"svc/tokcost.yaml": CONFIG.replace("max_tokens_per_file: 60",
                                                  "max_total_tokens: 10"),
               "svc/prompts/p.md": lines_of(3)})
    monkeypatch.chdir(ws / "svc")
    result = check()
    github = render_github(result.configs[0], workspace=ws)
    assert github.startswith("::error file=svc/tokcost.yaml,line=2,title=tokcost%3A max_total")


def test_window_share_annotations_have_a_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    catalog = ("version: 1\nmodels:\n  - id: tiny\n    provider: test\n"
               f"    tokenizer: {TOK}\n    context_window: 200\n")
    config = ("model: tiny\ncatalog: models.yaml\nbudgets:\n  - name: w\n    paths: ['*.md']\n"
              "    reserve_output_tokens: 50\n    max_context_percent: 50\n")
    write(tmp_path, {"models.yaml": catalog, "tokcost.yaml": config, "p.md": lines_of(12)})
    monkeypatch.chdir(tmp_path)
    [failure] = check().failures
    assert failure.rule == "context_window"
    assert failure.line == expected_line(lines_of(12), 200 * 50 // 100 - 50)
    assert f"file=p.md,line={failure.line}," in render_github(check().configs[0])


def test_lines_cost_nothing_when_every_file_passes(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import tokcost.budget.evaluate as crossing

    def boom(*_: Any, **__: Any) -> Any:
        raise AssertionError("a passing check looked for a line")

    monkeypatch.setattr(crossing, "crossing_line", boom)
    write(tmp_path, {"tokcost.yaml": CONFIG, "prompts/p.md": lines_of(2)})
    monkeypatch.chdir(tmp_path)
    assert check().passed


@settings(max_examples=40, deadline=None)
@given(lines=st.lists(st.text(alphabet="ab \t.,'é日", max_size=12), min_size=1, max_size=12),
       limit=st.integers(min_value=0, max_value=60))
def test_crossing_line_is_where_the_running_count_passes_the_limit(lines: list[str],
                                                                   limit: int) -> None:
    tok = get_tokenizer(TOK)
    text = "\n".join(lines)
    line = crossing_line(text, tok, limit)
    ends = [i + 1 for i, ch in enumerate(text) if ch == "\n"] + [len(text)]
    if line is None:
        assert tok.count(text) <= limit
        return
    assert 1 <= line <= len(lines)
    assert tok.count(text[: ends[line - 1]]) > limit
    assert line == 1 or tok.count(text[: ends[line - 2]]) <= limit


@settings(max_examples=200, deadline=None)
@given(window=st.integers(min_value=1, max_value=2_000_000),
       reserve=st.integers(min_value=0, max_value=10_000),
       share=st.floats(min_value=0, max_value=100, allow_nan=False),
       tokens=st.integers(min_value=0, max_value=2_000_000))
def test_window_allowance_agrees_with_the_judge(window: int, reserve: int, share: float,
                                                tokens: int) -> None:
    over = (tokens + reserve) * 100.0 / window > share  # the judge's test
    assert over == (tokens > window_allowance(share, window, reserve))


# --- JUnit against Jenkins' schema -------------------------------------------------------------


@pytest.fixture(scope="module")
def junit_schema() -> Any:
    xmlschema = pytest.importorskip("xmlschema")
    return xmlschema.XMLSchema(str(FIXTURES / "junit-10.xsd"))


def test_the_schema_refuses_what_it_must(junit_schema: Any) -> None:
    bad = ('<testsuites><testsuite name="a" tests="1" failures="0" errors="0">'
           '<testcase name="x" file="x.md"/></testsuite></testsuites>')
    assert not junit_schema.is_valid(bad)  # the attribute the old report had
    assert junit_schema.is_valid(bad.replace(' file="x.md"', ""))


def test_golden_junit_validates(junit_schema: Any) -> None:
    junit_schema.validate(str(GOLDEN / "fail.junit.xml"))


@pytest.mark.parametrize("strict", [False, True], ids=["warnings-skipped", "strict-errors"])
def test_junit_of_a_failing_check_validates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            junit_schema: Any, strict: bool) -> None:
    write(tmp_path, {"tokcost.yaml": CONFIG.replace('["prompts/**"]', '["prompts/**", "x/**"]'),
                     "prompts/p.md": lines_of(12)})
    monkeypatch.chdir(tmp_path)
    result = check(strict=strict)
    assert result.configs[0].notices  # x/** matches nothing: a warning (an error under strict)
    junit_schema.validate(result.render("junit"))


def test_junit_of_a_base_check_validates(history: dict[str, Any], junit_schema: Any) -> None:
    junit_schema.validate(check(base="main").render("junit"))


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        pytest.param("bad\x01name.md", "bad\\x01name.md", id="control-character"),
        pytest.param("esc\x1b[31m.md", "esc\\x1b[31m.md", id="escape-sequence"),
        pytest.param(os.fsdecode(b"latin\xe9.md"), "latin\\xe9.md", id="not-utf-8"),
    ],
)
def test_a_path_xml_cannot_hold_stays_well_formed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  junit_schema: Any, name: str,
                                                  shown: str) -> None:
    write(tmp_path, {"tokcost.yaml": CONFIG})
    (tmp_path / "prompts").mkdir()
    try:
        (tmp_path / "prompts" / name).write_text(lines_of(12), encoding="utf-8")
    except (OSError, UnicodeEncodeError):
        pytest.skip("this file system refuses that name")
    monkeypatch.chdir(tmp_path)
    result = check()
    report = result.render("junit")
    root = ET.fromstring(report)  # well-formed
    names = {c.get("name") for c in root.iter("testcase")}
    assert f"prompts/{shown}" in names
    junit_schema.validate(report)


# --- the text report's hint ------------------------------------------------------------------


def test_text_report_says_how_to_accept_growth(tmp_path: Path, runner: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {"tokcost.yaml": CONFIG, "prompts/p.md": lines_of(2)})
    monkeypatch.chdir(tmp_path)
    assert runner.invoke(app, ["check", "--update-baseline"]).exit_code == 0
    write(tmp_path, {"prompts/p.md": lines_of(3)})
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 1
    assert "if intended, run: tokcost check --update-baseline" in result.stdout
    # Each format carries it where the growth failure is.
    judged = check()
    for fmt in ("json", "github", "markdown", "junit"):
        assert "if intended, run: tokcost check --update-baseline" in judged.render(fmt)


def test_no_hint_without_a_growth_failure(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {"tokcost.yaml": CONFIG, "prompts/p.md": lines_of(12)})
    monkeypatch.chdir(tmp_path)
    result = check()
    assert result.failures and "update-baseline" not in render_text(result)



# --- review fixes: the written baseline, every config's ref first, the hint names -c ---------


def test_update_baseline_with_base_names_the_file_written(history: dict[str, Any]) -> None:
    result = CliRunner().invoke(app, ["check", "--base", "main", "--update-baseline"])
    assert "wrote baseline .tokcost-baseline.json" in result.stderr
    assert (history["repo"] / ".tokcost-baseline.json").is_file()


def test_several_configs_resolve_the_ref_before_writing_any_baseline(
        history: dict[str, Any], tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside, {"tokcost.yaml": CONFIG})
    result = CliRunner().invoke(app, ["check", "-c", "tokcost.yaml", "-c",
                                      str(outside / "tokcost.yaml"), "--base", "main",
                                      "--update-baseline"])
    assert result.exit_code == 2, result.output
    assert "needs a git work tree" in result.stderr and "leave out --base 'main'" in result.stderr
    assert not (history["repo"] / ".tokcost-baseline.json").exists()


def test_the_update_hint_names_a_config_given_with_c(history: dict[str, Any]) -> None:
    # a hint without -c would update the baseline of the config found here, not this one's
    write(history["repo"], {"alt.yaml": CONFIG.replace("prompts/**", "prompts/grows.md")})
    runner = CliRunner()
    assert runner.invoke(app, ["check", "-c", "alt.yaml", "--update-baseline"]).exit_code == 0
    write(history["repo"], {"prompts/grows.md": lines_of(8, "grows")})
    named = runner.invoke(app, ["check", "-c", "alt.yaml"])
    assert named.exit_code == 1, named.output
    assert "if intended, run: tokcost check -c alt.yaml --update-baseline" in named.output
