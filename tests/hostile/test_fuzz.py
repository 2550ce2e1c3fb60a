"""Every file format tokcost reads, mutated by hypothesis (issue 26): whatever the bytes, the
command ends within 10 s and 1 GiB of address space with exit code 0, 1 or 2, no traceback, a
failure said in one ``error:`` line (or, for a report command, in its report), and no file
beside its folder changed. The examples run in one worker process under those limits
(fuzz_worker.py), so that many inputs fit the suite's time."""

from __future__ import annotations

import atexit
import base64
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import WALL_S, _digest, _limits

ROOT = Path(__file__).resolve().parents[2]
LLAMA = ROOT / "tests" / "fixtures" / "hf_tiny" / "llama"
TINY_NPZ = ROOT / "tokcost" / "reference" / "data" / "tiny_ref.npz"
# Bytes that mean something to some parser: nesting, anchors, aliases, NUL, line ends,
# quotes, template tags, a regex that backtracks, numbers past every limit.
INSERTS = [b"[", b"{", b"]", b"}", b"&a ", b"*a", b"\x00", b"\n", b"\r", b"'", b'"', b"\\",
           b"(a|aa)+", b"{{ 1/0 }}", b"{% for i in range(99999999) %}", b"-1", b"1e999",
           b"99999999999999999999", b"\xff\xfe", b"<<: *a", b"..", b"/", b"null"]


@st.composite
def mutations(draw: st.DrawFn, seed: bytes) -> bytes:
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["set", "insert", "delete", "cut"]))
        if kind == "set" and data:
            data[min(at, len(data) - 1)] = draw(st.integers(0, 255))
        elif kind == "insert":
            data[at:at] = draw(st.sampled_from(INSERTS)) * draw(st.integers(1, 3))
        elif kind == "delete":
            del data[at:at + draw(st.integers(1, 64))]
        else:
            del data[at:]
    return bytes(data)


class _Worker:
    """fuzz_worker.py under the 1 GiB limit, started again after a job that outlived 10 s."""

    proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def run(cls, cwd: Path, args: list[str]) -> dict[str, Any]:
        if cls.proc is None or cls.proc.poll() is not None:
            home = tempfile.mkdtemp(prefix="tokcost-fuzz-")  # as the sandbox fixture's env
            env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "TOKCOST_"))}
            env.update(HOME=home, TOKCOST_CACHE_DIR=os.path.join(home, "cache"), NO_COLOR="1",
                       PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
                       OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1",
                       MALLOC_ARENA_MAX="2")  # glibc's per-thread pools count against 1 GiB
            cls.proc = subprocess.Popen(
                [sys.executable, str(Path(__file__).with_name("fuzz_worker.py"))],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, preexec_fn=_limits, env=env)
            atexit.register(cls.proc.kill)
            atexit.register(shutil.rmtree, home, True)
        proc = cls.proc
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"cwd": str(cwd), "args": args}).encode() + b"\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], WALL_S)
        answer = proc.stdout.readline() if ready else b""
        if not answer:  # past the time limit, or killed by the memory limit
            proc.kill()
            raise AssertionError(f"{args}: no answer within {WALL_S} s under 1 GiB")
        return dict(json.loads(answer))


def _run(where: Path, args: list[str], *, report: bool = False) -> None:
    outside = where.parent / "outside"
    before = _digest(outside)
    result = _Worker.run(where, args)
    assert _digest(outside) == before, (args, "a file outside the folder changed")
    assert result["exception"] is None, (args, result["exception"])
    assert result["code"] in (0, 1, 2), (args, result["code"], result["stderr"])
    out = result["stdout"] + result["stderr"]
    assert "Traceback" not in out, out
    errors = [line for line in result["stderr"].splitlines() if line.startswith("error:")]
    assert len(errors) <= 1, result["stderr"]
    if result["code"] and not report:
        assert errors, (args, result["code"], result["stderr"])


CONFIG = (b"version: 1\ntokenizer: cl100k_base\nbudgets:\n  - name: docs\n    paths: ['*.md']\n"
          b"    max_tokens_per_file: 2k\n    exclude: ['x/']\n")
PYPROJECT = (b"[project]\nname = 'x'\n\n[tool.tokcost]\nversion = 1\ntokenizer = 'cl100k_base'\n"
             b"[[tool.tokcost.budgets]]\nname = 'docs'\npaths = ['*.md']\n"
             b"max_tokens_per_file = 2000\n")
CHAT = json.dumps([{"role": "system", "content": "Be brief."},
                   {"role": "user", "content": [{"type": "text", "text": "hi"}]}]).encode()
PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
REQUEST = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": [
    {"type": "text", "text": "hi"},
    {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG_1PX}"}}]}],
    "tools": [{"type": "function", "function": {"name": "f", "description": "d.", "parameters": {
        "type": "object", "properties": {"a": {"type": "string", "enum": ["x"]}}}}}]}).encode()
CLAUDE_REQUEST = json.dumps({"model": "claude-sonnet-4-5", "system": "Be brief.",
    "tools": [{"name": "f", "input_schema": {"type": "object"}}], "tool_choice": {"type": "any"},
    "messages": [{"role": "user", "content": [{"type": "image", "source": {
        "type": "base64", "media_type": "image/png", "data": PNG_1PX}}]}]}).encode()
CATALOG = (b"version: 1\nextends: shipped\nmodels:\n  - id: mine\n    tokenizer: cl100k_base\n"
           b"    context_window: 8k\n    pricing: {input: 1.0, output: 2.0}\n")
TIKTOKEN = b"".join(base64.b64encode(bytes([i])) + f" {i}\n".encode() for i in range(256))


def _case(name: str, seed: bytes | Path, build: Callable[[Path, bytes], list[str]], *,
          report: bool = False, examples: int = 25) -> Callable[[], None]:
    data = seed.read_bytes() if isinstance(seed, Path) else seed

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(blob=mutations(data))
    def fuzz(blob: bytes) -> None:
        with tempfile.TemporaryDirectory() as folder:
            where, outside = Path(folder) / "repo", Path(folder) / "outside"
            where.mkdir()
            outside.mkdir()
            (outside / "victim.txt").write_text("keep me\n")
            (where / "a.md").write_text("hello world\n")
            _run(where, build(where, blob), report=report)

    fuzz.__name__ = f"test_fuzz_{name}"
    return fuzz


def _file(name: str, args: Callable[[Path], list[str]]) -> Callable[[Path, bytes], list[str]]:
    def build(where: Path, blob: bytes) -> list[str]:
        (where / name).write_bytes(blob)
        return args(where / name)
    return build


def _checkpoint(name: str, args: list[str]) -> Callable[[Path, bytes], list[str]]:
    def build(where: Path, blob: bytes) -> list[str]:
        shutil.copytree(LLAMA, where / "ckpt")
        (where / "ckpt" / name).write_bytes(blob)
        return [a.replace("CKPT", str(where / "ckpt")) for a in args]
    return build


def _template(where: Path, blob: bytes) -> list[str]:
    shutil.copytree(LLAMA, where / "ckpt")
    config = json.loads((LLAMA / "tokenizer_config.json").read_text())
    config["chat_template"] = blob.decode("utf-8", "replace")
    (where / "ckpt" / "tokenizer_config.json").write_text(json.dumps(config))
    return ["generate", "hi", "--model-dir", str(where / "ckpt"), "--chat-template",
            "--max-new-tokens", "1"]


test_fuzz_budget_config = _case("budget_config", CONFIG, _file(
    "tokcost.yaml", lambda p: ["check", "-c", str(p)]), report=True)
test_fuzz_pyproject = _case("pyproject", PYPROJECT, _file(
    "pyproject.toml", lambda p: ["check", "-c", str(p)]), report=True)
test_fuzz_catalog = _case("catalog", CATALOG, _file(
    "models.yaml", lambda p: ["models", "validate", str(p)]), report=True)
test_fuzz_chat = _case("chat", CHAT, _file(
    "chat.json", lambda p: ["count", "--chat", str(p), "-t", "cl100k_base"]))
test_fuzz_request = _case("request", REQUEST, _file(
    "body.json", lambda p: ["count", "--request", str(p)]))
test_fuzz_claude_request = _case("claude_request", CLAUDE_REQUEST, _file(
    "body.json", lambda p: ["price", "--request", str(p), "-m", "claude-sonnet-4-5"]))
test_fuzz_config_json = _case("config_json", LLAMA / "config.json", _file(
    "config.json", lambda p: ["kvmem", "estimate", "--config", str(p), "--gpu", "H100"]))
test_fuzz_safetensors = _case("safetensors", LLAMA / "model.safetensors", _checkpoint(
    "model.safetensors", ["models", "import", "CKPT"]), examples=15)
test_fuzz_tokenizer_json = _case("tokenizer_json", LLAMA / "tokenizer.json", _file(
    "tokenizer.json", lambda p: ["count", str(p.parent / "a.md"), "-t", f"hf:{p}"]))
def _tiktoken(where: Path, blob: bytes) -> list[str]:
    (where / "r.tiktoken").write_bytes(blob)
    (where / "r.tiktoken.json").write_text('{"pattern": "gpt2"}')
    return ["count", str(where / "a.md"), "-t", f"tiktoken:{where / 'r.tiktoken'}"]


test_fuzz_tiktoken = _case("tiktoken", TIKTOKEN, _tiktoken)
test_fuzz_npz = _case("npz", TINY_NPZ, _file(
    "w.npz", lambda p: ["generate", "hi", "-m", "tiny-ref", "--weights", str(p),
                        "--max-new-tokens", "1"]), examples=15)
test_fuzz_chat_template = _case("chat_template", b"{% for m in messages %}<|{{ m.role }}|>"
                                b"{{ m.content }}{% endfor %}", _template)


def test_fuzz_bpe(bpe_model: Path) -> None:
    _case("bpe", bpe_model.read_bytes(), _file("t.bpe", lambda p: ["bpe", "inspect", str(p)]))()
