"""Every file format tokcost reads, mutated by hypothesis (issue 26): whatever the bytes, the
command ends with exit code 0, 1 or 2, no traceback, and a failure says so in one ``error:``
line (or, for a report command, in its report). In process, so that many inputs fit the
suite's time; the subprocess cases beside this file hold the time and memory limits."""

from __future__ import annotations

import base64
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokcost.cli.app import app

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


def _run(args: list[str], *, report: bool = False) -> None:
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args, repr(result.exception))
    assert result.exit_code in (0, 1, 2), (args, result.exit_code, result.output)
    out = result.stdout + result.stderr
    assert "Traceback" not in out, out
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) <= 1, result.stderr
    if result.exit_code and not report:
        assert errors, (args, result.exit_code, result.stderr)


CONFIG = (b"version: 1\ntokenizer: cl100k_base\nbudgets:\n  - name: docs\n    paths: ['*.md']\n"
          b"    max_tokens_per_file: 2k\n    exclude: ['x/']\n")
PYPROJECT = (b"[project]\nname = 'x'\n\n[tool.tokcost]\nversion = 1\ntokenizer = 'cl100k_base'\n"
             b"[[tool.tokcost.budgets]]\nname = 'docs'\npaths = ['*.md']\n"
             b"max_tokens_per_file = 2000\n")
CHAT = json.dumps([{"role": "system", "content": "Be brief."},
                   {"role": "user", "content": [{"type": "text", "text": "hi"}]}]).encode()
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
            where = Path(folder)
            (where / "a.md").write_text("hello world\n")
            _run(build(where, blob), report=report)

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
