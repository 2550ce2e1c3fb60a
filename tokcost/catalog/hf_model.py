"""A catalog ``ModelEntry`` for a Hugging Face config.json, model folder (with safetensors
shards) or ``hf:ORG/REPO``; no tensor data is ever read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokcost.catalog import hf_config
from tokcost.catalog.hf_params import config_weights
from tokcost.catalog.hf_weights import WeightsSummary, summarize
from tokcost.catalog.safetensors_meta import Checkpoint, read_checkpoint, shard_names
from tokcost.catalog.schema import MAX_LAYERS, ModelEntry
from tokcost.errors import InputError, UsageError
from tokcost.limits import MAX_CONFIG_BYTES, loads_json
from tokcost.units import format_bytes

HF_PREFIX = "hf:"


@dataclass(frozen=True)
class HfModel:
    """The entry made for a Hugging Face model, and where its numbers came from."""

    entry: ModelEntry
    config_file: str  # the config.json read (a path, in the cache for hf: models)
    origin: str  # the folder, or "the local Hugging Face cache" / "the Hugging Face hub"
    weights: WeightsSummary | None
    shards: int  # safetensors files whose headers were read (0: none found)
    header_bytes: int | None  # bytes read for them (None: read over HTTP)
    notes: tuple[str, ...] = ()
    unsized: str | None = None  # why config.json alone does not size the weights (no shards)


def is_hf_spec(model: str) -> bool:
    return model.strip().lower().startswith(HF_PREFIX)


def load_hf_model(spec: str, *, model_id: str | None = None) -> HfModel:
    """``hf:ORG/REPO`` (cache, then hub) or ``hf:PATH`` (a local folder or config.json)."""
    rest = spec.strip()[len(HF_PREFIX):] if is_hf_spec(spec) else spec.strip()
    if rest and Path(rest).expanduser().exists():
        return load_config(rest, model_id=model_id)
    from tokcost.catalog.hf_repo import fetch_repo
    return fetch_repo(rest, model_id=model_id)


def load_config(path: str | Path, *, model_id: str | None = None) -> HfModel:
    """A config.json, or a model folder holding one (and, best, its safetensors shards)."""
    given = Path(path).expanduser()
    if given.is_dir():
        folder, config_file = given, given / "config.json"
        if not config_file.is_file():
            raise UsageError(f"'{given}' has no config.json; give a model folder (config.json "
                             "and its safetensors shards) or a config.json")
    elif given.is_file():
        folder, config_file = given.parent, given
    elif given.exists():  # a device, FIFO or socket: nothing to read a config from
        raise UsageError(f"'{given}' is not a regular file; give a config.json or a model folder")
    else:
        raise UsageError(f"'{given}' does not exist; give a config.json or a model folder")
    config = read_config_json(config_file, str(config_file))
    names = shard_names(folder)
    checkpoint = read_checkpoint(folder, names) if names else None
    weights, notes, unsized = read_weights(config, checkpoint, str(config_file))
    tokenizer = folder / "tokenizer.json"
    model_id = model_id or (folder.resolve().name or "model").lower()
    entry = make_entry(config, str(config_file), model_id, weights, str(config_file.resolve()),
                       f"hf:{tokenizer.resolve()}" if tokenizer.is_file() else None)
    return HfModel(entry, str(config_file), str(folder), weights,
                   len(checkpoint.files) if checkpoint else 0,
                   checkpoint.bytes_read if checkpoint else None, notes, unsized)


def read_config_json(path: Path, where: str) -> dict[str, Any]:
    """A config.json as a mapping, or one line saying why it is not one."""
    try:
        with open(path, "rb") as handle:  # read(n): /dev/zero or a FIFO ends too
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise InputError(f"cannot read {where}: {exc.strerror or exc}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise InputError(f"{where} is over {format_bytes(MAX_CONFIG_BYTES)}, not a model's "
                         "config.json (kilobytes); give the config.json itself")
    try:
        data = loads_json(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{where} is not JSON ({exc}); download it again") from None
    if not isinstance(data, dict):
        raise InputError(f"{where} is not a JSON object; a config.json maps field names to values")
    return data


def read_weights(config: dict[str, Any], checkpoint: Checkpoint | None, where: str
             ) -> tuple[WeightsSummary | None, tuple[str, ...], str | None]:
    """The weights (None: unknown), the notes that say where they came from, and why
    config.json alone did not size them (None: it did, or the shards' headers were read)."""
    f = hf_config.ConfigFields(config, where)
    if checkpoint is None:
        derived = config_weights(config, where)
        if isinstance(derived, str):
            return None, (f"no safetensors headers beside the config, and {derived}: the "
                          "weights' size and parameters are unknown (give the folder with its "
                          "shards)",), derived
        cast = " (float32 served in bfloat16)" if (f.dtype or "").lower() in ("float32",
                                                                            "float") else ""
        notes = [f"weights from config.json (no safetensors headers beside it): "
                 f"{derived.params:,} parameters, {format_bytes(derived.bytes)} as "
                 f"{hf_config.weights_dtype(f.dtype, f.quantization)}{cast}; the "
                 "shards' headers, when given, are exact"]
        if derived.unsized:
            verb = "is" if len(derived.unsized) == 1 else "are"
            only = "" if derived.encoder_params else ", which count the text model only"
            notes.append(f"{' and '.join(derived.unsized)} {verb} not sized from config.json: "
                         f"left out of the weights (unknown){only}")
        return derived, tuple(notes), None
    summary = summarize(checkpoint.tensors, config_dtype=f.dtype, quantization=f.quantization,
                        layers=f.need("num_hidden_layers", "the number of layers", cap=MAX_LAYERS))
    experts = (f" ({format_bytes(summary.expert_bytes)} of them routed experts)"
               if summary.expert_bytes else "")
    notes = [f"weights from {len(checkpoint.files)} safetensors header(s): {summary.tensors:,} "
             f"tensors, {format_bytes(summary.bytes)}{experts}"]
    if summary.skipped_tensors:
        notes.append(f"{summary.skipped_tensors:,} tensors ({format_bytes(summary.skipped_bytes)})"
                     " of speculative-decoding (MTP) layers left out: engines load them only "
                     "for speculative decoding")
    if summary.cast_float32:
        notes.append("float32 tensors counted at 16 bits: vLLM serves float32 checkpoints "
                     "in bfloat16 (its dtype auto)")
    return summary, tuple(notes), None


def make_entry(config: dict[str, Any], where: str, model_id: str, weights: WeightsSummary | None,
           arch_source: str, tokenizer: str | None, aliases: tuple[str, ...] = (),
           source: str | None = None) -> ModelEntry:
    arch = hf_config.architecture_from_config(config, where=where, weights=weights,
                                              source=arch_source)
    return ModelEntry(
        id=model_id, aliases=tuple(a for a in aliases if a.lower() != model_id.lower()),
        family=hf_config.ConfigFields(config, where).model_type or None, tokenizer_spec=tokenizer,
        context_window=hf_config.context_window(config, where=where), architecture=arch,
        source=source)
