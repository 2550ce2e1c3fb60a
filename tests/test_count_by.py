"""``count --by ext|lang|dir``, ``--sort``, ``--top``; the invalid-UTF-8 summary; UTF-16/32
files read from their byte order mark."""

from __future__ import annotations

import codecs
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tokcost
from tokcost import get_tokenizer
from tokcost.cli.app import app
from tokcost.counting import Inputs, count_paths, sniff_binary
from tokcost.counting.filetypes import UNKNOWN, language
from tokcost.counting.groups import folder

TREE = {"src/app/main.py": "def main():\n    return 42\n",
        "src/app/util.py": "import os\n",
        "src/README.md": "# Source\n\nThe code lives here.\n",
        "docs/guide.md": "# Guide\n\nRead the code, then the tests.\n" * 3,
        "notes": "no extension at all\n"}


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, text in TREE.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _json(runner: Any, *args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["count", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def _tokens(text: str) -> int:
    return get_tokenizer("tiktoken:o200k_base").count(text)


@pytest.mark.parametrize(("by", "groups"), [
    pytest.param("ext", {".py": ["src/app/main.py", "src/app/util.py"],
                         ".md": ["src/README.md", "docs/guide.md"], "(none)": ["notes"]}, id="ext"),
    pytest.param("lang", {"Python": ["src/app/main.py", "src/app/util.py"],
                          "Markdown": ["src/README.md", "docs/guide.md"], UNKNOWN: ["notes"]},
                 id="lang"),
    pytest.param("dir", {"src/": ["src/app/main.py", "src/app/util.py", "src/README.md"],
                         "docs/": ["docs/guide.md"], "notes": ["notes"]}, id="dir-dot"),
])
def test_groups_sum_their_files(runner, tree: Path, by: str,  # type: ignore[no-untyped-def]
                                groups: dict[str, list[str]]) -> None:
    doc = _json(runner, ".", "--by", by)
    assert doc["by"] == by
    got = {g["name"]: g for g in doc["groups"]}
    assert set(got) == set(groups)
    for name, members in groups.items():
        assert got[name]["files"] == len(members)
        assert got[name]["bytes"] == sum(len(TREE[m].encode()) for m in members)
        assert got[name]["tokens"]["o200k_base"] == sum(_tokens(TREE[m]) for m in members)
    # largest first by default, and every file still listed in files[]
    shown = [g["tokens"]["o200k_base"] for g in doc["groups"]]
    assert shown == sorted(shown, reverse=True)
    assert len(doc["files"]) == len(TREE)


def test_dir_groups_below_each_folder_named(runner, tree: Path) -> None:  # type: ignore[no-untyped-def]
    doc = _json(runner, "src", "docs/guide.md", "--by", "dir", "--sort", "name")
    assert [(g["name"], g["files"]) for g in doc["groups"]] == [
        ("docs/guide.md", 1), ("src/README.md", 1), ("src/app/", 2)]


def test_folder_rule() -> None:
    assert folder("src/app/main.py", ["src"]) == "src/app/"
    assert folder("src/app/main.py", ["src", "src/app"]) == "src/app/main.py"  # the deepest root
    assert folder("a/b.py", ["./"]) == "a/"
    assert folder("/abs/x.txt", ["."]) == "/abs/x.txt"  # not under '.'
    assert folder("<stdin>", []) == "<stdin>"


def test_table_has_files_column_and_total(runner, tree: Path) -> None:  # type: ignore[no-untyped-def]
    result = runner.invoke(app, ["count", ".", "--by", "ext"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["extension", "files", "bytes", "chars", "o200k_base"]
    assert lines[-1].split()[:4] == ["total", "(5", "files)", "5"]


def test_one_file_total_is_singular(runner, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "a.py").write_text("x = 1\n", encoding="utf-8")
    result = runner.invoke(app, ["count", str(tmp_path), "--by", "lang"])
    assert result.stdout.splitlines()[-1].split()[:3] == ["total", "(1", "file)"]


@pytest.mark.parametrize(("sort", "key"), [
    pytest.param("name", lambda f: f["path"], id="name"),
    pytest.param("bytes", lambda f: (-f["bytes"], f["path"]), id="bytes"),
    pytest.param("tokens", lambda f: (-f["tokens"]["o200k_base"], f["path"]), id="tokens"),
])
def test_sort_files(runner, tree: Path, sort: str, key: Any) -> None:  # type: ignore[no-untyped-def]
    files = _json(runner, ".", "--sort", sort)["files"]
    assert files == sorted(files, key=key) and len(files) == len(TREE)


def test_top_cuts_rows_and_sums_the_rest(runner, tree: Path) -> None:  # type: ignore[no-untyped-def]
    doc = _json(runner, ".", "--top", "2")
    assert len(doc["files"]) == 2 and doc["others"]["rows"] == 3
    for key in ("files", "bytes", "chars"):
        assert len(doc["files"]) * (key == "files") + sum(
            f[key] for f in doc["files"] if key != "files") + doc["others"][key] \
            == doc["total"][key]
    table = runner.invoke(app, ["count", ".", "--top", "2"]).stdout
    assert "(3 more)" in table
    assert _json(runner, ".", "--top", "9")["others"] is None


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["--by", "language"], "takes ext, lang or dir", id="bad-by"),
    pytest.param(["--sort", "size"], "takes tokens, name or bytes", id="bad-sort"),
    pytest.param(["--top", "0"], "give 1 or more rows", id="top-zero"),
    pytest.param(["--by", "ext", "--total"], "--by shapes the table", id="by-total"),
    pytest.param(["--top", "3", "--tokens"], "--top shapes the table", id="top-tokens"),
])
def test_bad_view_options(runner, tree: Path, args: list[str],  # type: ignore[no-untyped-def]
                          message: str) -> None:
    result = runner.invoke(app, ["count", ".", *args])
    assert result.exit_code == 2 and message in result.stderr, result.output
    assert "Traceback" not in result.output


def test_csv_by(runner, tree: Path) -> None:  # type: ignore[no-untyped-def]
    rows = runner.invoke(app, ["count", ".", "--by", "dir", "--csv", "--top", "1"]).stdout
    lines = rows.splitlines()
    assert lines[0] == "dir,files,bytes,chars,o200k_base"
    assert lines[1].startswith("docs/,1,") and lines[2].startswith("(2 more),4,")
    assert lines[-1].startswith("TOTAL,5,")


@pytest.mark.parametrize("name", ["a.py", "Makefile", "CMakeLists.txt", "x.h", "q.sql", "x.pl",
                                  "README", "x.min.js", "a.3", "Makefile.am", "x.tar.gz"])
def test_language_is_pygments_pick(name: str) -> None:
    """The table lookup answers as Pygments' own name-only resolution (pygmentize -N)."""
    from pygments.lexers import find_lexer_class_for_filename

    found = find_lexer_class_for_filename(name)
    assert language("some/dir/" + name) == (found.name if found else UNKNOWN)


_NAMES = st.lists(st.tuples(st.sampled_from(["", "a/", "b/", "a/c/"]),
                            st.sampled_from(["x", "y", "z"]),
                            st.sampled_from([".py", ".md", ".txt", ""]),
                            st.text(st.sampled_from("ab .\n"), max_size=30)),
                  min_size=1, max_size=8, unique_by=lambda t: t[:3])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(files=_NAMES, by=st.sampled_from(["ext", "lang", "dir"]), top=st.integers(1, 4))
def test_groups_add_up_to_the_total(tmp_path_factory: pytest.TempPathFactory,
                                    files: list[tuple[str, str, str, str]], by: str,
                                    top: int) -> None:
    root = tmp_path_factory.mktemp("by")
    for folder_, stem, ext, text in files:
        (root / folder_).mkdir(parents=True, exist_ok=True)
        (root / f"{folder_}{stem}{ext}").write_text(text)
    result = tokcost.count(tokcost.CountRequest.of(paths=[str(root)], by=by, top=top,
                                                   tokenizers=["o200k_base", "cl100k_base"]))
    doc = result.to_dict()
    rest = doc["others"] or {"files": 0, "bytes": 0, "tokens": {"o200k_base": 0,
                                                                "cl100k_base": 0}}
    assert len(doc["groups"]) <= top
    assert sum(g["files"] for g in doc["groups"]) + rest["files"] == doc["total"]["files"]
    assert sum(g["bytes"] for g in doc["groups"]) + rest["bytes"] == doc["total"]["bytes"]
    for label in ("o200k_base", "cl100k_base"):
        assert (sum(g["tokens"][label] for g in doc["groups"]) + rest["tokens"][label]
                == doc["total"]["tokens"][label])


def test_invalid_utf8_in_several_files_is_one_line(runner, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    for name, data in (("a.txt", b"ok \xff\xfe\n"), ("b.txt", b"x\xc3(\n"), ("c.md", b"\xe2\x82\n"),
                       ("d.txt", b"fine\n")):
        (tmp_path / name).write_bytes(data)
    result = runner.invoke(app, ["count", str(tmp_path)])
    notes = [line for line in result.stderr.splitlines() if line]
    assert notes == ["warning: 3 files hold invalid text (5 bytes replaced with U+FFFD): 2 .txt, "
                     "1 .md; --verbose lists them"]
    verbose = runner.invoke(app, ["count", str(tmp_path), "--verbose"]).stderr
    assert verbose.count("of invalid UTF-8 replaced with U+FFFD") == 3
    one = runner.invoke(app, ["count", str(tmp_path / "a.txt")]).stderr
    assert "a.txt: 2 bytes of invalid UTF-8 replaced with U+FFFD" in one


TEXT = "Héllo wörld, the ferry left at noon. 日本語 😀\r\n" * 3
WIDE = [pytest.param(codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16", id="utf16-le"),
        pytest.param(codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16", id="utf16-be"),
        pytest.param(codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32", id="utf32-le"),
        pytest.param(codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32", id="utf32-be")]


@pytest.mark.parametrize(("bom", "codec", "name"), WIDE)
@pytest.mark.parametrize("block", [1 << 20, 64], ids=["whole", "streamed"])
def test_bom_file_counts_its_decoded_text(tmp_path: Path, bom: bytes, codec: str, name: str,
                                          block: int) -> None:
    data = bom + TEXT.encode(codec)
    (tmp_path / "w.txt").write_bytes(data)
    toks = {"tiktoken:cl100k_base": get_tokenizer("tiktoken:cl100k_base")}
    report = count_paths(Inputs(paths=[str(tmp_path / "w.txt")]), toks, block_bytes=block)
    (f,) = report.files
    assert (f.encoding, f.bytes, f.chars) == (name, len(data), len(TEXT))
    assert f.tokens["tiktoken:cl100k_base"] == toks["tiktoken:cl100k_base"].count(TEXT)
    assert f.invalid_utf8_bytes == 0 and not report.skipped


def test_bom_file_on_stdin_and_in_price(runner, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = codecs.BOM_UTF16_LE + TEXT.encode("utf-16-le")
    piped = runner.invoke(app, ["count", "-", "--json"], input=data)
    assert piped.exit_code == 0, piped.output
    (f,) = json.loads(piped.stdout)["files"]
    assert (f["encoding"], f["tokens"]["o200k_base"]) == ("UTF-16", _tokens(TEXT))
    (tmp_path / "w.txt").write_bytes(data)
    tokens = runner.invoke(app, ["count", str(tmp_path / "w.txt"), "--tokens", "--json"])
    assert json.loads(tokens.stdout)["files"][0]["text"] == TEXT


def test_bom_file_with_u0000_is_binary(tmp_path: Path) -> None:
    path = tmp_path / "z.txt"
    path.write_bytes(codecs.BOM_UTF16_LE + "ab\x00cd".encode("utf-16-le"))
    toks = {"tiktoken:cl100k_base": get_tokenizer("tiktoken:cl100k_base")}
    for block in (1 << 20, 4):
        report = count_paths(Inputs(paths=[str(path)]), toks, block_bytes=block)
        assert not report.files
        assert report.skipped[0].reason == "binary (U+0000 at character 2 of its UTF-16 text)"


def test_odd_trailing_byte_is_invalid_utf16(runner, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "odd.txt").write_bytes(codecs.BOM_UTF16_LE + "hi".encode("utf-16-le") + b"A")
    result = runner.invoke(app, ["count", str(tmp_path / "odd.txt")])
    assert "odd.txt: 1 byte of invalid UTF-16 replaced with U+FFFD" in result.stderr


def test_utf8_only_readers_name_the_bom() -> None:
    """The Dask engine and bpe train read UTF-8 only: the skip says UTF-16, not binary."""
    reason = sniff_binary(codecs.BOM_UTF16_BE + "hi".encode("utf-16-be"))
    assert reason is not None and reason.startswith("UTF-16 text (byte order mark)")
    assert "iconv -f UTF-16 -t UTF-8" in reason
    assert sniff_binary(b"GIF89a\0\1") == "binary (NUL byte at offset 6)"
