"""The application layer of ``kvmem``: tokcost.estimate_memory and tokcost.simulate.

Each ``--json`` document is the result's ``to_dict()``; usage errors are raised by the
library in the API's words and shown by the CLI with the flag.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import tokcost
from tokcost.cli.app import app
from tokcost.errors import InputError, UsageError
from tokcost.memory.kv import KvDtypeName
from tokcost.memory.policies import PolicyName

GiB = 2**30

# A model the shipped catalog lacks, in a catalog that extends it.
MINE = """\
extends: shipped
models:
  - id: my-model
    context_window: 4096
    architecture:
      layers: 4
      hidden_size: 256
      attention_heads: 4
      kv_heads: 2
      head_dim: 64
      params: 10M
      weights_dtype: bf16
"""


@pytest.fixture
def mine(tmp_path: Path) -> Path:
    path = tmp_path / "mine.yaml"
    path.write_text(MINE, encoding="utf-8")
    return path


@pytest.fixture
def mpl_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """matplotlib writes its font cache under MPLCONFIGDIR: keep it in tmp_path."""
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "mpl"))


def cli_json(*args: str) -> Any:
    result = CliRunner().invoke(app, ["kvmem", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def same(result: Any) -> Any:
    """What the --json document of ``result`` reads back as."""
    return json.loads(json.dumps(result.to_dict()))


# --- --json == to_dict() -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        pytest.param(["-m", "llama-3.1-8b"], {}, id="default"),
        pytest.param(
            ["-m", "llama-3.1-70b", "--context", "1k,8k", "--gpu", "H100", "--tp", "4"],
            dict(contexts=[1000, 8000], gpu="H100", tp=4),
            id="gpu-tp",
        ),
        pytest.param(
            ["-m", "gemma-3-27b", "--context", "32k", "--kv-memory", "20GiB", "--kv-dtype", "fp8"],
            dict(contexts=[32000], kv_memory=20 * GiB, kv_dtype=KvDtypeName.FP8),
            id="kv-memory-fp8",
        ),
        pytest.param(
            ["-m", "qwen3-32b", "--gpu-memory", "80GiB", "--kv-dtype", "int4", "--kv-group-size",
             "32", "--batch", "16", "--reserve", "0", "--bandwidth", "2TB/s"],
            dict(gpu_memory=80 * GiB, kv_dtype="int4", kv_group_size=32, batch=16, reserve=0,
                 bandwidth=2 * 10**12),
            id="custom-gpu",
        ),
    ],
)
def test_estimate_json_is_the_result(args: list[str], kwargs: dict[str, Any]) -> None:
    model = args[1]
    request = tokcost.KvRequest.of(model=model, **kwargs)
    assert cli_json("estimate", *args) == same(tokcost.estimate_memory(request))


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        pytest.param(["--requests", "40"], dict(requests=40), id="default"),
        pytest.param(
            ["-m", "llama-3.1-8b", "--kv-memory", "1GiB", "--kv-dtype", "fp8", "--max-len", "4096",
             "--requests", "30", "--rate", "0.1", "--seed", "3"],
            dict(model="llama-3.1-8b", kv_memory=GiB, kv_dtype="fp8", max_len=4096, requests=30,
                 rate=0.1, seed=3),
            id="model-rate",
        ),
        pytest.param(
            ["--slots", "3000", "--dist", "alpaca", "--requests", "60", "--n", "3", "--policy",
             "paged,oracle", "--block-size", "8"],
            dict(slots=3000, distribution="alpaca", requests=60, samples=3,
                 policies=[PolicyName.PAGED, "oracle"], block_size=8),
            id="slots-samples",
        ),
    ],
)
def test_simulate_json_is_the_result(args: list[str], kwargs: dict[str, Any]) -> None:
    request = tokcost.SimulationRequest.of(**kwargs)
    assert cli_json("simulate", *args) == same(tokcost.simulate(request))


def test_simulate_trace_json_is_the_result(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text("".join(
        json.dumps({"prompt_tokens": 10 + i, "output_tokens": 5 + i}) + "\n" for i in range(20)
    ))
    args = ["--trace", str(trace), "--slots", "800", "--max-len", "256", "--n", "2"]
    result = tokcost.simulate(tokcost.SimulationRequest.of(trace=trace, slots=800, max_len=256,
                                                           samples=2))
    assert cli_json("simulate", *args) == same(result)
    assert result.workload == str(trace) and result.requests == 20


# --- a catalog of the user's own --------------------------------------------------------------


def test_estimate_a_model_from_the_users_catalog(mine: Path) -> None:
    data = cli_json("estimate", "-m", "my-model", "--catalog", str(mine), "--kv-memory", "1GiB")
    assert data["model"] == "my-model" and data["context_window"] == 4096
    assert data["bytes_per_token"] == 2 * 2 * 64 * 2 * 4  # K and V x kv heads x dim x 2 B x layers
    request = tokcost.KvRequest.of(model="my-model", catalog=mine, kv_memory=GiB)
    assert data == same(tokcost.estimate_memory(request))
    missing = CliRunner().invoke(app, ["kvmem", "estimate", "-m", "my-model"])
    assert missing.exit_code == 2 and "unknown model 'my-model'" in missing.stderr


def test_simulate_a_model_from_the_users_catalog(mine: Path) -> None:
    data = cli_json("simulate", "-m", "my-model", "--catalog", str(mine), "--kv-memory", "10MiB",
                    "--requests", "20", "--policy", "paged")
    assert data["model"] == "my-model" and data["max_len"] == 4096
    assert data["capacity_tokens"] == 10 * 2**20 // 2048  # 2,048 B per token in fp16
    kwargs = dict(model="my-model", catalog=mine, kv_memory=10 * 2**20, requests=20,
                  policies=["paged"])
    assert data == same(tokcost.simulate(tokcost.SimulationRequest.of(**kwargs)))


# --- usage errors: the library's words, the CLI's flags ------------------------------------------


@pytest.mark.parametrize(
    ("call", "param", "api_words", "args", "cli_words"),
    [
        pytest.param(
            lambda: tokcost.estimate_memory(tokcost.KvRequest.of(model="llama-3.1-8b", kv_memory=GiB, gpu_util=0.8)),
            "kv_memory", "kv_memory replaces the estimate",
            ["estimate", "-m", "llama-3.1-8b", "--kv-memory", "1GiB", "--gpu-util", "0.8"],
            "--kv-memory replaces the estimate from GPU memory, utilization and reserve",
            id="kv-memory-alone",
        ),
        pytest.param(
            lambda: tokcost.estimate_memory(tokcost.KvRequest.of(model="llama-3.1-8b", gpu="H100", gpu_memory=80 * GiB)),
            "gpu", "not both",
            ["estimate", "-m", "llama-3.1-8b", "--gpu", "H100", "--gpu-memory", "80GiB"],
            "--gpu already sets the GPU memory; give a GPU or its memory, not both",
            id="gpu-twice",
        ),
        pytest.param(
            lambda: tokcost.estimate_memory(tokcost.KvRequest.of(model="llama-3.1-70b", tp=3)),
            "tp", "tp=3 must divide", ["estimate", "-m", "llama-3.1-70b", "--tp", "3"],
            "--tp 3 must divide the model's 8 kv heads", id="tp",
        ),
        pytest.param(
            lambda: tokcost.estimate_memory(tokcost.KvRequest.of(model="llama-3.1-8b", contexts=[0])),
            "contexts", "contexts must be positive", ["estimate", "-m", "llama-3.1-8b", "--context", "0"],
            "--context must be positive", id="context",
        ),
        pytest.param(
            lambda: tokcost.estimate_memory(tokcost.KvRequest.of(model="llama-3.1-8b", kv_dtype="int8", kv_group_size=0)),
            "kv_group_size", "kv_group_size must be positive",
            ["estimate", "-m", "llama-3.1-8b", "--kv-dtype", "int8", "--kv-group-size", "0"],
            "--kv-group-size must be positive", id="group",
        ),
        pytest.param(
            lambda: tokcost.simulate(tokcost.SimulationRequest.of(policies=["max", "lru"])),
            "policies", "unknown policies 'lru'", ["simulate", "--policy", "max,lru"],
            "unknown --policy 'lru'; use some of: max,pow2,oracle,paged", id="policy",
        ),
        pytest.param(
            lambda: tokcost.simulate(tokcost.SimulationRequest.of(samples=0)), "samples", "samples must be >= 1",
            ["simulate", "--n", "0"], "--n must be >= 1, got 0", id="samples",
        ),
        pytest.param(
            lambda: tokcost.simulate(tokcost.SimulationRequest.of(slots=0)), "slots", "slots must be >= 1",
            ["simulate", "--slots", "0"], "--slots must be >= 1, got 0", id="slots",
        ),
        pytest.param(
            lambda: tokcost.simulate(tokcost.SimulationRequest.of(model="gpt-4o")), "slots", "give the memory as slots=N",
            ["simulate", "-m", "gpt-4o"], "give the memory as --slots N", id="no-architecture",
        ),
        pytest.param(
            lambda: tokcost.simulate(tokcost.SimulationRequest.of(slots=100, requests=5)), "max_len", "needs 2,048 KV slots",
            ["simulate", "--slots", "100", "--requests", "5"],
            "cap what 'max' reserves with --max-len", id="too-small",
        ),
        pytest.param(
            lambda: tokcost.simulate(tokcost.SimulationRequest.of(block_size=0, requests=5)), "block_size",
            "block_size must be >= 1", ["simulate", "--block-size", "0", "--requests", "5"],
            "--block-size must be >= 1", id="block-size",
        ),
    ],
)
def test_usage_errors_name_the_parameter(
    call: Any, param: str, api_words: str, args: list[str], cli_words: str
) -> None:
    with pytest.raises(UsageError) as caught:
        call()
    assert caught.value.param == param
    assert api_words in str(caught.value) and "--" not in str(caught.value)
    result = CliRunner().invoke(app, ["kvmem", *args])
    assert result.exit_code == 2
    assert cli_words in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_kv_dtype_choices_are_an_enum() -> None:
    fp8 = tokcost.estimate_memory(tokcost.KvRequest.of(model="llama-3.1-8b",
                                                       kv_dtype=KvDtypeName.FP8))
    upper = tokcost.KvRequest.of(model="llama-3.1-8b", kv_dtype="FP8")
    assert fp8.to_dict() == tokcost.estimate_memory(upper).to_dict()
    assert fp8.kv_dtype == "fp8"
    upper = cli_json("estimate", "-m", "llama-3.1-8b", "--kv-dtype", "FP8")
    assert upper == same(fp8)
    bad = CliRunner().invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--kv-dtype", "fp9"])
    assert bad.exit_code == 2 and "fp8_e4m3" in bad.output  # typer lists the choices


# --- plots through the library ----------------------------------------------------------------


@pytest.mark.usefixtures("mpl_config")
def test_estimate_writes_its_plot(tmp_path: Path) -> None:
    target = tmp_path / "mem.svg"
    result = tokcost.estimate_memory(tokcost.KvRequest.of(
        model="gemma-3-27b", contexts=[1000, 32000], gpu="H100", plot=target))
    assert result.plot == target and result.to_dict()["plot"] == str(target)
    assert target.read_text(encoding="utf-8").lstrip().startswith("<?xml")
    with pytest.raises(UsageError, match="exists"):
        tokcost.estimate_memory(tokcost.KvRequest.of(model="gemma-3-27b", plot=target))
    tokcost.estimate_memory(tokcost.KvRequest.of(model="gemma-3-27b", plot=target, force=True))


@pytest.mark.usefixtures("mpl_config")
def test_simulate_writes_its_plot(tmp_path: Path) -> None:
    target = tmp_path / "waste.png"
    tokcost.simulate(tokcost.SimulationRequest.of(requests=20, plot=target))
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir() if p.is_file()] == ["waste.png"]


def test_plot_path_is_checked_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist; create it first"):
        tokcost.simulate(tokcost.SimulationRequest.of(  # returns at once
            requests=10**6, plot=tmp_path / "no" / "such.png"))
