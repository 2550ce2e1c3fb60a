"""The requests of ``kvmem estimate`` and ``kvmem simulate``, and the engine registry.

A request reads what users pass (counts and sizes as text), checks itself on construction
with errors that name the field (the CLI's flag of the same name), and hands each engine
option to the chosen profile, which refuses another engine's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest
from typer.testing import CliRunner

import tokcost
from tokcost.cli.app import app
from tokcost.errors import Note, UsageError
from tokcost.memory import engines
from tokcost.memory.engines.base import Release
from tokcost.memory.engines.ideal import Ideal

KvRequest, SimulationRequest = tokcost.KvRequest, tokcost.SimulationRequest
GiB = 2**30


def test_text_is_read_as_the_cli_reads_it() -> None:
    r = KvRequest.of(model="llama-3.1-8b", contexts="1k,8Ki", batch="12k", gpu_memory="80GiB",
                     reserve="0", bandwidth="2TB/s", flops="989T", input_tokens="1k",
                     block_size="32", max_num_batched_tokens="4k")
    assert r.contexts == (1000, 8192) and r.batch == 12_000
    assert (r.budget.gpu_memory, r.budget.reserve) == (80 * GiB, 0)
    assert (r.roofline.bandwidth, r.roofline.flops) == (2 * 10**12, 989e12)
    assert (r.roofline.input_tokens, r.cache.block_size) == (1000, 32)
    assert r.engine_spec.profile.name == "vllm"
    assert r.engine_spec.profile.defaults() == {"max_num_batched_tokens": None,
                                                "hybrid_manager": True,
                                                "enable_prefix_caching": None,
                                                "num_speculative_tokens": 0,
                                                "draft_layers": None,
                                                "chunked_hybrid": None,
                                                "release": Release(0, 34),
                                                "kv_cache_dtype_skip_layers": None}
    assert r.engine_spec.options["max_num_batched_tokens"] == "4k"
    assert r.engine_spec.profile.max_num_batched_tokens == 4000  # type: ignore[attr-defined]
    s = SimulationRequest.of(policies="paged, max", requests="2k", kv_memory="1GiB",
                             max_len="8Ki", slots="64k")
    assert [str(p) for p in s.policies] == ["paged", "max"]
    assert (s.workload.requests, s.workload.max_len) == (2000, 8192)
    assert (s.memory.kv_memory, s.memory.slots) == (GiB, 64_000)


@pytest.mark.parametrize(
    ("fields", "param", "words", "args", "flag_words"),
    [
        pytest.param(dict(batch="many"), "batch", "batch 'many' is not a count",
                     ["--batch", "many"], "--batch 'many' is not a count", id="count"),
        pytest.param(dict(batch=0), "batch", "batch must be a positive integer",
                     ["--batch", "0"], "--batch must be a positive integer", id="batch-0"),
        pytest.param(dict(gpu_memory="80G"), "gpu_memory", "gpu_memory '80G' is ambiguous",
                     ["--gpu-memory", "80G"], "--gpu-memory '80G' is ambiguous", id="size"),
        pytest.param(dict(tp=4096), "tp", "tp=4,096 is beyond 1,024 GPUs",
                     ["--tp", "4096"], "--tp 4,096 is beyond 1,024 GPUs", id="tp"),
        pytest.param(dict(efficiency=0.7), "efficiency", "efficiency applies to the decode",
                     ["--efficiency", "0.7"], "--efficiency applies to the decode",
                     id="roofline-without-gpu"),
        pytest.param(dict(engine="sglang", max_num_batched_tokens="2k"),
                     "max_num_batched_tokens",
                     "max_num_batched_tokens is vLLM's setting; use it with engine=vllm",
                     ["--engine", "sglang", "--max-num-batched-tokens", "2k"],
                     "--max-num-batched-tokens is vLLM's setting; use it with --engine vllm",
                     id="foreign-option"),
        pytest.param(dict(engine="sglang", mem_fraction_static=0.8), "mem_fraction_static",
                     "mem_fraction_static applies to a GPU's memory; give gpu or gpu_memory",
                     ["--engine", "sglang", "--mem-fraction-static", "0.8"],
                     "--mem-fraction-static applies to a GPU's memory; give --gpu or "
                     "--gpu-memory", id="engine-knob-without-gpu"),
        pytest.param(dict(contexts="1k,,2k"), "contexts", "contexts='1k,,2k' has an empty item",
                     ["--context", "1k,,2k"], "--context '1k,,2k' has an empty item",
                     id="contexts"),
    ],
)
def test_a_bad_field_is_one_line_naming_it(fields: dict[str, object], param: str, words: str,
                                           args: list[str], flag_words: str) -> None:
    with pytest.raises(UsageError) as caught:
        KvRequest.of(model="llama-3.1-8b", **fields)
    assert caught.value.param == param and words in str(caught.value)
    result = CliRunner().invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", *args])
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert flag_words in result.stderr


def test_another_engines_option_at_its_default_is_not_refused() -> None:
    assert KvRequest.of(engine="sglang", hybrid_manager=True).engine_spec.profile.name == "sglang"
    with pytest.raises(TypeError, match=r"no engine has an option 'nope' \(nor the request"):
        KvRequest.of(nope=1)


def test_the_registry_names_its_engines_once() -> None:
    assert engines.engine_names() == ("vllm", "sglang", "llama.cpp", "trtllm", "ideal")
    with pytest.raises(UsageError, match=r"unknown engine 'vlm' \(did you mean: vllm\?\)"):
        engines.engine_class("vlm")


def test_a_duplicate_engine_name_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engines, "_PROFILES", (*engines._PROFILES, engines._PROFILES[0]))
    with pytest.raises(ValueError, match="engine 'vllm' is registered twice"):
        engines._registry()


@dataclass(frozen=True, kw_only=True)
class Toy(Ideal):
    """An engine of one file: the ideal bytes, with its own option."""

    name: ClassVar[str] = "toy"
    title: ClassVar[str] = "Toy"
    spare: int = 0


def test_an_engine_is_one_class_and_one_registry_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(engines._REGISTRY, "toy", f"{__name__}:Toy")
    toy = tokcost.estimate_memory(KvRequest.of(model="llama-3.1-8b", engine="toy", spare=3,
                                               kv_memory="10GiB", contexts=[8192]))
    ideal = tokcost.estimate_memory(KvRequest.of(model="llama-3.1-8b", engine="ideal",
                                                 kv_memory="10GiB", contexts=[8192]))
    assert toy.rows == ideal.rows and toy.fit == ideal.fit
    with pytest.raises(UsageError, match="spare is Toy's setting; use it with engine=toy"):
        KvRequest.of(spare=3)


def test_a_note_is_api_words_and_renders_flags() -> None:
    note = Note("set {reserve=SIZE}, or {kv_memory}")
    assert note == "set reserve=SIZE, or kv_memory" and "reserve=SIZE" in note
    flags = note.render(lambda name, value: f"--{name.replace('_', '-')}"
                        + (f" {value}" if value else ""))
    assert flags == "set --reserve SIZE, or --kv-memory"
