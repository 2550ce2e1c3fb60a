"""A model entry as a catalog file in models.yaml's style (``models import``): it loads as it is,
exact integers with the human figure in a comment."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

from tokcost.catalog.schema import SCHEMA_VERSION, Architecture, Attention, ModelEntry
from tokcost.units import format_bytes


def catalog_text(entry: ModelEntry, *, header: Iterable[str] = (), extends: bool = True,
                 weights_from: str = "the safetensors headers") -> str:
    """``entry`` alone as a catalog file (``extends``: beside the shipped one), ``header`` atop;
    ``weights_from``: where its weights' bytes come from."""
    # A comment ends at any YAML line break: a path holding one must not start a key.
    shown = (re.sub("[\x00-\x1f\x7f\x85\u2028\u2029]", lambda m: ascii(m.group())[1:-1], line)
             for line in header)
    lines = [*(f"# {line}" for line in shown), f"version: {SCHEMA_VERSION}"]
    lines += ["extends: shipped"] if extends else []
    lines += ["models:", f"  - id: {_str(entry.id)}"]
    if entry.aliases:
        lines.append(f"    aliases: [{', '.join(_str(a) for a in entry.aliases)}]")
    lines += _keys(entry, ("provider", "family", "tokenizer_spec"), "    ", _str)
    lines += _keys(entry, ("context_window",), "    ")
    if entry.architecture is not None:
        lines += ["    architecture:", *_architecture(entry.architecture, "      ", weights_from)]
    lines += _keys(entry, ("source", "notes"), "    ", _str)
    return "\n".join(lines) + "\n"


def _keys(record: object, keys: Iterable[str], pad: str,
          show: Callable[[Any], str] = str) -> list[str]:
    """``key: value`` for each key set (a spec under its YAML name, ``tokenizer``)."""
    found = ((k.removesuffix("_spec"), getattr(record, k)) for k in keys)
    return [f"{pad}{k}: {show(v)}" for k, v in found if v is not None]


def _architecture(arch: Architecture, pad: str, weights_from: str) -> list[str]:
    out = [f"{pad}layers: {arch.layers}"]
    out += _keys(arch, ("hidden_size", "attention_heads", "kv_heads", "head_dim", "vocab_size"),
                 pad)
    total, active = arch.params_total, arch.params_active
    if total is not None and active is not None and active != total:
        out.append(f"{pad}params: {{total: {total}, active: {active}}}"
                   f"   # {_billions(total)} total, {_billions(active)} active")
    elif total is not None:
        out.append(f"{pad}params: {total}   # {_billions(total)}")
    out.append(f"{pad}weights_dtype: {arch.weights_dtype}")
    if arch.weights_bytes is not None:
        out.append(f"{pad}weights_bytes: {_size(arch.weights_bytes)}"
                   f"   # {format_bytes(arch.weights_bytes)}, from {weights_from}")
    out += _keys(arch, ("experts", "experts_per_token"), pad)
    if arch.expert_weights_bytes is not None:
        out.append(f"{pad}expert_weights_bytes: {_size(arch.expert_weights_bytes)}"
                   f"   # {format_bytes(arch.expert_weights_bytes)} of routed experts")
    att = arch.attention
    if att != Attention():
        out += [f"{pad}attention:", f"{pad}  type: {att.type}"]
        out += [f"{pad}  pattern: [{', '.join(att.pattern)}]"] if att.type != "mla" else []
        out += [f"{pad}  chunked: true"] if att.chunked else []
        out += [f"{pad}  kv_shared_layers: {att.kv_shared_layers}"] if att.kv_shared_layers else []
        out += [f"{pad}  parallel_linear: true"] if att.parallel_linear else []
        out += _keys(att, ("window", "kv_lora_rank", "qk_rope_head_dim", "indexer_head_dim",
                           "linear_state_elements", "mamba_groups", "mamba_group_elements",
                           "global_kv_heads", "global_head_dim", "v_head_dim",
                           "linear_fp32_elements", "linear_conv_channels",
                           "mamba_chunk_size", "mtp_layers", "linear_ssm_elements",
                           "linear_ssm_dtype", "linear_ssm_cache_dtype", "cacheless_layers"),
                     pad + "  ")
    return out + _keys(arch, ("source",), pad, _str) + _keys(arch, ("model_class",), pad)


def _str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _size(n: int) -> str:
    """Bytes the size parser reads back exactly: a bare count from 1 MiB up, else KiB."""
    return str(n) if n >= 2**20 else f"{Decimal(n) / 1024:f}KiB"


def _billions(n: int) -> str:
    return f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.2f}M"
