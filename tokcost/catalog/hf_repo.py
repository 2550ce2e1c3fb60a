"""``hf:ORG/REPO``: config.json and safetensors headers from the local Hugging Face cache, else
from the hub when it answers within seconds (headers by HTTP range requests)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlparse

import huggingface_hub

from tokcost import net
from tokcost.catalog.hf_model import HfModel, make_entry, read_config_json, read_weights
from tokcost.catalog.safetensors_meta import Checkpoint, TensorMeta, read_checkpoint, shard_names
from tokcost.errors import InputError, UsageError

CACHE = "the local Hugging Face cache"
HUB = "the Hugging Face hub"
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def fetch_repo(repo: str, *, model_id: str | None = None) -> HfModel:
    """The entry of ``repo`` from its config and headers: from the cache, else the hub."""
    repo = repo.strip()
    if not _REPO_ID.match(repo) or ".." in repo:
        raise UsageError(f"'hf:{repo}' is neither a Hugging Face model id (hf:ORG/REPO) nor an "
                         "existing folder or config.json")
    cached = huggingface_hub.try_to_load_from_cache(repo, "config.json")
    notes: list[str] = []
    origin = CACHE
    if isinstance(cached, str):
        config_file = Path(cached)
        folder = config_file.parent
        names = shard_names(folder)
        checkpoint = None
        if names is not None and all((folder / n).is_file() for n in names):
            checkpoint = read_checkpoint(folder, names)
        elif _hub_answers() is None:
            checkpoint, origin = hub_checkpoint(repo), HUB
        else:
            notes.append(f"the checkpoint's shards are not in {CACHE} and the hub does "
                         "not answer")
        tokenizer = (folder / "tokenizer.json").is_file()
    else:
        why = _hub_answers()
        if why is not None:
            raise InputError(f"hf:{repo} is not in {CACHE} and {why}; run `hf download {repo}` "
                             "on a connected machine, or give the path of its config.json or "
                             "model folder")
        config_file, checkpoint, origin = download_config(repo), hub_checkpoint(repo), HUB
        tokenizer = hub_has_file(repo, "tokenizer.json")
    where = f"hf:{repo} config.json"
    config = read_config_json(config_file, where)
    weights, more, unsized = read_weights(config, checkpoint, where)
    model_id = model_id or repo.rsplit("/", 1)[1].lower()
    url = f"https://huggingface.co/{repo}"
    entry = make_entry(config, where, model_id, weights, f"{url}/blob/main/config.json",
                       f"hf:{repo}" if tokenizer else None, (repo,), url)
    return HfModel(entry, str(config_file), origin, weights,
                   len(checkpoint.files) if checkpoint else 0,
                   (checkpoint.bytes_read or None) if checkpoint else None, (*notes, *more),
                   unsized)


def _hub_answers() -> str | None:
    """None when the hub can be asked; else why not, in words."""
    constants = huggingface_hub.constants
    flag = os.environ.get("HF_HUB_OFFLINE", "").strip().lower()
    if constants.HF_HUB_OFFLINE or flag in ("1", "true", "yes", "on"):
        return "HF_HUB_OFFLINE is set"
    if not net.reachable(constants.ENDPOINT):
        return f"the hub ({urlparse(constants.ENDPOINT).hostname}) is unreachable"
    return None


def _hub_error(repo: str, what: str, exc: Exception) -> InputError:
    name = type(exc).__name__
    if "RepositoryNotFound" in name:
        return InputError(f"hf:{repo}: no such model on the hub (or it is private: log in "
                          "with hf auth login or set HF_TOKEN)")
    why = f"{name}: {str(exc).splitlines()[0][:120] if str(exc) else 'no detail'}"
    if "Gated" in name:
        why = ("it is gated: accept its licence on the hub, then log in (hf auth login) or "
               "set HF_TOKEN")
    return InputError(f"cannot read {what} of hf:{repo} from the hub ({why})")


def download_config(repo: str) -> Path:
    try:
        return Path(huggingface_hub.hf_hub_download(repo, "config.json"))
    except Exception as exc:  # gated, missing repo or file, HTTP errors
        raise _hub_error(repo, "config.json", exc) from exc


def hub_checkpoint(repo: str) -> Checkpoint | None:
    """The shards' headers of ``repo`` from the hub, or None when it has no safetensors."""
    try:
        meta = huggingface_hub.HfApi().get_safetensors_metadata(repo)
    except Exception as exc:
        if "NotASafetensors" in type(exc).__name__:
            return None
        raise _hub_error(repo, "the safetensors headers", exc) from exc
    tensors = [TensorMeta(name, info.dtype, tuple(info.shape),
                          info.data_offsets[1] - info.data_offsets[0])
               for file_meta in meta.files_metadata.values()
               for name, info in file_meta.tensors.items()]
    return Checkpoint(tuple(map(Path, meta.files_metadata)), tuple(tensors), 0)


def hub_has_file(repo: str, filename: str) -> bool:
    """Whether the hub holds ``filename`` in ``repo`` (False when it cannot say)."""
    try:
        return bool(huggingface_hub.HfApi().file_exists(repo, filename))
    except Exception:  # a failed check leaves the tokenizer out, nothing worse
        return False
