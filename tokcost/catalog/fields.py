"""How a field of tokcost's YAML files is written, read, described and shown.

A document (``models.yaml``, ``tokcost.yaml``) is declared once, as frozen dataclasses
derived from ``Record`` whose field types carry the markers of this module::

    context_window: Annotated[int | None, Count(), Doc("prompt + output tokens")] = None

From that one declaration come the validator (``tokcost.catalog.validation``, which
hands the declarations to pydantic through its documented ``__get_pydantic_core_schema__``
hooks), the JSON Schema editors complete from, the typed objects the library uses,
and the JSON documents of ``tokcost models`` (``Record.to_dict``). pydantic is
imported only when a file is validated; importing a declaration costs what a
dataclass costs.

A *kind* (``Count``, ``Size``, ``Number``...) is the whole truth about one leaf value:
``parse`` turns what a person wrote (``128k``) into the value (``128000``) or raises
``Invalid`` saying what was expected::

    >>> Count().parse("128k")
    128000
    >>> Count().parse("lots")
    Traceback (most recent call last):
    ...
    tokcost.catalog.fields.Invalid: expected an integer >= 1, got 'lots'
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, ClassVar, NoReturn, TypeVar

from tokcost.errors import TokcostError, suggest
from tokcost.units import (
    COUNT_PATTERN,
    SIZE_PATTERN,
    OutOfRange,
    parse_count,
    parse_size,
)

PathKey = tuple[str | int, ...]
R = TypeVar("R", bound="Record")

# Patterns for the JSON Schema: what the parsers below accept when written as text.
_NUMBER = r"[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?"
DECIMAL_PATTERN = rf"^\s*{_NUMBER}\s*$"


class Invalid(Exception):
    """A value that does not parse: ``message`` says what was expected.

    ``at`` is where below the field the problem lies (``("active",)`` inside
    ``params: {total, active}``), so the message can point at that line.
    """

    def __init__(self, message: str, at: PathKey = ()) -> None:
        super().__init__(message)
        self.message = message
        self.at = at


def dotted(path: PathKey) -> str:
    """``("pricing", "tiers", 0, "input")`` -> ``"pricing.tiers[0].input"``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f"{'.' if text else ''}{part}"
    return text


def show(value: Any) -> str:
    """``repr`` cut to 60 characters, for "got ..." in messages."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- kinds of leaf values ----------------------------------------------------------------


class _Marker:
    """Markers are plain classes, not dataclasses: defining a frozen dataclass costs about
    1 ms, and every command start defines these."""

    __slots__: tuple[str, ...] = ()

    def __repr__(self) -> str:
        args = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({args})"


class Kind(_Marker):
    """A leaf field: parse what was written, or say what was expected."""

    __slots__ = ()

    @property
    def expected(self) -> str:  # "an integer >= 1": in messages and in the schema
        raise NotImplementedError

    def parse(self, value: Any) -> Any:
        raise NotImplementedError

    def json_schema(self) -> dict[str, Any]:
        raise NotImplementedError

    def fail(self, value: Any) -> NoReturn:
        raise Invalid(f"expected {self.expected}, got {show(value)}")

    @staticmethod
    def capped(number: Any, value: Any, cap: Any, cap_text: str) -> None:
        """Refuse a number past the kind's sanity bound: a value no real model or GPU has
        (``context_window: 1e30``) is a typo, and every result computed from it nonsense."""
        if cap is not None and number > cap:
            raise Invalid(f"expected at most {cap_text}, got {show(value)}")

    def missing(self) -> str:
        """The message when a required field is absent."""
        return f"expected {self.expected}, got None"

    # pydantic's hooks: called only by tokcost.catalog.validation, which imports pydantic.
    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from tokcost.catalog.validation import leaf_schema

        return leaf_schema(self)

    def __get_pydantic_json_schema__(self, core: Any, handler: Any) -> dict[str, Any]:
        return self.json_schema()


class Count(Kind):
    """A count as people write it: ``128000``, ``128k``, ``8.03B``, ``1e6``.

    ``cap`` is the largest sane value, ``unit`` what is counted (for its message):

    >>> Count(cap=10**9, unit="tokens").parse("1e30")
    Traceback (most recent call last):
    ...
    tokcost.catalog.fields.Invalid: expected at most 1,000,000,000 tokens, got '1e30'
    """

    __slots__ = ("cap", "minimum", "unit", "what")

    def __init__(self, minimum: int = 1, what: str = "", *, cap: int | None = None,
                 unit: str = "") -> None:
        self.minimum = minimum
        self.what = what
        self.cap = cap
        self.unit = unit

    @property
    def expected(self) -> str:
        return self.what or f"an integer >= {self.minimum}"

    def parse(self, value: Any) -> int:
        try:
            number = parse_count(value) if isinstance(value, (int, str)) else None
        except OutOfRange:  # past parse_count's own bound: past any field's cap too
            if self.cap is None:
                self.fail(value)
            number = (self.cap or 0) + 1
        except TokcostError:
            number = None
        if number is None or isinstance(value, bool) or number < self.minimum:
            self.fail(value)
        if self.cap is not None:
            self.capped(number, value, self.cap, f"{self.cap:,} {self.unit}".rstrip())
        return number

    def json_schema(self) -> dict[str, Any]:
        integer: dict[str, Any] = {"type": "integer", "minimum": self.minimum}
        if self.cap is not None:
            integer["maximum"] = self.cap
        return {"anyOf": [integer, {"type": "string", "pattern": COUNT_PATTERN}]}


class Number(Kind):
    """A number >= 0 read as ``Decimal`` through ``str``, so 2.5 stays 2.5 exactly."""

    __slots__ = ("as_float", "below", "cap", "cap_text", "maximum", "text")

    def __init__(self, text: str = "a number >= 0", *, below: Decimal | None = None,
                 maximum: Decimal | None = None, as_float: bool = False,
                 cap: Decimal | None = None, cap_text: str = "") -> None:
        self.text = text
        self.below = below  # exclusive upper bound
        self.maximum = maximum  # inclusive upper bound
        self.as_float = as_float
        self.cap = cap  # the sanity bound: the same as maximum, with its own message
        self.cap_text = cap_text or (f"{cap:,}" if cap is not None else "")

    @property
    def expected(self) -> str:
        return self.text

    def parse(self, value: Any) -> Decimal | float:
        number: Decimal | None = None
        if not isinstance(value, bool) and isinstance(value, (int, float, str)):
            try:
                number = Decimal(str(value).strip())
            except InvalidOperation:
                number = None
        if (
            number is None
            or not number.is_finite()
            or number < 0
            or (self.below is not None and number >= self.below)
            or (self.maximum is not None and number > self.maximum)
        ):
            self.fail(value)
        self.capped(number, value, self.cap, self.cap_text)
        return float(number) if self.as_float else number

    def json_schema(self) -> dict[str, Any]:
        number: dict[str, Any] = {"type": "number", "minimum": 0}
        if self.below is not None:
            number["exclusiveMaximum"] = float(self.below)
        top = min((b for b in (self.maximum, self.cap) if b is not None), default=None)
        if top is not None:
            number["maximum"] = float(top)
        return {"anyOf": [number, {"type": "string", "pattern": DECIMAL_PATTERN}]}


class Text(Kind):
    """A non-empty string."""

    __slots__ = ("strip",)

    def __init__(self, *, strip: bool = False) -> None:
        self.strip = strip

    @property
    def expected(self) -> str:
        return "a non-empty string"

    def parse(self, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            self.fail(value)
        return value.strip() if self.strip else value

    def json_schema(self) -> dict[str, Any]:
        return {"type": "string", "pattern": r"\S"}


class Strings(Kind):
    """A list of non-empty strings; one string alone stands for a list of one."""

    __slots__ = ("choices", "nonempty", "single", "strip", "text")

    def __init__(self, text: str = "a list of strings", *, nonempty: bool = False,
                 strip: bool = False, single: bool = True, choices: tuple[str, ...] = ()) -> None:
        self.text = text
        self.nonempty = nonempty
        self.strip = strip
        self.single = single  # may one string stand for a list of one?
        self.choices = choices

    @property
    def expected(self) -> str:
        return self.text

    def parse(self, value: Any) -> tuple[str, ...]:
        items = [value] if self.single and isinstance(value, str) else value
        if (
            not isinstance(items, list)
            or (self.nonempty and not items)
            or not all(isinstance(v, str) and v.strip() for v in items)
            or (self.choices and not all(v in self.choices for v in items))
        ):
            self.fail(value)
        return tuple(v.strip() if self.strip else v for v in items)

    def json_schema(self) -> dict[str, Any]:
        item: dict[str, Any] = (
            {"enum": list(self.choices)} if self.choices else {"type": "string", "pattern": r"\S"}
        )
        array: dict[str, Any] = {"type": "array", "items": item}
        if self.nonempty:
            array["minItems"] = 1
        return {"anyOf": [item, array]} if self.single else array


class Choice(Kind):
    """One of a few values; ``lower`` folds the case of strings first."""

    __slots__ = ("hint", "lower", "text", "values")

    def __init__(self, values: tuple[Any, ...], text: str = "", *, lower: bool = False,
                 hint: bool = False) -> None:
        self.values = values
        self.text = text
        self.lower = lower
        self.hint = hint  # add "(did you mean: ...)" to the message

    @property
    def expected(self) -> str:
        return self.text or "one of " + ", ".join(str(v) for v in self.values)

    def parse(self, value: Any) -> Any:
        key = str(value).lower() if self.lower else value
        if isinstance(value, bool) or key not in self.values:
            hint = suggest(str(key), [str(v) for v in self.values]) if self.hint else ""
            raise Invalid(f"expected {self.expected}{hint}, got {show(value)}")
        return key

    def json_schema(self) -> dict[str, Any]:
        return {"enum": list(self.values)}


class Flag(Kind):
    """``true`` or ``false``, nothing else (YAML's ``yes`` is a string to tokcost)."""

    __slots__ = ()

    @property
    def expected(self) -> str:
        return "true or false"

    def parse(self, value: Any) -> bool:
        if not isinstance(value, bool):
            self.fail(value)
        return value

    def json_schema(self) -> dict[str, Any]:
        return {"type": "boolean"}


class Day(Kind):
    """A date, ``YYYY-MM-DD`` (YAML reads an unquoted one as a date already)."""

    __slots__ = ()

    @property
    def expected(self) -> str:
        return "a date YYYY-MM-DD"

    def parse(self, value: Any) -> _dt.date:
        if isinstance(value, _dt.datetime):
            return value.date()
        if isinstance(value, _dt.date):
            return value
        if isinstance(value, str):
            try:
                return _dt.date.fromisoformat(value)
            except ValueError:
                pass
        self.fail(value)

    def json_schema(self) -> dict[str, Any]:
        return {"type": "string", "format": "date"}


class Size(Kind):
    """Bytes, written with a unit: ``80GB`` (10^9) or ``80GiB`` (2^30); ``cap`` in bytes."""

    __slots__ = ("cap", "cap_text")

    def __init__(self, *, cap: int | None = None, cap_text: str = "") -> None:
        self.cap = cap
        self.cap_text = cap_text or (f"{cap:,} bytes" if cap is not None else "")

    @property
    def expected(self) -> str:
        return "a size such as 80GB or 80GiB"

    def parse(self, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            self.fail(value)
        try:
            size = parse_size(value, param="size")
        except OutOfRange:
            if self.cap is None:
                raise Invalid(f"expected {self.expected}, got {value!r}") from None
            size = self.cap + 1
        except TokcostError as exc:
            raise Invalid(f"expected {self.expected}: {exc}") from None
        self.capped(size, value, self.cap, self.cap_text)
        return size

    def json_schema(self) -> dict[str, Any]:
        number: dict[str, Any] = {"type": "number", "exclusiveMinimum": 0}
        if self.cap is not None:
            number["maximum"] = self.cap
        return {"anyOf": [number, {"type": "string", "pattern": SIZE_PATTERN}]}


class Flops(Kind):
    """FLOP/s: a number >= 0, or text YAML 1.1 leaves unparsed such as ``989e12``."""

    __slots__ = ("cap",)

    def __init__(self, *, cap: float | None = None) -> None:
        self.cap = cap

    @property
    def expected(self) -> str:
        return "FLOP/s (a number >= 0) such as 989e12"

    def parse(self, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            self.fail(value)
        try:
            number = float(value)
        except (ValueError, OverflowError):
            self.fail(value)
        if not math.isfinite(number) or number < 0:
            self.fail(value)
        if self.cap is not None:
            self.capped(number, value, self.cap, f"{self.cap:g} FLOP/s")
        return number

    def json_schema(self) -> dict[str, Any]:
        number: dict[str, Any] = {"type": "number", "minimum": 0}
        if self.cap is not None:
            number["maximum"] = self.cap
        return {"anyOf": [number, {"type": "string", "pattern": DECIMAL_PATTERN}]}


class PackagePath(Kind):
    """Text that may name an installed package's folder as ``{package}``.

    With ``spec`` it is a tokenizer spec: only its form is checked here (text, known
    placeholders); what it names is judged by the one judge of every spec,
    ``tokcost.adapters.registry.check_spec``, which this layer cannot import:
    ``tokcost models validate`` and every use of the entry call it.
    """

    __slots__ = ("placeholders", "spec")

    def __init__(self, placeholders: tuple[str, ...], *, spec: bool = False) -> None:
        self.placeholders = placeholders
        self.spec = spec

    @property
    def expected(self) -> str:
        return (
            "a tokenizer spec such as tiktoken:o200k_base or hf:ORG/REPO"
            if self.spec
            else "a non-empty string"
        )

    def parse(self, value: Any) -> str:
        import re

        if not isinstance(value, str) or not value.strip():
            self.fail(value)
        for name in re.findall(r"\{([^}]*)\}", value):
            if name not in self.placeholders:
                known = ", ".join("{" + k + "}" for k in self.placeholders)
                raise Invalid(f"unknown placeholder {{{name}}}; known: {known}")
        return value

    def json_schema(self) -> dict[str, Any]:
        return {"type": "string", "pattern": r"\S"}


class Params(Kind):
    """``8.03B``, or ``{total: 46.7B, active: 12.9B}`` for a mixture of experts.

    Parses to ``(total, active)``; ``active`` defaults to ``total``; ``cap`` bounds both.
    """

    __slots__ = ("cap",)

    def __init__(self, *, cap: int | None = None) -> None:
        self.cap = cap

    @property
    def expected(self) -> str:
        return "a parameter count such as 8.03B or {total, active}"

    def parse(self, value: Any) -> tuple[int | None, int | None]:
        if not isinstance(value, dict):
            count = Count(what=self.expected, cap=self.cap, unit="parameters").parse(value)
            return count, count
        allowed = ("total", "active")
        for key in value:
            if key not in allowed:
                hint = suggest(str(key), allowed)
                message = f"unknown field{hint}" if hint else "unknown field; use total, active"
                raise Invalid(message, at=(str(key),))
        found: dict[str, int | None] = {}
        for key in allowed:
            try:
                found[key] = (None if value.get(key) is None
                              else Count(cap=self.cap, unit="parameters").parse(value[key]))
            except Invalid as exc:
                raise Invalid(exc.message, at=(key,)) from None
        total = found["total"]
        active = total if found["active"] is None else found["active"]
        if active is not None and total is not None and active > total:
            raise Invalid(f"expected at most params.total ({total}), got {active}", at=("active",))
        return total, active

    def json_schema(self) -> dict[str, Any]:
        count = Count(cap=self.cap).json_schema()
        return {"anyOf": [count, {"type": "object", "additionalProperties": False,
                                  "properties": {"total": count, "active": count}}]}


class Items(_Marker):
    """A list of records (``models``, ``tiers``, ``budgets``): says so when it is not a list."""

    __slots__ = ("nonempty", "text")

    def __init__(self, text: str, *, nonempty: bool = False) -> None:
        self.text = text
        self.nonempty = nonempty

    def check(self, value: Any) -> Any:
        if not isinstance(value, list) or (self.nonempty and not value):
            raise Invalid(f"expected {self.text}, got {show(value)}")
        return value

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from tokcost.catalog.validation import items_schema

        return items_schema(self, handler(source))

    def __get_pydantic_json_schema__(self, core: Any, handler: Any) -> Any:
        schema = dict(handler(core))
        if self.nonempty:
            schema["minItems"] = 1
        return schema


# --- options of a field --------------------------------------------------------------------


class Key(_Marker):
    """The field's key in the YAML file when it is not the attribute's name; None: not read."""

    __slots__ = ("name",)

    def __init__(self, name: str | None) -> None:
        self.name = name


class Required(_Marker):
    """What to say when this required field is absent."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


class Show(_Marker):
    """How the field appears in ``to_dict()`` (the JSON documents)."""

    __slots__ = ("hidden", "name", "omit_none")

    def __init__(self, name: str = "", *, hidden: bool = False, omit_none: bool = False) -> None:
        self.name = name  # "": the attribute's name
        self.hidden = hidden
        self.omit_none = omit_none


class Doc(_Marker):
    """What the field means, for the JSON Schema (editors show it on hover)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


@dataclass(frozen=True)
class FieldSpec:
    """One field of a record, with everything its annotations say about it."""

    name: str  # the attribute
    key: str | None  # the YAML key (None: not read from YAML)
    hint: Any  # the annotation, markers included (what pydantic is given)
    required: bool
    kind: Kind | None
    record: type[Record] | None  # the record type inside (nested or list item)
    required_message: str | None
    show: Show
    doc: str

    @property
    def description(self) -> str:
        expected = self.kind.expected if self.kind is not None else ""
        if self.doc and expected:
            return f"{self.doc} ({expected})"
        return self.doc or expected


class Record:
    """Base of every declared mapping: derives validation, schema and ``to_dict``.

    Subclasses are frozen dataclasses; two hooks let a record say what its fields
    alone cannot: ``_build`` (fill a default that depends on another field) and
    ``_problems`` (rules between fields, each at the path of the field to fix).
    """

    _records: ClassVar[dict[str, type[Record]]] = {}
    # Keys older files may still carry that mean nothing now: read and ignored, so a
    # catalog copied from an earlier release keeps working.
    retired_keys: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__qualname__ in Record._records:
            raise TypeError(f"two records are named {cls.__qualname__}")  # the cache keys on it
        Record._records[cls.__qualname__] = cls

    @classmethod
    def _build(cls: type[R], values: dict[str, Any]) -> R:
        """The object from checked attribute values (absent ones take their defaults)."""
        return cls(**values)

    def _problems(self) -> Iterable[tuple[PathKey, str]]:
        return ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``tokcost.show_model``): prices as exact strings, dates ISO."""
        out: dict[str, Any] = {}
        for spec in record_fields(type(self)):
            if spec.show.hidden:
                continue
            value = getattr(self, spec.name)
            if value is None and spec.show.omit_none:
                continue
            out[spec.show.name or spec.name] = jsonable(value)
        return out

    # pydantic's hooks: called only by tokcost.catalog.validation, which imports pydantic.
    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from tokcost.catalog.validation import record_schema

        return record_schema(cls, handler)

    @classmethod
    def __get_pydantic_json_schema__(cls, core: Any, handler: Any) -> Any:
        from tokcost.catalog.validation import record_json_schema

        return record_json_schema(cls, core, handler)


def jsonable(value: Any) -> Any:
    """A value as JSON shows it: ``Decimal('2.50')`` -> ``'2.5'``, tuples as lists."""
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, Decimal):
        return f"{value.normalize():f}"
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, tuple):
        return [jsonable(v) for v in value]
    return value


_FIELDS: dict[type[Record], tuple[FieldSpec, ...]] = {}


def record_fields(cls: type[Record]) -> tuple[FieldSpec, ...]:
    """The fields of a record in declaration order, read from its annotations."""
    found = _FIELDS.get(cls)
    if found is None:
        found = _FIELDS[cls] = _read_fields(cls)
    return found


def _read_fields(cls: type[Record]) -> tuple[FieldSpec, ...]:
    hints = typing.get_type_hints(cls, include_extras=True)
    specs = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        hint = hints[f.name]
        marks = _markers(hint)
        key = next((m.name for m in marks if isinstance(m, Key)), f.name)
        specs.append(
            FieldSpec(
                name=f.name,
                key=key,
                hint=hint,
                required=f.default is dataclasses.MISSING
                and f.default_factory is dataclasses.MISSING,
                kind=next((m for m in marks if isinstance(m, Kind)), None),
                record=_record_inside(hint),
                required_message=next(
                    (m.message for m in marks if isinstance(m, Required)), None
                ),
                show=next((m for m in marks if isinstance(m, Show)), Show()),
                doc=next((m.text for m in marks if isinstance(m, Doc)), ""),
            )
        )
    return tuple(specs)


def fields_by_key(cls: type[Record]) -> Mapping[str, FieldSpec]:
    """The fields read from YAML, by their key."""
    return {s.key: s for s in record_fields(cls) if s.key is not None}


def _unwrap(hint: Any) -> Any:
    """``Annotated[X | None, ...]`` -> ``X``; ``tuple[X, ...]`` -> ``X``."""
    while True:
        origin = typing.get_origin(hint)
        if origin is Annotated:
            hint = typing.get_args(hint)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(hint) if a is not type(None)]
            if len(args) != 1:
                return hint
            hint = args[0]
        elif origin is tuple:
            hint = typing.get_args(hint)[0]
        else:
            return hint


def _markers(hint: Any) -> list[Any]:
    found: list[Any] = []
    while True:
        origin = typing.get_origin(hint)
        if origin is Annotated:
            found.extend(hint.__metadata__)
            hint = typing.get_args(hint)[0]
        elif origin in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(hint) if a is not type(None)]
            if len(args) != 1:
                return found
            hint = args[0]
        else:
            return found


def _record_inside(hint: Any) -> type[Record] | None:
    inner = _unwrap(hint)
    return inner if isinstance(inner, type) and issubclass(inner, Record) else None
