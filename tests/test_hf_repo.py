"""``hf:ORG/REPO`` models (issue 12, item 2): the local Hugging Face cache first, the hub
only when it answers, and one line saying what to do when neither can.

The cache is built in tmp_path in huggingface_hub's documented layout
(``models--ORG--REPO/refs/main`` -> ``snapshots/<commit>/``, files linked to ``blobs/``);
the hub is never called: its two entry points are replaced by fakes.
"""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest
from safetensors_builder import copy_sparse, gpt_oss_tensors, llama_tensors, write_checkpoint
from typer.testing import CliRunner

import tokcost
from tokcost.catalog import hf_repo
from tokcost.catalog.hf_model import load_hf_model
from tokcost.catalog.safetensors_meta import Checkpoint, TensorMeta
from tokcost.cli.app import app
from tokcost.errors import InputError, UsageError

FIXTURES = Path(__file__).parent / "fixtures" / "hf_configs"
COMMIT = "8fe3d0c29b8f4e5a9d3c7b1a2f6e4d0c9b8a7f6e"


@pytest.fixture
def hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Hugging Face cache that huggingface_hub reads (HF_HUB_CACHE)."""
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    return cache


def cache_repo(cache: Path, repo: str, source: Path) -> Path:
    """Put the files of ``source`` into the cache as ``hf download`` leaves them."""
    root = cache / f"models--{repo.replace('/', '--')}"
    snapshot = root / "snapshots" / COMMIT
    (root / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text(COMMIT)
    for i, f in enumerate(sorted(source.iterdir())):
        blob = root / "blobs" / f"{i:040x}"
        copy_sparse(f, blob)
        (snapshot / f.name).symlink_to(blob)
    return snapshot


def gpt_oss_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "src"
    write_checkpoint(folder, gpt_oss_tensors())
    shutil.copy(FIXTURES / "gpt-oss-120b" / "config.json", folder)
    return folder


def test_cached_repo_reads_config_and_headers(hub_cache: Path, tmp_path: Path) -> None:
    snapshot = cache_repo(hub_cache, "openai/gpt-oss-120b", gpt_oss_folder(tmp_path))
    (snapshot / "tokenizer.json").write_text("{}")
    loaded = load_hf_model("hf:openai/gpt-oss-120b")
    entry = loaded.entry
    assert entry.id == "gpt-oss-120b" and entry.aliases == ("openai/gpt-oss-120b",)
    assert entry.tokenizer_spec == "hf:openai/gpt-oss-120b"
    assert entry.architecture is not None and entry.architecture.weights_bytes == 65_248_815_744
    assert loaded.origin == hf_repo.CACHE and loaded.shards == 37
    assert entry.source == "https://huggingface.co/openai/gpt-oss-120b"


def test_kvmem_takes_hf_models(hub_cache: Path, tmp_path: Path) -> None:
    cache_repo(hub_cache, "openai/gpt-oss-120b", gpt_oss_folder(tmp_path))
    by_repo = tokcost.estimate_memory(tokcost.KvRequest.of(
        model="hf:openai/gpt-oss-120b", contexts=[8192], gpu="H100"))
    by_id = tokcost.estimate_memory(tokcost.KvRequest.of(
        model="gpt-oss-120b", contexts=[8192], gpu="H100"))
    assert by_repo.bytes_per_token == by_id.bytes_per_token == 73_728
    assert by_repo.fit is not None
    assert by_repo.fit.weights_bytes == 65_248_815_744  # the catalog: 60.8 GiB
    result = CliRunner().invoke(app, ["kvmem", "estimate", "-m", "hf:openai/gpt-oss-120b",
                                      "--context", "8k", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["model"] == "gpt-oss-120b"


@pytest.mark.parametrize(("env", "probe", "fragment"), [
    ({"HF_HUB_OFFLINE": "1"}, None, "is not in the local Hugging Face cache and "
     "HF_HUB_OFFLINE is set; run `hf download Qwen/Qwen3-8B` on a connected machine"),
    ({"HF_HUB_OFFLINE": ""}, OSError("no route"), "and the hub (huggingface.co) is unreachable"),
])
def test_offline_is_one_line_naming_what_to_do(
    hub_cache: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
    probe: Exception | None, fragment: str,
) -> None:
    from huggingface_hub import constants

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "https://huggingface.co")
    if probe is not None:
        def refuse(*args: Any, **kwargs: Any) -> socket.socket:
            raise probe
        monkeypatch.setattr(socket, "create_connection", refuse)
    with pytest.raises(InputError) as info:
        load_hf_model("hf:Qwen/Qwen3-8B")
    assert fragment in str(info.value) and "\n" not in str(info.value)
    result = CliRunner().invoke(app, ["kvmem", "estimate", "-m", "hf:Qwen/Qwen3-8B"])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert result.stderr.count("\n") == 1 and fragment in result.stderr


class FakeHub:
    """The hub's answers: config.json into the cache, headers by range requests."""

    def __init__(self, tmp_path: Path, config: Path, tensors: list[TensorMeta] | None) -> None:
        self.tmp_path, self.config, self.tensors = tmp_path, config, tensors
        self.calls: list[str] = []

    def download_config(self, repo: str) -> Path:
        self.calls.append(f"config {repo}")
        target = self.tmp_path / "downloaded-config.json"
        shutil.copy(self.config, target)
        return target

    def checkpoint(self, repo: str) -> Checkpoint | None:
        self.calls.append(f"headers {repo}")
        if self.tensors is None:
            return None
        return Checkpoint((Path("model.safetensors"),), tuple(self.tensors), 0)


@pytest.fixture
def online(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hf_repo, "_hub_answers", lambda: None)
    monkeypatch.setattr(hf_repo, "hub_has_file", lambda repo, name: True)


def test_hub_when_the_cache_lacks_the_repo(hub_cache: Path, tmp_path: Path, online: None,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    tensors = [TensorMeta("model.embed_tokens.weight", "BF16", (151936, 4096), 151936 * 4096 * 2)]
    hub = FakeHub(tmp_path, FIXTURES / "qwen3-8b" / "config.json", tensors)
    monkeypatch.setattr(hf_repo, "download_config", hub.download_config)
    monkeypatch.setattr(hf_repo, "hub_checkpoint", hub.checkpoint)
    loaded = load_hf_model("hf:Qwen/Qwen3-8B")
    assert hub.calls == ["config Qwen/Qwen3-8B", "headers Qwen/Qwen3-8B"]
    assert loaded.origin == hf_repo.HUB and loaded.header_bytes is None
    a = loaded.entry.architecture
    assert a is not None and a.weights_bytes == 151936 * 4096 * 2 and a.layers == 36


def test_cached_config_without_shards_asks_the_hub_for_headers(
    hub_cache: Path, tmp_path: Path, online: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    only_config = tmp_path / "cfg"
    only_config.mkdir()
    shutil.copy(FIXTURES / "qwen3-8b" / "config.json", only_config)
    cache_repo(hub_cache, "Qwen/Qwen3-8B", only_config)
    hub = FakeHub(tmp_path, only_config / "config.json", None)
    monkeypatch.setattr(hf_repo, "download_config", hub.download_config)
    monkeypatch.setattr(hf_repo, "hub_checkpoint", hub.checkpoint)
    loaded = load_hf_model("hf:Qwen/Qwen3-8B")
    assert hub.calls == ["headers Qwen/Qwen3-8B"]  # the config came from the cache
    # The hub holds no safetensors: the weights follow from config.json.
    assert loaded.shards == 0 and loaded.weights is not None
    assert loaded.weights.params == 8_190_735_360


def test_cached_config_offline_sizes_the_cache_without_weights(hub_cache: Path,
                                                               tmp_path: Path) -> None:
    only_config = tmp_path / "cfg"
    only_config.mkdir()
    shutil.copy(FIXTURES / "qwen3-8b" / "config.json", only_config)
    cache_repo(hub_cache, "Qwen/Qwen3-8B", only_config)
    loaded = load_hf_model("hf:Qwen/Qwen3-8B")  # HF_HUB_OFFLINE=1 in every test
    assert loaded.shards == 0
    assert any("not in the local Hugging Face cache and the hub does not answer" in n
               for n in loaded.notes)
    assert any(n.startswith("weights from config.json") for n in loaded.notes)
    r = tokcost.estimate_memory(tokcost.KvRequest.of(model="hf:Qwen/Qwen3-8B", contexts=[4096]))
    assert r.bytes_per_token == 36 * 2 * 8 * 128 * 2
    fit = tokcost.estimate_memory(tokcost.KvRequest.of(model="hf:Qwen/Qwen3-8B",
                                                       contexts=[4096], gpu="H100")).fit
    assert fit is not None and fit.weights_bytes == 8_190_735_360 * 2
    opt = tmp_path / "opt"  # a family without parameter rules still asks for the shards
    opt.mkdir()
    shutil.copy(FIXTURES / "opt-13b" / "config.json", opt)
    cache_repo(hub_cache, "facebook/opt-13b", opt)
    with pytest.raises(UsageError, match="no safetensors headers beside it, and tokcost has no "
                       "parameter rules for model_type opt"):
        tokcost.estimate_memory(tokcost.KvRequest.of(model="hf:facebook/opt-13b",
                                                     contexts=[4096], gpu="H100"))


@pytest.mark.parametrize(("name", "fragment"), [
    ("GatedRepoError", "it is gated: accept its licence on the hub"),
    ("RepositoryNotFoundError", "no such model on the hub"),
    ("HfHubHTTPError", "HfHubHTTPError: 500 Server Error"),
])
def test_hub_errors_say_what_to_do(hub_cache: Path, online: None,
                                   monkeypatch: pytest.MonkeyPatch, name: str,
                                   fragment: str) -> None:
    error = type(name, (Exception,), {})

    def fail(*args: Any, **kwargs: Any) -> str:
        raise error("500 Server Error\nmore lines")

    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fail)
    with pytest.raises(InputError) as info:
        load_hf_model("hf:org/private-model")
    assert fragment in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("spec", ["hf:not-a-repo", "hf:a/b/c", "hf:../x/y", "hf:x/", "hf:"])
def test_malformed_repo_ids(spec: str) -> None:
    with pytest.raises(UsageError, match="neither a Hugging Face model id"):
        load_hf_model(spec)


def test_hf_path_is_a_local_folder(tmp_path: Path) -> None:
    folder = tmp_path / "tiny"
    write_checkpoint(folder, [llama_tensors(2, 256, 512, 4, 2, 1000)], index=False)
    config = json.loads((FIXTURES / "llama-3.1-8b" / "config.json").read_text())
    config.update(num_hidden_layers=2, hidden_size=256, num_attention_heads=4,
                  num_key_value_heads=2, vocab_size=1000)
    (folder / "config.json").write_text(json.dumps(config))
    loaded = load_hf_model(f"hf:{folder}")
    assert loaded.entry.id == "tiny" and loaded.shards == 1


def test_hub_headers_become_tensors(monkeypatch: pytest.MonkeyPatch) -> None:
    """What HfApi.get_safetensors_metadata answers (the shards' headers, read by range
    requests) becomes the same TensorMeta a local header gives."""
    import huggingface_hub
    from huggingface_hub.utils import (
        NotASafetensorsRepoError,
        SafetensorsFileMetadata,
        SafetensorsRepoMetadata,
        TensorInfo,
    )

    def files(tensors: dict[str, TensorInfo]) -> SafetensorsFileMetadata:
        return SafetensorsFileMetadata(metadata={}, tensors=tensors)

    meta = SafetensorsRepoMetadata(
        metadata=None, sharded=True, weight_map={},
        files_metadata={
            "model-00001-of-00002.safetensors": files({
                "model.embed_tokens.weight": TensorInfo("BF16", [10, 4], (0, 80))}),
            "model-00002-of-00002.safetensors": files({
                "model.layers.0.mlp.experts.gate_up_proj_blocks":
                    TensorInfo("U8", [2, 8, 1, 16], (0, 256))}),
        },
    )
    monkeypatch.setattr(huggingface_hub.HfApi, "get_safetensors_metadata",
                        lambda self, repo: meta)
    checkpoint = hf_repo.hub_checkpoint("org/model")
    assert checkpoint is not None and len(checkpoint.files) == 2
    assert checkpoint.tensors == (
        TensorMeta("model.embed_tokens.weight", "BF16", (10, 4), 80),
        TensorMeta("model.layers.0.mlp.experts.gate_up_proj_blocks", "U8", (2, 8, 1, 16), 256),
    )

    def no_safetensors(self: object, repo: str) -> None:
        raise NotASafetensorsRepoError("no model.safetensors")

    monkeypatch.setattr(huggingface_hub.HfApi, "get_safetensors_metadata", no_safetensors)
    assert hf_repo.hub_checkpoint("org/model") is None
