"""``models sync-prices --check`` (stale prices as a CI gate) and ``--write``'s ``as_of``.

The catalogs here are written to tmp_path with the shipped catalog's prices, which
tests/test_models.py keeps equal to the installed genai-prices database; each test
makes one of them stale.
"""

from __future__ import annotations

import datetime as _dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import tokcost
from tokcost.catalog import load_catalog
from tokcost.cli.app import app

pytest.importorskip("genai_prices")

runner = CliRunner()

# gpt-4o stale (input 2.75; the database says 2.50), claude-opus-4-1 current.
CATALOG = """\
# A test catalog: comments and layout must survive --write.
version: 1
models:
  - id: gpt-4o
    provider: openai
    tokenizer: tiktoken:o200k_base
    pricing:
      input: 2.75          # stale on purpose
      cached_input: 1.25
      output: 10.00
      batch_discount: 0.5
      as_of: 2025-01-01
      source: "https://platform.openai.com/docs/pricing"

  - id: claude-opus-4-1
    provider: anthropic
    tokenizer: tiktoken:o200k_base
    pricing: {input: 15.00, cached_input: 1.50, cache_write: 18.75, output: 75.00,
              batch_discount: 0.5, batch_discount_cache: true, as_of: 2025-01-01}
"""
STALE_LINE = "gpt-4o: input: catalog 2.75, genai-prices 2.5"


def _catalog(tmp_path: Path, text: str = CATALOG) -> Path:
    path = tmp_path / "models.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _sync(path: Path, *args: str) -> Any:
    return runner.invoke(app, ["models", "sync-prices", "--catalog", str(path), *args])


def _database_date(model_id: str, provider_id: str) -> _dt.date | None:
    """The latest start date of the model's standard price and batch variant, read from
    genai-prices itself (what --write must give the entry's as_of)."""
    from genai_prices.data import providers

    provider = next(p for p in providers if p.id == provider_id)
    model = provider.find_model(model_id, all_providers=providers)
    now = _dt.datetime.now(tz=_dt.timezone.utc)
    dates = []
    if isinstance(model.prices, list):
        active = [c for c in model.prices if c.constraint is None or c.constraint.active(now)]
        dates.append(getattr(active[-1].constraint, "start_date", None) if active else None)
    for variant in model.price_variants or ():
        if variant.when == {"processing": "batch"} and (
            variant.constraint is None or variant.constraint.active(now)
        ):
            dates.append(getattr(variant.constraint, "start_date", None))
    known = [d for d in dates if d is not None]
    return max(known) if known else None


def _pricing(path: Path, model_id: str) -> Any:
    return load_catalog(path).resolve(model_id).pricing


def test_check_lists_each_stale_price_and_exits_1(tmp_path: Path) -> None:
    path = _catalog(tmp_path)
    before = path.read_bytes()
    result = _sync(path, "--check")
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines() == [STALE_LINE]  # one line a difference, nothing else
    assert "1 stale price(s)" in result.stderr
    assert "tokcost models sync-prices --write" in result.stderr
    assert "Traceback" not in result.output
    assert path.read_bytes() == before  # --check never writes


def test_check_json_lists_the_differences_and_exits_1(tmp_path: Path) -> None:
    path = _catalog(tmp_path)
    result = _sync(path, "--check", "--json")
    assert result.exit_code == 1, result.output
    data = json.loads(result.stdout)
    assert [(d["model"], d["field"], d["catalog"], d["database"]) for d in data["differences"]] \
        == [("gpt-4o", "input", "2.75", "2.5")]
    assert data["matched"] == ["gpt-4o", "claude-opus-4-1"]
    assert data["written"] == 0 and data["dated"] == []
    # the as_of --write would give the entry
    want = _database_date("gpt-4o", "openai")
    as_of = data["differences"][0]["as_of"]
    assert as_of == want.isoformat() if want is not None else _dt.date.fromisoformat(as_of)


def test_check_passes_on_a_current_catalog(tmp_path: Path) -> None:
    current = CATALOG.replace("input: 2.75          # stale on purpose", "input: 2.50")
    path = _catalog(tmp_path, current)
    result = _sync(path, "--check")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert "the catalog is current" in result.stderr
    as_json = _sync(path, "--check", "--json")
    assert as_json.exit_code == 0 and json.loads(as_json.stdout)["differences"] == []


def test_without_check_differences_do_not_fail(tmp_path: Path) -> None:
    # The report alone stays a report (exit 0), as before --check existed.
    result = _sync(_catalog(tmp_path))
    assert result.exit_code == 0, result.output
    assert "gpt-4o" in result.stdout


def test_write_updates_price_and_as_of_then_check_passes(tmp_path: Path) -> None:
    path = _catalog(tmp_path)
    today = _dt.datetime.now(tz=_dt.timezone.utc).date()
    written = _sync(path, "--write")
    after = _dt.datetime.now(tz=_dt.timezone.utc).date()
    assert written.exit_code == 0, written.output
    assert "wrote 1 change(s)" in written.output
    assert "as_of set on 1 model(s): gpt-4o" in written.stderr
    pricing = _pricing(path, "gpt-4o")
    assert pricing.input == Decimal("2.5")
    # The database's date for gpt-4o's prices where it has one, else the day of the run.
    want = _database_date("gpt-4o", "openai")
    if want is not None:
        assert pricing.as_of == want
    else:
        assert pricing.as_of in {today, after}
    assert pricing.as_of != _dt.date(2025, 1, 1)
    # The current entry is untouched: its as_of still says when it was last checked.
    assert _pricing(path, "claude-opus-4-1").as_of == _dt.date(2025, 1, 1)
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# A test catalog: comments and layout must survive --write.\n")
    assert "      input: 2.5          # stale on purpose\n" in text  # the value, in place
    assert f"      as_of: {pricing.as_of.isoformat()}\n" in text
    assert "as_of: 2025-01-01}" in text  # claude-opus-4-1's flow mapping as it was
    assert sorted(p.name for p in tmp_path.iterdir()) == ["models.yaml"]  # no temp file left
    again = _sync(path, "--check")
    assert again.exit_code == 0, again.output
    assert again.stdout == ""


def test_write_without_a_database_date_uses_today_and_adds_as_of(tmp_path: Path) -> None:
    # mistral-nemo's price has no start date in the database, and the entry no as_of key.
    if _database_date("mistral-nemo", "mistral") is not None:
        pytest.skip("this genai-prices dates mistral-nemo's price")
    path = _catalog(tmp_path, "version: 1\nmodels:\n  - id: mistral-nemo\n    provider: mistral\n"
                    "    tokenizer: tiktoken:o200k_base\n    pricing: {input: 0.20, output: 0.15}\n")
    today = _dt.datetime.now(tz=_dt.timezone.utc).date()
    written = _sync(path, "--write")
    after = _dt.datetime.now(tz=_dt.timezone.utc).date()
    assert written.exit_code == 0, written.output
    pricing = _pricing(path, "mistral-nemo")
    assert pricing.input == Decimal("0.15") and pricing.as_of in {today, after}
    assert "pricing: {as_of: " in path.read_text(encoding="utf-8")  # inserted in flow style
    assert _sync(path, "--check").exit_code == 0


def test_an_entry_left_with_a_hand_edit_keeps_its_as_of(tmp_path: Path) -> None:
    # claude-sonnet-4-5 without its long-context tier: --write fixes the input price but
    # cannot add a tier, so the entry is not current and its as_of stays.
    path = _catalog(tmp_path, """\
version: 1
models:
  - id: claude-sonnet-4-5
    provider: anthropic
    tokenizer: tiktoken:o200k_base
    pricing:
      input: 3.10
      cached_input: 0.30
      cache_write: 3.75
      output: 15.00
      batch_discount: 0.5
      batch_discount_cache: true
      as_of: 2025-01-01
""")
    check = _sync(path, "--check")
    assert check.exit_code == 1
    assert check.stdout.splitlines() == [
        "claude-sonnet-4-5: input: catalog 3.1, genai-prices 3",
        "claude-sonnet-4-5: tiers (above 200,000 input tokens): not in the catalog (add by hand)",
    ]
    written = _sync(path, "--write")
    assert written.exit_code == 0, written.output
    pricing = _pricing(path, "claude-sonnet-4-5")
    assert pricing.input == Decimal(3) and pricing.as_of == _dt.date(2025, 1, 1)
    assert "as_of set" not in written.stderr
    again = _sync(path, "--check")
    assert again.exit_code == 1
    assert again.stdout.splitlines() == [
        "claude-sonnet-4-5: tiers (above 200,000 input tokens): not in the catalog (add by hand)"
    ]


def test_library_result_says_whether_the_catalog_is_current(tmp_path: Path) -> None:
    path = _catalog(tmp_path)
    when = _dt.datetime.now(tz=_dt.timezone.utc)
    stale = tokcost.sync_prices(tokcost.SyncPricesRequest(catalog=path, when=when))
    assert not stale.current and [d.describe() for d in stale.differences] == [STALE_LINE]
    assert stale.differences[0].as_of is not None
    done = tokcost.sync_prices(tokcost.SyncPricesRequest(catalog=path, write=True, when=when))
    assert done.dated == ("gpt-4o",) and done.written == 1
    assert _pricing(path, "gpt-4o").as_of == stale.differences[0].as_of
    assert tokcost.sync_prices(tokcost.SyncPricesRequest(catalog=path, when=when)).current


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        pytest.param(["--check", "--write"], 2,
                     "--check only reports the differences and --write writes them", id="both"),
        pytest.param(["--write", "--check", "--json"], 2, '"exit_code": 2', id="both-json"),
        pytest.param(["--check", "--catalog", "{tmp}/none.yaml"], 2, "does not exist",
                     id="no-catalog"),
        pytest.param(["--check", "--catalog", "{tmp}/bad.yaml"], 2, "bad.yaml", id="bad-catalog"),
    ],
)
def test_bad_usage_is_one_line(tmp_path: Path, args: list[str], code: int, fragment: str) -> None:
    path = _catalog(tmp_path)
    (tmp_path / "bad.yaml").write_text("version: 1\nmodels: [{id: 3}]\n", encoding="utf-8")
    given = [a.replace("{tmp}", str(tmp_path)) for a in args]
    argv = ["models", "sync-prices", *([] if "--catalog" in given else ["--catalog", str(path)]),
            *given]
    before = path.read_bytes()
    result = runner.invoke(app, argv)
    assert result.exit_code == code, result.output
    assert fragment in result.output
    assert "Traceback" not in result.output
    if "--json" not in args:
        assert len(result.stderr.strip().splitlines()) == 1
        assert result.stdout == ""
    assert path.read_bytes() == before  # nothing written on a usage error
