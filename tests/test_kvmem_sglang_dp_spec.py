"""SGLang's DP attention and speculative decoding (issue 28). Each expected figure is worked in
its test from the arithmetic of the release's own source (python/sglang/srt/ of the PyPI
release: server_args.py, arg_groups/memory_hook.py, model_executor/pool_configurator.py; cited in
tokcost/memory/engines/sglang.py). GPUs as the catalog has them: H100 81,559 MiB, H200 143,771
MiB. DeepSeek-V3 on TP 8 in bf16: 61 MLA layers x (512 + 64) x 2 B = 70,272 B per token.
"""

from __future__ import annotations

import json

import pytest
from kvmem_cli import refused
from typer.testing import CliRunner

from tokcost.catalog.schema import Architecture
from tokcost.cli.app import app
from tokcost.errors import UsageError
from tokcost.memory.engines.base import Deployment
from tokcost.memory.engines.sglang import (
    Sglang,
    default_mem_fraction_static,
    dp_attention_reserve,
    speculative_reserve,
)
from tokcost.memory.kv import kv_layout

MiB, GiB = 2**20, 2**30
H100, H200 = 81_559 * MiB, 143_771 * MiB
runner = CliRunner()


def estimate(*args: str) -> dict:
    result = runner.invoke(app, ["kvmem", "estimate", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def fraction(memory: int, release: str, tp: int = 8, **kw: object) -> float:
    return default_mem_fraction_static(memory, tp, 1, Sglang.release_of(release),
                                       **kw)[0]  # type: ignore[arg-type]


DSV3 = ("-m", "deepseek-v3", "--gpu", "H200", "--tp", "8", "--context", "32k")


# --- DP attention: kv heads -----------------------------------------------------------------

def test_dp_attention_splits_kv_heads_over_the_attention_tp() -> None:
    """Llama-3.1-70B, 8 kv heads of 128, 80 layers, --tp 8 --dp 4: get_num_kv_heads(
    attn_tp_size 8 / 4 = 2) = 4 heads per GPU, 80 x 4 x 128 x 2 x 2 B = 163,840 B per token;
    without DP attention TP 8 leaves one head, 40,960 B."""
    base = ("-m", "llama-3.1-70b", "--tp", "8", "--dp", "4", "--engine", "sglang")
    assert estimate(*base)["bytes_per_token"] == 40_960
    dp = estimate(*base, "--enable-dp-attention")
    assert dp["bytes_per_token"] == 163_840 and dp["kv_heads_per_gpu"] == 4
    assert dp["tp"] == 8 and dp["dp"] == 4
    assert any("DP attention runs 4 attention ranks of 2 GPUs" in n for n in dp["notes"])


def test_dp_attention_leaves_the_mla_latent_alone() -> None:
    """MLA's latent is per GPU whatever the split: 70,272 B per token with or without."""
    out = estimate(*DSV3, "--engine", "sglang", "--dp", "8", "--enable-dp-attention")
    assert out["bytes_per_token"] == 70_272
    assert out["engine"]["attention_dp"] == 8
    # the note says how the ranks sit, not that a latent with no kv heads splits "1 way, not 8"
    ranks = [n for n in out["notes"] if "DP attention runs 8 attention ranks of 1 GPU" in n]
    assert len(ranks) == 1 and "kv heads" not in ranks[0]


# --- DP attention: the default fraction -------------------------------------------------------

def test_dp_reserve_v0_5_23() -> None:
    """memory_hook.py reserve_for_graph_mb: max_bs 512 (H200, tp >= 4) x dp 8 x 3 = 12,288 and,
    max_bs past 300, x 1.5 more = 6,144: 18,432 MiB. reserved = 512 + 8,192 x 1.5 + 512 x 2 +
    8 / 8 x 1,024 + 18,432 + 1,536 (MLA prefill graphs, kept with DP attention from v0.5.19) =
    34,816 MiB; (143,771 - 34,816) / 143,771 = 0.75784 -> 0.758."""
    assert dp_attention_reserve(512, 8) == 18_432
    assert dp_attention_reserve(256, 4) == 3_072  # 256 x 4 x 3, no more at 300 or below
    assert dp_attention_reserve(512, 1) == 0
    assert fraction(H200, "0.5.23", mla=True, attn_dp=8) == 0.758
    out = estimate(*DSV3, "--engine", "sglang", "--dp", "8", "--enable-dp-attention")
    assert out["engine"]["mem_fraction_static"] == 0.758
    assert "18,432 of them for DP attention" in out["engine"]["mem_fraction_static_source"]


def test_dp_attention_turns_prefill_graphs_off_v0_5_10_to_v0_5_18() -> None:
    """v0.5.10 server_args.py _handle_piecewise_cuda_graph ("3. DP attention"), to v0.5.18's
    breakable backend rule: no 1,536 MiB for MLA prefill graphs. reserved = 512 + 12,288 +
    1,024 + 1,024 + 18,432 = 33,280 MiB; 110,491 / 143,771 = 0.76852 -> 0.769. v0.5.19 keeps
    them: 34,816 MiB, 0.758."""
    dp = ("--dp", "8", "--enable-dp-attention")
    for release, expected in (("0.5.10", 0.769), ("0.5.18", 0.769), ("0.5.19", 0.758)):
        out = estimate(*DSV3, "--engine", f"sglang@{release}", *dp)
        assert out["engine"]["mem_fraction_static"] == expected, release


def test_dp_reserve_v0_5_3_before_the_floor() -> None:
    """v0.5.3 _handle_gpu_memory_settings on an H100 at TP 8: chunk 8,192, max_bs 512;
    512 + 12,288 + 1,024 + 1,024 + 12,288 + 6,144 = 33,280 MiB (past the 10 GiB floor);
    (81,559 - 33,280) / 81,559 = 0.59195 -> 0.592. Without: 14,848 MiB, 0.818."""
    assert fraction(H100, "0.5.3", attn_dp=8) == 0.592
    assert fraction(H100, "0.5.3") == 0.818


def test_dp_reserve_v0_4_8_to_v0_5_2_is_4_gib() -> None:
    """v0.4.8 to v0.5.2 server_args.py: reserved_mem += 4 * 1024 with DP attention. H200 at TP 8
    (below 160 GiB): (12 + 8 / 2) GiB = 16,384 MiB + 4,096 = 20,480; 123,291 / 143,771 =
    0.85755 -> 0.858. v0.4.7 has no such rule: 0.871796 either way."""
    assert fraction(H200, "0.4.10", attn_dp=8) == 0.858
    assert fraction(H200, "0.5.2", attn_dp=8) == 0.858
    assert fraction(H200, "0.4.10") == round((143_771 - 16_384) / 143_771, 3)
    assert fraction(H200, "0.4.7", attn_dp=8) == fraction(H200, "0.4.7")


def test_dp_attention_pool_per_rank_and_the_total() -> None:
    """Each attention rank keeps its own pool: v0.5.23 H200 at 0.758 less 78.11 GiB of weights
    leaves 28.31 GiB per GPU, 432,564 tokens of 70,272 B; 8 ranks x 432,564 / 32,000 =
    108.14 requests of 32,000 tokens in all."""
    out = estimate(*DSV3, "--engine", "sglang", "--dp", "8", "--enable-dp-attention")
    assert out["engine"]["cache_tokens"] == 432_564
    assert any("each of the 8 attention ranks" in n and "108.14x" in n for n in out["notes"])
    assert any("attention weights over 1 GPU only" in n for n in out["notes"])


def test_dp_attention_without_dp_changes_nothing() -> None:
    """server_args.py: dp_size 1 turns enable_dp_attention off; tokcost says so."""
    plain = estimate(*DSV3, "--engine", "sglang")
    given = estimate(*DSV3, "--engine", "sglang", "--enable-dp-attention")
    assert given["engine"]["cache_tokens"] == plain["engine"]["cache_tokens"] == 707_163
    assert any("enable_dp_attention with dp=1: SGLang turns DP attention off; give" in n
               for n in given["notes"])


def test_dp_attention_without_dp_refused_before_v0_5_2() -> None:
    """v0.4.6 to v0.5.1 server_args.py: assert self.dp_size > 1, "Please set a dp-size > 1"."""
    line = refused(*DSV3, "--engine", "sglang@0.5.1", "--enable-dp-attention")
    assert "SGLang v0.5.1 refuses --enable-dp-attention with --dp 1" in line


@pytest.mark.parametrize(("release", "without", "given"), [
    # Llama-3.1-70B on an H200 (143,771 MiB) at TP 8. v0.5.2: (12 + 8 / 2) GiB = 16,384 MiB,
    # and + 4,096 with DP attention: round((143,771 - 20,480) / 143,771, 3) = 0.858.
    ("0.5.2", 0.886, 0.858),
    # v0.5.3 on: 512 + 8,192 x 1.5 + 512 x 2 + 8 / 8 x 1,024 = 14,848 MiB; DP attention adds
    # max_bs 512 x dp_size 1 x 3 + 512 x 1 x 1.5 (max_bs > 300) = 2,304: 17,152 -> 0.881.
    ("0.5.9", 0.897, 0.881),
    # v0.5.10 to v0.5.18: + 58 prefill graph sizes x 8 = 464 MiB without the flag (0.893); with
    # it _handle_piecewise_cuda_graph (v0.5.10), then the piecewise rule "DP attention" (to
    # v0.5.18), turns prefill graphs off first: 17,152 again.
    ("0.5.12", 0.893, 0.881),
    # v0.5.19 to v0.5.21 (memory_hook.py reads enable_dp_attention before the dp_size-1 pass):
    # 14,848 + 2,304 + 464 = 17,616 -> 0.877.
    ("0.5.21", 0.893, 0.877),
    # v0.5.22 asks attn_dp_size > 1 (attn_dp_enabled_of): nothing more.
    ("0.5.22", 0.893, 0.893)])
def test_dp_attention_with_dp_1_sizes_the_fraction_before_sglang_turns_it_off(
        release: str, without: float, given: float) -> None:
    """v0.5.2 to v0.5.21 reset enable_dp_attention for dp_size 1 (_handle_data_parallelism)
    only after _handle_gpu_memory_settings has reserved for it."""
    base = ("-m", "llama-3.1-70b", "--gpu", "H200", "--tp", "8", "--context", "8k",
            "--engine", f"sglang@{release}")
    assert estimate(*base)["engine"]["mem_fraction_static"] == without
    flagged = estimate(*base, "--enable-dp-attention")
    assert flagged["engine"]["mem_fraction_static"] == given
    late = any("turns DP attention off only after it has sized its default" in n
               for n in flagged["notes"])
    assert late == (given != without)


def test_dp_must_divide_tp() -> None:
    line = refused(*DSV3, "--engine", "sglang", "--dp", "3", "--enable-dp-attention")
    assert "--dp 3 must divide --tp 8 with --enable-dp-attention" in line


# --- speculative decoding: the fraction -------------------------------------------------------

@pytest.mark.parametrize(("algorithm", "release", "mib"), [
    ("EAGLE", "0.5.7", 2048), ("NEXTN", "0.5.9", 2048), ("STANDALONE", "0.5.9", 6144),
    ("NGRAM", "0.5.9", 0), ("EAGLE3", "0.5.10", 4096), ("STANDALONE", "0.5.13", 6144),
    ("EAGLE", "0.5.14", 0), ("STANDALONE", "0.5.23", 0), (None, "0.5.9", 0)])
def test_speculative_reserve(algorithm: str | None, release: str, mib: int) -> None:
    """server_args.py after the 10 GiB floor: "eagle draft models and cuda graphs" 2 GiB (v0.5.3)
    then 4 GiB (v0.5.10), STANDALONE 6 GiB, NGRAM none; gone in v0.5.14 (PR #23862)."""
    assert speculative_reserve(algorithm, Sglang.release_of(release)) == mib


def test_speculative_fraction_v0_5_7() -> None:
    """H200, TP 8, MLA: 512 + 12,288 + 1,024 + 1,024 = 14,848 MiB (past the floor) + 2,048 =
    16,896; 126,875 / 143,771 = 0.88248 -> 0.882."""
    out = estimate(*DSV3, "--engine", "sglang@0.5.7", "--speculative-algorithm", "EAGLE")
    assert out["engine"]["mem_fraction_static"] == 0.882


def test_speculative_turns_prefill_graphs_off_in_v0_5_10_only() -> None:
    """v0.5.10's rule 2 ("Speculative decoding"): 14,848 + 4,096 = 18,944 MiB, no 1,536 for
    MLA prefill graphs; 124,827 / 143,771 = 0.86823 -> 0.868. v0.5.11 captures them again:
    14,848 + 1,536 + 4,096 = 20,480 MiB, 0.858."""
    spec = ("--speculative-algorithm", "NEXTN")
    assert estimate(*DSV3, "--engine", "sglang@0.5.10", *spec)["engine"][
        "mem_fraction_static"] == 0.868
    assert estimate(*DSV3, "--engine", "sglang@0.5.11", *spec)["engine"][
        "mem_fraction_static"] == 0.858


# --- speculative decoding: the pools ----------------------------------------------------------

def test_draft_layer_joins_the_cell_v0_5_23() -> None:
    """pool_configurator.py (v0.5.22 on): cell + int(cell x 1 / 61) = 70,272 + 1,152 = 71,424 B;
    46.28 GiB at 0.886 // 71,424 = 695,757 tokens; the draft worker's pool, as many tokens of
    its one layer: (695,757 + 1) x 1,152 B = 0.75 GB."""
    out = estimate(*DSV3, "--engine", "sglang", "--speculative-algorithm", "NEXTN")
    engine = out["engine"]
    assert engine["cell_size_bytes"] == 71_424 and engine["cache_tokens"] == 695_757
    assert engine["draft_layers"] == 1 and engine["speculative_algorithm"] == "NEXTN"
    assert engine["logged_lines"][1] == ("KV Cache is allocated. dtype: torch.bfloat16, "
                                         "#tokens: 695757, KV size: 0.75 GB")
    assert [g["kind"] for g in engine["groups"]] == ["mla", "draft"]
    # per sequence: 32,000 x 62 layers x 1,152 B
    assert out["contexts"][0]["paged_sequence_bytes"] == 32_000 * 62 * 1_152


def test_draft_outside_the_budget_v0_5_7_to_v0_5_13() -> None:
    """Before v0.5.14 the target's pool is sized without the draft (the draft worker profiles
    after it, model_runner_kv_cache_mixin.py): 45.72 GiB // 70,272 = 698,581 tokens, and the
    draft's 0.75 GB pool on top."""
    out = estimate(*DSV3, "--engine", "sglang@0.5.7", "--speculative-algorithm", "EAGLE")
    engine = out["engine"]
    assert engine["cell_size_bytes"] == 70_272 and engine["cache_tokens"] == 698_581
    assert engine["logged_lines"][1] == "KV Cache is allocated. #tokens: 698581, KV size: 0.75 GB"
    assert any("sizes the pool without the draft" in n for n in out["notes"])


def _pool_cell(release: str, layers: int, draft: int) -> int:
    # 8 kv heads of 128 in bf16: 4,096 B per layer and token
    arch = Architecture(layers=layers, attention_heads=32, kv_heads=8, head_dim=128)
    engine = Sglang(release=Sglang.release_of(release), speculative_algorithm="EAGLE",
                    draft_layers=draft)
    plan = engine.pools(Deployment(layout=kv_layout(arch, "bf16")), 10 * GiB)
    return plan.cell_size


def test_draft_cell_rounding_v0_5_14_and_v0_5_22() -> None:
    """22 layers of 4,096 B = 90,112 B and a 3-layer draft: v0.5.14 to v0.5.21 take
    int(90,112 x (1 + 3 / 22)) = int(102,399.99...) = 102,399 (floats); v0.5.22
    90,112 + int(90,112 x 3 / 22) = 90,112 + 12,288 = 102,400. v0.5.13: the target's 90,112."""
    assert _pool_cell("0.5.14", 22, 3) == 102_399
    assert _pool_cell("0.5.21", 22, 3) == 102_399
    assert _pool_cell("0.5.22", 22, 3) == 102_400
    assert _pool_cell("0.5.13", 22, 3) == 90_112


def test_eagle_head_taken_as_one_layer_and_ngram_keeps_none() -> None:
    """An EAGLE head on a model without MTP layers: one layer (its num_hidden_layers), said;
    NGRAM drafts from the prompt, no pool: Llama-3.1-8B's 32 x 4,096 B = 131,072 B cell."""
    base = ("-m", "llama-3.1-8b", "--gpu", "H100", "--engine", "sglang", "--context", "8k")
    eagle = estimate(*base, "--speculative-algorithm", "EAGLE3")
    assert eagle["engine"]["cell_size_bytes"] == 131_072 + 4_096
    assert any("EAGLE3's draft is taken as one attention layer" in n for n in eagle["notes"])
    two = estimate(*base, "--speculative-algorithm", "EAGLE", "--draft-layers", "2")
    assert two["engine"]["cell_size_bytes"] == 131_072 + 2 * 4_096
    ngram = estimate(*base, "--speculative-algorithm", "ngram")
    assert ngram["engine"]["cell_size_bytes"] == 131_072 and ngram["engine"]["draft_layers"] == 0


@pytest.mark.parametrize(("args", "words"), [
    (("-m", "llama-3.1-8b", "--engine", "sglang@0.5.1", "--speculative-algorithm",
      "STANDALONE", "--draft-layers", "16"), "has no --speculative-algorithm STANDALONE"),
    (("-m", "llama-3.1-8b", "--engine", "sglang@0.5.2", "--speculative-algorithm", "NGRAM"),
     "it came in v0.5.3"),
    (("-m", "gemma-3-27b", "--engine", "sglang@0.4.10", "--speculative-algorithm", "EAGLE3"),
     "on a sliding-window pool is modelled from SGLang v0.5.7"),
    (("-m", "llama-3.1-8b", "--engine", "sglang", "--speculative-algorithm", "NEXTN"),
     "has no MTP layers"),
    (("-m", "llama-3.1-8b", "--engine", "sglang", "--speculative-algorithm", "STANDALONE"),
     "is drafted by a separate model"),
    (("-m", "qwen3-next-80b-a3b", "--engine", "sglang", "--speculative-algorithm", "EAGLE3"),
     "Mamba or linear-attention states"),
    (("-m", "deepseek-v3", "--engine", "sglang", "--pp", "2", "--speculative-algorithm",
      "NEXTN"), "--pp with --speculative-algorithm"),
    (("-m", "llama-3.1-8b", "--engine", "sglang", "--draft-layers", "1"),
     "give --speculative-algorithm EAGLE"),
    # an EAGLE draft of 0 layers was sized as no draft at all, without a word
    (("-m", "deepseek-v3", "--engine", "sglang", "--speculative-algorithm", "EAGLE",
      "--draft-layers", "0"), "--draft-layers 0 leaves EAGLE's draft model without layers"),
    (("-m", "llama-3.1-8b", "--engine", "sglang", "--speculative-algorithm", "medusa"),
     "is not one of SGLang's"),
    (("-m", "llama-3.1-8b", "--speculative-algorithm", "EAGLE"),
     "--speculative-algorithm is SGLang's setting"),
    (("-m", "llama-3.1-8b", "--enable-dp-attention"), "--enable-dp-attention is SGLang's"),
    (("-m", "llama-3.1-70b", "--engine", "sglang", "--tp", "8", "--dp", "2",
      "--enable-dp-attention", "--speculative-algorithm", "STANDALONE", "--draft-layers", "16"),
     "does not support dp attention")])
def test_refusals_are_one_line(args: tuple[str, ...], words: str) -> None:
    assert words in refused(*args)


def test_library_takes_the_algorithm_in_any_case() -> None:
    assert Sglang(speculative_algorithm="nextn").speculative_algorithm == "NEXTN"
    with pytest.raises(UsageError, match="0 to 256"):
        Sglang(speculative_algorithm="EAGLE", draft_layers=1000)


# --- speculative decoding on a sliding-window model -------------------------------------------

def _gpt_oss(release: str, available: int = 10 * GiB) -> list[str]:
    from tokcost.catalog import load_catalog
    a = load_catalog().resolve("gpt-oss-120b").architecture
    assert a is not None
    engine = Sglang(release=Sglang.release_of(release), speculative_algorithm="EAGLE3")
    plan = engine.pools(Deployment(layout=kv_layout(a, "bf16"), family="gpt-oss"), available)
    return list(plan.report(32_768).lines)


def test_eagle3_on_gpt_oss_joins_the_full_side_from_v0_5_15() -> None:
    """gpt-oss-120b: 18 full and 18 sliding layers of 2,048 B, an EAGLE3 head of one full
    layer. v0.5.15 HybridSWAPoolConfigurator: full = 10 GiB // (18 x 2,048 + 2,048 + 0.8 x 18 x
    2,048 = 68,403.2) = 156,972, swa = int(0.8 x 156,972) = 125,577; the draft's pool holds
    the full side's 156,972 tokens. v0.5.14 left the draft out of that cell: 10 GiB //
    66,355.2 = 161,817."""
    lines = _gpt_oss("0.5.15")
    assert lines[0] == "Use sliding window memory pool. full_layer_tokens=156972, swa_layer_tokens=125577"
    assert lines[3].startswith("KV Cache is allocated. dtype: torch.bfloat16, #tokens: 156972,")
    assert _gpt_oss("0.5.14")[0].endswith("full_layer_tokens=161817, swa_layer_tokens=129453")


def test_draft_pool_before_the_split_in_v0_5_8() -> None:
    """v0.5.8 init_memory_pool set draft_runner_cache_size before set_num_tokens_hybrid_swa: the
    draft got 10 GiB // 73,728 = 145,635 tokens (the pool over every layer), not the full
    side's; v0.5.9 hands it the full side's."""
    v058 = _gpt_oss("0.5.8")
    assert v058[3] == "KV Cache is allocated. #tokens: 145635, K size: 0.14 GB, V size: 0.14 GB"
    full = _gpt_oss("0.5.9")[0].split("full_layer_tokens=")[1].split(",")[0]
    assert f"#tokens: {full}," in _gpt_oss("0.5.9")[3]


def test_mtp_draft_on_a_sliding_window_model_is_refused() -> None:
    """MiMo-V2-Flash's MTP layers may sit in the SWA pool (mtp_local_layer_ids): not modelled."""
    line = refused("-m", "mimo-v2-flash", "--engine", "sglang", "--speculative-algorithm",
                   "NEXTN")
    assert "own MTP layers" in line


# --- speculative decoding before v0.5.7: the pool grown for the draft and verify steps -------

def test_headroom_v0_4_10_deepseek() -> None:
    """v0.4.10 server_args.py: (12 + 8 / 2) GiB + 2 GiB for the draft = 18,432 MiB; 125,339 /
    143,771 = 0.87180 -> 0.872. model_runner.py init_memory_pool: the profiled tokens +
    max_running_requests 48 x (num_steps 3 x eagle_topk 1 + num_draft_tokens 4, auto-chosen for
    DeepseekV3ForCausalLM) + 100 = + 436 tokens; the draft's pool as many."""
    spec = estimate(*DSV3, "--engine", "sglang@0.4.10", "--speculative-algorithm", "NEXTN")
    plain = estimate(*DSV3, "--engine", "sglang@0.4.10")
    engine = spec["engine"]
    assert engine["mem_fraction_static"] == 0.872
    available = spec["gpu"]["available_kv_bytes"]
    assert engine["cache_tokens"] == available // 70_272 + 436
    assert engine["speculative_parameters"] == [3, 1, 4]
    assert engine["logged_lines"][1].startswith(f"KV Cache is allocated. #tokens: "
                                                f"{engine['cache_tokens']}, KV size:")
    assert plain["engine"]["mem_fraction_static"] == round((143_771 - 16_384) / 143_771, 3)


def test_headroom_params_by_release() -> None:
    """auto_choose_speculative_params: DeepSeek took (5, 4, 8) in v0.4.6, 48 x 28 + 100 = 1,444
    tokens; Llama (5, 4, 8) everywhere, but v0.4.6 to v0.4.8 cut eagle_topk to 1 on pages over a
    token, num_draft_tokens then num_steps + 1: (5, 1, 6), 48 x 11 + 100 = 628."""
    v046 = estimate(*DSV3, "--engine", "sglang@0.4.6", "--speculative-algorithm", "NEXTN")
    assert v046["engine"]["speculative_parameters"] == [5, 4, 8]
    assert any("= 1,444 tokens" in n for n in v046["notes"])
    llama = ("-m", "llama-3.1-8b", "--gpu", "H100", "--context", "32k",
             "--speculative-algorithm", "EAGLE")
    paged = estimate(*llama, "--engine", "sglang@0.4.8", "--block-size", "16")
    assert paged["engine"]["speculative_parameters"] == [5, 1, 6]
    assert estimate(*llama, "--engine", "sglang@0.4.9", "--block-size", "16")["engine"][
        "speculative_parameters"] == [5, 4, 8]


def test_v0_4_7_speculative_fraction() -> None:
    """v0.4.7 server_args.py: above 96 GiB 20 GiB kept back with speculative decoding (18
    without): min(0.88 + 48 x 1,024 x 0.12 / 143,771, 123,291 / 143,771) = 0.857551; up to 80
    GiB the table's fraction x 0.95 (H100, TP 1: 0.88 x 0.95 = 0.836)."""
    assert abs(fraction(H200, "0.4.7", speculative="EAGLE") - 123_291 / 143_771) < 1e-12
    assert abs(fraction(H100, "0.4.7", tp=1, speculative="EAGLE") - 0.88 * 0.95) < 1e-12
    assert fraction(H100, "0.4.6", tp=1, speculative="EAGLE") == 0.88  # no rule in v0.4.6


def test_standalone_reserve_v0_5_2() -> None:
    """v0.5.2 server_args.py: STANDALONE 6 GiB, other drafts 2 GiB, on the tier's reserve: H200
    at TP 8, (16,384 + 6,144) = 22,528 MiB; 121,243 / 143,771 = 0.84331 -> 0.843."""
    assert fraction(H200, "0.5.2", speculative="STANDALONE") == 0.843
    assert fraction(H200, "0.5.2", speculative="EAGLE") == 0.872
