"""What the reference path's requests are made of: checked numbers and the prompt."""

from __future__ import annotations

from dataclasses import dataclass, field

from tokcost.errors import InputError, UsageError, arg
from tokcost.parts import Parts
from tokcost.units import parse_count


def as_int(value: object, name: str) -> int:
    """An int, or a count as text; the sign is kept for the field's own range check.

    >>> as_int("12k", "n"), as_int(-3, "n"), as_int("-1", "top_k")
    (12000, -3, -1)
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str | float):
        text = str(value).strip()
        magnitude = parse_count(text.removeprefix("-"), param=name)
        return -magnitude if text.startswith("-") else magnitude
    raise UsageError(f"{arg(name)} must be a whole number, got {value!r}", param=name, value=value)


def as_float(value: object, name: str) -> float:
    """A number, or one as text (``"0.8"``)."""
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        try:
            return float(value)
        except ValueError:
            pass
    raise UsageError(f"{arg(name)} must be a number, got {value!r}", param=name, value=value)


@dataclass(frozen=True)
class PromptText:
    text: str
    invalid_utf8_bytes: int = 0


def decode_prompt(data: bytes, *, source: str = "stdin") -> PromptText:
    """Bytes as a prompt: invalid UTF-8 replaced by U+FFFD (and counted), binary refused.

    >>> decode_prompt("café ".encode() + bytes([255])).invalid_utf8_bytes
    1
    """
    from tokcost.counting import SNIFF_BYTES, decode_utf8, sniff_binary
    binary = sniff_binary(data[:SNIFF_BYTES])
    if binary is not None:
        raise InputError(f"{source} is {binary}, not text; give the prompt as text")
    return PromptText(*decode_utf8(data))


@dataclass(frozen=True, kw_only=True)
class PromptRequest(Parts):
    """A request with a prompt: text, or bytes (``decode_prompt``) from ``prompt_source``."""

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
                f"the prompt is not valid text (a lone surrogate at character {exc.start}); give "
                "bytes, which are read with invalid UTF-8 replaced") from None

    @property
    def text(self) -> str:
        assert isinstance(self.prompt, str)
        return self.prompt
