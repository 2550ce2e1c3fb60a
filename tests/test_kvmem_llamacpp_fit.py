"""llama.cpp's -fit (common/fit.cpp ``common_params_fit_impl``, PR #16653 in b7407; the context
step as of PR #18372, b7550, and PR #27496, b10584), one device. Every oracle is the source's
arithmetic by hand: used = weights + cache + reserve (tokcost's compute buffers), the target
= the GPU's memory - --fit-target; without -c step 2 measures the cache at --fit-ctx and at
n_ctx_train and interpolates, n_ctx = n_min + (n_max - n_min) x (target - used_min) //
(used_max - used_min), rounded down to 256 x streams."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tokcost.cli.app import app

runner = CliRunner()
MiB, GiB = 2**20, 2**30
# L4 (catalog): 24,152,899,584 B; Llama-3.1-8B's bf16 weights 16,060,000,000 B; reserve 2 GiB.
L4_FREE = 24_152_899_584 - 16_060_000_000 - 2 * GiB  # 5,945,415,936 B for the cells
CELL = 131_072  # 32 layers x (K + V) x 8 heads x 128 x 2 B, one token


def estimate(*args: str) -> dict:
    result = runner.invoke(app, ["kvmem", "estimate", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def fit_of(*args: str) -> dict:
    engine = estimate("--engine", "llama.cpp", *args)["engine"]
    return {k: engine[k] for k in ("fit_n_ctx", "fit_step", "fit_offloads")}


def text(*args: str) -> str:
    result = runner.invoke(app, ["kvmem", "estimate", "--engine", "llama.cpp", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_fit_lowers_the_context_of_a_unified_cache_to_what_leaves_the_margin() -> None:
    """-np auto (4 slots, unified: one stream). n_ctx_train 131,072 needs 131,072 x 131,072 B
    = 16 GiB, more than L4_FREE - 1 GiB = 4,871,674,112 B. At --fit-ctx 4,096: 536,870,912 B;
    n = 4,096 + 126,976 x 4,334,803,200 // 16,642,998,272 = 4,096 + 33,071 = 37,167 -> 37,120."""
    room = L4_FREE - 1024 * MiB
    n = 4096 + (131_072 - 4096) * (room - 4096 * CELL) // (131_072 * CELL - 4096 * CELL)
    assert n == 37_167
    got = fit_of("-m", "llama-3.1-8b", "--gpu", "L4", "--context", "8k")
    assert got == {"fit_n_ctx": 37_120, "fit_step": "reduced", "fit_offloads": False}
    # the cache at 37,120 cells leaves the margin free, one more 256-cell step would not
    assert 37_120 * CELL <= room < (37_120 + 256) * CELL


def test_fit_counts_separate_streams_from_b10584_and_the_totals_before() -> None:
    """-np 4 --no-kv-unified: b10584 (PR #27496) takes n_ctx_train and --fit-ctx per stream:
    n_max 524,288, n_min 16,384 (2 GiB of cells), n = 16,384 + 2,724,190,464 // 131,072 =
    37,167, down to a multiple of 4 x 256: 36,864 (9,216 cells a slot). Before, the totals
    131,072 and 4,096 gave 37,120, whose 9,280 a slot llama_context pads to 9,472."""
    args = ("-m", "llama-3.1-8b", "--gpu", "L4", "--context", "8k", "-np", "4",
            "--no-kv-unified")
    assert fit_of(*args)["fit_n_ctx"] == 36_864
    out = " ".join(text(*args).split())
    assert "lowers it to n_ctx 36,864 (9,216 cells per slot)" in out
    assert "down to a multiple of 1,024" in out
    assert "builds before b10584 (PR #27496)" in out and "n_ctx 37,120 (9,472 cells per slot)" in out


def test_fit_with_a_sliding_window_interpolates_between_two_measurements() -> None:
    """Gemma-3-27B on 64 GiB (weights 54,800,000,000 B): 10 full layers of 8,192 B a cell and
    52 sliding ones whose cache is pad(min(n, 1,024 x 4 + 512), 256) = 4,608 cells. At 131,072:
    10,737,418,240 + 1,962,934,272 B; at 4,096: 335,544,320 + 1,744,830,464. fit.cpp assumes a
    line through the two: 4,096 + 126,976 x 8,617,876,480 // 10,619,977,728 = 107,134 ->
    107,008, whose cache is 30,778,368 B past the margin: the true largest is 106,632."""
    free = 64 * GiB - 54_800_000_000 - 2 * GiB
    room = free - 1024 * MiB

    def kv(n: int) -> int:
        return n * 10 * 8192 + min(n, 4608) * 52 * 8192

    n = 4096 + (131_072 - 4096) * (room - kv(4096)) // (kv(131_072) - kv(4096))
    assert n == 107_134
    got = fit_of("-m", "gemma-3-27b", "--gpu-memory", "64GiB", "--context", "8k")
    assert got["fit_n_ctx"] == 107_008 and got["fit_step"] == "reduced"
    assert kv(107_008) - room == 30_778_368  # llama.cpp starts anyway: fit.cpp returns
    assert (room - kv(4608)) // (10 * 8192) + 4608 == 106_632  # the true largest, not taken


def test_fit_keeps_n_ctx_train_where_it_leaves_the_margin() -> None:
    """H100 (79.65 GiB): 16 GiB of cells beside 14.96 GiB of weights and 2 GiB leave far more
    than 1 GiB: step 1 changes nothing."""
    got = fit_of("-m", "llama-3.1-8b", "--gpu", "H100", "--context", "8k")
    assert got == {"fit_n_ctx": 131_072, "fit_step": "kept", "fit_offloads": False}
    assert "leave at least --fit-target 1,024 MiB free: n_ctx 131,072" in " ".join(
        text("-m", "llama-3.1-8b", "--gpu", "H100", "--context", "8k").split())


def test_fit_target_and_fit_ctx_move_the_answer() -> None:
    """--fit-target 4096: room = L4_FREE - 4 GiB = 1,650,448,640 B, n = 4,096 + 1,113,577,728
    // 131,072 = 12,592 -> 12,544. --fit-ctx 200,000 above n_ctx_train: "<= the min. context
    size -> no change", so n_ctx stays 131,072 and layers move (step 3)."""
    assert fit_of("-m", "llama-3.1-8b", "--gpu", "L4", "--context", "8k", "--fit-target",
                  "4096")["fit_n_ctx"] == 12_544
    got = fit_of("-m", "llama-3.1-8b", "--gpu", "L4", "--context", "8k", "-fitc", "200000")
    assert got == {"fit_n_ctx": 131_072, "fit_step": "offload", "fit_offloads": False}


def test_fit_moves_layers_where_even_the_smallest_context_leaves_too_little() -> None:
    """Llama-3.1-70B's bf16 weights (141 GB) on one H100: no context leaves the margin, n_ctx
    stays at --fit-ctx 4,096 and step 3 moves layers (how many is not modelled)."""
    got = fit_of("-m", "llama-3.1-70b", "--gpu", "H100", "--context", "8k")
    assert got == {"fit_n_ctx": 4096, "fit_step": "offload", "fit_offloads": True}
    out = " ".join(text("-m", "llama-3.1-70b", "--gpu", "H100", "--context", "8k").split())
    assert "even --fit-ctx 4,096 leaves less than --fit-target 1,024 MiB: n_ctx 4,096" in out
    assert "how many stay on the GPU is not modelled" in out


@pytest.mark.parametrize(("context", "offloads"), [(30_000, False), (40_000, True)])
def test_a_given_c_is_kept_and_layers_move_below_the_margin(context: int,
                                                            offloads: bool) -> None:
    """-c 30,000 pads to 30,208 cells: 3,959,422,976 B <= 4,871,674,112, no change. -c 40,000:
    40,192 cells = 5,268,045,824 B fit in L4_FREE (-fit off starts, 677,370,112 B = 645.99 MiB
    left) but not with 1 GiB free: -fit on keeps -c ("context size set by user
    -> no change") and moves layers."""
    e = estimate("-m", "llama-3.1-8b", "--gpu", "L4", "--engine", "llama.cpp", "--context",
                 str(context))
    assert e["engine"]["fit_offloads"] is offloads
    assert e["engine"]["refuses_to_start"] is False  # -fit off's allocation succeeds either way
    out = " ".join(text("-m", "llama-3.1-8b", "--gpu", "L4", "--context", str(context)).split())
    assert ("reserve leave 645.99 MiB, less than the --fit-target 1,024 MiB it keeps free"
            in out) is offloads


@pytest.mark.parametrize("slots", [(), ("-np", "4", "--no-kv-unified")])
def test_no_fit_takes_n_ctx_train(slots: tuple[str, ...]) -> None:
    """-fit off: llama_context takes n_ctx_train for -c 0, whatever the memory, for all the
    streams together (fit.cpp's per-stream n_ctx_max is -fit on's)."""
    e = estimate("-m", "llama-3.1-8b", "--gpu", "L4", "--engine", "llama.cpp", "--context",
                 "40000", "--no-fit", *slots)["engine"]
    assert (e["fit"], e["fit_n_ctx"], e["fit_step"], e["fit_offloads"]) == (False, 131_072,
                                                                           "off", False)
    assert "--no-fit (-fit off): without -c llama-server takes the model's n_ctx_train" in " ".join(
        text("-m", "llama-3.1-8b", "--gpu", "L4", "--no-fit").split())


def test_no_margin() -> None:
    """--fit-target 0: room = L4_FREE, n = 4,096 + (5,945,415,936 - 536,870,912) // 131,072 =
    45,359 -> 45,312 (the cells tokcost's own budget holds, 45,359)."""
    assert fit_of("-m", "llama-3.1-8b", "--gpu", "L4", "--fit-target", "0")["fit_n_ctx"] == 45_312


def test_fit_needs_a_gpu() -> None:
    e = estimate("-m", "llama-3.1-8b", "--engine", "llama.cpp", "--context", "8k")["engine"]
    assert (e["fit"], e["fit_target_mib"], e["fit_ctx"], e["fit_n_ctx"]) == (True, 1024, 4096,
                                                                             None)


@pytest.mark.parametrize(("args", "words"), [
    (("--fit-target", "-1"), "--fit-target must be an integer from 0"),
    (("--fit-ctx", "0"), "--fit-ctx must be an integer from 1"),  # n_ctx 0 is n_ctx_train
])
def test_bad_fit_values_are_one_line(args: tuple[str, ...], words: str) -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--engine",
                                 "llama.cpp", *args])
    assert result.exit_code != 0 and words in result.output
    assert "Traceback" not in result.output


def test_fit_flags_are_llama_cpps() -> None:
    result = runner.invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--fit-ctx", "8192"])
    assert result.exit_code != 0 and "llama.cpp's setting" in result.output
