"""JSON Schemas of tokcost's YAML files for editors, from the pydantic models, shipped in
``tokcost/schemas/`` (a test keeps them fresh: ``python -m tokcost.app.schemas`` rewrites them)."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Any

from tokcost.catalog.loader import shipped_path

__all__ = ["SchemaDocument", "json_schema", "schema_path"]


class SchemaDocument(str, Enum):
    """A kind of tokcost YAML file: its value names the schema file."""

    CATALOG = "models"  # models.yaml: the model catalog
    BUDGETS = "tokcost"  # tokcost.yaml (or [tool.tokcost]): the budget config


_TITLES = {
    SchemaDocument.CATALOG: "tokcost catalog (models.yaml)",
    SchemaDocument.BUDGETS: "tokcost budgets (tokcost.yaml, or [tool.tokcost] in pyproject.toml)"}


def json_schema(document: SchemaDocument | str) -> dict[str, Any]:
    """The draft-07 JSON Schema of ``document`` (what YAML editors read), from its model."""
    from tokcost.budget.config import ConfigDocument
    from tokcost.catalog.document import CatalogDocument
    document = SchemaDocument(document)
    model = CatalogDocument if document is SchemaDocument.CATALOG else ConfigDocument
    return {"$schema": "http://json-schema.org/draft-07/schema#",
            **model.model_json_schema(mode="validation"), "title": _TITLES[document]}


def schema_path(document: SchemaDocument | str) -> Path:
    """The shipped schema file of ``document`` (what ``$schema=`` can point at)."""
    return shipped_path("schemas") / f"{SchemaDocument(document).value}.schema.json"


def render(document: SchemaDocument | str) -> str:
    """The schema file's text: stable key order, two-space indents, a final newline."""
    return json.dumps(json_schema(document), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":  # python -m tokcost.app.schemas [FOLDER]: write them all
    from tokcost.atomic import write_text_atomic

    for document in SchemaDocument:
        path = schema_path(document)
        path = Path(sys.argv[1]) / path.name if len(sys.argv) > 1 else path
        write_text_atomic(path, render(document))
        print(path)
