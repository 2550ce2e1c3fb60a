"""Read models.yaml into checked, frozen objects (``tokcost.catalog.schema``).

Validation collects every problem; each names the file, the line, the model id,
the field and what was expected::

    models.yaml:41: model 'gpt-4o': pricing.input: expected a number >= 0 (USD per
    million tokens), got 'cheap'

A file that validated once is read back from ``tokcost.catalog.cache`` (its bytes
are the key), which skips both the YAML parser and pydantic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from tokcost.catalog import cache, yamltext
from tokcost.catalog.fields import PathKey, dotted
from tokcost.catalog.schema import CatalogDocument, Gpu, ModelEntry
from tokcost.errors import CatalogError


@dataclass(frozen=True)
class Problem:
    """One validation error, rendered as ``file:line: model 'id': field: message``."""

    file: str
    path: PathKey
    model: str | None
    field: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        who = f" model '{self.model}':" if self.model else ""
        fld = f" {self.field}:" if self.field else ""
        return f"{where}:{who}{fld} {self.message}"


class CatalogInvalid(CatalogError):
    """A catalog file has one or more problems (all kept in ``problems``)."""

    def __init__(self, problems: list[Problem]) -> None:
        first = str(problems[0])
        more = len(problems) - 1
        tail = (
            f" (and {more} more problem{'s' if more > 1 else ''}; "
            f"run: tokcost models validate {problems[0].file})"
            if more
            else ""
        )
        super().__init__(first + tail)
        self.problems = problems


@dataclass(frozen=True)
class ParsedFile:
    """The checked content of one catalog file."""

    path: Path
    models: tuple[ModelEntry, ...]
    gpus: tuple[Gpu, ...]
    extends: bool


def read_file(path: Path) -> ParsedFile:
    """One catalog file, checked; from the cache when these bytes validated before.

    A missing file raises ``FileNotFoundError`` (the caller knows who named it);
    a malformed one ``CatalogInvalid`` with every problem.
    """
    data = _read_bytes(path)
    hit = cache.load(path, data)
    if isinstance(hit, CatalogDocument):
        return _parsed(path, hit)
    doc, problems = _check(path, _decode(path, data))
    if doc is None:
        raise CatalogInvalid(problems)
    cache.store(path, data, doc)
    return _parsed(path, doc)


def parse_file(path: Path) -> tuple[ParsedFile | None, list[Problem]]:
    """Check one catalog file without the cache: its content, or None and every problem."""
    doc, problems = _check(path, _decode(path, _read_bytes(path)))
    return (_parsed(path, doc) if doc is not None else None), problems


def _parsed(path: Path, doc: CatalogDocument) -> ParsedFile:
    return ParsedFile(path, doc.models, doc.gpus, doc.extends == "shipped")


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise CatalogError(f"cannot read catalog file '{path}': {exc}") from None


def _decode(path: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CatalogError(f"cannot read catalog file '{path}': {exc}") from None


def _check(path: Path, text: str) -> tuple[CatalogDocument | None, list[Problem]]:
    from tokcost.catalog.validation import validate  # pydantic: only when validating

    name = str(path)
    data = yamltext.parse(text, name, CatalogError)
    doc, issues = validate(CatalogDocument, data)
    if not issues:
        return doc, []
    root = yamltext.compose(text)
    problems = []
    for issue in issues:
        loc = issue.loc
        model = None
        if loc[:1] == ("models",) and len(loc) > 1 and isinstance(data, dict):
            model = _model_id(data.get("models"), loc[1])
        # Inside a model the id already says which entry: show "pricing.tiers[0].input".
        shown = loc[2:] if loc[:1] == ("models",) else loc
        problems.append(
            Problem(name, loc, model, dotted(shown), issue.message, yamltext.line_of(root, loc))
        )
    problems.sort(key=lambda p: p.line or 0)  # file order, as an editor shows them
    return None, problems


def _model_id(models: object, index: str | int) -> str | None:
    if isinstance(models, list) and isinstance(index, int) and index < len(models):
        entry = models[index]
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            return str(entry["id"])
    return None


def duplicate_keys(path: Path) -> list[Problem]:
    """Keys written twice in one mapping (YAML keeps the last one silently).

    Checked by ``validate_file`` only: it needs a second pass over the node tree.
    """
    import yaml

    root = yamltext.compose(path.read_text(encoding="utf-8"))
    problems: list[Problem] = []

    def walk(node: yaml.Node | None, model: str | None) -> None:
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key, value in node.value:
                name = str(getattr(key, "value", ""))
                if name == "id" and isinstance(value, yaml.ScalarNode):
                    model = str(value.value)
                if name in seen:
                    problems.append(
                        Problem(
                            str(path),
                            (),
                            model,
                            name,
                            "key written twice in one mapping; YAML would keep only the last",
                            key.start_mark.line + 1,
                        )
                    )
                seen.add(name)
            for _, value in node.value:
                walk(value, model)
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                walk(item, model)

    walk(root, None)
    return problems


_DATED_SUFFIX = re.compile(r"^[-@](\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|latest|v\d+(:\d+)?)$")


def is_dated_suffix(rest: str) -> bool:
    """``-2024-08-06``, ``-20250514``, ``@20240620``, ``-2411``, ``-latest`` are dated ids."""
    return bool(_DATED_SUFFIX.match(rest))
