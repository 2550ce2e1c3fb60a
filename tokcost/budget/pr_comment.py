"""One pull-request comment per pull request, found by a hidden marker and edited on the next
push as size-limit's action does: ``python -m tokcost.budget.pr_comment REPORT.md``."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from tokcost.budget.report import MARKER
from tokcost.errors import InputError, TokcostError, UsageError, arg

API_VERSION = "2022-11-28"  # the REST API version these calls are written against
DEFAULT_API_URL = "https://api.github.com"
MAX_BODY_CHARS = 65536  # GitHub rejects a longer comment body (422)
PER_PAGE = 100  # the most the list endpoint returns per page
MAX_PAGES = 100  # 10,000 comments: past that, a new comment beats an endless listing
TRUNCATED = "\n\n… the report is longer than a comment may be: the job summary has all of it.\n"
# What a refusal means, by HTTP status, and what to do about it.
_REFUSALS = {
    401: "the token is missing, expired or not a GitHub token",
    403: "the token may not write pull-request comments; give the job 'permissions: pull-requests: "
         "write' (a pull request from a fork gets a read-only token)",
    404: "this token sees no such repository or pull request; check GITHUB_REPOSITORY and the "
         "event's pull request number"}

Outcome = Literal["created", "updated"]
ACTIONS_BOT = "github-actions[bot]"  # the login behind an Actions job's GITHUB_TOKEN


class CommentError(TokcostError):
    """The GitHub API refused the request or could not be reached (exit code 1)."""


def upsert_comment(api_url: str, repo: str, number: int, token: str, body: str,
                   marker: str = MARKER, *, timeout: float = 30.0) -> Outcome:
    """Create or update the one comment on pull request ``number`` of ``repo`` (owner/name)
    that starts with ``marker``; the body is cut to what GitHub accepts."""
    for bad, param, shown, problem in (
            (repo.count("/") != 1 or not all(repo.split("/")), "repo", repr(repo),
             "is not 'owner/name'"),
            (number < 1, "number", number, "must be a pull request number >= 1"),
            (not token, "token", None,
             "is empty: pass a token allowed to write pull-request comments"),
            (not marker, "marker", None, "is empty: pass the text that identifies the comment")):
        if bad:
            raise UsageError(f"{arg(param, shown)} {problem}", param=param)
    issues = api_url.rstrip("/") + "/repos/" + "/".join(
        urllib.parse.quote(part, safe="") for part in repo.split("/")) + "/issues"
    text = body if body.lstrip().startswith(marker) else f"{marker}\n{body}"
    if len(text) > MAX_BODY_CHARS:
        text = text[: MAX_BODY_CHARS - len(TRUNCATED)] + TRUNCATED
    authors = _own_logins(api_url.rstrip("/"), token, timeout)
    existing = _find_comment(f"{issues}/{number}/comments", token, (marker, authors), timeout)
    if existing is None:
        _request("POST", f"{issues}/{number}/comments", token, {"body": text}, timeout)
        return "created"
    _request("PATCH", f"{issues}/comments/{existing}", token, {"body": text}, timeout)
    return "updated"


def _own_logins(api: str, token: str, timeout: float) -> frozenset[str]:
    """Who the token comments as: ``GET /user`` answers for a personal or app-user token; an
    Actions ``GITHUB_TOKEN`` is refused there and comments as github-actions[bot]."""
    try:
        me = _request("GET", f"{api}/user", token, None, timeout)
    except CommentError:
        me = None
    login = me.get("login") if isinstance(me, dict) else None
    return frozenset({ACTIONS_BOT, *([login] if isinstance(login, str) else [])})


def _find_comment(comments_url: str, token: str, mine: tuple[str, frozenset[str]],
                  timeout: float) -> int | None:
    """The id of the first comment that starts with the marker (a quote of it does not) and
    was written by the token's identity: one planted by anyone else is never edited."""
    marker, authors = mine
    for page in range(1, MAX_PAGES + 1):
        url = f"{comments_url}?per_page={PER_PAGE}&page={page}"
        comments = _request("GET", url, token, None, timeout)
        if not isinstance(comments, list):
            raise CommentError(f"GitHub API: GET {_path(url)} answered with no list of comments")
        for comment in comments:
            if not isinstance(comment, dict):
                continue
            text, user = comment.get("body"), comment.get("user")
            login = user.get("login") if isinstance(user, dict) else None
            if isinstance(text, str) and text.lstrip().startswith(marker) and isinstance(
                    comment.get("id"), int) and login in authors:
                return int(comment["id"])
        if len(comments) < PER_PAGE:
            break
    return None


def _request(method: str, url: str, token: str, payload: dict[str, Any] | None,
             timeout: float) -> Any:
    data = None if payload is None else json.dumps(payload).encode("utf-8")
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Accept": "application/vnd.github+json", "Authorization": f"Bearer {token}",
        "User-Agent": "tokcost-check",  # GitHub refuses requests without one
        "X-GitHub-Api-Version": API_VERSION,
        **({"Content-Type": "application/json"} if data is not None else {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        raise CommentError(_refusal(exc, method, url)) from None
    except (urllib.error.URLError, OSError) as exc:
        parts = urllib.parse.urlsplit(url)
        raise CommentError(f"cannot reach the GitHub API at {parts.scheme}://{parts.netloc}: "
                           f"{getattr(exc, 'reason', exc)}; check GITHUB_API_URL and the "
                           "network") from None
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        raise CommentError(f"GitHub API: {method} {_path(url)} answered with no JSON") from None


def _refusal(exc: urllib.error.HTTPError, method: str, url: str) -> str:
    message = None
    with contextlib.suppress(ValueError, AttributeError, OSError):
        message = json.loads(exc.read() or b"{}").get("message")
    said = f" ({' '.join(message.split())})" if isinstance(message, str) and message else ""
    advice = _REFUSALS.get(exc.code, "try again later, or post the report from the job "
                                     "summary by hand")
    return f"GitHub API: {exc.code} on {method} {_path(url)}{said}: {advice}"


def _path(url: str) -> str:
    return urllib.parse.urlsplit(url).path


def pull_request_number(event: Any) -> int | None:
    """The pull request's number in a webhook event, or None when the event has none."""
    if not isinstance(event, dict):
        return None
    issue = event.get("issue")  # issue_comment on a pull request
    for item in (event.get("pull_request"),
                 issue if isinstance(issue, dict) and "pull_request" in issue else None):
        if isinstance(item, dict) and isinstance(item.get("number"), int):
            return int(item["number"])
    return None


def main(argv: list[str] | None = None) -> int:
    """``python -m tokcost.budget.pr_comment REPORT.md``: the exit code (docs/check.md)."""
    args = sys.argv[1:] if argv is None else argv
    env = os.environ
    names = ("GITHUB_TOKEN", "GITHUB_REPOSITORY", "GITHUB_EVENT_PATH")
    token, repo, event_path = (env.get(name, "") for name in names)
    try:
        if len(args) != 1:
            raise UsageError("usage: python -m tokcost.budget.pr_comment REPORT.md "
                             "(the Markdown to post)")
        missing = [name for name in names if not env.get(name)]
        if missing:
            raise UsageError(f"{', '.join(missing)} not set: run this in a GitHub Actions job "
                             "(the action passes its github-token input as GITHUB_TOKEN)")
        number = pull_request_number(_read(event_path, "the event JSON", json.loads))
        if number is None:
            name = env.get("GITHUB_EVENT_NAME") or "this event"
            raise UsageError(f"{name} has no pull request in {event_path}: a comment needs a "
                             "pull_request event")
        outcome = upsert_comment(env.get("GITHUB_API_URL") or DEFAULT_API_URL, repo, number,
                                 token, _read(args[0], "the report", str))
    except TokcostError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2 if isinstance(exc, (UsageError, InputError)) else 1
    print(f"tokcost: {outcome} the report comment on {repo}#{number}")
    return 0


def _read(path: str, what: str, parse: Callable[[str], Any]) -> Any:
    try:
        return parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {what} {path}: {exc}") from None


if __name__ == "__main__":
    raise SystemExit(main())
