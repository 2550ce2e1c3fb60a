"""Typed errors. Every message says what went wrong and what to do next.

The library raises these; the CLI turns them into one line on stderr and an exit
code in a single place (``tokcost.cli.app``). Library messages speak the API's words
(``pass allow_special=True``, ``tp must divide kv_heads``) and name the offending
parameter in ``param``; the CLI maps that parameter to its flag (``--allow-special``,
``--tp``), so no library module spells a flag.

>>> e = UsageError("tp=3 does not divide kv_heads=8", param="tp")
>>> (e.param, e.exit_code, str(e))
('tp', 2, 'tp=3 does not divide kv_heads=8')
"""

from __future__ import annotations

from collections.abc import Iterable


class TokcostError(Exception):
    """Base class. ``exit_code`` follows DESIGN §3: 1 for a failure, 2 for bad usage.

    ``param`` is the API parameter the error is about (``"tp"``, ``"input_tokens"``),
    or None; the message uses that same name wherever it refers to the parameter.
    ``related`` names other parameters the message suggests (the CLI shows them as
    flags too).
    """

    exit_code: int = 1

    def __init__(self, message: str = "", *, param: str | None = None,
                 related: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.param = param
        self.related = related


class UsageError(TokcostError):
    """The user asked for something malformed (a bad flag value, a missing path)."""

    exit_code = 2


class InputError(TokcostError):
    """An input file or stream cannot be read as asked."""


class TokenizerNotFound(UsageError):
    """The tokenizer spec names nothing tokcost knows."""


class TokenizerDataError(TokcostError):
    """A tokenizer's data file is missing, corrupt or has the wrong hash."""


class CatalogError(TokcostError):
    """The model catalog is malformed."""

    exit_code = 2


class ModelNotFound(UsageError):
    """No catalog entry matches the model id."""


class GpuNotFound(UsageError):
    """No GPU in the catalog matches the name."""


class MissingDependency(TokcostError):
    """An optional package is needed for this feature."""

    def __init__(self, package: str, extra: str, feature: str, *,
                 param: str | None = None) -> None:
        super().__init__(
            f"{feature} needs the '{package}' package: pip install 'tokcost[{extra}]'",
            param=param,
        )
        self.package = package
        self.extra = extra


def suggest(word: str, choices: Iterable[str], n: int = 3) -> str:
    """Return a ' (did you mean: a, b?)' hint, or '' when nothing is close.

    >>> suggest("gpt-4p", ["gpt-4o", "gpt-4", "o3"])
    ' (did you mean: gpt-4, gpt-4o?)'
    """
    import difflib  # only on the error path: keeps start-up light

    close = difflib.get_close_matches(word, list(choices), n=n, cutoff=0.6)
    return f" (did you mean: {', '.join(close)}?)" if close else ""
