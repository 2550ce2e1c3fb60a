"""Prices of the models genai-prices knows: the lookup and every pricing rule against the
package's own ``calc_price`` (the oracle), the cache of its data, and price side by side."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import tokcost
from tokcost.app.price import PriceComparison, PriceResult
from tokcost.catalog import pricedb
from tokcost.cli.app import app
from tokcost.errors import UsageError
from tokcost.pricing import NoPrice

genai_prices = pytest.importorskip("genai_prices")
runner = CliRunner()

_spec = importlib.util.spec_from_file_location(
    "bench_prices", Path(__file__).parent.parent / "benchmarks" / "bench_prices.py")
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


@pytest.fixture(scope="module")
def sample() -> list[Any]:
    return bench.sample(60)  # deterministic: round robin over the providers


def _request(model: Any, scenario: Any) -> tokcost.PriceRequest:
    n = scenario.usage(model)
    return tokcost.PriceRequest(
        model=model.id, provider=model.provider, input_tokens=n["input"],
        output_tokens=n["output"], cached_tokens=n.get("cached", 0),
        cache_write_tokens=n.get("cache_write", 0), reasoning_tokens=n.get("reasoning", 0),
        at=scenario.when, batch=scenario.batch, cache_ttl=scenario.ttl)


def test_sample_spans_the_providers(sample: list[Any]) -> None:
    assert len(sample) == 60
    assert len({m.provider for m in sample}) >= 40


def test_every_scenario_equals_calc_price(sample: list[Any]) -> None:
    """Plain, cached, cache write (1 h), past a tier, batch with cache, a past date."""
    seen = set()
    for model, scenario in bench.cases(sample):
        result = tokcost.price(_request(model, scenario))
        assert isinstance(result, PriceResult)
        want = bench.oracle(model, scenario)
        assert result.breakdown.total == want, (model.provider, model.id, scenario.name)
        seen.add(scenario.name)
    assert seen == {s.name for s in bench.SCENARIOS}


def test_lookup_matches_the_package() -> None:
    """With and without a provider, the package's choice of provider and model wherever it
    finds one (every third model's id)."""
    db = pricedb.load()
    assert db is not None
    snapshot = genai_prices.data_snapshot.get_snapshot()
    checked = 0
    for model in list(db.models())[::3]:
        for provider in (model.provider, None):
            try:
                owner, want = snapshot.find_provider_model(model.id, None, provider, None)
            except LookupError:
                continue
            got = db.find(model.id, provider)
            assert got is not None and (got.provider, got.id) == (owner.id, want.id), model.id
            checked += 1
    assert checked > 500


@pytest.mark.parametrize("ref", ["grok-4", "deepseek-chat", "claude-3-5-haiku",
                                 "gemini-2.0-flash", "command-r-plus", "kimi-k2"])
def test_models_of_the_issue_are_priced(ref: str) -> None:
    result = tokcost.price(tokcost.PriceRequest(model=ref, input_tokens=1000, output_tokens=100))
    assert isinstance(result, PriceResult)
    want = genai_prices.calc_price(genai_prices.Usage(input_tokens=1000, output_tokens=100), ref)
    assert result.breakdown.total == want.total_price
    assert result.database is not None and result.database.provider == want.provider.id


def test_database_only_model_counts_with_a_marked_proxy(tmp_path: Path) -> None:
    prompt = tmp_path / "p.txt"
    prompt.write_text("hello world, a prompt", encoding="utf-8")
    result = tokcost.price(tokcost.PriceRequest(model="grok-4", paths=[prompt]))
    assert isinstance(result, PriceResult) and not result.exact
    shown = runner.invoke(app, ["price", "-m", "grok-4", str(prompt)])
    assert shown.exit_code == 0, shown.output
    assert "total: ≈$" in shown.stdout and "proxy tokenizer" in shown.stderr


def test_provider_picks_among_providers() -> None:
    ref = "claude-sonnet-4-5"
    for provider in ("anthropic", "google"):
        result = tokcost.price(tokcost.PriceRequest(model=ref, provider=provider,
                                                    input_tokens="10k"))
        assert isinstance(result, PriceResult) and result.database is not None
        assert result.database.provider == provider
    with pytest.raises(NoPrice, match="did you mean: global.anthropic.claude-sonnet-4-5"):
        tokcost.price(tokcost.PriceRequest(model=ref, provider="aws", input_tokens=1))
    with pytest.raises(UsageError, match="did you mean: aws"):
        tokcost.price(tokcost.PriceRequest(model=ref, provider="awz", input_tokens=1))


def test_catalog_prices_stay_first() -> None:
    """A model the catalog prices keeps the catalog's figures and notes (no provider, date)."""
    result = tokcost.price(tokcost.PriceRequest(model="gpt-4o", input_tokens="12k"))
    assert isinstance(result, PriceResult) and result.database is None
    assert not any("genai-prices" in n for n in result.breakdown.notes)


def test_at_reads_the_price_history() -> None:
    db = pricedb.load()
    assert db is not None
    dated = next(m for m in db.models() if sum(c is not None and c[0] == "date"
                                               for c, _ in m.prices) >= 1
                 and db.find(m.id, m.provider) is not None
                 and db.find(m.id, m.provider).id == m.id)  # type: ignore[union-attr]
    start = max(c[1] for c, _ in dated.prices if c is not None and c[0] == "date")
    for day in (start - dt.timedelta(days=1), start):
        result = tokcost.price(tokcost.PriceRequest(
            model=dated.id, provider=dated.provider, input_tokens="1M", output_tokens="1M",
            at=day.isoformat()))
        want = genai_prices.calc_price(
            genai_prices.Usage(input_tokens=10**6, output_tokens=10**6), dated.id,
            provider_id=dated.provider,
            genai_request_timestamp=dt.datetime.combine(day, dt.time(), dt.timezone.utc))
        assert isinstance(result, PriceResult)
        assert result.breakdown.total == want.total_price


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"at": "June 1st"}, "is not a date"),
    ({"cache_ttl": "2h"}, "give 5m or 1h"),
    ({"usage": {"nope_tokens": 3}}, "not a usage key"),
    ({"cached_tokens": 2000}, "exceed the prompt's 1000 input tokens"),
])
def test_bad_requests_say_what_to_do(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        tokcost.price(tokcost.PriceRequest(model="grok-4", input_tokens=1000, **kwargs))


def test_batch_without_a_batch_price_is_refused() -> None:
    db = pricedb.load()
    assert db is not None
    model = next(m for m in db.models() if m.provider == "x-ai"
                 and not m.has_variant("processing", "batch") and db.find(m.id, "x-ai"))
    with pytest.raises(NoPrice, match="no batch price"):
        tokcost.price(tokcost.PriceRequest(model=model.id, provider="x-ai", input_tokens=5,
                                           batch=True))


def test_usage_keys_price_audio_tokens() -> None:
    """--usage reaches every unit of the database: audio input tokens at their own price."""
    db = pricedb.load()
    assert db is not None
    model = next(m for m in db.models() if "input_audio_mtok" in m.prices[-1][1]
                 and (db.find(m.id, m.provider) or m).id == m.id)
    when = dt.datetime(2026, 1, 15, tzinfo=dt.timezone.utc)
    result = tokcost.price(tokcost.PriceRequest(
        model=model.id, provider=model.provider, input_tokens=5000, output_tokens=10,
        usage={"input_audio_tokens": "2k"}, at=when))
    want = genai_prices.calc_price(
        genai_prices.Usage(input_tokens=5000, output_tokens=10, input_audio_tokens=2000),
        model.id, provider_id=model.provider, genai_request_timestamp=when)
    assert isinstance(result, PriceResult)
    assert result.breakdown.total == want.total_price
    assert any(line.kind == "input audio" for line in result.breakdown.lines)


def test_side_by_side_sorted_and_marked() -> None:
    result = tokcost.price(tokcost.PriceRequest(
        models=["gpt-4o", "grok-4", "deepseek-chat", "claude-haiku-4-*"],
        input_tokens="100k", output_tokens="1k"))
    assert isinstance(result, PriceComparison)
    totals = [r.breakdown.total for r in result.rows]
    assert totals == sorted(totals) and len(result.rows) >= 4
    rows = result.to_dict()
    assert [r["cheapest"] for r in rows].count(True) == 1
    fits = {r["model"]: r["fits_context"] for r in rows}
    assert fits["gpt-4o"] is True and fits["deepseek-chat"] is False  # 128k vs 64k windows
    marked = next(r for r in rows if r["cheapest"])  # the cheapest that holds the prompt
    assert marked["fits_context"] is not False
    assert all(Decimal(r["total_usd"]) >= Decimal(marked["total_usd"])
               for r in rows if r["fits_context"] is not False)
    assert {r["prices_from"] for r in rows} >= {"catalog", f"genai-prices {pricedb.load().version}"}  # type: ignore[union-attr]


def test_side_by_side_cli_json_is_a_list_and_single_shape_is_kept() -> None:
    several = runner.invoke(app, ["price", "-m", "gpt-4o", "-m", "grok-4", "-i", "1k",
                                  "--json"])
    assert several.exit_code == 0, several.output
    rows = json.loads(several.stdout)
    assert isinstance(rows, list) and len(rows) == 2
    single = runner.invoke(app, ["price", "-m", "gpt-4o", "-i", "1k", "--json"])
    keys = set(json.loads(single.stdout))
    assert keys == {"model", "requests", "batch", "tier", "lines", "per_request_usd",
                    "total_usd", "notes", "as_of", "source", "input_counted_from_files",
                    "exact", "warnings"}
    table = runner.invoke(app, ["price", "-m", "gpt-4o", "-m", "grok-4", "-i", "1k"])
    assert table.exit_code == 0 and table.stdout.lstrip().startswith("model")
    assert "\n*" in table.stdout


def test_glob_without_a_match_and_too_broad() -> None:
    with pytest.raises(UsageError, match="no model matches"):
        tokcost.price(tokcost.PriceRequest(models=["zz-none-*"], input_tokens=5))
    with pytest.raises(UsageError, match="narrow the pattern"):
        tokcost.price(tokcost.PriceRequest(models=["*"], input_tokens=5))


def test_cache_is_verified_and_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKCOST_CACHE_DIR", str(tmp_path))
    pricedb.load.cache_clear()
    try:
        first = pricedb.load()
        entry, = tmp_path.glob("*.pricedb-v2")
        data = entry.read_bytes()
        entry.write_bytes(data[:-10] + b"0123456789")  # damaged: a warning, then rebuilt
        pricedb.load.cache_clear()
        with pytest.warns(UserWarning, match="damaged"):
            again = pricedb.load()
        assert first is not None and again is not None
        assert again.find("grok-4").id == first.find("grok-4").id  # type: ignore[union-attr]
        assert entry.read_bytes() == data
    finally:
        pricedb.load.cache_clear()


def test_data_read_without_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the bundled data: the auto-updater (its HTTP client) is never started."""
    started: list[bool] = []
    monkeypatch.setattr(genai_prices.UpdatePrices, "start",
                        lambda *a, **k: started.append(True))
    pricedb._build()
    assert not started and genai_prices.data_snapshot._custom_snapshot is None


def test_decimal_money_in_json() -> None:
    result = runner.invoke(app, ["price", "-m", "grok-4", "-i", "333", "--json"])
    doc = json.loads(result.stdout)
    assert Decimal(doc["total_usd"]) == sum(Decimal(x["cost_usd"]) for x in doc["lines"])


def test_glob_leaves_out_models_without_the_price_asked() -> None:
    """--batch-api over a glob: models without a batch price are left out and named; a model
    named outright still fails."""
    result = tokcost.price(tokcost.PriceRequest(models=["grok-*"], input_tokens=5, batch=True))
    assert isinstance(result, PriceComparison) and result.skipped and result.rows
    assert all(r.breakdown.batch for r in result.rows)
    shown = runner.invoke(app, ["price", "-m", "grok-*", "-i", "5", "--batch-api"])
    assert shown.exit_code == 0 and "have no price for this request" in shown.stderr
    with pytest.raises(NoPrice):
        tokcost.price(tokcost.PriceRequest(models=["grok-*", result.skipped[0]],
                                           input_tokens=5, batch=True))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_usage_equals_calc_price(data: st.DataObject) -> None:
    """Property: any split of a prompt into fresh, cached and written tokens, any output and
    reasoning, TTL, batch and date, on any sampled model, costs what calc_price says."""
    db = pricedb.load()
    assert db is not None
    model = data.draw(st.sampled_from(_SAMPLE))
    prompt = data.draw(st.integers(0, 2_000_000))
    cached = data.draw(st.integers(0, prompt))
    written = data.draw(st.integers(0, prompt - cached))
    output, reasoning = data.draw(st.integers(0, 100_000)), data.draw(st.integers(0, 50_000))
    ttl = data.draw(st.sampled_from([None, "5m", "1h"]))
    when = dt.datetime.combine(data.draw(st.dates(dt.date(2023, 1, 1), dt.date(2027, 6, 1))),
                               dt.time(data.draw(st.integers(0, 23))), dt.timezone.utc)
    batch = data.draw(st.booleans()) and model.has_variant("processing", "batch", when)
    result = tokcost.price(tokcost.PriceRequest(
        model=model.id, provider=model.provider, input_tokens=prompt, output_tokens=output,
        cached_tokens=cached, cache_write_tokens=written, reasoning_tokens=reasoning,
        cache_ttl=ttl, batch=batch, at=when))
    usage = {"input_tokens": prompt, "output_tokens": output + reasoning,
             "cache_read_tokens": cached, "cache_write_tokens": written,
             "output_reasoning_tokens": reasoning}
    if ttl:
        usage[f"cache_write_{ttl}_tokens"] = written
    want = genai_prices.calc_price(
        genai_prices.Usage(**usage), model.id, provider_id=model.provider,
        genai_request_timestamp=when,
        price_context={"processing": "batch"} if batch else None).total_price
    assert isinstance(result, PriceResult) and result.breakdown.total == want


_SAMPLE = bench.sample(120)


def test_warm_cache_never_imports_the_package(tmp_path: Path) -> None:
    """The first read builds the cache entry from genai-prices; later ones load plain values
    without importing it (its import costs more than all of `price`)."""
    code = ("import sys; from tokcost.catalog import pricedb; db = pricedb.load(); "
            "print(db.find('grok-4').id, 'genai_prices' in sys.modules)")
    env = {**os.environ, "TOKCOST_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, check=True).stdout.split() for _ in range(2)]
    assert runs == [["grok-4-0709", "True"], ["grok-4-0709", "False"]]


def test_models_list_all_and_show_name_the_source() -> None:
    listed = tokcost.list_models(provider="x-ai", everything=True).to_dict()["models"]
    grok = next(m for m in listed if m["id"] == "grok-4-0709")
    assert grok["prices_from"].startswith("genai-prices ") and not grok["tokenizer_exact"]
    shown = tokcost.show_model("claude-sonnet-4-5").to_dict()
    assert shown["pricing"] is not None  # the catalog's
    assert shown["genai_prices"]["provider"] == "anthropic"
    assert {"anthropic", "google"} <= set(shown["genai_prices"]["providers"])
    text = runner.invoke(app, ["models", "list", "--all", "--provider", "x-ai"])
    assert text.exit_code == 0 and "genai-prices" in text.stdout


def test_check_prices_a_model_only_the_database_knows(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """check's model: may be a genai-prices model; its cost per call is price's for the call."""
    (tmp_path / "a.txt").write_text("hello world, a small prompt\n", encoding="utf-8")
    (tmp_path / "tokcost.yaml").write_text(
        "version: 1\nmodel: grok-4\nbudgets:\n  - name: all\n    paths: ['*.txt']\n"
        "    max_cost_per_call: 0.01\n    output_tokens: 1000\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    ran = CliRunner().invoke(app, ["check", "--json"])
    assert ran.exit_code == 1, ran.output  # over the limit: priced, not refused (exit 2)
    report = json.loads(ran.stdout)
    budget = report["budgets"][0]
    assert budget["exact"] is False  # the proxy tokenizer's count, marked so
    priced = tokcost.price(tokcost.PriceRequest(model="grok-4", input_tokens=budget["total_tokens"],
                                                output_tokens=1000))
    assert isinstance(priced, PriceResult)
    assert Decimal(report["failures"][0]["actual"]) == priced.breakdown.total > 0


def test_models_list_all_prices_a_catalog_entry_without_prices_as_price_does() -> None:
    # kimi-k2 is a catalog entry (its architecture) with no pricing section: `price -m` takes
    # genai-prices's, and `models list --all` says so rather than leaving the column blank.
    listed = tokcost.list_models(provider="moonshotai", everything=True).to_dict()["models"]
    kimi = next(m for m in listed if m["id"] == "kimi-k2")
    result = tokcost.price(tokcost.PriceRequest(model="kimi-k2", input_tokens=1000))
    assert result.database is not None and result.database.id == "kimi-k2"
    assert kimi["prices_from"].startswith(f"genai-prices {result.database.version}: input $")
    assert kimi["architecture"] is not None  # the catalog's entry, not the database's
