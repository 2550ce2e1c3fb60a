"""`models validate`: every problem in one run, each at its line; one exit-code rule; names.

The table gives catalog texts and, for each, every problem expected as (line, a fragment
of its message): the run must report exactly those, no fewer (nothing missed) and no
more. Lines are 1-based; None is a problem of the whole file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import tokcost
from tokcost.catalog import CatalogInvalid, load_catalog
from tokcost.cli.app import app
from tokcost.errors import CatalogError, TokenizerNotFound
from tokcost.tokenizers import TokenizerSelection

runner = CliRunner()


@pytest.fixture(autouse=True)
def _shipped_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOKCOST_CATALOG", raising=False)


def write(tmp_path: Path, text: str | bytes, name: str = "cat.yaml") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


MANY = """\
models:
  - id: a
    context_window: lots
    tokenizer: tiktoken:nonexistent_base
  - id: A
    aliases: [x, y]
  - id: b
    aliases: [x, Y]
    max_output_tokens: 1e30
  - id: c
    tokenizer: model:nobody
    pricing: {input: 1, output: 1e9}
gpus:
  - {name: H 100, memory: 80GiB, bandwidth: 3TB}
  - {name: h100, memory: 80GiB, bandwidth: 3TB, bf16_flops: -1}
"""

CASES = [
    pytest.param(MANY, [
        (3, "context_window: expected an integer >= 1, got 'lots'"),
        (4, "tokenizer: unknown tiktoken encoding 'nonexistent_base'"),
        (5, "duplicate model id 'A' ('a' at line 2; case is ignored)"),
        (8, "aliases[0]: alias 'x' is already an alias of 'A' (line 6)"),
        (8, "aliases[1]: alias 'Y' is already an alias of 'A' (line 6)"),
        (9, "max_output_tokens: expected at most 1,000,000,000 tokens, got '1e30'"),
        (11, "tokenizer: 'model:nobody' names no model of the catalog"),
        (12, "pricing.output: expected at most 1,000,000 (USD per million tokens)"),
        (15, "gpus[1].bf16_flops: expected FLOP/s (a number >= 0)"),
        (15, "gpus[1].name: duplicate GPU name 'h100' ('H 100' at line 14"),
    ], id="several-at-once"),
    pytest.param("models:\n  - id: a\n    colour: red\n  - id: a\n",
                 [(3, "colour: unknown field"), (4, "duplicate model id 'a' (first at line 2)")],
                 id="duplicate-next-to-field-error"),
    pytest.param("models:\n  - {id: a, aliases: [x]}\n  - {id: b, aliases: [x]}\n"
                 "  - {id: c, aliases: [X, b]}\n",
                 [(3, "alias 'x' is already an alias of 'a'"),
                  (4, "alias 'X' is already an alias of 'a'"),
                  (4, "alias 'b' is already the id of 'b'")], id="every-collision"),
    pytest.param("models:\n  - {id: b, aliases: A}\n  - {id: a}\n",
                 [(2, "alias 'A' is already the id of 'a' (line 3)")],
                 id="alias-before-the-id-it-takes"),
    pytest.param("models:\n  - {id: a, prefixes: [ft-]}\n  - {id: b, prefixes: [FT-]}\n",
                 [(3, "prefix 'FT-' is already claimed by 'a'")], id="prefixes"),
    pytest.param("models:\n  - {id: a, tokenizer: 'zz:thing'}\n",
                 [(2, "no tokenizer family 'zz'")], id="unknown-family"),
    pytest.param("models:\n  - {id: a, tokenizer: 'tiktoken:o200k_bse'}\n",
                 [(2, "(did you mean: o200k_base?)")], id="encoding-typo"),
    pytest.param("models:\n  - {id: a, tokenizer: 'o200k_bse'}\n",
                 [(2, "unknown tokenizer spec 'o200k_bse' (did you mean: o200k_base?)")],
                 id="bare-typo"),
    pytest.param("models:\n  - {id: a, tokenizer: 'hf:'}\n",
                 [(2, "names nothing after 'hf:'")], id="empty-argument"),
    pytest.param("models:\n  - {id: a, tokenizer: 'model:b'}\n  - {id: b, tokenizer: 'model:a'}\n",
                 [(2, "goes round in a circle (a -> b -> a)"),
                  (3, "goes round in a circle (b -> a -> b)")], id="ref-cycle"),
    pytest.param("models:\n  - {id: a, tokenizer: 'model:b'}\n  - {id: b}\n",
                 [(2, "leads to model 'b' (line 3), which names no tokenizer")],
                 id="ref-without-tokenizer"),
    pytest.param("models:\n  - {id: a, tokenizer: 'sp:{nowhere}/x.model'}\n",
                 [(2, "unknown placeholder {nowhere}")], id="placeholder"),
    pytest.param("models:\n  - id: a\n    context_window: 1e30\n",
                 [(3, "expected at most 1,000,000,000 tokens, got '1e30'")], id="context-1e30"),
    pytest.param("models:\n  - id: a\n    architecture: {layers: 1e6}\n",
                 [(3, "architecture.layers: expected at most 10,000 layers")], id="layers"),
    pytest.param("models:\n  - id: a\n    architecture: {layers: 2, params: 1e20}\n",
                 [(3, "architecture.params: expected at most 1,000,000,000,000,000 parameters")],
                 id="params"),
    pytest.param("gpus:\n  - {name: g, memory: 1e30GB, bandwidth: 3TB}\n",
                 [(2, "gpus[0].memory: expected at most 1 PiB, got '1e30GB'")], id="memory"),
    pytest.param("gpus:\n  - {name: g, memory: 80GB, bandwidth: 3TB, fp8_flops: 1e30}\n",
                 [(2, "fp8_flops: expected at most 1e+18 FLOP/s")], id="flops"),
    pytest.param("models:\n  - id: a\n    context_window: 5\n    context_window: 6\n",
                 [(4, "context_window: key written twice")], id="key-twice"),
    pytest.param("", [(None, "the file is empty; a catalog needs a 'models:' list")],
                 id="empty"),
    pytest.param("# only a comment\n", [(None, "the file is empty")], id="only-comments"),
    pytest.param("models: [unclosed\n", [(2, "not valid YAML")], id="not-yaml"),
    pytest.param(b"models:\n  - id: \xff\n", [(2, "not UTF-8 text (byte 0xff at offset 16)")],
                 id="not-utf8"),
    pytest.param("- 1\n- 2\n", [(1, "expected a mapping with keys version, extends, models")],
                 id="top-level-list"),
    pytest.param("models: 5\n", [(1, "models: expected a list of model entries, got 5")],
                 id="models-not-a-list"),
    pytest.param("models: [gpt-4o]\n", [(1, "models[0]: expected a mapping with keys id")],
                 id="entry-not-a-mapping"),
    pytest.param("gpus: {name: x}\n", [(1, "gpus: expected a list of GPUs")], id="gpus-mapping"),
    pytest.param("version: 2\n", [(1, "version: expected catalog schema version 1")],
                 id="version"),
    # Names as -t takes them, and as lookup compares them: all valid.
    pytest.param("models:\n  - {id: a, tokenizer: o200k}\n  - {id: b, tokenizer: cl100k}\n"
                 "  - {id: c, tokenizer: o200k_base}\n  - {id: d, tokenizer: 'tiktoken:cl100k'}\n"
                 "  - {id: e, tokenizer: 'hf:org/repo'}\n  - {id: f, tokenizer: 'model:A'}\n"
                 "  - {id: A2, aliases: [a2x]}\n",
                 [], id="valid-names"),
]


def found(path: Path, problems: tuple[str, ...]) -> list[tuple[int | None, str]]:
    out = []
    for problem in problems:
        match = re.match(rf"{re.escape(str(path))}(?::(\d+))?: (.*)$", problem)
        assert match, problem  # every problem names the file first
        out.append((int(match.group(1)) if match.group(1) else None, match.group(2)))
    return out


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_every_problem_at_its_line(
    tmp_path: Path, text: str | bytes, expected: list[tuple[int | None, str]]
) -> None:
    path = write(tmp_path, text)
    check = tokcost.validate_catalog(path)
    got = found(path, check.problems)
    assert len(got) == len(expected), "\n".join(check.problems)
    for (line, fragment), (got_line, message) in zip(expected, got, strict=True):
        assert got_line == line and fragment in message, (line, fragment, got_line, message)
    assert all("\n" not in p for p in check.problems)
    assert check.valid == (not expected)


def test_extends_is_checked_against_the_shipped_catalog(tmp_path: Path) -> None:
    text = ("extends: shipped\nmodels:\n  - id: gpt-4o\n    context_window: 5\n"
            "  - id: mine\n    aliases: [GPT-4O-MINI]\n    tokenizer: model:claude-sonnet-4-5\n"
            "gpus:\n  - {name: mygpu, aliases: [h200], memory: 80GiB, bandwidth: 3TB}\n")
    path = write(tmp_path, text)
    got = found(path, tokcost.validate_catalog(path).problems)
    # gpt-4o replaces the shipped entry (fine); the alias and the GPU alias clash with it.
    assert [line for line, _ in got] == [6, 9]
    assert "alias 'GPT-4O-MINI' is already the id of 'gpt-4o-mini' in the shipped catalog" in got[0][1]
    assert "duplicate GPU name 'h200' ('H200' in the shipped catalog" in got[1][1]


def test_borrowed_tokenizer_is_used(tmp_path: Path) -> None:
    path = write(tmp_path, "extends: shipped\nmodels:\n  - {id: mine, tokenizer: 'model:claude-sonnet-4-5'}\n"
                 "  - {id: bare, tokenizer: cl100k}\n")
    assert tokcost.validate_catalog(path).valid
    cat = load_catalog(path)
    mine = cat.resolve("mine")
    assert (mine.tokenizer, mine.tokenizer_exact) == ("tiktoken:o200k_base", False)
    choices = TokenizerSelection(models=["mine", "bare"], catalog=cat).resolve()
    assert [(c.spec, c.exact) for c in choices] == [
        ("tiktoken:o200k_base", False), ("tiktoken:cl100k_base", True)]


# --- loading for other commands: the first problem, file:line, and how many more ----------


@pytest.mark.parametrize(
    ("text", "first"),
    [
        pytest.param("models: [{id: a, context_window: lots}]\n",
                     ":1: model 'a': context_window: expected an integer >= 1", id="field"),
        pytest.param("models:\n  - id: a\n    colour: red\n  - id: a\n",
                     ":3: model 'a': colour: unknown field", id="field-then-duplicate"),
        pytest.param("models:\n  - {id: a}\n  - {id: a}\n",
                     ":3: model 'a': id: duplicate model id 'a'", id="duplicate"),
        pytest.param("models: [unclosed\n", ":2: not valid YAML", id="yaml"),
        pytest.param("", ": the file is empty", id="empty"),
    ],
)
def test_loading_names_the_first_problem(tmp_path: Path, text: str, first: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(CatalogError) as info:
        load_catalog(path)
    assert str(info.value).startswith(f"{path}{first}")
    problems = tokcost.validate_catalog(path).problems
    if len(problems) > 1:
        assert isinstance(info.value, CatalogInvalid)
        assert f"(and {len(problems) - 1} more problem" in str(info.value)


def test_a_bad_catalog_tokenizer_fails_where_it_is_used(tmp_path: Path) -> None:
    path = write(tmp_path, "models:\n  - {id: a, tokenizer: 'tiktoken:o200k_bse'}\n  - {id: b}\n")
    cat = load_catalog(path)  # the other entries stay usable
    with pytest.raises(CatalogError, match=r"model 'a' in the catalog: tokenizer: unknown "
                                           r"tiktoken encoding 'o200k_bse' \(did you mean"):
        TokenizerSelection(models=["a"], catalog=cat).resolve()


# --- the CLI: one exit-code rule ----------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "extra", "code", "fragment"),
    [
        pytest.param(None, [], 0, "ok (", id="shipped-ok"),
        pytest.param("models: [{id: a, tokenizer: o200k}]\n", [], 0, "ok (1 models", id="ok"),
        pytest.param("models: [{id: a, context_window: lots}]\n", [], 1, ":1: model 'a'",
                     id="field"),
        pytest.param("models: [{id: a}, {id: a}]\n", [], 1, "duplicate model id", id="duplicate"),
        pytest.param("models: [{id: a, tokenizer: 'tiktoken:nope'}]\n", [], 1,
                     "unknown tiktoken encoding", id="tokenizer"),
        pytest.param("models: [{id: a, context_window: 1e30}]\n", [], 1, "at most", id="bound"),
        pytest.param("", [], 1, "the file is empty", id="empty"),
        pytest.param("models: [unclosed\n", [], 1, "not valid YAML", id="yaml"),
        pytest.param(b"\xff\xfe", [], 1, "not UTF-8", id="binary"),
        pytest.param("models: [{id: a}, {id: a}]\n", ["--json"], 1, "", id="json-problems"),
        pytest.param("MISSING", [], 2, "does not exist", id="missing-file"),
        pytest.param("FOLDER", [], 2, "is a folder", id="folder"),
        pytest.param("models: []\n", ["extra-argument"], 2, "unexpected extra argument",
                     id="extra-argument"),
        pytest.param("models: []\n", ["--colour"], 2, "--colour", id="unknown-option"),
    ],
)
def test_validate_exit_codes(
    tmp_path: Path, content: str | bytes | None, extra: list[str], code: int, fragment: str
) -> None:
    args = ["models", "validate"]
    if content == "MISSING":
        args.append(str(tmp_path / "nope.yaml"))
    elif content == "FOLDER":
        args.append(str(tmp_path))
    elif content is not None:
        args.append(str(write(tmp_path, content)))
    result = runner.invoke(app, [*args, *extra])
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    assert fragment.lower() in result.output.lower()
    if "--json" in extra:
        document = json.loads(result.stdout)
        assert document["valid"] is False and document["problems"]
    elif code == 1:
        problems = result.stderr.strip().splitlines()
        assert problems[-1].endswith(f"{len(problems) - 1} problem" + "s" * (len(problems) > 2))
        assert result.stdout == ""
    elif code == 2 and content in ("MISSING", "FOLDER"):
        assert len(result.stderr.strip().splitlines()) == 1  # one line


def test_validate_help_states_the_rule() -> None:
    result = runner.invoke(app, ["models", "validate", "--help"], terminal_width=100)
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "0 FILE is a valid catalog" in text and "1 FILE has problems" in text
    assert "2 nothing checked" in text


# --- names ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "spec"),
    [
        pytest.param("o200k", "tiktoken:o200k_base", id="o200k"),
        pytest.param("cl100k", "tiktoken:cl100k_base", id="cl100k"),
        pytest.param("tiktoken:o200k", "tiktoken:o200k_base", id="tiktoken-o200k"),
        pytest.param(" o200k_base ", "tiktoken:o200k_base", id="bare-name"),
        pytest.param("tiktoken:o200k_harmony", "tiktoken:o200k_harmony", id="harmony"),
    ],
)
def test_pattern_names_are_their_base_encodings(written: str, spec: str) -> None:
    choice = TokenizerSelection(tokenizers=[written]).resolve()[0]
    assert (choice.spec, choice.label) == (spec, spec.split(":")[1])


def test_count_labels_the_real_encoding(tmp_path: Path) -> None:
    text = write(tmp_path, "hello world\n", "a.txt")
    args = ["count", str(text), "-t", "o200k", "-t", "cl100k"]
    table = runner.invoke(app, args)
    assert table.exit_code == 0, table.output
    assert table.stdout.split()[:5] == ["file", "bytes", "chars", "o200k_base", "cl100k_base"]
    data = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    assert set(data["files"][0]["tokens"]) == {"o200k_base", "cl100k_base"}


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        pytest.param("o200k_bse", "did you mean: o200k_base?", id="bare"),
        pytest.param("tiktoken:cl100k_bas", "did you mean: cl100k_base?", id="tiktoken"),
        pytest.param("tiktken:o200k_base", "did you mean: tiktoken?", id="family"),
        pytest.param("p50k", "did you mean: p50k_", id="p50k-is-ambiguous"),
    ],
)
def test_unknown_names_get_a_suggestion(tmp_path: Path, spec: str, fragment: str) -> None:
    with pytest.raises(TokenizerNotFound, match=re.escape(fragment)):
        TokenizerSelection(tokenizers=[spec]).resolve()
    text = write(tmp_path, "hi\n", "a.txt")
    result = runner.invoke(app, ["count", str(text), "-t", spec])
    assert result.exit_code == 2 and fragment in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


SPEC_WORDS = ["o200k", "cl100k", "o200k_base", "gpt2", "p50k", "tiktoken", "hf", "sp", "bpe",
              "tekken", "x", "org/repo", "a.tiktoken", "", " "]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(SPEC_WORDS), min_size=1, max_size=3),
       sep=st.sampled_from([":", "", "_"]))
def test_catalog_accepts_exactly_what_t_accepts(tmp_path: Path, parts: list[str], sep: str) -> None:
    spec = sep.join(parts)
    try:
        TokenizerSelection(tokenizers=[spec]).resolve()
        by_t = True
    except TokenizerNotFound:
        by_t = False
    path = tmp_path / "one.yaml"
    path.write_text(yaml.safe_dump({"models": [{"id": "m", "tokenizer": spec}]}), encoding="utf-8")
    by_catalog = tokcost.validate_catalog(path).valid
    assert by_t == by_catalog, (spec, tokcost.validate_catalog(path).problems)


# --- provider names ignore case ---------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "OpenAI", " OPENAI "])
def test_provider_filter_ignores_case(provider: str) -> None:
    ids = [m.id for m in tokcost.list_models(provider=provider).models]
    assert ids == [m.id for m in tokcost.list_models(provider="openai").models] and ids
    result = runner.invoke(app, ["models", "list", "--provider", provider.strip()])
    assert result.exit_code == 0 and "gpt-4o" in result.stdout


def test_a_catalog_provider_in_any_case_matches(tmp_path: Path) -> None:
    path = write(tmp_path, "models: [{id: m, provider: OpenAI}]\n")
    assert [m.id for m in tokcost.list_models(provider="openai", catalog=path).models] == ["m"]


def test_price_sync_matches_providers_in_any_case() -> None:
    pytest.importorskip("genai_prices")
    import dataclasses

    from tokcost.catalog.sync import compare_prices

    entry = load_catalog().resolve("gpt-4o")
    shouted = dataclasses.replace(entry, provider="OpenAI")
    assert compare_prices([shouted]).matched == compare_prices([entry]).matched == ("gpt-4o",)


# --- placeholders never show in models list/show -----------------------------------------


def test_list_expands_placeholders() -> None:
    result = runner.invoke(app, ["models", "list"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "{" not in result.stdout
    rows = {line.split()[0]: line for line in result.stdout.splitlines() if line.strip()}
    assert "mistral-common tekken_240718" in rows["mistral-nemo"]
    assert "mistral-common v1" in rows["mixtral-8x7b"]
    assert "tokcost tiny_ref_tokenizer" in rows["tiny-ref"]


def test_show_prints_the_real_files() -> None:
    result = runner.invoke(app, ["models", "show", "tiny-ref"])
    assert result.exit_code == 0, result.output
    assert "{" not in result.stdout
    lines = dict(line.strip().split(": ", 1) for line in result.stdout.splitlines()
                 if line.startswith("  ") and ": " in line)
    assert Path(lines["tokenizer"].removeprefix("hf:")).is_file()
    assert Path(lines["weights"]).is_file()


def test_show_without_the_package_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "mistral_common" else real(name, *a))
    shown = runner.invoke(app, ["models", "show", "mistral-nemo"])
    assert shown.exit_code == 0, shown.output
    assert "(needs the 'mistral-common' package: pip install 'mistral-common>=1.5')" in shown.stdout
    listed = runner.invoke(app, ["models", "list", "--provider", "mistral"])
    assert listed.exit_code == 0 and "{" not in listed.stdout


# --- the other models commands, given a broken catalog or a bad name ---------------------


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        pytest.param(["models", "list", "--catalog", "{bad}"], 2,
                     ":3: model 'a': context_window: expected at most 1,000,000,000 tokens",
                     id="list"),
        pytest.param(["models", "show", "a", "--catalog", "{bad}"], 2, "and 1 more problem",
                     id="show"),
        pytest.param(["models", "list", "--gpus", "--catalog", "{bad}"], 2,
                     "run: tokcost models validate", id="list-gpus"),
        pytest.param(["models", "show", "gpt-4p"], 2, "did you mean", id="show-unknown"),
        pytest.param(["models", "list", "--provider", "nobody"], 2, "matches no model",
                     id="list-provider"),
        pytest.param(["models", "sync-prices", "--catalog", "{bad}"], 2, "and 1 more problem",
                     id="sync-prices"),
    ],
)
def test_models_commands_refuse_in_one_line(
    tmp_path: Path, args: list[str], code: int, fragment: str
) -> None:
    bad = write(tmp_path, "models:\n  - {id: a}\n  - {id: a, context_window: 1e30}\n")
    result = runner.invoke(app, [a.format(bad=bad) for a in args])
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    assert fragment in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
