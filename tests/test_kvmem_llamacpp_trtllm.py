"""The llama.cpp and TensorRT-LLM profiles (issue 28, part 3). Published start-up logs are in
tests/fixtures/engine_logs.yaml (tests/test_engine_logs.py); these pin the rules one by one,
each worked by hand from the source the engine module cites."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from tokcost.catalog import load_catalog
from tokcost.catalog.schema import Architecture
from tokcost.cli.app import app
from tokcost.errors import UsageError
from tokcost.memory.engines.base import Deployment
from tokcost.memory.engines.llamacpp import GGML_TYPES, LlamaCpp, LlamaCppPlan
from tokcost.memory.kv import kv_layout
from tokcost.memory.request import KvRequest

runner = CliRunner()
CATALOG = load_catalog()
MiB, GiB = 2**20, 2**30


def arch(model: str) -> Architecture:
    a = CATALOG.resolve(model).architecture
    assert a is not None
    return a


def estimate(*args: str) -> dict:
    result = runner.invoke(app, ["kvmem", "estimate", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def llama(model: str, **options: object) -> LlamaCppPlan:
    a = arch(model)
    plan, _ = LlamaCpp(**options).plan(Deployment(layout=kv_layout(a), head_dim=a.head_dim))
    return plan


@pytest.mark.parametrize(("ctx", "parallel", "unified", "n_ctx", "n_ctx_seq"), [
    (8192, None, None, 8192, 8192),  # -np auto: 4 slots, one unified cache of -c cells
    (8192, 6, None, 9216, 1536),  # 8192 / 6 = 1365 -> 1536 per slot, n_ctx "rounded" to 9216
    (32768, 10, None, 33280, 3328),  # 3276 -> 3328 per slot
    (8000, 2, True, 8192, 8192),  # -c padded to 256 first
    (1000, 1, None, 1024, 1024),
])
def test_llama_cpp_pads_n_ctx_and_splits_it_per_slot(ctx: int, parallel: int | None,
                                                      unified: bool | None, n_ctx: int,
                                                      n_ctx_seq: int) -> None:
    """llama-context.cpp: n_ctx = pad(-c, 256); unified: n_ctx_seq = n_ctx, else
    pad(n_ctx / n_seq_max, 256) and n_ctx = n_ctx_seq x n_seq_max."""
    plan = llama("llama-3.1-8b", parallel=parallel, kv_unified=unified)
    got = plan.layout(ctx)
    assert got[:2] == (n_ctx, n_ctx_seq)
    # one K and one V row of 8 x 128 f16 per cell and layer, over every stream
    assert plan.kv_bytes(ctx) == n_ctx * 32 * 2 * 1024 * 2


@pytest.mark.parametrize(("options", "swa_cells"), [
    ({}, 1024),  # unified, 4 slots: pad(128 x 4 + 512, 256)
    ({"parallel": 1}, 768),  # pad(128 + 512, 256)
    ({"parallel": 2, "kv_unified": False}, 768),  # per stream: the window of one sequence
    ({"swa_full": True}, 32768),
    ({"ubatch_size": 2048}, 2560),
])
def test_llama_cpp_swa_cache_holds_the_windows_and_a_ubatch(options: dict[str, object],
                                                            swa_cells: int) -> None:
    """llama-kv-cache-iswa.cpp: pad(min(size_base, n_swa x (unified ? n_seq : 1) + n_ubatch),
    256), or the whole context with --swa-full."""
    plan = llama("gpt-oss-120b", **options)
    lines = plan.lines(32768)
    assert lines[2] == f"llama_kv_cache_iswa: creating     SWA KV cache, size = {swa_cells} cells"
    assert lines[0].startswith("llama_kv_cache_iswa: creating non-SWA KV cache, size = ")


def test_llama_cpp_line_for_llama_8b_q8_0() -> None:
    """q8_0: 34 B per 32 values, a 1,024-value row is 1,088 B; 8,192 cells x 32 layers x
    1,088 B = 272 MiB for K; q4_0 V: 576 B a row, 144 MiB."""
    plan = llama("llama-3.1-8b", parallel=1, cache_type_k="q8_0", cache_type_v="q4_0")
    assert plan.lines(8192) == [
        "llama_kv_cache: size =  416.00 MiB (  8192 cells,  32 layers,  1/1 seqs), "
        "K (q8_0):  272.00 MiB, V (q4_0):  144.00 MiB"]


@given(head_dim=st.sampled_from([64, 96, 128, 256]), heads=st.integers(1, 16),
       cells=st.integers(1, 4096), ggml=st.sampled_from(sorted(GGML_TYPES)))
def test_a_quantized_row_is_its_blocks(head_dim: int, heads: int, cells: int, ggml: str) -> None:
    """Every allowed type: a row of n values is n / block blocks of its bytes, so a cache of
    any shape is the f16 one scaled by bytes per block / (2 x block)."""
    block, size = GGML_TYPES[ggml]
    a = Architecture(layers=2, attention_heads=heads, kv_heads=heads, head_dim=head_dim)
    plan, _ = LlamaCpp(parallel=1, cache_type_k=ggml, cache_type_v="f16").plan(
        Deployment(layout=kv_layout(a), head_dim=head_dim))
    n_ctx = math.ceil(cells / 256) * 256
    k = plan.kv_bytes(cells) - n_ctx * 2 * heads * head_dim * 2
    assert k * 2 * block == n_ctx * 2 * heads * head_dim * 2 * size


def test_llama_cpp_on_a_gpu_refuses_a_cache_past_its_memory() -> None:
    """Llama-3.1-8B on an L4 (22.49 GiB): 14.96 GiB weights + 2 GiB reserve leave 5.54 GiB;
    -c 32k is 4 GiB of cells, -c 64k 8 GiB: cudaMalloc fails at start-up."""
    ok = estimate("-m", "llama-3.1-8b", "--gpu", "L4", "--engine", "llama.cpp", "--context",
                  "32768")
    assert ok["engine"]["refuses_to_start"] is False
    assert ok["contexts"][0]["fits"] is True and ok["contexts"][0]["max_concurrency"] == 1.0
    big = estimate("-m", "llama-3.1-8b", "--gpu", "L4", "--engine", "llama.cpp", "--context",
                   "65536")
    # -fit on (the default) starts with layers on the host instead: the refusal is -fit off's
    assert big["engine"]["refusal"].startswith(
        "with -fit off, failed to allocate buffer for kv cache: 8 GiB")
    assert big["engine"]["refusal"].endswith("moved to host memory instead (see the -fit note)")
    off = estimate("-m", "llama-3.1-8b", "--gpu", "L4", "--engine", "llama.cpp", "--context",
                   "65536", "--no-fit")
    assert off["engine"]["refusal"] == ("failed to allocate buffer for kv cache: 8 GiB of cells, "
                                        "5.54 GiB left after the weights and the reserve")
    assert big["contexts"][0]["fits"] is False


def test_llama_cpp_separate_slots_each_get_the_context() -> None:
    """-np 4 without -kvu: each slot its own stream of the context, so -c is 4 x 32,768 =
    131,072 cells (16 GiB) and 4 requests run at once; unified, the 4 slots share 32,768."""
    e = estimate("-m", "llama-3.1-8b", "--gpu", "H100", "--engine", "llama.cpp", "-np", "4",
                 "--context", "32768")
    assert e["engine"]["n_ctx"] == 131_072 and e["engine"]["n_ctx_seq"] == 32_768
    assert e["engine"]["logged_lines"][0].startswith(
        "llama_kv_cache: size = 16384.00 MiB ( 32768 cells,  32 layers,  4/4 seqs)")
    assert e["contexts"][0]["max_concurrency"] == 4.0
    shared = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--gpu", "H100",
                                 "--engine", "llama.cpp", "--context", "32768", "--batch", "2"])
    assert "-c 32,768: n_ctx 32,768, 4 slots (-np auto: 4, unified)" in shared.stdout
    assert "the 4 slots share one cache of -c cells" in shared.output
    assert "--no-kv-unified" in shared.output


@pytest.mark.parametrize(("args", "message"), [
    (["--kv-dtype", "fp8"], "--kv-dtype is not llama.cpp's: its cells take --cache-type-k"),
    (["-ctk", "q9_0"], "unknown --cache-type-k 'q9_0'"),
    (["--tp", "2"], "--tp is not llama.cpp's"),
    (["-m", "deepseek-v3"], "llama.cpp's MLA cache is not modelled"),
])
def test_llama_cpp_refuses_what_it_does_not_read(args: list[str], message: str) -> None:
    model = [] if "-m" in args else ["-m", "llama-3.1-8b"]
    result = runner.invoke(app, ["kvmem", "estimate", *model, "--engine", "llama.cpp", *args])
    assert result.exit_code == 2 and message in result.output, result.output
    assert "Traceback" not in result.output


def test_another_engines_options_are_refused() -> None:
    with pytest.raises(UsageError, match="parallel.* is llama.cpp's setting"):
        KvRequest.of(model="llama-3.1-8b", parallel=2)
    with pytest.raises(UsageError, match="tokens_per_block.* is TensorRT-LLM's setting"):
        KvRequest.of(model="llama-3.1-8b", engine="llama.cpp", tokens_per_block=64)


def test_trtllm_pool_is_the_fraction_of_what_the_profile_leaves() -> None:
    """H100 (85,520,809,984 B) - 16,060,000,000 B weights - 2 GiB reserve = 67,313,326,336 B;
    x 0.9 = 60,581,993,702 B; // 131,072 B per token = 462,203 tokens -> ceil(/ 32) = 14,444
    blocks = 462,208 tokens (KvCacheCreator, then whole blocks)."""
    e = estimate("-m", "llama-3.1-8b", "--gpu", "H100", "--engine", "trtllm", "--context", "8k")
    gpu = e["gpu"]
    avail = int((gpu["memory_bytes"] - gpu["weights_bytes"] - gpu["reserve_bytes"]) * 0.9)
    assert gpu["available_kv_bytes"] == avail and gpu["gpu_util"] == 0.9
    blocks = -(-(avail // 131_072) // 32)
    assert gpu["num_blocks"] == e["engine"]["num_blocks"] == blocks
    assert e["engine"]["cache_tokens"] == blocks * 32
    assert e["contexts"][0]["max_concurrency"] == pytest.approx(blocks / 250)
    assert e["engine"]["logged_lines"][2] == (
        f"[TensorRT-LLM][INFO] [MemUsageChange] Allocated {blocks * 32 * 131_072 / GiB:.2f} GiB "
        f"for max tokens in paged KV cache ({blocks * 32}).")


def test_trtllm_cuts_a_window_longer_than_its_pool() -> None:
    """gpt-oss-120b with 5.95 GiB (1.1.0rc3's DGX Spark log): 2,708 blocks of 32 hold 86,656
    tokens, so the 131,072-token window and max_seq_len are cut to 86,656 before the pool's
    line; a window that fits is left alone."""
    e = estimate("-m", "gpt-oss-120b", "--kv-memory", "5.95GiB", "--engine", "trtllm",
                 "--context", "131072")
    assert e["engine"]["logged_lines"][:3] == [
        "[TRT-LLM] [W] Attention window size 131072 exceeds upper bound 86656 for available "
        "blocks. Reducing to 86656.",
        "[TRT-LLM] [W] Adjusted max_seq_len to 86656",
        "[TensorRT-LLM][INFO] Max KV cache blocks per sequence: 2708 [window size=86656], tokens "
        "per block=32, primary blocks=2708, secondary blocks=0"]
    short = estimate("-m", "gpt-oss-120b", "--kv-memory", "5.95GiB", "--engine", "trtllm",
                     "--context", "86656")
    assert short["engine"]["logged_lines"][0].startswith(
        "[TensorRT-LLM][INFO] Max KV cache blocks per sequence: 2708 [window size=86656]")


def test_trtllm_options_and_mla() -> None:
    """DeepSeek-V3 at TP 8: the 576-value latent in every layer, 61 x 576 x 2 B = 70,272 B per
    token on each GPU; 10 GiB in blocks of 64: ceil((10 GiB // 70,272) / 64) = 2,388."""
    e = estimate("-m", "deepseek-v3", "--kv-memory", "10GiB", "--tp", "8", "--engine", "trtllm",
                 "--tokens-per-block", "64", "--context", "32k")
    assert e["engine"]["kv_bytes_per_token"] == 70_272
    assert e["engine"]["num_blocks"] == -(-(10 * GiB // 70_272) // 64) == 2_388
    assert e["contexts"][0]["engine_blocks_per_request"] == 500



def test_trtllm_says_it_does_not_model_the_dsa_indexer() -> None:
    """DeepSeek-V3.2 on --engine trtllm: the indexer keys are vLLM's 132 B a layer (128 fp8 +
    a float32 scale), 61 x (1,152 + 132) = 78,324 B. TensorRT-LLM's DSACacheManager (main,
    get_cache_size_per_token) keeps index_head_dim + index_head_dim // 128 x 4 = 128 + 4 = 132
    values at the cache dtype: 264 B in bf16, 132 B in fp8; tokcost says so (and that the model
    came to main after 1.2.0rc0, PR #8405) without modelling it. V3 has no indexer and no note."""
    args = ["--kv-memory", "10GiB", "--tp", "8", "--engine", "trtllm", "--context", "8k"]
    e = estimate("-m", "deepseek-v3.2-exp", *args)
    assert e["engine"]["kv_bytes_per_token"] == 61 * (576 * 2 + 132) == 78_324
    dsa = [n for n in e["notes"] if "DSA cache manager" in n]
    assert len(dsa) == 1 and "(132 B a layer" in dsa[0] and "(264 B here" in dsa[0]
    assert "PR #8405" in dsa[0]
    fp8 = estimate("-m", "deepseek-v3.2-exp", *args, "--kv-dtype", "fp8")
    assert fp8["engine"]["kv_bytes_per_token"] == 61 * (576 + 132) == 43_188
    assert any("(132 B here" in n for n in fp8["notes"] if "DSA cache manager" in n)
    assert not any("DSA cache manager" in n for n in estimate("-m", "deepseek-v3", *args)["notes"])

@pytest.mark.parametrize(("args", "message"), [
    (["--gpu", "H100", "--gpu-util", "0.8"], "--gpu-util is not TensorRT-LLM's"),
    (["--gpu", "H100", "--block-size", "64"], "--block-size is not TensorRT-LLM's"),
    (["--free-gpu-memory-fraction", "1.5", "--gpu", "H100"],
     "--free-gpu-memory-fraction must be in (0, 1]"),
    (["-m", "qwen3-next-80b-a3b"], "TensorRT-LLM's Mamba cache manager is not modelled"),
    (["-m", "nemotron-h-56b"], "could not be read at a release"),
])
def test_trtllm_refuses_what_it_does_not_read(args: list[str], message: str) -> None:
    model = [] if "-m" in args else ["-m", "llama-3.1-8b"]
    result = runner.invoke(app, ["kvmem", "estimate", *model, "--engine", "trtllm", *args])
    assert result.exit_code == 2 and message in result.output, result.output


def test_llama_cpp_caches_every_token_of_a_model_of_only_sliding_layers() -> None:
    """Mistral-7B-v0.1's 4,096-token window: llama.cpp's llama architecture reads no sliding
    window, so its 32 layers cache the whole context in one cache (no iSWA lines)."""
    plan = llama("mistral-7b-v0.1", parallel=1)
    assert plan.lines(32768) == [
        "llama_kv_cache: size = 4096.00 MiB ( 32768 cells,  32 layers,  1/1 seqs), "
        "K (f16): 2048.00 MiB, V (f16): 2048.00 MiB"]
    assert plan.request_bytes(32768) == 32768 * 32 * 2 * 1024 * 2


def test_llama_cpp_slots_are_bounded() -> None:
    """LLAMA_MAX_SEQ (256): llama_context refuses more sequences; tokcost refuses them too."""
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--engine",
                                 "llama.cpp", "-np", "100000"])
    assert result.exit_code == 2
    assert "--parallel must be an integer from 1 to 256, got 100000" in result.output


def test_llama_cpp_largest_context_shares_the_cells_among_the_batch() -> None:
    """Unified, 4 requests at once need -c = 4 x context: the largest n with pad(4n, 256)
    cells of 128 KiB in the 62.69 GiB left on an H100; more requests than slots, none."""
    e = estimate("-m", "llama-3.1-8b", "--gpu", "H100", "--engine", "llama.cpp", "--batch", "4",
                 "--context", "32k")
    free = e["gpu"]["available_kv_bytes"]
    n = free // (4 * 131_072)
    while math.ceil(4 * n / 256) * 256 * 131_072 > free:
        n -= 1
    assert e["gpu"]["largest_context"] == n == 128_384
    assert estimate("-m", "llama-3.1-8b", "--gpu", "H100", "--engine", "llama.cpp", "--batch",
                    "5")["gpu"]["largest_context"] == 0


def test_trtllm_follows_1_1_and_rounds_the_pool_up_to_whole_blocks() -> None:
    """TensorRT-LLM 1.1's KVCacheManager.calculate_max_num_blocks: ``math.ceil(max_tokens /
    tokens_per_block)`` (resource_manager.py). Llama-3.1-8B, 131,072 B a token: a budget of
    100 tokens and 5 bytes is max_tokens = 100, ceil(100 / 32) = 4 blocks = 128 tokens (main's
    ``int(100 // 32)`` would be 3 = 96; not tied to a release, not followed)."""
    e = estimate("-m", "llama-3.1-8b", "--kv-memory", str(100 * 131_072 + 5), "--engine",
                 "trtllm", "--context", "64")
    assert e["engine"]["num_blocks"] == 4 and e["engine"]["cache_tokens"] == 128
    assert e["engine"]["version"] == "TensorRT-LLM 1.1 KV cache manager (PyTorch backend)"
    assert e["engine"]["tokens_per_block"] == 32  # KvCacheConfig.tokens_per_block, 1.0 to 1.2
    assert e["engine"]["free_gpu_memory_fraction"] is None  # --kv-memory replaces the budget


def test_llama_cpp_names_its_builds_and_the_fit_it_does_not_model() -> None:
    """The builds whose logs reproduce (b8643, b10107) are in the version line; on a GPU the
    note says the refusal is -fit off's (llama-server's default -fit on, PR #16653, moves
    layers to host memory instead)."""
    e = estimate("-m", "llama-3.1-8b", "--gpu", "L4", "--engine", "llama.cpp", "--context",
                 "65536")
    assert e["engine"]["version"].startswith("llama.cpp b8643 to b10481: ")
    assert e["engine"]["refuses_to_start"] is True
    text = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--gpu", "L4",
                               "--engine", "llama.cpp", "--context", "65536"]).output
    assert "refused as with -fit off" in text and "PR #16653" in text


def test_llamacpp_nemotron_h_recurrent_line_counts_n_layer() -> None:
    """Nemotron-3-Nano (52 layers: 23 Mamba2, 23 MoE, 6 attention): llama.cpp's layer filters
    keep 6 attention layers in the KV cache (its line prints layers.size()) and 23 Mamba ones in
    the recurrent cache, whose line prints n_layer, 52. The state: 23 x (18,432 + 524,288) f32
    = 49,930,240 B = 47.62 MiB for one sequence, R 23 x 18,432 x 4 B = 1.62 MiB, S 46.00 MiB;
    -c 4096: 4,096 x 6 x 2 x 2 x 128 x 2 B = 24 MiB."""
    from tokcost.catalog.hf_config import architecture_from_config
    from tokcost.memory.engines.base import Deployment
    from tokcost.memory.engines.llamacpp import LlamaCpp
    from tokcost.memory.kv import kv_layout
    config = {"model_type": "nemotron_h", "hidden_size": 2688, "num_hidden_layers": 52,
              "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
              "mamba_num_heads": 64, "mamba_head_dim": 64, "ssm_state_size": 128,
              "n_groups": 8, "conv_kernel": 4, "num_attention_heads": 32,
              "num_key_value_heads": 2, "head_dim": 128}
    arch = architecture_from_config(config, where="config.json")
    plan, _ = LlamaCpp(parallel=1).plan(Deployment(layout=kv_layout(arch), head_dim=128))
    kv, state = plan.lines(4096)
    assert kv.startswith("llama_kv_cache: size =   24.00 MiB (  4096 cells,   6 layers,  1/1 seqs)")
    assert state == ("llama_memory_recurrent: size =   47.62 MiB (     1 cells,  52 layers,  "
                     "1 seqs), R (f32):    1.62 MiB, S (f32):   46.00 MiB")


def test_llamacpp_state_all_f32_when_the_ssm_part_is_already_float32() -> None:
    """Qwen3.6-35B-A3B's config keeps its SSM state in float32 for vLLM (mamba_ssm_dtype), so the
    layout's state is 24,576 x 2 + 524,288 x 4 B; llama.cpp's R and S are f32 whatever the
    config: 30 layers x 24,576 x 4 B = 2.81 MiB, x 524,288 x 4 B = 60.00 MiB (not 120)."""
    import json
    from pathlib import Path

    from tokcost.catalog.hf_config import architecture_from_config
    from tokcost.memory.engines.base import Deployment
    from tokcost.memory.engines.llamacpp import LlamaCpp
    from tokcost.memory.kv import kv_layout
    config = json.loads((Path(__file__).parent / "fixtures" / "hf_configs_families" /
                         "qwen3.6-35b-a3b" / "config.json").read_text())
    arch = architecture_from_config(config, where="config.json")
    layout = kv_layout(arch)
    assert layout.state_bytes == 24_576 * 2 + 524_288 * 4
    plan, _ = LlamaCpp(parallel=1).plan(Deployment(layout=layout, head_dim=arch.head_dim))
    assert plan.state_bytes == (24_576 + 524_288) * 4
    assert plan.lines(4096)[1] == ("llama_memory_recurrent: size =   62.81 MiB (     1 cells,  40 "
                                   "layers,  1 seqs), R (f32):    2.81 MiB, S (f32):   60.00 MiB")
