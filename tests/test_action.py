"""The GitHub Action (action.yml) run locally, and its pull-request comment poster.

The action's run-steps are taken from action.yml, their ``${{ ... }}`` expressions filled
in by a small substitutor, and run with bash the way a runner runs them
(``bash --noprofile --norc -eo pipefail``), in a temporary git repository with a
simulated ``GITHUB_*`` environment. An HTTP server on 127.0.0.1 stands in for the GitHub
API and records every request. The ``uses:`` step (setup-python) and the pip install step
are skipped: tokcost is installed in the test environment already.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from github_fake import BOT, COMMENTS, PR, REPO, TOKEN, FakeGitHub, serve

import tokcost
from tokcost.budget.pr_comment import (
    MAX_BODY_CHARS,
    PER_PAGE,
    TRUNCATED,
    CommentError,
    main,
    pull_request_number,
    upsert_comment,
)
from tokcost.budget.report import MARKER
from tokcost.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
STEPS: list[dict[str, Any]] = ACTION["runs"]["steps"]
INPUTS = {"config", "working-directory", "base-ref", "strict", "python-version", "github-token",
          "comment"}

@pytest.fixture
def github_api() -> Iterator[FakeGitHub]:
    with serve() as api:
        yield api


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    # A proxy from the developer's environment must not carry requests for 127.0.0.1.
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
                 "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


# --- running the action's steps --------------------------------------------------------------

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


@dataclass
class Context:
    inputs: dict[str, str]
    action_path: str
    env: dict[str, str]
    outputs: dict[str, dict[str, str]]


def substitute(text: str, ctx: Context) -> str:
    """Fill in the expressions action.yml uses; an unknown one fails the test."""

    def one(match: re.Match[str]) -> str:
        expr = match.group(1)
        parts = expr.split(".")
        if len(parts) == 2 and parts[0] == "inputs":
            return ctx.inputs[parts[1]]  # KeyError: the action uses an input it doesn't declare
        if expr == "github.action_path":
            return ctx.action_path
        if len(parts) == 2 and parts[0] == "env":
            return ctx.env.get(parts[1], "")
        if len(parts) == 4 and parts[0] == "steps" and parts[2] == "outputs":
            return ctx.outputs.get(parts[1], {}).get(parts[3], "")
        raise AssertionError(f"the test's substitutor does not know ${{{{ {expr} }}}}")

    return EXPRESSION.sub(one, text)


def read_outputs(path: Path) -> dict[str, str]:
    """A step's GITHUB_OUTPUT file (name=value lines; the action writes no multi-line value)."""
    outputs = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        assert "<<" not in line.partition("=")[0], f"multi-line output not simulated: {line}"
        name, sep, value = line.partition("=")
        assert sep, f"not a name=value line: {line!r}"
        outputs[name] = value
    return outputs


@dataclass
class StepRun:
    id: str
    code: int
    stdout: str
    stderr: str


@dataclass
class ActionRun:
    code: int
    steps: list[StepRun]
    summary: str
    outputs: dict[str, dict[str, str]]

    def step(self, step_id: str) -> StepRun:
        return next(s for s in self.steps if s.id == step_id)


def run_action(runner: Path, workspace: Path, inputs: dict[str, str], *, api_url: str,
               event_name: str = "pull_request", event: dict[str, Any] | None = None,
               bin_dir: Path | None = None, extra_env: dict[str, str] | None = None) -> ActionRun:
    """Run action.yml's run-steps in order, as a runner would, until one fails."""
    runner.mkdir(parents=True)
    summary = runner / "step_summary.md"
    summary.touch()
    event_path = runner / "event.json"
    if event is None:
        event = {"action": "synchronize", "number": PR, "pull_request": {"number": PR}}
    event_path.write_text(json.dumps(event), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    path = [str(Path(sys.executable).parent), env.get("PATH", "")]
    if bin_dir is not None:
        path.insert(0, str(bin_dir))
    env.update({
        "PATH": os.pathsep.join(path),
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_API_URL": api_url,
        "GITHUB_EVENT_NAME": event_name,
        "GITHUB_EVENT_PATH": str(event_path),
        "GITHUB_STEP_SUMMARY": str(summary),
        "RUNNER_TEMP": str(runner),
        **(extra_env or {}),
    })
    values = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    assert set(inputs) <= set(values), f"inputs the action lacks: {set(inputs) - set(values)}"
    values.update(inputs)
    ctx = Context(values, str(ROOT), env, {})
    runs: list[StepRun] = []
    for index, step in enumerate(STEPS):
        if "uses" in step or step.get("id") == "install":
            continue
        step_id = step.get("id", f"step{index}")
        output = runner / f"output-{index}"
        output.touch()
        script = runner / f"step-{index}.sh"
        script.write_text(substitute(step["run"], ctx), encoding="utf-8")
        step_env = {**env, "GITHUB_OUTPUT": str(output)}
        step_env.update({k: substitute(str(v), ctx) for k, v in step.get("env", {}).items()})
        cwd = workspace / substitute(step.get("working-directory", "."), ctx)
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                              cwd=cwd, env=step_env, capture_output=True, text=True, timeout=300)
        ctx.outputs[step_id] = read_outputs(output)
        runs.append(StepRun(step_id, proc.returncode, proc.stdout, proc.stderr))
        if proc.returncode:
            break
    return ActionRun(runs[-1].code, runs, summary.read_text(encoding="utf-8"), ctx.outputs)


# --- a repository with budgets -----------------------------------------------------------------

CATALOG = """\
version: 1
models:
  - id: small-priced
    provider: test
    tokenizer: tiktoken:cl100k_base
    context_window: 1000
    pricing: {input: 2.50, output: 10.00}
"""

CONFIG = """\
model: small-priced
catalog: models.yaml
budgets:
  - name: system prompt
    paths: [/prompts/system.md]
    max_tokens_per_file: 100
  - name: examples
    paths: ["/prompts/examples/*.md"]
    max_tokens_per_file: 40
"""

SHORT = "Q: What is 2 plus 2?\nA: 4.\n"
LONG = "".join(f"Q: What is {a} plus {a}?\nA: {a} plus {a} is {2 * a}.\n" for a in range(30))


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid",
                    "-c", "init.defaultBranch=main", *args], cwd=cwd, check=True,
                   capture_output=True)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A checkout whose budgets live in svc/: one example file is over its budget."""
    root = tmp_path / "workspace"
    svc = root / "svc"
    (svc / "prompts" / "examples").mkdir(parents=True)
    (svc / "models.yaml").write_text(CATALOG, encoding="utf-8")
    (svc / "tokcost.yaml").write_text(CONFIG, encoding="utf-8")
    (svc / "prompts" / "system.md").write_text("You are terse. Answer in one line.\n",
                                               encoding="utf-8")
    (svc / "prompts" / "examples" / "short.md").write_text(SHORT, encoding="utf-8")
    (svc / "prompts" / "examples" / "long.md").write_text(LONG, encoding="utf-8")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "budgets")
    return root


SHIM = """\
#!/usr/bin/env bash
# Stands in for tokcost: records where and how it was called.
{ printf 'cwd=%s\\n' "$PWD"; printf 'arg=%s\\n' "$@"; echo end; } >> "$SHIM_LOG"
case " $* " in *" --format markdown "*) printf '%s\\n### shim report\\n' '<!-- tokcost-check -->' ;; esac
exit "${SHIM_EXIT:-0}"
"""


@pytest.fixture
def shim(tmp_path: Path) -> Path:
    """A folder holding a fake `tokcost` that logs its calls to $SHIM_LOG."""
    bin_dir = tmp_path / "shim-bin"
    bin_dir.mkdir()
    (bin_dir / "tokcost").write_text(SHIM, encoding="utf-8")
    (bin_dir / "tokcost").chmod(0o755)
    return bin_dir


def shim_calls(log: Path) -> list[tuple[str, list[str]]]:
    calls, cwd, args = [], "", []
    for line in log.read_text(encoding="utf-8").splitlines():
        if line == "end":
            calls.append((cwd, args))
            cwd, args = "", []
        elif line.startswith("cwd="):
            cwd = line[4:]
        else:
            args.append(line.removeprefix("arg="))
    return calls


# --- action.yml itself ---------------------------------------------------------------------------


def test_action_declares_its_inputs_and_outputs() -> None:
    assert set(ACTION["inputs"]) == INPUTS
    for name, spec in ACTION["inputs"].items():
        assert spec.get("description"), name
        assert spec.get("required", False) is False, name  # every input has a default
    defaults = {name: spec["default"] for name, spec in ACTION["inputs"].items()}
    assert defaults["working-directory"] == "."
    assert defaults["comment"] == "true"
    assert defaults["github-token"] == "" and defaults["base-ref"] == "" and defaults["config"] == ""
    assert re.fullmatch(r"3\.\d+", defaults["python-version"])
    assert set(ACTION["outputs"]) == {"exit-code", "report"}
    assert ACTION["outputs"]["exit-code"]["value"] == "${{ steps.check.outputs.exit-code }}"
    assert ACTION["name"] and ACTION["description"]


def test_action_is_composite_bash_steps() -> None:
    assert ACTION["runs"]["using"] == "composite"
    uses = [s for s in STEPS if "uses" in s]
    assert [s["uses"] for s in uses] == ["actions/setup-python@v5"]
    assert uses[0]["with"]["python-version"] == "${{ inputs.python-version }}"
    runs = [s for s in STEPS if "uses" not in s]
    assert all(s["shell"] == "bash" and s["run"].strip() for s in runs)
    assert [s["id"] for s in runs] == ["install", "check", "comment", "verdict"]
    install = runs[0]["run"]
    assert "pip install" in install and '"${{ github.action_path }}"' in install
    # Inputs reach the scripts through env only: text spliced into a script would run as code.
    for step in runs:
        assert "${{ inputs." not in step["run"], step["id"]
        assert "${{ steps." not in step["run"], step["id"]
    assert STEPS.index(uses[0]) < STEPS.index(runs[0])  # Python first, then pip


# --- the action, run ----------------------------------------------------------------------------


def test_pull_request_gets_the_report_as_one_new_comment(
        tmp_path: Path, workspace: Path, github_api: FakeGitHub) -> None:
    run = run_action(tmp_path / "runner", workspace,
                     {"working-directory": "svc", "github-token": TOKEN}, api_url=github_api.url)
    request = tokcost.CheckRequest(config=workspace / "svc" / "tokcost.yaml")
    expected = tokcost.check(request).exit_code
    assert expected == 1
    assert run.code == expected
    assert run.outputs["check"]["exit-code"] == str(expected)
    assert [s.id for s in run.steps] == ["check", "comment", "verdict"]
    # Annotations in the log, on the file over its budget.
    check = run.step("check")
    assert "::error file=" in check.stdout and "long.md" in check.stdout
    assert "tokcost check: FAIL" in check.stdout
    assert "Traceback" not in check.stderr + run.step("comment").stderr
    # The Markdown report in the job summary, once.
    assert run.summary.startswith(MARKER)
    assert run.summary.count(MARKER) == 1
    assert "tokcost check: 1 of 2 budgets exceeded (1 failure)" in run.summary
    assert "`long.md`" in run.summary or "long.md" in run.summary
    assert Path(run.outputs["check"]["report"]).read_text(encoding="utf-8") == run.summary
    # Who am I (an Actions token may not ask: it is github-actions[bot]), one list request,
    # then one new comment holding the report.
    assert github_api.calls() == [("GET", "/user"), ("GET", COMMENTS), ("POST", COMMENTS)]
    _, listed, posted = github_api.requests
    assert listed.query == {"per_page": [str(PER_PAGE)], "page": ["1"]}
    for request in github_api.requests:
        assert request.headers["authorization"] == f"Bearer {TOKEN}"
        assert request.headers["accept"] == "application/vnd.github+json"
        assert request.headers.get("user-agent")
    assert posted.headers["content-type"] == "application/json"
    assert posted.body == {"body": run.summary}
    assert posted.body["body"].startswith(MARKER)
    assert f"created the report comment on {REPO}#{PR}" in run.step("comment").stdout


def test_next_push_updates_the_marked_comment(
        tmp_path: Path, workspace: Path, github_api: FakeGitHub) -> None:
    # The long example is cut back under its budget: the check passes now.
    (workspace / "svc" / "prompts" / "examples" / "long.md").write_text(SHORT, encoding="utf-8")
    github_api.plant(5, "Looks good to me", "reviewer")
    github_api.plant(6, f"> {MARKER}\n> quoting the bot is no bot comment", BOT)
    github_api.plant(42, f"{MARKER}\n### ❌ tokcost check: 1 of 2 budgets exceeded", BOT)
    run = run_action(tmp_path / "runner", workspace,
                     {"working-directory": "svc", "github-token": TOKEN}, api_url=github_api.url)
    request = tokcost.CheckRequest(config=workspace / "svc" / "tokcost.yaml")
    expected = tokcost.check(request).exit_code
    assert expected == 0
    assert run.code == expected
    assert "tokcost check: all 2 budgets hold" in run.summary
    patch = f"/repos/{REPO}/issues/comments/42"
    assert github_api.calls() == [("GET", "/user"), ("GET", COMMENTS), ("PATCH", patch)]
    assert github_api.requests[2].body == {"body": run.summary}
    assert github_api.requests[2].headers["authorization"] == f"Bearer {TOKEN}"
    assert [c["id"] for c in github_api.comments] == [5, 6, 42]  # no second comment
    assert f"updated the report comment on {REPO}#{PR}" in run.step("comment").stdout


def test_a_config_error_fails_with_2_and_posts_nothing(
        tmp_path: Path, workspace: Path, github_api: FakeGitHub) -> None:
    run = run_action(tmp_path / "runner", workspace,
                     {"working-directory": "svc", "config": "missing.yaml",
                      "github-token": TOKEN}, api_url=github_api.url)
    assert run.code == 2
    assert run.outputs["check"] == {"exit-code": "2", "report": ""}
    errors = [line for line in run.step("check").stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "missing.yaml" in errors[0]  # shown once, not once a run
    assert "no pull-request comment: the check made no report" in run.step("comment").stdout
    assert run.summary == ""
    assert github_api.requests == []


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        pytest.param({}, ["check"], id="defaults"),
        pytest.param({"config": "ci/my budgets.yaml", "working-directory": "svc"},
                     ["check", "--config", "ci/my budgets.yaml"], id="config-in-a-folder"),
        pytest.param({"base-ref": "origin/main"}, ["check", "--base", "origin/main"],
                     id="base-ref"),
        pytest.param({"strict": "true"}, ["check", "--strict"], id="strict"),
        pytest.param({"strict": "false", "base-ref": ""}, ["check"], id="empty-and-false"),
        # An input is data: quotes and $(...) in a ref never reach the shell as code.
        pytest.param({"base-ref": 'main"; touch pwned; echo "$(touch pwned2)'},
                     ["check", "--base", 'main"; touch pwned; echo "$(touch pwned2)'],
                     id="no-injection"),
    ],
)
def test_inputs_become_tokcost_arguments(
        tmp_path: Path, workspace: Path, shim: Path, github_api: FakeGitHub,
        inputs: dict[str, str], expected: list[str]) -> None:
    log = tmp_path / "shim.log"
    run = run_action(tmp_path / "runner", workspace, inputs, api_url=github_api.url,
                     bin_dir=shim, extra_env={"SHIM_LOG": str(log)})
    assert run.code == 0
    folder = workspace / inputs.get("working-directory", ".")
    assert shim_calls(log) == [
        (str(folder.resolve()), [*expected, "--format", "github"]),
        (str(folder.resolve()), [*expected, "--format", "markdown"]),
    ]
    assert run.summary == f"{MARKER}\n### shim report\n"
    assert list(tmp_path.rglob("pwned*")) == []


@pytest.mark.parametrize("code", [0, 1, 2])
def test_the_step_fails_with_the_checks_exit_code(
        tmp_path: Path, workspace: Path, shim: Path, github_api: FakeGitHub, code: int) -> None:
    run = run_action(tmp_path / "runner", workspace, {"github-token": TOKEN},
                     api_url=github_api.url, bin_dir=shim,
                     extra_env={"SHIM_LOG": str(tmp_path / "shim.log"), "SHIM_EXIT": str(code)})
    assert run.code == code
    assert run.outputs["check"]["exit-code"] == str(code)
    assert [(s.id, s.code) for s in run.steps] == [("check", 0), ("comment", 0), ("verdict", code)]
    assert github_api.calls() == [("GET", "/user"), ("GET", COMMENTS), ("POST", COMMENTS)]


@pytest.mark.parametrize(
    ("inputs", "event_name", "event", "said"),
    [
        pytest.param({}, "pull_request", None, "", id="no-token"),
        pytest.param({"github-token": TOKEN, "comment": "false"}, "pull_request", None, "",
                     id="comment-false"),
        pytest.param({"github-token": TOKEN}, "push", {"ref": "refs/heads/main"},
                     "no pull-request comment on a push event", id="push"),
        pytest.param({"github-token": TOKEN}, "schedule", {}, "on a schedule event",
                     id="schedule"),
    ],
)
def test_no_comment_without_a_token_or_a_pull_request(
        tmp_path: Path, workspace: Path, shim: Path, github_api: FakeGitHub,
        inputs: dict[str, str], event_name: str, event: dict[str, Any] | None,
        said: str) -> None:
    run = run_action(tmp_path / "runner", workspace, inputs, api_url=github_api.url,
                     event_name=event_name, event=event, bin_dir=shim,
                     extra_env={"SHIM_LOG": str(tmp_path / "shim.log"), "SHIM_EXIT": "1"})
    assert run.code == 1
    assert github_api.requests == []
    assert run.summary.startswith(MARKER)  # the job summary is written all the same
    assert said in run.step("comment").stdout


@pytest.mark.parametrize(
    ("status", "message", "fragment"),
    [
        pytest.param(401, "Bad credentials", "the token is missing, expired", id="401"),
        pytest.param(403, "Resource not accessible by integration", "pull-requests: write",
                     id="403"),
        pytest.param(404, "Not Found", "sees no such repository", id="404"),
    ],
)
def test_a_refused_comment_is_a_warning_not_the_verdict(
        tmp_path: Path, workspace: Path, shim: Path, github_api: FakeGitHub,
        status: int, message: str, fragment: str) -> None:
    github_api.refuse = (status, message)
    run = run_action(tmp_path / "runner", workspace, {"github-token": TOKEN},
                     api_url=github_api.url, bin_dir=shim,
                     extra_env={"SHIM_LOG": str(tmp_path / "shim.log"), "SHIM_EXIT": "0"})
    assert run.code == 0  # the budgets decide, not the comment
    comment = run.step("comment")
    warnings = [line for line in comment.stdout.splitlines() if line.startswith("::warning")]
    assert len(warnings) == 1
    assert f"GitHub API: {status} on GET {COMMENTS} ({message})" in warnings[0]
    assert fragment in warnings[0]
    assert "Traceback" not in comment.stdout + comment.stderr


# --- upsert_comment ----------------------------------------------------------------------------


def test_upsert_creates_then_updates(github_api: FakeGitHub) -> None:
    first = upsert_comment(github_api.url, REPO, PR, TOKEN, f"{MARKER}\nfirst", MARKER)
    second = upsert_comment(github_api.url, REPO, PR, TOKEN, f"{MARKER}\nsecond", MARKER)
    assert (first, second) == ("created", "updated")
    assert github_api.comments == [{"id": 1001, "body": f"{MARKER}\nsecond",
                                    "user": {"login": BOT}}]
    assert github_api.calls() == [("GET", "/user"), ("GET", COMMENTS), ("POST", COMMENTS),
                                  ("GET", "/user"), ("GET", COMMENTS),
                                  ("PATCH", f"/repos/{REPO}/issues/comments/1001")]


def test_upsert_reads_every_page_of_comments(github_api: FakeGitHub) -> None:
    for i in range(1, PER_PAGE + 1):
        github_api.plant(i, f"comment {i}", "someone")
    github_api.plant(777, f"\n{MARKER}\nold report", BOT)
    assert upsert_comment(github_api.url, REPO, PR, TOKEN, "new report") == "updated"
    assert github_api.calls() == [("GET", "/user"), ("GET", COMMENTS), ("GET", COMMENTS),
                                  ("PATCH", f"/repos/{REPO}/issues/comments/777")]
    assert [r.query["page"] for r in github_api.requests[1:3]] == [["1"], ["2"]]
    # A body without the marker gets it, so the next run finds the comment again.
    assert github_api.requests[3].body == {"body": f"{MARKER}\nnew report"}


def test_upsert_cuts_a_body_github_would_refuse(github_api: FakeGitHub) -> None:
    upsert_comment(github_api.url, REPO, PR, TOKEN, MARKER + "\n" + "x" * (2 * MAX_BODY_CHARS))
    sent = github_api.requests[-1].body["body"]
    assert len(sent) == MAX_BODY_CHARS
    assert sent.startswith(MARKER) and sent.endswith(TRUNCATED)


@pytest.mark.parametrize(
    ("status", "message", "fragments"),
    [
        pytest.param(401, "Bad credentials",
                     ["GitHub API: 401 on GET /repos/o/r/issues/7/comments (Bad credentials)",
                      "the token is missing, expired or not a GitHub token"], id="401"),
        pytest.param(403, "Resource not accessible by integration",
                     ["GitHub API: 403 on GET", "(Resource not accessible by integration)",
                      "'permissions: pull-requests: write'", "fork"], id="403"),
        pytest.param(404, "Not Found",
                     ["GitHub API: 404 on GET", "(Not Found)", "GITHUB_REPOSITORY"], id="404"),
        pytest.param(500, "Server\nError", ["GitHub API: 500 on GET", "(Server Error)",
                                            "try again later"], id="500"),
    ],
)
def test_upsert_errors_are_one_line(github_api: FakeGitHub, status: int, message: str,
                                    fragments: list[str]) -> None:
    github_api.refuse = (status, message)
    with pytest.raises(CommentError) as caught:
        upsert_comment(github_api.url, REPO, PR, TOKEN, "report")
    text = str(caught.value)
    assert "\n" not in text
    for fragment in fragments:
        assert fragment in text
    assert TOKEN not in text
    assert caught.value.exit_code == 1


def test_upsert_error_when_nothing_listens() -> None:
    with socket.socket() as sock:  # a port that was free a moment ago and is closed now
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(CommentError, match=rf"cannot reach the GitHub API at http://127\.0\.0\.1:{port}"):
        upsert_comment(f"http://127.0.0.1:{port}", REPO, PR, TOKEN, "report", timeout=5)


@pytest.mark.parametrize(
    ("args", "param", "fragment"),
    [
        pytest.param({"repo": "no-slash"}, "repo", "repo='no-slash' is not 'owner/name'",
                     id="repo"),
        pytest.param({"repo": "o/"}, "repo", "is not 'owner/name'", id="repo-half"),
        pytest.param({"number": 0}, "number", "number=0 must be", id="number"),
        pytest.param({"token": ""}, "token", "token is empty", id="token"),
        pytest.param({"marker": ""}, "marker", "marker is empty", id="marker"),
    ],
)
def test_upsert_rejects_bad_arguments(args: dict[str, Any], param: str, fragment: str) -> None:
    call = {"api_url": "http://127.0.0.1:9", "repo": REPO, "number": PR, "token": TOKEN,
            "body": "report", "marker": MARKER, **args}
    with pytest.raises(UsageError, match=re.escape(fragment)) as caught:
        upsert_comment(**call)
    assert caught.value.param == param


@pytest.mark.parametrize(
    ("event", "number"),
    [
        pytest.param({"number": 3, "pull_request": {"number": 3}}, 3, id="pull_request"),
        pytest.param({"issue": {"number": 4, "pull_request": {}}}, 4, id="comment-on-a-pr"),
        pytest.param({"issue": {"number": 5}}, None, id="comment-on-an-issue"),
        pytest.param({"ref": "refs/heads/main"}, None, id="push"),
        pytest.param({"pull_request": {"number": "7"}}, None, id="not-a-number"),
        pytest.param([], None, id="not-an-object"),
    ],
)
def test_pull_request_number(event: Any, number: int | None) -> None:
    assert pull_request_number(event) == number


# --- python -m tokcost.budget.pr_comment --------------------------------------------------------


@pytest.fixture
def comment_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                github_api: FakeGitHub) -> Path:
    """A GitHub Actions environment for main(); returns the report file."""
    for name in list(os.environ):
        if name.startswith("GITHUB_"):
            monkeypatch.delenv(name)
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": PR}}), encoding="utf-8")
    report = tmp_path / "report.md"
    report.write_text(f"{MARKER}\n### report\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_REPOSITORY", REPO)
    monkeypatch.setenv("GITHUB_API_URL", github_api.url)
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    monkeypatch.setenv("GITHUB_EVENT_NAME", "pull_request")
    return report


def test_main_posts_the_report(comment_env: Path, github_api: FakeGitHub,
                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(comment_env)]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"tokcost: created the report comment on {REPO}#{PR}\n"
    assert captured.err == ""
    assert github_api.requests[-1].body == {"body": f"{MARKER}\n### report\n"}


@pytest.mark.parametrize(
    ("change", "code", "fragment"),
    [
        pytest.param({"args": []}, 2, "usage: python -m tokcost.budget.pr_comment REPORT.md",
                     id="no-args"),
        pytest.param({"unset": ["GITHUB_TOKEN"]}, 2, "GITHUB_TOKEN not set", id="no-token"),
        pytest.param({"unset": ["GITHUB_REPOSITORY", "GITHUB_EVENT_PATH"]}, 2,
                     "GITHUB_REPOSITORY, GITHUB_EVENT_PATH not set", id="no-repo-no-event"),
        pytest.param({"event": {"ref": "refs/heads/main"}, "name": "push"}, 2,
                     "push has no pull request in", id="push-event"),
        pytest.param({"event": "{not json"}, 2, "cannot read the event JSON", id="bad-event"),
        pytest.param({"args": ["missing.md"]}, 2, "cannot read the report", id="no-report"),
        pytest.param({"refuse": (401, "Bad credentials")}, 1, "GitHub API: 401 on GET", id="401"),
        pytest.param({"refuse": (403, "Forbidden")}, 1, "pull-requests: write", id="403"),
        pytest.param({"refuse": (404, "Not Found")}, 1, "GitHub API: 404 on GET", id="404"),
    ],
)
def test_main_errors_are_one_line_and_an_exit_code(
        comment_env: Path, github_api: FakeGitHub, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], tmp_path: Path, change: dict[str, Any], code: int,
        fragment: str) -> None:
    for name in change.get("unset", []):
        monkeypatch.delenv(name)
    if "event" in change:
        event = change["event"]
        (tmp_path / "event.json").write_text(
            event if isinstance(event, str) else json.dumps(event), encoding="utf-8")
    if "name" in change:
        monkeypatch.setenv("GITHUB_EVENT_NAME", change["name"])
    if "refuse" in change:
        github_api.refuse = change["refuse"]
    args = change.get("args", [str(comment_env)])
    assert main([str(tmp_path / a) if a == "missing.md" else a for a in args]) == code
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert fragment in lines[0]
    assert "Traceback" not in captured.err and TOKEN not in captured.err

