"""models list/show/validate/sync-prices, and the catalog's tokenizer packages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import tokcost
from tokcost.catalog import load_catalog
from tokcost.catalog.loader import shipped_path
from tokcost.cli.app import app
from tokcost.errors import MissingDependency, UsageError

runner = CliRunner()


@pytest.fixture(autouse=True)
def _shipped_catalog(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TOKCOST_CATALOG", raising=False)


def test_list_table_marks_proxies() -> None:
    result = runner.invoke(app, ["models", "list"])
    assert result.exit_code == 0, result.output
    line = next(
        ln for ln in result.output.splitlines() if ln.strip().startswith("claude-sonnet-4-5")
    )
    assert "≈o200k_base" in line and "3.00" in line and "15.00" in line


def test_list_json_and_provider_filter() -> None:
    result = runner.invoke(app, ["models", "list", "--provider", "google", "--json"])
    data = json.loads(result.stdout)
    assert {m["provider"] for m in data["models"]} == {"google"}
    assert any(m["id"] == "gemma-3-27b" for m in data["models"])
    bad = runner.invoke(app, ["models", "list", "--provider", "nobody"])
    assert bad.exit_code == 2 and "known:" in bad.stderr


def test_list_gpus() -> None:
    result = runner.invoke(app, ["models", "list", "--gpus"])
    assert result.exit_code == 0
    assert "H100-SXM" in result.output and "3,350 GB/s" in result.output
    assert "hopper" in result.output and "cdna3" in result.output


def test_show_resolves_dated_id() -> None:
    result = runner.invoke(app, ["models", "show", "claude-sonnet-4-5-20250929"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("claude-sonnet-4-5")
    assert "tier above 200,000 prompt tokens (all tokens)" in result.output


def test_show_json_architecture() -> None:
    result = runner.invoke(app, ["models", "show", "deepseek-v3", "--json"])
    data = json.loads(result.stdout)
    assert data["architecture"]["attention"]["type"] == "mla"
    assert data["architecture"]["attention"]["kv_lora_rank"] == 512
    assert data["pricing"] is None


def test_validate_ok_and_bad(tmp_path: Path) -> None:
    ok = runner.invoke(app, ["models", "validate"])
    assert ok.exit_code == 0 and "ok (" in ok.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("models:\n  - id: x\n    pricing: {input: 1}\n", encoding="utf-8")
    result = runner.invoke(app, ["models", "validate", str(bad)])
    assert result.exit_code == 1
    assert f"{bad}:3: model 'x': pricing.output: expected a price" in result.stderr


def test_malformed_catalog_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: [{id: a, context_window: lots}]\n", encoding="utf-8")
    result = runner.invoke(app, ["price", "-m", "a", "-i", "1", "--catalog", str(bad)])
    assert result.exit_code == 2
    assert "context_window: expected an integer >= 1, got 'lots'" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


# --- genai-prices ---------------------------------------------------------------------


def test_shipped_prices_equal_genai_prices() -> None:
    pytest.importorskip("genai_prices")
    from tokcost.catalog.sync import compare_prices

    report = compare_prices(list(load_catalog().models))
    assert len(report.matched) >= 25
    assert [d.to_dict() for d in report.diffs] == []


def test_sync_prices_reports_and_writes(tmp_path: Path) -> None:
    pytest.importorskip("genai_prices")
    copy = tmp_path / "models.yaml"
    text = shipped_path("models.yaml").read_text(encoding="utf-8")
    text = text.replace(
        "pricing: {input: 2.50, cached_input: 1.25, output: 10.00,",
        "pricing: {input: 2.75, cached_input: 1.25, output: 10.00,",
        1,
    ).replace("      cached_input: 0.125\n      output: 10.00\n", "      output: 10.00\n", 1)
    copy.write_text(text, encoding="utf-8")
    report = runner.invoke(app, ["models", "sync-prices", "--catalog", str(copy), "--json"])
    data = json.loads(report.stdout)
    changes = {(d["model"], d["field"]): (d["catalog"], d["database"]) for d in data["differences"]}
    assert changes == {
        ("gpt-4o", "input"): ("2.75", "2.5"),
        ("gemini-2.5-pro", "cached_input"): (None, "0.125"),
    }
    assert data["written"] == 0
    written = runner.invoke(app, ["models", "sync-prices", "--catalog", str(copy), "--write"])
    assert written.exit_code == 0 and "wrote 2 change(s)" in written.output
    assert load_catalog(copy).resolve("gpt-4o").pricing.input == 2.5  # type: ignore[union-attr]
    assert "# Chat overhead" in copy.read_text(encoding="utf-8")  # comments survive
    again = runner.invoke(app, ["models", "sync-prices", "--catalog", str(copy), "--json"])
    assert json.loads(again.stdout)["differences"] == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["models.yaml"]


def test_sync_prices_without_package(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def fake_import(name: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        if name.startswith("genai_prices"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    result = runner.invoke(app, ["models", "sync-prices"])
    assert result.exit_code == 1
    assert "needs the 'genai-prices' package: pip install 'genai-prices>=0.2.3,<0.3'" in result.stderr


# --- Mistral tokenizers through mistral-common ------------------------------------------

TEXT = "Bonjour le monde! Mistral tokenizers, counted exactly: 12345 — ünïcödé 日本語.\n" * 20


@pytest.mark.parametrize(
    ("model_id", "factory"),
    [
        pytest.param("mistral-7b-v0.1", "v1", id="v1"),
        pytest.param("mistral-large-2411", "v7", id="v7"),
    ],
)
def test_mistral_counts_equal_mistral_common(model_id: str, factory: str) -> None:
    pytest.importorskip("sentencepiece")
    mc = pytest.importorskip("mistral_common.tokens.tokenizers.mistral")
    from tokcost.tokenizers import model_choice

    ours = model_choice(load_catalog().resolve(model_id)).load()
    theirs = getattr(mc.MistralTokenizer, factory)().instruct_tokenizer.tokenizer
    assert ours.exact
    assert ours.count(TEXT) == len(theirs.encode(TEXT, bos=False, eos=False))


def test_missing_mistral_common_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "mistral_common" else real(name, *a),
    )
    entry = load_catalog().resolve("mixtral-8x7b")
    with pytest.raises(MissingDependency, match=r"pip install 'mistral-common>=1.5'"):
        _ = entry.tokenizer
    assert entry.tokenizer_spec is not None  # listing still works


# --- each --json document is the library result's to_dict() --------------------------------


@pytest.mark.parametrize(
    ("args", "call"),
    [
        pytest.param(["models", "list", "--json"], lambda: tokcost.list_models(), id="list"),
        pytest.param(["models", "list", "--provider", "google", "--json"],
                     lambda: tokcost.list_models(provider="google"), id="list-provider"),
        pytest.param(["models", "list", "--gpus", "--json"], lambda: tokcost.list_gpus(),
                     id="list-gpus"),
        pytest.param(["models", "show", "deepseek-v3", "--json"],
                     lambda: tokcost.show_model("deepseek-v3"), id="show-mla"),
        pytest.param(["models", "show", "claude-sonnet-4-5-20250929", "--json"],
                     lambda: tokcost.show_model("claude-sonnet-4-5-20250929"), id="show-tiers"),
        pytest.param(["models", "validate", "--json"], lambda: tokcost.validate_catalog(),
                     id="validate"),
    ],
)
def test_json_is_the_result_dict(args: list[str], call: Any) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json.loads(json.dumps(call().to_dict()))


def test_validate_json_of_a_broken_file_is_the_result_dict(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("models:\n  - id: x\n    pricing: {input: 1}\n    colour: red\n",
                   encoding="utf-8")
    result = runner.invoke(app, ["models", "validate", str(bad), "--json"])
    assert result.exit_code == 1
    check = tokcost.validate_catalog(bad)
    assert json.loads(result.stdout) == json.loads(json.dumps(check.to_dict()))
    assert not check.valid and len(check.problems) == 2


def test_show_a_model_of_a_user_catalog(tmp_path: Path) -> None:
    own = tmp_path / "mine.yaml"
    own.write_text("extends: shipped\nmodels:\n  - id: my-model\n    provider: me\n"
                   "    tokenizer: tiktoken:cl100k_base\n    pricing: {input: 1.5, output: 3}\n",
                   encoding="utf-8")
    result = runner.invoke(app, ["models", "show", "my-model", "--catalog", str(own), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data == tokcost.show_model("my-model", catalog=own).to_dict()
    assert data["pricing"]["input"] == "1.5" and data["tokenizer"] == "tiktoken:cl100k_base"
    listed = runner.invoke(app, ["models", "list", "--provider", "me", "--catalog", str(own)])
    assert listed.exit_code == 0 and "my-model" in listed.output


def test_sync_prices_json_is_the_result_dict(tmp_path: Path) -> None:
    pytest.importorskip("genai_prices")
    copy = tmp_path / "models.yaml"
    copy.write_text(shipped_path("models.yaml").read_text(encoding="utf-8"), encoding="utf-8")
    result = runner.invoke(app, ["models", "sync-prices", "--catalog", str(copy), "--json"])
    sync = tokcost.sync_prices(tokcost.SyncPricesRequest(catalog=copy))
    assert json.loads(result.stdout) == json.loads(json.dumps(sync.to_dict()))
    assert not sync.shipped and sync.written == 0


def test_unknown_provider_names_the_flag() -> None:
    result = runner.invoke(app, ["models", "list", "--provider", "nobody"])
    assert result.exit_code == 2
    assert "--provider 'nobody' matches no model; known: " in result.stderr
    with pytest.raises(UsageError, match="provider='nobody' matches no model") as info:
        tokcost.list_models(provider="nobody")
    assert info.value.param == "provider"
