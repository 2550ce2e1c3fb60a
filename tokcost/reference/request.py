"""What the reference path's requests are made of: checked numbers and the prompt, a chat prompt
rendered through a checkpoint's chat template."""

from __future__ import annotations

import contextlib
import json
import signal
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from tokcost.errors import InputError, MissingDependency, UsageError, arg
from tokcost.limits import TEMPLATE_OUTPUT, TEMPLATE_RANGE, TEMPLATE_SECONDS, loads_json
from tokcost.parts import Parts
from tokcost.units import parse_count


def as_int(value: object, name: str) -> int:
    """An int, or a count as text; the sign is kept for the field's own range check."""
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
    """Bytes as a prompt: invalid UTF-8 replaced by U+FFFD (and counted), binary refused."""
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


_SPECIALS = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token",
             "mask_token")


def read_template(folder: Path) -> tuple[str, dict[str, str]]:
    """The folder's chat template (tokenizer_config.json or chat_template.jinja) and specials."""
    config_file = folder / "tokenizer_config.json"
    config: dict[str, Any] = {}
    if config_file.is_file():
        try:
            config = loads_json(config_file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read {config_file} ({exc})") from None
    template = config.get("chat_template")
    if isinstance(template, list):
        named = {t.get("name"): t.get("template") for t in template if isinstance(t, dict)}
        template = named.get("default")
    jinja_file = folder / "chat_template.jinja"
    if not template and jinja_file.is_file():
        template = jinja_file.read_text(encoding="utf-8")
    if not isinstance(template, str) or not template:
        raise UsageError(f"{arg('chat')} needs a template, and '{folder}' has none "
                         "(tokenizer_config.json chat_template, chat_template.jinja)", param="chat")
    # An AddedToken is written out as a dict with its "content".
    found = {k: v.get("content") if isinstance(v := config.get(k), dict) else v for k in _SPECIALS}
    return template, {k: v for k, v in found.items() if isinstance(v, str)}


def render(template: str, messages: Sequence[Mapping[str, str]], *,
           specials: Mapping[str, str] | None = None, add_generation_prompt: bool = True) -> str:
    """``messages`` through ``template``, as ``apply_chat_template`` (docs/generate.md), under
    the limits of SECURITY.md: output, time, ``range`` and the numbers a call may take."""
    try:
        from jinja2 import TemplateError
        from jinja2.exceptions import SecurityError
        from jinja2.ext import loopcontrols
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        raise MissingDependency("jinja2", "chat", "applying a chat template") from None

    class Bounded(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            seq, n = (left, right) if isinstance(right, int) else (right, left)
            size = len(seq) * n if isinstance(seq, (str, list, tuple)) else 0
            power = abs(right) if operator == "**" and isinstance(right, int) else 0
            if size > TEMPLATE_OUTPUT or power > 256:
                raise SecurityError(f"'{operator}' past the template's limits")
            return super().call_binop(context, operator, left, right)

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
            if any(isinstance(a, int) and abs(a) > TEMPLATE_OUTPUT for a in args):
                raise SecurityError(f"a call with a number over {TEMPLATE_OUTPUT:,}")
            return super().call(__context, __obj, *args, **kwargs)

    def raise_exception(message: str) -> None:
        raise TemplateError(message)

    def tojson(x: Any, ensure_ascii: bool = False, indent: int | None = None,
               separators: Any = None, sort_keys: bool = False) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt: str) -> str:
        return datetime.now().strftime(fmt)

    def bounded_range(*args: int) -> range:
        if len(made := range(*args)) > TEMPLATE_RANGE:
            raise SecurityError(f"range() of {len(made):,} numbers; at most {TEMPLATE_RANGE:,}")
        return made

    env = Bounded(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals.update(raise_exception=raise_exception, strftime_now=strftime_now,
                       range=bounded_range)
    out: list[str] = []
    size = 0
    try:
        with _deadline(TEMPLATE_SECONDS):
            for piece in env.from_string(template).generate(
                    messages=list(messages), add_generation_prompt=add_generation_prompt,
                    **dict(specials or {})):
                out.append(piece)
                size += len(piece)
                if size > TEMPLATE_OUTPUT:
                    raise SecurityError(f"more than {TEMPLATE_OUTPUT:,} characters of output")
    except TemplateError as exc:
        raise InputError(f"the chat template failed: {' '.join(str(exc).split())}") from None
    except (RecursionError, MemoryError, ArithmeticError, TypeError, ValueError,
            LookupError, AttributeError) as exc:  # what a template's own code can raise
        raise InputError(f"the chat template failed: {type(exc).__name__}: {exc}") from None
    return "".join(out)


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise TimeoutError in the render past ``seconds`` (a SIGALRM timer: the main thread only;
    elsewhere the output and range limits still hold)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(
            signal, "setitimer"):
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError(f"the chat template rendered for more than {seconds:g} seconds")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except TimeoutError as exc:
        raise InputError(str(exc)) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
