"""OpenAI request bodies: Chat Completions and Responses -> billed input tokens."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tokcost.catalog.schema import ChatOverhead
from tokcost.chat import count_chat
from tokcost.errors import InputError
from tokcost.requestbody import RESPONSES, Body, Context, Tally, require_list
from tokcost.requestbody.images import image_size, openai_image

# gpt-4o's per-message figures, for a model whose own the catalog does not state (≈).
GPT_4O_CHAT = ChatOverhead(per_message=3, per_name=1, reply_priming=3)


@dataclass(frozen=True)
class ToolConstants:
    """The constants of the cookbook's ``num_tokens_for_tools`` ("How to count tokens with
    tiktoken", section 7: https://cookbook.openai.com/examples/how_to_count_tokens_with_tiktoken),
    which it checks against the API's prompt_tokens (gpt-4o: 101 = 101, gpt-4: 105 = 105)."""

    func_init: int
    prop_init: int = 3
    prop_key: int = 3
    enum_init: int = -3
    enum_item: int = 3
    func_end: int = 12


# The cookbook gives constants for these families only; others are counted with gpt-4o's (≈).
TOOL_CONSTANTS = {"gpt-4o": ToolConstants(7), "gpt-4": ToolConstants(10),
                  "gpt-3.5": ToolConstants(10)}


def tools_tokens(functions: list[dict[str, Any]], ctx: Context,
                 k: ToolConstants) -> tuple[int, bool]:
    """The cookbook's rule for function definitions: (tokens, whether the rule covers them all).
    It reads a description without its last '.', and each top-level property's name, type,
    description and enum; a nested object's own properties, a type that is no string or an
    enum item that is no string are beyond it (counted, approximately)."""
    total, covered = 0, True
    for function in functions:
        total += k.func_init + ctx.count(f"{_text(function.get('name'))}:"
                                         f"{_text(function.get('description')).removesuffix('.')}")
        parameters = function.get("parameters")
        properties = parameters.get("properties") if isinstance(parameters, dict) else None
        if not isinstance(properties, dict) or not properties:
            continue
        total += k.prop_init
        for key, prop in properties.items():
            prop = prop if isinstance(prop, dict) else {}
            total += k.prop_key
            kind = prop.get("type", "")
            covered &= isinstance(kind, str) and kind not in ("object", "array")
            enum = prop.get("enum")
            if isinstance(enum, list):
                total += k.enum_init + sum(k.enum_item + ctx.count_json(item) for item in enum)
                covered &= all(isinstance(item, str) for item in enum)
            total += ctx.count(f"{key}:{_text(kind)}:"
                               f"{_text(prop.get('description')).removesuffix('.')}")
    return total + (k.func_end if functions else 0), covered


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else json.dumps(value)


def count_request(body: Body, ctx: Context, tally: Tally) -> int:
    """Count a Chat Completions or Responses body into ``tally``; returns the unknown parts."""
    responses = body.format == RESPONSES
    messages = _responses_messages(body, ctx, tally) if responses else require_list(body,
                                                                                    "messages")
    for i, message in enumerate(messages):
        if "role" not in message:
            raise InputError(f"{body.name}: message {i} has no 'role'")
    # Per message and reply priming: the cookbook's num_tokens_from_messages, with the
    # catalog's figures; Responses publishes no framing of its own (≈ with the same figures).
    template = ctx.model.chat or GPT_4O_CHAT
    counted = count_chat(messages, ctx.tokenizer, template)
    tally.add("message text", counted.content_tokens, exact=ctx.tokenizer.exact)
    tally.add("message overhead", counted.overhead_tokens,
              exact=ctx.model.chat is not None and not responses)
    if not ctx.model.chat:
        tally.note(f"'{ctx.model.id}' states no chat overhead in the catalog: gpt-4o's "
                   "3 per message + 3 reply priming used (≈)")
    if responses:
        tally.note("Responses API: message overhead as Chat Completions' (≈; none published)")
    unknown = sum(_content_parts(m, ctx, tally) for m in messages)
    unknown += _tool_definitions(body, ctx, tally, responses=responses)
    if "response_format" in body.data or "text" in body.data:
        tally.note("a structured-output schema (response_format, text.format) not counted: "
                   "no published rule")
    return unknown


def _responses_messages(body: Body, ctx: Context, tally: Tally) -> list[dict[str, Any]]:
    """A Responses body's instructions and input as Chat Completions messages; function
    calls and their outputs go to the tally directly."""
    messages: list[dict[str, Any]] = []
    instructions, given = body.data.get("instructions"), body.data.get("input")
    if isinstance(instructions, str):
        messages.append({"role": "developer", "content": instructions})
    if isinstance(given, str):
        return [*messages, {"role": "user", "content": given}]
    items = require_list(body, "input")
    for item in items:
        kind = item.get("type", "message")
        if kind == "message":
            messages.append({"role": item.get("role", "user"), "content": item.get("content", "")})
        elif kind in ("function_call", "function_call_output"):
            text = f"{_text(item.get('name'))}{_text(item.get('arguments'))}" \
                if kind == "function_call" else _text(item.get("output"))
            tally.add("tool calls", ctx.count(text), exact=False)
        else:
            tally.note(f"input items of type '{kind}' not counted")
    return messages


def _content_parts(message: dict[str, Any], ctx: Context, tally: Tally) -> int:
    """Images, tool calls and other non-text parts of one message; returns the unknown ones."""
    unknown = 0
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function", {}) if isinstance(call, dict) else {}
        # The template of a call is not published: its name and arguments, as text (≈).
        tally.add("tool calls", ctx.count(_text(function.get("name")))
                  + ctx.count(_text(function.get("arguments"))), exact=False)
    content = message.get("content")
    for part in content if isinstance(content, list) else ():
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("image_url", "input_image"):
            unknown += _image(part, ctx, tally)
        elif kind not in ("text", "input_text", "output_text"):
            unknown += 1
            tally.note(f"content parts of type '{kind}' (audio, files) not counted: no "
                       "published rule")
    return unknown


def _image(part: dict[str, Any], ctx: Context, tally: Tally) -> int:
    """Count one image part (Chat Completions' image_url object or Responses' input_image)."""
    ref: Any = part.get("image_url")
    detail = part.get("detail", "auto")
    if isinstance(ref, dict):
        ref, detail = ref.get("url"), ref.get("detail", detail)
    size = image_size(ref, ctx.base) if isinstance(ref, str) else "given as a file id"
    counted = openai_image(ctx.model.id, size if isinstance(size, tuple) else None, str(detail))
    if counted is None:
        tally.note(f"an image not counted: {size}")
        return 1
    tally.add("images", counted.tokens, exact=counted.exact)
    if not counted.exact:
        tally.note(f"images by {counted.rule}" + (", detail auto counted as high"
                                                  if detail == "auto" else ""))
    return 0


def _tool_definitions(body: Body, ctx: Context, tally: Tally, *, responses: bool) -> int:
    """Count the function definitions into ``tally``; returns those it cannot read."""
    given = [t.get("function") if "function" in t else t
             for t in require_list(body, "tools") if t.get("type", "function") == "function"]
    given += require_list(body, "functions")  # the legacy parameter
    functions: list[dict[str, Any]] = [f for f in given if isinstance(f, dict)]
    unknown = len(given) - len(functions)  # "function": "x"
    if unknown:
        tally.note("a tool whose 'function' is not an object not counted")
    others = [t.get("type") for t in require_list(body, "tools") if t.get("type", "function")
              != "function"]
    if others:
        tally.note(f"built-in tools not counted: {', '.join(map(str, others))}")
    if not functions:
        return unknown
    k = TOOL_CONSTANTS.get(ctx.model.family or "")
    tokens, covered = tools_tokens(functions, ctx, k or TOOL_CONSTANTS["gpt-4o"])
    tally.add("tools", tokens, exact=bool(k) and covered and ctx.tokenizer.exact
              and not responses)
    if not (k and covered):
        tally.note("tools by the cookbook's formula" + ("" if k else " with gpt-4o's constants")
                   + ("" if covered else "; nested or non-string fields beyond it") + " (≈)")
    return unknown
