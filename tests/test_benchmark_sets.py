"""FLORES-200 and UDHR in Unicode folders read as they are distributed, languages named by
CLDR (langcodes), and premiums read sentence by sentence on aligned text."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tokcost.cli.app import app
from tokcost.errors import UsageError
from tokcost.inflation import (
    Corpus,
    Meter,
    load_flores,
    load_udhr,
    measure,
)
from tokcost.inflation.benchmarks import is_flores, is_udhr, match_baseline

FIXTURES = Path(__file__).parent / "fixtures"
FLORES = FIXTURES / "flores"
UDHR = FIXTURES / "udhr"


class Utf8Bytes:
    """A stand-in tokenizer: one token per UTF-8 byte, so every premium is a byte ratio."""

    name = "bytes"
    exact = True
    streamable = True
    releases_gil = False
    vocab_size = 256

    def count(self, text: str, *, allow_special: bool = False) -> int:
        return len(text.encode("utf-8"))


BYTES = Meter("bytes", "fake:bytes", Utf8Bytes())  # type: ignore[arg-type]


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_layouts_are_recognised() -> None:
    assert is_flores(FLORES) and is_flores(FLORES / "dev") and not is_flores(UDHR)
    assert is_udhr(UDHR) and not is_udhr(FLORES)


def test_flores_joins_dev_and_devtest_sentences_with_spaces() -> None:
    group = load_flores(FLORES)
    assert group.baseline == "eng_Latn"  # the default baseline "en" names English
    assert [s.code for s in group.samples] == ["deu_Latn", "eng_Latn", "hin_Deva", "zho_Hans"]
    eng = group.sample("eng_Latn")
    assert eng is not None and eng.units is not None
    sentences = _lines(FLORES / "dev/eng_Latn.dev") + _lines(FLORES / "devtest/eng_Latn.devtest")
    assert list(eng.units) == sentences
    assert eng.text == " ".join(sentences)  # as Petrov et al. joined them
    names = {s.code: (s.label, s.script) for s in group.samples}
    assert names == {
        "deu_Latn": ("German", "Latin"), "eng_Latn": ("English", "Latin"),
        "hin_Deva": ("Hindi", "Devanagari"), "zho_Hans": ("Chinese", "Simplified Han"),
    }
    assert group.warnings == ()


@pytest.mark.parametrize(
    ("folder", "split", "sentences"),
    [(FLORES, "dev", 4), (FLORES, "devtest", 3), (FLORES, "both", 7), (FLORES / "dev", "both", 4),
     (FLORES / "devtest", "devtest", 3)],
)
def test_flores_splits(folder: Path, split: str, sentences: int) -> None:
    group = load_flores(folder, split=split)
    assert {len(s.units or ()) for s in group.samples} == {sentences}


def test_a_split_that_is_not_there_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="no FLORES-200 devtest files"):
        load_flores(FLORES / "dev", split="devtest")


def test_sentence_premiums_are_the_per_sentence_ratios() -> None:
    """The oracle: each sentence's byte count over English's, by the statistics module."""
    report = measure([load_flores(FLORES)], [BYTES])
    rows = {r.code: r for r in report.groups[0].rows}
    eng = [len(s.encode()) for s in rows["eng_Latn"].sample.units or ()]
    for code in ("deu_Latn", "hin_Deva", "zho_Hans"):
        mine = [len(s.encode()) for s in rows[code].sample.units or ()]
        ratios = [m / e for m, e in zip(mine, eng, strict=True)]
        got = rows[code].result("bytes").sentence_premiums
        assert got is not None
        assert got.sentences == 7
        assert got.median == pytest.approx(statistics.median(ratios))
        p95 = statistics.quantiles(ratios, n=20, method="inclusive")[18]
        assert got.p95 == pytest.approx(p95)
        assert got.over_2x == pytest.approx(sum(r > 2 for r in ratios) / 7)
    base = rows["eng_Latn"].result("bytes").sentence_premiums
    assert base is not None and (base.median, base.p95, base.over_2x) == (1.0, 1.0, 0.0)


def test_misaligned_language_gets_a_warning_and_no_sentence_figures(tmp_path: Path) -> None:
    for split in ("dev", "devtest"):
        (tmp_path / split).mkdir()
        for code in ("eng_Latn", "fra_Latn"):
            src = FLORES / split / f"{code.replace('fra', 'deu')}.{split}"
            (tmp_path / split / f"{code}.{split}").write_text(src.read_text(encoding="utf-8"),
                                                              encoding="utf-8")
    extra = tmp_path / "dev" / "fra_Latn.dev"
    extra.write_text(extra.read_text(encoding="utf-8") + "Une phrase de trop.\n",
                     encoding="utf-8")
    group = load_flores(tmp_path)
    assert any("not parallel" in w and "fra_Latn" in w for w in group.warnings)
    report = measure([group], [BYTES])
    fra = next(r for r in report.groups[0].rows if r.code == "fra_Latn")
    assert fra.result("bytes").sentence_premiums is None
    assert fra.result("bytes").premium is not None  # the whole-text premium stays


def test_baseline_matches_by_language_and_refuses_ambiguity() -> None:
    codes = ["eng_Latn", "zho_Hans", "zho_Hant"]
    assert match_baseline("en", codes, where="x") == "eng_Latn"
    assert match_baseline("zh-Hant", codes, where="x") == "zho_Hant"
    assert match_baseline("zho_Hans", codes, where="x") == "zho_Hans"
    with pytest.raises(UsageError, match="zho_Hans, zho_Hant"):
        match_baseline("zh", codes, where="x")


def test_udhr_header_is_removed_and_codes_come_from_the_index() -> None:
    group = load_udhr(UDHR)
    codes = {s.code: s for s in group.samples}
    assert set(codes) == {"en", "de-1996", "cmn-Hans", "xqz"}
    assert group.baseline == "en"
    en = codes["en"]
    assert not en.text.startswith("Universal Declaration") and "Office of the High" not in en.text
    assert en.text.lstrip().startswith("A small test of rights")
    assert codes["cmn-Hans"].label == "Mandarin Chinese"
    assert codes["cmn-Hans"].script == "Simplified Han"
    # A code CLDR does not know keeps the name the file's header gives it.
    assert codes["xqz"].label == "Testish"
    assert group.warnings == ()  # translations are not paragraph-aligned: no such warning


def test_load_corpora_picks_the_layout_from_the_folder() -> None:
    (flores,) = Corpus(sources=[FLORES]).load()
    (udhr,) = Corpus(sources=[UDHR]).load()
    assert flores.samples[0].units is not None and udhr.samples[0].units is None


def _fake_flores(folder: Path, codes: list[str]) -> None:
    (folder / "dev").mkdir()
    for i, code in enumerate(codes):
        text = "".join(f"sentence {n} in language number {i} " * (1 + i % 3) + "\n"
                       for n in range(3))
        (folder / "dev" / f"{code}.dev").write_text(text, encoding="utf-8")


_CODES = [  # real ISO 639-3 + ISO 15924 pairs, several scripts
    "eng_Latn", "deu_Latn", "fra_Latn", "spa_Latn", "ita_Latn", "por_Latn", "nld_Latn",
    "pol_Latn", "ces_Latn", "slk_Latn", "slv_Latn", "hrv_Latn", "fin_Latn", "est_Latn",
    "lvs_Latn", "lit_Latn", "hun_Latn", "ron_Latn", "swe_Latn", "dan_Latn", "nob_Latn",
    "isl_Latn", "tur_Latn", "vie_Latn", "ind_Latn", "rus_Cyrl", "ukr_Cyrl", "bel_Cyrl",
    "bul_Cyrl", "mkd_Cyrl", "srp_Cyrl", "hin_Deva", "mar_Deva", "npi_Deva", "arb_Arab",
    "pes_Arab", "urd_Arab",
]


def test_many_languages_group_the_table_by_script(tmp_path: Path) -> None:
    _fake_flores(tmp_path, _CODES)
    result = CliRunner().invoke(app, ["compare", str(tmp_path), "-t", "cl100k_base"],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Latin: 25 texts, median" in result.output
    assert "Cyrillic: 6 texts" in result.output and "Devanagari: 3 texts" in result.output
    assert "no terminal chart for 37 texts" in result.output


def test_cli_json_carries_sentence_premiums_and_split() -> None:
    runner = CliRunner()
    both = runner.invoke(app, ["compare", str(FLORES), "-t", "cl100k_base", "--json"])
    dev = runner.invoke(app, ["compare", str(FLORES), "-t", "cl100k_base", "--json",
                              "--split", "dev"])
    assert both.exit_code == 0 and dev.exit_code == 0, both.output + dev.output
    sentences = {
        json.loads(out.stdout)["groups"][0]["samples"][0]["results"][0]["sentence_premium"][
            "sentences"]
        for out in (both, dev)
    }
    assert sentences == {7, 4}
    result = json.loads(both.stdout)["groups"][0]["samples"][0]["results"][0]
    assert set(result["sentence_premium"]) == {"sentences", "median", "p95", "share_over_2x"}


def test_cli_table_shows_the_sentence_columns() -> None:
    result = CliRunner().invoke(app, ["compare", str(FLORES), "-t", "cl100k_base",
                                      "--no-chart"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for column in ("median/sent", "p95/sent", "sent >2x"):
        assert column in result.output


@pytest.mark.parametrize("folder", [FLORES, UDHR])
def test_a_missing_baseline_lists_the_codes_found(folder: Path) -> None:
    result = CliRunner().invoke(app, ["compare", str(folder), "--baseline", "xx"])
    assert result.exit_code == 2
    assert "no baseline text in 'xx'" in result.output and "--baseline" in result.output
    assert "xx.txt" not in result.output
