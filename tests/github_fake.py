"""A stand-in for the GitHub REST API on 127.0.0.1: one pull request's comments, each with
its author, and ``/user`` answering as GitHub does for the token in use."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

REPO = "o/r"
PR = 7
TOKEN = "test-token"
COMMENTS = f"/repos/{REPO}/issues/{PR}/comments"
BOT = "github-actions[bot]"  # who an Actions GITHUB_TOKEN comments as


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # names lower-cased
    body: Any


@dataclass
class FakeGitHub:
    """Serves one pull request's comments; ``refuse`` answers every request with an error.
    ``me`` is the token's login; None is an Actions token, which ``GET /user`` refuses (403)."""

    url: str = ""
    comments: list[dict[str, Any]] = field(default_factory=list)
    requests: list[Seen] = field(default_factory=list)
    refuse: tuple[int, str] | None = None
    next_id: int = 1000
    me: str | None = None

    def plant(self, comment_id: int, body: str, login: str) -> None:
        self.comments.append({"id": comment_id, "body": body, "user": {"login": login}})

    def answer(self, method: str, path: str, query: dict[str, list[str]],
               body: Any) -> tuple[int, Any]:
        if self.refuse is not None:
            return self.refuse[0], {"message": self.refuse[1]}
        if method == "GET" and path == "/user":
            if self.me is None:
                return 403, {"message": "Resource not accessible by integration"}
            return 200, {"login": self.me}
        if method == "GET" and path == COMMENTS:
            per_page = int(query.get("per_page", ["30"])[0])
            page = int(query.get("page", ["1"])[0])
            return 200, self.comments[(page - 1) * per_page: page * per_page]
        if method == "POST" and path == COMMENTS:
            self.next_id += 1
            self.plant(self.next_id, body["body"], self.me or BOT)
            return 201, self.comments[-1]
        match = re.fullmatch(rf"/repos/{REPO}/issues/comments/(\d+)", path)
        if method == "PATCH" and match:
            for comment in self.comments:
                if comment["id"] == int(match.group(1)):
                    if comment["user"]["login"] != (self.me or BOT):
                        return 403, {"message": "Must have admin rights to Repository."}
                    comment["body"] = body["body"]
                    return 200, comment
        return 404, {"message": "Not Found"}

    def calls(self) -> list[tuple[str, str]]:
        return [(r.method, r.path) for r in self.requests]

    def bodies(self) -> list[str]:
        return [c["body"] for c in self.comments]


@contextmanager
def serve() -> Iterator[FakeGitHub]:
    api = FakeGitHub()

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            url = urlsplit(self.path)
            query = parse_qs(url.query)
            body = json.loads(raw) if raw else None
            api.requests.append(Seen(self.command, url.path, query,
                                     {k.lower(): v for k, v in self.headers.items()}, body))
            status, payload = api.answer(self.command, url.path, query, body)
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = _serve

        def log_message(self, format: str, *args: Any) -> None:  # keep pytest's output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              daemon=True)
    thread.start()
    api.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
