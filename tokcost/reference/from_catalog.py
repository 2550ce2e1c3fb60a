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
_PACKAGE_PARENT = Path(__file__).resolve().parent.parent.parent


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
            "run; use -m tiny-ref, or add layers/hidden_size/heads/head_dim/vocab_size"
        )
    arch = entry.architecture
    if arch.attention.type != "full":
        raise ModelTooLarge(
            f"model '{entry.id}' uses {arch.attention.type} attention, which the reference "
            f"path does not implement; size its cache with: tokcost kvmem estimate -m {entry.id}"
        )
    return RefConfig.from_architecture(entry.id, arch, entry.context_window)


def shipped_weights(model_id: str) -> Path:
    return DATA_DIR / f"{model_id.replace('-', '_')}.npz"


def load_model(
    entry: ModelEntry, *, weights: str | Path | None = None, seed: int = 0
) -> LoadedModel:
    """Build the entry's model from ``weights``, its shipped file, or a seed."""
    cfg = config_for(entry)
    path = Path(weights) if weights is not None else shipped_weights(entry.id)
    if weights is not None or path.exists():
        return LoadedModel(Transformer(cfg, load_weights(path, cfg)), str(path), True)
    return LoadedModel(Transformer(cfg, init_weights(cfg, seed)), f"random (seed {seed})", False)


def resolve_spec(spec: str) -> str:
    """Make a relative file spec (``hf:tokcost/reference/data/x.json``) point at the
    installed package when it does not exist from the current directory."""
    family, sep, arg = spec.partition(":")
    if not sep or family not in ("hf", "bpe", "sp", "tiktoken"):
        return spec
    path = Path(arg)
    if path.is_absolute() or path.exists():
        return spec
    shipped = _PACKAGE_PARENT / path
    return f"{family}:{shipped}" if shipped.exists() else spec


def load_tokenizer(entry: ModelEntry, cfg: RefConfig) -> Tokenizer:
    """The entry's tokenizer, checked to fit the model's vocabulary."""
    from tokcost.adapters.registry import get_tokenizer

    if not entry.tokenizer:
        raise UsageError(f"model '{entry.id}' names no tokenizer in the catalog; add one")
    tok = get_tokenizer(resolve_spec(entry.tokenizer))
    if tok.vocab_size > cfg.vocab_size:
        raise WeightsMismatch(
            f"tokenizer {entry.tokenizer} has {tok.vocab_size} tokens but model '{entry.id}' "
            f"has a vocabulary of {cfg.vocab_size}; fix vocab_size or the tokenizer in the catalog"
        )
    return tok


def estimate_cache_bytes(
    entry: ModelEntry, tokens: int, *, block_size: int | None = None, batch: int = 1
) -> int:
    """What ``kvmem estimate`` predicts for this model's float32 reference cache."""
    from tokcost.memory import kv_cache_bytes

    assert entry.architecture is not None  # config_for() checked it
    return kv_cache_bytes(entry.architecture, tokens, "fp32", block_size=block_size, batch=batch)
