"""``count --request`` / ``price --request``: a request body billed by each provider's
published rules, pinned with the providers' own worked examples; the OpenAI tool formula
against a plain re-statement of the cookbook's on generated schemas; hostile bodies."""

from __future__ import annotations

import base64
import io
import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import tokcost
from tokcost.cli.app import app
from tokcost.errors import TokcostError
from tokcost.requestbody import ANTHROPIC, CHAT_COMPLETIONS, RESPONSES, count_body, load_body
from tokcost.requestbody.anthropic import tool_prompt
from tokcost.requestbody.images import anthropic_image, openai_patches, openai_tiles
from tokcost.tokenizers import model_choice, open_catalog

Image = pytest.importorskip("PIL.Image")
runner = CliRunner()
O200K = tokcost.get_tokenizer("o200k_base")

# The cookbook's example request ("How to count tokens with tiktoken", section 7:
# https://cookbook.openai.com/examples/how_to_count_tokens_with_tiktoken).
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_current_weather", "description": "Get the current weather in a given location",
    "parameters": {"type": "object", "properties": {
        "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
        "unit": {"type": "string", "description": "The unit of temperature to return",
                 "enum": ["celsius", "fahrenheit"]}}, "required": ["location"]}}}
WEATHER_MESSAGES = [
    {"role": "system",
     "content": "You are a helpful assistant that can answer to questions about the weather."},
    {"role": "user", "content": "What's the weather like in San Francisco?"}]


def _write(path: Path, body: dict[str, Any]) -> str:
    path.write_text(json.dumps(body), encoding="utf-8")
    return str(path)


def _count(path: str, model: str) -> Any:
    entry = open_catalog().resolve(model)
    return count_body(load_body(path), entry, model_choice(entry).load())


def _png(path: Path, width: int, height: int) -> Path:
    Image.new("1", (width, height)).save(path)  # 1 bit per pixel: a 4096 x 8192 PNG is small
    return path


def _data_url(width: int, height: int) -> str:
    buffer = io.BytesIO()
    Image.new("1", (width, height)).save(buffer, "PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


@pytest.mark.parametrize(("model", "published"), [
    # The notebook's printed output: "101 prompt tokens counted by the OpenAI API" for gpt-4o
    # and gpt-4o-mini, 105 for gpt-4 and gpt-3.5-turbo.
    pytest.param("gpt-4o", 101, id="gpt-4o"), pytest.param("gpt-4o-mini", 101, id="gpt-4o-mini"),
    pytest.param("gpt-4", 105, id="gpt-4"), pytest.param("gpt-3.5-turbo", 105, id="gpt-3.5"),
])
def test_the_cookbook_tool_example_counts_what_the_api_billed(tmp_path: Path, model: str,
                                                              published: int) -> None:
    path = _write(tmp_path / "body.json", {"model": model, "messages": WEATHER_MESSAGES,
                                           "tools": [WEATHER_TOOL]})
    counted = _count(path, model)
    assert counted.format == CHAT_COMPLETIONS
    assert (counted.total, counted.exact) == (published, True)


# OpenAI "Images and vision" > "Calculating costs", its worked examples:
# https://platform.openai.com/docs/guides/images-vision#calculating-costs
@pytest.mark.parametrize(("size", "detail", "tokens"), [
    pytest.param((1024, 1024), "high", 765, id="1024-square-high"),
    pytest.param((2048, 4096), "high", 1105, id="2048x4096-high"),
    pytest.param((4096, 8192), "low", 85, id="4096x8192-low"),
])
def test_gpt_4o_images_cost_what_the_vision_guide_says(tmp_path: Path, size: tuple[int, int],
                                                       detail: str, tokens: int) -> None:
    _png(tmp_path / "img.png", *size)
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "img.png", "detail": detail}}]}]}
    counted = _count(_write(tmp_path / "body.json", body), "gpt-4o")
    images = [p for p in counted.parts if p.kind == "images"]
    assert [(p.tokens, p.exact) for p in images] == [(tokens, True)]


@pytest.mark.parametrize(("size", "patches"), [
    pytest.param((1024, 1024), 1024, id="1024-square"),  # "A 1024 x 1024 image is 1024 tokens"
    pytest.param((1800, 2400), 1452, id="1800x2400"),  # "A 1800 x 2400 image is 1452 tokens"
])
def test_patch_models_follow_the_vision_guide(tmp_path: Path, size: tuple[int, int],
                                              patches: int) -> None:
    assert openai_patches(*size) == patches
    body = {"model": "gpt-4.1-mini", "input": [{"role": "user", "content": [
        {"type": "input_image", "image_url": _data_url(*size)}]}]}
    counted = _count(_write(tmp_path / "body.json", body), "gpt-4.1-mini")
    assert counted.format == RESPONSES
    # "For gpt-4.1-mini we multiply image tokens by 1.62"
    assert [p.tokens for p in counted.parts if p.kind == "images"] == [-(-patches * 162 // 100)]


@given(st.integers(1, 20_000), st.integers(1, 20_000))
def test_patches_never_pass_the_cap_and_tiles_fit_the_box(width: int, height: int) -> None:
    _no_image_is_free_nor_past_the_caps(width, height)


@pytest.mark.parametrize("size", [(20, 100_000), (100_000, 31), (1, 3000), (10, 2_000_000)],
                         ids=lambda s: f"{s[0]}x{s[1]}")
def test_a_thin_image_still_costs_tokens(size: tuple[int, int]) -> None:
    """Scaled to the caps, a side narrower than one patch or pixel once rounded to 0: 0 tokens."""
    _no_image_is_free_nor_past_the_caps(*size)
    assert anthropic_image(*size).tokens >= 1


def _no_image_is_free_nor_past_the_caps(width: int, height: int) -> None:
    assert 1 <= openai_patches(width, height) <= 1536
    assert 1 <= openai_tiles(width, height) <= 8  # 768 x 2048 at most: 2 x 4 tiles


# Anthropic "Vision" > "Calculate image costs", its table of examples (~54, ~1334, ~1590):
# https://platform.claude.com/docs/en/build-with-claude/vision#calculate-image-costs
@pytest.mark.parametrize(("side", "tokens"), [(200, 54), (1000, 1334), (1092, 1590)])
def test_claude_images_cost_what_the_vision_page_says(tmp_path: Path, side: int,
                                                      tokens: int) -> None:
    data = _data_url(side, side).split(",", 1)[1]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": [{"role": "user", "content": [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}]}]}
    counted = _count(_write(tmp_path / "body.json", body), "claude-sonnet-4-5")
    assert counted.format == ANTHROPIC
    assert [(p.tokens, p.exact) for p in counted.parts if p.kind == "images"] == [(tokens, False)]


@given(st.integers(1, 30_000), st.integers(1, 30_000))
def test_claude_images_are_scaled_to_the_long_edge_and_the_token_cap(width: int,
                                                                     height: int) -> None:
    tokens = anthropic_image(width, height).tokens
    assert tokens <= 1600
    if max(width, height) <= 1568 and width * height <= 1600 * 750:
        assert tokens == -(-width * height // 750)  # no resize below both limits


# Anthropic's tool-use pricing table ("Tool use system prompt token count"):
# https://platform.claude.com/docs/en/agents-and-tools/tool-use/overview#pricing
@pytest.mark.parametrize(("model", "choice", "tokens"), [
    ("claude-sonnet-4-5", "auto", 346), ("claude-sonnet-4-5", "none", 346),
    ("claude-opus-4-1", "any", 313), ("claude-haiku-4-5", "tool", 313),
    ("claude-3-5-haiku-20241022", "auto", 264), ("claude-3-5-haiku-20241022", "any", 340),
    ("claude-3-opus-20240229", "auto", 530), ("claude-3-sonnet-20240229", "tool", 235),
    ("claude-3-5-sonnet-20240620", "auto", 294),
])
def test_the_tool_use_system_prompt_is_the_published_one(model: str, choice: str,
                                                         tokens: int) -> None:
    assert tool_prompt(model, choice) == (tokens, True)


def test_a_claude_body_parts_exact_and_approximate(tmp_path: Path) -> None:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 10, "system": "Be terse.",
            "tool_choice": {"type": "any"},
            "tools": [{"name": "f", "description": "d", "input_schema": {"type": "object"}}],
            "messages": [{"role": "user", "content": "hi"}]}
    counted = _count(_write(tmp_path / "body.json", body), "claude-sonnet-4-5")
    assert counted.exact_tokens == 313  # the tool-use prompt alone; text by a proxy
    assert counted.approximate_tokens == counted.total - 313 > 0 and not counted.exact
    body["tools"], body["tool_choice"] = [], {"type": "none"}  # no tools: no tool prompt
    assert _count(_write(tmp_path / "body.json", body), "claude-sonnet-4-5").exact_tokens == 0


# The cookbook's num_tokens_for_tools, re-stated plainly (gpt-4o's constants).
def cookbook_tools(functions: list[dict[str, Any]]) -> int:
    def desc(value: str) -> str:
        return value[:-1] if value.endswith(".") else value

    total = 0
    for function in functions:
        total += 7 + len(O200K.encode(function["name"] + ":" + desc(function.get("description", ""))))
        properties = function.get("parameters", {}).get("properties", {})
        if len(properties) > 0:
            total += 3
            for key, prop in properties.items():
                total += 3
                if "enum" in prop:
                    total += -3
                    for item in prop["enum"]:
                        total += 3 + len(O200K.encode(item))
                line = f"{key}:{prop.get('type', '')}:{desc(prop.get('description', ''))}"
                total += len(O200K.encode(line))
    return total + 12 if functions else total


_names = st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True)
_texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
_schema = st.recursive(
    st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "number", "boolean"])},
                          optional={"description": _texts, "enum": st.lists(_texts, max_size=4)}),
    lambda inner: st.fixed_dictionaries(
        {"type": st.just("object"), "properties": st.dictionaries(_names, inner, max_size=3)},
        optional={"description": _texts, "required": st.lists(_names, max_size=2)}),
    max_leaves=6)
_function = st.fixed_dictionaries(
    {"name": _names}, optional={"description": _texts, "parameters": st.fixed_dictionaries(
        {"type": st.just("object"), "properties": st.dictionaries(_names, _schema, max_size=4)})})


@settings(max_examples=60, deadline=None)
@given(st.lists(_function, max_size=3))
def test_tool_definitions_follow_the_cookbook_formula(tmp_path_factory: pytest.TempPathFactory,
                                                      functions: list[dict[str, Any]]) -> None:
    path = tmp_path_factory.mktemp("tools") / "body.json"
    tools = [{"type": "function", "function": f} for f in functions]
    counted = _count(_write(path, {"model": "gpt-4o", "messages": [], "tools": tools}), "gpt-4o")
    assert sum(p.tokens for p in counted.parts if p.kind == "tools") == cookbook_tools(functions)


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.sampled_from(["type", "role", "content", "text",
                                                        "image_url", "url", "source", "data",
                                                        "function", "name", "parameters",
                                                        "properties", "enum", "tool_calls",
                                                        "input_schema"]), inner, max_size=4),
                     max_leaves=12)
_bodies = st.fixed_dictionaries({"model": st.sampled_from(["gpt-4o", "claude-sonnet-4-5"])},
                                optional={k: _json for k in ("messages", "input", "system",
                                                             "tools", "tool_choice",
                                                             "instructions", "functions")})


@settings(max_examples=150, deadline=None)
@given(_bodies)
def test_any_json_in_any_field_is_counted_or_one_error(tmp_path_factory: pytest.TempPathFactory,
                                                       body: dict[str, Any]) -> None:
    path = _write(tmp_path_factory.mktemp("body") / "body.json", body)
    try:
        counted = _count(path, body["model"])
    except TokcostError as err:
        assert "\n" not in str(err)
    else:
        assert counted.total >= 0


def test_an_image_that_cannot_be_read_offline_is_named_not_guessed(tmp_path: Path) -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}]}
    counted = _count(_write(tmp_path / "body.json", body), "gpt-4o")
    assert counted.unknown == 1 and not counted.exact
    assert any("remote URL" in n for n in counted.notes)
    body["messages"][0]["content"][0]["image_url"]["detail"] = "low"  # low: no size needed
    assert _count(_write(tmp_path / "body.json", body), "gpt-4o").exact


def _png_header(width: int, height: int) -> bytes:
    """A PNG whose header claims ``width`` x ``height`` (an empty IDAT: no pixels follow)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b""))
            + chunk(b"IEND", b""))


def test_a_tool_that_is_no_object_is_not_counted(tmp_path: Path) -> None:
    body = {"model": "gpt-4o", "messages": WEATHER_MESSAGES,
            "tools": [{"type": "function", "function": "get_weather"}, WEATHER_TOOL]}
    counted = _count(_write(tmp_path / "body.json", body), "gpt-4o")
    assert counted.unknown == 1 and not counted.exact and counted.total == 101
    assert any("'function' is not an object" in n for n in counted.notes)


@pytest.mark.parametrize(("body", "message"), [
    pytest.param("[" * 100_000, "nested deeper than", id="deep"),
    pytest.param('{"messages": 3}', "'messages' must be a list of objects", id="not-a-list"),
    pytest.param('"x"', "expected a JSON object (a request body), got str", id="not-an-object"),
    pytest.param('{"a": 1}', "not a request body", id="no-messages"),
    pytest.param("{", "not JSON", id="malformed"),
    pytest.param('{"messages": [{"content": "x"}]}', "message 0 has no 'role'", id="no-role"),
])
def test_a_malformed_body_is_one_line(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "body.json"
    path.write_text(body, encoding="utf-8")
    result = runner.invoke(app, ["count", "--request", str(path)])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and message in result.stderr


def test_a_huge_body_and_an_image_bomb_are_refused(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bomb.png").write_bytes(_png_header(60_000, 60_000))
    path = _write(tmp_path / "body.json", {"model": "gpt-4o", "messages": [{"role": "user",
        "content": [{"type": "image_url", "image_url": {"url": "bomb.png"}}]}]})
    counted = _count(path, "gpt-4o")
    assert counted.unknown == 1 and any("bomb guard" in n for n in counted.notes)
    monkeypatch.setattr("tokcost.requestbody.MAX_REQUEST_BYTES", 10)
    result = runner.invoke(app, ["count", "--request", path])
    assert result.exit_code == 1 and "over 0 MiB" in result.stderr


def test_the_cli_counts_and_prices_a_request(tmp_path: Path) -> None:
    path = _write(tmp_path / "body.json", {"model": "gpt-4o", "messages": WEATHER_MESSAGES,
                                           "tools": [WEATHER_TOOL]})
    shown = json.loads(runner.invoke(app, ["count", "--request", path, "--json"]).stdout)
    model = shown["models"][0]
    assert (model["id"], model["total"], model["exact_tokens"], model["approximate_tokens"]) == \
        ("gpt-4o", 101, 101, 0)
    priced = json.loads(runner.invoke(app, ["price", "-m", "gpt-4o", "--request", path,
                                            "--json"]).stdout)
    assert priced["lines"][0]["tokens"] == 101 and priced["request"]["total"] == 101
    table = runner.invoke(app, ["count", "--request", path, "-m", "claude-sonnet-4-5"]).stdout
    assert "≈101" in table
    # part names read left to right; the window share has a column of its own
    assert table.splitlines()[0].split() == ["model", "part", "tokens", "window"]
    assert "claude-sonnet-4-5  message text" in table


def test_another_providers_body_is_said(tmp_path: Path) -> None:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 5, "system": "x",
            "messages": [{"role": "user", "content": "hi"}]}
    path = _write(tmp_path / "body.json", body)
    assert "gpt-4o is openai's; the body, written for anthropic.messages, is counted by " \
        "anthropic's rules" in _count(path, "gpt-4o").notes
    assert not any(" is anthropic's" in n for n in _count(path, "claude-sonnet-4-5").notes)


def test_price_takes_the_model_the_body_names(tmp_path: Path) -> None:
    """As count --request does: no -m prices the body's "model"; -m overrides it; a body
    naming none asks for -m."""
    path = _write(tmp_path / "body.json", {"model": "gpt-4o", "messages": WEATHER_MESSAGES})
    priced = json.loads(runner.invoke(app, ["price", "--request", path, "--json"]).stdout)
    assert priced["model"] == "gpt-4o" and priced["request"]["total"] > 0
    other = runner.invoke(app, ["price", "--request", path, "-m", "gpt-4o-mini", "--json"])
    assert json.loads(other.stdout)["model"] == "gpt-4o-mini"
    bare = runner.invoke(app, ["price", "--request", _write(tmp_path / "bare.json",
                                                            {"messages": WEATHER_MESSAGES})])
    assert bare.exit_code == 2 and "the request body names none" in bare.stderr


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["--request", "b.json", "a.txt"], "--request counts one request body, not "
                 "files too", id="files"),
    pytest.param(["--request", "b.json", "--chat", "c.json"], "--chat and --request cannot be "
                 "combined", id="chat"),
    pytest.param(["--request", "b.json", "-t", "cl100k_base"], "give --model ID, not "
                 "--tokenizer", id="tokenizer"),
])
def test_request_conflicts_are_usage_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            args: list[str], message: str) -> None:
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "b.json", {"messages": []})
    result = runner.invoke(app, ["count", *args])
    assert result.exit_code == 2 and message in result.stderr


def test_without_pillow_an_image_asks_for_it(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": _data_url(2, 2)}}]}]}
    monkeypatch.setitem(sys.modules, "PIL", None)  # import PIL raises ImportError
    result = runner.invoke(app, ["count", "--request", _write(tmp_path / "b.json", body)])
    assert result.exit_code == 1
    assert result.stderr == ("error: counting an image's tokens needs the 'pillow' package: "
                             "pip install 'pillow>=10.1'\n")


def test_pillow_is_imported_only_for_an_image() -> None:
    code = ("import sys, tokcost.requestbody.openai, tokcost.requestbody.anthropic; "
            "print('PIL' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"
