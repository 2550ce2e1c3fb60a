"""The shipped corpora: the prose aligns in every language, the index covers every file."""

from __future__ import annotations

import json
import unicodedata
from collections import Counter

import pytest
import yaml

from tokcost.inflation import builtin_dir, guess_script, paragraphs

# The index is read at collection: the cases below are one per file it lists (reading
# one shipped YAML writes nothing). The texts themselves are read in the tests.
CORPORA = builtin_dir()
INDEX = yaml.safe_load((CORPORA / "index.yaml").read_text(encoding="utf-8"))
ENTRIES = INDEX["files"]
PROSE = {e["code"]: CORPORA / e["path"] for e in ENTRIES if e["kind"] == "prose"}

REQUIRED_LANGUAGES = {
    "en", "de", "fr", "es", "pt", "it", "pl", "tr", "vi", "id", "ru", "uk", "el", "ar", "he",
    "hi", "bn", "th", "zh", "ja", "ko",
}
# The Unicode name prefix most letters of each script's text start with.
SCRIPT_LETTERS = {
    "Latin": ("LATIN",), "Cyrillic": ("CYRILLIC",), "Greek": ("GREEK",),
    "Arabic": ("ARABIC",), "Hebrew": ("HEBREW",), "Devanagari": ("DEVANAGARI",),
    "Bengali": ("BENGALI",), "Thai": ("THAI",), "Han": ("CJK",),
    "Han+Kana": ("CJK", "HIRAGANA", "KATAKANA"), "Hangul": ("HANGUL",),
}


@pytest.fixture(scope="module")
def en() -> list[str]:
    """The English paragraphs every translation aligns with."""
    return paragraphs(PROSE["en"].read_text(encoding="utf-8"))


def test_index_covers_every_file_and_nothing_else() -> None:
    on_disk = {
        p.relative_to(CORPORA).as_posix()
        for p in CORPORA.rglob("*")
        if p.is_file() and p.name not in {"index.yaml", "README.md"}
        and "__pycache__" not in p.parts  # Python may cache a compiled tasks.py here
    }
    listed = [e["path"] for e in ENTRIES]
    assert len(listed) == len(set(listed)), "a file is listed twice in index.yaml"
    assert set(listed) == on_disk


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["path"] for e in ENTRIES])
def test_index_entry_is_complete(entry: dict[str, object]) -> None:
    assert {"path", "code", "name", "script", "kind"} <= set(entry)
    assert entry["kind"] in INDEX["kinds"]


def test_prose_names_are_cldrs_as_for_a_users_folder() -> None:
    """One name per language everywhere: the built-in corpus says what a user's bn.txt
    says (CLDR's "Bangla", not "Bengali")."""
    from tokcost.inflation.languages import language_name
    prose = [e for e in ENTRIES if e["kind"] == "prose"]
    assert [e["name"] for e in prose] == [language_name(str(e["code"])) for e in prose]


def test_every_kind_has_its_baseline_and_enough_members() -> None:
    kinds = Counter(e["kind"] for e in ENTRIES)
    assert kinds["prose"] >= 20 and kinds["code"] >= 8 and kinds["data"] >= 6
    assert set(PROSE) >= REQUIRED_LANGUAGES
    codes = {e["code"] for e in ENTRIES}
    for kind, spec in INDEX["kinds"].items():
        assert spec["baseline"] in codes, kind
    assert {"python", "javascript", "java", "go", "rust", "c", "sql", "shell"} <= codes
    assert {"json", "json-min", "yaml", "csv", "html", "markdown"} <= codes


def test_english_is_long_enough(en: list[str]) -> None:
    words = sum(len(p.split()) for p in en)
    assert 1500 <= words <= 2500


@pytest.mark.parametrize("code", sorted(PROSE))
def test_prose_aligns_with_english(code: str, en: list[str]) -> None:
    """Same paragraph count, and each paragraph holds the same share of the text.

    A missing, merged or swapped paragraph moves these shares far off 1.0; real
    translations of these paragraphs stay within 0.85-1.15 of the English ones.
    """
    paras = paragraphs(PROSE[code].read_text(encoding="utf-8"))
    assert len(paras) == len(en), f"{code}.txt has {len(paras)} paragraphs, en.txt {len(en)}"
    total, en_total = sum(map(len, paras)), sum(map(len, en))
    for i, (p, e) in enumerate(zip(paras, en, strict=True), start=1):
        share = (len(p) / total) / (len(e) / en_total)
        assert 0.7 < share < 1.4, f"{code}.txt paragraph {i} looks misaligned ({share:.2f})"


@pytest.mark.parametrize("code", sorted(PROSE))
def test_prose_is_written_in_its_script(code: str) -> None:
    entry = next(e for e in ENTRIES if e["code"] == code and e["kind"] == "prose")
    text = PROSE[code].read_text(encoding="utf-8")
    letters = [c for c in text if c.isalpha()]
    prefixes = SCRIPT_LETTERS[str(entry["script"])]
    share = sum(unicodedata.name(c, "").startswith(prefixes) for c in letters) / len(letters)
    assert share > 0.9, f"{code}.txt: only {share:.0%} of letters are {entry['script']}"
    assert guess_script(text) == entry["script"]


def test_translations_are_distinct() -> None:
    texts = [p.read_text(encoding="utf-8") for p in PROSE.values()]
    assert len(set(texts)) == len(texts)
    first_paragraphs = [paragraphs(t)[0] for t in texts]
    assert len(set(first_paragraphs)) == len(first_paragraphs)


def test_data_formats_hold_the_same_records() -> None:
    data = CORPORA / "data"
    pretty = json.loads((data / "orders.json").read_text())
    assert json.loads((data / "orders.min.json").read_text()) == pretty
    assert yaml.safe_load((data / "orders.yaml").read_text()) == pretty
    try:
        import tomllib
    except ImportError:  # Python 3.10
        tomllib = pytest.importorskip("tomli")
    assert tomllib.loads((data / "orders.toml").read_text()) == pretty
    csv_lines = (data / "orders.csv").read_text().splitlines()
    assert len(csv_lines) == len(pretty["orders"]) + 1


def test_python_task_compiles() -> None:
    source = (CORPORA / "code" / "tasks.py").read_text()
    compile(source, "tasks.py", "exec")


def test_code_files_do_the_same_tasks() -> None:
    for entry in ENTRIES:
        if entry["kind"] != "code":
            continue
        text = (CORPORA / entry["path"]).read_text(encoding="utf-8")
        assert "Four small tasks" in text, entry["path"]
        assert "anna" in text and "croissant" in text and "Never odd or even" in text
