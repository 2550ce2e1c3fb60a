"""Weights: named arrays made from a seed, or read from / written to a .npz file."""

from __future__ import annotations

import tokenize
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tokcost.atomic import atomic_path
from tokcost.errors import InputError, MissingDependency, UsageError
from tokcost.reference.config import Array, RefConfig, WeightsMismatch

FORMAT = "tokcost-ref v1"


def expected_shapes(cfg: RefConfig) -> dict[str, tuple[int, ...]]:
    """Every weight's name and shape for ``cfg``; norms multiply as stored (x @ W layout)."""
    c, f, v = cfg.hidden_size, cfg.ffn_hidden, cfg.vocab_size
    q, kv = cfg.attention_heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
    shapes: dict[str, tuple[int, ...]] = {"tok_emb": (v, c)}
    for i in range(cfg.layers):
        p = f"layers.{i}."
        shapes.update({p + "attn_norm": (c,), p + "wq": (c, q), p + "wk": (c, kv),
                       p + "wv": (c, kv), p + "wo": (q, c), p + "mlp_norm": (c,),
                       p + "w_gate": (c, f), p + "w_up": (c, f), p + "w_down": (f, c)})
        if cfg.qkv_bias:
            shapes.update({p + "bq": (q,), p + "bk": (kv,), p + "bv": (kv,)})
        if cfg.qk_norm:
            shapes.update({p + "q_norm": (cfg.head_dim,), p + "k_norm": (cfg.head_dim,)})
        if cfg.post_norms:
            shapes.update({p + "post_attn_norm": (c,), p + "post_mlp_norm": (c,)})
    shapes["norm"] = (c,)
    if not cfg.tie_embeddings:
        shapes["lm_head"] = (c, v)
    return shapes


def init_weights(cfg: RefConfig, seed: int = 0) -> dict[str, Array]:
    """Random weights (GPT-2's scheme: N(0, 0.02), residual projections scaled down)."""
    rng = np.random.default_rng(seed)
    out: dict[str, Array] = {}
    for name, shape in expected_shapes(cfg).items():
        if len(shape) == 1:  # biases start at 0, norm weights at 1
            bias = name.endswith(("bq", "bk", "bv"))
            out[name] = (np.zeros if bias else np.ones)(shape, dtype=np.float32)
            continue
        std = 0.02 / np.sqrt(2 * cfg.layers) if name.endswith(("wo", "w_down")) else 0.02
        out[name] = (rng.standard_normal(shape) * std).astype(np.float32)
    return out


def check_weights(cfg: RefConfig, weights: Mapping[str, Any], source: str = "weights") -> None:
    """Raise WeightsMismatch naming the first missing or misshapen array (or array header)."""
    for name, shape in expected_shapes(cfg).items():
        if name not in weights:
            raise WeightsMismatch(f"{source} has no array '{name}'; it was not written for this "
                                  "architecture (retrain it or fix the catalog's architecture "
                                  "fields)")
        got = tuple(weights[name].shape)
        if got != shape:
            raise WeightsMismatch(f"{source}: '{name}' has shape {got} but the catalog's "
                                  f"architecture needs {shape}; the weights and the catalog "
                                  "entry describe different models")


def load_weights(path: str | Path, cfg: RefConfig) -> dict[str, Array]:
    """Read a .npz written by ``save_weights`` (or a .safetensors file), checked against ``cfg``."""
    path = Path(path)
    if path.suffix == ".safetensors":
        weights = _read_safetensors(path)
    else:
        try:
            with np.load(path, allow_pickle=False) as data:
                # Every header checked before any array is inflated: a small file can hold
                # gigabytes of zeros, or declare 10**12 of them.
                heads = {k: _npy_header(data.zip, k) for k in data.files}
                check_weights(cfg, heads, source=str(path))
                if any(h.itemsize > (1024 if k == "__format__" else 8) for k, h in heads.items()):
                    raise ValueError("an array of items over 8 bytes")
                arrays = {k: data[k] for k in {*expected_shapes(cfg), "__format__"} & {*heads}}
        except FileNotFoundError:
            raise UsageError(f"weights file not found: {path} (give an existing .npz or "
                             ".safetensors file, or fix the catalog entry's weights field)"
                             ) from None
        # TokenError: numpy's fallback filter of an old-style header that does not parse
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error,
                tokenize.TokenError) as exc:
            reason = "pickled objects are not accepted" if "pickle" in str(exc) else str(exc)
            raise InputError(f"cannot read weights file {path} as tokcost .npz weights "
                             f"({reason})") from None
        if str(arrays.pop("__format__", None)) != FORMAT:
            raise WeightsMismatch(f"{path} is not a '{FORMAT}' weights file")
        weights = {k: a.astype(np.float32) for k, a in arrays.items()}
    check_weights(cfg, weights, source=str(path))
    return weights


@dataclass(frozen=True)
class _Head:
    shape: tuple[int, ...]
    itemsize: int


def _npy_header(archive: zipfile.ZipFile, name: str) -> _Head:
    with archive.open(f"{name}.npy") as f:
        fmt = np.lib.format  # untyped: numpy's .npy header reader
        read = (fmt.read_array_header_1_0 if fmt.read_magic(f) == (1, 0)  # type: ignore[no-untyped-call]
                else fmt.read_array_header_2_0)
        shape, _, dtype = read(f)  # type: ignore[no-untyped-call]
        return _Head(tuple(shape), dtype.itemsize)


def _read_safetensors(path: Path) -> dict[str, Array]:
    try:
        from safetensors.numpy import load_file
    except ImportError:
        raise MissingDependency("safetensors", "safetensors", "reading .safetensors weights"
                                ) from None
    if not path.is_file():
        raise InputError(f"weights file {path} does not exist")
    try:
        arrays = load_file(str(path))
    except Exception as exc:  # safetensors raises its own SafetensorError
        raise InputError(f"cannot read weights file {path} as safetensors ({exc})") from None
    return {k: np.asarray(a, dtype=np.float32) for k, a in arrays.items()}


def save_weights(path: str | Path, weights: dict[str, Array], *, dtype: str = "float16") -> None:
    """Write weights atomically, stored as ``dtype`` to stay small."""
    path = Path(path)
    arrays = {k: np.asarray(a).astype(dtype) for k, a in weights.items()}
    with atomic_path(path) as tmp, open(tmp, "wb") as fh:
        np.savez_compressed(fh, __format__=np.array(FORMAT), **arrays)  # type: ignore[arg-type]
