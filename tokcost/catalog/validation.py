"""pydantic (~0.1 s to import: only here) for tokcost's YAML files: values read as people write
them (``128k``) with the JSON Schema of their text, errors as ``(location, message)`` issues."""

from __future__ import annotations

import datetime as _dt
import math
import re
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, ClassVar, NamedTuple, NoReturn, TypeVar

import pydantic
from annotated_types import GroupedMetadata

from tokcost import units
from tokcost.catalog.yamltext import PathKey
from tokcost.errors import TokcostError, suggest

M = TypeVar("M", bound="Strict")
DECIMAL_PATTERN = r"^\s*[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?\s*$"


class Invalid(ValueError):
    """A value or a rule refused; ``issues`` are (path below the field, message)."""

    def __init__(self, message: str, at: PathKey = (), *more: tuple[PathKey, str]) -> None:
        super().__init__(message)
        self.issues = [(at, message), *more]


class Issue(NamedTuple):
    loc: PathKey  # ("models", 3, "pricing", "input")
    message: str
    missing: bool = False  # a required key is absent (loc names it)


def expect(what: str, value: Any) -> NoReturn:
    """Refuse ``value``, shown as its ``repr`` cut to 60 characters."""
    shown = repr(value)
    raise Invalid(f"expected {what}, got {shown if len(shown) <= 60 else shown[:57] + '...'}")


class Strict(pydantic.BaseModel):
    """A mapping of a YAML file: unknown keys are refused and ``null`` means absent."""

    model_config = pydantic.ConfigDict(frozen=True, extra="forbid")
    missing: ClassVar[Mapping[str, str]] = {}  # what to say when a required key is absent
    retired: ClassVar[frozenset[str]] = frozenset()  # keys of older files, read and ignored

    @pydantic.model_validator(mode="before")
    @classmethod
    def _given(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            expect(f"a mapping with keys {', '.join(cls.model_fields)}", data)
        return {k: v for k, v in data.items() if v is not None and k not in cls.retired}


def check(model: type[M], data: Any, *, noun: str = "field") -> tuple[M | None, list[Issue]]:
    """The validated document, or None and every problem (``noun``: "unknown field/key")."""
    try:
        return model.model_validate(data), []
    except pydantic.ValidationError as exc:
        return None, [i for e in exc.errors(include_url=False) for i in _issues(model, e, noun)]


def _issues(root: type[Strict], error: Any, noun: str) -> list[Issue]:
    loc: PathKey = tuple(error["loc"])
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, Invalid):
        return [Issue((*loc, *at), message) for at, message in cause.issues]
    model: type[Strict] | None = root  # the model the location lies in
    for part in loc[:-1]:
        if isinstance(part, str) and model is not None:
            field = model.model_fields.get(part)
            model = _inner(field.annotation) if field is not None else None
    if error["type"] == "missing" and model is not None:
        return [Issue(loc, model.missing.get(str(loc[-1]), "required"), missing=True)]
    if error["type"] == "extra_forbidden" and model is not None:
        known = list(model.model_fields)
        hint = suggest(str(loc[-1]), known)
        return [Issue(loc, f"unknown {noun}{hint}" if hint
                      else f"unknown {noun}; expected one of {', '.join(known)}")]
    return [Issue(loc, str(error["msg"]))]  # pragma: no cover - every leaf words its own


def _inner(hint: Any) -> type[Strict] | None:
    if isinstance(hint, type) and issubclass(hint, Strict):
        return hint
    return next((m for m in map(_inner, typing.get_args(hint)) if m is not None), None)


@dataclass(frozen=True, eq=False)  # hashed by identity: typing hashes Annotated metadata
class Reads(GroupedMetadata):
    """A field's reader: pydantic's validator and the JSON Schema of what may be written."""

    parse: Callable[[Any], Any]
    schema: dict[str, Any]

    def __iter__(self) -> Iterator[object]:
        yield pydantic.PlainValidator(self.parse)
        yield pydantic.WithJsonSchema(self.schema)


def _reader(read: Callable[[Any], Any], expected: str, number: dict[str, Any], pattern: str,
            kinds: tuple[type, ...] = (int, float, Decimal, str)) -> Reads:
    """A scalar as a number or text (``pattern``) ``read`` parses, its errors in one sentence."""
    def parse(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, kinds):  # YAML's true is not 1
            expect(expected, value)
        try:
            return read(value)
        except Invalid:
            raise
        except (TokcostError, ValueError, ArithmeticError):
            expect(expected, value)
    return Reads(parse, {"anyOf": [number, {"type": "string", "pattern": pattern}]})


def _capped(number: Any, value: Any, cap: Any, cap_text: str) -> None:
    if cap is not None and number > cap:  # a typo such as `context_window: 1e30`
        expect(f"at most {cap_text}", value)


def count(minimum: int = 1, *, cap: int | None = None, unit: str = "", what: str = "") -> Reads:
    """A count: ``128000``, ``128k``, ``8.03B``, ``1e6``; ``cap`` the largest sane one."""
    expected = what or f"an integer >= {minimum}"

    def read(value: Any) -> int:
        try:
            number = units.parse_count(value)
        except units.OutOfRange:
            if cap is None:
                expect(f"a whole number from {minimum} to 10^15", value)
            number = cap + 1
        if number < minimum:
            expect(expected, value)
        if cap is not None:
            _capped(number, value, cap, f"{cap:,} {unit}".rstrip())
        return number

    top = units.MAX_COUNT if cap is None else cap
    return _reader(read, expected, {"type": "integer", "minimum": minimum, "maximum": top},
                   units.COUNT_PATTERN)


def number(text: str, *, below: Decimal | None = None, cap: Decimal | None = None,
           cap_text: str = "") -> Reads:
    """A number >= 0 read as ``Decimal`` through ``str``, so 2.5 stays 2.5 exactly."""
    def read(value: Any) -> Decimal:
        found = Decimal(str(value).strip())
        if not found.is_finite() or found < 0 or (below is not None and found >= below):
            raise ValueError(value)
        _capped(found, value, cap, cap_text)
        return found

    bound: dict[str, Any] = {"type": "number", "minimum": 0}
    if below is not None:
        bound["exclusiveMaximum"] = float(below)
    if cap is not None:
        bound["maximum"] = float(cap)
    return _reader(read, text, bound, DECIMAL_PATTERN, (int, float, str))


def size(*, cap: int, cap_text: str) -> Reads:
    """Bytes with a unit: ``80GB`` (10^9) or ``80GiB`` (2^30)."""
    expected = "a size such as 80GB or 80GiB"

    def read(value: Any) -> int:
        try:
            found = units.parse_size(value, param="size")
        except units.OutOfRange:
            found = cap + 1
        except TokcostError as exc:
            raise Invalid(f"expected {expected}: {exc}") from None
        _capped(found, value, cap, cap_text)
        return found
    return _reader(read, expected, {"type": "number", "exclusiveMinimum": 0, "maximum": cap},
                   units.SIZE_PATTERN, (str, int, float))


def flops(*, cap: float) -> Reads:
    """FLOP/s: a number >= 0, or text YAML 1.1 leaves unparsed such as ``989e12``."""
    def read(value: Any) -> float:
        found = float(value)
        if not math.isfinite(found) or found < 0:
            raise ValueError(value)
        _capped(found, value, cap, f"{cap:g} FLOP/s")
        return found
    return _reader(read, "FLOP/s (a number >= 0) such as 989e12",
                   {"type": "number", "minimum": 0, "maximum": cap}, DECIMAL_PATTERN,
                   (int, float, str))


def text(*, strip: bool = False, placeholders: tuple[str, ...] = (),
         what: str = "a non-empty string") -> Reads:
    """A non-empty string; ``placeholders``: the ``{package}`` names it may hold."""
    def parse(value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            expect(what, value)
        for name in re.findall(r"\{([^}]*)\}", value) if placeholders else ():
            if name not in placeholders:
                known = ", ".join("{" + k + "}" for k in placeholders)
                raise Invalid(f"unknown placeholder {{{name}}}; known: {known}")
        return value.strip() if strip else value
    return Reads(parse, {"type": "string", "pattern": r"\S"})


def strings(what: str = "a list of strings", *, nonempty: bool = False, strip: bool = False,
            single: bool = True, choices: tuple[str, ...] = ()) -> Reads:
    """A list of non-empty strings; with ``single``, one string stands for a list of one."""
    def parse(value: Any) -> tuple[str, ...]:
        items = [value] if single and isinstance(value, str) else value
        if (not isinstance(items, (list, tuple)) or (nonempty and not items)
                or not all(isinstance(v, str) and v.strip() for v in items)
                or (choices and not all(v in choices for v in items))):
            expect(what, value)
        return tuple(v.strip() if strip else v for v in items)

    item: dict[str, Any] = ({"enum": list(choices)} if choices
                            else {"type": "string", "pattern": r"\S"})
    array: dict[str, Any] = {"type": "array", "items": item}
    if nonempty:
        array["minItems"] = 1
    return Reads(parse, {"anyOf": [item, array]} if single else array)


def choice(values: tuple[Any, ...], what: str = "", *, lower: bool = False,
           hint: bool = False) -> Reads:
    """One of a few values; ``lower`` folds the case first, ``hint`` suggests a close one."""
    expected = what or "one of " + ", ".join(str(v) for v in values)

    def parse(value: Any) -> Any:
        key = str(value).lower() if lower else value
        if isinstance(value, bool) or key not in values:
            close = suggest(str(key), [str(v) for v in values]) if hint else ""
            expect(f"{expected}{close}", value)
        return key
    return Reads(parse, {"enum": list(values)})


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):  # YAML 1.1's `yes` is a string to tokcost
        expect("true or false", value)
    return value


def _day(value: Any) -> _dt.date:
    if isinstance(value, _dt.datetime):
        return value.date()
    if isinstance(value, _dt.date):
        return value
    try:
        return _dt.date.fromisoformat(value)
    except (TypeError, ValueError):
        expect("a date YYYY-MM-DD", value)


FLAG = Reads(_flag, {"type": "boolean"})
DAY = Reads(_day, {"type": "string", "format": "date"})


def listed(what: str, *, nonempty: bool = False) -> pydantic.BeforeValidator:
    """A list of mappings (``models``, ``budgets``), whose items pydantic then checks."""
    def parse(value: Any) -> Any:
        if not isinstance(value, list) or (nonempty and not value):
            expect(what, value)
        return value
    return pydantic.BeforeValidator(parse)


def usd(what: str = "") -> Reads:
    """US dollars: ``0.05``, ``$0.05``, ``5c``, ``$1.2k`` (other currencies refused)."""
    tail = f" {what}" if what else ""
    return _reader(units.parse_money, f"an amount in USD >= 0{tail} such as 0.05 or $0.05",
                   {"type": "number", "minimum": 0}, units.MONEY_PATTERN)


PERCENT = _reader(lambda value: float(units.parse_percent(value)),
                  "a percentage >= 0 such as 10 or 10%", {"type": "number", "minimum": 0},
                  units.PERCENT_PATTERN)
SHARE = _reader(units.parse_fraction, "a fraction in [0, 1] such as 0.5",
                {"type": "number", "minimum": 0, "maximum": 1}, units.PERCENT_PATTERN)
