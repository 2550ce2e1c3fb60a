"""config.json of 2025-26 families (issue 28, part 4): minimal fixtures with the published
numbers (tests/fixtures/hf_configs_families/SOURCES.md), read as ``--config`` reads them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from tokcost.catalog.hf_config import architecture_from_config
from tokcost.catalog.schema import Architecture
from tokcost.cli.app import app
from tokcost.errors import InputError
from tokcost.memory.kv import kv_layout

FIXTURES = Path(__file__).parent / "fixtures" / "hf_configs_families"
runner = CliRunner()


def arch(name: str) -> Architecture:
    config = json.loads((FIXTURES / name / "config.json").read_text())
    return architecture_from_config(config, where="config.json")


def test_every_fixture_names_its_source() -> None:
    sources = (FIXTURES / "SOURCES.md").read_text()
    for folder in (p for p in FIXTURES.iterdir() if p.is_dir()):
        assert f"| {folder.name} |" in sources


def test_kimi_k2_is_mla_moe() -> None:
    """61 layers of MLA (kv_lora_rank 512 + qk_rope_head_dim 64): 61 x 576 x 2 B = 70,272 B
    per token in bf16, the same on every TP GPU; 384 routed experts, 8 per token."""
    a = arch("kimi-k2-thinking")
    assert a.attention.type == "mla" and a.layers == 61
    assert (a.attention.kv_lora_rank, a.attention.qk_rope_head_dim) == (512, 64)
    assert (a.experts, a.experts_per_token) == (384, 8)
    assert kv_layout(a, tp=8).bytes_per_token == 70_272
    assert kv_layout(a, "fp8_ds_mla").bytes_per_token == 61 * 656


def test_kimi_k2_dcp8_log_from_its_config() -> None:
    """The recipes PR #115 start-up (46.80 GiB, TP8 + DCP8, logged 5,721,088 tokens, a v0.11
    nightly): 46.80 GiB // (64 x 70,272 B) = 11,173 blocks x 64 x 8 = 5,720,576, one 512-token
    block under the log, inside the +-0.005 GiB of its 2-decimal figure (+-1.2 blocks)."""
    result = runner.invoke(app, ["kvmem", "estimate", "--config", str(FIXTURES / "kimi-k2-thinking"),
                                 "--kv-memory", "46.80GiB", "--tp", "8", "--dcp", "8",
                                 "--engine", "vllm@0.11", "--json"])
    assert result.exit_code == 0, result.output
    engine = json.loads(result.stdout)["engine"]
    assert engine["block_size"] == 64 and engine["num_blocks"] == 11_173
    assert 0 <= 5_721_088 - engine["cache_tokens"] <= 64 * 8
    assert "GPU KV cache size: 5,720,576 tokens" in engine["logged_lines"]


def test_glm_45_is_gqa_moe() -> None:
    """92 full layers, 8 kv heads of 128: 92 x 8 x 128 x 2 x 2 B = 376,832 B per token; TP8
    keeps one kv head a GPU (47,104 B); 160 routed experts, 8 per token."""
    a = arch("glm-4.5")
    assert a.attention.type == "full" and a.layers == 92
    assert (a.kv_heads, a.head_dim, a.experts, a.experts_per_token) == (8, 128, 160, 8)
    assert kv_layout(a).bytes_per_token == 376_832
    assert kv_layout(a, tp=8).bytes_per_token == 47_104


def test_deepseek_v32_caches_its_indexer_keys_beside_the_latent() -> None:
    """DeepSeek-V3.2: 61 MLA layers, each with the indexer's fp8 keys of 128 and a float32
    scale = 132 B per token (whatever the KV dtype): 61 x (1,152 + 132) = 78,324 B in bf16,
    61 x (656 + 132) = 48,068 B in fp8_ds_mla, the layout vLLM runs it with."""
    a = arch("deepseek-v3.2-exp")
    assert a.attention.type == "mla" and a.attention.indexer_head_dim == 128
    assert kv_layout(a).bytes_per_token == 78_324
    assert kv_layout(a, "fp8_ds_mla").bytes_per_token == 61 * 788 == 48_068
    assert kv_layout(a, "fp8_ds_mla").indexer_bytes == 132
    # DeepSeek-V3 states no indexer: its cache is the latent alone
    v3 = json.loads((Path(__file__).parent / "fixtures" / "hf_configs" / "deepseek-v3" /
                     "config.json").read_text())
    assert architecture_from_config(v3, where="config.json").attention.indexer_head_dim is None


def test_deepseek_v32_is_one_vllm_group_and_sglang_an_nsa_pool() -> None:
    """vLLM keeps the indexer pages in the MLA layers' group (UniformTypeKVCacheSpecs):
    40 GiB // (64 x 48,068 B) = 13,961 blocks of 64 tokens (FlashMLA on Hopper). SGLang's NSA
    pool: 40 GiB // 48,068 B = 893,519 tokens, in pages of 64: 893,504; its latent in plain fp8
    is refused (SGLang stores it as fp8_ds_mla's 656 B)."""
    folder = str(FIXTURES / "deepseek-v3.2-exp")
    result = runner.invoke(app, ["kvmem", "estimate", "--config", folder, "--kv-dtype",
                                 "fp8_ds_mla", "--kv-memory", "40GiB", "--json"])
    assert result.exit_code == 0, result.output
    engine = json.loads(result.stdout)["engine"]
    assert len(engine["groups"]) == 1 and engine["block_size"] == 64
    assert engine["num_blocks"] == 40 * 2**30 // (64 * 48_068) == 13_961
    sg = runner.invoke(app, ["kvmem", "estimate", "--config", folder, "--engine", "sglang@0.5.22",
                             "--kv-dtype", "fp8_ds_mla", "--kv-memory", "40GiB", "--json"])
    assert sg.exit_code == 0, sg.output
    pool = json.loads(sg.stdout)["engine"]
    assert pool["block_size"] == 64 and pool["cache_tokens"] == 893_504
    fp8 = runner.invoke(app, ["kvmem", "estimate", "--config", folder, "--engine", "sglang@0.5.22",
                              "--kv-dtype", "fp8", "--kv-memory", "40GiB"])
    assert fp8.exit_code == 2 and "--kv-dtype fp8_ds_mla" in fp8.output
    # v0.5.23's DSATokenToKVPool is not modelled: refused, naming the release that is
    new = runner.invoke(app, ["kvmem", "estimate", "--config", folder, "--engine", "sglang",
                              "--kv-dtype", "fp8_ds_mla", "--kv-memory", "40GiB"])
    assert new.exit_code == 2 and "--engine sglang@0.5.22" in new.output


def test_a_shared_indexer_is_refused() -> None:
    """GLM-5 style configs share the indexer across layers (indexer_types): not modelled."""
    config = json.loads((FIXTURES / "deepseek-v3.2-exp" / "config.json").read_text())
    config["index_topk_freq"] = 4
    try:
        architecture_from_config(config, where="config.json")
    except InputError as exc:
        assert "shares its sparse-attention indexer" in str(exc)
    else:
        raise AssertionError("a shared indexer was read as one per layer")


def test_llama4_scout_chunks_three_layers_in_four() -> None:
    """Llama-4-Scout: 48 layers, no_rope_layers empty so every 4th layer is global (NoPE) and the
    other 36 attend within 8,192-token chunks; 8 kv heads of 128: 4,096 B per token per layer."""
    a = arch("llama-4-scout")
    kinds = a.attention.layer_kinds(a.layers)
    assert a.attention.chunked and a.attention.window == 8192
    assert kinds.count("full") == 12 and kinds[3::4] == ("full",) * 12
    assert (a.kv_heads, a.head_dim, a.experts, a.experts_per_token) == (8, 128, 16, 1)
    lay = kv_layout(a)
    assert lay.bytes_per_token == 48 * 4096
    # A chunked layer holds the tokens of its current chunk (vLLM frees whole blocks before
    # num_computed // chunk x chunk): 8,192 at 8,192 and at 16,384 tokens, 1 at 8,193.
    assert [lay.layer_slots("sliding", t, None) for t in (8192, 8193, 16384)] == [8192, 1, 8192]
    assert lay.layer_slots("sliding", 8193, 16) == 16
    assert lay.sequence_bytes(131_072) == (12 * 131_072 + 36 * 8192) * 4096


def test_llama4_vllm_groups_and_chunked_reserve() -> None:
    """vLLM: 1 full and 3 chunked groups of 12 layers (PR #21761 lists them); one request of
    131,072 tokens reserves 8,192 blocks of the full group and cdiv(8,192 + 8,192, 16) = 1,024
    of each chunked group (ChunkedLocalAttentionSpec: chunk + in-flight tokens, no +1)."""
    from tokcost.memory.engines.vllm import plan_vllm

    lay = kv_layout(arch("llama-4-scout"), tp=4)
    plan = plan_vllm(lay, available=40 * 2**30, max_num_batched_tokens=8192)
    assert sorted(g.spec.kind for g in plan.groups) == ["chunked"] * 3 + ["full"]
    assert plan.blocks_per_request(131_072) == 8192 + 3 * 1024
    # the hybrid manager off: every layer full (unify_hybrid_kv_cache_specs)
    off = plan_vllm(lay, available=40 * 2**30, max_num_batched_tokens=8192,
                    hybrid_manager=False)
    assert {g.spec.kind for g in off.groups} == {"full"}
    assert off.blocks_per_request(131_072) == 8192


def test_llama4_bad_no_rope_layers_is_one_line() -> None:
    config = json.loads((FIXTURES / "llama-4-scout" / "config.json").read_text())
    config["text_config"]["no_rope_layers"] = [1, 0]
    try:
        architecture_from_config(config, where="config.json")
    except InputError as e:
        assert "no_rope_layers" in str(e)
    else:
        raise AssertionError("a short no_rope_layers was accepted")


def test_llama4_trtllm_refuses_chunked() -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "--config", str(FIXTURES / "llama-4-scout"),
                                 "--kv-memory", "40GiB", "--engine", "trtllm"])
    assert result.exit_code != 0 and "chunked local attention" in result.output


def test_gemma3n_last_15_layers_hold_no_cache() -> None:
    """Gemma-3n-E4B: 35 layers (4 sliding of 512, 1 full, repeated), the last 15 reading layer
    18's (sliding) or 19's (full) cache: 20 layers hold one, 16 sliding + 4 full, of 2 kv heads
    x 256 x 2 x 2 B = 2,048 B per token: 40,960 B, not 35 x 2,048 = 71,680."""
    a = arch("gemma-3n-e4b")
    assert a.layers == 35 and a.attention.kv_shared_layers == 15 and a.attention.window == 512
    lay = kv_layout(a)
    assert lay.counts["sliding"] == 16 and lay.counts["full"] == 4 and lay.kv_shared == 15
    assert lay.bytes_per_token == 20 * 2048 == 40_960
    assert lay.layers[-2:] == ("sliding", "full")  # layers 18 and 19, the shared ones' targets


def test_gemma3n_vllm_groups() -> None:
    """vLLM: 4 sliding groups and 1 full group of 4 layers; one request of 32,768 tokens
    reserves 2,048 full blocks and 4 x (cdiv(511 + 8,192, 16) + 1) = 4 x 545 sliding ones."""
    from tokcost.memory.engines.vllm import plan_vllm

    plan = plan_vllm(kv_layout(arch("gemma-3n-e4b")), available=4 * 2**30,
                     max_num_batched_tokens=8192)
    assert sorted(g.spec.kind for g in plan.groups) == ["full"] + ["sliding"] * 4
    assert plan.blocks_per_request(32_768) == 2048 + 4 * 545


def test_gemma3n_llama_cpp_caches_the_first_20_layers() -> None:
    """llama.cpp (PR #15504, layer reuse): only layers below n_layer_kv_from_start = 35 - 15
    have KV, in two caches: 4 global layers of 32,768 cells and 16 sliding of pad(512 + 512,
    256) = 1,024, 2 kv heads x 256 x 2 B per cell and layer for K and as much for V:
    32,768 x 4 x 1,024 B = 128 MiB each, 1,024 x 16 x 1,024 B = 16 MiB each."""
    from tokcost.memory.engines.base import Deployment
    from tokcost.memory.engines.llamacpp import LlamaCpp

    a = arch("gemma-3n-e4b")
    plan, _ = LlamaCpp(parallel=1).plan(Deployment(layout=kv_layout(a), head_dim=a.head_dim,
                                                   kv_heads=a.kv_heads))
    lines = plan.lines(32_768)
    assert lines[1].startswith("llama_kv_cache: size =  256.00 MiB ( 32768 cells,   4 layers,")
    assert lines[3].startswith("llama_kv_cache: size =   32.00 MiB (  1024 cells,  16 layers,")


def test_gemma3n_refusals() -> None:
    folder = str(FIXTURES / "gemma-3n-e4b")
    for extra in (["--pp", "2"], ["--engine", "sglang"]):
        result = runner.invoke(app, ["kvmem", "estimate", "--config", folder, "--kv-memory",
                                     "4GiB", *extra])
        assert result.exit_code != 0 and "share" in result.output, result.output


def test_gemma4_31b_global_layers_have_their_own_heads() -> None:
    """Gemma-4-31B: 50 sliding layers of 16 kv heads x 256 (vLLM SlidingWindowSpec: 2 x 16 x
    256 x 2 B = 16,384 B per token) and 10 global layers of 4 kv heads x 512 (attention_k_eq_v:
    num_global_key_value_heads; K stored again as V: 2 x 4 x 512 x 2 B = 8,192 B)."""
    a = arch("gemma-4-31b")
    assert (a.attention.global_kv_heads, a.attention.global_head_dim) == (4, 512)
    lay = kv_layout(a)
    assert lay.token_bytes == {"sliding": 16_384, "full": 8_192}
    assert (lay.counts["sliding"], lay.counts["full"]) == (50, 10)
    assert lay.bytes_per_token == 50 * 16_384 + 10 * 8_192 == 901_120
    assert lay.kv_heads_per_gpu is None  # no one (heads, head size) for cache policies
    # TP8: 2 sliding kv heads a GPU; the 4 global ones replicated to 1 a GPU
    assert kv_layout(a, tp=8).token_bytes == {"sliding": 2 * 256 * 2 * 2, "full": 512 * 2 * 2}
    # fp8_per_token_head: 2 x (256 + 4) = 520 B a sliding head; a global head 2 x (512 + 4) =
    # 1,032 B padded to 1,040 (gemma4.py kv_cache_page_size_padded), so the pages divide
    fp8 = kv_layout(a, "fp8_per_token_head")
    assert fp8.token_bytes == {"sliding": 16 * 520, "full": 4 * 1040}


def test_gemma4_without_k_eq_v_keeps_the_common_kv_heads() -> None:
    """num_global_key_value_heads counts only with attention_k_eq_v (vLLM and transformers)."""
    config = json.loads((FIXTURES / "gemma-4-31b" / "config.json").read_text())
    config["text_config"]["attention_k_eq_v"] = False
    a = architecture_from_config(config, where="config.json")
    assert a.attention.global_kv_heads is None and a.attention.global_head_dim == 512
    assert kv_layout(a).token_bytes["full"] == 2 * 16 * 512 * 2


def test_gemma4_31b_vllm_pages_grow_the_global_block() -> None:
    """vLLM's pages: sliding 16 x 16,384 = 262,144 B, global 16 x 8,192 = 131,072 B; the global
    block grows to 32 tokens (unify_kv_cache_spec_page_size); 5 sliding groups and 1 full of
    10 layers; 40 GiB // 262,144 B // 10 layers = 16,384 blocks."""
    result = runner.invoke(app, ["kvmem", "estimate", "--config", str(FIXTURES / "gemma-4-31b"),
                                 "--kv-memory", "40GiB", "--engine", "vllm@0.21", "--json"])
    assert result.exit_code == 0, result.output
    engine = json.loads(result.stdout)["engine"]
    groups = engine["groups"]
    assert sorted(g["kind"] for g in groups) == ["full"] + ["sliding"] * 5
    assert {g["page_bytes"] for g in groups} == {262_144}
    assert {g["kind"]: g["block_size"] for g in groups} == {"sliding": 16, "full": 32}
    assert engine["num_blocks"] == 40 * 2**30 // 262_144 // 10 == 16_384


def test_gemma4_e4b_shares_kv_and_widens_global_heads() -> None:
    """Gemma-4-E4B: 42 layers (5 sliding of 512, 1 global), the last 18 reading layer 22's
    (sliding) or 23's (global) cache: 24 hold one, 20 sliding of 2 kv heads x 256 (2,048 B per
    token) and 4 global of 2 kv heads x 512 (4,096 B; no attention_k_eq_v): 57,344 B."""
    a = arch("gemma-4-e4b")
    assert a.attention.kv_shared_layers == 18 and a.attention.global_kv_heads is None
    lay = kv_layout(a)
    assert (lay.counts["sliding"], lay.counts["full"]) == (20, 4)
    assert lay.token_bytes == {"sliding": 2_048, "full": 4_096}
    assert lay.bytes_per_token == 20 * 2_048 + 4 * 4_096 == 57_344
    assert lay.layers[-2:] == ("sliding", "full")


def test_sliding_layers_with_their_own_head_size_are_refused() -> None:
    """A sliding layer's own K head size (swa_head_dim) is not modelled: refused, not misread.
    MiMo-V2-Flash states one equal to head_dim (192), which is accepted."""
    config = json.loads((FIXTURES / "mimo-v2-flash" / "config.json").read_text())
    config["swa_head_dim"] = 128
    try:
        architecture_from_config(config, where="config.json")
    except InputError as e:
        assert "swa_head_dim" in str(e)
    else:
        raise AssertionError("sliding layers' own head size was read as the common one")


def test_mimo_v2_flash_kv_layout() -> None:
    """MiMo-V2-Flash (XiaomiMiMo/MiMo-V2-Flash config.json): hybrid_layer_pattern 1 = sliding,
    0 = full (vLLM mimo_v2_flash.py, v0.14: is_compressed_softmax_layer); layer 0 and every
    6th from layer 5 are full: 9 full, 39 sliding. Sliding layers: swa_num_key_value_heads 8,
    a 128-token window (sliding_window_size; its attention_chunk_size 128 is not Llama-4's
    chunking); full layers: num_key_value_heads 4; K 192, V 128 (v_head_dim) everywhere.
    Per token and layer in bf16: full 4 x (192 + 128) x 2 = 2,560 B; sliding 8 x 320 x 2 =
    5,120 B; all layers 9 x 2,560 + 39 x 5,120 = 222,720 B."""
    a = arch("mimo-v2-flash")
    assert (a.layers, a.kv_heads, a.head_dim) == (48, 8, 192)
    att = a.attention
    assert (att.type, att.window, att.chunked) == ("sliding", 128, False)
    assert (att.global_kv_heads, att.global_head_dim, att.v_head_dim) == (4, None, 128)
    kinds = att.layer_kinds(48)
    assert [i for i, k in enumerate(kinds) if k == "full"] == [0, 5, 11, 17, 23, 29, 35, 41, 47]
    lay = kv_layout(a)
    assert (lay.counts["full"], lay.counts["sliding"]) == (9, 39)
    assert lay.token_bytes == {"full": 2_560, "sliding": 5_120}
    assert lay.bytes_per_token == 9 * 2_560 + 39 * 5_120 == 222_720
    # TP 4: full layers 1 head per GPU (4 / 4), sliding 2 (8 / 4): 640 and 1,280 B
    assert kv_layout(a, tp=4).token_bytes == {"full": 640, "sliding": 1_280}
    # TP 8: the full layers' 4 heads are replicated, one per GPU, as the sliding layers' 8 / 8
    assert kv_layout(a, tp=8).token_bytes == {"full": 640, "sliding": 640}


def test_mimo_v2_flash_catalog_entry_is_its_config() -> None:
    from tokcost.catalog import load_catalog

    entry = load_catalog().resolve("mimo-v2-flash").architecture
    assert entry is not None
    assert kv_layout(entry).token_bytes == kv_layout(arch("mimo-v2-flash")).token_bytes
    assert entry.attention.layer_kinds(48) == arch("mimo-v2-flash").attention.layer_kinds(48)


def test_v_head_size_apart_from_k() -> None:
    """V's head size where the config gives one apart from K's (v_head_dim, as MiMo-V2's full
    layers: 4 kv heads x (192 + 128) x 2 B = 2,560 B per token per layer; vLLM
    FullAttentionSpec: block x heads x (head_size + head_size_v) x dtype)."""
    config = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 4096,
              "num_attention_heads": 64, "num_key_value_heads": 4, "head_dim": 192,
              "v_head_dim": 128}
    a = architecture_from_config(config, where="config.json")
    assert a.attention.v_head_dim == 128
    lay = kv_layout(a)
    assert lay.bytes_per_token == 2 * 4 * (192 + 128) * 2 == 5_120
    assert lay.kv_heads_per_gpu is None
    assert kv_layout(a, "nvfp4").token_bytes["full"] == 4 * (96 + 12 + 64 + 8)
    # a v_head_dim equal to head_dim changes nothing
    same = architecture_from_config({**config, "v_head_dim": 192}, where="config.json")
    assert same.attention.v_head_dim is None and kv_layout(same).kv_heads_per_gpu == 4


def test_granite4_mamba2_state_and_attention() -> None:
    """Granite-4.0-H-Small: 36 Mamba2 layers and 4 attention layers of 8 kv heads x 128. A Mamba2
    state (vLLM MambaStateShapeCalculator.mamba2_state_shape): conv (4 - 1) x (8,192 + 2 x 1 x
    128) = 25,344 plus 128 heads x 64 x 128 = 1,048,576 elements, 2,147,840 B in bf16."""
    a = arch("granite-4.0-h-small")
    assert a.attention.type == "hybrid" and a.attention.linear_state_elements == 1_073_920
    lay = kv_layout(a)
    assert (lay.counts["full"], lay.counts["linear"]) == (4, 36)
    assert lay.bytes_per_token == 4 * 8 * 128 * 2 * 2 == 16_384
    assert lay.state_bytes == 2_147_840
    assert (a.experts, a.experts_per_token) == (72, 10)


def test_falcon_h1_holds_attention_and_mamba_in_every_layer() -> None:
    """Falcon-H1-7B: 44 layers, each with attention (2 kv heads x 128: 1,024 B per token) and a
    Mamba2 state over mamba_d_ssm 3,072: 3 x (3,072 + 2 x 256) + 24 x 128 x 256 = 797,184
    elements; vLLM gives 44 full and 44 Mamba specs, one group each."""
    from tokcost.memory.engines.vllm import plan_vllm

    a = arch("falcon-h1-7b")
    assert a.layers == 44 and a.attention.parallel_linear
    assert a.attention.linear_state_elements == 797_184
    lay = kv_layout(a)
    assert (lay.counts["full"], lay.counts["linear"]) == (44, 44)
    assert lay.bytes_per_token == 44 * 1024 and lay.state_bytes == 1_594_368
    plan = plan_vllm(lay, available=20 * 2**30, max_num_batched_tokens=8192)
    assert sorted(g.spec.kind for g in plan.groups) == ["full", "mamba"]
    # the attention block grows to cover the state: 16 x cdiv(1,594,368, 16 x 1,024) = 1,568
    assert plan.block_size == 1568
    result = runner.invoke(app, ["kvmem", "estimate", "--config", str(FIXTURES / "falcon-h1-7b"),
                                 "--kv-memory", "20GiB", "--pp", "2"])
    assert result.exit_code != 0 and "--pp" in result.output


def test_minimax_lightning_layers_hold_a_heads_x_dim_squared_state() -> None:
    """MiniMax-Text-01: attn_type_list gives 70 lightning (0) and 10 softmax (1) layers; a
    lightning layer's state is 64 heads x 128 x 128 = 1,048,576 elements (vLLM's
    linear_attention_state_shape), 2 MiB in bf16, TP8 splitting the heads: 256 KiB."""
    a = arch("minimax-text-01")
    assert a.attention.linear_state_elements == 64 * 128 * 128
    kinds = a.attention.layer_kinds(a.layers)
    assert kinds.count("full") == 10 and kinds[7::8] == ("full",) * 10
    assert kv_layout(a).state_bytes == 2 * 2**20
    lay = kv_layout(a, tp=8)
    assert lay.state_bytes == 256 * 2**10 and lay.bytes_per_token == 10 * 512
    config = json.loads((FIXTURES / "minimax-text-01" / "config.json").read_text())
    config["attn_type_list"] = [0, 2] * 40
    try:
        architecture_from_config(config, where="config.json")
    except InputError as e:
        assert "attn_type_list must list 0 or 1" in str(e)
    else:
        raise AssertionError("an attention type 2 was accepted")


def test_mamba2_groups_are_padded_to_the_tp_size() -> None:
    """vLLM pads Mamba2's n_groups to the TP size when it does not divide them
    (extra_groups_for_head_shards): Granite-4.0-H-Small's one group at TP4 is on every rank.
    Per GPU: conv 3 x (8,192 / 4 + 2 x 1 x 128) = 6,912 plus 32 heads x 64 x 128 = 262,144:
    269,056 elements, 538,112 B (not 1,073,920 / 4 = 268,480)."""
    a = arch("granite-4.0-h-small")
    assert (a.attention.mamba_groups, a.attention.mamba_group_elements) == (1, 3 * 2 * 128)
    assert kv_layout(a, tp=4).state_bytes == 269_056 * 2
    assert kv_layout(a, tp=1).state_bytes == 1_073_920 * 2


def test_gemma4_31b_weights_from_config() -> None:
    """The text model's parameters, tensor by tensor (Gemma4TextAttention: no v_proj on the
    k_eq_v global layers): 30,697,345,340, Google's published 30.7B (model card) rounded.
    Per-layer embeddings, KV sharing and MoE: tests/test_hf_params.py."""
    from tokcost.catalog.hf_params import config_weights

    config = json.loads((FIXTURES / "gemma-4-31b" / "config.json").read_text())
    found = config_weights(config, "config.json")
    assert not isinstance(found, str), found
    assert found.params == 30_697_345_340 and round(found.params / 1e8) == 307
    assert found.bytes == 2 * found.params


def test_qwen36_keeps_its_ssm_state_in_float32() -> None:
    """Qwen3.6-35B-A3B: 30 Gated DeltaNet + 10 full layers (2 kv heads of 256). Its config's
    mamba_ssm_dtype float32 is the SSM cache dtype in vLLM (PR #34489): state per layer = conv
    3 x (2 x 16 x 128 + 32 x 128) x 2 B + 32 x 128 x 128 x 4 B = 49,152 + 2,097,152 B."""
    a = arch("qwen3.6-35b-a3b")
    assert a.attention.type == "hybrid" and a.layers == 40
    assert a.attention.layer_kinds(40).count("full") == 10
    assert (a.kv_heads, a.head_dim) == (2, 256)
    assert a.attention.linear_state_elements == 24_576 + 524_288
    assert a.attention.linear_fp32_elements == 524_288
    layout = kv_layout(a, "fp8")
    assert layout.state_bytes == 49_152 + 2_097_152
    assert layout.bytes_per_token == 10 * 2 * 2 * 256
    # TP2 halves both parts; Qwen3-Next's config states no mamba_ssm_dtype: all bf16
    assert kv_layout(a, "fp8", tp=2).state_bytes == (49_152 + 2_097_152) // 2
    nxt = json.loads((Path(__file__).parent / "fixtures" / "hf_configs" / "qwen3-next-80b-a3b" /
                      "config.json").read_text())
    assert architecture_from_config(nxt, where="config.json").attention.linear_fp32_elements is None


def _estimate(*args: str) -> Any:
    return runner.invoke(app, ["kvmem", "estimate", *args])


def test_qwen36_prefix_caching_reproduces_club_3090_612() -> None:
    """vLLM v0.24, fp8 KV, --enable-prefix-caching, 5.98 GiB (club-3090 issue 612): 299
    blocks of 2,096 tokens, 69 per request of 131,072 ("align": 2 per linear group)."""
    base = ("--config", str(FIXTURES / "qwen3.6-35b-a3b"), "--kv-memory", "5.98GiB", "--engine",
            "vllm@0.24", "--kv-dtype", "fp8", "--context", "131072", "--json")
    on = json.loads(_estimate(*base, "--enable-prefix-caching").stdout)["engine"]
    assert on["num_blocks"] == 299 and on["blocks_per_request"] == 69
    assert on["mamba_cache_mode"] == "align"
    assert "GPU KV cache size: 567,978 tokens" in on["logged_lines"]
    assert "Maximum concurrency for 131,072 tokens per request: 4.33x" in on["logged_lines"]
    off = json.loads(_estimate(*base).stdout)["engine"]
    assert off["blocks_per_request"] == 66 and "mamba_cache_mode" not in off


def test_prefix_caching_refusals_name_the_reason() -> None:
    """Prefix caching on a linear hybrid is modelled from v0.15 (PR #30877, in the v0.15.0
    wheel; v0.14.0 has no mamba_cache_mode); it is vLLM's own setting only. (Qwen3-Next: v0.14
    serves Qwen3NextForCausalLM; Qwen3.6's class came in v0.17, so v0.14 refuses it first.)"""
    r = _estimate("-m", "qwen3-next-80b-a3b", "--kv-memory", "4GiB",
                  "--engine", "vllm@0.14", "--enable-prefix-caching")
    assert r.exit_code == 2 and "vllm@0.15" in r.output
    r = _estimate("-m", "qwen3-next-80b-a3b", "--kv-memory", "4GiB", "--engine", "sglang",
                  "--enable-prefix-caching")
    assert r.exit_code == 2 and "vLLM's setting" in r.output


def test_a_short_hybrid_layer_pattern_is_one_line(tmp_path: Path) -> None:
    config = json.loads((FIXTURES / "mimo-v2-flash" / "config.json").read_text())
    config["hybrid_layer_pattern"] = config["hybrid_layer_pattern"][:40]
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = runner.invoke(app, ["kvmem", "estimate", "--config", str(tmp_path),
                                 "--context", "8k", "--kv-memory", "10GiB"])
    assert result.exit_code == 1
    assert "hybrid_layer_pattern must list 0 or 1 for each of the 48 layers" in result.output
    assert "Traceback" not in result.output
