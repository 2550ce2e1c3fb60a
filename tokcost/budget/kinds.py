"""The numbers of a budget config as people write them: ``10k`` tokens, ``$0.05``, ``10%``.

Each kind reads a leaf value with the one parser of tokcost.units (the rule in
the README, "Numbers and sizes") and, when it does not parse, says what was expected in
the form ``tokcost.budget.config`` puts after the file, line and key::

    >>> Tokens().parse("10k"), Usd().parse("$0.05"), Percent().parse("10%")
    (10000, Decimal('0.05'), 10.0)
    >>> Tokens().parse(1e4), Usd().parse("5c"), Share().parse("50%")
    (10000, Decimal('0.05'), Decimal('0.5'))
    >>> Tokens().parse("1e30")
    Traceback (most recent call last):
    ...
    tokcost.catalog.fields.Invalid: expected a whole number from 1 to 10^15, got '1e30'
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from tokcost.catalog.fields import Invalid, Kind, show
from tokcost.errors import TokcostError
from tokcost.units import (
    COUNT_PATTERN,
    MAX_COUNT,
    MONEY_PATTERN,
    PERCENT_PATTERN,
    OutOfRange,
    parse_count,
    parse_fraction,
    parse_money,
    parse_percent,
)

__all__ = ["Percent", "Share", "Tokens", "Usd"]


class Tokens(Kind):
    """A token count: ``2000``, ``10k``, ``8Ki``, ``1.5M`` (``B`` is a billion)."""

    __slots__ = ("minimum",)

    def __init__(self, minimum: int = 1) -> None:
        self.minimum = minimum

    @property
    def expected(self) -> str:
        return f"a whole number >= {self.minimum}"

    def parse(self, value: Any) -> int:
        # A whole float counts too: TOML has no integer exponent, so 1e4 arrives as 10000.0.
        if isinstance(value, (int, float, Decimal, str)) and not isinstance(value, bool):
            try:
                return parse_count(value, minimum=self.minimum)
            except OutOfRange:
                raise Invalid(
                    f"expected a whole number from {self.minimum} to 10^15, got {show(value)}"
                ) from None
            except TokcostError:
                pass
        self.fail(value)

    def json_schema(self) -> dict[str, Any]:
        return {"anyOf": [{"type": "integer", "minimum": self.minimum, "maximum": MAX_COUNT},
                          {"type": "string", "pattern": COUNT_PATTERN}]}


class Usd(Kind):
    """US dollars: ``0.05``, ``$0.05``, ``5c``, ``$1.2k`` (other currencies are refused)."""

    __slots__ = ("what",)

    def __init__(self, what: str = "") -> None:
        self.what = what  # "per call": what the amount is of

    @property
    def expected(self) -> str:
        tail = f" {self.what}" if self.what else ""
        return f"an amount in USD >= 0{tail} such as 0.05 or $0.05"

    def parse(self, value: Any) -> Decimal:
        if isinstance(value, (int, float, Decimal, str)) and not isinstance(value, bool):
            try:
                return parse_money(value)
            except TokcostError:
                pass
        self.fail(value)

    def json_schema(self) -> dict[str, Any]:
        return {"anyOf": [{"type": "number", "minimum": 0},
                          {"type": "string", "pattern": MONEY_PATTERN}]}


class Percent(Kind):
    """Percent points: ``10`` and ``10%`` are both ten percent."""

    __slots__ = ()

    @property
    def expected(self) -> str:
        return "a percentage >= 0 such as 10 or 10%"

    def parse(self, value: Any) -> float:
        if isinstance(value, (int, float, Decimal, str)) and not isinstance(value, bool):
            try:
                return float(parse_percent(value))
            except TokcostError:
                pass
        self.fail(value)

    def json_schema(self) -> dict[str, Any]:
        return {"anyOf": [{"type": "number", "minimum": 0},
                          {"type": "string", "pattern": PERCENT_PATTERN}]}


class Share(Kind):
    """A share of a whole: ``0.5`` or ``50%`` (a bare ``50`` is refused, not guessed)."""

    __slots__ = ()

    @property
    def expected(self) -> str:
        return "a fraction in [0, 1] such as 0.5"

    def parse(self, value: Any) -> Decimal:
        if isinstance(value, (int, float, Decimal, str)) and not isinstance(value, bool):
            try:
                return parse_fraction(value)
            except TokcostError:
                pass
        self.fail(value)

    def json_schema(self) -> dict[str, Any]:
        return {"anyOf": [{"type": "number", "minimum": 0, "maximum": 1},
                          {"type": "string", "pattern": PERCENT_PATTERN}]}
