"""``tokcost generate``: the CLI over the reference path (CliRunner on tokcost.cli.app.app)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tokcost.catalog import load_catalog
from tokcost.cli.app import app
from tokcost.memory import kv_cache_bytes
from tokcost.reference.from_catalog import config_for, shipped_weights

runner = CliRunner()
PROMPT = "Every morning the small bakery"


def run_json(*args: str) -> dict[str, object]:
    length = [] if "--max-new-tokens" in args else ["--max-new-tokens", "6"]
    res = runner.invoke(app, ["generate", PROMPT, *length, "--json", *args])
    assert res.exit_code == 0, res.output
    data: dict[str, object] = json.loads(res.stdout)
    return data


@pytest.mark.parametrize(
    "sampling",
    [
        pytest.param([], id="greedy"),
        pytest.param(["--temperature", "0.9", "--top-k", "40", "--seed", "11"], id="top-k"),
        pytest.param(
            ["--temperature", "1.0", "--top-p", "0.9", "--seed", "5", "--n", "3"], id="top-p-n3"
        ),
    ],
)
def test_cache_modes_give_the_same_text(sampling: list[str]) -> None:
    outs = {m: run_json("--cache", m, *sampling) for m in ("none", "contiguous", "paged")}
    assert outs["none"]["samples"] == outs["contiguous"]["samples"] == outs["paged"]["samples"]


def test_json_cache_bytes_equal_kvmem_estimate() -> None:
    arch = load_catalog().resolve("tiny-ref").architecture
    assert arch is not None
    data = run_json("--cache", "paged", "--block-size", "4")
    kv = data["kv_cache"]
    assert isinstance(kv, dict)
    assert kv["matches"] is True
    assert (
        kv["bytes"]
        == kv["estimate_bytes"]
        == kv_cache_bytes(arch, kv["tokens"], "fp32", block_size=4)
    )
    assert kv["tokens"] == data["prompt_tokens"] + 5  # type: ignore[operator]
    contiguous = run_json("--cache", "contiguous")["kv_cache"]
    assert isinstance(contiguous, dict)
    assert contiguous["matches"] is True
    assert contiguous["bytes"] == kv_cache_bytes(arch, contiguous["tokens_reserved"], "fp32")


def test_parallel_samples_share_blocks_in_json() -> None:
    data = run_json(
        "--cache", "paged", "--block-size", "2", "--n", "4", "--temperature", "1", "--seed", "3"
    )
    kv = data["kv_cache"]
    assert isinstance(kv, dict)
    assert kv["blocks"] < kv["logical_blocks"]
    assert kv["saved_by_sharing"] > 0 and kv["matches"] is True
    assert len(data["samples"]) == 4  # type: ignore[arg-type]


def test_fixed_seed_reproduces_output() -> None:
    args = ("--temperature", "1.0", "--seed", "42")
    assert run_json(*args)["samples"] == run_json(*args)["samples"]


def test_streamed_text_starts_with_prompt_and_reports_cache_on_stderr() -> None:
    res = runner.invoke(app, ["generate", PROMPT, "--max-new-tokens", "4"])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith(PROMPT)
    assert "kvmem estimate" in res.stderr


def test_explain_shows_each_step() -> None:
    res = runner.invoke(
        app, ["generate", PROMPT, "--max-new-tokens", "2", "--explain", "--block-size", "4"]
    )
    assert res.exit_code == 0, res.output
    text = res.stdout
    for needle in (
        "prompt:",
        "step 1:",
        "step 2:",
        "█",
        "cache:",
        "blocks of 4",
        "kvmem estimate",
        "attention L0: h0→",
        "attention L3:",
    ):
        assert needle in text, needle


def test_explain_json_has_steps() -> None:
    data = run_json("--explain", "--top", "3")
    steps = data["steps"]
    assert isinstance(steps, list) and len(steps) == 6
    assert len(steps[0]["top"]) == 3
    assert {"layer", "head", "position", "weight"} <= set(steps[0]["attention"][0])


def test_stdin_prompt() -> None:
    res = runner.invoke(app, ["generate", "-", "--max-new-tokens", "2", "--json"], input=PROMPT)
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["prompt"] == PROMPT


@pytest.mark.parametrize(
    "args, code, message",
    [
        pytest.param(["-m", "opt-13b"], 2, "kvmem estimate -m opt-13b", id="too-large"),
        pytest.param(["-m", "gpt-4o"], 2, "no architecture", id="no-architecture"),
        pytest.param(["--max-new-tokens", "5000"], 2, "context window is 1024", id="too-long"),
        pytest.param(["--cache", "ring"], 2, "unknown --cache", id="bad-cache"),
        pytest.param(["--top-p", "0"], 2, "--top-p", id="bad-top-p"),
        pytest.param(["-m", "no-such-model"], 2, "no-such-model", id="unknown-model"),
    ],
)
def test_bad_input(args: list[str], code: int, message: str) -> None:
    res = runner.invoke(app, ["generate", PROMPT, *args])
    assert res.exit_code == code, res.output
    assert message in res.output
    assert "Traceback" not in res.output


def test_weights_file_with_wrong_shapes(tmp_path: Path) -> None:
    bad = tmp_path / "bad.npz"
    np.savez(bad, __format__=np.array("tokcost-ref v1"), tok_emb=np.zeros((10, 3)))
    res = runner.invoke(app, ["generate", PROMPT, "--weights", str(bad)])
    assert res.exit_code == 1
    assert "tok_emb" in res.output and "(1024, 128)" in res.output


def test_shipped_weights_and_tokenizer_match_the_catalog() -> None:
    entry = load_catalog().resolve("tiny-ref")
    cfg = config_for(entry)
    if not shipped_weights("tiny-ref").exists():
        pytest.skip("tiny-ref weights not trained yet")
    from tokcost.reference import load_weights

    load_weights(shipped_weights("tiny-ref"), cfg)  # raises on any mismatch
    assert entry.tokenizer is not None
    # {tokcost} in the catalog resolves to the installed package, from any folder.
    assert Path(entry.tokenizer.partition(":")[2]).is_file()


# Greedy continuation of PROMPT by the shipped tiny-ref weights: pinned so that a
# change of weights, tokenizer or forward pass shows up here.
GOLDEN_PROMPT_IDS = [36, 881, 88, 285, 289, 77, 543, 448, 275, 76, 320, 75, 293, 386, 262, 88]
GOLDEN_NEW_IDS = [288, 67, 67, 81, 850, 645, 448, 293]  # " address and the b"


def test_golden_greedy_continuation_of_shipped_model() -> None:
    if not shipped_weights("tiny-ref").exists():
        pytest.skip("tiny-ref weights not trained yet")
    data = run_json("--max-new-tokens", "8", "--cache", "paged")
    assert data["prompt_ids"] == GOLDEN_PROMPT_IDS
    assert data["samples"][0]["token_ids"] == GOLDEN_NEW_IDS  # type: ignore[index]


def test_shipped_model_is_trained() -> None:
    """Perplexity on a corpus sentence is far below the uniform 1024."""
    if not shipped_weights("tiny-ref").exists():
        pytest.skip("tiny-ref weights not trained yet")
    from tokcost.reference.from_catalog import load_model, load_tokenizer

    entry = load_catalog().resolve("tiny-ref")
    model = load_model(entry).model
    ids = load_tokenizer(entry, model.cfg).encode(
        "Every morning the small bakery on the corner opens at six o'clock."
    )
    logits = model.forward(np.asarray([ids[:-1]])).logits[0].astype(np.float64)  # (T, V)
    logz = np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1)) + logits.max(-1)
    nll = float(np.mean(logz - logits[np.arange(len(ids) - 1), ids[1:]]))
    assert np.exp(nll) < 100


def test_other_catalog_model_runs_on_seeded_weights(tmp_path: Path) -> None:
    cat = tmp_path / "models.yaml"
    cat.write_text(
        "version: 1\n"
        "models:\n"
        "  - id: mini\n"
        "    tokenizer: hf:tokcost/reference/data/tiny_ref_tokenizer.json\n"
        "    context_window: 64\n"
        "    architecture: {layers: 1, hidden_size: 32, attention_heads: 2, kv_heads: 1,\n"
        "                   head_dim: 16, vocab_size: 1024}\n"
        "gpus: []\n"
    )
    args = ["generate", "Hello", "-m", "mini", "--catalog", str(cat), "--max-new-tokens", "3"]
    res = runner.invoke(app, [*args, "--seed", "1"])
    assert res.exit_code == 0, res.output
    assert "random (seed 1)" in res.stderr
    data = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert data["weights"] == "random (seed 0)"
    assert data["kv_cache"]["bytes"] == 2 * 1 * 16 * 4 * 16  # one 16-token block, fp32


# --- the library call behind the command: --json is result.to_dict() ---------------------


@pytest.mark.parametrize(
    "args, kwargs",
    [
        pytest.param([], {}, id="greedy-paged"),
        pytest.param(
            ["--cache", "contiguous", "--temperature", "0.9", "--top-k", "40", "--seed", "11"],
            {"cache": "contiguous", "temperature": 0.9, "top_k": 40, "seed": 11},
            id="contiguous-top-k",
        ),
        pytest.param(
            ["--cache", "none", "--explain", "--top", "3"],
            {"cache": "none", "explain": True, "top_candidates": 3},
            id="none-explain",
        ),
        pytest.param(
            ["--n", "3", "--temperature", "1", "--top-p", "0.9", "--seed", "5",
             "--block-size", "4", "--explain"],
            {"n": 3, "temperature": 1.0, "top_p": 0.9, "seed": 5, "block_size": 4,
             "explain": True},
            id="paged-n3-explain",
        ),
    ],
)
def test_json_is_the_result(args: list[str], kwargs: dict[str, object]) -> None:
    import tokcost

    result = tokcost.generate(tokcost.GenerateRequest.of(prompt=PROMPT, max_new_tokens=6,
                                                                   **kwargs))
    assert run_json(*args) == json.loads(json.dumps(result.to_dict()))


def test_callbacks_see_the_prompt_and_every_step() -> None:
    import tokcost
    from tokcost.app.generate import GenerationStart
    from tokcost.reference import CacheMode, CacheSpec, SamplingParams, Step

    starts: list[GenerationStart] = []
    steps: list[Step] = []
    result = tokcost.generate(tokcost.GenerateRequest(
        prompt=PROMPT, sampling=SamplingParams(max_new_tokens=5, n=2, temperature=1.0, seed=2),
        kv=CacheSpec(cache=CacheMode.PAGED, block_size=4),
        on_start=starts.append, on_step=steps.append))
    (start,) = starts
    assert start.prompt_ids == result.prompt_ids and start.prompt_text == PROMPT
    assert "".join(start.prompt_tokens) == PROMPT and start.trained
    assert len(steps) == 10 and not result.steps  # steps are kept only with explain
    for s, sample in enumerate(result.samples):
        mine = [st for st in steps if st.sample == s]
        assert [st.token_id for st in mine] == list(sample.token_ids)
        assert mine[-1].text == sample.text  # each step carries the sample's text so far
    last = steps[-1]
    assert last.estimate_bytes == result.kv_cache.estimate_bytes
    assert result.kv_cache.saved_by_sharing is not None and result.kv_cache.tokens_reserved is None


@pytest.mark.parametrize(
    "kwargs, param, flag_args, flag",
    [
        pytest.param({"temperature": -1.0}, "temperature", ["--temperature", "-1"],
                     "--temperature must be >= 0", id="temperature"),
        pytest.param({"top_k": -1}, "top_k", ["--top-k", "-1"], "--top-k must be", id="top-k"),
        pytest.param({"n": 0}, "n", ["--n", "0"], "--n must be >= 1", id="n"),
        pytest.param({"max_new_tokens": 0}, "max_new_tokens", ["--max-new-tokens", "0"],
                     "--max-new-tokens must be >= 1", id="max-new-tokens"),
        pytest.param({"max_new_tokens": 5000}, "max_new_tokens", ["--max-new-tokens", "5000"],
                     "lower --max-new-tokens", id="too-long"),
        pytest.param({"block_size": 0}, "block_size", ["--block-size", "0"],
                     "--block-size must be >= 1", id="block-size"),
        pytest.param({"top_candidates": 0}, "top_candidates", ["--top", "0"],
                     "--top must be >= 1", id="top"),
        pytest.param({"cache": "ring"}, "cache", ["--cache", "ring"], "unknown --cache 'ring'",
                     id="cache"),
    ],
)
def test_errors_name_the_parameter(
    kwargs: dict[str, object], param: str, flag_args: list[str], flag: str
) -> None:
    import tokcost
    from tokcost.errors import UsageError

    with pytest.raises(UsageError) as caught:
        tokcost.generate(tokcost.GenerateRequest.of(prompt=PROMPT, **kwargs))
    assert caught.value.param == param and "--" not in str(caught.value)
    res = runner.invoke(app, ["generate", PROMPT, *flag_args])
    assert res.exit_code == 2 and flag in res.stderr


def test_user_catalog_model_through_the_library(tmp_path: Path) -> None:
    import tokcost

    cat = tmp_path / "mine.yaml"
    cat.write_text(
        "version: 1\n"
        "models:\n"
        "  - id: my-mini\n"
        "    tokenizer: hf:tokcost/reference/data/tiny_ref_tokenizer.json\n"
        "    context_window: 64\n"
        "    architecture: {layers: 1, hidden_size: 32, attention_heads: 2, kv_heads: 1,\n"
        "                   head_dim: 16, vocab_size: 1024}\n"
        "gpus: []\n"
    )
    args = ["generate", "Hello", "-m", "my-mini", "--catalog", str(cat), "--max-new-tokens", "3"]
    res = runner.invoke(app, [*args, "--json", "--seed", "4"])
    assert res.exit_code == 0, res.output
    for catalog in (cat, str(cat), load_catalog(cat)):
        result = tokcost.generate(tokcost.GenerateRequest.of(
            prompt="Hello", model="my-mini", catalog=catalog, max_new_tokens=3, seed=4))
        assert not result.trained and result.weights == "random (seed 4)"
        assert json.loads(res.stdout) == json.loads(json.dumps(result.to_dict()))


# --- the requests: built once, checked on construction -------------------------------------


@pytest.mark.parametrize(
    "options, field, value",
    [
        pytest.param({"max_new_tokens": "1k"}, "max_new_tokens", 1000, id="count-as-text"),
        pytest.param({"block_size": "8"}, "block_size", 8, id="block-as-text"),
        pytest.param({"temperature": "0.5", "seed": "7"}, "temperature", 0.5, id="float-text"),
        pytest.param({"cache": "contiguous"}, "cache", "contiguous", id="cache-mode"),
    ],
)
def test_a_request_accepts_what_users_pass(options: dict[str, object], field: str,
                                           value: object) -> None:
    import tokcost

    request = tokcost.GenerateRequest.of(prompt=PROMPT, **options)
    part = request.kv if field in ("cache", "block_size") else request.sampling
    assert getattr(part, field) == value
    # One seed seeds the draw and random weights alike.
    if "seed" in options:
        assert request.source.seed == request.sampling.seed == 7


@pytest.mark.parametrize(
    "options, param, fragment",
    [
        pytest.param({"n": "2k"}, "n", "n=2000 samples are more than the 1024", id="too-many"),
        pytest.param({"block_size": "abc"}, "block_size", "block_size 'abc' is not a count",
                     id="not-a-count"),
        pytest.param({"top_p": "high"}, "top_p", "top_p must be a number", id="not-a-number"),
        pytest.param({"model": "tiny-ref", "model_dir": "x"}, "model",
                     "give model or model_dir, not both", id="two-models"),
        pytest.param({"weights": "w.npz", "model": "hf:org/repo"}, "weights",
                     "weights cannot replace a checkpoint's own", id="weights-with-checkpoint"),
        pytest.param({"chat": True}, "chat", "chat needs a checkpoint's template", id="chat"),
        pytest.param({"top_candidates": 0}, "top_candidates", "top_candidates must be >= 1",
                     id="top"),
    ],
)
def test_a_bad_request_is_refused_on_construction(options: dict[str, object], param: str,
                                                  fragment: str) -> None:
    import tokcost
    from tokcost.errors import UsageError

    with pytest.raises(UsageError) as caught:
        tokcost.GenerateRequest.of(prompt=PROMPT, **options)
    assert caught.value.param == param and fragment in str(caught.value)


def test_an_unknown_option_is_refused() -> None:
    import tokcost
    from tokcost.errors import UsageError

    with pytest.raises(UsageError, match="GenerateRequest has no option 'temprature'"):
        tokcost.GenerateRequest.of(prompt=PROMPT, temprature=1.0)


def test_the_same_request_from_parts_or_options() -> None:
    import tokcost
    from tokcost.reference import CacheSpec, SamplingParams
    from tokcost.reference.from_catalog import ModelSource

    parts = tokcost.GenerateRequest(prompt=PROMPT, sampling=SamplingParams(n=2, seed=3),
                                    kv=CacheSpec(block_size=4), source=ModelSource(seed=3))
    flat = tokcost.GenerateRequest.of(prompt=PROMPT, n=2, seed=3, block_size=4)
    assert parts == flat


def test_prompt_bytes_are_read_by_the_input_policy() -> None:
    import tokcost
    from tokcost.errors import InputError

    request = tokcost.GenerateRequest.of(prompt=b"caf\xc3\xa9 \xff", max_new_tokens=1)
    assert request.text == "café \ufffd" and request.invalid_utf8_bytes == 1
    with pytest.raises(InputError, match="^notes.bin is binary"):
        tokcost.GenerateRequest.of(prompt=b"a\x00b", prompt_source="notes.bin")


def test_the_cli_names_the_flag_of_a_request_field() -> None:
    res = runner.invoke(app, ["generate", PROMPT, "--block-size", "abc"])
    assert res.exit_code == 2 and "--block-size 'abc' is not a count" in res.stderr
    res = runner.invoke(app, ["generate", PROMPT, "-m", "tiny-ref", "--model-dir", "x"])
    assert res.exit_code == 2 and "give --model or --model-dir, not both" in res.stderr
