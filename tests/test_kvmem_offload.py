"""``kvmem estimate --cpu-offload SIZE``: the host tier vLLM's native offloading or LMCache holds,
beside an unchanged GPU tier (tokcost/memory/offload.py).

The oracles are the engines' own formulas, written here from their variables:
vllm/v1/kv_offload/cpu/spec.py ``num_blocks = cpu_bytes_to_use // (page_size_bytes x
len(kv_cache_tensors) x world_size x block_size_factor)``, with ``cpu_bytes_to_use =
kv_offloading_size x 2**30`` (vllm/config/vllm.py); LMCache's ``calculate_chunk_budget``:
``max_local_cpu_size x 2**30 // align_4096(kv_size x layers x chunk x heads x head_size x
itemsize)``, with ``max_local_cpu_size = size / (tp x pp)`` as vLLM passes it.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from typer.testing import CliRunner

import tokcost
from tokcost.catalog import load_catalog
from tokcost.catalog.schema import Architecture, ModelEntry
from tokcost.cli.app import app
from tokcost.errors import UsageError

GiB = 2**30


def _estimate(**options: Any) -> Any:
    options.setdefault("engine", "vllm@0.21")  # the pages below are v0.21's 16-token blocks
    return tokcost.estimate_memory(tokcost.KvRequest.of(**options))


@pytest.mark.parametrize(("model", "tp", "pp", "gib", "layers_per_rank", "page"), [
    # page_size_bytes: 2 (K, V) x 16 tokens x kv heads per GPU x head_dim x 2 bytes (bf16).
    ("llama-3.1-8b", 1, 1, 100, 32, 2 * 16 * 8 * 128 * 2),
    ("llama-3.1-70b", 4, 1, 200, 80, 2 * 16 * 2 * 128 * 2),
    ("llama-3.1-70b", 2, 2, 200, 40, 2 * 16 * 4 * 128 * 2),  # 80 layers in two stages
    # MLA: one latent (512 + 64) per token and layer; v0.21 on Hopper with a bf16 cache:
    # FlashAttention MLA's 16-token blocks (PR #35122).
    ("deepseek-v3", 8, 1, 500, 61, 16 * (512 + 64) * 2),
])
def test_native_host_blocks_are_vllms(model: str, tp: int, pp: int, gib: int,
                                      layers_per_rank: int, page: int) -> None:
    r = _estimate(model=model, tp=tp, pp=pp, contexts=[32768], kv_memory="30GiB",
                  cpu_offload=f"{gib}GiB")
    t = r.offload
    kv_bytes_per_block = page * layers_per_rank * tp * pp
    assert t.blocks == gib * GiB // kv_bytes_per_block
    assert t.tokens == t.blocks * r.block_size and t.block_tokens == r.block_size
    assert t.sequences(32768) == t.blocks // -(-32768 // r.block_size)


def test_lmcache_chunks_per_rank_with_its_alignment() -> None:
    r = _estimate(model="llama-3.1-70b", tp=4, contexts=[32000], cpu_offload="200GiB",
                  offload_backend="lmcache", engine="vllm@0.22")
    chunk = 2 * 80 * 256 * 2 * 128 * 2  # kv_size x layers x chunk x heads per GPU x head x 2 B
    assert (r.offload.blocks, r.offload.block_bytes) == (200 * GiB // 4 // chunk, chunk)
    assert r.offload.tokens == r.offload.blocks * 256
    assert r.offload.sequences(32000) == r.offload.blocks // 125
    # A chunk that is not a multiple of 4 KiB takes whole 4 KiB pages: 3 layers x 2 x 10 x 2 B
    # x 256 tokens = 30,720 B -> 32,768 B.
    odd = ModelEntry(id="odd", architecture=Architecture(
        layers=3, hidden_size=40, attention_heads=4, kv_heads=1, head_dim=10))
    t = _estimate(model=odd, contexts=[512], cpu_offload="1MiB",
                  offload_backend="lmcache", engine="vllm@0.22").offload
    assert (t.block_bytes, t.blocks, t.tokens) == (32768, 32, 32 * 256)


def test_the_gpu_tier_is_unchanged() -> None:
    args = ["kvmem", "estimate", "-m", "llama-3.1-8b", "--gpu", "H100", "--context", "8k,32k",
            "--engine", "vllm@0.21", "--json"]
    runner = CliRunner()
    plain = json.loads(runner.invoke(app, args).stdout)
    tiered = json.loads(runner.invoke(app, [*args, "--cpu-offload", "100GiB"]).stdout)
    host = tiered.pop("cpu_offload")
    assert tiered.pop("notes")[-1].startswith("the host tier keeps blocks the GPU let go")
    plain.pop("notes")
    assert tiered == plain and "cpu_offload" not in plain
    assert host == {"backend": "native", "size_bytes": 100 * GiB, "ranks": 1, "block_tokens": 16,
                    "block_bytes_per_gpu": 2 * 16 * 8 * 128 * 2 * 32, "copies": 1,
                    "block_bytes_host": 2 * 16 * 8 * 128 * 2 * 32, "blocks": 51_200,
                    "tokens": 819_200, "sequences": {"8000": 102, "32000": 25}}


def test_the_table_states_the_tiers_apart() -> None:
    result = CliRunner().invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--gpu", "H100",
                                      "--context", "32k", "--cpu-offload", "100GiB",
                                      "--engine", "vllm@0.21"])
    assert result.exit_code == 0, result.output
    assert "host seqs" in result.stdout
    assert ("host tier (vLLM native offload): 100 GiB in 16-token blocks of 2,097,152 B = "
            "51,200 blocks, 819,200 tokens (GPU pool: 461,360)") in result.stdout  # 28,835 blocks x 16 at v0.21's 0.92


@pytest.mark.parametrize(("options", "param", "fragment"), [
    # LMCacheConnectorV1 takes one group (native offload takes hybrids from v0.21)
    ({"model": "gemma-3-27b", "cpu_offload": "10GiB", "engine": "vllm@0.24",
      "offload_backend": "lmcache"}, "cpu_offload", "gemma-3-27b has sliding layers"),
    ({"model": "gemma-3-27b", "cpu_offload": "10GiB", "engine": "vllm@0.24",
      "offload_backend": "lmcache"}, "cpu_offload",
     "with hybrid_manager=False its sliding layers are full ones"),
    # v0.21 to v0.27 assert on a chunked-local group (get_sliding_window_size_in_blocks)
    ({"model": "llama-4-scout", "tp": 8, "cpu_offload": "10GiB", "engine": "vllm@0.27"},
     "cpu_offload", "the chunk is read from v0.28"),
    ({"model": "llama-3.1-8b", "cpu_offload": "10GiB", "engine": "sglang"}, "cpu_offload",
     "vLLM's host tier (its native offloading or LMCache)"),
    ({"model": "llama-3.1-8b", "offload_backend": "lmcache"}, "offload_backend",
     "give that size with it"),
    ({"model": "llama-3.1-8b", "cpu_offload": "10GiB", "offload_backend": "disk"},
     "offload_backend", "give one of native, lmcache"),
    ({"model": "llama-3.1-8b", "cpu_offload": "10GiB", "evict": "window:100"}, "cpu_offload",
     "without a cache policy"),
    ({"model": "llama-3.1-8b", "cpu_offload": "0"}, "cpu_offload", ""),
    ({"model": "deepseek-v3", "tp": 8, "dcp": 2, "cpu_offload": "10GiB", "engine": "vllm@0.20",
      "hybrid_manager": False}, "cpu_offload", "native offload from v0.21"),
])
def test_refusals_name_the_flag(options: dict[str, Any], param: str, fragment: str) -> None:
    with pytest.raises(UsageError) as info:
        _estimate(contexts=[4096], **options)
    assert info.value.param == param and fragment in str(info.value)


# --- by release (vllm/config/vllm.py _post_init_kv_transfer_config and CPUOffloadingSpec of
# each sdist under /work/pkgs/vllm) ---------------------------------------------------------

@pytest.mark.parametrize(("engine", "backend", "param", "fragment"), [
    # v0.11: no --kv-offloading-size (the connector took num_cpu_blocks per worker).
    ("vllm@0.11", "native", "cpu_offload", "use engine=vllm@0.14"),
    ("vllm@0.11", "lmcache", "cpu_offload", "it came in v0.12"),
    # v0.12/v0.13: native gets num_cpu_blocks 0, which CPUOffloadingSpec refuses.
    ("vllm@0.12", "native", "offload_backend", "num_cpu_blocks 0"),
    ("vllm@0.13", "native", "offload_backend", "PR #24498"),
    # v0.25 on: lmcache starts LMCacheMPConnector and passes it no size (PR #42865).
    ("vllm@0.25", "lmcache", "offload_backend", "LMCacheMPConnector"),
    ("vllm", "lmcache", "offload_backend", "PR #42865"),
    # the hybrid KV cache manager left on where the connector refuses it
    ("vllm@0.14", "native", "cpu_offload", "does not support HMA"),
    ("vllm@0.20", "native", "cpu_offload", "engine=vllm@0.21 or newer"),
    ("vllm@0.21", "lmcache", "cpu_offload", "engine=vllm@0.22 or newer"),
])
def test_releases_without_that_tier_refuse(engine: str, backend: str, param: str,
                                           fragment: str) -> None:
    with pytest.raises(UsageError) as info:
        _estimate(model="llama-3.1-8b", contexts=[4096], cpu_offload="10GiB",
                  offload_backend=backend, engine=engine)
    assert info.value.param == param and fragment in str(info.value)


@pytest.mark.parametrize(("engine", "backend", "hybrid_manager"), [
    # LMCacheConnectorV1 has no SupportsHMA: to v0.21 the manager is decided before the
    # connector's config exists, so vLLM starts only with --disable-hybrid-kv-cache-manager;
    # from v0.22 it turns the manager off itself.
    ("vllm@0.12", "lmcache", False), ("vllm@0.13", "lmcache", False),
    ("vllm@0.21", "lmcache", False), ("vllm@0.22", "lmcache", True),
    ("vllm@0.24", "lmcache", True),
    # OffloadingConnector: SupportsHMA from v0.21.
    ("vllm@0.14", "native", False), ("vllm@0.20", "native", False),
    ("vllm@0.21", "native", True), ("vllm@0.34", "native", True),
])
def test_releases_with_that_tier_size_it(engine: str, backend: str,
                                         hybrid_manager: bool) -> None:
    r = _estimate(model="llama-3.1-8b", contexts=[4096], kv_memory="30GiB", cpu_offload="10GiB",
                  offload_backend=backend, engine=engine, hybrid_manager=hybrid_manager)
    # llama-3.1-8b, bf16: 2 x 8 heads x 128 x 2 B x 32 layers = 131,072 B a token (a multiple
    # of 4 KiB in any block, so v0.27's alignment leaves it); LMCache: 256-token chunks.
    tokens = 10 * GiB // 131_072
    assert r.offload.tokens == (tokens if backend == "native" else tokens // 256 * 256)


def test_v027_aligns_a_host_block_to_the_page() -> None:
    # 3 layers x 2 (K, V) x 1 head x 10 x 2 B = 120 B a token; one GPU block (16 tokens at
    # these releases) = 1,920 B. v0.26: 1 MiB // 1,920 = 546 blocks; v0.27 rounds the row up
    # to mmap.PAGESIZE (SharedOffloadRegion.BLOCK_SIZE_ALIGNMENT, PR #50094): 1 MiB // 4,096.
    odd = ModelEntry(id="odd", architecture=Architecture(
        layers=3, hidden_size=40, attention_heads=4, kv_heads=1, head_dim=10))
    old, new = (_estimate(model=odd, contexts=[512], cpu_offload="1MiB", engine=e)
                for e in ("vllm@0.26", "vllm@0.27"))
    assert (old.block_size, new.block_size) == (16, 16)
    assert (old.offload.row_bytes, old.offload.blocks) == (1920, 546)
    assert (new.offload.block_bytes, new.offload.row_bytes, new.offload.blocks) == (1920, 4096, 256)


@pytest.mark.parametrize(("engine", "tp", "pp", "copies"), [
    ("vllm@0.26", 8, 1, 8),  # one share per rank before the shared region
    ("vllm@0.27", 8, 1, 1),  # PR #50301: pure MLA on TP 8 keeps one copy
    ("vllm@0.27", 4, 2, 8),  # PP > 1: replicated_layout is off
    ("vllm@0.27", 1, 1, 1),  # one GPU: one share anyway
])
def test_mla_keeps_one_copy_from_v027(engine: str, tp: int, pp: int, copies: int) -> None:
    r = _estimate(model="deepseek-v3", tp=tp, pp=pp, contexts=[32768], kv_memory="30GiB",
                  cpu_offload="500GiB", engine=engine)
    t = r.offload
    # page per GPU: 16 tokens x (512 + 64) x 2 B x its stage's layers (61, or 31 of 61 on PP 2)
    page = 16 * (512 + 64) * 2 * (61 if pp == 1 else 31)
    row = page * copies
    if engine == "vllm@0.27":
        row = -(-row // 4096) * 4096  # 1,124,352 -> 1,126,400 B; 4,571,136 is already whole
    assert (r.block_size, t.block_bytes, t.copies, t.row_bytes) == (16, page, copies, row)
    assert t.blocks == 500 * GiB // row


def test_deepseek_v32s_indexer_counts_as_replicated_from_v031() -> None:
    # v0.27-v0.30 ask for one bare MLAAttentionSpec group, which the indexer cache breaks;
    # v0.31 asks kv_tp_replicas == tp, and the indexer's spec is max_tp_shards=1 like MLA's.
    base = load_catalog().resolve("deepseek-v3")
    arch = base.architecture
    assert arch is not None
    v32 = dataclasses.replace(base, id="v32", architecture=dataclasses.replace(
        arch, attention=dataclasses.replace(arch.attention, indexer_head_dim=128)))
    old, new = (_estimate(model=v32, tp=8, contexts=[32768], kv_memory="30GiB",
                          cpu_offload="500GiB", engine=e).offload
                for e in ("vllm@0.30", "vllm@0.31"))
    # 64-token blocks x ((512 + 64) x 2 B + the indexer's 128 + 128 // 128 x 4 B) x 61 layers
    page = 64 * ((512 + 64) * 2 + 132) * 61
    def row(n: int) -> int:  # rounded up to 4 KiB, as both releases do
        return -(-n // 4096) * 4096
    assert (old.block_bytes, old.copies, old.row_bytes) == (page, 8, row(page * 8))
    assert (new.copies, new.row_bytes) == (1, row(page))
    assert (old.blocks, new.blocks) == (500 * GiB // 40_103_936, 500 * GiB // 5_013_504)


def test_lmcache_chunks_hold_no_indexer() -> None:
    # LMCache's kv_shape (lmcache/integration/vllm/utils.py): (61 layers, 1 for MLA, 256
    # tokens, 1 head, 576 = 512 + 64) in bf16 = 17,989,632 B, already whole 4 KiB pages;
    # DeepSeek-V3.2's indexer keys (132 B a token and layer in vLLM) are not in it.
    base = load_catalog().resolve("deepseek-v3")
    arch = base.architecture
    assert arch is not None
    v32 = dataclasses.replace(base, id="v32", architecture=dataclasses.replace(
        arch, attention=dataclasses.replace(arch.attention, indexer_head_dim=128)))
    t = _estimate(model=v32, tp=8, contexts=[32768], cpu_offload="100GiB",
                  offload_backend="lmcache", engine="vllm@0.22").offload
    assert (t.block_bytes, t.blocks) == (61 * 256 * 576 * 2, 100 * GiB // 8 // 17_989_632)


@pytest.mark.parametrize(("engine", "block", "blocks"), [
    ("vllm@0.20", 16, 13_212),  # 100 GiB // 8,126,464 B
    ("vllm@0.34", 64, 3_303),  # 100 GiB // 32,505,856 B (v0.34's 64-token blocks here)
])
def test_sliding_layers_unified_with_the_hybrid_manager_off(engine: str, block: int,
                                                            blocks: int) -> None:
    # --disable-hybrid-kv-cache-manager makes Gemma-3's sliding layers full ones (one group):
    # 62 layers x 2 x 16 KV heads x 128 x 2 B = 507,904 B a token, in whole 4 KiB pages.
    r = _estimate(model="gemma-3-27b", contexts=[32768], kv_memory="30GiB",
                  cpu_offload="100GiB", hybrid_manager=False, engine=engine)
    assert r.block_size == block
    assert (r.offload.block_bytes, r.offload.blocks) == (block * 507_904, blocks)


def test_native_rows_follow_the_first_stage() -> None:
    # 61 layers on PP 4: 15, 15, 16, 15 (get_pp_indices gives the rest to the middle stages).
    # The scheduler's KVCacheConfig is the first worker's: 15 layers x 16 tokens x (512 + 64)
    # x 2 B = 276,480 B a GPU, x 8 GPUs (MLA at TP 2 x PP 4: one share each) per host block.
    r = _estimate(model="deepseek-v3", tp=2, pp=4, contexts=[32768], kv_memory="30GiB",
                  cpu_offload="100GiB")
    assert r.block_size == 16
    assert (r.offload.block_bytes, r.offload.copies) == (276_480, 8)
    assert r.offload.blocks == 100 * GiB // (276_480 * 8)


def test_rocm_keeps_a_copy_per_rank() -> None:
    # CPUOffloadingSpec._uses_shared_region is CUDA (not ROCm) or XPU: on an MI300X the
    # replicated layout is off and each of the 8 ranks keeps its share (v0.34).
    kw: dict[str, Any] = {"model": "deepseek-v3", "tp": 8, "contexts": [32768],
                          "cpu_offload": "500GiB", "engine": "vllm@0.34"}
    cuda, rocm = (_estimate(gpu=g, **kw).offload for g in ("H200", "MI300X"))
    assert (cuda.copies, rocm.copies) == (1, 8)
    assert rocm.row_bytes == -(-rocm.block_bytes * 8 // 4096) * 4096


# --- hybrid caches, native offload from v0.21: a host block is one GPU block id of every layer
# slot (CPUOffloadingSpec: the GPU tensors' total // num_blocks), and a request keeps each
# group's blocks as get_sliding_window_size_in_chunks bounds them
# (kv_connector/v1/offloading/scheduler.py; config.py and cpu/common.py from v0.33) -----------

def test_hybrid_sliding_groups_keep_their_window() -> None:
    # gpt-oss-120b at TP 2: 8 kv heads / 2 x 64 x 2 (K, V) x 2 B = 1,024 B a token and layer;
    # v0.34's 64-token page = 65,536 B; 18 sliding + 18 full layers: 2 groups of 18 slots, so a
    # block id holds 18 x 65,536 = 1,179,648 B per GPU, 2,359,296 B for both (a multiple of
    # 4 KiB). 100 GiB // 2,359,296 = 45,511 blocks. A 128,000-token request keeps
    # cdiv(128,000, 64) = 2,000 full blocks + cdiv(128, 64) = 2 of the 128-token window:
    # 2,002; vLLM's cpu_kv_cache_size_tokens = 45,511 x 128,000 // 2,002 = 2,909,794.
    r = _estimate(model="gpt-oss-120b", tp=2, gpu="H100", contexts=[32000, 128000],
                  cpu_offload="100GiB", engine="vllm")
    t = r.offload
    assert (t.block_bytes, t.row_bytes, t.blocks) == (1_179_648, 2_359_296, 45_511)
    assert [(g.block_size, g.kept) for g in t.groups] == [(64, 2), (64, None)]
    assert (t.request_blocks(128_000), t.tokens_at(128_000)) == (2_002, 2_909_794)
    # cdiv(32,000, 64) + 2 = 502 blocks a request: 45,511 // 502 = 90; 45,511 // 2,002 = 22
    assert (t.sequences(32_000), t.sequences(128_000)) == (90, 22)
    data = r.to_dict()["cpu_offload"]
    assert data["tokens"] == 2_909_794 and data["blocks_per_request"]["128000"] == 2_002
    assert data["groups"] == [{"block_tokens": 64, "blocks_kept": 2},
                              {"block_tokens": 64, "blocks_kept": None}]


def test_hybrid_mamba_groups_keep_one_state() -> None:
    # Qwen3-Next at TP 2 on v0.34: one full and three Gated DeltaNet groups of 12 slots, block
    # 576 (the page raised to cover the state); a request keeps cdiv(ctx, 576) full blocks
    # and one state block in each linear group.
    r = _estimate(model="qwen3-next-80b-a3b", tp=2, gpu="H100", contexts=[128000],
                  cpu_offload="100GiB", engine="vllm")
    t, plan = r.offload, r.plan
    assert plan.block_size == 576 and len(plan.groups) == 4
    assert t.block_bytes == plan.page_bytes * 12 and t.row_bytes == 2 * t.block_bytes
    assert t.blocks == 100 * GiB // t.row_bytes
    assert t.request_blocks(128_000) == -(-128_000 // 576) + 3
    assert t.sequences(128_000) == t.blocks // (223 + 3)
    assert sorted(g.kind for g in t.groups) == ["full", "mamba", "mamba", "mamba"]


def test_hybrid_chunked_groups_keep_a_chunk_from_v0_28() -> None:
    # Llama-4-Scout: chunked layers keep cdiv(8,192, block) blocks from v0.28.
    r = _estimate(model="llama-4-scout", tp=8, gpu="H100", contexts=[65536],
                  cpu_offload="100GiB", engine="vllm@0.28")
    t = r.offload
    block = r.plan.block_size
    kept = sorted((g.kept for g in t.groups), key=lambda k: -1 if k is None else k)
    assert kept[0] is None and set(kept[1:]) == {-(-8192 // block)}
    assert t.request_blocks(65_536) == (-(-65_536 // block) * kept.count(None)
                                        + -(-8192 // block) * (len(kept) - kept.count(None)))


def test_hybrid_host_line() -> None:
    result = CliRunner().invoke(app, ["kvmem", "estimate", "-m", "gpt-oss-120b", "--gpu", "H100",
                                      "--tp", "2", "--context", "128000",
                                      "--cpu-offload", "100GiB"])
    assert result.exit_code == 0, result.output
    assert ("= 45,511 blocks; a request of 128,000 tokens keeps 2,002 of them over 2 groups "
            "(full: every block; sliding: its window)") in result.stdout
    assert "2,909,794 tokens" in result.stdout
    # Beside the host tier's cpu_kv_cache_size_tokens (concurrency x context) stands the GPU
    # pool vLLM v0.34 logs the same way ("GPU KV cache size", v0.21 on), not num_blocks //
    # groups x block (v0.20's 1,332,224): one figure for the GPU in the whole output.
    assert "GPU KV cache size: 2,358,962 tokens" in result.stdout
    assert "2,909,794 tokens (GPU pool: 2,358,962)" in result.stdout


def test_dcp_host_blocks_span_block_x_dcp_tokens() -> None:
    # DeepSeek-V3 at TP 8, DCP 8 (v0.34, H200): each GPU holds every 8th token of a 64-token
    # block, so a host block spans 64 x 8 = 512 tokens (OffloadingSpec's block_size x
    # decode_context_parallel_size, v0.21 on). The latent is not one copy under DCP (the
    # replicated layout asks DCP 1): 8 x 61 layers x 64 x 576 x 2 B = 35,979,264 B a row;
    # 500 GiB // 35,979,264 = 14,921 blocks = 7,639,552 tokens; a 32,000-token request keeps
    # cdiv(32,000, 512) = 63 of them: 236 sequences.
    r = _estimate(model="deepseek-v3", tp=8, dcp=8, gpu="H200", contexts=[32000],
                  cpu_offload="500GiB", engine="vllm")
    t = r.offload
    assert (t.block_tokens, t.copies, t.row_bytes) == (512, 8, 35_979_264)
    assert (t.blocks, t.tokens, t.sequences(32_000)) == (14_921, 7_639_552, 14_921 // 63)


def test_sliding_only_cache_keeps_its_window() -> None:
    # Phi-3-mini caches every layer with a 2,047-token window (one sliding group). From v0.21 the
    # offload scheduler bounds a sliding group by cdiv(window, block) blocks a request
    # (get_sliding_window_size_in_blocks): cdiv(2,047, 64) = 32 at v0.34, not cdiv(4,096, 64) =
    # 64. 32 layers x 2 x 32 heads x 96 x 2 B = 393,216 B a token; a 64-token block 25,165,824
    # B; 10 GiB // 25,165,824 = 426 blocks; 426 // 32 = 13 sequences of 4,096 tokens,
    # 426 x 4,096 // 32 = 54,528 tokens.
    r = _estimate(model="phi-3-mini", gpu="H100", contexts=[4096], cpu_offload="10GiB",
                  engine="vllm")
    t = r.offload
    assert (t.row_bytes, t.blocks) == (25_165_824, 426)
    assert [(g.kind, g.kept) for g in t.groups] == [("sliding", 32)]
    assert (t.request_blocks(4096), t.sequences(4096), t.tokens_at(4096)) == (32, 13, 54_528)
    # before v0.21 one group of every block; the hybrid manager off does not make it full
    with pytest.raises(UsageError) as info:
        _estimate(model="phi-3-mini", contexts=[4096], cpu_offload="10GiB",
                  engine="vllm@0.20", hybrid_manager=False)
    assert "full ones" not in str(info.value) and "vllm@0.21" in str(info.value)
