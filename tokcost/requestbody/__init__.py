"""A request body as users send it (OpenAI Chat Completions or Responses, Anthropic Messages)
-> the input tokens the provider bills, part by part, each part exact or approximate (≈).

>>> from tokcost.requestbody import Tally
>>> tally = Tally()
>>> tally.add("tools", 30, exact=True); tally.add("tools", 4, exact=True)
>>> tally.parts()
(Part(kind='tools', tokens=34, exact=True),)
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from tokcost.counting import STDIN, STDIN_NAME
from tokcost.counting.inputs import stdin_source
from tokcost.errors import InputError, UsageError, arg
from tokcost.limits import MAX_REQUEST_BYTES, TooNested, loads_json

if TYPE_CHECKING:
    from tokcost.adapters.base import Tokenizer
    from tokcost.catalog.schema import ModelEntry

CHAT_COMPLETIONS, RESPONSES, ANTHROPIC = "openai.chat.completions", "openai.responses", \
    "anthropic.messages"


@dataclass(frozen=True)
class Part:
    kind: str  # message text, message overhead, tools, tool calls, images, ...
    tokens: int
    exact: bool


@dataclass
class Tally:
    """Parts summed by (kind, exact), and notes on what could not be counted."""

    _parts: dict[tuple[str, bool], int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, kind: str, tokens: int, *, exact: bool) -> None:
        self._parts[kind, exact] = self._parts.get((kind, exact), 0) + tokens

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def parts(self) -> tuple[Part, ...]:
        return tuple(Part(k, n, e) for (k, e), n in self._parts.items())


@dataclass(frozen=True)
class Body:
    data: dict[str, Any]
    name: str  # the file as given, or <stdin>
    base: Path  # where relative image paths are read from
    format: str

    @property
    def model(self) -> str | None:
        model = self.data.get("model")
        return model if isinstance(model, str) and model else None


@dataclass(frozen=True)
class BodyCount:
    format: str
    parts: tuple[Part, ...]
    notes: tuple[str, ...]  # what was left uncounted or approximated, and why
    unknown: int = 0  # parts whose tokens could not be known offline (in no total)

    @property
    def exact_tokens(self) -> int:
        return sum(p.tokens for p in self.parts if p.exact)

    @property
    def approximate_tokens(self) -> int:
        return sum(p.tokens for p in self.parts if not p.exact)

    @property
    def total(self) -> int:
        return self.exact_tokens + self.approximate_tokens

    @property
    def exact(self) -> bool:
        return not self.approximate_tokens and not self.unknown

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.format, "parts": [vars(p) for p in self.parts],
                "exact_tokens": self.exact_tokens,
                "approximate_tokens": self.approximate_tokens, "total": self.total,
                "exact": self.exact, "unknown_parts": self.unknown, "notes": list(self.notes)}


@dataclass(frozen=True)
class Context:
    """What the rules read: the model (its id picks the rule tables) and its tokenizer."""

    model: ModelEntry
    tokenizer: Tokenizer
    base: Path

    def count(self, text: str) -> int:
        return self.tokenizer.count(text)

    def count_json(self, value: Any) -> int:
        return self.count(value if isinstance(value, str) else json.dumps(value))


def load_body(path: str, *, stdin: BinaryIO | None = None) -> Body:
    """The JSON request body in ``path`` (``-``: stdin), read to at most MAX_REQUEST_BYTES."""
    if path == STDIN:
        name, base, data = STDIN_NAME, Path.cwd(), stdin_source(stdin).read(MAX_REQUEST_BYTES + 1)
    else:
        name, base = path, Path(path).parent
        try:
            with open(path, "rb") as handle:  # read(n): /dev/zero or a FIFO ends too
                data = handle.read(MAX_REQUEST_BYTES + 1)
        except FileNotFoundError:
            raise UsageError(f"{arg('request')} file not found: {path or repr(path)}",
                             param="request") from None
        except IsADirectoryError:
            raise UsageError(f"{path} is a folder; {arg('request', 'FILE')} takes a JSON "
                             "request body", param="request") from None
        except OSError as err:
            raise InputError(f"{path}: unreadable ({err.strerror})") from None
    if len(data) > MAX_REQUEST_BYTES:
        raise InputError(f"{name}: over {MAX_REQUEST_BYTES >> 20} MiB, more than a request body "
                         "holds; give the body of one request")
    try:
        parsed = loads_json(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise InputError(f"{name}: not UTF-8 text; a request body is JSON") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{name}:{exc.lineno}: not JSON ({exc.msg}); expected a request body "
                         "such as {\"model\": ..., \"messages\": [...]}") from None
    except TooNested as exc:
        raise InputError(f"{name}: not read: {exc}") from None
    if isinstance(parsed, list):  # a bare message list, as --chat reads it
        parsed = {"messages": parsed}
    if not isinstance(parsed, dict):
        raise InputError(f"{name}: expected a JSON object (a request body), got "
                         f"{type(parsed).__name__}")
    return Body(parsed, name, base, _format(parsed, name))


def _format(data: dict[str, Any], name: str) -> str:
    """The API a body is written for, from its own keys."""
    if "input" in data or "instructions" in data:
        return RESPONSES
    tools = data.get("tools")
    if "system" in data or (isinstance(tools, list)
                            and any(isinstance(t, dict) and "input_schema" in t for t in tools)):
        return ANTHROPIC
    if "messages" in data:
        model = data.get("model")
        return ANTHROPIC if isinstance(model, str) and model.startswith("claude") else \
            CHAT_COMPLETIONS
    raise InputError(f"{name}: not a request body: expected 'messages' (OpenAI Chat Completions, "
                     "Anthropic Messages) or 'input' (OpenAI Responses)")


def count_body(body: Body, model: ModelEntry, tokenizer: Tokenizer) -> BodyCount:
    """The input tokens ``model`` bills for ``body``, by the rules of the body's API."""
    from tokcost.requestbody import anthropic, openai  # they import this module's types
    ctx, tally = Context(model, tokenizer, body.base), Tally()
    counter = anthropic.count_messages if body.format == ANTHROPIC else openai.count_request
    unknown = counter(body, ctx, tally)
    provider = "anthropic" if body.format == ANTHROPIC else "openai"
    if model.provider and model.provider != provider:  # -m gpt-4o on a Claude body
        tally.note(f"{model.id} is {model.provider}'s; the body, written for "
                   f"{body.format}, is counted by {provider}'s rules")
    return BodyCount(body.format, tally.parts(), tuple(tally.notes), unknown)


def require_list(body: Body, key: str) -> list[dict[str, Any]]:
    """``body[key]`` as a list of objects ([] when absent), else one error line."""
    value = body.data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise InputError(f"{body.name}: '{key}' must be a list of objects")
    return value
