"""Catalog: loading, validation messages, lookup by id / alias / dated prefix."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokcost.catalog import CatalogInvalid, load_catalog, validate_file
from tokcost.errors import CatalogError, ModelNotFound
from tokcost.resources import shipped_path


@pytest.fixture(autouse=True)
def _no_user_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOKCOST_CATALOG", raising=False)


def write(tmp_path: Path, text: str, name: str = "cat.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_shipped_catalog_validates() -> None:
    assert validate_file(shipped_path("models.yaml")) == []


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("gpt-4o", "gpt-4o", id="exact"),
        pytest.param("GPT-4o", "gpt-4o", id="case"),
        pytest.param("gpt-4o-2024-08-06", "gpt-4o", id="dated"),
        pytest.param("gpt-4o-mini-2024-07-18", "gpt-4o-mini", id="longest-prefix"),
        pytest.param("model:gpt-4o", "gpt-4o", id="model-spec"),
    ],
)
def test_resolve(query: str, expected: str) -> None:
    assert load_catalog().resolve(query).id == expected


def test_unknown_model_suggests() -> None:
    with pytest.raises(ModelNotFound, match=r"did you mean: .*gpt-4o"):
        load_catalog().resolve("gpt-4p")


def test_non_dated_suffix_does_not_resolve() -> None:
    # gpt-4o-audio-preview is another product; only date/version suffixes resolve.
    with pytest.raises(ModelNotFound):
        load_catalog().resolve("gpt-4o-audiox")


def test_chat_overhead_and_price_types() -> None:
    entry = load_catalog().resolve("gpt-4o")
    assert entry.chat is not None
    assert (entry.chat.per_message, entry.chat.per_name, entry.chat.reply_priming) == (3, 1, 3)
    assert entry.tokenizer == "tiktoken:o200k_base"
    assert entry.tokenizer_exact is True


BAD = """\
version: 1
models:
  - id: foo
    contex_window: 100
    pricing: {input: cheap, output: 1}
gpus:
  - name: X
    memory: 80G
    bandwidth: 1TB
"""


def test_errors_name_file_line_model_field(tmp_path: Path) -> None:
    path = write(tmp_path, BAD)
    problems = [str(p) for p in validate_file(path)]
    expected = "model 'foo': contex_window: unknown field (did you mean: context_window?)"
    assert f"{path}:4: {expected}" in problems
    assert any(
        p.startswith(f"{path}:5: model 'foo': pricing.input: expected a number >= 0")
        for p in problems
    )
    assert any(p.startswith(f"{path}:8: gpus[0].memory:") and "ambiguous" in p for p in problems)
    with pytest.raises(CatalogInvalid, match="and 2 more problems"):
        load_catalog(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("models: [{id: a}, {id: a}]", "duplicate model id 'a'", id="dup-id"),
        pytest.param(
            "models: [{id: a, aliases: [x]}, {id: b, aliases: [x]}]",
            "alias 'x' is already an alias of 'a'",
            id="dup-alias",
        ),
        pytest.param("models: [{id: a}, {id: b, aliases: [a]}]", "already the id", id="alias-id"),
        pytest.param("models: [unclosed", "not valid YAML", id="yaml"),
        pytest.param("- 1\n- 2\n", "expected a mapping", id="top-list"),
    ],
)
def test_malformed_catalogs(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(CatalogError, match=message):
        load_catalog(write(tmp_path, text))


def test_env_replaces_and_extends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = write(tmp_path, "models: [{id: my-model, aliases: [mine]}]")
    monkeypatch.setenv("TOKCOST_CATALOG", str(own))
    cat = load_catalog()
    assert [m.id for m in cat.models] == ["my-model"]
    ext = write(
        tmp_path,
        "extends: shipped\nmodels: [{id: my-model}, {id: gpt-4o, context_window: 5}]",
        "ext.yaml",
    )
    cat = load_catalog(ext)
    assert cat.resolve("my-model").id == "my-model"
    assert cat.resolve("gpt-4o").context_window == 5  # the user's entry wins
    assert cat.resolve("gpt-4o-mini").provider == "openai"


def test_missing_catalog_file(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="does not exist"):
        load_catalog(tmp_path / "nope.yaml")
