"""Pricing: hand-computed cases for cache, tiers, batch and reasoning; the price CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import tokcost
from tokcost.catalog import Catalog, ModelEntry, Pricing, load_catalog
from tokcost.cli.app import app
from tokcost.errors import UsageError
from tokcost.pricing import NoPrice, estimate_cost

runner = CliRunner()
D = Decimal

# The hand-computed cases price against this fixture, not the live models.yaml.
PRICES = Path(__file__).parent / "fixtures" / "prices.yaml"


@pytest.fixture(scope="session")
def prices() -> Catalog:
    return load_catalog(PRICES)


@pytest.fixture
def custom(prices: Catalog) -> Catalog:
    return prices


def model(model_id: str):  # type: ignore[no-untyped-def]
    return load_catalog(PRICES).resolve(model_id)


def shipped(model_id: str):  # type: ignore[no-untyped-def]
    return load_catalog().resolve(model_id)


def price(*args: str) -> Any:
    """``tokcost price ARGS`` on the fixture catalog."""
    return runner.invoke(app, ["price", *args, "--catalog", str(PRICES)])


def test_gpt4o_cached_hand_computed() -> None:
    # 600 x 2.50 + 400 x 1.25 + 200 x 10.00 = 1500 + 500 + 2000 micro-dollars
    cost = estimate_cost(model("gpt-4o"), input_tokens=1000, cached_tokens=400, output_tokens=200)
    assert cost.total == D("0.004")
    assert [(line.kind, line.tokens) for line in cost.lines] == [
        ("input", 600),
        ("cached input", 400),
        ("output", 200),
    ]


def test_requests_multiply() -> None:
    one = estimate_cost(model("gpt-4o-mini"), input_tokens=1234, output_tokens=567)
    many = estimate_cost(model("gpt-4o-mini"), input_tokens=1234, output_tokens=567, requests=1000)
    assert many.total == one.total * 1000
    assert many.per_request == one.total
    # 1,234 x 0.15 + 567 x 0.60 = 185.1 + 340.2 = 525.3 micro-dollars per request
    assert one.total == D("0.0005253")


def test_long_context_tier_is_a_cliff_for_all_tokens() -> None:
    sonnet = model("claude-sonnet-4-5")
    at = estimate_cost(sonnet, input_tokens=200_000, output_tokens=1000)
    above = estimate_cost(sonnet, input_tokens=200_001, output_tokens=1000)
    assert at.tier is None
    assert at.total == D("0.6") + D("0.015")  # 200k x $3 + 1k x $15
    assert above.tier is not None and above.tier.applies_to == "all"
    # every token at the tier: 200,001 x $6 + 1,000 x $22.50
    assert above.total == D("1.200006") + D("0.0225")


def test_tier_with_cache_and_batch_hand_computed() -> None:
    cost = estimate_cost(
        model("claude-sonnet-4-5"),
        input_tokens=300_000,
        cached_tokens=100_000,
        cache_write_tokens=50_000,
        output_tokens=2_000,
        batch=True,
        requests=3,
    )
    # per request at tier rates, halved (Anthropic's batch also halves cache rates):
    # 150k x 3.00 + 100k x 0.30 + 50k x 3.75 + 2k x 11.25 = 0.45 + 0.03 + 0.1875 + 0.0225
    assert cost.per_request == D("0.69")
    assert cost.total == D("2.07")


def test_openai_batch_keeps_cached_rate() -> None:
    cost = estimate_cost(
        model("gpt-4o"), input_tokens=1000, cached_tokens=1000, output_tokens=0, batch=True
    )
    assert cost.total == D("0.00125")  # 1000 x $1.25, not halved
    assert any("does not apply to cache" in n for n in cost.notes)


def test_excess_tier_bills_only_tokens_above(custom) -> None:  # type: ignore[no-untyped-def]
    cost = estimate_cost(custom.resolve("excess-model"), input_tokens=1500, output_tokens=100)
    # 1000 x $1 + 500 x $3 + 100 x $4
    assert cost.total == D("0.001") + D("0.0015") + D("0.0004")


def test_reasoning_priced_apart_or_as_output(custom) -> None:  # type: ignore[no-untyped-def]
    apart = estimate_cost(custom.resolve("excess-model"), input_tokens=0, reasoning_tokens=1000)
    assert apart.total == D("0.002")
    o3 = estimate_cost(model("o3"), input_tokens=0, output_tokens=100, reasoning_tokens=900)
    assert o3.total == D("0.008")  # 1000 x $8 output rate
    assert "reasoning tokens billed as output" in o3.notes


def test_no_cached_price_bills_as_input(custom) -> None:  # type: ignore[no-untyped-def]
    cost = estimate_cost(custom.resolve("nocache"), input_tokens=1000, cached_tokens=500)
    assert cost.total == D("0.002")


def test_model_without_price_is_an_error_not_zero(custom) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(NoPrice, match="has no price"):
        estimate_cost(custom.resolve("free-weights"), input_tokens=10)
    with pytest.raises(NoPrice, match="no batch price"):
        estimate_cost(custom.resolve("nocache"), input_tokens=10, batch=True)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"input_tokens": -1}, "must not be negative", id="negative"),
        pytest.param({"input_tokens": 10, "cached_tokens": 11}, "exceed", id="cached>input"),
        pytest.param({"input_tokens": 10, "requests": 0}, "requests must be a positive", id="zero-requests"),
    ],
)
def test_bad_counts(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        estimate_cost(model("gpt-4o"), **kwargs)


def test_every_priced_entry_prices() -> None:
    # The shipped catalog parses and every price in it prices (its live numbers unpinned).
    for entry in load_catalog().models:
        if entry.pricing is not None:
            # 50k prompt tokens: below every long-context threshold
            cost = estimate_cost(entry, input_tokens=50_000, output_tokens=1_000_000)
            assert cost.tier is None
            assert cost.total == entry.pricing.input / 20 + entry.pricing.output


# --- batch with cache tokens the model does not price (issue 12, item 5) --------------

# gpt-4 as the shipped catalog prices it (2026-10-14): no cached-input or cache-write price,
# a 50% batch discount; built here so the hand-computed figures do not move with sync-prices.
GPT4 = ModelEntry(
    id="gpt-4", context_window=8192, max_output_tokens=8192,
    pricing=Pricing(input=D(30), output=D(60), batch_discount=D("0.5")),
)


def test_batch_discounts_cached_tokens_billed_as_input() -> None:
    """gpt-4, batch: 100k prompt of which 50k cached, 10k output.

    gpt-4 has no cached-input price, so the 50k cached tokens are ordinary input and take
    the batch discount like the other 50k: 100,000 x $15/M + 10,000 x $30/M = $1.50 + $0.30
    = $1.80. (Before the fix the cached half stayed at $30/M: $0.75 + $1.50 + $0.30 = $2.55.)
    """
    cost = estimate_cost(GPT4, input_tokens=100_000, cached_tokens=50_000,
                         output_tokens=10_000, batch=True)
    assert cost.total == D("1.80")
    assert [(line.kind, line.tokens, line.usd_per_million) for line in cost.lines] == [
        ("input", 50_000, D(15)), ("cached input", 50_000, D(15)), ("output", 10_000, D(30)),
    ]
    assert "no cached-input price: cached tokens billed as input" in cost.notes
    assert not any("does not apply to cache" in n for n in cost.notes)


def test_batch_discounts_cache_writes_billed_as_input() -> None:
    """gpt-4o, batch: 10k prompt = 4k fresh + 4k cached + 2k written, 1k output.

    OpenAI keeps its cached-input price out of the batch discount, but gpt-4o has no
    cache-write price, so writes are input and halved: 4,000 x $1.25 + 4,000 x $1.25
    + 2,000 x $1.25 + 1,000 x $5 = $0.005 + $0.005 + $0.0025 + $0.005 = $0.0175.
    """
    cost = estimate_cost(model("gpt-4o"), input_tokens=10_000, cached_tokens=4_000,
                         cache_write_tokens=2_000, output_tokens=1_000, batch=True)
    assert cost.total == D("0.0175")
    rates = {line.kind: line.usd_per_million for line in cost.lines}
    assert rates == {"input": D("1.25"), "cached input": D("1.25"), "cache write": D("1.25"),
                     "output": D(5)}
    assert any("does not apply to cache" in n for n in cost.notes)  # its own cached price


@settings(max_examples=60, deadline=None)
@given(prompt=st.integers(0, 10**7), share=st.fractions(0, 1), written=st.fractions(0, 1),
       output=st.integers(0, 10**6), batch=st.booleans())
def test_unpriced_cache_tokens_cost_what_input_costs(
    prompt: int, share: object, written: object, output: int, batch: bool
) -> None:
    # A model without cache prices bills a cached or written prompt exactly as the same
    # prompt sent plainly, batch or not.
    cached = int(prompt * share)  # type: ignore[operator]
    write = int((prompt - cached) * written)  # type: ignore[operator]
    split = estimate_cost(GPT4, input_tokens=prompt, cached_tokens=cached,
                          cache_write_tokens=write, output_tokens=output, batch=batch)
    plain = estimate_cost(GPT4, input_tokens=prompt, output_tokens=output, batch=batch)
    assert split.total == plain.total


def test_cli_batch_gpt4_cached(tmp_path: Path) -> None:
    cat = tmp_path / "gpt4.yaml"
    cat.write_text(LIMITS, encoding="utf-8")
    result = runner.invoke(app, ["price", "-m", "gpt-4", "-i", "100k", "--cached-tokens", "50k",
                                 "--output-tokens", "10k", "--batch-api", "--catalog", str(cat)])
    assert result.exit_code == 0, result.output
    assert "total: $1.80" in result.stdout


# --- limits: prompt past the context window, output past the maximum ------------------

LIMITS = """\
version: 1
models:
  - id: gpt-4
    tokenizer: tiktoken:cl100k_base
    context_window: 8192
    max_output_tokens: 8192
    pricing: {input: 30.00, output: 60.00, batch_discount: 0.5}
  - id: long-tier
    context_window: 200000
    max_output_tokens: 64000
    pricing:
      input: 3.00
      output: 15.00
      tiers: [{above_input_tokens: 200000, applies_to: all, input: 6.00, output: 22.50}]
  - id: no-limits
    pricing: {input: 1.00, output: 1.00}
  - id: tiny-window
    tokenizer: tiktoken:o200k_base
    tokenizer_exact: false
    context_window: 5
    pricing: {input: 1.00, output: 1.00}
"""


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        pytest.param(["-m", "gpt-4", "-i", "8192", "--output-tokens", "8192"], [], id="at-limits"),
        pytest.param(["-m", "gpt-4", "-i", "8193"],
                     ["the prompt (8,193 tokens) exceeds gpt-4's context window of 8,192 tokens: "
                      "the request would be refused"], id="prompt-past-window"),
        pytest.param(["-m", "gpt-4", "-i", "1k", "--output-tokens", "8193"],
                     ["the output (8,193 tokens) exceeds gpt-4's maximum of 8,192 output tokens"],
                     id="output-past-max"),
        pytest.param(["-m", "gpt-4", "-i", "1k", "--output-tokens", "8k", "--reasoning-tokens",
                      "1k"], ["the output plus reasoning (8,000 + 1,000 = 9,000 tokens) exceeds"],
                     id="reasoning-counts-as-output"),
        pytest.param(["-m", "gpt-4", "-i", "100k", "--cached-tokens", "50k", "--output-tokens",
                      "10k", "--batch-api"],
                     ["the prompt (100,000 tokens) exceeds", "the output (10,000 tokens) exceeds"],
                     id="both"),
        pytest.param(["-m", "long-tier", "-i", "250k"],
                     ["exceeds long-tier's context window of 200,000 tokens; it fits only where "
                      "the provider offers a longer window (priced by the long-context tier "
                      "above 200,000 tokens)"], id="tier-beyond-window"),
        pytest.param(["-m", "no-limits", "-i", "10M", "--output-tokens", "1M"], [],
                     id="no-stated-limits"),
        pytest.param(["-m", "tiny-window", "PROMPT"],
                     ["the prompt (about 10 tokens) exceeds tiny-window's context window of 5"],
                     id="proxy-count-is-about"),
    ],
)
def test_cli_warns_past_the_models_limits(
    tmp_path: Path, args: list[str], fragments: list[str]
) -> None:
    cat = tmp_path / "limits.yaml"
    cat.write_text(LIMITS, encoding="utf-8")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("one two three four five six seven eight nine ten", encoding="utf-8")
    args = [str(prompt) if a == "PROMPT" else a for a in args]
    for mode in ([], ["--json"]):
        result = runner.invoke(app, ["price", *args, *mode, "--catalog", str(cat)])
        assert result.exit_code == 0, result.output
        assert "Traceback" not in result.output
        warned = [ln for ln in result.stderr.splitlines() if ln.startswith("warning: ")]
        assert len(warned) == len(fragments)  # one line each
        for line, fragment in zip(warned, fragments, strict=True):
            assert fragment in line
        if mode:
            data = json.loads(result.stdout)
            assert [f"warning: {w}" for w in data["warnings"]] == warned
            assert data["total_usd"]  # priced all the same


def test_library_price_carries_the_limit_warnings() -> None:
    result = tokcost.price(tokcost.PriceRequest(model="gpt-4o", input_tokens=200_000,
                                                output_tokens=10, catalog=PRICES))
    # 200,000 x $2.50/M + 10 x $10/M: priced, and told it would not fit 128,000 tokens
    assert result.breakdown.total == D("0.5001")
    assert result.warnings == (
        "the prompt (200,000 tokens) exceeds gpt-4o's context window of 128,000 tokens: the "
        "request would be refused; shorten the prompt or choose a model with a longer window",
    )
    assert result.to_dict()["warnings"] == list(result.warnings)


# --- CLI -------------------------------------------------------------------------------


def test_cli_table() -> None:
    result = price(
        "-m", "gpt-4o", "--input-tokens", "1000", "--cached-tokens", "400",
        "--output-tokens", "200",
    )
    assert result.exit_code == 0, result.output
    assert "cached input" in result.output and "total: $0.004" in result.output


def test_cli_json() -> None:
    result = price("-m", "claude-sonnet-4-5", "-i", "250k", "--output-tokens", "2k", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["total_usd"] == "1.545"  # 250k x $6 + 2k x $22.50
    assert data["tier"] == {"above_input_tokens": 200000, "applies_to": "all"}
    assert data["exact"] is True and data["input_counted_from_files"] is False


def test_cli_counts_a_file_with_the_models_tokenizer(tmp_path: Path) -> None:
    from tokcost import get_tokenizer

    text = "The quick brown fox jumps over the lazy dog. " * 50
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(text, encoding="utf-8")
    expected = get_tokenizer("tiktoken:o200k_base").count(text)
    result = price("-m", "gpt-4o", str(prompt), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["lines"][0]["tokens"] == expected
    assert D(data["total_usd"]) == D(expected) * D("2.50") / 1_000_000


def test_cli_stdin_with_proxy_is_marked_approximate() -> None:
    result = runner.invoke(app, ["price", "-m", "claude-haiku-4-5", "-", "--catalog", str(PRICES)],
                           input="hello there\n")
    assert result.exit_code == 0, result.output
    assert "≈" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["-m", "llama-3.1-8b", "-i", "5"], "has no price", id="no-price"),
        pytest.param(["-m", "gpt-4o"], "give the prompt", id="no-input"),
        pytest.param(["-i", "5"], "needs a model", id="no-model"),
        pytest.param(["-m", "gpt-4p", "-i", "5"], "did you mean", id="unknown-model"),
        pytest.param(["-m", "gpt-4o", "-i", "5x"], "unknown suffix", id="typo"),
        pytest.param(["-m", "gpt-4o", "-i", "-5"], "must not be negative", id="negative"),
    ],
)
def test_cli_bad_input_one_line(args: list[str], message: str) -> None:
    result = price(*args)
    assert result.exit_code in (1, 2)
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        pytest.param(["-m", "gpt-4o", "-i", "12k", "--output-tokens", "800", "--cached-tokens", "2k"],
                     {"input_tokens": 12_000, "output_tokens": 800, "cached_tokens": 2000},
                     id="counts"),
        pytest.param(["-m", "claude-sonnet-4-5", "-i", "300k", "--cache-write-tokens", "50k",
                      "--output-tokens", "2k", "--batch-api", "--requests", "3"],
                     {"input_tokens": 300_000, "cache_write_tokens": 50_000,
                      "output_tokens": 2000, "batch": True, "requests": 3}, id="tier-batch"),
        pytest.param(["-m", "o3", "-i", "2k", "--reasoning-tokens", "4k"],
                     {"input_tokens": 2000, "reasoning_tokens": 4000}, id="reasoning"),
        pytest.param(["-m", "claude-haiku-4-5", "PROMPT"], {"paths": ["PROMPT"]}, id="file"),
    ],
)
def test_cli_json_is_the_results_to_dict(
    tmp_path: Path, args: list[str], kwargs: dict[str, Any]
) -> None:
    prompt = tmp_path / "prompt.md"
    prompt.write_text("Summarise the attached report in three bullet points.\n" * 20,
                      encoding="utf-8")
    args = [str(prompt) if a == "PROMPT" else a for a in args]
    if "paths" in kwargs:
        kwargs = {**kwargs, "paths": [str(prompt)]}
    result = price(*args, "--json")
    assert result.exit_code == 0, result.output
    model_id = args[args.index("-m") + 1]
    expected = tokcost.price(tokcost.PriceRequest(model=model_id, catalog=PRICES, **kwargs))
    assert json.loads(result.stdout) == json.loads(json.dumps(expected.to_dict()))
    assert expected.input_counted_from_files is ("paths" in kwargs)


MINE = """\
version: 1
models:
  - id: my-model
    tokenizer: tiktoken:cl100k_base
    pricing: {input: 4.00, output: 16.00}
"""


def test_model_of_a_user_catalog(tmp_path: Path) -> None:
    """A model the shipped catalog lacks, priced and tokenized through --catalog."""
    mine = tmp_path / "mine.yaml"
    mine.write_text(MINE, encoding="utf-8")
    text = "Tokens are counted with the model's own tokenizer from the user's catalog. " * 30
    prompt = tmp_path / "prompt.txt"
    prompt.write_text(text, encoding="utf-8")
    counted = runner.invoke(app, ["price", "-m", "my-model", "--catalog", str(mine), str(prompt),
                                  "--output-tokens", "1k", "--json"])
    assert counted.exit_code == 0, counted.output
    data = json.loads(counted.stdout)
    n = tokcost.get_tokenizer("tiktoken:cl100k_base").count(text)
    assert data["model"] == "my-model" and data["lines"][0]["tokens"] == n
    assert D(data["total_usd"]) == D(n) * 4 / 1_000_000 + D("0.016")
    given = runner.invoke(app, ["price", "-m", "my-model", "--catalog", str(mine), "-i", "1M"])
    assert given.exit_code == 0, given.output
    assert "total: $4.00" in given.output
    unknown = runner.invoke(app, ["price", "-m", "my-model", "-i", "5"])  # the shipped catalog
    assert unknown.exit_code == 2 and "unknown model 'my-model'" in unknown.stderr


def test_library_errors_name_the_api_parameter() -> None:
    with pytest.raises(UsageError) as info:
        tokcost.price(tokcost.PriceRequest(model="gpt-4o", catalog=PRICES))
    assert info.value.param == "input_tokens" and "input_tokens=N" in str(info.value)
    with pytest.raises(NoPrice) as no_price:
        tokcost.price(tokcost.PriceRequest(model="llama-3.1-8b", input_tokens=5, catalog=PRICES))
    assert no_price.value.param == "catalog" and "catalog=FILE" in str(no_price.value)
    with pytest.raises(NoPrice) as no_batch:
        tokcost.price(tokcost.PriceRequest(model="nocache", input_tokens=5, batch=True,
                                           catalog=PRICES))
    assert no_batch.value.param == "batch" and "batch=True" in str(no_batch.value)
    # ... and the CLI names the flag
    assert "(--catalog FILE with 'extends: shipped')" in price("-m", "llama-3.1-8b", "-i", "5").stderr
    assert "drop --batch-api" in price("-m", "nocache", "-i", "5", "--batch-api").stderr


def test_price_loads_no_tokenizer_library() -> None:
    code = (
        "import sys\n"
        "from tokcost.cli.app import app\n"
        f"app(['price', '-m', 'gpt-4o', '-i', '1000', '--catalog', {str(PRICES)!r}],"
        " standalone_mode=False)\n"
        "heavy = {'numpy', 'tiktoken', 'tokenizers', 'sentencepiece', 'matplotlib', 'regex'}\n"
        "print('LOADED', sorted(heavy & set(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "LOADED []" in done.stdout


# --- oracle: genai-prices' own calculator ------------------------------------------------

ORACLE = [
    pytest.param("gpt-4o", "openai", 1000, 400, 0, 200, False, id="gpt-4o-cached"),
    pytest.param("gpt-4o", "openai", 1000, 400, 0, 200, True, id="gpt-4o-batch"),
    pytest.param("gpt-5", "openai", 5000, 4000, 0, 3000, True, id="gpt-5-batch"),
    pytest.param(
        "claude-sonnet-4-5",
        "anthropic",
        150_000,
        100_000,
        20_000,
        2000,
        False,
        id="sonnet-below-tier",
    ),
    pytest.param(
        "claude-sonnet-4-5", "anthropic", 250_000, 100_000, 50_000, 2000, False, id="sonnet-tier"
    ),
    pytest.param("claude-sonnet-4-5", "anthropic", 1000, 400, 0, 200, True, id="sonnet-batch"),
    pytest.param("claude-haiku-5-5", "anthropic", 120_000, 0, 0, 5000, False, id="haiku-tier"),
    pytest.param("gemini-2.5-pro", "google", 300_000, 100_000, 0, 5000, False, id="gemini-tier"),
    pytest.param("gemini-2.5-pro", "google", 10_000, 0, 0, 500, True, id="gemini-batch"),
]


@pytest.mark.parametrize(
    ("model_id", "provider", "prompt", "cached", "written", "output", "batch"), ORACLE
)
def test_totals_equal_genai_prices_calculator(
    model_id: str, provider: str, prompt: int, cached: int, written: int, output: int, batch: bool
) -> None:
    # Our arithmetic on the shipped prices against the database's on its own: the one
    # test that reads live prices, and `models sync-prices --write` only brings the two
    # closer together.
    genai_prices = pytest.importorskip("genai_prices")
    usage = genai_prices.Usage(
        input_tokens=prompt,
        cache_read_tokens=cached,
        cache_write_tokens=written,
        output_tokens=output,
    )
    context = {"processing": "batch"} if batch else None
    theirs = genai_prices.calc_price(
        usage, model_id, provider_id=provider, price_context=context
    ).total_price
    ours = estimate_cost(
        shipped(model_id),
        input_tokens=prompt,
        cached_tokens=cached,
        cache_write_tokens=written,
        output_tokens=output,
        batch=batch,
    ).total
    assert ours == theirs


# --- properties ------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(
    data=st.data(),
    prompt=st.integers(0, 400_000),
    cached_share=st.fractions(0, 1),
    output=st.integers(0, 50_000),
    requests=st.integers(1, 1000),
)
def test_pricing_properties(
    prices: Catalog, data: st.DataObject, prompt: int, cached_share: object, output: int,
    requests: int,
) -> None:
    priced = [m for m in prices.models if m.pricing is not None]
    entry = data.draw(st.sampled_from(priced), label="model")
    cached = int(prompt * cached_share)  # type: ignore[operator]
    one = estimate_cost(entry, input_tokens=prompt, cached_tokens=cached, output_tokens=output)
    many = estimate_cost(
        entry, input_tokens=prompt, cached_tokens=cached, output_tokens=output, requests=requests
    )
    assert many.total == one.total * requests  # exact: Decimal, no float drift
    assert one.total >= 0
    # caching never costs more than sending the same prompt uncached
    assert one.total <= estimate_cost(entry, input_tokens=prompt, output_tokens=output).total
    if entry.pricing is not None and entry.pricing.batch_discount is not None:
        batched = estimate_cost(
            entry, input_tokens=prompt, cached_tokens=cached, output_tokens=output, batch=True
        )
        assert batched.total <= one.total


@pytest.mark.parametrize(
    ("model_id", "cached", "written", "note"),
    [
        # gpt-4o prices cached input apart (kept undiscounted) but not cache writes (input).
        ("gpt-4o", 50_000, 20_000, "does not apply to cache reads for this model"),
        ("gpt-4o", 0, 20_000, None),  # writes billed as input take the input's discount
        ("gpt-4", 50_000, 0, None),  # no cached price at all: everything is input
    ],
)
def test_the_batch_note_names_only_what_stays_undiscounted(
    model_id: str, cached: int, written: int, note: str | None
) -> None:
    cost = estimate_cost(shipped(model_id), input_tokens=100_000, cached_tokens=cached,
                         cache_write_tokens=written, output_tokens=1_000, batch=True)
    found = [n for n in cost.notes if "batch discount does not apply" in n]
    assert found == ([] if note is None else [f"the batch discount {note}"])


# --- the request ------------------------------------------------------------------------


def test_price_request_reads_counts_as_people_write_them(tmp_path: Path) -> None:
    request = tokcost.PriceRequest(model="gpt-4o", input_tokens="12k", output_tokens="1.5k",
                                   cached_tokens="2Ki", requests="1e3", catalog=PRICES)
    assert (request.input_tokens, request.output_tokens, request.cached_tokens,
            request.requests) == (12_000, 1_500, 2_048, 1_000)
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("hello world", encoding="utf-8")
    assert tokcost.PriceRequest(model="gpt-4o", paths=str(prompt)).paths == (str(prompt),)


@pytest.mark.parametrize(
    ("fields", "param", "message"),
    [
        pytest.param({"input_tokens": "12q"}, "input_tokens",
                     "input_tokens '12q' has an unknown suffix 'q'", id="suffix"),
        pytest.param({"input_tokens": 5, "output_tokens": -1}, "output_tokens",
                     "output_tokens must not be negative", id="negative"),
        pytest.param({"input_tokens": 5, "requests": 0}, "requests",
                     "requests must be a positive integer, got 0", id="zero-requests"),
        pytest.param({"input_tokens": 5, "paths": ["a.txt"]}, "input_tokens",
                     "give the prompt as files or as input_tokens, not both", id="both"),
        pytest.param({}, "input_tokens", "give the prompt: input_tokens=N", id="no-prompt"),
    ],
)
def test_price_request_refuses_in_one_line_naming_the_field(
    fields: dict[str, Any], param: str, message: str
) -> None:
    with pytest.raises(UsageError) as info:
        tokcost.PriceRequest(model="gpt-4o", **fields)
    assert info.value.param == param and message in str(info.value)
    assert "\n" not in str(info.value)


def test_cli_names_the_flag_of_a_refused_count() -> None:
    result = price("-m", "gpt-4o", "-i", "5", "--requests", "0")
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: --requests must be a positive integer, got 0"


def test_other_providers_note_names_the_flag() -> None:
    """gpt-oss-120b is priced for several providers in genai-prices: the note names --provider,
    not the library's placeholder."""
    result = runner.invoke(app, ["price", "-m", "gpt-oss-120b", "--input-tokens", "1000"])
    assert result.exit_code == 0, result.output
    note = next(line for line in result.output.splitlines() if "also priced for" in line)
    assert note.endswith("choose with --provider") and "{" not in note
