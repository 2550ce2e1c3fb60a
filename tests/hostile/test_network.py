"""Downloads under bounds (issue 26, part 3): a server's claims cannot make tokcost plan
more than it reads."""

from __future__ import annotations

import asyncio
import http.server
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import WALL_S, Sandbox


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


def _workers(pid: int) -> list[int]:
    """The processes below ``pid`` that run multiprocessing (the forkserver, its resource
    tracker and the Dask workers it forks)."""
    found, stack = [], [pid]
    while stack:
        here = stack.pop()
        try:  # a child is listed under the thread that started it
            children = [c for t in Path(f"/proc/{here}/task").iterdir()
                        for c in (t / "children").read_text().split()]
            if "multiprocessing" in Path(f"/proc/{here}/cmdline").read_text():
                found.append(here)
        except OSError:
            continue
        stack += map(int, children)
    return found


def _running(pid: int) -> bool:
    """Not gone, and not a zombie (a container without an init reaps no orphan)."""
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc")
@pytest.mark.parametrize("moment", [2, 4], ids=["while-the-cluster-starts", "while-counting"])
def test_ctrl_c_on_the_dask_engine(sandbox: Sandbox, moment: int) -> None:
    pytest.importorskip("distributed")
    words = " ".join(f"w{i * 7919 % 100_003}" for i in range(10_000)) + "\n"
    for i in range(30):  # about 100 MB: the workers are still counting at Ctrl-C
        (sandbox.repo / f"f{i}.txt").write_text(words * 50)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tokcost", "count", ".", "--engine", "dask", "--jobs", "2",
         "-t", "cl100k_base", "-t", "o200k_base", "-t", "o200k_harmony"], cwd=sandbox.repo,
        env=sandbox.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        # 2: the forkserver and its tracker, as the cluster starts (a Ctrl-C then waited until
        # the cluster had started, or was lost); 4: the two workers too, a second on
        seen = None
        for _ in range(1200):
            seen = seen or (time.monotonic() if len(_workers(proc.pid)) >= moment else None)
            if proc.poll() is not None or (seen and time.monotonic() - seen > moment // 4):
                break
            time.sleep(0.02)
        workers = _workers(proc.pid)
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal does: the whole process group
        _, err = proc.communicate(timeout=WALL_S)
    finally:
        proc.kill()
    assert (proc.returncode, err) == (130, "interrupted\n")
    for _ in range(100):  # the forkserver and tracker end when they see this process gone
        if not any(map(_running, workers)):
            break
        time.sleep(0.05)
    assert workers and not [p for p in workers if _running(p)]


class _Silent(http.server.BaseHTTPRequestHandler):
    """Accepts and never answers."""

    def do_GET(self) -> None:
        time.sleep(60)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_timeout_bounds_the_planning_of_a_url(sandbox: Sandbox) -> None:
    pytest.importorskip("distributed")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Silent)
    server.daemon_threads, server.block_on_close = True, False  # its handlers sleep on
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sandbox.env.update(NO_PROXY="127.0.0.1", no_proxy="127.0.0.1")
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/a.txt"
        line = sandbox.one_error("count", url, "--engine", "dask", "--timeout", "2", "-t",
                                 "cl100k_base", code=1)
    finally:
        server.shutdown()
        server.server_close()
    assert url in line and "2 s" in line



def _answer_as_http(sock: socket.socket) -> None:
    conn, _ = sock.accept()
    conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")  # Dask reads 8 bytes as a frame length
    time.sleep(5)
    conn.close()


@pytest.mark.parametrize("mode", ["refused", "silent", "http"])
def test_timeout_bounds_reaching_a_dask_scheduler(sandbox: Sandbox, mode: str) -> None:
    """Issue 30, part 7: a port that accepts and never answers hung Client() for ever; one that
    answers as another server (an HTTP proxy, sshd) raised MemoryError (an exabyte frame)."""
    pytest.importorskip("distributed")
    (sandbox.repo / "a.txt").write_text("hello\n")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{sock.getsockname()[1]}"
        if mode == "refused":
            sock.close()  # the port is free: connections are refused
        else:  # the kernel accepts the connection; nothing reads, or an HTTP answer comes
            sock.listen(8)
        if mode == "http":
            threading.Thread(target=_answer_as_http, args=(sock,), daemon=True).start()
        line = sandbox.one_error("count", "a.txt", "--engine", "dask", "--scheduler", address,
                                 "--timeout", "2", "-t", "cl100k_base", code=1)
    assert line.startswith(f"error: cannot reach the Dask scheduler at {address} within 2 s;")


@pytest.mark.skipif(shutil.which("openssl") is None, reason="makes a certificate with openssl")
def test_a_tls_scheduler_is_reached_with_dasks_tls_settings(sandbox: Sandbox) -> None:
    pytest.importorskip("distributed")
    (sandbox.repo / "a.txt").write_text("hello\n")
    cert, key = sandbox.repo / "cert.pem", sandbox.repo / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key,
                    "-out", cert, "-days", "1", "-subj", "/CN=localhost"], check=True,
                   capture_output=True)
    sandbox.env.update(DASK_DISTRIBUTED__COMM__TLS__CA_FILE=str(cert),
                       DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT=str(cert),
                       DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY=str(key))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        address = f"tls://127.0.0.1:{sock.getsockname()[1]}"
    line = sandbox.one_error("count", "a.txt", "--engine", "dask", "--scheduler", address,
                             "--timeout", "2", "-t", "cl100k_base", code=1)  # a TypeError before
    assert line.startswith(f"error: cannot reach the Dask scheduler at {address}")


def test_a_scheduler_is_checked_from_inside_a_running_event_loop() -> None:
    pytest.importorskip("distributed")
    from tokcost.scale.cluster import ClusterError, dask_client

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        address = f"tcp://127.0.0.1:{sock.getsockname()[1]}"

    async def in_a_notebook() -> None:  # asyncio.run() inside one raised RuntimeError
        with pytest.raises(ClusterError), dask_client(address, timeout=1):
            pass
    asyncio.run(in_a_notebook())
