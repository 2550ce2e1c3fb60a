"""What the reference path's requests are made of: checked values and the prompt.

A request (``tokcost.GenerateRequest``...) is a frozen dataclass of small frozen parts,
each checking itself on construction. ``Parts.of`` builds one from the flat
names a command's options carry (``temperature=0.8`` goes to the sampling part), so the
CLI and a library caller spell each option once:

>>> from tokcost.reference.sampling import SamplingParams
>>> from dataclasses import dataclass, field
>>> @dataclass(frozen=True, kw_only=True)
... class Demo(Parts):
...     sampling: SamplingParams = field(default_factory=SamplingParams)
...     explain: bool = False
>>> Demo.of(temperature=0.5, n="2", explain=True).sampling.n
2
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from tokcost.errors import InputError, UsageError, arg
from tokcost.parts import Parts
from tokcost.units import parse_count

R = TypeVar("R")


def as_int(value: object, name: str) -> int:
    """An int field's value: an int, or a count as text (``"12k"``); the sign is kept for
    the field's own range check.

    >>> as_int("12k", "n"), as_int(-3, "n"), as_int("-1", "top_k")
    (12000, -3, -1)
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str | float):
        text = str(value).strip()
        magnitude = parse_count(text.removeprefix("-"), param=name)
        return -magnitude if text.startswith("-") else magnitude
    raise UsageError(f"{arg(name)} must be a whole number, got {value!r}", param=name,
                     value=value)


def as_float(value: object, name: str) -> float:
    """A float field's value: a number, or one as text (``"0.8"``)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise UsageError(f"{arg(name)} must be a number, got {value!r}", param=name, value=value)


@dataclass(frozen=True)
class PromptText:
    """A prompt read from bytes: its text, and how many bytes were not UTF-8."""

    text: str
    invalid_utf8_bytes: int = 0


def decode_prompt(data: bytes, *, source: str = "stdin") -> PromptText:
    """Bytes as a prompt, by the input policy every command keeps: invalid UTF-8 is
    replaced by U+FFFD (and counted, for the caller to report); binary data (a NUL
    byte, as git decides) is refused, since its "text" would be noise.

    >>> decode_prompt("café ".encode() + bytes([255])).invalid_utf8_bytes
    1
    """
    from tokcost.counting import SNIFF_BYTES, sniff_binary

    binary = sniff_binary(data[:SNIFF_BYTES])
    if binary is not None:
        raise InputError(f"{source} is {binary}, not text; give the prompt as text")
    text = data.decode("utf-8", errors="replace")
    if "\ufffd" not in text:
        return PromptText(text)
    # "replace" gives one U+FFFD per bad sequence; surrogateescape one per bad byte.
    escaped = data.decode("utf-8", errors="surrogateescape")
    return PromptText(text, sum(1 for c in escaped if "\udc80" <= c <= "\udcff"))


@dataclass(frozen=True, kw_only=True)
class PromptRequest(Parts):
    """A request with a prompt: text, or bytes read by the input policy
    (``decode_prompt``; ``prompt_source`` names them in messages: stdin, a file)."""

    prompt: str | bytes
    prompt_source: str = "the prompt"
    invalid_utf8_bytes: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if isinstance(self.prompt, bytes):
            read = decode_prompt(self.prompt, source=self.prompt_source)
            object.__setattr__(self, "prompt", read.text)
            object.__setattr__(self, "invalid_utf8_bytes", read.invalid_utf8_bytes)
        try:
            self.text.encode("utf-8")
        except UnicodeEncodeError as exc:  # lone surrogates, as from undecodable bytes
            raise InputError(
                f"the prompt is not valid text (a lone surrogate at character {exc.start}); "
                "give bytes, which are read with invalid UTF-8 replaced"
            ) from None

    @property
    def text(self) -> str:
        """The prompt as text (bytes were decoded on construction)."""
        assert isinstance(self.prompt, str)
        return self.prompt
