"""``kvmem estimate`` and ``kvmem simulate`` output, table and JSON, pinned byte for byte.

The goldens in tests/golden/kvmem/ were written by the commands before the application
layer existed; regenerate them only after an intended change with
``TOKCOST_UPDATE_GOLDEN=1 pytest tests/test_kvmem_golden.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tokcost.cli.app import app

GOLDEN = Path(__file__).parent / "golden" / "kvmem"
E = ("kvmem", "estimate")
S = ("kvmem", "simulate")

CASES = [
    pytest.param(*E, "-m", "llama-3.1-8b", id="estimate-default"),
    pytest.param(*E, "-m", "llama-3.1-8b", "--context", "1k,8k,32k,128k", "--gpu", "H100",
                 id="estimate-h100"),
    pytest.param(*E, "-m", "llama-3.1-8b", "--context", "1k,8k,32k,128k", "--gpu", "H100", "--json",
                 id="estimate-h100-json"),
    pytest.param(*E, "-m", "gemma-3-27b", "--context", "1k,32k,128k", "--kv-memory", "20GiB",
                 "--kv-dtype", "fp8", id="estimate-sliding-kv-memory"),
    pytest.param(*E, "-m", "gemma-3-27b", "--context", "1k,32k,128k", "--kv-memory", "20GiB",
                 "--kv-dtype", "fp8", "--json", id="estimate-sliding-kv-memory-json"),
    pytest.param(*E, "-m", "llama-3.1-70b", "--context", "1k,8k,32k,128k", "--gpu", "H100", "--tp", "4",
                 id="estimate-tp4"),
    pytest.param(*E, "-m", "llama-3.1-70b", "--context", "1k,8k,32k,128k", "--gpu", "H100", "--tp", "4",
                 "--json", id="estimate-tp4-json"),
    pytest.param(*E, "-m", "qwen3-32b", "--gpu-memory", "80GiB", "--kv-dtype", "fp8",
                 "--batch", "16", id="estimate-gpu-memory-batch"),
    pytest.param(*E, "-m", "qwen3-32b", "--gpu-memory", "80GiB", "--kv-dtype", "int4",
                 "--kv-group-size", "32", "--batch", "16", "--json", id="estimate-int4-json"),
    pytest.param(*E, "-m", "deepseek-v3", "--context", "32k", "--json", id="estimate-mla-json"),
    pytest.param(*E, "-m", "deepseek-v3", "--context", "32k", "--gpu", "H200", "--tp", "8",
                 id="estimate-mla-tp8"),
    pytest.param(*E, "-m", "qwen3-30b-a3b", "--gpu", "H100", "--context", "4096", "--json",
                 id="estimate-moe-json"),
    pytest.param(*E, "-m", "llama-3.1-8b", "--gpu-memory", "24GB", "--gpu-util", "0.8",
                 "--reserve", "1GiB", "--bandwidth", "900GB/s", "--weights-dtype", "fp8",
                 id="estimate-custom-gpu"),
    pytest.param(*E, "-m", "llama-3.1-8b", "--gpu-memory", "80GiB", "--reserve", "0", "--json",
                 id="estimate-zero-reserve-json"),
    pytest.param(*E, "-m", "llama-3.1-8b", "--kv-memory", "57.4GiB", "--context", "8k",
                 id="estimate-vllm-logged"),
    pytest.param(*E, "-m", "llama-3.1-8b", "--bandwidth", "1TB", "--context", "8k", "--json",
                 id="estimate-bandwidth-json"),
    pytest.param(*E, "-m", "mistral-7b-v0.1", "--gpu", "L4", "--context", "2k,16k", "--block-size", "32",
                 id="estimate-window-block32"),
    pytest.param(*E, "-m", "gpt-oss-120b", "--gpu", "H100", "--context", "1k,100k", id="estimate-gpt-oss"),
    *(pytest.param(*E, *args, "--engine", "vllm@0.21", id=f"{case}-v0.21") for case, args in [
        # issue 28: --engine vllm is v0.34 from here on; v0.21's figures, pinned
        ("estimate-default", ("-m", "llama-3.1-8b")),
        ("estimate-h100", ("-m", "llama-3.1-8b", "--context", "1k,8k,32k,128k", "--gpu", "H100")),
        ("estimate-sliding-kv-memory", ("-m", "gemma-3-27b", "--context", "1k,32k,128k",
                                        "--kv-memory", "20GiB", "--kv-dtype", "fp8")),
        ("estimate-tp4", ("-m", "llama-3.1-70b", "--context", "1k,8k,32k,128k", "--gpu", "H100",
                          "--tp", "4")),
        ("estimate-gpu-memory-batch", ("-m", "qwen3-32b", "--gpu-memory", "80GiB", "--kv-dtype",
                                       "fp8", "--batch", "16")),
        ("estimate-mla-json", ("-m", "deepseek-v3", "--context", "32k", "--json")),
        ("estimate-mla-tp8", ("-m", "deepseek-v3", "--context", "32k", "--gpu", "H200", "--tp",
                              "8")),
        ("estimate-moe-json", ("-m", "qwen3-30b-a3b", "--gpu", "H100", "--context", "4096",
                               "--json")),
        ("estimate-custom-gpu", ("-m", "llama-3.1-8b", "--gpu-memory", "24GB", "--gpu-util", "0.8",
                                 "--reserve", "1GiB", "--bandwidth", "900GB/s", "--weights-dtype",
                                 "fp8")),
        ("estimate-vllm-logged", ("-m", "llama-3.1-8b", "--kv-memory", "57.4GiB", "--context",
                                  "8k")),
        ("estimate-window-block32", ("-m", "mistral-7b-v0.1", "--gpu", "L4", "--context",
                                     "2k,16k", "--block-size", "32")),
        ("estimate-gpt-oss", ("-m", "gpt-oss-120b", "--gpu", "H100", "--context", "1k,100k")),
        ("estimate-h100-json", ("-m", "llama-3.1-8b", "--context", "1k,8k,32k,128k", "--gpu",
                                "H100", "--json")),
        ("estimate-sliding-kv-memory-json", ("-m", "gemma-3-27b", "--context", "1k,32k,128k",
                                             "--kv-memory", "20GiB", "--kv-dtype", "fp8",
                                             "--json")),
        ("estimate-tp4-json", ("-m", "llama-3.1-70b", "--context", "1k,8k,32k,128k", "--gpu",
                               "H100", "--tp", "4", "--json")),
        ("estimate-int4-json", ("-m", "qwen3-32b", "--gpu-memory", "80GiB", "--kv-dtype", "int4",
                                "--kv-group-size", "32", "--batch", "16", "--json")),
        ("estimate-zero-reserve-json", ("-m", "llama-3.1-8b", "--gpu-memory", "80GiB",
                                        "--reserve", "0", "--json")),
        ("estimate-bandwidth-json", ("-m", "llama-3.1-8b", "--bandwidth", "1TB", "--context",
                                     "8k", "--json"))]),
    pytest.param(*S, "--requests", "100", id="simulate-default-100"),
    pytest.param(*S, "--dist", "alpaca", "--requests", "300", "--block-size", "32",
                 id="simulate-alpaca-block32"),
    pytest.param(*S, "--rate", "0.05", "--requests", "200", "--json", id="simulate-rate-json"),
    pytest.param(*S, "-m", "llama-3.1-8b", "--kv-memory", "2GiB", "--max-len", "8192",
                 "--requests", "100", "--json", id="simulate-llama-json"),
    pytest.param(*S, "--n", "4", "--policy", "oracle,paged", "--dist", "alpaca", "--requests",
                 "300", id="simulate-parallel-samples"),
    pytest.param(*S, "--n", "4", "--policy", "paged", "--dist", "alpaca", "--requests", "300",
                 "--json", id="simulate-parallel-samples-json"),
    pytest.param(*S, "--slots", "4096", "--dist", "uniform:10-300", "--requests", "200",
                 "--seed", "7", id="simulate-slots-uniform"),
    pytest.param(*S, "--slots", "100000", "--dist", "fixed:100,50", "--requests", "50", "--json",
                 id="simulate-never-saturated-json"),
    pytest.param(*S, "--slots", "100000", "--dist", "fixed:100,50", "--requests", "50",
                 id="simulate-never-saturated"),
    pytest.param(*S, "--policy", "pow2", "--requests", "100", "--kv-dtype", "int4", "-m",
                 "llama-3.1-8b", "--kv-memory", "1GB", id="simulate-int4"),
    pytest.param(*S, "--trace", "TRACE", "--slots", "5000", "--max-len", "1024", "--json",
                 id="simulate-trace-json"),
    pytest.param(*S, "--trace", "TRACE", "--slots", "5000", "--max-len", "1024", "--n", "2",
                 id="simulate-trace-n2"),
]


def write_trace(path: Path) -> None:
    """30 requests with growing lengths, 1 to 3 samples, arriving every other step."""
    rows = ({"prompt_tokens": 20 + i * 7, "output_tokens": 5 + i * 3, "n": 1 + i % 3,
             "arrival": i * 2} for i in range(30))
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.mark.parametrize("args", [pytest.param(p.values, id=p.id) for p in CASES])
def test_golden_output(request: pytest.FixtureRequest, tmp_path: Path, args: tuple[str, ...]
                       ) -> None:
    trace = tmp_path / "trace.jsonl"
    write_trace(trace)
    argv = [str(trace) if a == "TRACE" else a for a in args]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    text = result.stdout.replace(str(trace), "TRACE")
    path = GOLDEN / f"{request.node.callspec.id}.txt"
    if os.environ.get("TOKCOST_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert path.is_file(), f"missing golden {path}; run with TOKCOST_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8")
