"""tokcost's prices against genai-prices's own ``calc_price``, model by model, and start-up.

    python benchmarks/bench_prices.py [--models 300] [--repeat 5]

A deterministic sample of genai-prices models (round robin over every provider, ids sorted)
is priced in six scenarios by ``tokcost price -m ID --provider P --json`` (the CLI in this
process: 1,800 subprocesses would take a quarter of an hour) and by
``genai_prices.calc_price`` for the same usage, provider and date; the agreement is printed
(exact, and to the micro-dollar), then the CPU start-up of ``price`` as whole processes.
tests/test_price_database.py runs a smaller sample through the library.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import statistics
import subprocess
import sys
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any, NamedTuple

PAST = dt.datetime(2025, 6, 1, tzinfo=dt.timezone.utc)
NOW = dt.datetime(2026, 11, 16, 12, tzinfo=dt.timezone.utc)  # fixed: reproducible; past
# the start of the batch prices (2026-10-14 in genai-prices 0.2.3)
MICRO = Decimal("0.000001")


class Scenario(NamedTuple):
    name: str
    usage: Callable[[Any], dict[str, int]]  # the model (a pricedb.DbModel) -> counts
    when: dt.datetime = NOW
    batch: bool = False
    ttl: str | None = None


def _past_tier(model: Any) -> int:
    """An input past the model's highest tier start (300k when it has no tier)."""
    starts = [s for _, prices in model.prices for p in prices.values()
              if isinstance(p, tuple) for s, _ in p[2]]
    return max(starts, default=299_999) + 1


SCENARIOS = (
    Scenario("plain", lambda m: {"input": 1_000, "output": 200}),
    Scenario("cached", lambda m: {"input": 10_000, "cached": 6_000, "output": 500}),
    Scenario("cache write", lambda m: {"input": 10_000, "cache_write": 4_000, "output": 300},
             ttl="1h"),
    Scenario("long context", lambda m: {"input": _past_tier(m), "cached": 50_000,
                                        "cache_write": 10_000, "output": 1_000}),
    Scenario("batch + cache", lambda m: {"input": 20_000, "cached": 15_000, "output": 800},
             batch=True),
    Scenario("past date", lambda m: {"input": 5_000, "cached": 1_000, "output": 400,
                                     "reasoning": 100}, when=PAST),
)


def sample(count: int) -> list[Any]:
    """``count`` models (or all), round robin over the providers in the package's order,
    each provider's models with a batch price first, then by id; only models genai-prices
    finds by their own id."""
    from genai_prices import data_snapshot

    from tokcost.catalog import pricedb
    db = pricedb.load()
    assert db is not None, "genai-prices is not installed"
    snapshot = data_snapshot.get_snapshot()
    queues: list[list[Any]] = []
    for provider in db.providers:
        found = []
        batch_first = sorted(provider["models"], key=lambda m: (
            not any(w.get("processing") == "batch" for w, _, _ in m["variants"]), m["id"]))
        for model in batch_first:
            try:
                got = snapshot.find_provider_model(model["id"], None, provider["id"], None)[1]
            except LookupError:
                continue
            if got.id == model["id"]:
                found.append(db.find(model["id"], provider["id"]))
        queues.append(found)
    picked: list[Any] = []
    while len(picked) < count and any(queues):
        for queue in queues:
            if queue and len(picked) < count:
                picked.append(queue.pop(0))
    return picked


def cases(models: list[Any]) -> Iterator[tuple[Any, Scenario]]:
    """Each model in each scenario it has prices for (batch only where it has a batch price)."""
    for model in models:
        for scenario in SCENARIOS:
            if not scenario.batch or model.has_variant("processing", "batch", scenario.when):
                yield model, scenario


def oracle(model: Any, scenario: Scenario) -> Decimal:
    """genai-prices's own figure for the scenario."""
    from genai_prices import Usage, calc_price
    n = scenario.usage(model)
    usage = {"input_tokens": n["input"], "output_tokens": n["output"] + n.get("reasoning", 0),
             "cache_read_tokens": n.get("cached", 0),
             "cache_write_tokens": n.get("cache_write", 0)}
    if n.get("reasoning"):
        usage["output_reasoning_tokens"] = n["reasoning"]
    if scenario.ttl:
        usage[f"cache_write_{scenario.ttl}_tokens"] = n.get("cache_write", 0)
    return calc_price(Usage(**usage), model.id, provider_id=model.provider,
                      genai_request_timestamp=scenario.when,
                      price_context={"processing": "batch"} if scenario.batch else None
                      ).total_price


def cli_args(model: Any, scenario: Scenario) -> list[str]:
    n = scenario.usage(model)
    args = ["price", "-m", model.id, "--provider", model.provider, "-i", str(n["input"]),
            "--output-tokens", str(n["output"]), "--cached-tokens", str(n.get("cached", 0)),
            "--cache-write-tokens", str(n.get("cache_write", 0)),
            "--reasoning-tokens", str(n.get("reasoning", 0)),
            "--at", scenario.when.isoformat(), "--json"]
    return args + (["--batch-api"] if scenario.batch else []) + (
        ["--cache-ttl", scenario.ttl] if scenario.ttl else [])


def agreement(models: list[Any]) -> tuple[int, int, int, list[str]]:
    """(cases, exactly equal, equal to the micro-dollar, the first disagreements)."""
    from typer.testing import CliRunner

    from tokcost.cli.app import app
    runner = CliRunner()
    total = exact = micro = 0
    wrong: list[str] = []
    for model, scenario in cases(models):
        total += 1
        result = runner.invoke(app, cli_args(model, scenario))
        want = oracle(model, scenario)
        if result.exit_code != 0:
            wrong.append(f"{model.provider}/{model.id} {scenario.name}: {result.output.strip()}")
            continue
        got = Decimal(json.loads(result.stdout)["total_usd"])
        exact += got == want
        micro += abs(got - want) < MICRO
        if abs(got - want) >= MICRO:
            wrong.append(f"{model.provider}/{model.id} {scenario.name}: {got} != {want}")
    return total, exact, micro, wrong


def startup(repeat: int) -> None:
    """Median CPU seconds of ``price`` as a whole process: a catalog model, a genai-prices
    model, and several side by side (the cache of genai-prices's data warm)."""
    commands = {"python -c pass": ["-c", "pass"],
                "price -m gpt-4o -i 1k": ["-m", "tokcost", "price", "-m", "gpt-4o", "-i", "1k"],
                "price -m grok-4 -i 1k": ["-m", "tokcost", "price", "-m", "grok-4", "-i", "1k"],
                "price -m 'claude-*' -i 1k": ["-m", "tokcost", "price", "-m", "claude-*",
                                              "-i", "1k"]}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for i in range(repeat + 1):  # the first round warms the caches and is dropped
        for name, argv in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([sys.executable, *argv], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if i:
                cpu[name].append(after.ru_utime - before.ru_utime
                                 + after.ru_stime - before.ru_stime)
    print(f"start-up, median CPU of {repeat} runs (load average {os.getloadavg()[0]:.2f}):")
    for name, runs in cpu.items():
        print(f"  {name:28} {statistics.median(runs) * 1000:6.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=300, help="sample size (default 300)")
    parser.add_argument("--repeat", type=int, default=5, help="start-up runs (default 5)")
    args = parser.parse_args()
    models = sample(args.models)
    providers = len({m.provider for m in models})
    total, exact, micro, wrong = agreement(models)
    print(f"{len(models)} models of {providers} providers, {total} cases "
          f"({len(SCENARIOS)} scenarios; batch only where priced): "
          f"{micro}/{total} equal calc_price to the micro-dollar, {exact}/{total} exactly")
    for line in wrong[:10]:
        print("  differs:", line)
    startup(args.repeat)


if __name__ == "__main__":
    main()
