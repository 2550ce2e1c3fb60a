"""Downloads under bounds (issue 26, part 3): a server's claims cannot make tokcost plan
more than it reads."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from .conftest import Sandbox


class _Liar(http.server.BaseHTTPRequestHandler):
    """Answers every range request with one byte of a file it says holds 10**18."""

    def do_GET(self) -> None:
        self.send_response(206)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Range", "bytes 0-0/1000000000000000000")
        self.send_header("Content-Length", "1")
        self.end_headers()
        self.wfile.write(b"a")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def liar() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Liar)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/big.txt"
    server.shutdown()
    server.server_close()


def test_a_server_claiming_an_exabyte(sandbox: Sandbox, liar: str) -> None:
    pytest.importorskip("distributed")
    sandbox.env.update(NO_PROXY="127.0.0.1", no_proxy="127.0.0.1")
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        sandbox.env.pop(name, None)
    line = sandbox.one_error("count", liar, "--engine", "dask", "-t", "cl100k_base", code=1)
    assert "1,000,000,000,000,000,000 bytes" in line and "download" in line
