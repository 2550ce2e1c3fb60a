"""``bpe sweep``: one training gives every smaller vocabulary (the prefix property), the
metrics on a corpus small enough to count by hand, the JSON keys, the CLI, the plot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import tokcost
from tokcost.bpe import TrainerConfig, train_from_texts
from tokcost.bpe.train import knee, prefix_model, usage
from tokcost.cli.app import app
from tokcost.errors import UsageError

CORPUS = ("the cat sat on the mat; the dog sat on the log. a rat ran at the cat.\n" * 8
          + "ferries leave the harbour at noon and return before the evening tide.\n" * 5)


@pytest.mark.parametrize("pattern", ["o200k", "gpt2"])
def test_a_2k_run_is_the_first_merges_of_an_8k_run(pattern: str) -> None:
    texts = [p.read_text(encoding="utf-8") for p in sorted(Path("corpora/prose").glob("*.txt"))]
    small = train_from_texts(texts, TrainerConfig(vocab_size=2048, pattern=pattern)).model
    big = train_from_texts(texts, TrainerConfig(vocab_size=8192, pattern=pattern)).model
    assert big.n_tokens == 8192 and small.n_tokens == 2048
    assert big.merges[: len(small.merges)] == small.merges
    cut = prefix_model(big, 2048)
    assert cut.merges == small.merges
    assert cut.ranks == small.ranks


@settings(max_examples=25, deadline=None)
@given(words=st.lists(st.text(alphabet="abcé <|>", min_size=1, max_size=12), min_size=1,
                      max_size=30),
       small=st.integers(256, 300), more=st.integers(0, 60))
def test_prefix_model_equals_a_smaller_run(words: list[str], small: int, more: int) -> None:
    """Any corpus, any two sizes, a special token too: the cut is the smaller run."""
    config = TrainerConfig(vocab_size=small + 1, pattern="gpt2", special_tokens=("<|x|>",))
    big = train_from_texts(words, TrainerConfig(vocab_size=small + 1 + more, pattern="gpt2",
                                                special_tokens=("<|x|>",))).model
    expected = train_from_texts(words, config).model
    got = prefix_model(big, small + 1)
    assert (got.merges, got.ranks, got.special_tokens) == (
        expected.merges, expected.ranks, expected.special_tokens)


def test_usage_counts_by_hand() -> None:
    # "aaab": aa (count 2) first; then (aa, a) and (a, b) tie and a's smaller id wins.
    model = train_from_texts(["aaab"], TrainerConfig(vocab_size=258, pattern="gpt2")).model
    assert [model.decoder[i] for _, _, i in model.merges] == [b"aa", b"ab"]
    one = usage(prefix_model(model, 257), ["aaab", "b", "c"])
    assert one.tokens == (3, 1, 1)  # [aa, a, b], [b], [c]
    assert (one.learned, one.unused_learned, one.unused) == (1, 0, 257 - 4)  # a b c aa used
    two = usage(model, ["aaab", "b", "c"])
    assert two.tokens == (2, 1, 1)  # [aa, ab], [b], [c]
    assert (two.learned, two.unused_learned, two.unused) == (2, 0, 258 - 4)  # aa ab b c


@pytest.mark.parametrize(("sizes", "tpb", "expected"), [
    pytest.param([1000, 2000, 4000], [0.5, 0.4, 0.39], 2000, id="second-step-flat"),
    pytest.param([1000, 2000, 4000], [0.5, 0.3, 0.2], None, id="every-step-pays"),
    pytest.param([1000, 4000], [0.5, 0.46], 1000, id="per-doubling: 8% over two doublings"),
    pytest.param([1000, 4000], [0.5, 0.40], None, id="per-doubling: 20% over two doublings"),
])
def test_knee_rule(sizes: list[int], tpb: list[float], expected: int | None) -> None:
    assert knee(sizes, tpb) == expected


def test_knee_gain_out_of_range() -> None:
    with pytest.raises(UsageError, match="knee_gain=1.5"):
        knee([1000], [0.5], 1.5)


@pytest.fixture()
def corpus(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "train.txt").write_text(CORPUS, encoding="utf-8")
    held = tmp_path / "held"
    held.mkdir()
    (held / "en.txt").write_text("the cat sat.\n", encoding="utf-8")
    (held / "de.txt").write_text("die Katze saß.\n", encoding="utf-8")
    return {"train": tmp_path / "train.txt", "held": held, "root": tmp_path}


def test_metrics_by_hand(corpus: dict[str, Path]) -> None:
    result = tokcost.sweep_bpe(tokcost.BPESweepRequest(
        files=(corpus["train"],), vocab_sizes=(256, 300), held_out=corpus["held"],
        tokenizers=("cl100k_base",), hidden=8))
    sizes = {p.requested_vocab_size: p for p in result.sizes}
    docs = {d.name: d for d in result.documents}
    assert (docs["en"].bytes, docs["en"].chars) == (13, 13)
    assert (docs["de"].bytes, docs["de"].chars) == (16, 15)  # ß is two bytes
    bytes_only = sizes[256]
    assert bytes_only.tokens == (16, 13) or bytes_only.tokens == (13, 16)  # one token a byte
    assert bytes_only.tokens_per_byte == 1.0
    assert bytes_only.tokens_per_char == pytest.approx(29 / 28)
    assert (bytes_only.embedding_params, bytes_only.output_params) == (256 * 8, 256 * 8)
    # per layer at hidden 8: 4 x 8 x P(P+1)/2 FLOPs and 2 x 8 x 2 x P bytes, averaged
    assert bytes_only.attention_flops_per_document == (16 * 13 * 14 + 16 * 16 * 17) / 2
    assert bytes_only.kv_bytes_per_document == 32 * (13 + 16) / 2
    ref = result.references[0]
    assert bytes_only.vs_reference == pytest.approx(29 / ref.total_tokens)
    assert sizes[300].total_tokens < 29 and sizes[300].learned == 44
    used_bytes = len(set("the cat sat.\ndie Katze saß.\n".encode()))
    assert bytes_only.unused == 256 - used_bytes and bytes_only.unused_share == pytest.approx(
        (256 - used_bytes) / 256)


def test_tied_model_width(corpus: dict[str, Path]) -> None:
    result = tokcost.sweep_bpe(tokcost.BPESweepRequest(
        files=(corpus["train"],), vocab_sizes=(300,), held_out=corpus["held"], tokenizers=(),
        model="llama-3.1-8b", tied=True))
    point = result.sizes[0]
    assert result.width.hidden == 4096 and point.output_params == 0
    from tokcost.catalog import load_catalog
    from tokcost.memory import kv_cache_bytes

    arch = load_catalog().resolve("llama-3.1-8b").architecture
    assert arch is not None
    assert point.kv_bytes_per_document == sum(kv_cache_bytes(arch, n) for n in point.tokens) / 2


JSON_KEYS = {"trained_vocab_size", "distinct_pretokens", "total_pretokens", "seconds_train",
             "seconds", "eval", "width", "reference", "sizes", "references", "knee", "plot",
             "skipped", "warnings"}
POINT_KEYS = {"label", "spec", "exact", "vocab_size", "requested_vocab_size", "merges",
              "exhausted", "tokens", "tokens_per_byte", "tokens_per_char", "vs_reference",
              "embedding_params", "output_params", "attention_flops_per_document",
              "kv_bytes_per_document", "unused", "unused_share", "unused_learned_share",
              "documents"}


def test_json_keys(corpus: dict[str, Path]) -> None:
    result = CliRunner().invoke(app, ["bpe", "sweep", str(corpus["train"]), "--eval",
                                      str(corpus["held"]), "--vocab-sizes", "260,300,1k",
                                      "-t", "cl100k_base", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert set(doc) == JSON_KEYS
    assert {p["requested_vocab_size"] for p in doc["sizes"]} == {260, 300, 1000}
    for p in doc["sizes"] + doc["references"]:
        assert set(p) == POINT_KEYS
        assert [d["name"] for d in p["documents"]] == ["de", "en"]
    assert set(doc["width"]) == {"hidden_size", "tied", "model", "layers", "cost_scope",
                                 "cost_formula"}
    assert set(doc["knee"]) == {"vocab_size", "gain", "rule"}
    assert doc["sizes"][-1]["exhausted"] and "--vocab-sizes" in result.stderr
    assert doc["references"][0]["vs_reference"] == 1.0


def test_table_marks_references_and_says_the_width(corpus: dict[str, Path]) -> None:
    result = CliRunner().invoke(app, ["bpe", "sweep", str(corpus["train"]), "--eval",
                                      str(corpus["held"] / "en.txt"), "--vocab-sizes", "260,300",
                                      "-t", "cl100k_base", "--hidden", "1Ki"])
    assert result.exit_code == 0, result.output
    assert "cl100k_base (100,277)" in result.stdout
    assert "hidden 1,024" in result.stderr and "per layer" in result.stderr


def test_plot_is_written(corpus: dict[str, Path]) -> None:
    pytest.importorskip("matplotlib")
    out = corpus["root"] / "sweep.png"
    result = CliRunner().invoke(app, ["bpe", "sweep", str(corpus["train"]), "--eval",
                                      str(corpus["held"]), "--vocab-sizes", "256,260,270,300",
                                      "-t", "cl100k_base", "--plot", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    assert f"wrote {out}" in result.stderr


@pytest.mark.parametrize(("args", "code", "fragment"), [
    pytest.param(["--vocab-sizes", "100,300"], 2, "--vocab-sizes 100", id="below-bytes"),
    pytest.param(["--vocab-sizes", "1e30"], 2, "--vocab-sizes", id="too-big"),
    pytest.param(["--vocab-sizes", ","], 2, "--vocab-sizes", id="none"),
    pytest.param(["--hidden", "0"], 2, "--hidden 0", id="hidden-zero"),
    pytest.param(["--hidden", "8", "-m", "llama-3.1-8b"], 2, "--hidden", id="hidden-and-model"),
    pytest.param(["-m", "no-such-model"], 2, "no-such-model", id="unknown-model"),
    pytest.param(["-t", "o300k_base"], 2, "unknown tokenizer", id="unknown-tokenizer"),
    pytest.param(["--knee-gain", "2"], 2, "--knee-gain 2", id="knee-gain"),
    pytest.param(["--plot", "{root}/x.gif"], 2, "--plot", id="plot-suffix"),
    pytest.param(["--plot", "{root}/no/x.png"], 1, "cannot write", id="plot-folder"),
])
def test_bad_inputs(corpus: dict[str, Path], args: list[str], code: int, fragment: str) -> None:
    argv = ["bpe", "sweep", str(corpus["train"]), "--eval", str(corpus["held"]),
            *[a.format(root=corpus["root"]) for a in args]]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == code, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and fragment in lines[0], result.stderr
    assert "Traceback" not in result.output


def test_eval_missing_or_binary(corpus: dict[str, Path]) -> None:
    blob = corpus["root"] / "blob.bin"
    blob.write_bytes(b"\x00\x01")
    result = CliRunner().invoke(app, ["bpe", "sweep", str(corpus["train"]), "--eval",
                                      str(blob), "--vocab-sizes", "300"])
    assert result.exit_code == 1 and "no held-out text" in result.stderr


def test_table_units_step_past_tera(corpus: dict[str, Path]) -> None:
    """Past 999.5T the FLOPs read 1P, 1.23P, ... E, not 1e+03T."""
    from tokcost.cli.bpe import _si

    assert [_si(n) for n in (999, 1234, 999.4e9, 999.6e9, 1.234e15, 5e18, 7e21, 2e27)] == [
        "999", "1.23k", "999G", "1T", "1.23P", "5E", "7Z", "2e+03Y"]
    held = corpus["root"] / "long.txt"
    held.write_text("x" * 200_000, encoding="utf-8")
    result = CliRunner().invoke(app, ["bpe", "sweep", str(corpus["train"]), "--eval", str(held),
                                      "--vocab-sizes", "256", "-t", "cl100k_base",
                                      "--hidden", "1M"])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if line.startswith("256 "))
    assert "e+" not in row and "P " in row  # 4 x 2^20 x 200k x 200,001 / 2: 83.9P
