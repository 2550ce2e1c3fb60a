"""The PR comment is the bot's (issue 26, part 2): found by marker *and* author, and every
name a pull request controls reaches the Markdown as inert text."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from github_fake import PR, REPO, TOKEN, FakeGitHub, serve
from markdown_it import MarkdownIt

from tokcost.budget.pr_comment import upsert_comment
from tokcost.budget.report import MARKER

from .conftest import Sandbox


@pytest.fixture
def github_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with serve() as api:
        yield api


def test_a_planted_comment_is_never_edited(github_api: FakeGitHub) -> None:
    planted = f"{MARKER}\n### ✅ tokcost check: all budgets hold"
    github_api.plant(3, planted, "stranger")
    assert upsert_comment(github_api.url, REPO, PR, TOKEN, f"{MARKER}\nreal report") == "created"
    assert github_api.bodies() == [planted, f"{MARKER}\nreal report"]
    # The next push edits the bot's own comment, still not the planted one.
    assert upsert_comment(github_api.url, REPO, PR, TOKEN, f"{MARKER}\nnext") == "updated"
    assert github_api.bodies() == [planted, f"{MARKER}\nnext"]


def test_a_personal_token_edits_its_own_comment(github_api: FakeGitHub) -> None:
    github_api.me = "alice"
    github_api.plant(3, f"{MARKER}\nplanted", "mallory")
    github_api.plant(4, f"{MARKER}\nold", "alice")
    assert upsert_comment(github_api.url, REPO, PR, TOKEN, f"{MARKER}\nnew") == "updated"
    assert github_api.bodies() == [f"{MARKER}\nplanted", f"{MARKER}\nnew"]


def test_a_comment_without_an_author_is_not_ours(github_api: FakeGitHub) -> None:
    github_api.comments.append({"id": 9, "body": f"{MARKER}\nno user field"})
    assert upsert_comment(github_api.url, REPO, PR, TOKEN, f"{MARKER}\nreport") == "created"


HOSTILE_NAME = "<img src=x onerror=alert(1)> @octocat [x](http://evil.example) `a` & *b*"
HOSTILE_FILE = "y\r### ✅ all budgets hold\r<b>@octocat<b> [l](http:evil) ``.txt"


def _inline_texts(markdown: str) -> tuple[list[str], list[str], str]:
    """The plain-text runs, the raw HTML, and the HTML of a GitHub-like rendering."""
    md = MarkdownIt("commonmark").enable("table")
    texts, html = [], []
    for token in md.parse(markdown):
        if token.type == "html_block":
            html.append(token.content)
        for child in token.children or []:
            if child.type == "text":
                texts.append(child.content)
            elif child.type == "html_inline":
                html.append(child.content)
    return texts, html, md.render(markdown)


def test_hostile_names_reach_the_markdown_as_inert_text(sandbox: Sandbox) -> None:
    repo = sandbox.repo
    (repo / "prompts").mkdir()
    (repo / "prompts" / HOSTILE_FILE).write_text("word " * 400, encoding="utf-8")
    (repo / "tokcost.yaml").write_text(
        "version: 1\ntokenizer: cl100k_base\nbudgets:\n"
        f"  - name: '{HOSTILE_NAME}'\n    paths: ['prompts/']\n    max_tokens_per_file: 10\n",
        encoding="utf-8")
    ran = sandbox.run("check", "--format", "markdown")
    assert ran.code == 1, ran.stderr
    texts, html, rendered = _inline_texts(ran.stdout)
    # Only the report's own HTML: its marker, <details>/<summary> and <sub>.
    allowed = ("<!-- tokcost-check -->", "<details>", "</details>", "<summary>", "</summary>",
               "<sub>", "</sub>")
    assert all(piece.strip().startswith(allowed) for piece in html), html
    assert "<img" not in rendered and "<b>" not in rendered and "<a " not in rendered
    for text in texts:  # names are in code spans; no plain run carries what a stranger wrote
        assert "@octocat" not in text and "evil" not in text, text
    assert rendered.count("<h3>") == 1  # the \r in the file name started no heading
    assert "\r" not in ran.stdout
    assert "@octocat" in rendered  # shown, as code
