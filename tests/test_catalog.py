"""Catalog: loading, validation messages, lookup by id / alias / dated prefix."""

from __future__ import annotations

from pathlib import Path

import pytest

from tokcost.catalog import CatalogInvalid, load_catalog, validate_file
from tokcost.catalog.loader import shipped_path
from tokcost.errors import CatalogError, ModelNotFound


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


def test_every_entry_names_its_sources() -> None:
    cat = load_catalog()
    for entry in cat.models:
        if entry.pricing is not None:
            assert entry.pricing.source and entry.pricing.as_of, entry.id
        if entry.architecture is not None:
            source = entry.architecture.source or ""
            assert source, entry.id
            if "huggingface.co" in source:
                assert source.endswith("config.json"), entry.id
        if not entry.tokenizer_exact:
            assert entry.tokenizer_note, entry.id
    for gpu in cat.gpus:
        assert gpu.source, gpu.name


def test_issue_model_list_is_present() -> None:
    cat = load_catalog()
    for model_id in [
        "gpt-4o",
        "gpt-4o-mini",
        "gpt-4.1",
        "gpt-4.1-mini",
        "gpt-4.1-nano",
        "o3",
        "o4-mini",
        "gpt-5",
        "gpt-5-mini",
        "gpt-5-nano",
        "claude-sonnet-4-5",
        "claude-haiku-4-5",
        "claude-opus-4-1",
        "gemini-2.5-pro",
        "gemini-2.5-flash",
        "mistral-large-2411",
        "llama-3.1-8b",
        "llama-3.1-70b",
        "llama-3.1-405b",
        "qwen2.5-7b",
        "qwen2.5-72b",
        "qwen3-8b",
        "qwen3-14b",
        "qwen3-32b",
        "qwen3-30b-a3b",
        "deepseek-v3",
        "gemma-2-9b",
        "gemma-3-27b",
        "gpt-oss-20b",
        "gpt-oss-120b",
        "mistral-7b-v0.1",
        "mixtral-8x7b",
        "phi-3-mini",
        "opt-13b",
    ]:
        assert cat.resolve(model_id).id == model_id
    for gpu in [
        "A100-40GB",
        "A100-80GB",
        "H100",
        "H200",
        "B200",
        "L4",
        "L40S",
        "RTX-3090",
        "RTX-4090",
        "RTX-5090",
    ]:
        cat.resolve_gpu(gpu)


def test_proxies_are_marked() -> None:
    cat = load_catalog()
    for model_id in ["claude-sonnet-4-5", "gemini-2.5-pro"]:
        entry = cat.resolve(model_id)
        assert entry.tokenizer_exact is False
        assert entry.tokenizer == "tiktoken:o200k_base"


def test_duplicate_prefix_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "models: [{id: a, prefixes: [x-]}, {id: b, prefixes: [x-]}]")
    with pytest.raises(CatalogError, match="prefix 'x-' is already claimed by 'a'"):
        load_catalog(path)


def test_explicit_prefix_resolves(tmp_path: Path) -> None:
    path = write(tmp_path, "models: [{id: acme, prefixes: [acme-ft-]}]")
    assert load_catalog(path).resolve("acme-ft-2025-custom-thing").id == "acme"


def test_unknown_placeholder_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "models: [{id: a, tokenizer: 'sp:{nowhere}/x.model'}]")
    with pytest.raises(CatalogError, match="unknown placeholder"):
        load_catalog(path)


def test_validate_reports_keys_written_twice(tmp_path: Path) -> None:
    path = write(tmp_path, "models:\n  - id: a\n    context_window: 5\n    context_window: 6\n")
    problems = [str(p) for p in validate_file(path)]
    assert problems == [
        f"{path}:4: model 'a': context_window: key written twice in one mapping; "
        "YAML would keep only the last"
    ]
