"""``tokcost generate --explain`` and generate's bad inputs.

The sampler's distribution is what ``--explain`` shows, so its property is tested on the
library function (tokcost.reference.sampling), then through the loop and the CLI.
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from typer.testing import CliRunner

import tokcost
from tokcost.cli.app import app
from tokcost.errors import InputError, UsageError
from tokcost.reference import CacheSpec, RefConfig, SamplingParams, Transformer, init_weights
from tokcost.reference import generate as run
from tokcost.reference.sampling import distribution, draw

runner = CliRunner()
PROMPT = "The baker knows"  # 9 tiny-ref tokens: blocks of 4 leave the third half full

logits_st = hnp.arrays(
    np.float32,
    st.integers(1, 48),
    elements=st.floats(-40, 40, width=32, allow_nan=False, allow_infinity=False),
)
temperature_st = st.one_of(
    st.just(0.0),
    st.floats(1e-3, 20.0),
    st.sampled_from([1e-12, 1e-45, 1e-300]),  # logits / T overflows float32: the guarded path
)
top_p_st = st.one_of(st.just(1.0), st.floats(1e-6, 1.0, exclude_min=True))


# --- the distribution sampled from ------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(logits_st, temperature_st, st.integers(0, 60), top_p_st, st.integers(0, 2**32 - 1))
def test_sampled_distribution_is_what_the_draw_uses(
    logits: np.ndarray, temperature: float, top_k: int, top_p: float, seed: int
) -> None:
    params = SamplingParams(temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
    dist = distribution(logits, params)
    kept = dist.kept
    assert kept.any()
    assert abs(float(dist.probs[kept].sum()) - 1.0) <= 1e-9
    assert (dist.probs[~kept] == 0).all()
    for token in range(len(logits)):
        # Excluded ones are marked (and say why); the others are not.
        assert (dist.excluded_by(token) is None) == bool(kept[token])
    if params.greedy:
        assert dist.size == 1 and kept[int(np.argmax(logits))]
        assert {dist.excluded_by(t) for t in np.flatnonzero(~kept)} <= {"greedy"}
    else:
        if top_k:
            assert dist.size <= top_k
        # The filters cut the ranking: every kept token outranks every filtered one.
        cut = [t for t in range(len(logits)) if dist.excluded_by(t) in ("top_k", "top_p")]
        if cut:
            assert max(dist.rank[kept]) < min(dist.rank[cut])
    rng = np.random.default_rng(seed)
    for _ in range(5):
        chosen = draw(dist, rng)
        assert kept[chosen] and dist.probs[chosen] > 0 and dist.excluded_by(chosen) is None


def test_draw_past_the_last_cumulative_sum_takes_a_token_with_mass() -> None:
    class Last:
        def random(self) -> float:
            return 1.0 - 1e-17  # rounds to 1.0: at or past the last cumulative sum

    logits = np.array([5.0, 0.0, -200.0, -300.0], dtype=np.float32)
    dist = distribution(logits, SamplingParams(temperature=0.01, top_k=4))
    assert dist.excluded_by(3) == "zero"  # kept by top-k, but its probability is 0
    assert dist.probs[draw(dist, Last())] > 0  # type: ignore[arg-type]


def test_sampling_matches_the_loop_it_replaced() -> None:
    """The same seed gives the same tokens as before the sampler was split out (pinned)."""
    res = runner.invoke(app, ["generate", PROMPT, "--n", "4", "--temperature", "0.8",
                              "--seed", "1", "--max-new-tokens", "12", "--block-size", "4"])
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[1] == "[sample 2] The baker knows the neighbours know the ne"


CFG = RefConfig(layers=1, hidden_size=16, attention_heads=4, kv_heads=2, head_dim=4,
                vocab_size=40, context_window=48)
SMALL = Transformer(CFG, init_weights(CFG, seed=3))


@settings(max_examples=40, deadline=None)
@given(st.one_of(st.just(0.0), st.floats(0.05, 8.0)), st.integers(0, 6), top_p_st,
       st.integers(0, 1000), st.integers(1, 3))
def test_every_explained_step_chose_a_token_it_could_draw(
    temperature: float, top_k: int, top_p: float, seed: int, n: int
) -> None:
    params = SamplingParams(temperature=temperature, top_k=top_k, top_p=top_p, seed=seed,
                            max_new_tokens=6, n=n)
    result = run(SMALL, [1, 2, 3, 4, 5], params, CacheSpec(cache="paged", block_size=2),
                 explain=True, top_candidates=3)
    for step in result.steps:
        assert step.prob > 0 and step.greedy == params.greedy
        (chosen,) = [c for c in step.top if c.token_id == step.token_id]
        assert chosen.excluded is None and chosen.prob == step.prob
        for c in step.top:
            assert (c.excluded is None) == (c.prob > 0)
        assert sum(c.prob for c in step.top) <= 1 + 1e-9
    # The paged cache's events add up to what it holds at the end.
    events = [e for s in result.steps for e in s.events]
    allocated = sum(e.kind in ("allocate", "copy_on_write") for e in events)
    assert allocated == result.cache_blocks
    assert sum(e.kind == "copy_on_write" for e in events) == result.copy_on_write


# --- the CLI ------------------------------------------------------------------------------------


def explain(*args: str) -> str:
    res = runner.invoke(app, ["generate", PROMPT, "--explain", "--block-size", "4", *args])
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output
    return res.stdout


def test_explain_prints_the_legend_once_and_in_help() -> None:
    text = explain("--max-new-tokens", "2")
    assert text.count("legend") == 1 and text.index("legend") < text.index("step 1")
    legend = " ".join(text[: text.index("prompt:")].split())  # as wrapped for 80 columns
    for needle in ("× a candidate the draw could not pick", "renormalized to sum to 1",
                   "hH→'tok'@P W", "query head H", "position P (0 = the first prompt token)",
                   "tiny-ref's 4 query heads share 2 KV heads", "h0-h1 KV head 0",
                   "copied on write"):
        assert needle in legend, needle
    help_text = " ".join(runner.invoke(app, ["generate", "--help"]).stdout.split())
    for needle in ("hH→'tok'@P W", "grouped-query attention", "h0-h1 KV head 0",
                   "renormalized to sum to"):
        assert needle in help_text, needle


def test_explain_greedy_says_so() -> None:
    text = explain("--max-new-tokens", "2")
    assert "step 1: chose 448 ' the' greedy: the likeliest token (model p=0.905)" in text
    assert "×" not in text.split("prompt:")[1]


def test_explain_counts_agree_with_their_nouns() -> None:
    """One block, one sample: no "1 blocks of 16" and no "sample(s)" (issue 30)."""
    res = runner.invoke(app, ["generate", "Hi", "--explain", "--max-new-tokens", "1"])
    assert res.exit_code == 0, res.output
    assert "cache: 2 tokens, 32,768 B, 1 block of 16 (1 logical)" in res.stdout
    assert "KV cache: 2 tokens x 1 sample, " in res.stdout
    assert not re.search(r"\b1 (blocks|tokens|samples)\b|\(s\)", res.stdout)


def test_explain_marks_what_top_p_and_top_k_exclude() -> None:
    text = explain("--max-new-tokens", "3", "--temperature", "1", "--top-p", "0.5",
                   "--seed", "4", "--top", "4")
    assert re.search(r"^  ×\s+\d+ .*excluded by --top-p\s+model 0\.\d{3}$", text, re.M)
    text = explain("--max-new-tokens", "1", "--temperature", "1", "--top-k", "2",
                   "--seed", "4", "--top", "4")
    assert text.count("excluded by --top-k") == 2
    assert "drawn from 2 candidates" in text


@pytest.mark.parametrize("args", [
    pytest.param(["--temperature", "6", "--seed", "2"], id="hot-no-filter"),
    pytest.param(["--temperature", "1.5", "--top-k", "50", "--top-p", "0.9", "--seed", "8"],
                 id="top-k-top-p"),
])
def test_the_chosen_token_never_reads_zero(args: list[str]) -> None:
    text = explain("--max-new-tokens", "8", *args)
    chosen = re.findall(r"^step \d+: chose \d+ .* \(p=([0-9.e+-]+),", text, re.M)
    assert len(chosen) == 8
    assert all(float(p) > 0 for p in chosen)
    rows = re.findall(r"^  \* .* ([0-9.e+-]+)  model", text, re.M)
    assert len(rows) == 8 and all(float(p) > 0 for p in rows)


def test_explain_shows_block_allocation_and_copy_on_write_with_n_samples() -> None:
    text = explain("--max-new-tokens", "5", "--n", "2", "--temperature", "1", "--seed", "3")
    assert ("paged: allocated blocks #0 (positions 0-3), #1 (positions 4-7), "
            "#2 (positions 8-11) for the prompt") in text
    assert "paged: 2 samples share the prompt's blocks #0 #1 #2 (reference count 2" in text
    # Sample 1 writes position 9 into the half-full shared block first, so it is copied;
    # sample 2 is then its only holder and writes in place.
    assert ("paged: copy-on-write: sample 1 writes position 9 into shared block #2 "
            "(positions 8-11), so it gets a copy, #3; #2 keeps 1 holder") in text
    assert text.count("copy-on-write:") == 1
    assert re.search(r"paged: allocated block #\d+ \(positions 12-15\) for sample 2", text)
    assert "1 copied on write" in text
    # Events come before the cache line of the step they belong to, which is shown once,
    # after the last sample (the samples advance in one forward pass).
    step2 = text[text.index("step 2 sample 1"):text.index("step 3 sample 1")]
    assert step2.index("copy-on-write") < step2.index("  cache after step 2, all 2 samples:")
    assert step2.count("cache") == 1
    assert step2.index("step 2 sample 2") < step2.index("  cache after step 2")
    assert "  cache:" not in text


def test_explain_json_steps_carry_the_sampled_distribution_and_events() -> None:
    res = runner.invoke(app, ["generate", PROMPT, "--max-new-tokens", "3", "--json", "--explain",
                              "--n", "2", "--temperature", "1", "--top-p", "0.5", "--seed", "4",
                              "--block-size", "4"])
    assert res.exit_code == 0, res.output
    steps = json.loads(res.stdout)["steps"]
    for step in steps:
        assert step["prob"] > 0 and step["candidates"] >= 1
        kept = [c for c in step["top"] if c["excluded"] is None]
        assert all(c["prob"] > 0 for c in kept)
        assert all(c["prob"] == 0 and c["excluded"] in ("top_p", "top_k")
                   for c in step["top"] if c not in kept)
    kinds = [e["kind"] for s in steps for e in s["cache_events"]]
    assert kinds.count("share") == 3 and "copy_on_write" in kinds
    greedy = json.loads(runner.invoke(app, ["generate", PROMPT, "--max-new-tokens", "1",
                                            "--json", "--explain"]).stdout)["steps"][0]
    assert greedy["prob"] == 1.0 and greedy["model_prob"] == pytest.approx(0.905, abs=1e-3)


# --- warnings -----------------------------------------------------------------------------------


@pytest.mark.parametrize("args, fragment", [
    pytest.param(["--n", "2"], "--n 2 with greedy decoding (--temperature 0) gives 2 identical",
                 id="greedy"),
    pytest.param(["--n", "3", "--json"], "gives 3 identical samples", id="greedy-json"),
    pytest.param(["--n", "2", "--temperature", "1", "--top-k", "1"],
                 "--n 2 with --top-k 1 gives 2 identical", id="top-k-1"),
    pytest.param(["--n", "2", "--explain"], "identical samples", id="explain"),
    pytest.param(["--n", "1"], None, id="one-sample"),
    pytest.param(["--n", "2", "--temperature", "0.7", "--seed", "1"], None, id="sampling"),
])
def test_parallel_greedy_samples_warn_once(args: list[str], fragment: str | None) -> None:
    res = runner.invoke(app, ["generate", PROMPT, "--max-new-tokens", "2", *args])
    assert res.exit_code == 0, res.output
    if fragment is None:
        assert "identical" not in res.stderr
    else:
        assert res.stderr.count("identical samples") == 1 and fragment in res.stderr
        assert "identical" not in res.stdout


def test_filters_under_greedy_are_reported() -> None:
    res = runner.invoke(app, ["generate", PROMPT, "--max-new-tokens", "1", "--top-p", "0.9"])
    assert res.exit_code == 0
    assert res.stderr.count("no effect with greedy decoding") == 1


# --- the prompt's bytes: the input policy -------------------------------------------------------


def test_invalid_utf8_on_stdin_is_replaced_and_reported() -> None:
    res = runner.invoke(app, ["generate", "-", "--max-new-tokens", "1", "--json"],
                        input=b"caf\xc3\xa9 \xff\xfe bread")
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["prompt"] == "café \ufffd\ufffd bread"
    assert "stdin: 2 bytes of invalid UTF-8, replaced with U+FFFD" in res.stderr


def test_decode_prompt() -> None:
    from tokcost.reference.request import PromptText, decode_prompt

    assert decode_prompt(b"plain") == PromptText("plain", 0)
    assert decode_prompt(b"\xef\xbf\xbd ok").invalid_utf8_bytes == 0  # a real U+FFFD
    with pytest.raises(InputError, match=r"^stdin is binary \(NUL byte at offset 2\)"):
        decode_prompt(b"ab\x00cd")


def test_library_refuses_a_prompt_that_is_not_text() -> None:
    with pytest.raises(InputError, match="lone surrogate at character 6"):
        tokcost.generate(tokcost.GenerateRequest.of(prompt="Hello \udcff",
                                                              max_new_tokens=1))


def test_limits_of_the_sampling_parameters() -> None:
    for bad in ({"temperature": math.nan}, {"temperature": math.inf}, {"seed": -1},
                {"top_p": math.nan}):
        with pytest.raises(UsageError) as caught:
            SamplingParams(**bad)
        assert caught.value.param == next(iter(bad))


# --- bad inputs: one line, the right exit code --------------------------------------------------

BINARY = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"


@pytest.mark.parametrize(
    "args, stdin, code, message",
    [
        pytest.param(["-"], BINARY, 1, "stdin is binary (NUL byte at offset 8), not text",
                     id="binary-stdin"),
        pytest.param(["-"], b"", 2, "the prompt is empty", id="empty-stdin"),
        pytest.param([""], None, 2, "the prompt is empty", id="empty-prompt"),
        pytest.param(["-"], b"the loaf " * 400, 2,
                     "the prompt (2002 tokens) plus --max-new-tokens 32 needs 2034 positions, "
                     "but the context window is 1024", id="prompt-too-long"),
        pytest.param(["--max-new-tokens", "5000"], None, 2, "context window is 1024",
                     id="too-many-new-tokens"),
        pytest.param(["--max-new-tokens", "0"], None, 2, "--max-new-tokens must be >= 1, got 0",
                     id="zero-max-new-tokens"),
        pytest.param(["--max-new-tokens", "-4"], None, 2, "--max-new-tokens must be >= 1",
                     id="negative-max-new-tokens"),
        pytest.param(["--n", "0"], None, 2, "--n must be >= 1, got 0", id="zero-n"),
        pytest.param(["--n", "-2"], None, 2, "--n must be >= 1, got -2", id="negative-n"),
        pytest.param(["--n", "5000"], None, 2, "--n 5000 samples are more than the 1024",
                     id="too-many-n"),
        pytest.param(["--n", "1000", "--max-new-tokens", "1000"], None, 2,
                     "GiB of KV cache, more than the 1 GiB", id="cache-too-large"),
        pytest.param(["--top-k", "-1"], None, 2, "--top-k must be >= 0, got -1",
                     id="negative-top-k"),
        pytest.param(["--top-p", "0"], None, 2, "--top-p must be in (0, 1], got 0.0",
                     id="zero-top-p"),
        pytest.param(["--top-p", "1.5"], None, 2, "--top-p must be in (0, 1]", id="big-top-p"),
        pytest.param(["--top-p", "-0.2"], None, 2, "--top-p must be in (0, 1]",
                     id="negative-top-p"),
        pytest.param(["--top-p", "nan"], None, 2, "--top-p must be in (0, 1]", id="nan-top-p"),
        pytest.param(["--temperature", "-0.5"], None, 2, "--temperature must be >= 0",
                     id="negative-temperature"),
        pytest.param(["--temperature", "nan"], None, 2, "--temperature must be >= 0 and finite",
                     id="nan-temperature"),
        pytest.param(["-T", "inf"], None, 2, "--temperature must be >= 0 and finite, got inf",
                     id="inf-temperature"),
        pytest.param(["--seed", "-1"], None, 2, "--seed must be >= 0, got -1",
                     id="negative-seed"),
        pytest.param(["--cache", "ring"], None, 2,
                     "unknown --cache 'ring'; use one of: none, contiguous, paged",
                     id="unknown-cache"),
        pytest.param(["--block-size", "0"], None, 2, "--block-size must be >= 1",
                     id="zero-block-size"),
        pytest.param(["--block-size", "100000"], None, 2,
                     "--block-size 100000 is larger than the context window of 1024",
                     id="huge-block-size"),
        pytest.param(["--top", "0"], None, 2, "--top must be >= 1", id="zero-top"),
        pytest.param(["-m", "no-such-model"], None, 2, "unknown model 'no-such-model'",
                     id="unknown-model"),
        pytest.param(["-m", "gpt-4o"], None, 2, "no architecture", id="no-architecture"),
        pytest.param(["-m", "opt-13b"], None, 2, "kvmem estimate -m opt-13b", id="too-large"),
        pytest.param(["--weights", "missing.npz"], None, 2, "weights file not found",
                     id="missing-weights"),
    ],
)
def test_bad_input_is_one_line(
    args: list[str], stdin: bytes | None, code: int, message: str
) -> None:
    argv = ["generate", *args] if args[:1] in (["-"], [""]) else ["generate", PROMPT, *args]
    res = runner.invoke(app, argv, input=stdin)
    assert res.exit_code == code, res.output
    assert "Traceback" not in res.output
    errors = [line for line in res.stderr.splitlines() if not line.startswith("warning:")]
    assert len(errors) == 1 and errors[0].startswith("error: "), res.stderr
    assert message in errors[0]
    assert res.stdout == ""  # nothing was echoed or streamed before the error


@pytest.mark.parametrize(("cache", "shown", "left_out"), [
    ("paged", ["  cache  after each step", "  paged  block events"], []),
    ("contiguous", ["  cache  after each step"], ["  paged  block events"]),
    ("none", [], ["  cache  after each step", "  paged  block events"]),
])
def test_the_legend_explains_what_the_cache_mode_shows(
    cache: str, shown: list[str], left_out: list[str]
) -> None:
    text = explain("--max-new-tokens", "2", "--cache", cache)
    legend = text[:text.index("\nprompt:")]
    for entry in shown:
        assert entry in legend
    for entry in left_out:
        assert entry not in legend
    assert ("paged:" in text) is (cache == "paged") and ("  cache" in text) is (cache != "none")
