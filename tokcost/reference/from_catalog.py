"""From a model source to a runnable reference model, its tokenizer and its KV estimate:
a catalog entry's weights are ``data/<id>.npz`` unless named, else seeded random ones."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tokcost.errors import UsageError, arg
from tokcost.reference.config import ModelTooLarge, RefConfig, WeightsMismatch
from tokcost.reference.model import Transformer
from tokcost.reference.request import as_int
from tokcost.reference.weights import init_weights, load_weights

if TYPE_CHECKING:
    from tokcost.adapters.base import Tokenizer
    from tokcost.catalog import CatalogSource
    from tokcost.catalog.schema import ModelEntry

DATA_DIR = Path(__file__).resolve().parent / "data"
DEFAULT_MODEL = "tiny-ref"


@dataclass
class Loaded:
    """A model ready to run: its entry, the weights read (a file or "random (seed N)"), a folder."""

    entry: ModelEntry
    model: Transformer
    weights: str
    trained: bool
    folder: Path | None = None


@dataclass(frozen=True, kw_only=True)
class ModelSource:
    """Which model a request runs: a catalog ``model`` (tiny-ref by default) or
    ``hf:ORG/REPO``, or a Hugging Face ``model_dir``."""

    model: str | None = None
    model_dir: str | Path | None = None
    weights: str | Path | None = None
    seed: int | None = None
    catalog: CatalogSource = None

    def __post_init__(self) -> None:
        if self.model is not None and self.model_dir is not None:
            raise UsageError(f"give {arg('model')} or {arg('model_dir')}, not both",
                             param="model", related=("model_dir",))
        if self.seed is not None:
            seed = as_int(self.seed, "seed")
            if seed < 0:
                raise UsageError(f"{arg('seed', seed)} must be >= 0", param="seed", value=seed)
            object.__setattr__(self, "seed", seed)
        if self.weights is not None and self.checkpoint:
            raise UsageError(f"{arg('weights')} cannot replace a checkpoint's own; give "
                             f"{arg('weights')} only with a catalog model", param="weights")

    @property
    def checkpoint(self) -> bool:
        from tokcost.catalog.hf_model import is_hf_spec
        return self.model_dir is not None or is_hf_spec(self.model or "")

    def load(self) -> Loaded:
        from tokcost.tokenizers import open_catalog
        if self.checkpoint:
            return load_checkpoint(self.model_dir if self.model_dir is not None
                                   else str(self.model))
        entry = open_catalog(self.catalog).resolve(self.model or DEFAULT_MODEL)
        return load_model(entry, weights=self.weights, seed=self.seed or 0)


def config_for(entry: ModelEntry) -> RefConfig:
    arch = entry.architecture
    if arch is None:
        raise ModelTooLarge(
            f"model '{entry.id}' has no architecture in the catalog, so there is nothing to "
            "run; use tiny-ref instead, or add layers/hidden_size/heads/head_dim/vocab_size")
    if arch.attention.type != "full":
        raise ModelTooLarge(
            f"model '{entry.id}' uses {arch.attention.type} attention, which the reference "
            f"path does not implement; size its cache with: tokcost kvmem estimate -m {entry.id}")
    return RefConfig.from_architecture(entry.id, arch, entry.context_window)


def shipped_weights(model_id: str) -> Path:
    """The weights file the catalog names for ``model_id`` (may not exist yet)."""
    from tokcost.catalog import load_catalog
    entry = load_catalog().resolve(model_id)
    return Path(entry.weights) if entry.weights else DATA_DIR / f"{entry.id}.npz"


def load_model(entry: ModelEntry, *, weights: str | Path | None = None, seed: int = 0) -> Loaded:
    """The entry's model from ``weights``, its shipped file, or a seed."""
    cfg = config_for(entry)
    path = Path(weights or entry.weights or DATA_DIR / f"{entry.id}.npz")
    if weights is not None or path.exists():
        return Loaded(entry, Transformer(cfg, load_weights(path, cfg)), str(path), True)
    return Loaded(entry, Transformer(cfg, init_weights(cfg, seed)), f"random (seed {seed})", False)


def load_checkpoint(source: str | Path) -> Loaded:
    """``hf:ORG/REPO`` or a model folder, its family refused before its tensors are read."""
    from tokcost.catalog.hf_model import is_hf_spec, load_hf_model
    from tokcost.reference.hf_checkpoint import load_weights as load_hf_weights
    from tokcost.reference.hf_checkpoint import open_checkpoint
    spec = str(source)
    if not is_hf_spec(spec) or Path(spec[3:]).expanduser().exists():
        folder = Path(spec[3:] if is_hf_spec(spec) else spec).expanduser()
        checkpoint = open_checkpoint(folder)  # the family first: a clear refusal
        hf = load_hf_model(str(folder))
    else:
        hf = load_hf_model(spec)
        checkpoint = open_checkpoint(Path(hf.config_file).parent)
    folder = checkpoint.folder
    weights = load_hf_weights(folder, checkpoint.model_type, checkpoint.cfg)
    return Loaded(hf.entry, Transformer(checkpoint.cfg, weights), str(folder), True, folder)


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
            f"has a vocabulary of {cfg.vocab_size}; fix vocab_size or the tokenizer in the catalog")
    return tok


def input_ids(tok: Tokenizer, text: str, *, chat: bool = False) -> list[int]:
    """``text``'s ids as transformers gives them: with the post-processor's BOS, except a
    rendered chat template, which writes special tokens as text."""
    if chat:
        return tok.encode(text, allow_special=True)
    as_input = getattr(tok, "encode_as_input", None)
    return list(as_input(text)) if as_input is not None else tok.encode(text)


def estimate_cache_bytes(entry: ModelEntry, tokens: int, *, block_size: int | None = None,
    batch: int = 1) -> int:
    """What ``kvmem estimate`` predicts for this model's float32 reference cache."""
    from tokcost.memory import kv_cache_bytes
    assert entry.architecture is not None  # config_for() checked it
    return kv_cache_bytes(entry.architecture, tokens, "fp32", block_size=block_size, batch=batch)
