"""The shipped JSON Schemas, and the validated-catalog cache that keeps pydantic off the hot path."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

import tokcost
from tokcost.app.schemas import SchemaDocument, json_schema, render, schema_path
from tokcost.catalog import Catalog, CatalogInvalid, load_catalog
from tokcost.catalog.loader import shipped_path

ROOT = Path(__file__).resolve().parents[1]


def as_editors_see_it(path: Path) -> Any:
    """YAML data as a YAML language server hands it to the schema (dates are text)."""
    return json.loads(json.dumps(yaml.safe_load(path.read_text(encoding="utf-8")), default=str))


def checker(document: SchemaDocument) -> jsonschema.protocols.Validator:
    schema = json.loads(schema_path(document).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


@pytest.mark.parametrize("document", list(SchemaDocument), ids=lambda d: d.value)
def test_shipped_schema_is_a_fresh_generation(document: SchemaDocument) -> None:
    # After changing a declaration: python -m tokcost.app.schemas
    assert schema_path(document).read_text(encoding="utf-8") == render(document)


@pytest.mark.parametrize(
    ("document", "path"),
    [
        pytest.param(SchemaDocument.CATALOG, shipped_path("models.yaml"), id="models.yaml"),
        pytest.param(SchemaDocument.BUDGETS, ROOT / "tokcost.yaml", id="tokcost.yaml"),
    ],
)
def test_schema_accepts_the_shipped_file(document: SchemaDocument, path: Path) -> None:
    errors = [e.message for e in checker(document).iter_errors(as_editors_see_it(path))]
    assert errors == []


def test_schema_describes_fields_as_declared() -> None:
    schema = json_schema("models")
    entry = schema["$defs"]["ModelEntry"]
    assert entry["required"] == ["id"]
    assert entry["additionalProperties"] is False
    assert "tokenizer" in entry["properties"] and "tokenizer_spec" not in entry["properties"]
    assert "prompt + output tokens" in entry["properties"]["context_window"]["description"]
    gpu = schema["$defs"]["Gpu"]
    assert sorted(gpu["required"]) == ["bandwidth", "memory", "name"]


MODEL = {"id": "m", "context_window": "128k", "pricing": {"input": 1, "output": 2}}
BUDGET = {"name": "b", "paths": ["*.md"], "max_total_tokens": 10}


def _with(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(data)
    node: Any = out
    for part in path[:-1]:
        node = node[part]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


_DELETE = object()


@pytest.mark.parametrize(
    ("document", "data", "path", "value"),
    [
        pytest.param("models", {"models": [MODEL]}, ("models", 0, "context_window"), [1],
                     id="models-wrong-type"),
        pytest.param("models", {"models": [MODEL]}, ("models", 0, "contex_window"), 5,
                     id="models-unknown-field"),
        pytest.param("models", {"models": [MODEL]}, ("models", 0, "id"), _DELETE,
                     id="models-missing-id"),
        pytest.param("models", {"models": [MODEL]}, ("models", 0, "pricing", "input"), -1,
                     id="models-negative-price"),
        pytest.param("models", {"gpus": [{"name": "g", "memory": "80GiB", "bandwidth": "3TB"}]},
                     ("gpus", 0, "memory"), _DELETE, id="gpus-missing-memory"),
        pytest.param("tokcost", {"budgets": [BUDGET]}, ("budgets", 0, "max_total_tokens"), "x",
                     id="budgets-wrong-type"),
        pytest.param("tokcost", {"budgets": [BUDGET]}, ("budgets", 0, "max_token_per_file"), 5,
                     id="budgets-unknown-key"),
        pytest.param("tokcost", {"budgets": [BUDGET]}, ("budgets", 0, "paths"), _DELETE,
                     id="budgets-missing-paths"),
        pytest.param("tokcost", {"budgets": [BUDGET]}, ("budgets",), [], id="budgets-empty"),
    ],
)
def test_schema_rejects_a_broken_file(
    document: str, data: dict[str, Any], path: tuple[Any, ...], value: Any, tmp_path: Path
) -> None:
    validator = checker(SchemaDocument(document))
    assert list(validator.iter_errors(data)) == []  # the base case is valid...
    broken = _with(data, path, value)
    assert list(validator.iter_errors(broken)) != []  # ...the broken one is not
    # and tokcost's own validator agrees with the schema
    file = tmp_path / f"{document}.yaml"
    file.write_text(yaml.safe_dump(broken), encoding="utf-8")
    if document == "models":
        assert tokcost.validate_catalog(file).problems
    else:
        from tokcost.budget import BudgetConfigError, load_config

        with pytest.raises(BudgetConfigError):
            load_config(file)


# --- the validated-catalog cache -------------------------------------------------------------

_PROBE = """
import json, sys
from tokcost.catalog import load_catalog
cat = load_catalog(sys.argv[1] if len(sys.argv) > 1 else None)
print(json.dumps({"models": len(cat.models), "first": cat.models[0].to_dict(),
                  "pydantic": "pydantic" in sys.modules, "yaml": "yaml" in sys.modules}))
"""


def _probe(cache: Path, *args: str) -> dict[str, Any]:
    env = {**os.environ, "TOKCOST_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}
    env.pop("TOKCOST_CATALOG", None)
    done = subprocess.run([sys.executable, "-c", _PROBE, *args], env=env, check=True,
                          capture_output=True, text=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_second_load_reads_the_cache_without_pydantic_or_yaml(tmp_path: Path) -> None:
    first = _probe(tmp_path / "cache")
    assert first["pydantic"] and first["yaml"]  # validated once...
    second = _probe(tmp_path / "cache")
    assert not second["pydantic"] and not second["yaml"]  # ...then read back
    assert second["models"] == first["models"] and second["first"] == first["first"]


def test_cache_is_skipped_when_it_cannot_be_written(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    result = _probe(blocker / "cache")  # mkdir fails: load anyway, say nothing
    assert result["models"] == len(load_catalog().models)


def test_cache_entry_follows_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKCOST_CACHE_DIR", str(tmp_path / "cache"))
    own = tmp_path / "mine.yaml"
    own.write_text("models: [{id: a, context_window: 5}]\n", encoding="utf-8")
    assert load_catalog(own).resolve("a").context_window == 5
    own.write_text("models: [{id: a, context_window: 7}]\n", encoding="utf-8")
    os.utime(own, ns=(1, 1))  # a new stat key even within the clock's resolution
    assert load_catalog(own).resolve("a").context_window == 7
    own.write_text("models: [{id: a, context_window: lots}]\n", encoding="utf-8")
    os.utime(own, ns=(2, 2))
    with pytest.raises(CatalogInvalid, match="context_window"):
        load_catalog(own)
    assert len(list((tmp_path / "cache").iterdir())) == 1  # one entry per file, replaced


def test_catalog_is_immutable() -> None:
    cat = load_catalog()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cat.models = ()  # type: ignore[misc]
    with pytest.raises(TypeError):
        cat._index.names["x"] = cat.models[0]  # type: ignore[index]
    with pytest.raises(TypeError, match="Catalog.build"):
        Catalog(cat.models, cat.gpus)
    assert Catalog.build(cat.models, cat.gpus).resolve("gpt-4o") == cat.resolve("gpt-4o")


def test_a_retired_key_from_an_older_catalog_is_read_and_ignored(tmp_path: Path) -> None:
    # Catalogs copied from 0.1's models.yaml carry tokenizer_package; they keep loading.
    path = tmp_path / "old.yaml"
    path.write_text("models:\n  - id: old-model\n    tokenizer: tiktoken:o200k_base\n"
                    "    tokenizer_package: mistral\n", encoding="utf-8")
    entry = load_catalog(path).resolve("old-model")
    assert entry.tokenizer == "tiktoken:o200k_base"
    assert "tokenizer_package" not in entry.to_dict()
    # a key that was never part of the catalog is still an error
    path.write_text("models:\n  - id: old-model\n    tokenizer_pkg: x\n", encoding="utf-8")
    with pytest.raises(CatalogInvalid, match="tokenizer_pkg"):
        load_catalog(path)
