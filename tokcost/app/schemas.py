"""JSON Schemas of tokcost's YAML files, for editors: completion, hover help, checks.

They are generated from the same declarations the validator uses
(``tokcost.catalog.schema``, ``tokcost.budget.config``) and shipped in
``tokcost/schemas/``; a test keeps the shipped files equal to a fresh generation.
Point an editor at one with a first line such as::

    # yaml-language-server: $schema=tokcost/schemas/models.schema.json

Regenerate them after changing a declaration: ``python -m tokcost.app.schemas``.

>>> json_schema(SchemaDocument.CATALOG)["title"]
'tokcost catalog (models.yaml)'
"""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import Any

__all__ = ["SchemaDocument", "json_schema", "schema_path"]  # write_json_schemas: for development


class SchemaDocument(str, Enum):
    """A kind of tokcost YAML file."""

    CATALOG = "models"  # models.yaml: the model catalog
    BUDGETS = "tokcost"  # tokcost.yaml (or [tool.tokcost]): the budget config

    @property
    def file_name(self) -> str:
        return f"{self.value}.schema.json"


_TITLES = {
    SchemaDocument.CATALOG: "tokcost catalog (models.yaml)",
    SchemaDocument.BUDGETS: "tokcost budgets (tokcost.yaml, or [tool.tokcost] in pyproject.toml)",
}


def json_schema(document: SchemaDocument | str) -> dict[str, Any]:
    """The JSON Schema (draft-07) of ``document``, from its declaration."""
    from tokcost.budget.config import ConfigDocument
    from tokcost.catalog.document import CatalogDocument
    from tokcost.catalog.validation import json_schema as generate

    document = SchemaDocument(document)
    root = CatalogDocument if document is SchemaDocument.CATALOG else ConfigDocument
    schema = generate(root)
    schema["title"] = _TITLES[document]
    return schema


def schema_path(document: SchemaDocument | str) -> Path:
    """The shipped schema file of ``document`` (what ``$schema=`` can point at)."""
    from tokcost.resources import shipped_path

    return shipped_path("schemas") / SchemaDocument(document).file_name


def render(document: SchemaDocument | str) -> str:
    """The schema file's text: stable key order, two-space indents, a final newline."""
    return json.dumps(json_schema(document), indent=2, ensure_ascii=False) + "\n"


def write_json_schemas(folder: Path | None = None) -> list[Path]:
    """Write every schema into ``folder`` (default: the shipped ``tokcost/schemas``)."""
    from tokcost.atomic import ensure_writable, write_text_atomic

    target = folder if folder is not None else schema_path(SchemaDocument.CATALOG).parent
    ensure_writable(target / SchemaDocument.CATALOG.file_name, create_folder=True)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for document in SchemaDocument:
        path = target / document.file_name
        write_text_atomic(path, render(document))
        written.append(path)
    return written


if __name__ == "__main__":  # python -m tokcost.app.schemas [FOLDER]
    for path in write_json_schemas(Path(sys.argv[1]) if len(sys.argv) > 1 else None):
        print(path)
