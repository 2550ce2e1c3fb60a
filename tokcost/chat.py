"""Counting an OpenAI-style chat by the cookbook's rule ("How to count tokens with tiktoken"),
with each model's ``per_message``, ``per_name`` and ``reply_priming`` from the catalog."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from tokcost.adapters.base import Tokenizer
from tokcost.counting import STDIN, InputText, read_input
from tokcost.errors import InputError, UsageError, arg
from tokcost.limits import TooNested, loads_json

if TYPE_CHECKING:
    from tokcost.catalog.schema import ChatOverhead


@dataclass(frozen=True)
class ChatCount:
    messages: int
    content_tokens: int  # tokens of the fields' text (role, content, name)
    overhead_tokens: int  # tokens the template adds
    skipped_parts: int  # non-text parts (images, audio, tool calls) not counted

    @property
    def total(self) -> int:
        return self.content_tokens + self.overhead_tokens


def load_messages(path: str, *,
                  stdin: BinaryIO | None = None) -> tuple[list[dict[str, Any]], InputText]:
    """Messages from a JSON file (``-``: ``stdin``), and the input as read."""
    if path != STDIN:
        if path and Path(path).is_dir():  # Path("") is the current folder
            raise UsageError(f"{path} is a folder; {arg('chat', 'PATH')} takes a JSON file of "
                             "messages", param="chat")
        if not path or not Path(path).exists():
            raise UsageError(f"{arg('chat')} file not found: {path or repr(path)}", param="chat")
    read = read_input(path, stdin=stdin)
    return parse_messages(read.text, read.name), read


def parse_messages(raw: str, name: str) -> list[dict[str, Any]]:
    """Messages from JSON text: a list, or ``{"messages": [...]}`` (``name``: the source)."""
    try:
        data = loads_json(raw.removeprefix("\ufeff"))  # a BOM is not JSON, but editors write it
    except json.JSONDecodeError as exc:
        raise InputError(f"{name}:{exc.lineno}: not JSON ({exc.msg}); expected a list of "
                         '{"role": ..., "content": ...} messages') from None
    except TooNested as exc:
        raise InputError(f"{name}: not read: {exc}") from None
    if isinstance(data, dict) and "messages" in data:
        data = data["messages"]
    if not isinstance(data, list) or not all(isinstance(m, dict) for m in data):
        raise InputError(f"{name}: expected a JSON list of messages (objects with 'role' and "
                         "'content')")
    for i, message in enumerate(data):
        if "role" not in message:
            raise InputError(f"{name}: message {i} has no 'role'")
        if "content" not in message and "tool_calls" not in message:
            raise InputError(f"{name}: message {i} has no 'content'")
    return data


def count_chat(messages: list[dict[str, Any]], tokenizer: Tokenizer,
               template: ChatOverhead) -> ChatCount:
    """Tokens a chat request takes; parts other than text (images) go to ``skipped_parts``."""
    content = overhead = skipped = 0
    for message in messages:
        overhead += template.per_message
        for key, value in message.items():
            if isinstance(value, str):
                content += tokenizer.count(value)
            elif key == "tool_calls" and isinstance(value, list):
                skipped += len(value)  # their JSON is templated per model: not counted
            elif key == "content" and isinstance(value, list):
                for part in value:
                    if isinstance(part, dict) and isinstance(part.get("text"), str):
                        content += tokenizer.count(part["text"])
                    else:
                        skipped += 1
            if key == "name":
                overhead += template.per_name
    overhead += template.reply_priming
    return ChatCount(len(messages), content, overhead, skipped)
