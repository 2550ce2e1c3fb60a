"""From a catalog entry to a runnable reference model, its tokenizer and its KV estimate.

The catalog names the shape (``architecture``) and the tokenizer; the weights of a
model live beside this module as ``data/<id with _ for ->.npz`` (``tiny-ref`` ->
``data/tiny_ref.npz``) unless the caller passes a file. A model with no shipped
weights runs on seeded random weights (output is noise, the cache is real).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tokcost.errors import UsageError
from tokcost.reference.config import RefConfig
from tokcost.reference.errors import ModelTooLarge, WeightsMismatch
from tokcost.reference.model import Transformer
from tokcost.reference.weights import init_weights, load_weights

if TYPE_CHECKING:
    from tokcost.adapters.base import Tokenizer
    from tokcost.catalog.schema import ModelEntry

DATA_DIR = Path(__file__).resolve().parent / "data"


@dataclass
class LoadedModel:
    model: Transformer
    weights: str  # the file read, or "random (seed N)"
    trained: bool


def config_for(entry: ModelEntry) -> RefConfig:
    """The reference shape of a catalog entry; ModelTooLarge names ``kvmem estimate``."""
    if entry.architecture is None:
        raise ModelTooLarge(
            f"model '{entry.id}' has no architecture in the catalog, so there is nothing to "
            "run; use tiny-ref instead, or add layers/hidden_size/heads/head_dim/vocab_size"
        )
    arch = entry.architecture
    if arch.attention.type != "full":
        raise ModelTooLarge(
            f"model '{entry.id}' uses {arch.attention.type} attention, which the reference "
            f"path does not implement; size its cache with: tokcost kvmem estimate -m {entry.id}"
        )
    return RefConfig.from_architecture(entry.id, arch, entry.context_window)


def shipped_weights(model_id: str) -> Path:
    """The weights file the catalog names for ``model_id`` (may not exist yet)."""
    from tokcost.catalog import load_catalog

    entry = load_catalog().resolve(model_id)
    return Path(entry.weights) if entry.weights else DATA_DIR / f"{entry.id}.npz"


def load_model(
    entry: ModelEntry, *, weights: str | Path | None = None, seed: int = 0
) -> LoadedModel:
    """Build the entry's model from ``weights``, its shipped file, or a seed."""
    cfg = config_for(entry)
    named = entry.weights
    path = Path(weights) if weights is not None else Path(named or DATA_DIR / f"{entry.id}.npz")
    if weights is not None or path.exists():
        return LoadedModel(Transformer(cfg, load_weights(path, cfg)), str(path), True)
    return LoadedModel(Transformer(cfg, init_weights(cfg, seed)), f"random (seed {seed})", False)


@dataclass
class LoadedCheckpoint:
    """A Hugging Face checkpoint ready to run: its catalog entry (for the tokenizer and
    the ``kvmem estimate`` of its cache), the model, and the folder it came from."""

    entry: ModelEntry
    loaded: LoadedModel
    folder: Path


def load_checkpoint(source: str | Path) -> LoadedCheckpoint:
    """``hf:ORG/REPO`` (the local cache, the hub only for what is not there) or a model
    folder: its config refused early when the reference path cannot run the family."""
    from tokcost.catalog.hf_model import is_hf_spec, load_hf_model
    from tokcost.reference.hf_checkpoint import load_weights as load_hf_weights
    from tokcost.reference.hf_checkpoint import open_checkpoint

    spec = str(source)
    local = not is_hf_spec(spec) or Path(spec[3:]).expanduser().exists()
    if local:
        folder = Path(spec[3:] if is_hf_spec(spec) else spec).expanduser()
        checkpoint = open_checkpoint(folder)  # the family first: a clear refusal
        hf = load_hf_model(str(folder))
    else:
        hf = load_hf_model(spec)
        checkpoint = open_checkpoint(Path(hf.config_file).parent)
    folder = checkpoint.folder
    weights = load_hf_weights(folder, checkpoint.model_type, checkpoint.cfg)
    model = Transformer(checkpoint.cfg, weights)
    return LoadedCheckpoint(hf.entry, LoadedModel(model, str(folder), True), folder)


def load_tokenizer(entry: ModelEntry, cfg: RefConfig) -> Tokenizer:
    """The entry's tokenizer, checked to fit the model's vocabulary."""
    from tokcost.adapters.registry import get_tokenizer

    if not entry.tokenizer:
        raise UsageError(f"model '{entry.id}' has no tokenizer: add one to its catalog "
                         "entry, or tokenizer.json to its model folder")
    tok = get_tokenizer(entry.tokenizer)
    if tok.vocab_size > cfg.vocab_size:
        raise WeightsMismatch(
            f"tokenizer {entry.tokenizer} has {tok.vocab_size} tokens but model '{entry.id}' "
            f"has a vocabulary of {cfg.vocab_size}; fix vocab_size or the tokenizer in the catalog"
        )
    return tok


def input_ids(tok: Tokenizer, text: str, *, chat: bool = False) -> list[int]:
    """The token ids a model is given for ``text``, as transformers gives them: with what a
    Hugging Face tokenizer's post-processor adds (BOS) unless ``chat``, whose rendered
    template already writes them as text (``apply_chat_template`` tokenizes it with no
    post-processor, and the special tokens' text is parsed back into their ids)."""
    if chat:
        return tok.encode(text, allow_special=True)
    as_input = getattr(tok, "encode_as_input", None)
    if as_input is not None:
        return list(as_input(text))
    return tok.encode(text)


def estimate_cache_bytes(
    entry: ModelEntry, tokens: int, *, block_size: int | None = None, batch: int = 1
) -> int:
    """What ``kvmem estimate`` predicts for this model's float32 reference cache."""
    from tokcost.memory import kv_cache_bytes

    assert entry.architecture is not None  # config_for() checked it
    return kv_cache_bytes(entry.architecture, tokens, "fp32", block_size=block_size, batch=batch)
