"""The KV-cache lab: quantized and evicting caches, their bytes, and their quality cost."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from typer.testing import CliRunner

import tokcost
from tokcost.cli.app import app
from tokcost.errors import UsageError
from tokcost.memory.cache_policy import (
    Eviction,
    KvQuant,
    parse_evict,
    parse_policy,
    policy_bytes,
)
from tokcost.reference.config import RefConfig
from tokcost.reference.kvpolicy import (
    E4M3_MAX,
    E4M3_VALUES,
    EvictingCache,
    compare_policy,
    evaluate,
    fp8_decode,
    fp8_encode,
    int_decode,
    int_encode,
    policy_cache,
    teacher_forced,
)

FINITE = E4M3_VALUES[~np.isnan(E4M3_VALUES)].astype(np.float64)


# --- quantize / dequantize ---------------------------------------------------------------

def test_e4m3_table_is_the_ocp_format() -> None:
    assert np.isnan(E4M3_VALUES).sum() == 2  # S.1111.111 only: no infinities
    assert FINITE.max() == E4M3_MAX == 448.0
    assert E4M3_VALUES[1] == 2.0**-9  # the smallest subnormal
    assert E4M3_VALUES[0x38] == 1.0 and E4M3_VALUES[0xB8] == -1.0


@settings(max_examples=300, deadline=None)
@given(hnp.arrays(np.float32, st.integers(1, 64),
                  elements=st.floats(-1000, 1000, width=32, allow_subnormal=True)))
def test_e4m3_is_the_nearest_code_of_all_256(x: np.ndarray) -> None:
    back = fp8_decode(fp8_encode(x)).astype(np.float64)
    clipped = np.clip(x.astype(np.float64), -E4M3_MAX, E4M3_MAX)
    nearest = np.abs(clipped[:, None] - FINITE[None, :]).min(axis=1)
    assert np.array_equal(np.abs(back - clipped), nearest)
    assert not np.isnan(back).any()
    assert np.all((back == 0) | (np.sign(back) == np.sign(x)))


@settings(max_examples=200, deadline=None)
@given(bits=st.sampled_from([4, 8]), axis=st.sampled_from([-2, -1]),
       tokens=st.integers(1, 12), data=st.data())
def test_int_round_trip_is_within_half_a_step(bits: int, axis: int, tokens: int,
                                              data: st.DataObject) -> None:
    x = data.draw(hnp.arrays(np.float32, (1, 2, tokens, 16),
                             elements=st.floats(-50, 50, width=32)))
    block = int_encode(x, bits=bits, axis=axis, group=8)
    back = int_decode(block)
    levels = (1 << bits) - 1
    # Grouped as the block was: per channel over the tokens, or 8 channels per token.
    g = x[:, :, None] if axis == -2 else x.reshape(1, 2, tokens, 2, 8)
    red = -2 if axis == -2 else -1
    lo, hi = g.min(axis=red, keepdims=True), g.max(axis=red, keepdims=True)
    step = np.broadcast_to((hi - lo) / levels, g.shape).reshape(x.shape)
    lo_b = np.broadcast_to(np.abs(lo), g.shape).reshape(x.shape)
    # Half a step, plus what storing the scale and the zero in fp16 moves it: 2^-11
    # relative each while they are normal fp16 numbers, and up to half of fp16's smallest
    # spacing (2^-24) each when a tiny range makes the scale subnormal (x levels codes).
    bound = step / 2 + (levels * step + lo_b) * 2.0**-10 + (levels + 1) * 2.0**-24 + 1e-6
    assert np.all(np.abs(back - x) <= bound)


def test_int4_packs_two_codes_a_byte() -> None:
    x = np.random.default_rng(0).normal(size=(1, 2, 64, 32)).astype(np.float32)
    per_channel = int_encode(x, bits=4, axis=-2, group=64)
    assert per_channel.codes.nbytes == 64 * 2 * 16
    assert per_channel.scale.shape == (1, 2, 1, 1, 32)


# --- eviction: the kept set on hand-built attention -----------------------------------------

def _cfg(**kw: Any) -> RefConfig:
    base = dict(layers=1, hidden_size=8, attention_heads=1, kv_heads=1, head_dim=2,
                vocab_size=8, context_window=64)
    return RefConfig(**{**base, **kw})  # type: ignore[arg-type]


def _kept(evict: Eviction, scores: list[float], *, prompt: int | None = None) -> list[int]:
    """Positions an evicting cache keeps of len(scores) tokens cached at once, each key
    given that much attention by one query."""
    cache = EvictingCache(_cfg(), evict, prompt=prompt)
    s = len(scores)
    k = np.zeros((1, 1, s, 2), np.float32)
    cache.update(0, k, k)
    att = np.zeros((1, 1, 1, s, s), np.float32)
    att[..., -1, :] = scores  # the last query's attention
    cache.observe(0, att)
    cache.advance(s)
    return [int(p) for p in cache.pos[0][0, 0]]


SCORES = [0.0, 0.3, 0.9, 0.1, 0.0, 0.8, 0.0, 0.0, 0.2, 0.1]


@pytest.mark.parametrize(("spec", "kept"), [
    ("window:3", [7, 8, 9]),
    ("window:0.3", [7, 8, 9]),
    ("streaming:2+3", [0, 1, 7, 8, 9]),
    ("h2o:2+3", [2, 5, 7, 8, 9]),
    ("h2o:0.2+0.3", [2, 5, 7, 8, 9]),
    ("h2o:3+2", [1, 2, 5, 8, 9]),
    ("snapkv:2+1", [2, 5, 9]),
    ("window:20", list(range(10))),
])
def test_eviction_keeps_the_chosen_tokens(spec: str, kept: list[int]) -> None:
    assert _kept(parse_evict(spec), SCORES, prompt=10) == kept


def test_h2o_ties_keep_the_earlier_key() -> None:
    assert _kept(parse_evict("h2o:2+1"), [0.5] * 6) == [0, 1, 5]


def test_snapkv_compresses_the_prompt_once_then_keeps_every_token() -> None:
    cache = EvictingCache(_cfg(), parse_evict("snapkv:2+1"), prompt=10)
    k = np.zeros((1, 1, 10, 2), np.float32)
    cache.update(0, k, k)
    att = np.zeros((1, 1, 1, 10, 10), np.float32)
    att[..., -1, :] = SCORES
    cache.observe(0, att)
    cache.advance(10)
    for step in range(5):
        one = np.zeros((1, 1, 1, 2), np.float32)
        cache.update(0, one, one)
        cache.observe(0, np.full((1, 1, 1, 1, 4 + step), 1 / (4 + step), np.float32))
        cache.advance(1)
    assert [int(p) for p in cache.pos[0][0, 0]] == [2, 5, 9, 10, 11, 12, 13, 14]
    assert parse_evict("snapkv:2+1").held(15, prompt=10) == 8


@pytest.mark.parametrize("spec", ["window", "window:1+2", "streaming:4", "h2o:3",
                                  "lru:5", "window:1.5", "streaming:0.5+3", "window:-1"])
def test_bad_eviction_specs_are_one_line(spec: str) -> None:
    with pytest.raises(UsageError) as exc:
        parse_evict(spec)
    assert "\n" not in str(exc.value) and exc.value.param == "evict"


@pytest.mark.parametrize(("spec", "fragment"), [
    ("window:1.0", "1.0 is not a count or a fraction below 1"),  # not one token
    ("window:1.5", "write a count (1024) or a fraction below 1 (0.25)"),
    ("window:0.0", "0.0 is not a count or a fraction below 1"),
    ("window:1.2.3", "1.2.3 is not a count"),
    ("streaming:4.0+8", "4.0 is not a count"),
    ("window:0", "window keeps no tokens; a policy must keep at least one"),
    ("h2o:0+0", "h2o keeps no tokens"),
])
def test_eviction_numbers_count_or_fraction(spec: str, fragment: str) -> None:
    with pytest.raises(UsageError, match=re.escape(fragment)) as exc:
        parse_evict(spec)
    assert "\n" not in str(exc.value) and exc.value.param == "evict"


@pytest.mark.parametrize(("spec", "recent"), [("window:1", 1.0), ("window:0.5", 0.5),
                                              ("window:1024", 1024.0)])
def test_eviction_integer_is_count_decimal_is_fraction(spec: str, recent: float) -> None:
    assert parse_evict(spec).recent == recent


@pytest.mark.parametrize(("policy", "fragment"), [
    ("window:0", "policy 'window:0': window keeps no tokens"),
    ("window:1.0", "policy 'window:1.0': 1.0 is not a count or a fraction below 1"),
])
def test_quality_refuses_what_estimate_refuses(policy: str, fragment: str) -> None:
    result = CliRunner().invoke(app, ["kvmem", "quality", "--max-tokens", "32", "--policy",
                                      policy])
    assert result.exit_code == 2, result.output
    assert fragment in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_the_gpu_column_plans_kivis_residual_whatever_the_text() -> None:
    # the quarter-of-the-text residual is for measuring a short text, not for --context 256
    runs = [json.loads(CliRunner().invoke(app, ["kvmem", "quality", "--policy", "int4", "--gpu",
                                                "h100", "--context", "256", "--json", *extra]
                                          ).stdout)["policies"][0]["concurrency"]
            for extra in ([], ["--residual", "128"])]
    assert runs[0] == runs[1]


def test_the_default_residual_leaves_a_short_text_something_to_quantize() -> None:
    # KIVI's 128 would keep all 127 tokens of the default run in full precision: by default a
    # quarter (32) stays, and the 64 before the last whole group of 64 are quantized
    result = CliRunner().invoke(app, ["kvmem", "quality", "--policy", "int8", "--json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["policies"]
    assert "none of the" not in result.stderr and row["bytes_ratio"] < 1


@pytest.mark.parametrize(("args", "code", "fragment"), [
    # the reference quantizer cannot split 32 channels into 7s: refused before any model work
    (["--policy", "int8", "--kv-group-size", "7", "--residual", "0"], 2,
     "--kv-group-size 7 must divide tiny-ref's head_dim 32"),
    (["--policy", "window:8", "--kv-group-size", "7"], 0, ""),  # no grouped policy
    # 63 tokens held, all in a residual of 128: the rows equal the full cache, and say so
    (["--policy", "int8,int4,fp8", "--residual", "128"], 0,
     "note: int8: none of the 63 tokens were quantized (the last --residual 128 stay in full "
     "precision; groups of 64): its row equals the full cache"),
    (["--policy", "int4", "--residual", "0"], 0, "int4: none of the 63 tokens were quantized"),
])
def test_quality_group_and_unquantized_notes(args: list[str], code: int, fragment: str) -> None:
    result = CliRunner().invoke(app, ["kvmem", "quality", "--max-tokens", "64", *args])
    assert result.exit_code == code, result.output
    assert fragment in result.stderr and "Traceback" not in result.output
    if code:
        assert len(result.stderr.strip().splitlines()) == 1
    assert "fp8: none" not in result.stderr  # fp8 quantizes every token


def test_quality_notes_in_the_library() -> None:
    r = tokcost.kvmem_quality(tokcost.QualityRequest.of(
        max_tokens=64, policies=["int8", "int8:per-token"], residual=16, kv_group_size=64))
    # per channel, 63 - 16 = 47 tokens make no whole group of 64; per token all 47 are quantized
    assert r.notes == ("int8: none of the 63 tokens were quantized (the last residual=16 stay "
                       "in full precision; groups of 64): its row equals the full cache",)
    assert r.to_dict()["notes"] == list(r.notes)


# --- on tiny-ref: bytes and quality -------------------------------------------------------------

@cache
def _tiny() -> tuple[Any, list[int]]:
    from tokcost.app.quality import held_out_text
    from tokcost.catalog import load_catalog
    from tokcost.reference.from_catalog import load_model, load_tokenizer

    entry = load_catalog().resolve("tiny-ref")
    model = load_model(entry).model
    ids = load_tokenizer(entry, model.cfg).encode(held_out_text())[:96]
    return model, ids


POLICIES = ["fp8", "int8", "int4", "int4:per-token", "window:10", "window:0.3",
            "streaming:2+10", "h2o:5+5", "h2o:0.1+0.2", "snapkv:10+4", "snapkv:0.5+0.1"]


@pytest.mark.parametrize("spec", POLICIES)
def test_bytes_held_equal_policy_bytes_at_every_step(spec: str) -> None:
    model, ids = _tiny()
    cfg = model.cfg
    policy = parse_policy(spec, residual=16, group=8)
    prompt = 24
    cache = policy_cache(cfg, quant=policy.quant, evict=policy.evict, prompt=prompt)
    arr = np.asarray(ids, dtype=np.int64)
    model.forward(arr[None, :prompt], cache)
    seen = []
    for i in range(prompt, len(ids)):
        model.forward(arr[None, i:i + 1], cache)
        want = policy.bytes(cache.length, layers=cfg.layers, kv_heads=cfg.kv_heads,
                            head_dim=cfg.head_dim, full_bytes=4, prompt=prompt)
        seen.append((cache.length, cache.nbytes, want))
    assert all(held == want for _, held, want in seen), [s for s in seen if s[1] != s[2]][:3]
    assert seen[-1][1] < len(ids) * cfg.kv_bytes_per_token  # every policy saves something


@pytest.mark.parametrize("spec", ["window:96", "streaming:4+92", "h2o:0+96", "h2o:40+56",
                                  "snapkv:24+4"])
def test_a_policy_that_keeps_everything_is_the_full_cache(spec: str) -> None:
    model, ids = _tiny()
    # snapkv:24 of a 24-token prompt keeps the prompt whole, and every later token.
    base = teacher_forced(model, ids, prompt=24)
    policy = parse_policy(spec)
    run = teacher_forced(model, ids, prompt=24,
                         cache=policy_cache(model.cfg, evict=policy.evict, prompt=24))
    assert np.array_equal(run.logprobs, base.logprobs)
    q = compare_policy(run, base)
    assert q.perplexity == q.baseline_perplexity and q.top1_agreement == 1.0
    assert q.mean_kl == 0.0 and q.bytes_held == q.baseline_bytes


def test_int8_within_its_residual_is_the_full_cache() -> None:
    model, ids = _tiny()
    q = evaluate(model, ids, prompt=24, quant=KvQuant("int8", residual=len(ids)))
    assert q.perplexity == q.baseline_perplexity and q.mean_kl == 0.0


def test_quantized_and_evicted_caches_cost_quality() -> None:
    model, ids = _tiny()
    base = teacher_forced(model, ids, prompt=24)
    int4 = evaluate(model, ids, prompt=24, quant=KvQuant("int4", group=8, residual=0),
                    baseline=base)
    window = evaluate(model, ids, prompt=24, evict=parse_evict("window:8"), baseline=base)
    int8 = evaluate(model, ids, prompt=24, quant=KvQuant("int8", group=8, residual=0),
                    baseline=base)
    assert 0 < int8.mean_kl < int4.mean_kl
    assert window.mean_kl > int8.mean_kl and window.top1_agreement < 1


def test_kivi_keys_per_channel_beat_keys_per_token_on_tiny_ref() -> None:
    """KIVI's finding (a regression test of a measured shape: docs/kvmem.md, "The papers' shapes")."""
    model, ids = _tiny()
    base = teacher_forced(model, ids, prompt=24)
    channel, token = (evaluate(model, ids, prompt=24, baseline=base,
                               quant=KvQuant("int4", group=32, keys=keys, residual=0))
                      for keys in ("channel", "token"))
    assert channel.mean_kl < token.mean_kl


def test_policy_bytes_worked_example() -> None:
    assert policy_bytes(1000, layers=4, kv_heads=2, head_dim=32, full_bytes=4,
                        quant=KvQuant("int4")) == 596_992
    assert policy_bytes(1000, layers=4, kv_heads=2, head_dim=32, full_bytes=4,
                        evict=parse_evict("streaming:4+100")) == 104 * 2 * 2 * 32 * 4 * 4


# --- the command --------------------------------------------------------------------------------

def test_cli_json_keys_and_plot(tmp_path: Path) -> None:
    plot = tmp_path / "frontier.png"
    result = CliRunner().invoke(app, [
        "kvmem", "quality", "--max-tokens", "48", "--prompt", "8", "--policy", "int8,fp8",
        "--policy", "window:16", "--residual", "8", "--kv-group-size", "8", "--gpu", "h100",
        "--context", "1k", "--json", "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert set(doc) == {"model", "text", "tokens", "prompt", "trained_tokens", "cache_dtype",
                        "baseline", "gpu", "context", "policies", "plot", "notes", "warnings"}
    assert doc["notes"] == doc["warnings"] == []  # int8 quantized 32 of the 47 tokens
    assert set(doc["baseline"]) == {"perplexity", "bytes_held", "bytes_in_dtype", "concurrency"}
    assert [p["policy"] for p in doc["policies"]] == ["int8", "fp8", "window:16"]
    assert set(doc["policies"][0]) == {"policy", "perplexity", "perplexity_change",
                                       "top1_agreement", "mean_kl", "bytes_held",
                                       "bytes_in_dtype", "bytes_ratio", "concurrency"}
    assert doc["tokens"] == 48 and doc["prompt"] == 8 and doc["context"] == 1000
    window = doc["policies"][2]
    assert window["bytes_held"] == 16 * 2048  # 16 tokens of float32 K and V, 4 layers
    assert window["concurrency"] > doc["baseline"]["concurrency"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_default_length_is_what_tiny_ref_trained_on() -> None:
    """512 tokens on a model trained on 128 made forgetting look like a gain (issue 30)."""
    result = tokcost.kvmem_quality(tokcost.QualityRequest.of(policies="fp8"))
    assert result.tokens == result.trained_tokens == 128  # tiny_ref.json: training.seq
    assert result.warnings == ()


def test_a_length_past_training_is_warned_about_in_the_output() -> None:
    args = ["kvmem", "quality", "--max-tokens", "160", "--policy", "fp8"]
    shown = CliRunner().invoke(app, args)
    assert shown.exit_code == 0, shown.output
    assert ("warning: the 160 tokens evaluated are past the 128-token sequences tiny-ref "
            "trained on") in shown.stderr
    assert "--max-tokens 128 stays within them" in shown.stderr
    doc = json.loads(CliRunner().invoke(app, [*args, "--json"]).stdout)
    assert doc["trained_tokens"] == 128 and "max_tokens=128" in doc["warnings"][0]


def test_shares_are_of_the_models_own_cache_dtype() -> None:
    """tiny-ref's weights are fp16, so is its served cache: fp8 holds half of it, not the
    quarter of the float32 cache the reference computes in."""
    result = tokcost.kvmem_quality(tokcost.QualityRequest.of(
        max_tokens=64, policies="fp8,window:16,int8", residual=8, kv_group_size=8))
    fp8, window, int8 = (r.quality for r in result.rows)
    assert result.cache_dtype == "fp16" and fp8.bytes_ratio == 0.5
    assert fp8.bytes_in_dtype == (fp8.bytes_held, result.baseline_bytes // 2)
    assert window.bytes_ratio == window.bytes_held / result.baseline_bytes  # all full precision
    # int8's 8 newest tokens stay in full precision: fp16 there, as the model would hold them.
    held, full = int8.bytes_in_dtype
    assert held == int8.bytes_held - int8.float32_bytes // 2 and full == result.baseline_bytes // 2
    assert result.to_dict()["policies"][0]["bytes_ratio"] == 0.5
    table = CliRunner().invoke(app, ["kvmem", "quality", "--max-tokens", "64", "--policy", "fp8"])
    assert "fp16 bytes" in table.stdout and " 50.0% " in table.stdout
    assert "held in tiny-ref's own fp16 cache" in table.stderr


def test_cli_table_reads_a_text_from_stdin() -> None:
    result = CliRunner().invoke(app, ["kvmem", "quality", "--text", "-", "--policy", "int4",
                                      "--max-tokens", "32"],
                                input="the cat sat on the mat; the dog sat on the log. " * 20)
    assert result.exit_code == 0, result.output
    assert "full cache" in result.stdout and "int4" in result.stdout
    assert "Traceback" not in result.output


@pytest.mark.parametrize(("args", "fragment"), [
    (["--max-tokens", "1"], "--max-tokens 1 must be at least 2"),
    (["--max-tokens", "5000"], "past tiny-ref's context window"),
    (["--prompt", "600"], "--prompt 600"),
    (["--policy", "int3"], "unknown policy 'int3'"),
    (["--policy", "int8", "--policy", "int8"], "twice"),
    (["--policy", "window:1.5"], "policy 'window:1.5': 1.5 is not a count or a fraction below 1"),
    (["--context", "1k"], "give --gpu"),
    (["--gpu", "h1000"], "h1000"),
    (["-m", "llama-3.1-8b"], "reference path runs models up to"),
    (["--residual", "-1", "--policy", "int4"], "--residual"),
])
def test_cli_bad_input_is_one_line(args: list[str], fragment: str) -> None:
    base = [] if "--max-tokens" in args else ["--max-tokens", "32"]
    result = CliRunner().invoke(app, ["kvmem", "quality", *base, *args])
    assert result.exit_code in (1, 2), result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and fragment in lines[0], result.stderr
    assert "Traceback" not in result.output


# --- kvmem estimate --evict ---------------------------------------------------------------------

def test_estimate_sizes_requests_by_the_policy() -> None:
    import tokcost
    from tokcost.catalog import load_catalog

    arch = load_catalog().resolve("llama-3.1-8b").architecture
    assert arch is not None
    r = tokcost.estimate_memory(tokcost.KvRequest.of(
        model="llama-3.1-8b", contexts=[32_000], kv_dtype="int4", residual=128,
        evict="streaming:4+1024", engine="ideal", kv_memory=10 * 2**30))
    want = policy_bytes(32_000, layers=arch.layers, kv_heads=arch.kv_heads,
                        head_dim=arch.head_dim or 128, full_bytes=2,
                        quant=KvQuant("int4", residual=128),
                        evict=Eviction("streaming", sinks=4, recent=1024))
    row = r.rows[0]
    assert row.sequence_bytes == row.paged_sequence_bytes == want
    assert row.max_concurrency == pytest.approx(10 * 2**30 / want)
    doc = r.to_dict()
    assert doc["cache_policy"]["evict"]["kind"] == "streaming"
    assert doc["cache_policy"]["residual"] == 128
    plain = tokcost.estimate_memory(tokcost.KvRequest.of(model="llama-3.1-8b",
                                                         contexts=[32_000])).to_dict()
    assert "cache_policy" not in plain


def test_estimate_int4_without_residual_keeps_its_bytes() -> None:
    import tokcost

    plain = tokcost.estimate_memory(tokcost.KvRequest.of(
        model="llama-3.1-8b", contexts=[4096], kv_dtype="int4", engine="ideal")).rows[0]
    evicted = tokcost.estimate_memory(tokcost.KvRequest.of(
        model="llama-3.1-8b", contexts=[4096], kv_dtype="int4", engine="ideal",
        evict="window:4096")).rows[0]
    assert evicted.sequence_bytes == plain.sequence_bytes


@pytest.mark.parametrize(("args", "code", "fragment"), [
    (["--evict", "window:1024"], 0, "vllm evicts nothing"),
    (["--evict", "window:1024", "--engine", "ideal"], 0, "cache policy"),
    (["--residual", "64"], 2, "--residual applies to int8/int4"),
    (["--evict", "lru:4"], 2, "--evict 'lru:4' is not a policy"),
    (["--evict", "window:0"], 2, "keeps no tokens"),
])
def test_estimate_evict_cli(args: list[str], code: int, fragment: str) -> None:
    result = CliRunner().invoke(app, ["kvmem", "estimate", "-m", "llama-3.1-8b", "--context",
                                      "8k", *args])
    assert result.exit_code == code, result.output
    assert fragment in result.stderr
    assert "Traceback" not in result.output


def test_estimate_refuses_policies_on_sliding_models() -> None:
    result = CliRunner().invoke(app, ["kvmem", "estimate", "-m", "gemma-3-27b", "--evict",
                                      "window:8"])
    assert result.exit_code == 2
    assert "full-attention models only" in result.stderr


HF_TINY = Path(__file__).parent / "fixtures" / "hf_tiny"
README = Path(__file__).parent.parent / "README.md"


@pytest.mark.parametrize("family", ["llama", "qwen2", "qwen3", "mistral", "gemma2",
                                    "gemma3_text"])
def test_quality_runs_on_a_hugging_face_checkpoint(family: str) -> None:
    """A real-format checkpoint through the same lab: the policies' bytes are checked
    against the memory model inside kvmem_quality (per layer kind: the sliding families'
    layers hold at most their 8-token window, past which these 40 tokens run), and a policy
    that keeps every token (a window longer than the text) costs nothing."""
    result = tokcost.kvmem_quality(tokcost.QualityRequest.of(
        model_dir=HF_TINY / family, text=str(README), max_tokens=40, prompt=8,
        policies=["int8", "fp8", "window:64", "window:4", "h2o:8+8"]))
    keep_all = next(r for r in result.rows if r.policy == "window:64").quality
    # The same keys in another order on a sliding layer (kept list vs ring): equal up to
    # float32 summation order.
    assert keep_all.mean_kl < 1e-9
    assert keep_all.perplexity == pytest.approx(result.baseline_perplexity, rel=1e-6)
    assert keep_all.top1_agreement == 1.0 and keep_all.bytes_held == result.baseline_bytes
    assert result.tokens == 40
    fp8 = next(r for r in result.rows if r.policy == "fp8").quality
    assert fp8.bytes_held * 4 == result.baseline_bytes  # 1 byte a value instead of 4
    window = next(r for r in result.rows if r.policy == "window:4").quality
    assert window.bytes_held < result.baseline_bytes


def test_quality_refuses_gpu_planning_for_sliding_window_checkpoints() -> None:
    with pytest.raises(UsageError, match="sliding-window layers") as err:
        tokcost.kvmem_quality(tokcost.QualityRequest.of(
            model_dir=HF_TINY / "gemma2", text=str(README), max_tokens=40, gpu="H100"))
    assert err.value.param == "gpu"


def test_int_round_trip_with_a_subnormal_fp16_scale() -> None:
    """A range of 1e-4 over 255 codes makes the fp16 scale subnormal (below 2^-14): the
    round trip then stays within fp16's absolute spacing, not its relative one."""
    x = np.linspace(0.5, 0.5001, 16, dtype=np.float32).reshape(1, 1, 1, 16)
    back = int_decode(int_encode(x, bits=8, axis=-1, group=16))
    assert np.abs(back - x).max() <= (1e-4 / 255) / 2 + 256 * 2.0**-24 + 0.5 * 2.0**-11


def test_the_quality_request_checks_itself() -> None:
    """Counts as text, a comma list of policies as one string, and the errors that name
    the fields (their CLI flags)."""
    request = tokcost.QualityRequest.of(max_tokens="1k", prompt="64",
                                                  policies="int8, window:32")
    assert (request.max_tokens, request.prompt) == (1000, 64)
    assert [p.name for p in request.cache_policies.chosen] == ["int8", "window:32"]
    with pytest.raises(UsageError) as caught:
        tokcost.QualityRequest.of(max_tokens=64, prompt=64)
    assert caught.value.param == "prompt" and caught.value.related == ("max_tokens",)
    assert str(caught.value).startswith("prompt=64 must be at least 1 and below max_tokens=64")
    with pytest.raises(UsageError, match="policy int8 is given twice"):
        tokcost.QualityRequest.of(policies=["int8", "int8"])
    with pytest.raises(UsageError, match="^context sets the sequences planned on a GPU; give gpu"):
        tokcost.QualityRequest.of(context="1k")
    result = CliRunner().invoke(app, ["kvmem", "quality", "--max-tokens", "64", "--prompt", "64"])
    assert result.exit_code == 2
    assert "--prompt 64 must be at least 1 and below --max-tokens 64" in result.stderr
    # without --max-tokens, the message names no flag the user did not give
    result = CliRunner().invoke(app, ["kvmem", "quality", "--prompt", "0"])
    assert (result.exit_code, result.stderr) == (2, "error: --prompt 0 must be at least 1\n")
