"""The GPU table: memory as nvidia-smi / rocm-smi report it, architectures, the new parts,
and names: exact aliases resolve, an ambiguous prefix lists the candidates."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tokcost.catalog import load_catalog
from tokcost.catalog.schema import GPU_ARCHITECTURES
from tokcost.cli.app import app
from tokcost.errors import GpuNotFound

runner = CliRunner()
MiB = 2**20


@pytest.fixture(autouse=True)
def _shipped_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOKCOST_CATALOG", raising=False)


@pytest.mark.parametrize(
    ("name", "memory"),
    [
        # `nvidia-smi --query-gpu=memory.total` (MiB), rocm-smi "VRAM Total Memory (B)"
        pytest.param("H100-SXM", 81_559 * MiB, id="h100-sxm"),
        pytest.param("H100-PCIe", 81_559 * MiB, id="h100-pcie"),
        pytest.param("H100-NVL", 95_830 * MiB, id="h100-nvl"),
        pytest.param("H200", 143_771 * MiB, id="h200"),
        pytest.param("B200", 183_359 * MiB, id="b200"),
        pytest.param("A100-40GB", 40_960 * MiB, id="a100-40gb"),
        pytest.param("A100-80GB", 81_920 * MiB, id="a100-80gb"),
        pytest.param("A100-80GB-PCIe", 81_920 * MiB, id="a100-80gb-pcie"),
        pytest.param("L4", 23_034 * MiB, id="l4"),
        pytest.param("L40S", 46_068 * MiB, id="l40s"),
        pytest.param("RTX-3090", 24_576 * MiB, id="rtx-3090"),
        pytest.param("RTX-4090", 24_564 * MiB, id="rtx-4090"),
        pytest.param("RTX-5090", 32_607 * MiB, id="rtx-5090"),
        pytest.param("MI300X", 206_141_652_992, id="mi300x"),
        pytest.param("MI325X", 262_128 * MiB, id="mi325x"),
    ],
)
def test_memory_as_the_tools_report_it(name: str, memory: int) -> None:
    assert load_catalog().resolve_gpu(name).memory_bytes == memory


def test_every_gpu_is_complete() -> None:
    """Architecture, bandwidth and a source naming where the memory figure comes from;
    every datacenter part states its dense bf16 peak (and fp8 where it has one)."""
    gpus = load_catalog().gpus
    assert len(gpus) >= 15
    for g in gpus:
        assert g.architecture in GPU_ARCHITECTURES, g.name
        assert g.bandwidth_bytes_per_s > 0
        assert g.source and g.source.startswith("memory: "), g.name
        if not g.name.startswith("RTX"):
            assert g.bf16_flops, g.name
        if g.architecture in ("hopper", "blackwell", "ada", "cdna3") and g.bf16_flops:
            assert g.fp8_flops == pytest.approx(2 * g.bf16_flops, rel=0.02), g.name


@pytest.mark.parametrize(
    ("name", "architecture", "bandwidth", "bf16"),
    [
        pytest.param("H100-PCIe", "hopper", 2_000e9, 756e12, id="h100-pcie"),
        pytest.param("H100-NVL", "hopper", 3_900e9, 835.5e12, id="h100-nvl"),
        pytest.param("A100-80GB-PCIe", "ampere", 1_935e9, 312e12, id="a100-pcie"),
        pytest.param("MI300X", "cdna3", 5_300e9, 1307.4e12, id="mi300x"),
        pytest.param("MI325X", "cdna3", 6_000e9, 1307.4e12, id="mi325x"),
    ],
)
def test_new_gpus(name: str, architecture: str, bandwidth: float, bf16: float) -> None:
    g = load_catalog().resolve_gpu(name)
    assert g.architecture == architecture
    assert g.bandwidth_bytes_per_s == bandwidth
    assert g.bf16_flops == pytest.approx(bf16)


def test_every_earlier_gpu_is_kept() -> None:
    """The names of the table before the nvidia-smi figures still resolve (H100-80GB is
    now the alias of H100-SXM)."""
    cat = load_catalog()
    for name in ("A100-40GB", "A100-80GB", "H100-80GB", "H200", "B200", "L4", "L40S",
                 "RTX-3090", "RTX-4090", "RTX-5090", "h100-sxm5-80gb", "a100-sxm4-80gb",
                 "h200-141gb", "b200-180gb", "rtx4090"):
        cat.resolve_gpu(name)
    assert cat.resolve_gpu("H100-80GB").name == "H100-SXM"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("h100", "H100-SXM", id="h100-is-the-sxm"),
        pytest.param("H100 PCIe", "H100-PCIe", id="spaces"),
        pytest.param("h100_nvl", "H100-NVL", id="underscore"),
        pytest.param("a100-80gb", "A100-80GB", id="a100-80gb-not-pcie"),
        pytest.param("L4", "L4", id="exact-beats-prefix-of-l40s"),
        pytest.param("mi300x", "MI300X", id="mi300x"),
        pytest.param("instinct-mi325x", "MI325X", id="mi325x-alias"),
    ],
)
def test_exact_names_and_aliases(name: str, expected: str) -> None:
    assert load_catalog().resolve_gpu(name).name == expected


def test_every_name_and_alias_resolves_to_itself() -> None:
    cat = load_catalog()
    for g in cat.gpus:
        for name in (g.name, *g.aliases):
            assert cat.resolve_gpu(name) is g


@pytest.mark.parametrize(
    ("name", "candidates"),
    [
        pytest.param("a100", ["A100-40GB", "A100-80GB", "A100-80GB-PCIe"], id="a100"),
        pytest.param("A100 80", ["A100-80GB", "A100-80GB-PCIe"], id="a100-80"),
        pytest.param("mi3", ["MI300X", "MI325X"], id="mi3"),
        pytest.param("rtx", ["RTX-3090", "RTX-4090", "RTX-5090"], id="rtx"),
    ],
)
def test_ambiguous_name_lists_the_candidates(name: str, candidates: list[str]) -> None:
    with pytest.raises(GpuNotFound) as info:
        load_catalog().resolve_gpu(name)
    message = str(info.value)
    assert "ambiguous" in message and info.value.param == "gpu"
    assert message.count(", ") >= len(candidates) - 1
    for candidate in candidates:
        assert candidate in message
    assert [g.name for g in load_catalog().gpu_candidates(name)] == candidates


def test_a_unique_prefix_is_a_hint_not_a_pick() -> None:
    """``l40`` begins only L40S, but an L40 is another GPU: say it, do not pick it."""
    with pytest.raises(GpuNotFound, match=r"unknown GPU 'l40' \(did you mean: L40S\?\)"):
        load_catalog().resolve_gpu("l40")


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        pytest.param(["--gpu", "a100"], 2,
                     "GPU 'a100' is ambiguous: it matches A100-40GB, A100-80GB, A100-80GB-PCIe",
                     id="a100"),
        pytest.param(["--gpu", "a100"], 2, "e.g. --gpu A100-40GB", id="a100-flag-words"),
        pytest.param(["--gpu", "mi3"], 2, "MI300X, MI325X", id="mi3"),
        pytest.param(["--gpu", "l40"], 2, "did you mean: L40S?", id="l40"),
    ],
)
def test_gpu_errors_on_the_command_line(args: list[str], code: int, fragment: str) -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", *args])
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    assert fragment in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_ambiguous_gpu_as_a_json_error() -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--gpu", "a100",
                                 "--json"])
    assert result.exit_code == 2
    doc = json.loads(result.stdout)
    assert "A100-80GB-PCIe" in json.dumps(doc)


def test_models_list_shows_the_architecture() -> None:
    result = runner.invoke(app, ["models", "list", "--gpus"])
    assert result.exit_code == 0, result.output
    header = result.output.splitlines()[0]  # the one table style: no blank line above
    assert "architecture" in header
    row = next(line for line in result.output.splitlines() if line.strip().startswith("MI325X"))
    assert "cdna3" in row
    listed = json.loads(runner.invoke(app, ["models", "list", "--gpus", "--json"]).stdout)
    assert {g["name"]: g["architecture"] for g in listed["gpus"]}["H100-NVL"] == "hopper"


def test_the_estimate_says_the_framework_sees_less() -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--gpu", "H200"])
    assert result.exit_code == 0, result.output
    assert "total nvidia-smi/rocm-smi reports; the framework sees a little less" in result.output
