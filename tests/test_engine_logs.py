"""Published vLLM / SGLang / llama.cpp / TensorRT-LLM start-up logs as cases (tests/fixtures/engine_logs.yaml).

Each entry is a real log quoted in an issue or PR: the "Available KV cache memory" (printed to
2 decimals, so +-0.005 GiB) in, the logged tokens, concurrency or refusal out. Every entry
needs a check below; a new one fails until it gets one. Where a model is not in the catalog
its shape is written here from its config.json (the numbers PRICE's ``check`` field uses).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tokcost.catalog import load_catalog
from tokcost.catalog.hf_config import architecture_from_config
from tokcost.catalog.schema import Architecture, Attention
from tokcost.errors import UsageError
from tokcost.memory.engines.base import Deployment, Release
from tokcost.memory.engines.llamacpp import LlamaCpp, LlamaCppPlan
from tokcost.memory.engines.sglang import Sglang, plan_sglang
from tokcost.memory.engines.trtllm import TrtLlm, TrtLlmPlan
from tokcost.memory.engines.vllm import Vllm, VllmPlan, plan_vllm
from tokcost.memory.kv import kv_layout

GiB = 2**30
FIXTURE = Path(__file__).parent / "fixtures" / "engine_logs.yaml"
ENTRIES: list[dict[str, Any]] = yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))
CATALOG = load_catalog()


def arch(model: str) -> Architecture:
    a = CATALOG.resolve(model).architecture
    assert a is not None
    return a


# Qwen3-235B-A22B: 94 layers, 64 query / 4 kv heads of 128 (config.json).
QWEN3_235B = Architecture(layers=94, attention_heads=64, kv_heads=4, head_dim=128)
# Qwen3-Coder-480B-A35B: 62 layers, 96 query / 8 kv heads of 128 (config.json).
QWEN3_CODER_480B = Architecture(layers=62, attention_heads=96, kv_heads=8, head_dim=128)
# Kimi-K2-Thinking (DeepseekV3ForCausalLM): 61 layers, 64 heads, kv_lora_rank 512,
# qk_rope_head_dim 64 (huggingface.co/moonshotai/Kimi-K2-Thinking, config.json).
KIMI_K2 = Architecture(layers=61, attention_heads=64, kv_heads=64,
                       attention=Attention("mla", kv_lora_rank=512, qk_rope_head_dim=64))


def plans(a: Architecture, gib: float, *, dtype: str = "bf16", tp: int = 1,
          mnbt: int | None = None, dcp: int = 1,
          release: str | None = None) -> tuple[VllmPlan, VllmPlan]:
    """vLLM's plan at the two ends of a 2-decimal GiB figure, under the rules of the ``release``
    the log came from (the entry's ``release``; None: the newest tokcost models)."""
    layout = kv_layout(a, dtype, tp=tp)
    lo = math.floor((gib - 0.005) * GiB)
    hi = math.ceil((gib + 0.005) * GiB)
    kw: dict[str, Any] = {"max_num_batched_tokens": mnbt, "dcp": dcp}
    if release is not None:
        kw["release"] = Vllm.release_of(release)
    return plan_vllm(layout, available=lo, **kw), plan_vllm(layout, available=hi, **kw)


def tokens(plan: VllmPlan, max_model_len: int) -> int:
    logged = plan.logged_tokens(max_model_len)
    assert logged is not None
    return logged[0]  # these versions log num_blocks // groups x block


def check_tokens_and_concurrency(e: dict[str, Any], a: Architecture, **kw: Any) -> None:
    lo, hi = plans(a, e["kv_memory_gib"], **kw)
    length = e["max_model_len"]
    if "logged_tokens" in e:
        assert tokens(lo, length) <= e["logged_tokens"] <= tokens(hi, length)
    if "logged_blocks" in e:
        assert lo.num_blocks is not None and hi.num_blocks is not None
        assert lo.num_blocks <= e["logged_blocks"] <= hi.num_blocks
    if "logged_concurrency" in e:
        c_lo, c_hi = lo.max_concurrency(length), hi.max_concurrency(length)
        assert c_lo is not None and c_hi is not None
        assert c_lo - 0.005 <= e["logged_concurrency"] <= c_hi + 0.005
    assert lo.report(length).refuses_to_start is bool(e.get("refuses_to_start"))


def check_refusal(gib: float, length: int, a: Architecture, needed: str,
                  estimated: int, **kw: Any) -> None:
    """vLLM's start-up error: the needed GiB as printed, the estimated length in range."""
    lo, hi = plans(a, gib, **kw)
    for plan in (lo, hi):
        refusal = plan.report(length).refusal
        assert refusal is not None and f"({needed} GiB KV cache is needed" in refusal
    assert lo.largest_context(1, length) <= estimated <= hi.largest_context(1, length)  # type: ignore[operator]


def qwen3_14b(e: dict[str, Any]) -> None:
    """163,840 B/token; 6.51 GiB // (16 x 163,840) = 2,666 blocks = 42,656 tokens, 1.30x."""
    check_tokens_and_concurrency(e, arch("qwen3-14b"))


def qwen3_235b_vllm(e: dict[str, Any]) -> None:
    """Disagrees by 1.1%, explained: rank 0 logged 8.11 GiB, but vLLM sizes every rank's pool
    by the smallest rank's memory (get_kv_cache_configs), which the excerpt does not show.
    So the logged 178,880 tokens can only be at most what 8.11 GiB gives (180,928)."""
    layout = kv_layout(QWEN3_235B, "bf16", tp=e["tp"])
    rank0 = plan_vllm(layout, available=int(e["kv_memory_gib"] * GiB))
    assert tokens(rank0, 40960) == 180_928
    assert e["logged_tokens"] < tokens(rank0, 40960)
    # 178,880 tokens are 11,180 blocks of 94 x 8,192 B: the smallest rank had 8.02 GiB.
    assert f"{e['logged_tokens'] // 16 * 94 * 8192 / GiB:.2f}" == "8.02"


def qwen3_235b_sglang(e: dict[str, Any]) -> None:
    """SGLang's line from the token count: K = (367,404 + 1) x 94 x 1 x 128 x 2 B = 8.23 GiB.
    The line has no dtype, which memory_pool.py prints from v0.5.13; the issue is of 2025-07-22,
    when PyPI's newest SGLang was v0.4.9.post2: read by v0.4.9's rules."""
    layout = kv_layout(QWEN3_235B, "bf16", tp=e["tp"])
    cell = 94 * layout.token_bytes["full"]
    report = plan_sglang(layout, available=e["logged_tokens"] * cell,
                         release=e["release"]).report(40960)
    assert report.lines[0] == (f"KV Cache is allocated. #tokens: {e['logged_tokens']}, "
                               f"K size: {e['logged_k_size_gb']:.2f} GB, "
                               f"V size: {e['logged_v_size_gb']:.2f} GB")


def mimo_v2_sglang(e: dict[str, Any]) -> None:
    """MiMo-V2-Flash's two pools from their token counts, equal in the log (swa size = full size,
    so a ratio of 1): V's buffers at v_head_dim 128, K's at 192, so K and V sizes differ."""
    layout = kv_layout(arch("mimo-v2-flash"), "bf16", tp=e["tp"])
    assert layout.token_bytes == {"full": 640, "sliding": 1_280}
    n = e["logged_tokens"]
    cell = 9 * 640 + 39 * 1_280
    plan = Sglang(release=e["release"], swa_full_tokens_ratio=1.0).pools(
        Deployment(layout=layout, family="mimo-v2"), n * cell)
    report = plan.report(32_768)
    head = f"KV Cache is allocated. #tokens: {n}, "
    assert head + (f"K size: {e['logged_k_size_gb']:.2f} GB, "
                   f"V size: {e['logged_v_size_gb']:.2f} GB") in report.lines
    assert head + (f"K size: {e['logged_swa_k_size_gb']:.2f} GB, "
                   f"V size: {e['logged_swa_v_size_gb']:.2f} GB") in report.lines
    assert f"{(n + 1) * cell / GiB:.2f}" == f"{e['logged_pool_gb']:.2f}"


DSV32 = Path(__file__).parent / "fixtures" / "hf_configs_families" / "deepseek-v3.2-exp"


def dsv32_sglang(e: dict[str, Any]) -> None:
    """NSA pool (PR #11309 counts the indexer): 61 x (656 + 132) B per token, 64-token pages;
    the line from the token count: (975,424 + 64) x 61 x 788 B = 43.67 GB (GiB)."""
    config = json.loads((DSV32 / "config.json").read_text())
    layout = kv_layout(architecture_from_config(config, where="config.json"), "fp8_ds_mla")
    assert layout.token_bytes["mla"] == 656 + 132
    plan = Sglang(release=e["release"]).pools(
        Deployment(layout=layout), e["logged_tokens"] * 61 * 788 + 63 * 61 * 788)
    assert plan.block_size == e["page_size"]
    report = plan.report(163_840)
    assert report.cache_tokens == e["logged_tokens"]
    # as launched, --dp 8 --enable-dp-attention: 8 attention ranks of one GPU each; MLA's
    # latent is every GPU's whole, so each rank's pool is the same 975,424 tokens
    ranks = Sglang(release=e["release"], enable_dp_attention=True).pools(
        Deployment(layout=layout, attn_dp=e["dp"]), e["logged_tokens"] * 61 * 788 + 63 * 61 * 788)
    assert ranks.report(163_840).cache_tokens == e["logged_tokens"]
    assert report.lines[0] == (f"KV Cache is allocated. #tokens: {e['logged_tokens']}, "
                               f"KV size: {e['logged_kv_size_gb']:.2f} GB")
    # before the PR: the line left the indexer out (656 B), though the pool held it (788 B)
    assert f"{(1_462_784 + 64) * 61 * 656 / GiB:.2f}" == "54.52"
    assert f"{(1_462_784 + 64) * 61 * 788 / GiB:.2f}" == "65.49"
    with pytest.raises(UsageError, match="fp8_ds_mla"):  # SGLang's fp8 latent is 656 B, not 576
        Sglang(release=e["release"]).pools(Deployment(layout=kv_layout(layout_arch(config), "fp8")), None)


def layout_arch(config: dict[str, Any]) -> Architecture:
    return architecture_from_config(config, where="config.json")


def llama_v0(e: dict[str, Any]) -> None:
    """V0's figures equal v1's for full attention: 128 KiB/token, 2 MiB per block; V0's
    concurrency tokens / L and v1's blocks / cdiv(L, 16) round alike here."""
    check_tokens_and_concurrency(e, arch("llama-3.1-8b"))


def llama_70b_blocks(e: dict[str, Any]) -> None:
    """No memory logged: 1,381 blocks of 16 / 2,048 tokens = 10.79x (format case)."""
    layout = kv_layout(arch("llama-3.1-70b"))
    plan = plan_vllm(layout, available=e["logged_blocks"] * 16 * layout.bytes_per_token)
    assert (f"Maximum concurrency for 2,048 tokens per request: {e['logged_concurrency']:.2f}x"
            in plan.report(2048).lines)


def pr_13596(e: dict[str, Any]) -> None:
    """The PR that introduced the token line: 127,626 blocks -> '2,042,016 tokens', 997.08x."""
    layout = kv_layout(arch("llama-3.1-8b"))
    plan = plan_vllm(layout, available=127_626 * 16 * layout.bytes_per_token)
    lines = plan.report(2048).lines
    assert f"GPU KV cache size: {e['logged_tokens']:,} tokens" in lines
    assert f"Maximum concurrency for 2,048 tokens per request: {e['logged_concurrency']:.2f}x" in lines


def issue_25350(e: dict[str, Any]) -> None:
    """48 KiB/token in fp8 is Qwen3-30B-A3B's shape (48 layers x 4 kv heads x 128 x 2 x 1 B):
    10.55 GiB -> 14,408 blocks = 230,528 tokens, 2.31x at 100,000; the same setup at
    --max-model-len 221,000 with 5.59 GiB: 10.12 GiB needed, estimated 122,080 (notes)."""
    check_tokens_and_concurrency(e, arch("qwen3-30b-a3b"), dtype="fp8")
    check_refusal(5.59, 221_000, arch("qwen3-30b-a3b"), "10.12", 122_080, dtype="fp8")


def qwen3_coder(e: dict[str, Any]) -> None:
    """253,952 B/token (DP, no TP); 262,144 tokens need 62.00 GiB ("%.2f" in v0.10, as to v0.13)."""
    check_refusal(e["kv_memory_gib"], e["max_model_len"], QWEN3_CODER_480B,
                  f"{e['logged_needed_gib']:.2f}", e["logged_estimated_max_model_len"],
                  release=e["release"])  # a v0.10.1 log: "%.2f" GiB (format_gib from v0.14)


def ratio_only(e: dict[str, Any]) -> None:
    """No memory or layout in the excerpt: only tokens / max_model_len = the printed
    concurrency can be checked (uniform pools; the v0.21+ int(concurrency x L) form)."""
    assert abs(e["logged_tokens"] / e["max_model_len"] - e["logged_concurrency"]) <= 0.005


def vllm_unit_test(e: dict[str, Any]) -> None:
    """Covered number by number in tests/test_kvmem_engines.py; the (b) case again here:
    a sliding request needs cdiv(1,024 - 1 + 1,024, 16) + 1 = 129 blocks."""
    layout = kv_layout(dataclasses.replace(
        arch("mistral-7b-v0.1"),
        attention=dataclasses.replace(arch("mistral-7b-v0.1").attention, window=1024)))
    plan = plan_vllm(layout, available=GiB, max_num_batched_tokens=e["max_num_batched_tokens"])
    assert plan.blocks_per_request(e["max_model_len"]) == 129


def llama_eagle(e: dict[str, Any]) -> None:
    """EAGLE's draft layer shares the pool: 33 x 4,096 B = 135,168 B/token;
    51.63 GiB // (16 x 135,168) = 25,633 blocks = 410,128 tokens; 3.13x at 131,072."""
    check_tokens_and_concurrency(e, dataclasses.replace(arch("llama-3.1-8b"), layers=33))


def gpt_oss_small(e: dict[str, Any]) -> None:
    """1.71 GiB with 1,024 batched tokens: one 131,072-token request needs 18 slots x 32 KiB x
    (73 + 8,192) blocks = 4.54 GiB -> vLLM refuses to start."""
    lo, hi = plans(arch("gpt-oss-120b"), e["kv_memory_gib"], mnbt=e["max_num_batched_tokens"])
    for plan in (lo, hi):
        refusal = plan.report(131_072).refusal
        assert refusal is not None and "(4.54 GiB KV cache is needed" in refusal


def gpt_oss_negative(e: dict[str, Any]) -> None:
    """Negative available memory: check_enough_kv_cache_memory's first error."""
    layout = kv_layout(arch("gpt-oss-120b"))
    refusal = plan_vllm(layout, available=int(e["kv_memory_gib"] * GiB)).report(131_072).refusal
    assert refusal is not None and refusal.startswith("No available memory for the cache blocks")


# gemma-3-270m: 18 layers, 1 kv head of 256, sliding_window 512, five sliding then one full.
GEMMA3_270M = Architecture(layers=18, attention_heads=4, kv_heads=1, head_dim=256,
                           attention=Attention(type="sliding", window=512,
                                               pattern=("sliding",) * 5 + ("full",)))


def llama_cpp(a: Architecture, **options: Any) -> LlamaCppPlan:
    layout = kv_layout(a)
    head_dim = a.head_dim or 0
    plan, _ = LlamaCpp(**options).plan(Deployment(layout=layout, head_dim=head_dim))
    return plan


def llama_cpp_hybrid(e: dict[str, Any]) -> None:
    """Both lines from the shape, to the character: R = 4 slots x 36 layers x 24,576 conv
    values x 4 B = 13.50 MiB, S = 4 x 36 x 524,288 x 4 B = 288.00 MiB; "48 layers" is n_layer."""
    plan = llama_cpp(arch("qwen3-next-80b-a3b"))  # -np auto: 4 slots, unified
    assert (plan.slots, plan.unified) == (e["n_seq_max"], e["kv_unified"])
    assert plan.lines(e["n_ctx"]) == e["logged_lines"]


def llama_cpp_slots(e: dict[str, Any]) -> None:
    """-np 3 and 4 at -c 1024: cells padded per stream to 256, the SWA cache too."""
    for case in e["cases"]:
        plan = llama_cpp(GEMMA3_270M, parallel=case["parallel"], kv_unified=case["kv_unified"])
        _, _, caches = plan.layout(case["ctx"])
        assert caches[0].cells * caches[0].streams == case["cells"]
        assert plan.kv_bytes(case["ctx"]) == case["kv_mib"] * 2**20


def llama_cpp_types(e: dict[str, Any]) -> None:
    """Each K/V type pair's size from the f16 one: ggml's bytes per block of 32 values."""
    for table in e["tables"]:
        a = Architecture(layers=table["layers"], kv_heads=table["kv_heads"],
                         head_dim=table["head_dim"], attention_heads=32)
        cell_f16 = table["layers"] * 2 * table["kv_heads"] * table["head_dim"] * 2
        cells = int(table["kv_mib"]["f16/f16"] * 2**20) // cell_f16
        for pair, mib in table["kv_mib"].items():
            k, v = pair.split("/")
            plan = llama_cpp(a, parallel=1, cache_type_k=k, cache_type_v=v)
            assert f"{plan.kv_bytes(cells) / 2**20:.2f}" == f"{mib:.2f}", pair


FALCON_H1 = Path(__file__).parent / "fixtures" / "hf_configs_families" / "falcon-h1-7b"


def llama_cpp_falcon_h1(e: dict[str, Any]) -> None:
    """Falcon-H1-1.5B: the 7B's config.json with the 1.5B's 24 layers, 8 query / 2 kv heads
    (the Mamba dims are the family's). llama.cpp keeps a KV cache and a recurrent one over all
    24 layers (PR #14534): 1 KiB per cell and layer, 797,184 f32 state elements per layer."""
    config = json.loads((FALCON_H1 / "config.json").read_text())
    config.update(num_hidden_layers=24, num_attention_heads=8, hidden_size=2048)
    plan = llama_cpp(architecture_from_config(config, where="config.json"),
                     parallel=e["n_seq_max"])
    assert plan.kinds["all"] == 24 and plan.kinds["full"] == plan.kinds["linear"] == 24
    for case in e["cases"]:
        kv, state = plan.lines(case["ctx"])
        assert kv.startswith(f"llama_kv_cache: size = {case['kv_mib']:7.2f} MiB ({case['ctx']:6d} "
                             "cells,  24 layers,  1/1 seqs)")
        assert state == (f"llama_memory_recurrent: size = {case['recurrent_mib']:7.2f} MiB "
                         "(     1 cells,  24 layers,  1 seqs), R (f32):    0.98 MiB, "
                         "S (f32):   72.00 MiB")
    r_bytes, s_bytes = 3 * (3072 + 2 * 256) * 4 * 24, 3072 * 256 * 4 * 24  # conv R, ssm S
    assert f"R {r_bytes / 2**20:.2f} + S {s_bytes / 2**20:.2f}" in e["logged_lines"][1]
    assert plan.state_bytes * 24 == r_bytes + s_bytes


def trtllm_blocks(e: dict[str, Any]) -> None:
    """Blocks x tokens per block is the logged token count; pages per sequence the window's."""
    tpb = e["tokens_per_block"]
    plan = TrtLlmPlan(token_bytes=1, block_size=tpb, available=e["logged_blocks"] * tpb,
                      fit=None, layers={})
    assert plan.num_blocks == e["logged_blocks"]
    lines = plan.lines(e["max_seq_len"])
    assert lines[:2] == e["logged_lines"]
    assert lines[2].endswith(f"paged KV cache ({e['logged_tokens']}).")


def kimi_k2(e: dict[str, Any]) -> None:
    """MLA's latent is on every TP GPU: 61 x 576 x 2 B = 70,272 B/token, FlashMLA's 64-token
    blocks on Hopper (forced to v0.17; the log is a Nov 2025 nightly, run as v0.11: from v0.18
    a bf16 cache gets FlashAttention MLA's 16, PR #35122); with DCP 8 each GPU holds every 8th
    token, so the same blocks log 8 x the tokens."""
    dcp = e.get("dcp", 1)
    lo, hi = plans(KIMI_K2, e["kv_memory_gib"], tp=e["tp"], dcp=dcp, release=e["release"])
    assert lo.block_size == 64 and lo.page_bytes * lo.group_size == 64 * 70_272
    assert tokens(lo, 262_144) <= e["logged_tokens"] <= tokens(hi, 262_144)
    assert e["logged_tokens"] % (64 * dcp) == 0


QWEN36_35B = Path(__file__).parent / "fixtures" / "hf_configs_families" / "qwen3.6-35b-a3b"


def qwen36_35b(e: dict[str, Any]) -> None:
    """Gated DeltaNet hybrid read from its config.json: the SSM state in float32 sets a
    2,096-token block, prefix caching ("align") 2 state blocks per linear group; the token
    figure is int(concurrency x max_model_len), not a multiple of the block."""
    config = json.loads((QWEN36_35B / "config.json").read_text())
    a = architecture_from_config(config, where="config.json")
    layout = kv_layout(a, e["kv_cache_dtype"], tp=e["tp"])
    engine = Vllm(release=Vllm.release_of(e["release"]), max_num_batched_tokens=8192,
                  enable_prefix_caching=e["enable_prefix_caching"])
    ends = [engine.pool(Deployment(layout=layout, family="qwen3_5_moe_text"),
                        math.floor((e["kv_memory_gib"] + d) * GiB)) for d in (-0.005, 0.005)]
    length = e["max_model_len"]
    assert all(p.block_size == 2096 and p.blocks_per_request(length) == 69 for p in ends)
    assert ends[0].cache_tokens(length) <= e["logged_tokens"] <= ends[1].cache_tokens(length)  # type: ignore[operator]
    conc = [p.max_concurrency(length) for p in ends]
    assert conc[0] - 0.005 <= e["logged_concurrency"] <= conc[1] + 0.005  # type: ignore[operator]
    # Without prefix caching (one state block per linear group) the same blocks give 66 per
    # request: 299 / 66 = 4.53x at 5.98 GiB, the figure that is not in the log.
    plain = Vllm(release=engine.release, max_num_batched_tokens=8192).pool(
        Deployment(layout=layout, family="qwen3_5_moe_text"), ends[1].available)
    assert plain.blocks_per_request(length) == 66
    assert plain.num_blocks == ends[1].num_blocks


# Qwen3.5-27B: 64 layers (16 full: every 4th), 24 query / 4 kv heads of 256; Gated DeltaNet 16 key /
# 48 value heads of 128, conv 4, mamba_ssm_dtype float32 (its config.json, as club-3090's
# docs/KV_MATH.md and public copies of it quote it).
QWEN35_27B = Architecture(layers=64, attention_heads=24, kv_heads=4, head_dim=256, attention=Attention(
    "hybrid", ("linear", "linear", "linear", "full"),
    linear_state_elements=3 * (2 * 16 * 128 + 48 * 128) + 48 * 128 * 128,
    linear_fp32_elements=48 * 128 * 128))


def qwen35_27b(e: dict[str, Any]) -> None:
    """No memory line: the two logged figures pin 1,487 blocks of 784 tokens (the block a
    float32 SSM state gives); v0.19's token figure is num_blocks // groups x block."""
    layout = kv_layout(QWEN35_27B, "bf16")
    assert layout.state_bytes == 3_207_168
    probe = plan_vllm(layout, available=None, release=Vllm.release_of(e["release"]),
                      max_num_batched_tokens=e["max_num_batched_tokens"])
    assert probe.block_size == 784 and len(probe.groups) == 4
    plan = plan_vllm(layout, available=1487 * probe.block_bytes, release=probe.release,
                     max_num_batched_tokens=e["max_num_batched_tokens"])
    length = e["max_model_len"]
    assert plan.cache_tokens(length) == e["logged_tokens"]
    assert f"{plan.max_concurrency(length):.2f}" == f"{e['logged_concurrency']:.2f}"
    # a bf16 SSM state: 400-token blocks, and 290,864 is no multiple of 400
    bf16 = kv_layout(dataclasses.replace(QWEN35_27B, attention=dataclasses.replace(
        QWEN35_27B.attention, linear_fp32_elements=None)), "bf16")
    assert plan_vllm(bf16, available=None).block_size == 400 and e["logged_tokens"] % 400


def gemma4_31b(e: dict[str, Any]) -> None:
    """No memory line: v0.19's num_blocks // 6 groups x 16 (the smallest block; the global
    layers' is 32) = 37,392 pins 14,022-14,027 blocks; with 2,048 tokens per step a 262,144-token
    request needs 8,192 + 5 x 193 = 9,157 of them: 1.53x (8,192 per step: 1.27x)."""
    layout = kv_layout(arch("gemma-4-31b"), "bf16")
    release, length = Vllm.release_of(e["release"]), e["max_model_len"]
    probe = plan_vllm(layout, available=None, release=release, max_num_batched_tokens=2048)
    assert (len(probe.groups), probe.block_size) == (6, 16)
    blocks = [n for n in range(14_000, 14_050) if n // 6 * 16 == e["logged_tokens"]]
    assert blocks == list(range(14_022, 14_028))
    for n in blocks:
        plan = plan_vllm(layout, available=n * probe.block_bytes, release=release,
                         max_num_batched_tokens=2048)
        assert plan.num_blocks == n and plan.cache_tokens(length) == e["logged_tokens"]
        assert f"{plan.max_concurrency(length):.2f}" == f"{e['logged_concurrency']:.2f}"
    other = plan_vllm(layout, available=14_022 * probe.block_bytes, release=release,
                      max_num_batched_tokens=8192)
    assert f"{other.max_concurrency(length):.2f}" == "1.27"


def qwen38_27b(e: dict[str, Any]) -> None:
    """The 27B shape at TP2 in fp8 gives the author's 1,568-token block (a float32 SSM state);
    prefix caching's two state blocks per linear group give the logged tokens and 2.31x."""
    layout = kv_layout(QWEN35_27B, "fp8", tp=e["tp"])
    engine = Vllm(max_num_batched_tokens=8192, enable_prefix_caching=e["enable_prefix_caching"],
                  release=Release(0, 21))  # the log's block 1,568: 16-token steps
    ends = [engine.pool(Deployment(layout=layout, family="qwen3_5_text"),
                        math.floor((e["kv_memory_gib"] + d) * GiB)) for d in (-0.005, 0.005)]
    length = e["max_model_len"]
    assert all(p.block_size == 1568 and p.blocks_per_request(length) == 90 for p in ends)
    assert ends[0].cache_tokens(length) <= e["logged_tokens"] <= ends[1].cache_tokens(length)  # type: ignore[operator]
    conc = [p.max_concurrency(length) for p in ends]
    assert conc[0] - 0.005 <= e["logged_concurrency"] <= conc[1] + 0.005  # type: ignore[operator]


def qwen36_27b_mtp(e: dict[str, Any]) -> None:
    """MTP with 3 speculative tokens (vLLM v0.24 rules): 3 more conv rows in each GDN state, the
    MTP head's full-attention layer in the pool (17 slots) and 2 + 3 state blocks per linear
    group in "align" mode. Oracle, vLLM's arithmetic: state 6 x 5,120 x 2 + 24 x 128 x 128 x 4 =
    1,634,304 B, block 16 x cdiv(1,634,304, 16 x 1,024) = 1,600; 5.33 GiB // (1,600 x 1,024 x
    17) = 205 blocks; per request cdiv(262,144, 1,600) + 3 x 5 = 179; 205 / 179 = 1.15x,
    int(205 / 179 x 262,144) = 300,220 (the log's figures)."""
    gib, length, spec = e["kv_memory_gib"], e["max_model_len"], e["num_speculative_tokens"]
    arch = dataclasses.replace(QWEN35_27B, attention=dataclasses.replace(
        QWEN35_27B.attention, linear_conv_channels=2 * 16 * 128 + 48 * 128, mtp_layers=1))
    engine = Vllm(release=Vllm.release_of(e["release"]), enable_prefix_caching=True,
                  num_speculative_tokens=spec, max_num_batched_tokens=e["max_num_batched_tokens"])
    layout = engine.cache_layout(kv_layout(arch, e["kv_cache_dtype"], tp=e["tp"]),
                                 lambda: kv_layout(arch, "bf16", tp=e["tp"]))
    assert (layout.state_bytes, layout.draft_layers) == (1_634_304, 1)
    ends = [engine.pool(Deployment(layout=layout, family="qwen3_5_text"),
                        math.floor((gib + d) * GiB)) for d in (-0.005, 0.005)]
    assert all(p.block_size == 1600 and p.group_size == 17 and p.num_blocks == 205
               and p.blocks_per_request(length) == 179 for p in ends)
    assert all(p.cache_tokens(length) == e["logged_tokens"] for p in ends)
    conc = [p.max_concurrency(length) for p in ends]
    assert conc[0] - 0.005 <= e["logged_concurrency"] <= conc[1] + 0.005  # type: ignore[operator]
    # Without speculative decoding the same memory gives the other figures (not the log's).
    plain = Vllm(release=engine.release, enable_prefix_caching=True).pool(
        Deployment(layout=kv_layout(QWEN35_27B, "fp8", tp=e["tp"]), family="qwen3_5_text"),
        math.floor(gib * GiB))
    assert plain.block_size == 1568 and plain.group_size == 16
    assert plain.cache_tokens(length) != e["logged_tokens"]


LLAMA4_SCOUT = Path(__file__).parent / "fixtures" / "hf_configs_families" / "llama-4-scout"


def llama4_scout(e: dict[str, Any]) -> None:
    """v0.12 on 8x H200: 12 full + 36 chunked (8,192) layers, 512 B per token and layer per GPU in
    bf16. Without VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE=1 v0.12 turns the hybrid
    manager off (PR #21761; default 1 from v0.14, PR #29627): 48 full layers, 0.75x at 5,242,880,
    and still starts, as v0.12 checks the layers' own specs (chunks) before unifying (PR #29431
    moved the check onto the groups in v0.14). With it: 4 groups of 12, num_blocks // 4 x 16."""
    config = json.loads((LLAMA4_SCOUT / "config.json").read_text())
    layout = kv_layout(architecture_from_config(config, where="config.json"),
                       e.get("kv_cache_dtype", "bf16"), tp=e["tp"])
    engine = Vllm(release=Vllm.release_of(e["release"]), max_num_batched_tokens=8192,
                  chunked_hybrid=e.get("chunked_hybrid_env"))  # vllm serve on an H200: 8,192
    ends = [engine.pool(Deployment(layout=layout), math.floor((e["kv_memory_gib"] + d) * GiB))
            for d in (-0.005, 0.005)]
    length = e["max_model_len"]
    assert all(p.hybrid_manager is bool(e.get("chunked_hybrid_env")) for p in ends)
    assert all(len(p.groups) == (4 if p.hybrid_manager else 1) for p in ends)
    if "logged_tokens" in e:
        assert ends[0].cache_tokens(length) <= e["logged_tokens"] <= ends[1].cache_tokens(length)  # type: ignore[operator]
    conc = [p.max_concurrency(length) for p in ends]
    assert conc[0] - 0.005 <= e["logged_concurrency"] <= conc[1] + 0.005  # type: ignore[operator]
    assert all(p.report(length).refusal is None for p in ends)
    if not ends[0].hybrid_manager:  # from v0.14 the same pool refuses 5,242,880 (120 GiB needed)
        later = Vllm(release=Vllm.release_of("0.14"), max_num_batched_tokens=8192,
                     chunked_hybrid=False).pool(Deployment(layout=layout), ends[1].available)
        refusal = later.report(length).refusal
        assert refusal is not None and "(120.0 GiB KV cache is needed" in refusal


# MiniMax-M2 (M2.5, M2.7 alike): 62 layers, 48 query / 8 kv heads of 128 (config.json).
MINIMAX_M2 = Architecture(layers=62, attention_heads=48, kv_heads=8, head_dim=128)


def minimax_m27_refusal(e: dict[str, Any]) -> None:
    """TP 2: 126,976 B/token per GPU; 196,608 tokens need 23.25 GiB > 22.5; estimate 190,272."""
    check_refusal(e["kv_memory_gib"], e["max_model_len"], MINIMAX_M2,
                  str(e["logged_needed_gib"]), e["logged_estimated_max_model_len"],
                  tp=e["tp"], release=e["release"])
    plan = plan_vllm(kv_layout(MINIMAX_M2, "bf16", tp=e["tp"]), release=Vllm.release_of(
        e["release"]), available=int(e["kv_memory_gib"] * GiB))
    report = plan.report(e["max_model_len"])  # v0.29 prints format_gib's "22.5", not "22.50"
    assert report.lines[0] == "Available KV cache memory: 22.5 GiB"
    assert "the available KV cache memory (22.5 GiB)" in (report.refusal or "")


def minimax_m27_min_rank(e: dict[str, Any]) -> None:
    """Known mismatch, explained: rank 0's 28.74 GiB gives 1.24x; the logged 1.22x and 240,816
    tokens are 15,051 blocks, what the smaller rank's 28.48 GiB holds (vLLM takes the minimum)."""
    lo, _ = plans(MINIMAX_M2, e["kv_memory_gib"], tp=e["tp"], release=e["release"])
    length = e["max_model_len"]
    assert lo.cache_tokens(length) > e["logged_tokens"]  # type: ignore[operator]
    assert f"{lo.max_concurrency(length):.2f}" == "1.24"
    block = lo.block_bytes
    smaller = plan_vllm(kv_layout(MINIMAX_M2, "bf16", tp=e["tp"]), available=15_051 * block,
                        release=lo.release)
    assert smaller.cache_tokens(length) == e["logged_tokens"]
    assert f"{smaller.max_concurrency(length):.2f}" == f"{e['logged_concurrency']:.2f}"
    assert f"{15_051 * block / GiB:.2f}" == "28.48"


# TinyLlama-1.1B: 22 layers, 32 query / 4 kv heads of 64 (config.json).
TINYLLAMA = Architecture(layers=22, attention_heads=32, kv_heads=4, head_dim=64)
# Llama-2-7B (LLaVA-1.5-7B's language model, Qwen1.5-7B alike): 32 layers, 32 kv heads of 128.
MHA_7B = Architecture(layers=32, attention_heads=32, kv_heads=32, head_dim=128)


def trtllm_plans(e: dict[str, Any], a: Architecture, *, dtype: str = "bf16"
                 ) -> tuple[TrtLlmPlan, TrtLlmPlan]:
    """TensorRT-LLM's plan at the two ends of the 2-decimal GiB figure: ``kv_memory_gib`` after
    the fraction, or the C++ runtime's ``available_gib`` before it (weights already loaded)."""
    engine = TrtLlm(free_gpu_memory_fraction=e.get("free_gpu_memory_fraction"),
                    tokens_per_block=e["tokens_per_block"])
    layout = kv_layout(a, dtype, tp=e.get("tp", 1))
    ends = []
    for gib in (e.get("kv_memory_gib", e.get("available_gib")) + d for d in (-0.005, 0.005)):
        dep = (Deployment(layout=layout, kv_memory=round(gib * GiB)) if "kv_memory_gib" in e
               else Deployment(layout=layout, memory_bytes=round(gib * GiB), reserve=0))
        ends.append(engine.plan(dep)[0])
    return ends[0], ends[1]


def check_trtllm(e: dict[str, Any], a: Architecture, *, dtype: str = "bf16") -> None:
    """Logged blocks, tokens and allocated GiB within the rounding of the logged memory."""
    lo, hi = trtllm_plans(e, a, dtype=dtype)
    assert lo.num_blocks is not None and hi.num_blocks is not None
    tpb = e["tokens_per_block"]
    blocks = e.get("logged_blocks", e.get("logged_tokens", 0) // tpb)
    assert lo.num_blocks <= blocks <= hi.num_blocks
    if "logged_tokens" in e:
        assert e["logged_tokens"] == blocks * tpb
    if "logged_allocated_gib" in e:
        assert f"{blocks * tpb * lo.token_bytes / GiB:.2f}" == f"{e['logged_allocated_gib']:.2f}"
    if "logged_pages_per_sequence" in e and "max_seq_len" in e:
        assert lo.engine_blocks(e["max_seq_len"]) == e["logged_pages_per_sequence"]


def trtllm_gpt_oss(e: dict[str, Any]) -> None:
    """1.1.0rc3 on a DGX Spark: 'kv size is 73728' = 36 x 8 x 64 x 2 x 2 B (sliding layers as
    full); (119.70 - 113.65 + 0.56) x 0.9 = 5.949 GiB // 73,728 = 86,711 max tokens -> 2,710
    blocks of 32 = 86,720; the 131,072 window is cut to them."""
    lo, hi = trtllm_plans(e, arch("gpt-oss-120b"))
    assert lo.token_bytes == e["logged_kv_size"]
    assert abs((119.70 - 113.65 + 0.56) * 0.9 - e["kv_memory_gib"]) < 0.005
    assert lo.available is not None and hi.available is not None
    assert lo.available // 73_728 <= e["logged_max_tokens"] <= hi.available // 73_728
    check_trtllm(e, arch("gpt-oss-120b"))
    blocks = -(-e["logged_max_tokens"] // e["tokens_per_block"])  # ceil, as this release logs
    plan = TrtLlmPlan(token_bytes=lo.token_bytes, block_size=e["tokens_per_block"],
                      available=e["logged_max_tokens"] * lo.token_bytes, fit=None, layers={})
    assert plan.num_blocks == blocks and blocks * 32 == e["logged_tokens"]
    lines = plan.lines(e["max_seq_len"])
    assert lines[1] == f"[TRT-LLM] [W] Adjusted max_seq_len to {e['logged_adjusted_max_seq_len']}"
    assert lines[-1] == (f"[TensorRT-LLM][INFO] [MemUsageChange] Allocated "
                         f"{e['logged_allocated_gib']:.2f} GiB for max tokens in paged KV cache "
                         f"({e['logged_tokens']}).")


def trtllm_llama_8b(e: dict[str, Any]) -> None:
    """128 KiB/token; 26.91 GiB in blocks of 64 = 3,445 blocks = 220,480 tokens; 2,048 pages."""
    check_trtllm(e, arch("llama-3.1-8b"))


def trtllm_tinyllama(e: dict[str, Any]) -> None:
    """TP 2: 22 x 2 x 64 x 2 x 2 B = 11,264 B/token per GPU; 18.88 GiB -> 56,251 blocks of 32."""
    check_trtllm(e, TINYLLAMA)


def trtllm_memory_doc(e: dict[str, Any]) -> None:
    """Unnamed model: 256 KiB/token (the allocated line's); 0.9 x 70.48 GiB -> 4,060 blocks."""
    check_trtllm(e, MHA_7B, dtype="fp8")


def trtllm_llava(e: dict[str, Any]) -> None:
    """LLaVA-1.5-7B at TP 2, fp16 KV: 262,144 B/token per GPU; 0.9 x 85.57 GiB -> 315,488."""
    check_trtllm(e, MHA_7B)


def trtllm_qwen15(e: dict[str, Any]) -> None:
    """Qwen1.5-7B (no GQA): 512 KiB/token; 0.9 x 21.89 GiB -> ceil(40,3xx / 64) = 631 blocks."""
    check_trtllm(e, MHA_7B)


def trtllm_suite_mismatch(e: dict[str, Any]) -> None:
    """Known mismatch, explained: the log is not Llama-2-7B's. In fp8 that model caches
    262,144 B/token and 0.99 x 63.62 GiB holds 4,031-4,032 blocks; the log's own 'Allocated
    62.99 GiB for 294,848 tokens' is 229,376 B/token, with which the same rule gives 4,607."""
    lo, hi = trtllm_plans(e, MHA_7B, dtype="fp8")
    assert lo.token_bytes == 262_144
    assert hi.num_blocks is not None and hi.num_blocks < e["logged_blocks"]
    assert round(e["logged_allocated_gib"] * GiB / e["logged_tokens"] / 1024) * 1024 == 229_376
    # 224 KiB/token: 28 layers x 16 heads x 256 (GPT-J-6B's shape) in fp8.
    check_trtllm(e, Architecture(layers=28, attention_heads=16, kv_heads=16, head_dim=256),
                 dtype="fp8")



def trtllm_kimi_k25(e: dict[str, Any]) -> None:
    """1.3.0rc7, TP 8, fp8 KV: MLA's 576 latent values once per token and layer (kv factor 1,
    not split by TP), 61 x 576 x 1 B = 35,136 B/token; 158,543 blocks x 32 = 5,073,376 tokens =
    166.02 GiB; 262,144 / 32 = 8,192 blocks per sequence."""
    lo = trtllm_plans(e, KIMI_K2, dtype="fp8")[0]
    assert lo.token_bytes == 61 * (512 + 64) * 1 == 35_136
    check_trtllm(e, KIMI_K2, dtype="fp8")
    bf16 = trtllm_plans(e, KIMI_K2)[1]  # a bf16 cache (70,272 B) would hold half the blocks
    assert bf16.token_bytes == 70_272 and bf16.num_blocks is not None
    assert bf16.num_blocks < e["logged_blocks"] // 2 + 16
    plan = TrtLlmPlan(token_bytes=lo.token_bytes, block_size=e["tokens_per_block"],
                      available=e["logged_tokens"] * lo.token_bytes, fit=None, layers={})
    assert plan.num_blocks == e["logged_blocks"]
    lines = plan.lines(e["max_seq_len"])  # the window fits the pool: no cut, three lines
    assert len(lines) == 3 and lines[1:] == e["logged_lines"][1:]
    # the logged blocks line adds ", max sequence length=262144" to tokcost's (1.1) wording
    assert e["logged_lines"][0] == f"{lines[0]}, max sequence length={e['max_seq_len']}"


def trtllm_nemotron_autodeploy(e: dict[str, Any]) -> None:
    """Known mismatch: AutoDeploy's own cache behind a head_dim-0 placeholder manager ('0.00
    GiB'); tokcost's trtllm engine (PyTorch backend) refuses Mamba hybrids. The lines' arithmetic
    is checked: 61,848 x 64 = 3,958,272 tokens, 16,384 / 64 = 256 pages per sequence."""
    assert e["known_mismatch"]
    tpb = e["tokens_per_block"]
    assert e["logged_blocks"] * tpb == e["logged_tokens"]
    assert -(-e["max_seq_len"] // tpb) == e["logged_pages_per_sequence"]
    layout = kv_layout(layout_arch(NEMOTRON_3_NANO))
    with pytest.raises(UsageError, match="Mamba cache manager is not modelled"):
        TrtLlm(tokens_per_block=tpb).plan(Deployment(layout=layout, kv_memory=GiB))


GLM45 = Path(__file__).parent / "fixtures" / "hf_configs_families" / "glm-4.5"


def llama_cpp_glm45_air(e: dict[str, Any]) -> None:
    """GLM-4.5-Air on llama.cpp b6168, one slot: GLM-4.5's config.json with the Air's figures
    (hidden 4,096, 46 layers, 128 experts of 1,408, one dense layer; 96 query / 8 kv heads of 128
    as in GLM-4.5). The NextN layer (num_nextn_predict_layers 1) is not one of the 46 and keeps no
    cache (llama.cpp PR #14939): 131,072 cells x 46 layers x 2 x 1,024 x 2 B = 23,552 MiB. b6168
    named the cache llama_kv_cache_unified; the figures are the ones tokcost prints."""
    config = json.loads((GLM45 / "config.json").read_text())
    config.update(hidden_size=4096, num_hidden_layers=46, n_routed_experts=128,
                  moe_intermediate_size=1408, first_k_dense_replace=1)
    a = architecture_from_config(config, where="config.json")
    assert a.attention.mtp_layers == 1  # the NextN layer, outside the 46
    plan = llama_cpp(a, parallel=e["n_seq_max"], kv_unified=e["kv_unified"])
    assert (plan.slots, plan.unified) == (e["n_seq_max"], e["kv_unified"])
    (line,) = plan.lines(e["n_ctx"])
    assert line == e["logged_lines"][0].replace("llama_kv_cache_unified:", "llama_kv_cache:")
    assert plan.kv_bytes(e["n_ctx"]) == 23_552 * 2**20
    auto = llama_cpp(a)  # today's -np auto: 4 slots sharing the same 131,072 cells
    assert auto.kv_bytes(e["n_ctx"]) == plan.kv_bytes(e["n_ctx"]) and auto.slots == 4


GEMMA4_E4B = Path(__file__).parent / "fixtures" / "hf_configs_families" / "gemma-4-e4b"


def llama_cpp_gemma4_e4b(e: dict[str, Any]) -> None:
    """Gemma-4 E4B at -c 131072, one slot: KV in the first 24 of 42 layers only (PR #15504's
    layer reuse), 4 global layers of 2 x 512 and 20 sliding of 2 x 256 (per-layer
    n_embd_k_gqa); the non-SWA line to the character, the SWA cache's 1,024 cells, and its
    40 MiB, which the thread's memory breakdown (2,088 MiB of context) leaves for it."""
    config = json.loads((GEMMA4_E4B / "config.json").read_text())
    a = architecture_from_config(config, where="config.json")
    layout = kv_layout(a)
    assert (layout.counts["full"], layout.counts["sliding"], layout.kv_shared) == (4, 20, 18)
    plan, _ = LlamaCpp(parallel=e["n_seq_max"], kv_unified=e["kv_unified"]).plan(
        Deployment(layout=layout, head_dim=a.head_dim, kv_heads=a.kv_heads))
    lines = plan.lines(e["n_ctx"])
    assert lines[1] == e["logged_lines"][0]
    assert lines[2] == e["logged_lines"][1]
    assert lines[3].startswith("llama_kv_cache: size =   40.00 MiB (  1024 cells,  20 layers,")
    assert plan.kv_bytes(e["n_ctx"]) == (532 + 1042 + 514) * 2**20


GEMMA4_31B = Path(__file__).parent / "fixtures" / "hf_configs_families" / "gemma-4-31b"
GEMMA3N_E4B = Path(__file__).parent / "fixtures" / "hf_configs_families" / "gemma-3n-e4b"


def llama_cpp_family(folder: Path, **options: Any) -> LlamaCppPlan:
    """llama.cpp's plan for a config.json folder, the model's own kv heads and head_dim given."""
    a = architecture_from_config(json.loads((folder / "config.json").read_text()),
                                 where="config.json")
    plan, _ = LlamaCpp(**options).plan(Deployment(layout=kv_layout(a), head_dim=a.head_dim,
                                                  kv_heads=a.kv_heads))
    return plan


def llama_cpp_gemma4_31b(e: dict[str, Any]) -> None:
    """Gemma-4-31B, q5_0 K and V: 10 global layers of 4 x 512 (1,408 B a cell in q5_0),
    120,064 cells; the SWA cache pad(1,024 + 512, 256) = 1,536 cells. -c 120000 pads to the
    logged 120,064."""
    plan = llama_cpp_family(GEMMA4_31B, parallel=e["n_seq_max"],
                            cache_type_k=e["cache_type_k"], cache_type_v=e["cache_type_v"])
    for n_ctx in (e["n_ctx"], 120_000):
        assert plan.lines(n_ctx)[:3] == e["logged_lines"]


def llama_cpp_gemma3n(e: dict[str, Any]) -> None:
    """Gemma-3n-E4B: 20 of 35 layers keep KV, 4 of them global; the non-SWA line's visible part
    (its decimal comma is the poster's locale): 32,768 x 4 x 512 x 2 B = 128 MiB each, 256.00."""
    plan = llama_cpp_family(GEMMA3N_E4B, parallel=1)
    line = plan.lines(e["n_ctx"])[1].replace("llama_kv_cache:", "llama_kv_cache_unified:")
    assert line.replace(".", ",", 1).startswith(e["logged_lines"][0])


CASCADE = "https://github.com/99sono/DockerBuildFiles/blob"
NEMOTRON_3_NANO = {  # nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16, config.json
    "model_type": "nemotron_h", "hidden_size": 2688, "num_hidden_layers": 52,
    "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
    "mamba_num_heads": 64, "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8,
    "conv_kernel": 4, "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128}
GRANITE_4_H_SMALL = Path(__file__).parent / "fixtures" / "hf_configs_families" / "granite-4.0-h-small"


def _kv_line(e: dict[str, Any]) -> str:
    return (f"KV Cache is allocated. #tokens: {e['logged_tokens']}, K size: "
            f"{e['logged_k_size_gb']:.2f} GB, V size: {e['logged_v_size_gb']:.2f} GB")


def _mamba_line(e: dict[str, Any]) -> str:
    return (f"Mamba Cache is allocated. max_mamba_cache_size: {e['logged_mamba_cache_size']}, "
            f"conv_state size: {e['logged_conv_state_gb']:.2f}GB, "
            f"ssm_state size: {e['logged_ssm_state_gb']:.2f}GB")


def nemotron_3_nano_sglang(e: dict[str, Any]) -> None:
    """Conv bf16, SSM float32 (a bf16 SSM would print 0.05 GB): 9 slots x 23 layers x (9,216 +
    524,288) B at TP 4; K = (1,557,504 + 64) x 6 x 1 x 128 x 2 B = 2.23 GiB (pages of 64).
    max_mamba_cache_size = --max-running-requests (the radix cache off) is not modelled: the
    Mamba line is rebuilt for the logged 8 states, the KV line for the logged tokens. The shape is
    the catalog's nemotron-3-nano-30b-a3b, the checkpoint the log ran."""
    assert CATALOG.resolve(e["model"]).id == "nemotron-3-nano-30b-a3b"
    layout = kv_layout(arch("nemotron-3-nano-30b-a3b"), tp=e["tp"])
    engine = Sglang(release=e["release"])
    plan = engine.pools(Deployment(layout=layout, block_size=e["page_size"]), None)
    assert (plan.state_bytes, plan.conv_bytes) == (23 * (9_216 + 524_288), 23 * 9_216)
    assert plan.mamba_line(e["logged_mamba_cache_size"]) == _mamba_line(e)
    kv_only = dataclasses.replace(plan, stage=dataclasses.replace(plan.stage, linear=0),
                                  available=e["logged_tokens"] * plan.cell_size)
    assert plan.cell_size == 6 * 128 * 2 * 2
    assert kv_only.report(8192).lines == (_kv_line(e), f"max_total_num_tokens={e['logged_tokens']}")
    # the pool end: 7.95 GB after the weights - KV - states = the logged 3.39 GB
    pool = (e["logged_tokens"] + 64) * plan.cell_size + 9 * plan.state_bytes
    assert f"{7.95 - pool / GiB:.2f}" == "3.39"


def _sglang_pool_reproduces(e: dict[str, Any], layout: Any) -> None:
    """The pool the log implies (tokens x cell + states x state, up to a cell more) gives back
    both the logged states (mamba_full_memory_ratio 0.9) and tokens, and the logged lines."""
    engine = Sglang(release=e["release"])
    plan = engine.pools(Deployment(layout=layout), None)
    implied = e["logged_tokens"] * plan.cell_size + e["logged_mamba_cache_size"] * plan.state_bytes
    for available in (implied, implied + plan.cell_size - 1):
        report = engine.pools(Deployment(layout=layout), available).report(4096)
        assert report.settings["max_mamba_cache_size"] == e["logged_mamba_cache_size"]
        assert report.cache_tokens == e["logged_tokens"]
        assert report.lines[:2] == (_mamba_line(e), _kv_line(e))


def granite_4_h_small_sglang(e: dict[str, Any]) -> None:
    """36 x (25,344 x 2 + 1,048,576 x 4) = 152,819,712 B a request, 16,384 B a token: 218 states,
    2,265,808 tokens, 0.37 / 30.80 GB, K 17.29 GB."""
    config = json.loads((GRANITE_4_H_SMALL / "config.json").read_text())
    _sglang_pool_reproduces(e, kv_layout(layout_arch(config)))


def qwen3_coder_next_sglang(e: dict[str, Any]) -> None:
    """Qwen3-Next's shape: 36 x (24,576 x 2 + 524,288 x 4) = 77,266,944 B a request, 24,576 B a
    token: 336 states, 1,178,614 tokens, 0.56 / 23.70 GB, K 13.49 GB."""
    _sglang_pool_reproduces(e, kv_layout(arch("qwen3-next-80b-a3b")))


# Granite-4.0-H-1B, the family's dense member: 40 layers, attention at 5/15/25/35, 12 query / 4 kv
# heads of 128; Mamba2 48 heads of 64, state 128, 1 group, conv 4, hidden 1,536
# (huggingface.co/ibm-granite/granite-4.0-h-1b config.json, as public copies of it quote it).
GRANITE_4_H_1B = {
    "model_type": "granitemoehybrid", "hidden_size": 1536, "num_hidden_layers": 40,
    "num_attention_heads": 12, "num_key_value_heads": 4, "mamba_n_heads": 48, "mamba_d_head": 64,
    "mamba_d_state": 128, "mamba_n_groups": 1, "mamba_d_conv": 4, "mamba_expand": 2,
    "mamba_chunk_size": 256, "num_local_experts": 0,
    "layer_types": (["mamba"] * 5 + ["attention"] + ["mamba"] * 9 + ["attention"] + ["mamba"] * 9
                    + ["attention"] + ["mamba"] * 9 + ["attention"] + ["mamba"] * 4)}


def granite_4_h_1b_vllm(e: dict[str, Any]) -> None:
    """vLLM v0.19, bf16 state: 806,400 B a Mamba2 state sets the 400-token block (padding 1.59%);
    10 groups of 4 layers, 3,276,800 B a block. 1,339 blocks give all three lines: 4.09 GiB,
    1,339 // 10 x 400 = 53,200 tokens, 1,339 / (11 + 9) = 66.95x."""
    layout = kv_layout(layout_arch(GRANITE_4_H_1B), "bf16", tp=e["tp"])
    assert (layout.token_bytes["full"], layout.state_bytes) == (2_048, 806_400)
    release, length = Vllm.release_of(e["release"]), e["max_model_len"]
    mnbt = e["max_num_batched_tokens"]
    lo, hi = plans(layout_arch(GRANITE_4_H_1B), e["kv_memory_gib"], release=e["release"], mnbt=mnbt)
    assert lo.block_size == hi.block_size == e["logged_block_size"]
    padding = 100 * (e["logged_block_size"] * 2_048 - 806_400) / 806_400
    assert f"{padding:.2f}" == f"{e['logged_padding_pct']:.2f}"
    assert (len(lo.groups), lo.blocks_per_request(length)) == (10, 20)
    assert lo.cache_tokens(length) <= e["logged_tokens"] <= hi.cache_tokens(length)  # type: ignore[operator]
    conc = [p.max_concurrency(length) for p in (lo, hi)]
    assert conc[0] - 0.005 <= e["logged_concurrency"] <= conc[1] + 0.005  # type: ignore[operator]
    exact = plan_vllm(layout, available=1_339 * lo.block_bytes, release=release,
                      max_num_batched_tokens=mnbt)
    assert exact.num_blocks == 1_339 and lo.block_bytes == 3_276_800
    assert exact.report(length).lines[:3] == (
        f"Available KV cache memory: {e['kv_memory_gib']} GiB",
        f"GPU KV cache size: {e['logged_tokens']:,} tokens",
        f"Maximum concurrency for {length:,} tokens per request: {e['logged_concurrency']:.2f}x")


# Granite-4.0-H-350M: 32 layers, attention at 10/13/17/27, 12 query / 4 kv heads of 64 (hidden 768);
# Mamba2 48 heads of 32, state 128, 1 group, conv 4 (its config.json, as public copies quote it).
GRANITE_4_H_350M = {
    "model_type": "granitemoehybrid", "hidden_size": 768, "num_hidden_layers": 32,
    "num_attention_heads": 12, "num_key_value_heads": 4, "mamba_n_heads": 48, "mamba_d_head": 32,
    "mamba_d_state": 128, "mamba_n_groups": 1, "mamba_d_conv": 4, "mamba_expand": 2,
    "num_local_experts": 0,
    "layer_types": (["mamba"] * 10 + ["attention"] + ["mamba"] * 2 + ["attention"] + ["mamba"] * 3
                    + ["attention"] + ["mamba"] * 9 + ["attention"] + ["mamba"] * 4)}


def granite_block_lines(e: dict[str, Any]) -> None:
    """The two hybrid lines vLLM logs before the cache is sized (the GPU failed after them): the
    attention block 16 x cdiv(state, 16 x page per token) and the Mamba page's padding to it."""
    if e["model"].endswith("h-small"):
        config = json.loads((GRANITE_4_H_SMALL / "config.json").read_text())
    else:
        config = GRANITE_4_H_350M
    layout = kv_layout(layout_arch(config), "bf16", tp=e["tp"])
    plan = plan_vllm(layout, available=None, release=Vllm.release_of(e["release"]),
                     max_num_batched_tokens=8192)
    assert plan.block_size == e["logged_block_size"]
    page, state = plan.block_size * layout.token_bytes["full"], layout.state_bytes
    assert page >= state > page - 16 * layout.token_bytes["full"]  # the smallest 16-step block
    assert f"{100 * (page - state) / state:.2f}" == f"{e['logged_padding_pct']:.2f}"
# Qwen3.8-27B (Qwen3.5-27B's shape) with the conv / SSM split SGLang keeps apart: conv
# 3 x (2 x 16 x 128 + 48 x 128) values in bf16, SSM 48 x 128 x 128 in float32 (mamba_ssm_dtype).
QWEN38_27B = dataclasses.replace(QWEN35_27B, attention=dataclasses.replace(
    QWEN35_27B.attention, linear_conv_channels=2 * 16 * 128 + 48 * 128,
    linear_ssm_elements=48 * 128 * 128, linear_ssm_dtype="fp32"))


def qwen38_27b_sglang(e: dict[str, Any]) -> None:
    """48 x (61,440 + 3,145,728) B a request, 16,384 B a token in fp8: 361 slots -> 0.99 / 50.77
    GB, K = 228,521 x 16,384 B = 3.49 GB; the notebook's other start-ups' states likewise. The
    quoted KV line drops the "dtype:" field v0.5.13 added: compared without it."""
    layout = kv_layout(QWEN38_27B, e["kv_cache_dtype"], tp=e["tp"])
    plan = Sglang(release=e["release"]).pools(Deployment(layout=layout, family="qwen3_5_text"), None)
    assert (plan.state_bytes, plan.conv_bytes, plan.cell_size) == (48 * 3_207_168, 48 * 61_440, 16 * 2048)
    assert plan.mamba_line(e["logged_mamba_cache_size"]) == _mamba_line(e)
    kv_only = dataclasses.replace(plan, stage=dataclasses.replace(plan.stage, linear=0),
                                  available=e["logged_tokens"] * plan.cell_size)
    kv_line, total = kv_only.report(32_768).lines
    assert kv_line.replace(" dtype: torch.float8_e4m3fn,", "") == _kv_line(e)
    assert total == f"max_total_num_tokens={e['logged_tokens']}"
    for run in e["other_runs"]:
        states = run.get("states", 167)  # RUN-0001 quotes only the sizes: 168 slots give both
        line = plan.mamba_line(states)
        assert line.endswith(f"conv_state size: {run['conv_gb']:.2f}GB, "
                             f"ssm_state size: {run['ssm_gb']:.2f}GB"), run["run"]


def nemotron_cascade_vllm(e: dict[str, Any]) -> None:
    """Nemotron-3-Nano's shape (Cascade-2 is post-trained from it), fp8 KV, float32 SSM state
    (--mamba-ssm-cache-dtype, the config's field here): block 16 x cdiv(2,134,016, 16 x 512) =
    4,176; 5 groups of 6 layers, 12,828,672 B a block. Some block count in the 2-decimal range
    gives both logged figures: num_blocks // 5 x 4,176 to v0.20, int(concurrency x L) from
    v0.21; a request needs cdiv(L, 4,176) attention blocks + 4 Mamba blocks."""
    config = dict(NEMOTRON_3_NANO, mamba_ssm_cache_dtype=e["mamba_ssm_cache_dtype"])
    layout = kv_layout(layout_arch(config), e["kv_cache_dtype"], tp=e["tp"])
    engine = Vllm(release=Vllm.release_of(e["release"]),
                  max_num_batched_tokens=e["max_num_batched_tokens"])
    dep = Deployment(layout=layout, family="nemotron_h")
    lo, hi = (engine.pool(dep, math.floor((e["kv_memory_gib"] + d) * GiB)) for d in (-0.005, 0.005))
    assert (lo.block_size, len(lo.groups), lo.group_size) == (e["logged_block_size"], 5, 6)
    assert lo.block_bytes == 6 * 4176 * 512 and lo.num_blocks is not None and hi.num_blocks is not None
    state = 18_432 * 2 + 524_288 * 4  # conv bf16 + SSM float32: 2,134,016 B
    assert f"{100 * (4176 * 512 - state) / state:.2f}" == f"{e['logged_padding_pct']:.2f}"
    length = e["max_model_len"]
    matches = []
    for n in range(lo.num_blocks, hi.num_blocks + 1):
        plan = engine.pool(dep, n * lo.block_bytes)
        lines = plan.report(length).lines
        if (f"GPU KV cache size: {e['logged_tokens']:,} tokens" in lines and
                f"Maximum concurrency for {length:,} tokens per request: "
                f"{e['logged_concurrency']:.2f}x" in lines):
            matches.append(n)
    assert matches, "no block count in the logged memory's range gives the logged lines"


def llama_cpp_nemotron_lightning(e: dict[str, Any]) -> None:
    """Nemotron-3-Nano's shape on llama.cpp: KV on the 6 attention layers only (16,384 x 6 x
    1,024 B = 96 MiB, shared by -np auto's 4 slots), the recurrent state over 23 Mamba2 layers
    per slot (1.62 MiB R + 46.00 MiB S); the quoted totals add up with the compute buffers."""
    a = layout_arch(NEMOTRON_3_NANO)
    for case in e["cases"]:
        # one slot: -np 1; four: llama-server's -np auto (4 slots sharing one unified cache)
        plan = llama_cpp(a, parallel=1) if case["n_seq_max"] == 1 else llama_cpp(a)
        assert plan.slots == case["n_seq_max"]
        kv, recurrent = plan.lines(e["n_ctx"])
        assert kv.startswith(f"llama_kv_cache: size = {case['kv_mib']:7.2f} MiB ({e['n_ctx']:6d} "
                             "cells,   6 layers,")
        assert recurrent.startswith(f"llama_memory_recurrent: size = {case['recurrent_mib']:7.2f} "
                                    f"MiB ({case['n_seq_max']:6d} cells,  52 layers,")
        parts = [case["kv_mib"], case["recurrent_mib"], case["compute_mib"], case.get("weights_mib", 0)]
        assert f"{sum(parts):.2f}" == f"{case['total_mib']:.2f}"


# NVIDIA-Nemotron-3-Nano-4B: the official GGUF's nemotron_h header (block_count 42; kv heads 8 at
# layers 12, 17, 24, 32; Mamba2 where neither kv heads nor FFN: 21 layers; inner 7,680 = 96 x 80,
# state 128, 8 groups, conv 4; 17 MLP-only layers).
_NANO_4B_ATTENTION, _NANO_4B_MAMBA = {12, 17, 24, 32}, {0, 2, 4, 6, 7, 9, 11, 14, 16, 19, 21, 23, 26,
                                                        28, 30, 31, 34, 35, 36, 38, 40}
NEMOTRON_3_NANO_4B = {
    "model_type": "nemotron_h", "hidden_size": 3136, "num_hidden_layers": 42,
    "hybrid_override_pattern": "".join("*" if i in _NANO_4B_ATTENTION else "M" if i in _NANO_4B_MAMBA
                                       else "-" for i in range(42)),
    "mamba_num_heads": 96, "mamba_head_dim": 80, "ssm_state_size": 128, "n_groups": 8,
    "conv_kernel": 4, "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128}


def nemotron_nano_4b_vllm(e: dict[str, Any]) -> None:
    """v0.13 keeps NemotronH's SSM state in float16 (the log's "Updating mamba_ssm_cache_dtype to
    'float16'"): a 2,024,448 B Mamba page, block 992; 4 + 21 (+3) layers in 7 groups of 4; 1,473
    blocks give 208,320 tokens and 98.20x. A negative budget is refused before any block."""
    layout = kv_layout(layout_arch(NEMOTRON_3_NANO_4B), e["kv_cache_dtype"], tp=e["tp"])
    engine = Vllm(release=Vllm.release_of(e["release"]),
                  max_num_batched_tokens=e.get("max_num_batched_tokens"))
    dep = Deployment(layout=layout, family="nemotron_h")
    if e.get("refuses_to_start"):
        refusal = engine.pool(dep, int(e["kv_memory_gib"] * GiB)).report(e["max_model_len"]).refusal
        assert refusal is not None and refusal.startswith("No available memory for the cache blocks")
        return
    lo, hi = (engine.pool(dep, math.floor((e["kv_memory_gib"] + d) * GiB)) for d in (-0.005, 0.005))
    assert (lo.block_size, len(lo.groups), lo.group_size) == (e["logged_block_size"], 7, 4)
    assert lo.block_bytes == 4 * 992 * 2048 and (lo.num_blocks, hi.num_blocks) == (1472, 1473)
    state = (29_184 + 983_040) * 2  # conv and SSM both 2 B: 2,024,448 B
    assert f"{100 * (992 * 2048 - state) / state:.2f}" == f"{e['logged_padding_pct']:.2f}"
    length = e["max_model_len"]
    assert hi.report(length).lines[1:] == (
        f"GPU KV cache size: {e['logged_tokens']:,} tokens",
        f"Maximum concurrency for {length:,} tokens per request: {e['logged_concurrency']:.2f}x")


def kimi_k25_sglang(e: dict[str, Any]) -> None:
    """MLA on SGLang: the 576-value latent on every rank, 61 x 1,152 B = 70,272 B a token, pages
    of 1; the line from each start-up's token count: (N + 1) x 70,272 B = 160.63 GiB."""
    layout = kv_layout(KIMI_K2, "bf16", tp=e["tp"])
    engine = Sglang(release=e["release"])
    for case in e["cases"]:
        n = case["logged_tokens"]
        plan = engine.pools(Deployment(layout=layout), n * 61 * 1152)
        assert (plan.block_size, plan.cell_size) == (e["page_size"], 70_272)
        report = plan.report(262_144)
        assert report.cache_tokens == n
        assert report.lines[0] == (f"KV Cache is allocated. #tokens: {n}, "
                                   f"KV size: {case['logged_kv_size_gb']:.2f} GB")


GLM5 = Path(__file__).parent / "fixtures" / "hf_configs_families" / "glm-5"


def glm5_sglang(e: dict[str, Any]) -> None:
    """GLM-5's DSA pool on an AMD GPU: pages of 1 from v0.5.8 to v0.5.11 (CUDA: 64); 78 layers x
    (656 + 132) B a token; each start-up's line from its token count."""
    config = json.loads((GLM5 / "config.json").read_text())
    layout = kv_layout(layout_arch(config), e["kv_cache_dtype"], tp=e["tp"])
    assert layout.token_bytes == {"mla": 656 + 132}
    # any AMD GPU (SGLang's is_hip()); the MI355X is not in the catalog: the MI325X as it, renamed
    amd = dataclasses.replace(CATALOG.resolve_gpu("MI325X"), name="MI355X")
    engine = Sglang(release=e["release"])
    for case in e["cases"]:
        n = case["logged_tokens"]
        plan = engine.pools(Deployment(layout=layout, gpu=amd), n * 78 * 788)
        assert plan.block_size == e["page_size"]
        report = plan.report(202_752)
        assert report.cache_tokens == n
        assert report.lines[0] == (f"KV Cache is allocated. #tokens: {n}, "
                                   f"KV size: {case['logged_kv_size_gb']:.2f} GB")
    cuda = engine.pools(Deployment(layout=layout), 3_199_575 * 78 * 788).report(202_752)
    assert cuda.lines[0] == "KV Cache is allocated. #tokens: 3199552, KV size: 183.16 GB"
    later = Sglang(release="0.5.12").pools(Deployment(layout=layout, gpu=amd), None)
    assert later.block_size == 64  # v0.5.12: pages of 1 only without aiter's preshuffle kernel


CHECKS: dict[tuple[str, float | None, str], Callable[[dict[str, Any]], None]] = {
    ("https://github.com/LMCache/LMCache/issues/1739", 6.51, "vllm"): qwen3_14b,
    ("https://github.com/vllm-project/vllm/issues/21348", 8.11, "vllm"): qwen3_235b_vllm,
    ("https://github.com/vllm-project/vllm/issues/21348", None, "sglang"): qwen3_235b_sglang,
    ("https://github.com/sgl-project/sglang/pull/11309", None, "sglang"): dsv32_sglang,
    ("https://github.com/sgl-project/sglang/pull/15464", None, "sglang"): mimo_v2_sglang,
    ("https://github.com/vllm-project/vllm/issues/10517", 3.81, "vllm"): llama_v0,
    ("https://github.com/vllm-project/vllm/issues/10517", 2.89, "vllm"): llama_v0,
    ("https://github.com/vllm-project/vllm/pull/12569", None, "vllm"): llama_70b_blocks,
    ("https://github.com/vllm-project/vllm/pull/13596", None, "vllm"): pr_13596,
    ("https://github.com/vllm-project/vllm/issues/25350", 10.55, "vllm"): issue_25350,
    ("https://github.com/vllm-project/recipes/pull/12", 48.66, "vllm"): qwen3_coder,
    ("https://github.com/vllm-project/recipes/pull/12", 55.65, "vllm"): qwen3_coder,
    ("https://github.com/vllm-project/vllm/issues/15928", None, "vllm"): ratio_only,
    ("https://github.com/mitchross/talos-argocd-proxmox/pull/1995", 4.99, "vllm"): qwen38_27b,
    ("https://github.com/vllm-project/vllm/blob/main/tests/v1/core/test_kv_cache_utils.py", None,
     "vllm-unit-test"): vllm_unit_test,
    ("https://github.com/vllm-project/vllm/issues/19996", 51.63, "vllm"): llama_eagle,
    ("https://github.com/vllm-project/vllm/issues/27508", 1.71, "vllm"): gpt_oss_small,
    ("https://github.com/vllm-project/vllm/issues/23278", -2.14, "vllm"): gpt_oss_negative,
    ("https://github.com/ggml-org/llama.cpp/pull/19408", None, "llama.cpp"): llama_cpp_hybrid,
    ("https://github.com/unslothai/unsloth/pull/7530", None, "llama.cpp"): llama_cpp_slots,
    ("https://github.com/ggml-org/llama.cpp/pull/21551", None, "llama.cpp"): llama_cpp_types,
    ("https://github.com/GeniePod/genie-claw/issues/410", None, "llama.cpp"): llama_cpp_falcon_h1,
    ("https://github.com/triton-inference-server/tutorials/pull/150", None, "trtllm"): trtllm_blocks,
    ("https://github.com/vllm-project/recipes/pull/115", 46.80, "vllm"): kimi_k2,
    ("https://github.com/vllm-project/vllm/issues/40691", None, "vllm"): qwen35_27b,
    ("https://github.com/vllm-project/vllm/issues/39734", None, "vllm"): gemma4_31b,
    ("https://github.com/noonghunna/club-3090/pull/594", 5.33, "vllm"): qwen36_27b_mtp,
    ("https://github.com/noonghunna/club-3090/issues/612", 5.98, "vllm"): qwen36_35b,
    ("https://github.com/noonghunna/club-3090/issues/652", 6.01, "vllm"): qwen36_35b,
    ("https://github.com/fuhengwu2021/coderepo/blob/eba66958577f6ec037fc696281edf20ce58f7823/extra/"
     "README.md", 89.71, "vllm"): llama4_scout,
    ("https://github.com/fuhengwu2021/coderepo/blob/64ba1951c6724db1185f8a940de9279e300b3c67/extra/"
     "HYBRID_KV_CACHE_ANALYSIS.md", 89.71, "vllm"): llama4_scout,
    ("https://github.com/eugr/spark-vllm-docker/issues/396", 22.5, "vllm"): minimax_m27_refusal,
    ("https://github.com/eugr/spark-vllm-docker/issues/396", 28.74, "vllm"): minimax_m27_min_rank,
    ("https://github.com/jeansblog/trt_llm", 5.95, "trtllm"): trtllm_gpt_oss,
    ("https://github.com/ai-dynamo/dynamo/blob/134095eab613d97cbfacf35517723d4f8fdd8624/examples/"
     "python_rs/llm/tensorrt_llm/README.md", 26.91, "trtllm"): trtllm_llama_8b,
    ("https://github.com/ai-dynamo/dynamo/blob/b4d54bd85eed15135e2aa129f20a825ddcf5f39d/examples/"
     "python_rs/llm/tensorrt_llm/README.md", 18.88, "trtllm"): trtllm_tinyllama,
    ("https://github.com/NVIDIA/TensorRT-LLM/blob/7ff5302377eb3063d2c056746f686eebb23184bc/docs/"
     "source/reference/memory.md", None, "trtllm"): trtllm_memory_doc,
    ("https://github.com/triton-inference-server/tensorrtllm_backend/blob/"
     "05ceae03c28c855c8520ba8429659b9d01c5f783/docs/multimodal.md", None, "trtllm"): trtllm_llava,
    ("https://github.com/NVIDIA/TensorRT-LLM/issues/2268", None, "trtllm"): trtllm_qwen15,
    ("https://github.com/NVIDIA/TensorRT-LLM/blob/main/benchmarks/Suite.md", None, "trtllm"):
        trtllm_suite_mismatch,
    ("TensorRT-LLM Auto Test Report: kimi_k25, generated 2026-03-20T07:10:00Z (branch "
     "feat/scaffolding-tracer-k25)", 166.02, "trtllm"): trtllm_kimi_k25,
    ("https://github.com/jeansblog/Nemotron3nano", None, "trtllm"): trtllm_nemotron_autodeploy,
    ("https://github.com/ikawrakow/ik_llama.cpp/pull/689", None, "llama.cpp"): llama_cpp_glm45_air,
    ("https://github.com/ggml-org/llama.cpp/issues/21730", None, "llama.cpp"): llama_cpp_gemma4_e4b,
    ("https://github.com/ggml-org/llama.cpp/issues/21394", None, "llama.cpp"): llama_cpp_gemma4_31b,
    ("https://github.com/ggml-org/llama.cpp/issues/14604", None, "llama.cpp"): llama_cpp_gemma3n,
    ("https://github.com/sgl-project/sglang/blob/e9ff7b1ac4269736908f22a30d188a16dfaeb586/test/srt/"
     "xpu/test_nvidia_nemotron_3_nano_failure_report.md", None, "sglang"): nemotron_3_nano_sglang,
    ("https://github.com/KHAEntertainment/sglang-mamba/blob/2ad9f8a21b9cf2125dd72a84f9b272de22422fba/"
     "test/phases/results/compat-granite-4.0-h-small-20260401.md", None, "sglang"):
        granite_4_h_small_sglang,
    ("https://github.com/KHAEntertainment/sglang-mamba/blob/35e289416e836107fb857688cc7fbf8e6b0fb630/"
     "test/phases/results/compat-qwen3-coder-next-fp8-2026-04-01.md", None, "sglang"):
        qwen3_coder_next_sglang,
    ("https://github.com/am-dev-75/retriva-docs/blob/bc36c14a6423b4906849776f7cd7ef34adcc07f3/"
     "implementations/1/README.md", 4.09, "vllm"): granite_4_h_1b_vllm,
    ("https://github.com/ROCm/ROCm/issues/5590", None, "vllm"): granite_block_lines,
    ("https://github.com/ROCm/ROCm/issues/5724", None, "vllm"): granite_block_lines,
    ("https://github.com/CoralLeiCN/DGXSpark-Small-LLMs/blob/6a4319f328e47ff7dec93aa9318c9f1bde9431b2/"
     "docs/experiments/qwen3.8-27b-nvfp4/sglang/dgx-spark/2026-09-20T12-25-45Z-mamba-cache-c72-startup.md",
     None, "sglang"): qwen38_27b_sglang,
    (f"{CASCADE}/35fbb4ed79ce6670fd21d8c3d98db11ba2e8b3ca/vllm/nemotron-cascade-2/metadata/metadata_02/01_vllm_log_2026_04_23.md", 1.5, "vllm"):
        nemotron_cascade_vllm,
    (f"{CASCADE}/35fbb4ed79ce6670fd21d8c3d98db11ba2e8b3ca/vllm/nemotron-cascade-2/metadata/metadata_02/01_vllm_log_2026_04_23.md", 1.61, "vllm"):
        nemotron_cascade_vllm,
    (f"{CASCADE}/35fbb4ed79ce6670fd21d8c3d98db11ba2e8b3ca/vllm/nemotron-cascade-2/metadata/metadata_02/03_vllm_log.md", 3.6, "vllm"):
        nemotron_cascade_vllm,
    (f"{CASCADE}/35fbb4ed79ce6670fd21d8c3d98db11ba2e8b3ca/vllm/nemotron-cascade-2/metadata/metadata_02/07_vllm_log.md", 4.21, "vllm"):
        nemotron_cascade_vllm,
    (f"{CASCADE}/35fbb4ed79ce6670fd21d8c3d98db11ba2e8b3ca/vllm/nemotron-cascade-2/metadata/metadata_02/12_vllm_log.md", 4.21, "vllm"):
        nemotron_cascade_vllm,
    (f"{CASCADE}/a27933ff2605b89c46ef1779d276aeb0b39be4d6/vllm/nemotron-cascade-2/metadata/metadata_03_2026_05_01/01_vllm_log.md", 3.72, "vllm"):
        nemotron_cascade_vllm,
    ("https://github.com/Alberto-Codes/vramfit/blob/a7c5531173e672f9cb7df31f6166f71bf6250685/docs/"
     "explanation/evaluating-packed-models.md", None, "llama.cpp"): llama_cpp_nemotron_lightning,
    ("https://github.com/guardkit/guardkit/blob/f1dc06687e11ec5197dc3c7dc7ff9446efdc4983/docs/reviews/"
     "graphiti-nemotron/run_2.md", 11.15, "vllm"): nemotron_nano_4b_vllm,
    ("https://github.com/guardkit/guardkit/blob/f1dc06687e11ec5197dc3c7dc7ff9446efdc4983/docs/reviews/"
     "graphiti-nemotron/run_1.md", -2.51, "vllm"): nemotron_nano_4b_vllm,
    ("https://github.com/ajith-sirra-amd/Issues/blob/561754cab2bd405e3ff06b8cf7f4f7d500c9b316/"
     "Kimi-K2.5-MI355X-SGLANG-ERROR.md", None, "sglang"): kimi_k25_sglang,
    ("https://github.com/ajith-sirra-amd/Issues/blob/c40b7809310e983ab0a61212662945d58f7eb5f3/"
     "GLM-5-FP8-MI355X-SGLANG-ERROR.md", None, "sglang"): glm5_sglang,
}


def _key(e: dict[str, Any]) -> tuple[str, float | None, str]:
    return (e["source"], e.get("kv_memory_gib"), e["engine"])


@pytest.mark.parametrize(
    "entry", ENTRIES, ids=lambda e: "-".join(e["source"].rsplit("/", 2)[-2:]) + f"-{e['engine']}"
)
def test_published_log(entry: dict[str, Any]) -> None:
    check = CHECKS.get(_key(entry))
    assert check is not None, f"no check for {_key(entry)}: add one to CHECKS"
    check(entry)


def test_gemma3_says_why_per_sequence_exceeds_what_decode_reads() -> None:
    """13.99 GiB per sequence against 10.17 GiB of KV in the decode line (issue 30): vLLM
    reserves window - 1 + max_num_batched_tokens per sliding layer (576 + 1 blocks of 16 for
    1,023 + 8,192), the full layers all 128,000 tokens; decode reads 1,024 per sliding layer."""
    from typer.testing import CliRunner

    from tokcost.cli.app import app
    out = CliRunner().invoke(app, ["kvmem", "estimate", "-m", "gemma-3-27b", "--context", "128k",
                                   "--gpu", "H100", "--engine", "vllm@0.21"]).stdout
    page = 16 * 2 * 16 * 128 * 2  # 16 tokens of K and V, 16 kv heads of 128, bf16
    reserved = (8000 + 6 * (math.ceil((1023 + 8192) / 16) + 1)) * page * 10  # 10-layer slots
    read = (10 * 128_000 + 52 * 1024) * page // 16
    assert f"{reserved / 2**30:.2f} GiB per sequence, vLLM's reserve" in out
    assert f"{read / 2**30:.2f} GiB KV)" in out
    assert "decode reads only the window" in out


NANO_CASCADE = [e for e in ENTRIES if CHECKS.get(_key(e)) is nemotron_cascade_vllm]


@pytest.mark.parametrize("entry", NANO_CASCADE,
                         ids=lambda e: f"{e['source'].rsplit('/', 1)[-1]}-{e['kv_memory_gib']}")
def test_nemotron_3_nano_entry_gives_the_cascade_logs(entry: dict[str, Any]) -> None:
    """`kvmem estimate -m nemotron-3-nano-30b-a3b` with each start-up's flags prints the logged
    lines (Cascade-2 keeps the Nano's shape; --kv-memory leaves its NVFP4 weights out). The SSM
    state is float32 only through the entry's mamba_ssm_cache_dtype: v0.19 would otherwise keep
    it in float16 (a 1,085,440 B page, block 2,128). At the logged GiB itself: floor(G x 2^30 /
    12,828,672 B) = 125, 134, 301, 352, 352 and 311 blocks, the counts the checks above find."""
    from typer.testing import CliRunner

    from tokcost.cli.app import app

    nano = arch("nemotron-3-nano-30b-a3b")
    assert nano.attention.linear_ssm_cache_dtype == "fp32"
    assert entry["mamba_ssm_cache_dtype"] == "float32"
    length = entry["max_model_len"]
    result = CliRunner().invoke(app, [
        "kvmem", "estimate", "-m", "nemotron-3-nano-30b-a3b", "--engine",
        f"vllm@{entry['release']}", "--kv-dtype", entry["kv_cache_dtype"], "--kv-memory",
        f"{entry['kv_memory_gib']}GiB", "--context", str(length), "--max-num-batched-tokens",
        str(entry["max_num_batched_tokens"]), "--no-enable-prefix-caching"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"block {entry['logged_block_size']}: " in out
    assert "vLLM groups: 5, each of 6 layer slots: 4 mamba (23 layers + 1 padding)" in out
    assert f"  GPU KV cache size: {entry['logged_tokens']:,} tokens" in out
    assert (f"  Maximum concurrency for {length:,} tokens per request: "
            f"{entry['logged_concurrency']:.2f}x") in out


def test_nemotron_3_nano_entry_gives_the_llama_cpp_lines() -> None:
    """The Lightning log's figures (Nemotron-3-Nano's shape) from `-m nemotron-3-nano-30b-a3b`:
    -np 1 and llama-server's -np auto (4 slots) at -c 16384, KV 96.00 MiB on 6 layers, the
    recurrent state 47.62 / 190.47 MiB over n_layer 52 (the 23 MoE blocks counted). The lines
    need a GPU to print; they do not depend on which (the one-slot run was on an H100)."""
    from typer.testing import CliRunner

    from tokcost.cli.app import app

    (entry,) = [e for e in ENTRIES if CHECKS.get(_key(e)) is llama_cpp_nemotron_lightning]
    for case in entry["cases"]:
        slots = case["n_seq_max"]
        flags = ["-np", "1"] if slots == 1 else []  # four: the default -np auto
        result = CliRunner().invoke(app, [
            "kvmem", "estimate", "-m", "nemotron-3-nano-30b-a3b", "--engine", "llama.cpp",
            "--context", str(entry["n_ctx"]), "--gpu", "H100", *flags])
        assert result.exit_code == 0, result.output
        assert (f"  llama_kv_cache: size = {case['kv_mib']:7.2f} MiB ({entry['n_ctx']:6d} cells,"
                "   6 layers,") in result.output
        assert (f"  llama_memory_recurrent: size = {case['recurrent_mib']:7.2f} MiB ({slots:6d} "
                "cells,  52 layers,") in result.output
