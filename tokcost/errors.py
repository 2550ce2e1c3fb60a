"""Typed errors, each message saying what went wrong and what to do next (docs/api.md); the CLI
turns them into one line on stderr in one place (``tokcost.cli.base``). Messages name
parameters through ``arg`` placeholders (``{tp=3}``), which the CLI renders as flags."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

# How a renderer spells parameter NAME, given the VALUE written beside it (None: the name
# alone). The library's own is `_api_words`; the CLI passes one that spells flags.
Words = Callable[[str, "str | None"], str]

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?:=([^{}]*))?\}")


def arg(name: str, value: object = None) -> str:
    """The placeholder a message writes for parameter ``name`` (and the value given)."""
    return f"{{{name}}}" if value is None else f"{{{name}={value}}}"


def _api_words(name: str, value: str | None) -> str:
    return name if value is None else f"{name}={value}"


class TokcostError(Exception):
    """Base class; ``exit_code`` 1 for a failure, 2 for bad usage (DESIGN §3). ``message`` may
    hold ``arg`` placeholders for ``param`` and ``related``; any other braces are text."""

    exit_code: int = 1

    def __init__(self, message: str = "", *, param: str | None = None, value: Any = None,
                 expected: str | None = None, related: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.template = message
        self.param = param
        self.value = value
        self.expected = expected
        self.related = related

    def render(self, words: Words = _api_words) -> str:
        """The message with each declared parameter spelled by ``words``."""
        names = {self.param, *self.related} - {None}

        def spell(match: re.Match[str]) -> str:
            name = match.group(1)
            return words(name, match.group(2)) if name in names else match.group(0)

        return _PLACEHOLDER.sub(spell, self.template) if names else self.template

    def __str__(self) -> str:
        return self.render()


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


# The extras of pyproject.toml that hints name, as written there (tests/test_install_hints.py
# keeps them equal). A hint names packages: 'tokcost[plot]' fails from a clone, '.[plot]' elsewhere.
EXTRAS: dict[str, tuple[str, ...]] = {
    "chat": ("jinja2>=3.1",), "dask": ("dask[distributed]>=2024.1",),
    "fast": ("toktok-rs>=0.3,<0.4; python_version >= '3.11'", "gigatoken>=0.10,<0.11"),
    "images": ("pillow>=10.1",),
    "mistral": ("mistral-common>=1.5",), "plot": ("matplotlib>=3.7",),
    "prices": ("genai-prices>=0.2.3,<0.3",), "safetensors": ("safetensors>=0.4",)}


def install_hint(extra: str) -> str:
    """The pip command for an extra's packages (``pip install 'matplotlib>=3.7'``), markers
    left out; it works wherever tokcost came from."""
    return "pip install " + " ".join(f"'{req.split(';')[0].strip()}'" for req in EXTRAS[extra])


class MissingDependency(TokcostError):
    """An optional package is needed for this feature."""

    def __init__(self, package: str, extra: str, feature: str, *, param: str | None = None) -> None:
        super().__init__(f"{feature} needs the '{package}' package: {install_hint(extra)}",
                         param=param)
        self.package = package
        self.extra = extra


class TokcostWarning(UserWarning):
    """Something the user should know that did not stop the work (the CLI prints one
    ``warning:`` line)."""


def suggest(word: str, choices: Iterable[str], n: int = 3) -> str:
    """Return a ' (did you mean: a, b?)' hint, or '' when nothing is close."""
    import difflib  # only on the error path: keeps start-up light

    close = difflib.get_close_matches(word, list(choices), n=n, cutoff=0.6)
    return f" (did you mean: {', '.join(close)}?)" if close else ""


class Note(str):
    """A text for the user whose placeholders (``arg``) name parameters: spelled as the API
    does, or by ``render(words)`` as a caller does (the CLI: its flags)."""

    template: str

    def __new__(cls, template: str) -> Note:
        note = super().__new__(cls, _spell(template, _api_words))
        note.template = template
        return note

    def render(self, words: Words | None = None) -> str:
        return _spell(self.template, words or _api_words)


def _spell(template: str, words: Words) -> str:
    names = tuple(name for name, _ in _PLACEHOLDER.findall(template))
    return TokcostError(template, related=names).render(words)
