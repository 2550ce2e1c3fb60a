"""Engine profiles (issue 12, item 1): vLLM's KV cache manager, SGLang's pools, ideal bytes.

Every expected number below is worked out by hand in the test's docstring from the engine's
own formulas (tokcost/memory/engines/vllm/ and sglang.py cite the source files), or copied
from vLLM's own unit tests (tests/v1/core/test_kv_cache_utils.py).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tokcost.catalog import load_catalog
from tokcost.catalog.schema import Architecture, Attention
from tokcost.cli.app import app
from tokcost.errors import UsageError
from tokcost.memory.engines.base import Release
from tokcost.memory.engines.sglang import default_mem_fraction_static, plan_sglang
from tokcost.memory.engines.vllm import default_max_num_batched_tokens, plan_vllm
from tokcost.memory.kv import kv_layout

GiB = 2**30
runner = CliRunner()
CATALOG = load_catalog()


def arch(model: str) -> Architecture:
    a = CATALOG.resolve(model).architecture
    assert a is not None
    return a


def estimate(*args: str) -> dict:
    """``kvmem estimate --json``; vLLM pinned to v0.21 unless an engine is given (the
    arithmetic below is v0.21's; test_kvmem_versions.py covers the later releases)."""
    pin = () if "--engine" in args else ("--engine", "vllm@0.21")
    result = runner.invoke(app, ["kvmem", "estimate", *args, *pin, "--json"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    return json.loads(result.stdout)


def toy(kinds: list[str], *, window: int = 1, heads: int = 2, head_dim: int = 64) -> Architecture:
    """vLLM's test spec: block 16, 2 kv heads x 64, fp32 -> 16 x 2 x 64 x 4 x 2 = 16,384 B."""
    return Architecture(
        layers=len(kinds), attention_heads=heads, kv_heads=heads, head_dim=head_dim,
        attention=Attention("sliding" if "sliding" in kinds else "full", tuple(kinds),  # type: ignore[arg-type]
                            window if "sliding" in kinds else None),
    )


# --- The issue's anchors: --kv-memory 20GiB, vLLM's logged concurrency --------------------

ANCHORS = [
    # model, max_model_len, kv memory, kv dtype, tokcost before (ideal), vLLM logs
    pytest.param("mistral-7b-v0.1", "32768", "20GiB", "bf16", "39.84x", "13.32x", id="mistral"),
    pytest.param("gemma-3-27b", "131072", "20GiB", "bf16", "1.92x", "1.41x", id="gemma3"),
    pytest.param("gemma-2-9b", "8192", "20GiB", "bf16", "10.15x", "7.61x", id="gemma2"),
    pytest.param("gpt-oss-120b", "131072", "20GiB", "bf16", "4.44x", "4.18x", id="gpt-oss"),
]


@pytest.mark.parametrize(("model", "ctx", "mem", "dtype", "ideal", "logged"), ANCHORS)
def test_issue_anchors(model: str, ctx: str, mem: str, dtype: str, ideal: str, logged: str) -> None:
    """vLLM's line, exactly; ``--engine ideal`` keeps the steady-state figure of before."""
    args = ["-m", model, "--max-model-len", ctx, "--kv-memory", mem, "--kv-cache-dtype", dtype]
    vllm = estimate(*args)
    line = f"Maximum concurrency for {int(ctx):,} tokens per request: {logged}"
    assert line in vllm["engine"]["logged_lines"]
    assert f"{vllm['contexts'][0]['max_concurrency']:.2f}x" == logged
    assert not vllm["engine"]["refuses_to_start"]
    before = estimate(*args, "--engine", "ideal")
    assert f"{before['contexts'][0]['max_concurrency']:.2f}x" == ideal
    assert before["engine"]["name"] == "ideal" and before["engine"]["logged_lines"] == []


@pytest.mark.parametrize(
    ("model", "ctx", "mem", "dtype", "needed", "estimated"),
    [
        # mistral: 32 layers x 64 KiB pages x 769 blocks = 1.50 GiB, printed "1.5" (format_gib,
        # v0.14 on); 1 GiB = 512 blocks:
        # cdiv(min(4,095 + 8,192, L), 16) + 1 <= 512 -> L <= 511 x 16 = 8,176.
        pytest.param("mistral-7b-v0.1", "32768", "1GiB", "bf16", "1.5", 8176, id="mistral-1GiB"),
        # gemma-3 fp8: 10 slots x 64 KiB x (6 x 577 + 8,192) = 7.11 GiB; 6 GiB = 9,830 blocks:
        # 3,462 + cdiv(L, 16) <= 9,830 -> L <= 6,368 x 16 = 101,888.
        pytest.param("gemma-3-27b", "131072", "6GiB", "fp8", "7.11", 101888, id="gemma3-fp8-6GiB"),
    ],
)
def test_vllm_refuses_to_start(
    model: str, ctx: str, mem: str, dtype: str, needed: str, estimated: int
) -> None:
    """Where the ideal bytes fit, vLLM's start-up check refuses: its message and numbers."""
    data = estimate("-m", model, "--context", ctx, "--kv-memory", mem, "--kv-dtype", dtype)
    e = data["engine"]
    assert e["refuses_to_start"] and e["max_concurrency"] is None
    assert f"({needed} GiB KV cache is needed" in e["refusal"]
    assert f"estimated maximum model length is {estimated}." in e["refusal"]
    assert "decreasing `max_model_len`" in e["refusal"]
    assert data["contexts"][0]["fits"] is False
    assert data["gpu"]["largest_context"] == estimated
    assert estimate("-m", model, "--context", ctx, "--kv-memory", mem, "--kv-dtype", dtype,
                    "--engine", "ideal")["contexts"][0]["fits"] is True


def test_refusal_in_the_table() -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "mistral-7b-v0.1", "--kv-memory",
                                 "1GiB"])
    assert result.exit_code == 0, result.output
    assert "vLLM refuses to start (lower --max-model-len" in result.output
    assert "Available KV cache memory: 1.0 GiB" in result.output  # format_gib (v0.14 on)


# --- vLLM's own unit-test expectations ----------------------------------------------------

def test_vllm_get_max_concurrency_for_kv_cache_config() -> None:
    """tests/v1/core/test_kv_cache_utils.py: Qwen1.5-7B shape (32 layers, 32 kv heads x 128,
    fp16), max_model_len 16,384, max_num_batched_tokens 1,024, block 16.

    page = 16 x 2 x 32 x 128 x 2 B = 262,144 B per layer; a block id spans 32 layers.
    (a) full: num_blocks 1,536 / cdiv(16,384, 16) = 1,024 -> 1.5
    (b) sliding 1,024: cdiv(min(1,023 + 1,024, 16,384), 16) + 1 = 129 blocks; 387 -> 3
    (c) 32 full + 32 sliding, two groups of 32: (1,024 + 129) x 3 blocks -> 3
    """
    page = 262_144
    cases = [
        (["full"] * 32, 1536, 1.5),
        (["sliding"] * 32, 129 * 3, 3.0),
        (["full"] * 32 + ["sliding"] * 32, (1024 + 129) * 3, 3.0),
    ]
    for kinds, blocks, expected in cases:
        layout = kv_layout(toy(kinds, window=1024, heads=32, head_dim=128), "fp16")
        plan = plan_vllm(layout, available=blocks * page * 32, max_num_batched_tokens=1024)
        assert plan.num_blocks == blocks
        assert plan.max_concurrency(16384) == expected


@pytest.mark.parametrize(("max_model_len", "estimated"), [(16385, 16384), (16383, 16383)])
def test_vllm_estimate_max_model_len(max_model_len: int, estimated: int) -> None:
    """test_estimate_max_model_len: 32 full layers of 32 x 128 fp16 need 512 KiB per token;
    8 GiB holds 16,384 tokens, so a max_model_len of 16,385 is refused with that estimate."""
    layout = kv_layout(toy(["full"] * 32, heads=32, head_dim=128), "fp16")
    plan = plan_vllm(layout, available=8 * GiB, max_num_batched_tokens=32768)
    report = plan.report(max_model_len)
    if max_model_len > estimated:
        assert report.refusal and f"maximum model length is {estimated}." in report.refusal
    else:
        assert not report.refuses_to_start
    assert plan.largest_context(1, max_model_len) == estimated


M = 16 * 2 * 64 * 4 * 2  # vLLM's mem_per_block_per_layer in test_get_kv_cache_config_one_worker


@pytest.mark.parametrize(
    ("kinds", "available", "hybrid", "blocks", "groups"),
    [
        pytest.param(["full"] * 2, M * 2 * 32, True, 32, [("full", (0, 1))], id="full"),
        pytest.param(["sliding"] * 2, M * 2 * 32, True, 32, [("sliding", (0, 1))], id="sliding"),
        pytest.param(["full", "sliding"], M * 2 * 32, False, 32, [("full", (0, 1))],
                     id="hybrid-manager-off"),
        pytest.param(["full", "sliding"], M * 2 * 32, True, 64,
                     [("full", (0,)), ("sliding", (1,))], id="one-plus-one"),
        pytest.param(["full"] * 2 + ["sliding"] * 4, M * 2 * 32, True, 32,
                     [("full", (0, 1)), ("sliding", (2, 4)), ("sliding", (3, 5))], id="2-full-4-sw"),
        # 3 full + 7 sliding pad to 3 + 9: the sliding layers go layers[i::3].
        pytest.param(["full"] * 3 + ["sliding"] * 7, M * 3 * 32, True, 32,
                     [("full", (0, 1, 2)), ("sliding", (3, 6, 9)), ("sliding", (4, 7)),
                      ("sliding", (5, 8))], id="3-full-7-sw"),
        # 6 full + 5 sliding: 6 < 1.5 x 5, so one group of each, the sliding one padded.
        pytest.param(["full"] * 6 + ["sliding"] * 5, M * 6 * 32, True, 32,
                     [("full", (0, 1, 2, 3, 4, 5)), ("sliding", (6, 7, 8, 9, 10))],
                     id="gpt-oss-eagle"),
    ],
)
def test_vllm_kv_cache_groups(
    kinds: list[str], available: int, hybrid: bool, blocks: int,
    groups: list[tuple[str, tuple[int, ...]]],
) -> None:
    """test_get_kv_cache_config_one_worker, group by group."""
    plan = plan_vllm(kv_layout(toy(kinds), "fp32"), available=available, hybrid_manager=hybrid)
    assert plan.page_bytes == M
    assert [(g.spec.kind, g.layers) for g in plan.groups] == groups
    assert plan.num_blocks == blocks


# --- Worked examples, one per layer kind ---------------------------------------------------

def test_vllm_full_attention_llama() -> None:
    """Llama-3.1-8B, 20 GiB: page 16 x 8 x 128 x 2 x 2 = 65,536 B, 32 layers;
    num_blocks = 21,474,836,480 // 65,536 // 32 = 10,240 -> 163,840 tokens;
    8,192-token requests: 10,240 / 512 = 20.00x (both token formulas agree: 163,840)."""
    data = estimate("-m", "llama-3.1-8b", "--context", "8192", "--kv-memory", "20GiB")
    e = data["engine"]
    assert e["num_blocks"] == 10_240 and e["groups"][0]["page_bytes"] == 65_536
    assert e["logged_lines"] == [
        "Available KV cache memory: 20.0 GiB",  # format_gib: str(round(x, 2))
        "GPU KV cache size: 163,840 tokens",
        "Maximum concurrency for 8,192 tokens per request: 20.00x",
    ]


def test_vllm_sliding_reserve_uses_max_num_batched_tokens() -> None:
    """Mistral-7B at 32,768, 20 GiB = 10,240 blocks. A sliding request holds
    cdiv(min(4,095 + B, 32,768), 16) + 1 blocks: B = 8,192 -> 769 (13.32x),
    B = 2,048 -> 385 (26.60x)."""
    base = ["-m", "mistral-7b-v0.1", "--kv-memory", "20GiB"]
    assert estimate(*base)["engine"]["blocks_per_request"] == 769
    small = estimate(*base, "--max-num-batched-tokens", "2048")
    assert small["engine"]["blocks_per_request"] == 385
    assert small["engine"]["max_num_batched_tokens_source"] == "max_num_batched_tokens given"
    assert f"{small['contexts'][0]['max_concurrency']:.2f}" == "26.60"


def test_vllm_hybrid_padding_gemma3() -> None:
    """Gemma-3-27B: 52 sliding + 10 full layers -> group size 10, 6 sliding groups (52 layers
    in 60 slots: four of 9 layers, two of 8) + 1 full; 20 GiB bf16 = 16,384 blocks;
    GPU KV cache size 16,384 // 7 x 16 = 37,440 (v0.20) and int(1.4059 x 131,072) = 184,270."""
    data = estimate("-m", "gemma-3-27b", "--kv-memory", "20GiB")
    e = data["engine"]
    assert [g["kind"] for g in e["groups"]] == ["sliding"] * 6 + ["full"]
    assert sum(g["layers"] for g in e["groups"]) == 62
    assert sum(g["padding"] for g in e["groups"]) == 8 and e["group_size"] == 10
    assert e["logged_tokens"] == {"v0.20_and_earlier": 37_440, "v0.21_and_later": 184_270}
    assert data["gpu"]["page_bytes"] == 131_072 * 10


def test_vllm_no_hybrid_manager_is_every_layer_full() -> None:
    """--no-hybrid-manager: the 52 sliding layers keep the whole context, one group of 62:
    num_blocks = 20 GiB // 131,072 // 62 = 2,642; 131,072 tokens need 8,192 -> 0.32x."""
    e = estimate("-m", "gemma-3-27b", "--kv-memory", "20GiB", "--no-hybrid-manager")["engine"]
    assert e["hybrid_manager"] is False and len(e["groups"]) == 1
    assert e["num_blocks"] == 2642 and e["refuses_to_start"]
    alias = estimate("-m", "gemma-3-27b", "--kv-memory", "20GiB",
                     "--disable-hybrid-kv-cache-manager")["engine"]
    assert alias["num_blocks"] == 2642


@pytest.mark.parametrize(
    ("gpu", "block"),
    [pytest.param("H100", 16, id="hopper-flashattn-mla"),
     pytest.param("B200", 32, id="blackwell-flashinfer-mla"),
     pytest.param("A100-80GB", 16, id="ampere-triton")],
)
def test_vllm_mla_block_sizes(gpu: str, block: int) -> None:
    """DeepSeek-V3, bf16 cache, vLLM v0.21: the block of the selected MLA backend (PR #35122):
    FlashAttention MLA keeps 16 on Hopper, FlashInfer MLA's smallest kernel block is 32 on
    Blackwell, Triton MLA on Ampere keeps 16. A page is block x 576 x 2 B per layer."""
    data = estimate("-m", "deepseek-v3", "--context", "32k", "--gpu", gpu, "--kv-memory", "20GiB")
    e = data["engine"]
    assert e["block_size"] == data["block_size"] == block
    assert e["groups"][0]["page_bytes"] == block * 1152
    assert e["num_blocks"] == 20 * GiB // (block * 1152) // 61


def test_vllm_mla_block_size_kept_when_a_multiple() -> None:
    e = estimate("-m", "deepseek-v3", "--gpu", "H100", "--kv-memory", "20GiB",
                 "--block-size", "128")["engine"]
    assert e["block_size"] == 128 and e["block_size_reason"].startswith("128 (")


@pytest.mark.parametrize(
    ("dtype", "args", "block"),
    [
        # bf16: attention 2 x 2 x 256 x 2 = 2,048 B/token; state 548,864 x 2 = 1,097,728 B;
        # 16 x cdiv(1,097,728, 16 x 2,048) = 16 x 34 = 544.
        pytest.param("bf16", [], 544, id="bf16"),
        # fp8 attention halves the page per token (1,024 B), the bf16 state stays: 16 x 67.
        pytest.param("fp8", [], 1072, id="fp8"),
        # Blackwell, head_dim 256: steps of 16 again from v0.18, 16 x 34 = 544 (v0.12 to v0.17
        # stepped in 32: 32 x cdiv(1,097,728, 65,536) = 32 x 17 = 544 too).
        pytest.param("bf16", ["--gpu", "B200"], 544, id="blackwell"),
        # A larger block given is kept; the state page is padded to it.
        pytest.param("bf16", ["--block-size", "1024"], 1024, id="given-larger"),
    ],
)
def test_vllm_linear_hybrid_raises_attention_block(dtype: str, args: list[str], block: int) -> None:
    """Qwen3-Next: 36 Gated DeltaNet + 12 full layers -> 3 mamba groups + 1 full of 12."""
    e = estimate("-m", "qwen3-next-80b-a3b", "--kv-dtype", dtype, *args, "--kv-memory", "20GiB")
    e = e["engine"]
    assert e["block_size"] == block
    assert [g["kind"] for g in e["groups"]] == ["mamba"] * 3 + ["full"]
    per_token = 1024 if dtype == "fp8" else 2048
    assert {g["page_bytes"] for g in e["groups"]} == {block * per_token}


def test_vllm_qwen3_next_concurrency() -> None:
    """bf16, 20 GiB, 262,144 tokens: page 544 x 2,048 = 1,114,112 B; num_blocks =
    21,474,836,480 // 1,114,112 // 12 = 1,606; a request holds cdiv(262,144, 544) = 482 full
    blocks + 1 per mamba group = 485 -> 3.31x; GPU KV cache size 1,606 // 4 x 544 = 218,144."""
    e = estimate("-m", "qwen3-next-80b-a3b", "--kv-memory", "20GiB")["engine"]
    assert e["num_blocks"] == 1606 and e["blocks_per_request"] == 485
    assert "Maximum concurrency for 262,144 tokens per request: 3.31x" in e["logged_lines"]
    assert e["logged_tokens"]["v0.20_and_earlier"] == 218_144


def test_vllm_pipeline_parallel_stages() -> None:
    """Llama-3.1-70B, --pp 3: 80 layers split [27, 27, 26] (the remainder before the last);
    each stage's pool is its own memory // page // its layers, and every stage takes the
    smallest: 20 GiB // 65,536 // 27 = 12,136 blocks."""
    e = estimate("-m", "llama-3.1-70b", "--kv-memory", "20GiB", "--pipeline-parallel-size", "3",
                 "--context", "8k")["engine"]
    assert e["pipeline_stages"] == [27, 27, 26]
    assert e["num_blocks"] == 20 * GiB // 65_536 // 27 == 12_136


def test_pp_with_hybrid_groups_projects_each_stage() -> None:
    """Gemma-3 on 2 stages (31 + 31 layers): every stage keeps all 7 global groups but only
    its own layers; stage 0 holds 5 of the full group's 10 layers but 6 of some sliding group's
    9, so each stage's group size is <= 10 and num_blocks >= the one-GPU figure."""
    one = estimate("-m", "gemma-3-27b", "--kv-memory", "20GiB")["engine"]
    two = estimate("-m", "gemma-3-27b", "--kv-memory", "20GiB", "--pp", "2")["engine"]
    assert two["pipeline_stages"] == [31, 31] and len(two["groups"]) == 7
    assert two["num_blocks"] >= one["num_blocks"]


def test_max_num_batched_tokens_defaults_by_gpu() -> None:
    """vllm serve: 8,192 on GPUs of 70 GiB or more other than A100 (H100), 2,048 below (L4)
    and on A100s (arg_utils.py get_batch_defaults)."""
    assert default_max_num_batched_tokens("H100-80GB", 80 * GiB)[0] == 8192
    assert default_max_num_batched_tokens("A100-80GB", 80 * GiB)[0] == 2048
    assert default_max_num_batched_tokens("L4", 24 * 10**9)[0] == 2048
    assert default_max_num_batched_tokens(None, None)[0] == 8192
    e = estimate("-m", "gemma-2-9b", "--gpu", "A100-80GB")["engine"]
    assert e["max_num_batched_tokens"] == 2048 and "A100" in e["max_num_batched_tokens_source"]


# --- SGLang ---------------------------------------------------------------------------------

def test_sglang_full_attention_token_pool() -> None:
    """Llama-3.1-8B with a 20 GiB pool: cell = 8 x 128 x 2 x 32 x 2 = 131,072 B;
    max_total_num_tokens = 21,474,836,480 // 131,072 = 163,840 (page 1); K = V =
    (163,840 + 1) x 65,536 B / 2^30 = 10.00 GB; the dtype in the line from v0.5.13."""
    e = estimate("-m", "llama-3.1-8b", "--kv-memory", "20GiB", "--engine", "sglang",
                 "--context", "8192")["engine"]
    assert e["block_size"] == 1 and e["cache_tokens"] == 163_840
    assert e["logged_lines"] == [
        "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 163840, K size: 10.00 GB, "
        "V size: 10.00 GB",
        "max_total_num_tokens=163840",
    ]
    assert e["max_concurrency"] == 163_840 / 8192


def test_sglang_keeps_gemma_sliding_layers_in_the_full_pool() -> None:
    """Gemma-3 has no SWA pool in SGLang: cell = 62 x 8,192 B = 507,904 B;
    20 GiB // 507,904 = 42,281 tokens; 131,072-token requests: 0.32 at once."""
    e = estimate("-m", "gemma-3-27b", "--kv-memory", "20GiB", "--engine", "sglang")["engine"]
    assert e["cache_tokens"] == 42_281 and e["sliding_layers_in_full_pool"] is True
    assert e["hybrid_swa_pools"] is False


def test_sglang_swa_pools_for_gpt_oss() -> None:
    """gpt-oss-120b, 20 GiB, ratio 0.8 (worked in plan_sglang's docstring): 291,271 tokens
    at 73,728 B, full pool 323,634, SWA pool 258,907; on Blackwell (trtllm_mha) one pool in
    v0.5.8 and v0.5.9, in pages of 64: 291,271 // 64 x 64 = 291,264; from v0.5.10 both pools,
    page-aligned: 323,634 // 64 x 64 = 323,584 and int(0.8 x 323,584) // 64 x 64 = 258,816."""
    e = estimate("-m", "gpt-oss-120b", "--kv-memory", "20GiB", "--engine", "sglang")["engine"]
    assert (e["full_pool_tokens"], e["swa_pool_tokens"]) == (323_634, 258_907)
    assert ("Use sliding window memory pool. full_layer_tokens=323634, swa_layer_tokens=258907"
            in e["logged_lines"])
    half = estimate("-m", "gpt-oss-120b", "--kv-memory", "20GiB", "--engine", "sglang",
                    "--swa-full-tokens-ratio", "0.5")["engine"]
    assert half["full_pool_tokens"] == int(291_271 * 2 / 1.5)
    b200 = estimate("-m", "gpt-oss-120b", "--gpu", "B200", "--kv-memory", "20GiB",
                    "--engine", "sglang@0.5.9")["engine"]
    assert b200["hybrid_swa_pools"] is False and b200["cache_tokens"] == 291_264
    assert b200["block_size"] == 64
    new = estimate("-m", "gpt-oss-120b", "--gpu", "B200", "--kv-memory", "20GiB",
                   "--engine", "sglang")["engine"]
    assert (new["full_pool_tokens"], new["swa_pool_tokens"]) == (323_584, 258_816)


def test_sglang_mla_pool() -> None:
    """DeepSeek-V3: cell (512 + 64) x 61 x 2 = 70,272 B; 20 GiB // 70,272 = 305,595 tokens;
    KV size (305,595 + 1) x 70,272 / 2^30 = 20.00 GB."""
    e = estimate("-m", "deepseek-v3", "--kv-memory", "20GiB", "--engine", "sglang")["engine"]
    assert e["cache_tokens"] == 305_595
    assert e["logged_lines"][0] == ("KV Cache is allocated. dtype: torch.bfloat16, "
                                    "#tokens: 305595, KV size: 20.00 GB")


def test_sglang_mamba_pool() -> None:
    """Qwen3-Next, 20 GiB: state = 36 x (24,576 conv x 2 B + 524,288 SSM x 4 B) = 77,266,944 B
    per request (the conv state bf16, the SSM state float32); mamba pool = 20 GiB x 0.9 / 1.9 //
    state = 131 slots, one the padding slot from v0.5.17 (130 states); the KV pool gets the rest:
    (21,474,836,480 - 131 x 77,266,944) // (12 x 2,048) = 461,949 tokens; 262,144-token
    requests: min(461,949 / 262,144, 130 // 3) = 1.76 at once."""
    e = estimate("-m", "qwen3-next-80b-a3b", "--kv-memory", "20GiB", "--engine", "sglang")["engine"]
    assert e["max_mamba_cache_size"] == 130
    assert e["cache_tokens"] == (20 * GiB - 131 * 77_266_944) // 24_576 == 461_949
    assert e["max_concurrency"] == 461_949 / 262_144
    # MambaPool's line: 131 slots x 36 x 49,152 B = 0.22 GiB, x 2,097,152 B = 9.21 GiB
    assert e["logged_lines"][0] == ("Mamba Cache is allocated. max_mamba_cache_size: 130, "
                                    "conv_state size: 0.22GB, ssm_state size: 9.21GB")


def test_sglang_default_mem_fraction_static() -> None:
    """An 80 GiB GPU = 81,920 MiB, tp 1: chunked prefill 8,192, CUDA graphs up to 256:
    reserved = 512 + 12,288 + 512 + 128 = 13,440 MiB -> (81,920 - 13,440) / 81,920 = 0.836
    (v0.5.9). v0.5.10 adds 8 MiB per prefill CUDA graph, 58 sizes up to 8,192: 13,904 MiB ->
    0.830. The catalog's H100 as nvidia-smi reports it, 81,559 MiB: (81,559 - 13,904) /
    81,559 = 0.830; KV = 85,520,809,984 x 0.83 - 16.06 GB weights."""
    assert default_mem_fraction_static(80 * GiB, 1, 1, Release(0, 5, 9))[0] == 0.836
    assert default_mem_fraction_static(80 * GiB, 1, 1)[0] == 0.83
    assert default_mem_fraction_static(None, 1, 1, Release(0, 5, 19))[0] == 0.88
    data = estimate("-m", "llama-3.1-8b", "--gpu", "H100", "--engine", "sglang")
    assert data["gpu"]["memory_bytes"] == 81_559 * 2**20
    assert data["engine"]["mem_fraction_static"] == 0.83
    assert data["gpu"]["available_kv_bytes"] == int(81_559 * 2**20 * 0.83) - 16_060_000_000


def test_plan_sglang_rejects_a_bad_ratio() -> None:
    with pytest.raises(UsageError, match="swa_full_tokens_ratio"):
        plan_sglang(kv_layout(arch("gpt-oss-120b")), available=GiB, family="gpt-oss",
                    swa_full_tokens_ratio=1.5)


# --- The CLI's surface: aliases, validation, one-line errors ------------------------------

def test_vllm_flag_aliases_match_tokcost_flags() -> None:
    vllm_names = estimate("-m", "llama-3.1-70b", "--max-model-len", "8k", "--kv-cache-dtype", "fp8",
                          "--tensor-parallel-size", "4", "--gpu", "H100",
                          "--gpu-memory-utilization", "0.85", "--block-size", "32")
    ours = estimate("-m", "llama-3.1-70b", "--context", "8k", "--kv-dtype", "fp8", "--tp", "4",
                    "--gpu", "H100", "--gpu-util", "0.85", "--block-size", "32")
    assert vllm_names == ours


def test_kv_cache_dtype_auto_is_the_model_dtype() -> None:
    assert estimate("-m", "llama-3.1-8b", "--kv-cache-dtype", "auto")["kv_dtype"] == "bf16"
    assert estimate("-m", "opt-13b", "--kv-cache-dtype", "auto")["kv_dtype"] == "fp16"


BAD = [
    pytest.param(["-m", "llama-3.1-70b", "--tp", "3"], "--tp 3", id="tp-kv-heads"),
    # 8 kv heads replicate on 16 GPUs, but 64 attention heads do not split 48 ways.
    pytest.param(["-m", "llama-3.1-70b", "--tp", "48"], "64 attention heads", id="tp-heads"),
    pytest.param(["-m", "llama-3.1-8b", "--engine", "vlm"], "did you mean", id="engine"),
    pytest.param(["-m", "llama-3.1-8b", "--pp", "33"], "32 layers", id="pp"),
    pytest.param(["-m", "llama-3.1-8b", "--mem-fraction-static", "0.8", "--gpu", "H100"],
                 "--engine sglang", id="mfs-vllm"),
    pytest.param(["-m", "llama-3.1-8b", "--engine", "sglang", "--max-num-batched-tokens", "2k"],
                 "--engine vllm", id="mnbt-sglang"),
    pytest.param(["-m", "llama-3.1-8b", "--engine", "sglang", "--gpu", "H100", "--gpu-util",
                  "0.8"], "--mem-fraction-static", id="util-sglang"),
    pytest.param(["-m", "qwen3-next-80b-a3b", "--no-hybrid-manager"], "drop --no-hybrid-manager",
                 id="linear-needs-hybrid"),
    pytest.param(["-m", "llama-3.1-8b", "--max-num-batched-tokens", "0"], "positive",
                 id="mnbt-zero"),
    pytest.param(["-m", "llama-3.1-8b", "--engine", "sglang", "--gpu", "H100",
                  "--mem-fraction-static", "1.2"], "(0, 1)", id="mfs-range"),
    pytest.param(["-m", "llama-3.1-8b", "--kv-dtype", "int4", "--kv-group-size", "7"],
                 "--kv-group-size 7 must divide llama-3.1-8b's head_dim 128", id="group-7"),
]


@pytest.mark.parametrize(("engine", "fragment"), [
    ("sglang", "which comes out of the headroom SGLang keeps outside --mem-fraction-static"),
    ("vllm@0.33", "which the --reserve absorbs"),
    ("vllm", "which the margin and the --reserve absorb"),  # v0.34's extensible KV cache
])
def test_driver_memory_note_names_the_engines_headroom(engine: str, fragment: str) -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "gpt-oss-120b", "--gpu", "H100",
                                 "--engine", engine])
    assert result.exit_code == 0, result.output
    assert fragment in result.stderr
    assert engine.startswith("vllm") or "reserve" not in result.stderr  # refused under SGLang


@pytest.mark.parametrize(("args", "fragment"), BAD)
def test_engine_usage_errors_are_one_line(args: list[str], fragment: str) -> None:
    result = runner.invoke(app, ["kvmem", "estimate", *args])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and fragment in lines[0], result.output


def test_table_shows_engine_and_log_lines() -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "gemma-3-27b", "--kv-memory", "20GiB",
                                 "--engine", "vllm@0.21"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "engine vllm: vLLM v0.21 (vllm@0.21); v1 KV cache manager" in out
    assert "6 sliding (52 layers + 8 padding), 1 full (10 layers)" in out
    # One line, the release's formula; the other release's figure in the tag.
    assert ("  GPU KV cache size: 184,270 tokens   (v0.21 on: concurrency x max_model_len; "
            "v0.20: num_blocks // groups x block = 37,440)") in out
    assert "GPU KV cache size: 37,440 tokens" not in out
    assert "  Maximum concurrency for 131,072 tokens per request: 1.41x" in out
    old = runner.invoke(app, ["kvmem", "estimate", "-m", "gemma-3-27b", "--kv-memory", "20GiB",
                              "--engine", "vllm@0.20"]).stdout
    assert "engine vllm: vLLM v0.20 (vllm@0.20); v1 KV cache manager" in old
    assert "  GPU KV cache size: 37,440 tokens   (v0.20: num_blocks // groups x block" in old
    assert "  Maximum concurrency for 131,072 tokens per request: 1.41x" in old
    sg = runner.invoke(app, ["kvmem", "estimate", "-m", "gpt-oss-120b", "--kv-memory", "20GiB",
                             "--engine", "sglang"])
    assert "SGLang logs (max_model_len 131,072):" in sg.stdout
    assert "  max_total_num_tokens=323634" in sg.stdout


@pytest.mark.parametrize("engine", ["ideal", "sglang", "vllm"])
def test_pp_sizes_the_pool_by_the_fullest_stage(engine: str) -> None:
    """Llama-3.1-70B on 3 stages ([27, 27, 26] layers), 20 GiB per GPU: one GPU holds 27 of 80
    layers, so 27 x 4,096 B = 110,592 B per token; a 8,192-token request takes
    8,192 x 110,592 B = 864 MiB on it, and 20 GiB holds 194,180 tokens (SGLang: 20 GiB //
    110,592; vLLM/ideal: 12,136 blocks x 16 = 194,176)."""
    e = estimate("-m", "llama-3.1-70b", "--kv-memory", "20GiB", "--pp", "3", "--context", "8192",
                 "--engine", engine)
    row = e["contexts"][0]
    assert row["paged_sequence_bytes"] == 8192 * 110_592
    assert e["gpu"]["cache_tokens"] == (194_180 if engine == "sglang" else 194_176)
    assert e["per_gpu"] is True and e["pp"] == 3


@pytest.mark.parametrize(("ctx", "refuses"), [("200k", True), ("128Ki", False)])
def test_vllm_refuses_a_max_model_len_past_the_model(ctx: str, refuses: bool) -> None:
    """vLLM's ModelConfig: "User-specified max_model_len ... is greater than the derived
    max_model_len" unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1; the ideal engine sizes it anyway."""
    data = estimate("-m", "llama-3.1-8b", "--context", ctx, "--gpu", "H100")
    e = data["engine"]
    assert e["refuses_to_start"] is refuses
    assert data["contexts"][0]["fits"] is not refuses
    if refuses:
        assert e["refusal"] == ("max_model_len 200,000 is greater than the model's 131,072 "
                                "(set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 to override)")
    ideal = estimate("-m", "llama-3.1-8b", "--context", ctx, "--gpu", "H100", "--engine", "ideal")
    assert ideal["contexts"][0]["fits"] is True


@pytest.mark.parametrize(("ctx", "refuses"), [("200k", True), ("128Ki", False)])
def test_sglang_refuses_a_context_length_past_the_model(ctx: str, refuses: bool) -> None:
    """SGLang's ModelConfig raises "User-specified context_length ... is greater than the
    derived context_length" unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1."""
    data = estimate("-m", "llama-3.1-8b", "--context", ctx, "--gpu", "H100", "--engine", "sglang")
    e = data["engine"]
    assert e["refuses_to_start"] is refuses
    assert data["contexts"][0]["fits"] is not refuses
    if refuses:
        assert e["refusal"] == (
            "Warning: User-specified context_length (200000) is greater than the derived "
            "context_length (131072). This may lead to incorrect model outputs or CUDA errors. "
            "Note that the derived context_length may differ from max_position_embeddings in "
            "the model's config. To allow overriding this maximum, set the env var "
            "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1")


def test_sglang_says_when_its_pool_cannot_hold_one_request() -> None:
    """SGLang starts with any pool; its scheduler caps prompts at max_total_num_tokens - 1
    (max_req_input_len), so a context past the pool gets a note with the knobs (v0.5.9's
    fraction on the L4: 0.837)."""
    res = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--context", "128k",
                              "--gpu", "L4", "--engine", "sglang@0.5.9"])
    assert res.exit_code == 0, res.output
    assert ("note: SGLang starts, but its pool of 31,707 tokens cannot hold one 128,000-token "
            "request (prompts are capped at max_total_num_tokens - 1 = 31,706); give a smaller "
            "context or a larger --mem-fraction-static") in " ".join(res.output.split())
    small = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--context", "8k",
                                "--gpu", "L4", "--engine", "sglang@0.5.9"])
    assert small.exit_code == 0 and "SGLang starts, but" not in small.output
