"""Safetensors checkpoints for tests: real headers, sparse data (no tensor bytes written).

A shard is an 8-byte header length, the JSON header, then a hole as long as the tensor
data (``truncate``): the file has its true size, so a reader that checks offsets against
it is tested, while the disk holds only the header.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping, Sequence
from pathlib import Path

from tokcost.catalog.safetensors_meta import DTYPE_BITS

Tensors = Mapping[str, tuple[str, Sequence[int]]]


def nbytes(dtype: str, shape: Sequence[int]) -> int:
    return math.ceil(math.prod(shape) * DTYPE_BITS[dtype] / 8)


def write_shard(path: Path, tensors: Tensors) -> int:
    """One ``.safetensors`` file holding ``tensors`` (name -> (dtype, shape)); returns the
    header bytes a reader needs (8 + N)."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = nbytes(dtype, shape)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # safetensors pads the header to 8 bytes
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)) + raw)
        f.truncate(8 + len(raw) + offset)
    return 8 + len(raw)


def write_checkpoint(folder: Path, shards: Sequence[Tensors], *, index: bool = True) -> int:
    """``model-0000i-of-0000n.safetensors`` and their index (or one ``model.safetensors``);
    returns the header bytes of all shards."""
    folder.mkdir(parents=True, exist_ok=True)
    if not index:
        assert len(shards) == 1
        return write_shard(folder / "model.safetensors", shards[0])
    weight_map: dict[str, str] = {}
    total = read = 0
    for i, tensors in enumerate(shards, 1):
        name = f"model-{i:05d}-of-{len(shards):05d}.safetensors"
        read += write_shard(folder / name, tensors)
        for tensor, (dtype, shape) in tensors.items():
            weight_map[tensor] = name
            total += nbytes(dtype, shape)
    (folder / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2)
    )
    return read


def gpt_oss_tensors(layers: int = 36, experts: int = 128) -> list[dict[str, tuple[str, list[int]]]]:
    """The tensors of openai/gpt-oss-120b, one shard per layer (plus one for embeddings):
    bf16 attention, router and norms; mxfp4 experts as U8 blocks (16 bytes = 32 values)
    and U8 scales (one per 32 values), bf16 expert biases."""
    hidden, inter, q, kv, vocab = 2880, 2880, 64 * 64, 8 * 64, 201088
    shards: list[dict[str, tuple[str, list[int]]]] = [{
        "model.embed_tokens.weight": ("BF16", [vocab, hidden]),
        "lm_head.weight": ("BF16", [vocab, hidden]),
        "model.norm.weight": ("BF16", [hidden]),
    }]
    for i in range(layers):
        p = f"model.layers.{i}."
        shards.append({
            p + "input_layernorm.weight": ("BF16", [hidden]),
            p + "post_attention_layernorm.weight": ("BF16", [hidden]),
            p + "self_attn.q_proj.weight": ("BF16", [q, hidden]),
            p + "self_attn.q_proj.bias": ("BF16", [q]),
            p + "self_attn.k_proj.weight": ("BF16", [kv, hidden]),
            p + "self_attn.k_proj.bias": ("BF16", [kv]),
            p + "self_attn.v_proj.weight": ("BF16", [kv, hidden]),
            p + "self_attn.v_proj.bias": ("BF16", [kv]),
            p + "self_attn.o_proj.weight": ("BF16", [hidden, q]),
            p + "self_attn.o_proj.bias": ("BF16", [hidden]),
            p + "self_attn.sinks": ("BF16", [64]),
            p + "mlp.router.weight": ("BF16", [experts, hidden]),
            p + "mlp.router.bias": ("BF16", [experts]),
            p + "mlp.experts.gate_up_proj_blocks": ("U8", [experts, 2 * inter, hidden // 32, 16]),
            p + "mlp.experts.gate_up_proj_scales": ("U8", [experts, 2 * inter, hidden // 32]),
            p + "mlp.experts.gate_up_proj_bias": ("BF16", [experts, 2 * inter]),
            p + "mlp.experts.down_proj_blocks": ("U8", [experts, hidden, inter // 32, 16]),
            p + "mlp.experts.down_proj_scales": ("U8", [experts, hidden, inter // 32]),
            p + "mlp.experts.down_proj_bias": ("BF16", [experts, hidden]),
        })
    return shards


def llama_tensors(layers: int, hidden: int, inter: int, heads: int, kv_heads: int, vocab: int,
                  *, dtype: str = "BF16", tied: bool = False) -> dict[str, tuple[str, list[int]]]:
    """A Llama-style dense decoder's tensors (one shard)."""
    head_dim = hidden // heads
    t: dict[str, tuple[str, list[int]]] = {"model.embed_tokens.weight": (dtype, [vocab, hidden]),
                                           "model.norm.weight": (dtype, [hidden])}
    if not tied:
        t["lm_head.weight"] = (dtype, [vocab, hidden])
    for i in range(layers):
        p = f"model.layers.{i}."
        t.update({
            p + "input_layernorm.weight": (dtype, [hidden]),
            p + "post_attention_layernorm.weight": (dtype, [hidden]),
            p + "self_attn.q_proj.weight": (dtype, [heads * head_dim, hidden]),
            p + "self_attn.k_proj.weight": (dtype, [kv_heads * head_dim, hidden]),
            p + "self_attn.v_proj.weight": (dtype, [kv_heads * head_dim, hidden]),
            p + "self_attn.o_proj.weight": (dtype, [hidden, heads * head_dim]),
            p + "mlp.gate_proj.weight": (dtype, [inter, hidden]),
            p + "mlp.up_proj.weight": (dtype, [inter, hidden]),
            p + "mlp.down_proj.weight": (dtype, [hidden, inter]),
        })
    return t


def split(tensors: Mapping[str, tuple[str, Sequence[int]]], n: int) -> list[dict[str, tuple[str, Sequence[int]]]]:
    """``tensors`` dealt over ``n`` shards, in order (as save_pretrained fills them)."""
    items = list(tensors.items())
    size = -(-len(items) // n)
    return [dict(items[i:i + size]) for i in range(0, len(items), size)]


def copy_sparse(source: Path, target: Path) -> None:
    """Copy a file built here: a shard's header and its hole (``shutil.copy`` would write
    the hole out as zeros, tens of gigabytes), any other file as it is."""
    if source.suffix != ".safetensors":
        target.write_bytes(source.read_bytes())
        return
    with open(source, "rb") as f:
        head = f.read(8)
        header = f.read(struct.unpack("<Q", head)[0])
        size = f.seek(0, 2)
    with open(target, "wb") as f:
        f.write(head + header)
        f.truncate(size)
