"""A checkpoint's chat template, rendered as transformers' ``apply_chat_template`` does
(src/transformers/utils/chat_template_utils.py: a sandboxed jinja2 environment, the special
tokens of tokenizer_config.json as variables)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from tokcost.errors import InputError, MissingDependency, UsageError, arg

_SPECIALS = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token",
             "mask_token")


def read_template(folder: Path) -> tuple[str, dict[str, str]]:
    """The folder's chat template (tokenizer_config.json's ``default``, or
    chat_template.jinja) and its special tokens' texts."""
    config_file = folder / "tokenizer_config.json"
    config: dict[str, Any] = {}
    if config_file.is_file():
        try:
            config = json.loads(config_file.read_text(encoding="utf-8"))
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
    """``messages`` through ``template``, as transformers renders them."""
    try:
        from jinja2 import TemplateError
        from jinja2.ext import loopcontrols
        from jinja2.sandbox import ImmutableSandboxedEnvironment
    except ImportError:
        raise MissingDependency("jinja2", "chat", "applying a chat template") from None

    def raise_exception(message: str) -> None:
        raise TemplateError(message)

    def tojson(x: Any, ensure_ascii: bool = False, indent: int | None = None,
               separators: Any = None, sort_keys: bool = False) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    def strftime_now(fmt: str) -> str:
        return datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals.update(raise_exception=raise_exception, strftime_now=strftime_now)
    try:
        return env.from_string(template).render(
            messages=list(messages), add_generation_prompt=add_generation_prompt,
            **dict(specials or {}))
    except TemplateError as exc:
        raise InputError(f"the chat template failed: {exc}") from None
