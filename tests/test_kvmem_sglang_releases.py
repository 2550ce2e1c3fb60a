"""SGLang by release (issue 28, part 1): ``sglang@0.4`` is v0.4.10, ``sglang@0.5`` v0.5.23, the
oldest modelled v0.4.6. One test per rule; each expected figure is worked in its docstring from
the arithmetic of the release's own source (python/sglang/srt/ of the PyPI release, cited in
tokcost/memory/engines/sglang.py). GPUs as the catalog has them: H100 81,559 MiB, H200 143,771
MiB, B200 183,359 MiB, L4 23,034 MiB.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kvmem_cli import refused
from typer.testing import CliRunner

from tokcost.catalog import load_catalog
from tokcost.catalog.hf_config import architecture_from_config
from tokcost.cli.app import app
from tokcost.memory.engines.base import Deployment, Release
from tokcost.memory.engines.sglang import Sglang, default_mem_fraction_static, prefill_graph_sizes
from tokcost.memory.engines.vllm import Vllm
from tokcost.memory.kv import kv_layout

MiB, GiB = 2**20, 2**30
H100, H200, B200, L4 = 81_559 * MiB, 143_771 * MiB, 183_359 * MiB, 23_034 * MiB
LLAMA4 = Path(__file__).parent / "fixtures" / "hf_configs_families" / "llama-4-scout"
runner = CliRunner()


def estimate(*args: str) -> dict:
    result = runner.invoke(app, ["kvmem", "estimate", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def fraction(memory: int, release: str, tp: int = 1, pp: int = 1, **kw: bool) -> float:
    return default_mem_fraction_static(memory, tp, pp, Sglang.release_of(release), **kw)[0]


# --- releases ------------------------------------------------------------------------------

@pytest.mark.parametrize(("given", "release"), [
    ("0.4", Release(0, 4, 10)), ("0.5", Release(0, 5, 23)), ("v0.5.9", Release(0, 5, 9)),
    ("0.5.6.post2", Release(0, 5, 6)),
    ("0.4.6", Release(0, 4, 6)), ("0.5.30", Release(0, 5, 30)), ("0.6", Release(0, 6, 0))])
def test_a_minor_stands_for_its_newest_patch(given: str, release: Release) -> None:
    assert Sglang.release_of(given) == release
    assert Sglang().release == Release(0, 5, 23)


def test_vllm_keeps_minor_releases() -> None:
    """vLLM declares no patches: a patch is read as its minor's, as before."""
    assert Vllm.release_of("0.20.1") == Release(0, 20) and str(Release(0, 20)) == "v0.20"


@pytest.mark.parametrize(("engine", "words"), [
    ("sglang", "SGLang v0.5.23 (the newest release tokcost models)"),
    ("sglang@0.5", "SGLang v0.5.23 (the newest release tokcost models)"),
    ("sglang@0.4", "SGLang v0.4.10 (sglang@0.4.10)"),
    ("sglang@0.6", "SGLang v0.6.0 (sized by v0.5.23's rules: it is newer than v0.5.23")])
def test_the_estimate_says_which_release(engine: str, words: str) -> None:
    assert estimate("-m", "llama-3.1-8b", "--engine", engine)["engine"]["version"].startswith(
        words)


@pytest.mark.parametrize(("engine", "fragment"), [
    ("sglang@0.4.5", "is older than tokcost models: SGLang v0.4.6 to v0.5.23"),
    ("sglang@0.5.x", "write the version as MAJOR.MINOR[.PATCH], e.g. sglang@0.5.23")])
def test_bad_sglang_release_is_one_line(engine: str, fragment: str) -> None:
    assert fragment in refused("-m", "llama-3.1-8b", "--engine", engine)


# --- default mem_fraction_static ----------------------------------------------------------

def test_v0_4_6_table_by_tp_and_13_gib_above_80() -> None:
    """v0.4.6 server_args.py: up to 81,920 MiB by tp (1: 0.88, 8: 0.81); above, 13 GiB kept:
    (143,771 - 13,312) / 143,771 = 0.9074..., unrounded."""
    assert fraction(H100, "0.4.6") == 0.88 and fraction(H100, "0.4.6", tp=8) == 0.81
    assert fraction(H200, "0.4.6") == (143_771 - 13_312) / 143_771


def test_v0_4_7_tp_times_pp_and_18_gib_on_h200() -> None:
    """v0.4.7 (PR #5893): the table by tp x pp (tp 4, pp 2: 8 -> 0.81); above 80 GiB 0.88,
    then min(0.88 + 48 GiB x 0.12 / 143,771, (143,771 - 18,432) / 143,771) = 0.87179...
    on H200; over 180,000 MiB (B200) 0.79."""
    assert fraction(H100, "0.4.7", tp=4, pp=2) == 0.81
    assert fraction(H200, "0.4.7") == (143_771 - 18_432) / 143_771
    assert fraction(B200, "0.4.7") == 0.79


def test_v0_4_8_reserve_by_tier() -> None:
    """v0.4.8 to v0.5.2 (PR #7054): GiB kept by tier: H100 9.5 + 1/2 = 10 GiB ->
    (81,559 - 10,240) / 81,559 = 0.874; H200 at tp 2, 12 + 1 = 13 GiB -> 0.907;
    B200 32 GiB -> (183,359 - 32,768) / 183,359 = 0.821; L4 2.8 + 0.1 -> 2,969.6 MiB -> 0.871."""
    assert fraction(H100, "0.4.8") == 0.874
    assert fraction(H200, "0.4.10", tp=2) == 0.907
    assert fraction(B200, "0.5.2") == 0.821
    assert fraction(L4, "0.4.9") == 0.871


def test_v0_5_3_reserve_from_chunk_and_cuda_graphs() -> None:
    """PR #10975 (v0.5.3): 512 + 1.5 x 8,192 + 2 x 256 + 1,024 / 8 = 13,440 MiB on H100 ->
    (81,559 - 13,440) / 81,559 = 0.835; at least 10 GiB above 60 GiB."""
    assert fraction(H100, "0.5.3") == 0.835
    assert fraction(H100, "0.5.9") == 0.835


def test_small_gpus_take_24_cuda_graphs_from_v0_5_5() -> None:
    """L4: 512 + 1.5 x 2,048 + 2 x 16 + 128 = 3,744 MiB (v0.5.4), 2 x 24: 3,760 (v0.5.5)."""
    assert "(23,034 MiB - 3,744 MiB" in default_mem_fraction_static(
        L4, 1, 1, Release(0, 5, 4))[1]
    assert "(23,034 MiB - 3,760 MiB" in default_mem_fraction_static(
        L4, 1, 1, Release(0, 5, 5))[1]


def test_v0_5_10_reserves_prefill_cuda_graphs() -> None:
    """Prefill (piecewise) CUDA graphs on by default from v0.5.10, 8 MiB per captured size:
    8 + 14 + 8 + 8 + 12 sizes up to 4,096, 8 more to 8,192 = 58; 13,440 + 464 = 13,904 MiB
    -> 0.830 on H100. MLA: 1.5 GiB: DeepSeek-V3 on H200 at tp 8: 512 + 12,288 + 1,024 + 1,024
    + 1,536 = 16,384 -> (143,771 - 16,384) / 143,771 = 0.886. None with pp 2, for Qwen3-Next,
    or on AMD GPUs."""
    assert len(prefill_graph_sizes(8192)) == 58 and len(prefill_graph_sizes(2048)) == 42
    assert fraction(H100, "0.5.10") == 0.830
    assert fraction(H200, "0.5.10", tp=8, mla=True) == 0.886
    assert fraction(H100, "0.5.10", pp=2) == fraction(H100, "0.5.9", pp=2)
    assert fraction(H100, "0.5.10", prefill_graph=False) == 0.835
    qwen = estimate("-m", "qwen3-next-80b-a3b", "--gpu", "H200", "--tp", "4",
                    "--engine", "sglang")["engine"]
    assert "prefill CUDA graphs" not in qwen["mem_fraction_static_source"]
    # ROCm: none either (is_hip; CUDA-only default_prefill_backend in v0.5.23).
    amd = estimate("-m", "llama-3.1-70b", "--gpu", "MI300X", "--engine", "sglang")["engine"]
    assert "prefill CUDA graphs" not in amd["mem_fraction_static_source"]


def test_v0_5_20_small_gpus_and_no_gpu() -> None:
    """PR #37898 (v0.5.20): 20-35 GiB GPUs chunk 4,096 with 48 graphs: L4 512 + 6,144 + 96 +
    128 + 50 x 8 = 7,280 MiB -> (23,034 - 7,280) / 23,034 = 0.684; v0.5.19: 512 + 3,072 + 48 +
    128 + 42 x 8 = 4,096 -> 0.822. Without a GPU 0.95 (0.88 before)."""
    assert fraction(L4, "0.5.20") == 0.684 and fraction(L4, "0.5.19") == 0.822
    assert default_mem_fraction_static(None, 1, 1)[0] == 0.95
    assert default_mem_fraction_static(None, 1, 1, Release(0, 5, 19))[0] == 0.88


# --- pools --------------------------------------------------------------------------------

@pytest.mark.parametrize(("engine", "pools"), [
    ("sglang@0.4.9", False), ("sglang@0.4.10", True), ("sglang@0.5.1", False),
    ("sglang", False)])
def test_gemma3_swa_pool_only_in_v0_4_10(engine: str, pools: bool) -> None:
    """v0.4.10 model_runner.py gave every windowed model but Llama-4 the SWA pool; v0.5.1
    turned it off for Gemma-2/3 (disable_hybrid_swa_memory) and v0.5.8's is_hybrid_swa_model
    leaves them out. Gemma-3-27B, 20 GiB, 10 full + 52 sliding layers of 8,192 B: 20 GiB //
    507,904 = 42,281 tokens; v0.4.10 by layers: full = int(42,281 x 62 / (10 + 0.8 x 52)) =
    int(50,802.4) = 50,802 (and SWA int(0.8 x 50,802) = 40,641)."""
    e = estimate("-m", "gemma-3-27b", "--kv-memory", "20GiB", "--engine", engine)["engine"]
    assert e["hybrid_swa_pools"] is pools
    assert e["full_pool_tokens"] == (50_802 if pools else 42_281)
    assert e["swa_pool_tokens"] == (40_641 if pools else None)


@pytest.mark.parametrize(("engine", "pools"), [("sglang@0.5.7", False), ("sglang@0.5.8", True)])
def test_gpt_oss_and_llama4_swa_pools_from_v0_5_8(engine: str, pools: bool) -> None:
    """v0.5.1 to v0.5.7 server_args.py turned the pool off for gpt-oss; v0.5.8's
    is_hybrid_swa_model lists GptOss and Llama-4 (which needed --hybrid-kvcache-ratio before)."""
    for model in (["-m", "gpt-oss-120b"], ["--config", str(LLAMA4)]):
        e = estimate(*model, "--kv-memory", "20GiB", "--engine", engine)["engine"]
        assert e["hybrid_swa_pools"] is pools


@pytest.mark.parametrize(("engine", "full", "swa"), [
    ("sglang", 86_405, 69_124), ("sglang@0.5.10", 86_404, 69_123),
    ("sglang@0.5.8", 86_404, 69_123)])
def test_swa_pool_split_by_release(engine: str, full: int, swa: int) -> None:
    """gpt-oss-120b, 5,733,456,542 B (the H100 golden's pool), F = S = 18 x 2,048 = 36,864 B.
    v0.5.11 on (pool_configurator.py): the cell counts the SWA pool at the ratio, full =
    5,733,456,542 // (36,864 + 0.8 x 36,864) = 86,405 (86,405.5); v0.5.9/v0.5.10: tokens
    5,733,456,542 // 73,728 = 77,764, full = int(77,764 x 73,728 / 66,355.2) = 86,404; v0.5.8
    by layers: int(77,764 x 36 / (0.8 x 18 + 18)) = 86,404. SWA: int(0.8 x full)."""
    e = estimate("-m", "gpt-oss-120b", "--kv-memory", "5733456542B",
                 "--engine", engine)["engine"]
    assert (e["full_pool_tokens"], e["swa_pool_tokens"]) == (full, swa)


def test_a_config_model_type_reads_as_its_family() -> None:
    """--config gives the model_type (gpt_oss, gemma3), which the release rules read as the
    catalog's family: gpt-oss-120b's SWA pools as the catalog entry's (323,634 / 258,907)."""
    hf = Path(__file__).parent / "fixtures" / "hf_configs"
    e = estimate("--config", str(hf / "gpt-oss-120b"), "--kv-memory", "20GiB",
                 "--engine", "sglang")["engine"]
    assert (e["full_pool_tokens"], e["swa_pool_tokens"]) == (323_634, 258_907)
    old = estimate("--config", str(hf / "gemma-3-27b"), "--kv-memory", "20GiB",
                   "--engine", "sglang@0.4.10")["engine"]
    assert old["hybrid_swa_pools"] is True


FAMILIES = Path(__file__).parent / "fixtures" / "hf_configs_families"


@pytest.mark.parametrize(("engine", "full", "swa"), [
    ("sglang", 117_487, 93_989), ("sglang@0.5.8", 115_128, 92_102),
    ("sglang@0.5.7", 115_128, 92_102)])
def test_mimo_v2_config_gets_the_swa_pool_as_the_catalog_entry(
        engine: str, full: int, swa: int) -> None:
    """A MiMo-V2-Flash config.json (model_type mimo_v2_flash, MiMoV2FlashForCausalLM, which
    is_hybrid_swa_model lists from v0.5.8 and v0.5.7's is_hybrid_model) gets the SWA pool as
    the catalog's mimo-v2 family does. 20 GiB = 21,474,836,480 B; per token, full 9 x 4 heads x
    (192 + 128) x 2 B = 23,040 B, sliding 39 x 8 x 640 = 199,680 B. v0.5.11 on: full =
    21,474,836,480 // (23,040 + 0.8 x 199,680) = 117,487, SWA int(0.8 x 117,487) = 93,989;
    v0.5.7/v0.5.8 by layers: 21,474,836,480 // 222,720 = 96,420 tokens, full =
    int(96,420 x 48 / (0.8 x 39 + 9)) = 115,128, SWA int(0.8 x 115,128) = 92,102."""
    for model in (["--config", str(FAMILIES / "mimo-v2-flash")], ["-m", "mimo-v2-flash"]):
        e = estimate(*model, "--kv-memory", "20GiB", "--engine", engine)["engine"]
        assert e["hybrid_swa_pools"] is True
        assert (e["full_pool_tokens"], e["swa_pool_tokens"]) == (full, swa)
        # v0.5.6 has no MiMo-V2 model file (srt/models/mimo_v2_flash.py came in v0.5.7)
        assert "(it came in v0.5.7)" in refused(*model, "--kv-memory", "20GiB",
                                                "--engine", "sglang@0.5.6")


def test_mimo_v_buffer_logged_at_v_head_dim() -> None:
    """SGLang's MHATokenToKVPool keeps v_buffer at v_head_dim (memory_pool.py, v0.5.7 on), so
    MiMo-V2-Flash's logged V size is 128/192 of K's. 20 GiB, v0.5.23: full pool 117,487 tokens
    (+ 1 page) x 9 layers x 4 heads x 192 x 2 B = 1,624,154,112 B = 1.51 GiB of K and x 128:
    1,082,769,408 B = 1.01 GiB of V; SWA 93,990 x 39 x 8 x 192 x 2 = 11,262,009,600 B = 10.49 GiB
    and 7,508,006,400 B = 6.99 GiB."""
    lines = estimate("-m", "mimo-v2-flash", "--kv-memory", "20GiB",
                     "--engine", "sglang")["engine"]["logged_lines"]
    assert ("Full KV Cache is allocated. dtype: torch.bfloat16, #tokens: 117487, K size: 1.51 GB, "
            "V size: 1.01 GB") in lines
    assert ("SWA KV Cache is allocated. dtype: torch.bfloat16, #tokens: 93989, K size: 10.49 GB, "
            "V size: 6.99 GB") in lines


def test_gemma4_config_gets_the_swa_pool_as_the_catalog_entry() -> None:
    """A Gemma-4 config.json (model_type gemma4, text_config gemma4_text): the SWA pool from
    v0.5.11 (is_hybrid_swa_model lists Gemma4ForConditionalGeneration) as the catalog's gemma-4
    family; v0.5.10 has no Gemma-4 model file and refuses it. Gemma-4-31B, 20 GiB: full 10 x 4
    global heads x 2 x 512 x 2 B = 81,920 B, sliding 50 x 16 x 2 x 256 x 2 = 819,200 B; full =
    21,474,836,480 // (81,920 + 0.8 x 819,200) = 29,127, SWA int(0.8 x 29,127) = 23,301."""
    for model in (["--config", str(FAMILIES / "gemma-4-31b")], ["-m", "gemma-4-31b"]):
        e = estimate(*model, "--kv-memory", "20GiB", "--engine", "sglang")["engine"]
        assert e["hybrid_swa_pools"] is True
        assert (e["full_pool_tokens"], e["swa_pool_tokens"]) == (29_127, 23_301)
        assert "(it came in v0.5.11)" in refused(*model, "--kv-memory", "20GiB",
                                                 "--engine", "sglang@0.5.10")


def test_sliding_log_word_and_pool_labels_by_release() -> None:
    """gpt-oss-120b, 20 GiB: full 323,634, SWA 258,907 (docs/kvmem-engines.md); K = (323,634 + 1)
    x 18 x 1,024 B / 2^30 = 5.56 GB, SWA (258,907 + 1) x 18,432 B = 4.44 GB. "Use Sliding" to
    v0.5.6, "sliding" from v0.5.7; the dtype from v0.5.13 (memory_pool.py); "Full"/"SWA" KV
    Cache from v0.5.17 (swa_memory_pool.py)."""
    def lines(engine: str) -> list[str]:
        return estimate("-m", "gpt-oss-120b", "--kv-memory", "20GiB",
                        "--engine", engine)["engine"]["logged_lines"]
    assert lines("sglang@0.5.12")[:2] == [
        "Use sliding window memory pool. full_layer_tokens=323634, swa_layer_tokens=258907",
        "KV Cache is allocated. #tokens: 323634, K size: 5.56 GB, V size: 5.56 GB"]
    assert lines("sglang@0.5.16")[1] == ("KV Cache is allocated. dtype: torch.bfloat16, "
                                         "#tokens: 323634, K size: 5.56 GB, V size: 5.56 GB")
    assert lines("sglang")[1:3] == [
        "Full KV Cache is allocated. dtype: torch.bfloat16, #tokens: 323634, K size: 5.56 GB, "
        "V size: 5.56 GB",
        "SWA KV Cache is allocated. dtype: torch.bfloat16, #tokens: 258907, K size: 4.44 GB, "
        "V size: 4.44 GB"]
    old = estimate("-m", "gemma-3-27b", "--kv-memory", "20GiB", "--engine", "sglang@0.4.10")
    assert old["engine"]["logged_lines"][0].startswith("Use Sliding window memory pool.")


def test_fp8_dtype_as_torch_prints_it() -> None:
    e = estimate("-m", "llama-3.1-8b", "--kv-memory", "20GiB", "--kv-dtype", "fp8",
                 "--engine", "sglang")["engine"]
    assert e["logged_lines"][0].startswith("KV Cache is allocated. dtype: torch.float8_e4m3fn,")


def test_mamba_padding_slot_from_v0_5_17() -> None:
    """Qwen3-Next, 20 GiB: a request's state is 36 x (3 x 8,192 conv x 2 B + 32 x 128 x 128 SSM
    x 4 B) = 77,266,944 B; 20 GiB x 0.9 / 1.9 // that = 131 state slots; from v0.5.17 one is the
    pool's padding slot: (budget - per_slot) // per_slot = 130 states, the memory the same, so
    the KV pool keeps (20 GiB - 131 x 77,266,944) // 24,576 = 461,949 tokens."""
    old, new = (estimate("-m", "qwen3-next-80b-a3b", "--kv-memory", "20GiB", "--engine", e)
                ["engine"] for e in ("sglang@0.5.16", "sglang@0.5.17"))
    assert (old["max_mamba_cache_size"], new["max_mamba_cache_size"]) == (131, 130)
    assert old["cache_tokens"] == new["cache_tokens"] == 461_949


@pytest.mark.parametrize(("args", "page"), [
    (["-m", "llama-3.1-8b", "--engine", "sglang@0.5.6"], 1),
    (["-m", "llama-3.1-8b", "--engine", "sglang@0.5.7"], 64),
    (["-m", "llama-3.1-8b", "--engine", "sglang@0.5.7", "--block-size", "32"], 32),
    (["-m", "llama-3.1-8b", "--engine", "sglang@0.5.7", "--block-size", "128"], 64),
    (["-m", "llama-3.1-8b", "--engine", "sglang", "--block-size", "128"], 128),
    (["-m", "deepseek-v3", "--engine", "sglang@0.5.3"], 1),
    (["-m", "deepseek-v3", "--engine", "sglang@0.5.4"], 64),
    (["-m", "gpt-oss-120b", "--engine", "sglang@0.5.1"], 64)])
def test_blackwell_pages(args: list[str], page: int) -> None:
    """SM 10.x Blackwell: DeepSeek-V3 runs trtllm_mla from v0.5.4 (pages 32 or 64, else 64),
    gpt-oss trtllm_mha from v0.5.1 (model_specific_adjustments runs before the page check),
    Llama-4 from v0.5.6, other models from v0.5.7 (16, 32, 64; 128 too by v0.5.23; else 64)."""
    e = estimate(*args, "--gpu", "B200", "--tp", "8")["engine"]
    assert e["block_size"] == page and e["cache_tokens"] % page == 0


@pytest.mark.parametrize(("engine", "pools"), [
    ("sglang@0.5.7", False), ("sglang@0.5.9", False), ("sglang@0.5.10", True)])
def test_gpt_oss_on_blackwell_swa_pool_from_v0_5_10(engine: str, pools: bool) -> None:
    """server_args.py turned the SWA pool off for gpt-oss under trtllm_mha in v0.5.8 and
    v0.5.9 (no SWA index translation); trtllm_mha translates them from PR #18970 and v0.5.10
    keeps the pool (v0.5.7 and older: no pool for gpt-oss anywhere)."""
    e = estimate("-m", "gpt-oss-120b", "--gpu", "B200", "--kv-memory", "20GiB",
                 "--engine", engine)["engine"]
    assert e["hybrid_swa_pools"] is pools


@pytest.mark.parametrize(("release", "page"), [("0.5.5", 1), ("0.5.6", 64)])
def test_llama4_pages_on_blackwell(release: str, page: int) -> None:
    """Llama-4 (config.json only: no weights, so the library with a B200 and 40 GiB) runs
    trtllm_mha on SM 10.x from v0.5.6 (server_args.py): 64-token pages."""
    config = json.loads((LLAMA4 / "config.json").read_text())
    layout = kv_layout(architecture_from_config(config, where="config.json"))
    b200 = next(g for g in load_catalog().gpus if g.name == "B200")
    plan = Sglang(release=Sglang.release_of(release)).pools(
        Deployment(layout=layout, gpu=b200), 40 * GiB)
    assert plan.block_size == page and plan.hybrid_swa is False


def test_rtx_5090_is_not_sm100() -> None:
    """trtllm_mha is SM 10.x only; the RTX 5090 (SM 12.0) keeps token pages (PR #14842)."""
    assert estimate("-m", "llama-3.1-8b", "--gpu", "RTX-5090",
                    "--engine", "sglang")["engine"]["block_size"] == 1


# --- what a release serves and refuses -----------------------------------------------------

@pytest.mark.parametrize(("model", "engine", "fragment"), [
    ("gpt-oss-120b", "sglang@0.4", "SGLang v0.4.10 has no model code for gpt-oss-120b (it came "
     "in v0.5.1)"),
    ("gemma-4-31b", "sglang@0.5.10", "(it came in v0.5.11)"),
    ("qwen3-next-80b-a3b", "sglang@0.5.3", "Mamba state pool is modelled from v0.5.4")])
def test_families_a_release_does_not_serve(model: str, engine: str, fragment: str) -> None:
    assert fragment in refused("-m", model, "--kv-memory", "20GiB", "--engine", engine)


def test_context_past_the_model_starts_in_v0_4() -> None:
    """SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN defaulted to True to v0.4.10: a warning, not
    a refusal; v0.5.1 raises (configs/model_config.py)."""
    old = estimate("-m", "llama-3.1-8b", "--context", "200k", "--gpu", "H100",
                   "--engine", "sglang@0.4")
    assert old["engine"]["refuses_to_start"] is False and old["contexts"][0]["fits"] is True
    new = estimate("-m", "llama-3.1-8b", "--context", "200k", "--gpu", "H100",
                   "--engine", "sglang@0.5.1")
    assert new["engine"]["refusal"].startswith("Warning: User-specified context_length (200000)")
    note = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--context", "200k",
                               "--gpu", "H100", "--engine", "sglang@0.4"])
    assert "starts past the model's context_length (131,072) with a warning" in " ".join(
        note.output.split())


@pytest.mark.parametrize(("engine", "text"), [
    ("sglang@0.5.2", "Not enough memory. Please try to increase --mem-fraction-static."),
    ("sglang@0.5.3", "Not enough memory. Please try to increase --mem-fraction-static. Current "
     "value: self.server_args.mem_fraction_static=0.5"),
    ("sglang", "Not enough memory. Please try to increase --mem-fraction-static. Current value: "
     "mem_fraction_static=0.5")])
def test_empty_pool_refusal_by_release(engine: str, text: str) -> None:
    """0.5 of 32,120,131,072 B less llama-3.1-8b's 16,060,000,000 B of weights leaves 65,536
    B, half a token of 131,072 B: max_total_num_tokens 0, and the release's RuntimeError
    (model_runner.py; the fraction printed from v0.5.3, reworded in v0.5.10)."""
    e = estimate("-m", "llama-3.1-8b", "--gpu-memory", "32120131072B",
                 "--mem-fraction-static", "0.5", "--engine", engine)["engine"]
    assert e["cache_tokens"] == 0 and e["refusal"] == text


# NVIDIA-Nemotron-3-Nano-30B-A3B's config.json (huggingface.co/nvidia/NVIDIA-Nemotron-3-Nano-
# 30B-A3B-BF16): 23 Mamba2 (M), 23 MoE (E) and 6 attention (*) layers.
NEMOTRON_3_NANO = {
    "model_type": "nemotron_h", "hidden_size": 2688, "num_hidden_layers": 52,
    "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
    "mamba_num_heads": 64, "mamba_head_dim": 64, "ssm_state_size": 128, "n_groups": 8,
    "conv_kernel": 4, "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128}


@pytest.mark.parametrize(("tp", "per_layer"), [
    # conv (4 - 1) x (64 x 64 + 2 x 8 x 128) = 18,432 bf16, SSM 64 x 64 x 128 = 524,288 fp32:
    (1, 18_432 * 2 + 524_288 * 4),  # 2,134,016 B (the whole state in fp32: 2,170,880)
    (8, 18_432 // 8 * 2 + 524_288 // 8 * 4)])
def test_sglang_mamba_state_conv_bf16_ssm_fp32(tp: int, per_layer: int) -> None:
    """Mamba2CacheParams.mamba_cache_per_req: conv in bf16, temporal in float32 (v0.5.4 on)."""
    from tokcost.memory.engines.sglang import mamba_state_bytes
    from tokcost.memory.kv import kv_layout
    layout = kv_layout(architecture_from_config(NEMOTRON_3_NANO, where="config.json"), tp=tp)
    for release in ("0.5.4", "0.5.8", "0.5.23"):
        assert mamba_state_bytes(layout, Sglang.release_of(release)) == per_layer
    plan = Sglang().pools(Deployment(layout=layout), None)
    assert plan.state_bytes == 23 * per_layer


def test_sglang_reads_the_configs_mamba_ssm_dtype_from_v0_5_9() -> None:
    """mamba2_state_dtype(config) (configs/mamba_utils.py, v0.5.9): a config's bfloat16 SSM
    state is 2 B; before, --mamba-ssm-dtype's float32 default held whatever the config said."""
    from tokcost.memory.engines.sglang import mamba_state_bytes
    from tokcost.memory.kv import kv_layout
    config = {**NEMOTRON_3_NANO, "mamba_ssm_dtype": "bfloat16"}
    layout = kv_layout(architecture_from_config(config, where="config.json"))
    assert layout.ssm_dtype == "bf16"
    assert mamba_state_bytes(layout, Sglang.release_of("0.5.8")) == 18_432 * 2 + 524_288 * 4
    assert mamba_state_bytes(layout, Sglang.release_of("0.5.9")) == (18_432 + 524_288) * 2


def test_catalog_granite_4_h_small_state_as_its_config() -> None:
    """The catalog's granite-4.0-h-small holds the SSM split its config.json gives: 36 x (25,344
    conv x 2 B + 1,048,576 SSM x 4 B) = 152,819,712 B a request under SGLang."""
    from tokcost.memory.kv import kv_layout
    config = json.loads((FAMILIES / "granite-4.0-h-small" / "config.json").read_text())
    from_config = architecture_from_config(config, where="config.json")
    catalog = load_catalog().resolve("granite-4.0-h-small").architecture
    assert catalog is not None and catalog.attention == from_config.attention
    plan = Sglang().pools(Deployment(layout=kv_layout(catalog)), None)
    assert plan.state_bytes == 36 * (25_344 * 2 + 1_048_576 * 4) == 152_819_712


def test_sglang_gives_the_layers_left_over_to_the_last_stages() -> None:
    """get_pp_indices: SGLang's (srt/distributed/utils.py) gives the remainder to the last
    ``remainder`` stages, vLLM's (vllm/distributed/utils.py) to the stages before the last.
    62 layers on 4 stages: 15 each and 2 left over."""
    from tokcost.memory.kv import pp_stages
    assert [len(s) for s in pp_stages(62, 4)] == [15, 16, 16, 15]
    assert [len(s) for s in pp_stages(62, 4, extra_last=True)] == [15, 15, 16, 16]
    assert pp_stages(62, 4, extra_last=True)[-1] == range(46, 62)
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "gemma-3-27b", "--engine", "sglang",
                                 "--pp", "4", "--kv-memory", "10GiB"])
    assert result.exit_code == 0, result.output
    assert "4 stages of 15, 15, 16, 16 layers (SGLang's split" in " ".join(result.output.split())
    vllm = runner.invoke(app, ["kvmem", "estimate", "-m", "gemma-3-27b", "--pp", "4",
                               "--kv-memory", "10GiB"])
    assert "4 stages of 15, 16, 16, 15 layers (vLLM's split" in " ".join(vllm.output.split())
