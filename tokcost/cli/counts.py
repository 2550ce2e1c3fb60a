"""Flags that take a count, read by ``tokcost.units.parse_count`` while Click parses (``8k``,
``8Ki``, ``1.5M``, ``1e6``); a sign is passed on for the library to judge (``--top-k -1``)."""

from __future__ import annotations

from collections.abc import Callable

import typer

from tokcost.errors import UsageError
from tokcost.units import parse_count

COUNT = "COUNT"  # the metavar of every count flag


class CountError(typer.BadParameter):
    """A value ``parse_count`` refused, in its words (which name the flag already)."""

    def format_message(self) -> str:
        return self.message


def count_parser(flag: str, *, signed: bool = True) -> Callable[[str | int], int]:
    """A Typer ``parser=`` for ``flag``: its value as a count, sign kept (``signed=False``
    refuses a negative here, for a flag named otherwise in the library: ``--truncate``)."""

    def count(text: str | int) -> int:
        magnitude: str | int = text.strip() if isinstance(text, str) else abs(text)
        negative = isinstance(text, int) and text < 0
        if isinstance(magnitude, str) and magnitude.startswith("-"):
            magnitude, negative = magnitude[1:], True
        try:
            value = parse_count(magnitude, param="value")
            if negative and value and not signed:
                parse_count(text, param="value")  # the parser's words for a negative
        except UsageError as exc:
            # The message quotes the value as typed, sign included ('-1e30').
            typed = f"'{str(text).strip()}'"
            message = exc.render(lambda _name, value: flag if value is None else f"{flag} {value}")
            raise CountError(message.replace(f"'{magnitude}'", typed, 1)) from None
        return -value if negative else value

    return count
