"""The one validator of tokcost's YAML files: the declared records, checked by pydantic.

pydantic walks the document, collects every problem with its location (a missing
key, an unknown one, a value a kind refused, a rule between fields) and builds the
frozen objects; the records and kinds of ``tokcost.catalog.fields`` tell it how,
through pydantic's ``__get_pydantic_core_schema__`` hooks. The JSON Schema shipped
for editors comes from the same declarations (``json_schema``).

pydantic costs about 0.1 s to import and set up, so the hot paths never come here:
a catalog that validated once is read back from a cache (``tokcost.catalog.cache``).

>>> from tokcost.catalog.schema import Pricing
>>> [i.message for i in validate(Pricing, {"input": "cheap", "output": 1})[1]]
["expected a number >= 0 (USD per million tokens), got 'cheap'"]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError
from pydantic_core import PydanticCustomError
from pydantic_core import core_schema as cs

from tokcost.catalog.fields import (
    Invalid,
    Items,
    Kind,
    PathKey,
    Record,
    fields_by_key,
    record_fields,
    show,
)
from tokcost.errors import suggest

R = TypeVar("R", bound=Record)

_ERROR = "tokcost"  # the pydantic error type of every message tokcost words itself


@dataclass(frozen=True)
class Issue:
    """One problem: where (``("models", 3, "pricing", "input")``) and what."""

    loc: PathKey
    message: str
    missing: bool = False  # a required key is absent (loc names it)


def validate(root: type[R], data: Any, *, noun: str = "field") -> tuple[R | None, list[Issue]]:
    """The checked object, or None and every problem (``noun``: "unknown field/key")."""
    try:
        return _adapter(root).validate_python(data), []
    except ValidationError as exc:
        issues: list[Issue] = []
        for error in exc.errors(include_url=False):
            issues.extend(_issues(root, error, noun))
        return None, issues


def json_schema(root: type[Record]) -> dict[str, Any]:
    """The JSON Schema of a document, as editors read it.

    It declares draft-07, which every YAML editor plugin reads; pydantic's output
    uses nothing later drafts added (``$defs`` is only where the references point).
    """
    schema = _adapter(root).json_schema(mode="validation")
    return {"$schema": "http://json-schema.org/draft-07/schema#", **schema}


_ADAPTERS: dict[type[Record], TypeAdapter[Any]] = {}


def _adapter(root: type[Record]) -> TypeAdapter[Any]:
    """pydantic's validator of a document, built once per process (~0.1 s)."""
    adapter = _ADAPTERS.get(root)
    if adapter is None:
        adapter = _ADAPTERS[root] = TypeAdapter(root)
    return adapter


# --- the hooks the declarations call -------------------------------------------------------


def _error(message: str, issues: list[tuple[PathKey, str]] | None = None) -> PydanticCustomError:
    return PydanticCustomError(
        _ERROR, "{message}", {"message": message, "issues": issues or [((), message)]}
    )


def leaf_schema(kind: Kind) -> cs.CoreSchema:
    """A kind's ``parse`` as a pydantic validator; ``Invalid`` becomes a located error."""

    def parse(value: Any) -> Any:
        try:
            return kind.parse(value)
        except Invalid as exc:
            raise _error(exc.message, [(exc.at, exc.message)]) from None

    return cs.no_info_plain_validator_function(parse)


def items_schema(items: Items, inner: cs.CoreSchema) -> cs.CoreSchema:
    def check(value: Any) -> Any:
        try:
            return items.check(value)
        except Invalid as exc:
            raise _error(exc.message) from None

    return cs.no_info_before_validator_function(check, inner)


def record_schema(cls: type[Record], handler: Any) -> cs.CoreSchema:
    """A record as pydantic sees it: a mapping of its YAML keys, then the object.

    Unknown keys are refused; ``null`` means "not given" for every optional field;
    the record's own rules (``_problems``) run once its fields are valid.
    """
    specs = [s for s in record_fields(cls) if s.key is not None]
    fields: dict[str, cs.TypedDictField] = {}
    for spec in specs:
        inner = handler.generate_schema(spec.hint)
        if not spec.required:
            inner = cs.nullable_schema(inner)
        fields[str(spec.key)] = cs.typed_dict_field(inner, required=spec.required)
    attribute = {str(s.key): s.name for s in specs}
    keys = ", ".join(attribute)

    def mapping(value: Any) -> Any:
        if not isinstance(value, dict):
            raise _error(f"expected a mapping with keys {keys}, got {show(value)}")
        if cls.retired_keys:
            value = {k: v for k, v in value.items() if k not in cls.retired_keys}
        return value

    def build(values: dict[str, Any]) -> Record:
        obj = cls._build({attribute[k]: v for k, v in values.items() if v is not None})
        problems = list(obj._problems())
        if problems:
            raise _error(problems[0][1], problems)
        return obj

    checked = cs.typed_dict_schema(fields, extra_behavior="forbid")
    return cs.no_info_after_validator_function(
        build, cs.no_info_before_validator_function(mapping, checked),
        ref=f"{cls.__module__}.{cls.__qualname__}",
    )


def record_json_schema(cls: type[Record], core: Any, handler: Any) -> Any:
    """Title, description and each property's meaning, from the declaration."""
    schema = handler(core)
    target = handler.resolve_ref_schema(schema)
    target["title"] = cls.__name__
    doc = (cls.__doc__ or "").strip().split("\n\n")[0]
    if doc:
        target["description"] = " ".join(doc.split())
    properties = target.get("properties", {})
    for key, spec in fields_by_key(cls).items():
        if key in properties and spec.description:
            properties[key]["description"] = spec.description
    return schema


# --- errors as tokcost words them ----------------------------------------------------------


def _issues(root: type[Record], error: Any, noun: str) -> list[Issue]:
    loc: PathKey = tuple(error["loc"])
    kind = error["type"]
    if kind == _ERROR:
        return [Issue((*loc, *at), message) for at, message in error["ctx"]["issues"]]
    if kind == "missing":
        spec = _record_at(root, loc[:-1], lambda c: fields_by_key(c).get(str(loc[-1])))
        message = "required"
        if spec is not None:
            kind_ = spec.kind
            message = spec.required_message or (kind_.missing() if kind_ else message)
        return [Issue(loc, message, missing=True)]
    if kind == "extra_forbidden":
        allowed = _record_at(root, loc[:-1], lambda c: list(fields_by_key(c))) or []
        hint = suggest(str(loc[-1]), allowed)
        known = ", ".join(allowed)
        message = f"unknown {noun}{hint}" if hint else f"unknown {noun}; expected one of {known}"
        return [Issue(loc, message)]
    return [Issue(loc, str(error["msg"]))]  # pragma: no cover - every other check is a kind's


T = TypeVar("T")


def _record_at(root: type[Record], loc: PathKey, then: Callable[[type[Record]], T]) -> T | None:
    """Follow ``loc`` through the declarations to a record type, and ask it ``then``."""
    cls: type[Record] | None = root
    for part in loc:
        if isinstance(part, int):
            continue  # a list item: the item type is the field's record already
        spec = fields_by_key(cls).get(part) if cls is not None else None
        cls = spec.record if spec is not None else None
    return then(cls) if cls is not None else None
