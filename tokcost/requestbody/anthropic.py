"""Anthropic Messages bodies -> billed input tokens. Claude's tokenizer is not public: text,
tool definitions and images are approximate (≈); the tool-use system prompt is exact."""

from __future__ import annotations

from typing import Any

from tokcost.errors import InputError
from tokcost.requestbody import Body, Context, Tally, require_list
from tokcost.requestbody.images import anthropic_image, decoded_size, image_size

# "Tool use system prompt token count" per model and tool_choice, (auto or none, any or
# tool), "added to your normal input and output tokens": the pricing table of
# https://platform.claude.com/docs/en/agents-and-tools/tool-use/overview#pricing
# It applies when at least one tool is given; without tools, none adds 0.
TOOL_PROMPT: dict[str, tuple[int, int]] = {
    "claude-opus-4": (346, 313), "claude-sonnet-4": (346, 313), "claude-haiku-4-5": (346, 313),
    "claude-3-7-sonnet": (346, 313), "claude-3-5-sonnet-20241022": (346, 313),
    "claude-3-5-sonnet-20240620": (294, 261), "claude-3-5-haiku": (264, 340),
    "claude-3-opus": (530, 281), "claude-3-sonnet": (159, 235), "claude-3-haiku": (264, 340)}
NEWEST = (346, 313)  # an unlisted model gets the newest models' row (≈)


def tool_prompt(model: str, choice: str) -> tuple[int, bool]:
    """(tokens, listed) of the tool-use system prompt for ``model`` and a tool_choice type."""
    key = next((k for k in sorted(TOOL_PROMPT, key=len, reverse=True) if model.startswith(k)),
               None)
    auto, forced = TOOL_PROMPT[key] if key else NEWEST
    return (forced if choice in ("any", "tool") else auto), key is not None


def count_messages(body: Body, ctx: Context, tally: Tally) -> int:
    """Count an Anthropic Messages body into ``tally``; returns the unknown parts."""
    exact = ctx.tokenizer.exact  # False for Claude: a proxy tokenizer
    system = body.data.get("system")
    unknown = _blocks(system, ctx, tally) if isinstance(system, list) else 0
    if isinstance(system, str):
        tally.add("message text", ctx.count(system), exact=exact)
    for i, message in enumerate(require_list(body, "messages")):
        if "role" not in message or "content" not in message:
            raise InputError(f"{body.name}: message {i} needs 'role' and 'content'")
        content = message["content"]
        if isinstance(content, str):
            tally.add("message text", ctx.count(content), exact=exact)
        else:
            unknown += _blocks(content, ctx, tally)
    tally.note("Anthropic publishes no per-message overhead: none added")
    tools = require_list(body, "tools")
    custom = [t for t in tools if "input_schema" in t]
    if len(custom) < len(tools):
        tally.note("server tools (web search, code execution...) not counted")
    for tool in custom:  # how a definition is rendered is not published: its JSON text (≈)
        tally.add("tools", ctx.count_json({k: tool.get(k) for k in
                                           ("name", "description", "input_schema")}), exact=False)
    choice = body.data.get("tool_choice")
    choice_type = choice.get("type", "auto") if isinstance(choice, dict) else "auto"
    if tools:
        tokens, listed = tool_prompt(ctx.model.id, str(choice_type))
        tally.add("tool use system prompt", tokens, exact=listed)
        if not listed:
            tally.note(f"'{ctx.model.id}' is not in Anthropic's tool-use table: the newest "
                       "models' prompt size used (≈)")
    return unknown


def _blocks(blocks: Any, ctx: Context, tally: Tally) -> int:
    """Content blocks (text, image, document, tool_use, tool_result); returns unknown ones."""
    unknown = 0
    for block in blocks if isinstance(blocks, list) else ():
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            tally.add("message text", ctx.count(str(block.get("text", ""))),
                      exact=ctx.tokenizer.exact)
        elif kind == "image":
            unknown += _image(block.get("source"), ctx, tally)
        elif kind == "document":
            unknown += _document(block.get("source"), ctx, tally)
        elif kind == "tool_use":
            tally.add("tool calls", ctx.count_json(block.get("name"))
                      + ctx.count_json(block.get("input")), exact=False)
        elif kind == "tool_result":
            content = block.get("content", "")
            if isinstance(content, str):
                tally.add("tool calls", ctx.count(content), exact=False)
            elif isinstance(content, list):  # one level down only: text and images
                unknown += _blocks([b for b in content if isinstance(b, dict)
                                    and b.get("type") != "tool_result"], ctx, tally)
        else:
            unknown += 1
            tally.note(f"content blocks of type '{kind}' not counted")
    return unknown


def _image(source: Any, ctx: Context, tally: Tally) -> int:
    source = source if isinstance(source, dict) else {}
    kind = source.get("type")
    size: tuple[int, int] | str = "given as a file id"
    if kind == "base64":
        size = decoded_size(str(source.get("data", "")))
    elif kind == "url":
        size = image_size(str(source.get("url", "")), ctx.base)
    if isinstance(size, str):
        tally.note(f"an image not counted: {size}")
        return 1
    tally.add("images", anthropic_image(*size).tokens, exact=False)
    return 0


def _document(source: Any, ctx: Context, tally: Tally) -> int:
    source = source if isinstance(source, dict) else {}
    if source.get("type") == "text":
        tally.add("documents", ctx.count(str(source.get("data", ""))), exact=False)
        return 0
    if source.get("type") == "content":
        return _blocks(source.get("content"), ctx, tally)
    # A PDF is billed as each page's text plus an image of it: its pages are not read here.
    tally.note("PDF documents not counted: each page is billed as its text and an image")
    return 1
