"""tokcost attention: the head scores on hand-built matrices, the use case, the CLI and the plot."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import tokcost
from tokcost.cli.app import app
from tokcost.errors import InputError, UsageError
from tokcost.reference.attention_stats import (
    THRESHOLDS,
    check_attention,
    describe,
    layer_stats,
    row_entropy,
)


def _pattern(t: int, where: str) -> np.ndarray:
    """(1, T, T) with every row's mass on one place: previous, first or self (row 0: itself)."""
    a = np.zeros((1, t, t))
    for i in range(t):
        j = {"previous": max(i - 1, 0), "first": 0, "self": i}[where]
        a[0, i, j] = 1.0
    return a


def _uniform(t: int) -> np.ndarray:
    return np.tril(np.ones((t, t))) / np.arange(1, t + 1)[:, None]


@pytest.mark.parametrize("t", [2, 5, 33])
def test_a_pure_previous_token_pattern_scores_one(t: int) -> None:
    s = layer_stats(_pattern(t, "previous"), layer=2)[0]
    assert s.previous_token == 1.0
    assert s.mean_distance == 1.0
    assert s.entropy == 0.0
    # with 2 tokens the previous token is the first one: both labels are true
    assert s.labels == (("sink",) if t == 2 else ()) + ("previous-token",)
    assert describe(s).startswith("L2H0: ") and describe(s).endswith("previous-token head")


def test_a_sink_puts_all_its_mass_on_the_first_token() -> None:
    s = layer_stats(_pattern(8, "first"), layer=0)[0]
    assert s.first_token == 1.0
    assert s.relative_distance == 1.0
    assert "sink" in s.labels and "long-range" not in s.labels


def test_a_self_pattern_looks_nowhere_else() -> None:
    s = layer_stats(_pattern(6, "self"), layer=0)[0]
    assert (s.self_token, s.previous_token, s.mean_distance) == (1.0, 0.0, 0.0)
    assert s.labels == ("self",)


@pytest.mark.parametrize("t", [2, 7, 64])
def test_a_uniform_pattern_has_the_maximal_entropy_per_row(t: int) -> None:
    a = _uniform(t)[None]
    assert np.allclose(row_entropy(a)[0], np.log(np.arange(1, t + 1)))
    s = layer_stats(a, layer=0)[0]
    assert s.entropy_norm == pytest.approx(1.0)
    assert s.relative_distance == pytest.approx(0.5)
    assert s.labels[-1] == "broad" and "long-range" not in s.labels


def test_duplicate_tokens_score_the_mass_on_earlier_copies() -> None:
    ids = [5, 6, 5, 7, 6]  # rows 2 (copy at 0) and 4 (copy at 1) have earlier copies
    a = np.zeros((1, 5, 5))
    a[0, 0, 0] = a[0, 1, 1] = a[0, 3, 3] = 1.0
    a[0, 2, 0] = 1.0  # all on the earlier 5
    a[0, 4, 1], a[0, 4, 4] = 0.5, 0.5  # half on the earlier 6
    s = layer_stats(a, layer=0, ids=ids)[0]
    assert s.duplicate_token == pytest.approx(0.75)
    assert "duplicate-token" in s.labels
    assert layer_stats(a, layer=0, ids=[1, 2, 3, 4, 5])[0].duplicate_token is None
    assert layer_stats(a, layer=0)[0].duplicate_token is None


@pytest.mark.parametrize(("bad", "fragment"), [
    (np.ones((2, 3)), "shape"),
    (np.ones((1, 1, 1)), "at least 2"),
    (np.full((1, 2, 2), 0.5), "causal"),
    (np.tril(np.ones((1, 3, 3))), "sum to 1"),
    (np.array([[[1.0, 0.0], [float("nan"), 1.0]]]), "finite"),
])
def test_malformed_attention_is_refused(bad: np.ndarray, fragment: str) -> None:
    with pytest.raises(InputError, match=fragment):
        check_attention(bad)


@st.composite
def _causal(draw: st.DrawFn) -> np.ndarray:
    heads, t = draw(st.integers(1, 3)), draw(st.integers(2, 12))
    logits = np.array(draw(st.lists(st.floats(-20, 20), min_size=heads * t * t,
                                    max_size=heads * t * t))).reshape(heads, t, t)
    logits = np.where(np.triu(np.ones((t, t)), k=1) > 0, -np.inf, logits)
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@settings(max_examples=60, deadline=None)
@given(att=_causal(), seed=st.integers(0, 3))
def test_every_score_stays_in_its_range(att: np.ndarray, seed: int) -> None:
    t = att.shape[1]
    assert np.allclose(att.sum(axis=-1), 1.0)
    ent = row_entropy(att)
    assert np.all(ent >= -1e-9) and np.all(ent <= np.log(np.arange(1, t + 1)) + 1e-9)
    ids = list(np.random.default_rng(seed).integers(0, 3, size=t))
    for s in layer_stats(att, layer=0, ids=ids):
        assert 0 <= s.entropy <= math.log(t) + 1e-9
        assert -1e-9 <= s.entropy_norm <= 1 + 1e-9
        assert -1e-9 <= s.relative_distance <= 1 + 1e-9
        assert 0 <= s.mean_distance <= t - 1
        parts = (s.first_token, s.previous_token, s.self_token)
        assert all(-1e-9 <= p <= 1 + 1e-9 for p in parts)
        if s.duplicate_token is not None:
            assert -1e-9 <= s.duplicate_token <= 1 + 1e-9
        assert all(label in {"sink", "previous-token", "self", "duplicate-token", "broad",
                             "local", "long-range"} for label in s.labels)


def test_full_attention_matrices_match_the_last_row_view() -> None:
    from tokcost.reference import RefConfig, Transformer, init_weights

    cfg = RefConfig(layers=2, hidden_size=16, attention_heads=2, kv_heads=1, head_dim=8,
                    vocab_size=11, context_window=32)
    model = Transformer(cfg, init_weights(cfg, seed=3))
    ids = np.array([[1, 2, 3, 4, 2]])
    full, last = model.forward(ids, attention="full"), model.forward(ids, attention=True)
    assert full.attention is not None and last.attention is not None
    for f, row in zip(full.attention, last.attention, strict=True):
        assert f.shape == (1, 2, 5, 5)
        assert np.array_equal(f[:, :, -1, :], row)
        check_attention(f[0])
    assert np.array_equal(full.logits, last.logits)


PROMPT = "The baker opens the shop, and the baker sells bread to the town."


def test_the_use_case_scores_every_head_of_tiny_ref() -> None:
    result = tokcost.attention(tokcost.AttentionRequest.of(prompt=PROMPT))
    assert result.trained and len(result.heads) == result.layers * result.attention_heads
    assert [h.name for h in result.heads[:2]] == ["L0H0", "L0H1"]
    assert result.maps[0].shape == (4, len(result.prompt_ids), len(result.prompt_ids))
    assert {n.head for n in result.notable} == {h.name for h in result.heads if h.labels}
    assert result.thresholds == THRESHOLDS and result.plot is None


def test_random_weights_for_a_catalog_model_without_any(tmp_path: Path) -> None:
    # any catalog model with a small architecture runs on seeded weights; tiny-ref's own
    # shape with a seed stands in for the random test checkpoints
    result = tokcost.attention(tokcost.AttentionRequest.of(prompt=PROMPT, weights=None, seed=1))
    assert result.heads  # the shipped weights still win over a seed
    one, two = (tokcost.attention(tokcost.AttentionRequest.of(prompt=PROMPT)) for _ in range(2))
    assert one.to_dict() == two.to_dict()


@pytest.mark.parametrize(("kwargs", "error", "fragment"), [
    ({"heads": ("L0H0",)}, UsageError, "plot=FILE"),
    ({"heads": ("L4H0",), "plot": "x.png"}, UsageError, "outside the model"),
    ({"heads": ("head3",), "plot": "x.png"}, UsageError, "L<layer>H<head>"),
    ({"plot": "x.txt"}, UsageError, ".png"),
    ({"seed": -1}, UsageError, "seed=-1"),
])
def test_bad_requests_name_the_parameter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         kwargs: dict[str, object], error: type,
                                         fragment: str) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error, match=fragment):
        tokcost.attention(tokcost.AttentionRequest.of(prompt=PROMPT, **kwargs))
    assert list(tmp_path.iterdir()) == []


def test_a_one_token_or_too_long_prompt_is_refused() -> None:
    """Bad usage (exit 2), as generate refuses a prompt too long for the window."""
    with pytest.raises(UsageError, match="at least 2"):
        tokcost.attention(tokcost.AttentionRequest.of(prompt="a"))
    with pytest.raises(UsageError, match="context window"):
        tokcost.attention(tokcost.AttentionRequest.of(prompt="word " * 2000))


def test_the_cli_json_document() -> None:
    result = CliRunner().invoke(app, ["attention", PROMPT, "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert list(doc) == ["model", "weights", "tokenizer", "prompt_tokens", "prompt_ids",
                         "tokens", "layers", "attention_heads", "kv_heads", "thresholds",
                         "heads", "notable", "plot", "plotted", "layer_kinds",
                         "sliding_window"]
    assert doc["layer_kinds"] == ["full"] * doc["layers"] and doc["sliding_window"] is None
    assert len(doc["heads"]) == 16 and doc["prompt_tokens"] == len(doc["tokens"])
    assert list(doc["heads"][0]) == ["head", "layer", "index", "entropy", "entropy_norm",
                                     "mean_distance", "relative_distance", "first_token",
                                     "previous_token", "self_token", "duplicate_token",
                                     "labels"]
    assert all(set(n) == {"head", "labels", "text"} for n in doc["notable"])


def test_the_cli_table_names_heads_and_thresholds(tmp_path: Path) -> None:
    prompt = tmp_path / "p.txt"
    prompt.write_text(PROMPT, encoding="utf-8")
    result = CliRunner().invoke(app, ["attention", "--file", str(prompt)])
    assert result.exit_code == 0, result.output
    assert "L3H3" in result.stdout and "thresholds: sink first >= 0.5" in result.stdout
    assert ("notable heads:" in result.stdout) or ("no head passes" in result.stdout)
    assert "Traceback" not in result.output


def test_the_plot_is_written(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "heads.png"
    result = CliRunner().invoke(app, ["attention", PROMPT, "--plot", str(png), "--head", "L3H0",
                                      "--head", "l0h1", "--head", "L3H0"])
    assert result.exit_code == 0, result.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {png} (2 heads)" in result.stderr
    again = CliRunner().invoke(app, ["attention", PROMPT, "--plot", str(png)])
    assert again.exit_code == 2 and "--force" in again.stderr
    forced = CliRunner().invoke(app, ["attention", PROMPT, "--plot", str(png), "--force",
                                      "--json"])
    assert forced.exit_code == 0 and len(json.loads(forced.stdout)["plotted"]) == 16


@pytest.mark.parametrize(("args", "code", "fragment"), [
    (["attention", "x", "--file", "{p}"], 2, "give PROMPT or --file, not both"),
    (["attention", "--file", "{none}"], 2, "no such file"),
    (["attention", "--file", "{folder}"], 2, "is a folder"),
    (["attention", "--file", "{bin}"], 1, "not text"),
    (["attention", "a"], 2, "at least 2"),
    (["attention", "hello world", "--head", "L0H0"], 2, "add --plot FILE"),
    (["attention", "hello world", "--plot", "{folder}/no/x.png"], 1, "cannot write"),
    (["attention", "hello world", "-m", "no-such-model"], 2, "unknown model"),
    (["attention", "hello world", "--seed", "-1"], 2, "--seed -1"),
])
def test_bad_cli_input_is_one_line(tmp_path: Path, args: list[str], code: int,
                                   fragment: str) -> None:
    (tmp_path / "p.txt").write_text("hi there")
    (tmp_path / "b.bin").write_bytes(b"\x00\x01 binary")
    names = {"p": str(tmp_path / "p.txt"), "none": str(tmp_path / "nothing.txt"),
             "folder": str(tmp_path), "bin": str(tmp_path / "b.bin")}
    before = sorted(tmp_path.rglob("*"))
    result = CliRunner().invoke(app, [a.format(**names) for a in args])
    assert result.exit_code == code, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and fragment in errors[0], result.stderr
    assert "Traceback" not in result.output
    assert sorted(tmp_path.rglob("*")) == before


@pytest.mark.parametrize("window", [1, 2, 3, 5])
def test_a_uniform_row_over_a_sliding_window_is_broad_and_halfway_back(window: int) -> None:
    """On a sliding layer query i sees its min(i + 1, window) newest keys: a head spread
    evenly over them has the largest entropy it can have there (ent/max 1) and reaches back
    half as far as it can (rel 0.5); scored as a full layer it would look narrow."""
    t = 12
    att = np.zeros((1, t, t))
    for i in range(t):
        lo = max(0, i - window + 1)
        att[0, i, lo : i + 1] = 1.0 / (i + 1 - lo)
    s = layer_stats(att, layer=0, window=window)[0]
    if window == 1:  # one key per row: nothing to spread over
        assert s.entropy_norm == 0.0 and s.relative_distance == 0.0 and s.self_token == 1.0
    else:
        assert s.entropy_norm == pytest.approx(1.0)
        assert s.relative_distance == pytest.approx(0.5)
        assert "broad" in s.labels
    full = layer_stats(att, layer=0)[0]
    assert full.entropy_norm < s.entropy_norm or window == 1


def test_the_request_checks_itself() -> None:
    """One head as a bare string is one head; a head without a plot names both fields."""
    request = tokcost.AttentionRequest.of(prompt=PROMPT, heads="L0H1", plot="h.png")
    assert request.heads == ("L0H1",)
    with pytest.raises(UsageError) as caught:
        tokcost.AttentionRequest.of(prompt=PROMPT, heads=["L0H1"])
    assert caught.value.param == "heads" and caught.value.related == ("plot",)
    assert str(caught.value) == "heads=L0H1 chooses a head to draw; add plot=FILE"
    with pytest.raises(UsageError, match="seed=-3 must be >= 0"):
        tokcost.AttentionRequest.of(prompt=PROMPT, seed="-3")
