"""``tokcost models import`` and ``kvmem estimate --config`` (issue 12, item 2).

The YAML ``models import`` prints is a catalog: loaded back through the catalog's own
loader it gives the entry it was made from, field by field.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from safetensors_builder import gpt_oss_tensors, write_checkpoint
from typer.testing import CliRunner

import tokcost
from tokcost.catalog import load_catalog
from tokcost.catalog.hf_model import load_config
from tokcost.cli.app import app

FIXTURES = Path(__file__).parent / "fixtures" / "hf_configs"
FAMILY_CONFIGS = Path(__file__).parent / "fixtures" / "hf_configs_families"
FAMILIES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())
runner = CliRunner()


def gpt_oss_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "gpt-oss-120b"
    write_checkpoint(folder, gpt_oss_tensors())
    shutil.copy(FIXTURES / "gpt-oss-120b" / "config.json", folder)
    return folder


def one_line_error(output: str) -> None:
    assert "Traceback" not in output
    lines = [ln for ln in output.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1, output


@pytest.mark.parametrize("name", FAMILIES)
def test_import_round_trips_through_the_loader(tmp_path: Path, name: str) -> None:
    """Every family's entry, written as YAML and read back by load_catalog, is itself."""
    folder = tmp_path / name
    shutil.copytree(FIXTURES / name, folder)
    made = tokcost.import_model(tokcost.ImportModelRequest(source=folder,
                                                          model_id=f"imported-{name}"))
    path = tmp_path / "mine.yaml"
    path.write_text(made.yaml)
    back = load_catalog(path).resolve(f"imported-{name}")
    assert back == made.entry
    # and it extends the shipped catalog: its GPUs and models are there too
    assert load_catalog(path).resolve("gpt-4o").id == "gpt-4o"


def test_import_with_weights_round_trips_exact_bytes(tmp_path: Path) -> None:
    made = tokcost.import_model(tokcost.ImportModelRequest(source=gpt_oss_folder(tmp_path),
                                                          model_id="my-oss"))
    path = tmp_path / "mine.yaml"
    path.write_text(made.yaml)
    back = load_catalog(path).resolve("my-oss")
    assert back == made.entry
    a = back.architecture
    assert a is not None
    assert (a.weights_bytes, a.expert_weights_bytes) == (65_248_815_744, 60_993_699_840)
    assert (a.params_total, a.params_active) == (116_829_156_672, 5_711_982_912)
    assert "weights_bytes: 65248815744   # 60.77 GiB" in made.yaml


def test_small_sizes_are_written_so_the_parser_reads_them_back(tmp_path: Path) -> None:
    """Bare byte counts under 1 MiB are refused as sizes: those are written in KiB."""
    from tokcost.catalog.entry_yaml import catalog_text

    entry = load_config(FIXTURES / "qwen3-8b").entry
    assert entry.architecture is not None
    arch = dataclasses.replace(entry.architecture, weights_bytes=1536, params_total=768,
                               params_active=768)
    entry = dataclasses.replace(entry, id="tiny-weights", architecture=arch)
    path = tmp_path / "t.yaml"
    path.write_text(catalog_text(entry))
    assert "weights_bytes: 1.5KiB" in path.read_text()
    assert load_catalog(path).resolve("tiny-weights") == entry


def test_cli_prints_yaml_on_stdout_and_notes_on_stderr(tmp_path: Path) -> None:
    result = runner.invoke(app, ["models", "import", str(gpt_oss_folder(tmp_path))])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# tokcost models import ")
    assert "\nversion: 1\nextends: shipped\nmodels:\n  - id: \"gpt-oss-120b\"\n" in result.stdout
    assert "note: weights from 37 safetensors header(s)" in result.stderr
    assert "note:" not in result.stdout


def test_cli_writes_atomically_and_never_overwrites_without_force(tmp_path: Path) -> None:
    out = tmp_path / "mine.yaml"
    source = str(FIXTURES / "qwen3-8b")
    first = runner.invoke(app, ["models", "import", source, "--id", "q3", "-o", str(out)])
    assert first.exit_code == 0, first.output
    assert first.stdout == "" and f"wrote {out}" in first.stderr
    assert load_catalog(out).resolve("q3").architecture is not None
    again = runner.invoke(app, ["models", "import", source, "-o", str(out)])
    assert again.exit_code == 2 and "exists; pass --force to overwrite it" in again.stderr
    one_line_error(again.stderr)
    forced = runner.invoke(app, ["models", "import", source, "--id", "q4", "-o", str(out),
                                 "--force"])
    assert forced.exit_code == 0, forced.output
    assert load_catalog(out).resolve("q4").id == "q4"
    assert [p.name for p in tmp_path.iterdir()] == ["mine.yaml"]  # no temporary left


def test_cli_json(tmp_path: Path) -> None:
    result = runner.invoke(app, ["models", "import", str(gpt_oss_folder(tmp_path)), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["entry"]["architecture"]["params_total"] == 116_829_156_672
    assert data["shards"] == 37 and data["header_bytes"] > 0 and data["file"] is None
    assert data["yaml"].startswith("# tokcost models import")


def test_alias_of_another_shipped_model_is_left_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """hf:Qwen/Qwen3-8B imported as 'my-qwen': the alias Qwen/Qwen3-8B is the shipped
    qwen3-8b's, so the file would not load beside the shipped catalog with it."""
    from tokcost.app import models as app_models
    from tokcost.catalog.hf_model import HfModel

    loaded = load_config(FIXTURES / "qwen3-8b", model_id="my-qwen")
    entry = dataclasses.replace(loaded.entry, aliases=("Qwen/Qwen3-8B",))
    monkeypatch.setattr(app_models, "load_model_source",
                        lambda source, model_id=None: HfModel(entry, "c.json", "hub", None, 0,
                                                              None))
    made = tokcost.import_model(tokcost.ImportModelRequest(source="hf:Qwen/Qwen3-8B"))
    assert made.entry.aliases == ()
    assert any("alias Qwen/Qwen3-8B left out: the shipped catalog's qwen3-8b has it" in n
               for n in made.notes)
    path = tmp_path / "m.yaml"
    path.write_text(made.yaml)
    assert load_catalog(path).resolve("my-qwen").aliases == ()


def test_an_id_that_is_a_shipped_alias_stands_alone(tmp_path: Path) -> None:
    made = tokcost.import_model(tokcost.ImportModelRequest(
        source=FIXTURES / "llama-3.1-8b", model_id="llama-3.1-8b-instruct"))
    assert "\nextends: shipped\n" not in made.yaml
    path = tmp_path / "m.yaml"
    path.write_text(made.yaml)
    assert [m.id for m in load_catalog(path).models] == ["llama-3.1-8b-instruct"]


@pytest.mark.parametrize(("args", "code", "fragment"), [
    (["models", "import"], 2, "missing argument 'SOURCE'"),
    (["models", "import", "nowhere/at/all"], 2, "'nowhere/at/all' does not exist; give a "
     "config.json or a model folder"),
    (["models", "import", "hf:nowhere"], 2, "neither a Hugging Face model id"),
    (["models", "import", "hf:Qwen/Qwen3-8B"], 1, "HF_HUB_OFFLINE is set"),
    (["models", "import", "{fixtures}/qwen3-8b", "-o", "{tmp}/no/such/dir/x.yaml"], 1,
     "does not exist; create it first"),
    (["models", "import", "{fixtures}/qwen3-8b", "-o", "{tmp}"], 2, "is a directory"),
    (["models", "import", " "], 2, "SOURCE is empty; give hf:ORG/REPO"),
    (["kvmem", "estimate"], 2, "give --model ID (a catalog id or hf:ORG/REPO) or --config PATH"),
    (["kvmem", "estimate", "-m", "llama-3.1-8b", "--config", "{fixtures}/llama-3.1-8b"], 2,
     "give --model ID or --config PATH, not both"),
    (["kvmem", "estimate", "--config", "{tmp}/missing"], 2, "does not exist; give a config.json"),
    (["kvmem", "estimate", "--config", "{fixtures}/opt-13b", "--gpu", "H100"], 2,
     "no safetensors headers beside it, and tokcost has no parameter rules for model_type "
     "opt, so the weights' size is unknown; give the model folder with its shards, or "
     "--kv-memory SIZE without --gpu and --bandwidth"),
    (["kvmem", "estimate", "--config", "{bad}"], 1, "num_hidden_layers is 'x'; expected the "
     "number of layers"),
])
def test_cli_errors_are_one_line(tmp_path: Path, args: list[str], code: int, fragment: str) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "config.json").write_text('{"num_hidden_layers": "x"}')
    args = [a.format(fixtures=FIXTURES, tmp=tmp_path, bad=bad) for a in args]
    result = runner.invoke(app, args)
    assert result.exit_code == code, result.output
    assert fragment in result.output, result.output
    one_line_error(result.output)


@pytest.mark.parametrize(("family", "path", "value", "fragment"), [
    # A value out of range in a family that has parameter rules is named with its field, not
    # reported as a family without rules (the error dropped config_weights' reason).
    ("kimi-k2", ("n_shared_experts",), 10**12, "and n_shared_experts is 1000000000000; "
     "expected the shared experts"),
    ("nemotron-3-nano-30b-a3b", ("moe_latent_size",), 10**15, "and moe_latent_size is "
     "1000000000000000; expected the latent MoE width"),
    ("llama-4-scout", ("vision_config", "hidden_size"), 10**12, "and vision_config: "
     "hidden_size is 1000000000000; expected the vision width"),
])
def test_weights_errors_name_the_config_field(tmp_path: Path, family: str, path: tuple[str, ...],
                                              value: int, fragment: str) -> None:
    config = json.loads((FAMILY_CONFIGS / family / "config.json").read_text())
    node = config
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = runner.invoke(app, ["kvmem", "estimate", "--config", str(tmp_path), "--gpu", "H200"])
    assert result.exit_code == 2, result.output
    assert fragment in result.output, result.output
    assert "no rule" not in result.output and "model_type" not in result.output
    one_line_error(result.output)


def test_kvmem_config_cli_matches_the_catalog(tmp_path: Path) -> None:
    by_config = runner.invoke(app, ["kvmem", "estimate", "--config",
                                    str(FIXTURES / "gemma-3-27b"), "--context", "8k,128k",
                                    "--kv-memory", "20GiB", "--json"])
    by_id = runner.invoke(app, ["kvmem", "estimate", "-m", "gemma-3-27b", "--context",
                                "8k,128k", "--kv-memory", "20GiB", "--json"])
    assert by_config.exit_code == by_id.exit_code == 0, by_config.output
    a, b = json.loads(by_config.stdout), json.loads(by_id.stdout)
    assert a["contexts"] == b["contexts"] and a["bytes_per_token"] == b["bytes_per_token"]
    table = runner.invoke(app, ["kvmem", "estimate", "--config", str(FIXTURES / "gemma-3-27b"),
                                "--kv-memory", "20GiB"])
    assert table.stdout.startswith("gemma-3-27b: 10 full, 52 sliding (1,024-token window)")
    assert "note: weights from config.json (no safetensors headers beside it): " \
        "27,432,406,640 parameters" in table.stderr


def test_import_request_refuses_an_empty_source_naming_the_field() -> None:
    from tokcost.errors import UsageError

    with pytest.raises(UsageError, match="source is empty") as info:
        tokcost.ImportModelRequest(source="")
    assert info.value.param == "source"
    assert tokcost.ImportModelRequest(source="x", output="o.yaml").output == Path("o.yaml")
