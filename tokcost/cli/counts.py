"""Flags that take a count (tokens, lengths, samples), all read by ``tokcost.units.parse_count``:
``8k``, ``8Ki``, ``1.5M`` and ``1e6`` mean the same in every command, and a bad value is a
usage error like any other bad flag (parsed while Click parses the command line). The
parser judges what a count looks like; the library judges which counts a parameter
takes, so a sign is passed on (``--top-k -1`` reaches ``top_k=-1``) and the library words
the refusal as it does for any caller.
"""

from __future__ import annotations

from collections.abc import Callable

import typer

from tokcost.errors import UsageError
from tokcost.units import parse_count

#: The metavar of every count flag in --help.
COUNT = "COUNT"


class CountError(typer.BadParameter):
    """A count flag's value that ``parse_count`` refused, in the parser's words (which
    name the flag already: Click's "Invalid value for '--top':" would say it twice)."""

    def format_message(self) -> str:
        return self.message


def count_parser(flag: str, *, signed: bool = True) -> Callable[[str | int], int]:
    """A Typer ``parser=`` for ``flag``: its value as a count, sign kept for the library.

    ``signed=False`` refuses a negative here, for a flag whose library parameter has
    another name (``--truncate`` is ``max_tokens``), whose message could not name the flag.

    >>> parse = count_parser("--top")
    >>> parse("8k"), parse("8Ki"), parse("1.5M"), parse(10), parse("-1")
    (8000, 8192, 1500000, 10, -1)
    >>> parse("1e30")
    Traceback (most recent call last):
    ...
    tokcost.cli.counts.CountError: --top '1e30' is beyond 10^15, more than any corpus or \
model handles; check the number and its suffix
    """

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
