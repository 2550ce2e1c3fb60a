"""tokcost.inflation: premiums, per-token metrics, loading parallel texts, the picture."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokcost import get_tokenizer
from tokcost.adapters import Tokenizer
from tokcost.catalog.schema import ModelEntry, Pricing
from tokcost.errors import InputError, UsageError
from tokcost.inflation import (
    Corpus,
    CorpusKind,
    Group,
    Meter,
    Sample,
    corpus_kinds,
    guess_script,
    load_builtin,
    load_dir,
    load_files,
    measure,
    paragraphs,
    premium,
)


@pytest.fixture
def cl100k() -> Tokenizer:
    return get_tokenizer("tiktoken:cl100k_base")


@pytest.fixture
def mpl_config(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """matplotlib keeps its font cache here, not in the user's home."""
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path_factory.getbasetemp() / "matplotlib"))


class ByteTokens:
    """A transparent fake: one token per UTF-8 byte."""

    name = "bytes"
    exact = True
    streamable = True
    releases_gil = False
    vocab_size = 256

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]:
        return list(text.encode("utf-8"))

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(ids).decode("utf-8", "replace")

    def count(self, text: str, *, allow_special: bool = False) -> int:
        return len(text.encode("utf-8"))

    def token_bytes(self, ids: Sequence[int]) -> list[bytes]:
        return [bytes([i]) for i in ids]


BYTES = Meter("bytes", "fake:bytes", ByteTokens())
EN = "The baker opens at six.\n\nThe soup needs two carrots.\n"
HI = "बेकरी छह बजे खुलती है।\n\nसूप में दो गाजर चाहिए।\n"
ZH = "面包店六点开门。\n\n汤里要两根胡萝卜。\n"


def _write(folder: Path, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


# ------------------------------------------------------------------------- premiums


def test_premium_equals_ratio_of_direct_counts_on_builtin_corpora(cl100k: Tokenizer) -> None:
    groups = load_builtin(kinds=["prose"])
    report = measure(groups, [Meter.of("tiktoken:cl100k_base", "cl100k_base")])
    base = cl100k.count(groups[0].sample("en").text)  # type: ignore[union-attr]
    for row in report.groups[0].rows:
        direct = cl100k.count(row.sample.text)
        result = row.result("cl100k_base")
        assert result.tokens == direct
        assert result.premium == pytest.approx(direct / base)


def test_rows_are_sorted_by_premium_largest_first() -> None:
    report = measure(load_builtin(kinds=["prose"]), [BYTES])
    premiums = [row.result("bytes").premium for row in report.groups[0].rows]
    assert premiums == sorted(premiums, reverse=True)  # type: ignore[type-var]


@settings(max_examples=25, deadline=None, database=None)
@given(base=st.text(min_size=1, max_size=200).filter(str.strip),
       other=st.text(min_size=1, max_size=200).filter(str.strip))
def test_premium_property(base: str, other: str) -> None:
    group = Group("prose", "en", (Sample("en", base), Sample("xx", other)))
    report = measure([group], [BYTES])
    rows = {row.code: row.result("bytes") for row in report.groups[0].rows}
    assert rows["en"].premium == 1.0
    assert rows["xx"].premium == pytest.approx(len(other.encode()) / len(base.encode()))


def test_premium_function() -> None:
    assert premium(410, 100) == pytest.approx(4.1)
    with pytest.raises(UsageError):
        premium(3, 0)


def test_metrics_golden() -> None:
    group = Group("prose", "en", (Sample("en", EN), Sample("hi", HI), Sample("zh", ZH)))
    report = measure([group], [BYTES])
    rows = {row.code: row for row in report.groups[0].rows}
    en = rows["en"].result("bytes")
    assert en.tokens == len(EN.encode()) == 53
    assert en.bytes_per_token == 1.0
    assert en.chars_per_token == 1.0
    assert rows["en"].words == 10
    assert en.words_per_token == pytest.approx(10 / 53)
    assert en.tokens_per_word == pytest.approx(5.3)
    assert en.tokens_per_line is None  # prose: words, not lines
    # Chinese is not whitespace-delimited: no words per token.
    assert rows["zh"].words is None and rows["zh"].result("bytes").words_per_token is None
    assert rows["hi"].result("bytes").premium == pytest.approx(len(HI.encode()) / 53)
    assert rows["hi"].result("bytes").chars_per_token == pytest.approx(len(HI) / len(HI.encode()))


def test_tokens_per_line_for_code() -> None:
    py = "def f(x):\n    return x\n\n\nprint(f(1))\n"
    js = "function f(x) {\n  return x;\n}\nconsole.log(f(1));\n"
    group = Group("code", "python", (Sample("python", py, kind="code"),
                                     Sample("javascript", js, kind="code")))
    rows = {r.code: r for r in measure([group], [BYTES]).groups[0].rows}
    assert rows["python"].lines == 3  # blank lines do not count
    assert rows["python"].result("bytes").tokens_per_line == pytest.approx(len(py) / 3)
    assert rows["javascript"].words is None


def test_cost_per_model_scales_with_tokens() -> None:
    entry = ModelEntry("toy", pricing=Pricing(input=Decimal("2.00"), output=Decimal("8.00")))
    meter = Meter("toy", "fake:bytes", ByteTokens(), model=entry)
    group = Group("prose", "en", (Sample("en", EN), Sample("hi", HI)))
    rows = {r.code: r.result("toy") for r in measure([group], [meter]).groups[0].rows}
    assert rows["en"].cost_usd == Decimal(53) * Decimal("2.00") / Decimal(1_000_000)
    assert rows["hi"].cost_ratio == pytest.approx(rows["hi"].premium)  # type: ignore[arg-type]


def test_unpriced_meter_has_no_cost() -> None:
    group = Group("prose", "en", (Sample("en", EN),))
    result = measure([group], [BYTES]).groups[0].rows[0].result("bytes")
    assert result.cost_usd is None and result.cost_ratio is None


@pytest.mark.parametrize(
    ("text", "script"),
    [
        pytest.param("Hello, world", "Latin", id="latin"),
        pytest.param(HI, "Devanagari", id="devanagari"),
        pytest.param(ZH, "Han", id="han"),
        pytest.param("東京は晴れです", "Han+Kana", id="japanese"),
        pytest.param("안녕하세요", "Hangul", id="hangul"),
        pytest.param("12 + 3 = 15", None, id="no-letters"),
    ],
)
def test_guess_script(text: str, script: str | None) -> None:
    assert guess_script(text) == script


def test_paragraphs_golden() -> None:
    assert paragraphs("a\nb\n\n  \n\nc\r\n\r\nd") == ["a\nb", "c", "d"]
    assert paragraphs("\n\n") == []


# -------------------------------------------------------------------------- loading


def test_folder_of_parallel_files(tmp_path: Path) -> None:
    folder = _write(tmp_path / "t", {"en.txt": EN, "hi.txt": HI, "zh.txt": ZH, "notes.md": "x"})
    (group,) = load_dir(folder)
    assert group.kind == "prose" and group.baseline == "en"
    assert sorted(s.code for s in group.samples) == ["en", "hi", "zh"]
    assert group.warnings == ()


def test_folder_without_baseline_says_what_to_do(tmp_path: Path) -> None:
    folder = _write(tmp_path / "t", {"de.txt": EN, "hi.txt": HI})
    with pytest.raises(UsageError, match=r"no baseline en\.txt.*baseline=CODE.*found: de, hi"):
        load_dir(folder)
    (group,) = load_dir(folder, baseline="de")
    assert group.baseline == "de"


def test_not_parallel_warns_and_names_the_file(tmp_path: Path) -> None:
    folder = _write(tmp_path / "t", {"en.txt": EN, "fr.txt": "Une seule phrase.\n"})
    (group,) = load_dir(folder)
    assert len(group.warnings) == 1
    assert "fr.txt has 1 paragraphs" in group.warnings[0]
    assert "has 2" in group.warnings[0]


def test_empty_file_is_skipped_with_a_warning(tmp_path: Path) -> None:
    folder = _write(tmp_path / "t", {"en.txt": EN, "it.txt": "  \n"})
    (group,) = load_dir(folder)
    assert [s.code for s in group.samples] == ["en"]
    assert "it.txt is empty" in group.warnings[0]


def test_empty_baseline_is_an_error(tmp_path: Path) -> None:
    folder = _write(tmp_path / "t", {"en.txt": "", "it.txt": EN})
    with pytest.raises(InputError, match="baseline 'en' is empty"):
        load_dir(folder)


def test_unknown_language_code_is_shown_as_given(tmp_path: Path) -> None:
    folder = _write(tmp_path / "t", {"en.txt": EN, "qq-Zzzz.txt": HI})
    (group,) = load_dir(folder)
    sample = group.sample("qq-Zzzz")
    assert sample is not None and sample.label == "qq-Zzzz" and sample.has_words


def test_folder_with_a_broken_index(tmp_path: Path) -> None:
    folder = _write(tmp_path / "t", {"en.txt": EN, "index.yaml": "files:\n  - path: en.txt\n"})
    with pytest.raises(InputError, match="entry 1 needs a 'path' and a 'code'"):
        load_dir(folder)
    (folder / "index.yaml").write_text("files:\n  - {path: en.txt, code: en}\n"
                                       "  - {path: gone.txt, code: xx}\n")
    with pytest.raises(InputError, match="cannot read .*gone.txt"):
        load_dir(folder)
    (folder / "index.yaml").write_text("files: [{path: en.txt, code: en}]\n")
    (group,) = load_dir(folder)
    assert group.kind == "prose" and group.baseline == "en"


def test_folder_without_txt_files(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"no <lang>\.txt files"):
        load_dir(_write(tmp_path / "t", {"a.md": "x"}))


def test_list_of_files_groups_by_kind(tmp_path: Path) -> None:
    _write(tmp_path, {"en.txt": EN, "hi.txt": HI, "a.py": "print(1)\n", "b.js": "f();\n"})
    groups = load_files([tmp_path / n for n in ("en.txt", "hi.txt", "a.py", "b.js")])
    assert [(g.kind, g.baseline) for g in groups] == [("prose", "en"), ("code", "python")]


def test_same_code_twice_is_kept_apart(tmp_path: Path) -> None:
    _write(tmp_path / "a", {"en.txt": EN})
    _write(tmp_path / "b", {"en.txt": EN + "More.\n"})
    (group,) = load_files([tmp_path / "a" / "en.txt", tmp_path / "b" / "en.txt"])
    assert [s.code for s in group.samples] == ["en", "en@b"]
    assert group.baseline == "en"


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        load_files([tmp_path / "nope.txt"])


def test_not_utf8(tmp_path: Path) -> None:
    # The input policy of every command (issue 14): replaced with U+FFFD and reported.
    (tmp_path / "en.txt").write_bytes(b"caf\xe9\n")
    (group,) = load_files([tmp_path / "en.txt"])
    assert group.samples[0].text == "caf\ufffd\n"
    assert group.warnings == (f"{tmp_path / 'en.txt'}: 1 byte of invalid UTF-8 replaced with "
                              "U+FFFD",)


def test_empty_baseline_names_the_parameter(tmp_path: Path) -> None:
    folder = _write(tmp_path / "t", {"en.txt": "", "it.txt": EN})
    with pytest.raises(InputError, match=r"pass baseline=CODE \(found: it\)") as info:
        load_dir(folder)
    assert info.value.param == "baseline"


@pytest.mark.parametrize(
    ("kinds", "names"),
    [
        pytest.param([], (), id="none"),
        pytest.param(["code", CorpusKind.DATA], ("code", "data"), id="str-and-enum"),
        pytest.param(list(CorpusKind), ("prose", "code", "data"), id="all"),
    ],
)
def test_corpus_kinds(kinds: list[CorpusKind | str], names: tuple[str, ...]) -> None:
    assert corpus_kinds(kinds) == names


def test_unknown_corpus_kind_names_the_parameter() -> None:
    with pytest.raises(UsageError, match="unknown kinds='poetry'; use one of prose, code, data"
                       ) as info:
        corpus_kinds(["prose", "poetry"])
    assert info.value.param == "kinds"


def test_load_corpora_picks_the_layout(tmp_path: Path) -> None:
    folder = _write(tmp_path / "t", {"en.txt": EN, "hi.txt": HI, "a.py": "print(1)\n"})
    # a folder: its .txt files
    assert [g.kind for g in Corpus(sources=[folder]).load()] == ["prose"]
    files = [folder / n for n in ("en.txt", "hi.txt", "a.py")]
    assert [g.kind for g in Corpus(sources=files).load()] == ["prose", "code"]
    assert [g.kind for g in Corpus(sources=files, kinds=[CorpusKind.CODE]).load()] == ["code"]
    assert [g.kind for g in Corpus(kinds=["data"]).load()] == ["data"]  # none: the shipped ones
    assert Corpus(sources=[folder], baseline="hi").load()[0].baseline == "hi"


@pytest.mark.parametrize(
    ("sample", "shown"),
    [
        pytest.param(Sample("hi", HI), "Hindi (hi)", id="language"),
        pytest.param(Sample("python", "", kind="code", name="Python"), "Python", id="same-name"),
        pytest.param(Sample("tlh", "nuqneH"), "Klingon (tlh)", id="cldr-name"),
        pytest.param(Sample("xqz", "text"), "xqz", id="unknown-code"),
        pytest.param(Sample("qaa", "text"), "qaa", id="private-use-code"),
        pytest.param(Sample("zho_Hant", "text"), "Chinese (Traditional) (zho_Hant)",
                     id="flores-code-with-script"),
    ],
)
def test_display_name(sample: Sample, shown: str) -> None:
    assert sample.display_name == shown


def test_builtin_kinds_and_baselines() -> None:
    groups = load_builtin()
    assert [(g.kind, g.baseline) for g in groups] == [
        ("prose", "en"), ("code", "python"), ("data", "json"),
    ]
    assert all(g.warnings == () for g in groups)
    assert load_builtin(kinds=["prose"], baseline="de")[0].baseline == "de"


def test_json_document_keys() -> None:
    report = measure(load_builtin(kinds=["code"]), [BYTES])
    doc = report.to_dict()
    assert set(doc) == {"tokenizers", "groups", "warnings"}
    assert set(doc["tokenizers"][0]) == {"label", "spec", "exact", "model", "priced", "backend"}
    group = doc["groups"][0]
    assert set(group) == {"kind", "baseline", "warnings", "samples"}
    sample = group["samples"][0]
    assert set(sample) == {"code", "name", "script", "kind", "path", "bytes", "chars", "words",
                           "lines", "paragraphs", "invalid_utf8_bytes", "results"}
    assert set(sample["results"][0]) == {
        "tokenizer", "tokens", "exact", "bytes_per_token", "chars_per_token", "words_per_token",
        "tokens_per_word", "tokens_per_line", "premium", "cost_usd", "cost_ratio",
        "sentence_premium",
    }


# -------------------------------------------------------------------------- picture


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_plot_writes_a_valid_file(tmp_path: Path, suffix: str, cl100k: Tokenizer,
                                  mpl_config: None) -> None:
    pytest.importorskip("matplotlib")
    from tokcost.plotting.inflation import plot_premiums

    report = measure(load_builtin(kinds=["code", "data"]),
                     [BYTES, Meter("cl100k_base", "tiktoken:cl100k_base", cl100k)])
    path = tmp_path / f"premium{suffix}"
    plot_premiums(report, path)
    data = path.read_bytes()
    if suffix == ".png":
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
    else:
        import xml.etree.ElementTree as ET

        assert ET.fromstring(data).tag.endswith("svg")
    with pytest.raises(UsageError, match="force=True"):
        plot_premiums(report, path)
    plot_premiums(report, path, force=True)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temp file left


def test_plot_rejects_other_formats(tmp_path: Path) -> None:
    from tokcost.plotting.inflation import plot_premiums

    report = measure([Group("prose", "en", (Sample("en", EN),))], [BYTES])
    with pytest.raises(UsageError, match=r"\.png, \.svg or \.pdf"):
        plot_premiums(report, tmp_path / "x.jpg")


def test_json_names_the_invalid_bytes_of_each_text(tmp_path: Path) -> None:
    """Each sample says how many of its bytes were invalid UTF-8, not only the warnings."""
    (tmp_path / "en.txt").write_bytes(b"hello world\n")
    (tmp_path / "fr.txt").write_bytes(b"bonjour \xff\xfe monde\n")
    doc = measure(load_dir(tmp_path), [BYTES]).to_dict()
    got = {s["code"]: s["invalid_utf8_bytes"] for g in doc["groups"] for s in g["samples"]}
    assert got == {"en": 0, "fr": 2}
