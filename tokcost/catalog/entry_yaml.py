"""A model entry written as catalog YAML, in models.yaml's own style.

What ``tokcost models import`` prints: keys in the order models.yaml uses, strings
double-quoted (JSON strings are YAML), exact integers for bytes and parameters with
the human figure in a comment, and a catalog document around the entry, so the text
loads as it is (``--catalog FILE``) or pastes under another catalog's ``models:``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from decimal import Decimal

from tokcost.catalog.schema import SCHEMA_VERSION, Architecture, Attention, ModelEntry
from tokcost.units import format_bytes

_MIB = 2**20


def catalog_text(entry: ModelEntry, *, header: Iterable[str] = (), extends: bool = True) -> str:
    """A catalog file holding ``entry`` alone; ``header`` lines become comments on top,
    and ``extends`` adds it to the shipped catalog (its GPUs and models) when loaded."""
    lines = [f"# {line}" for line in header]
    lines.append(f"version: {SCHEMA_VERSION}")
    if extends:
        lines.append("extends: shipped")
    lines.append("models:")
    lines.extend(entry_lines(entry))
    return "\n".join(lines) + "\n"


def entry_lines(entry: ModelEntry) -> list[str]:
    """The entry as the items of a ``models:`` list (indented as models.yaml is)."""
    out = [f"  - id: {_str(entry.id)}"]
    if entry.aliases:
        out.append(f"    aliases: [{', '.join(_str(a) for a in entry.aliases)}]")
    for key in ("provider", "family"):
        value = getattr(entry, key)
        if value is not None:
            out.append(f"    {key}: {_str(value)}")
    if entry.tokenizer_spec is not None:
        out.append(f"    tokenizer: {_str(entry.tokenizer_spec)}")
    if entry.context_window is not None:
        out.append(f"    context_window: {entry.context_window}")
    if entry.architecture is not None:
        out.append("    architecture:")
        out.extend(_architecture(entry.architecture, "      "))
    for key in ("source", "notes"):
        value = getattr(entry, key)
        if value is not None:
            out.append(f"    {key}: {_str(value)}")
    return out


def _architecture(arch: Architecture, pad: str) -> list[str]:
    out = [f"{pad}layers: {arch.layers}"]
    for key in ("hidden_size", "attention_heads", "kv_heads", "head_dim", "vocab_size"):
        value = getattr(arch, key)
        if value is not None:
            out.append(f"{pad}{key}: {value}")
    total, active = arch.params_total, arch.params_active
    if total is not None:
        if active is not None and active != total:
            out.append(f"{pad}params: {{total: {total}, active: {active}}}"
                       f"   # {_billions(total)} total, {_billions(active)} active")
        else:
            out.append(f"{pad}params: {total}   # {_billions(total)}")
    out.append(f"{pad}weights_dtype: {arch.weights_dtype}")
    if arch.weights_bytes is not None:
        out.append(f"{pad}weights_bytes: {_size(arch.weights_bytes)}"
                   f"   # {format_bytes(arch.weights_bytes)}, from the safetensors headers")
    for key in ("experts", "experts_per_token"):
        value = getattr(arch, key)
        if value is not None:
            out.append(f"{pad}{key}: {value}")
    if arch.expert_weights_bytes is not None:
        out.append(f"{pad}expert_weights_bytes: {_size(arch.expert_weights_bytes)}"
                   f"   # {format_bytes(arch.expert_weights_bytes)} of routed experts")
    if arch.attention != Attention():
        out.append(f"{pad}attention:")
        out.extend(_attention(arch.attention, pad + "  "))
    if arch.source is not None:
        out.append(f"{pad}source: {_str(arch.source)}")
    return out


def _attention(att: Attention, pad: str) -> list[str]:
    out = [f"{pad}type: {att.type}"]
    if att.type != "mla":
        out.append(f"{pad}pattern: [{', '.join(att.pattern)}]")
    for key in ("window", "kv_lora_rank", "qk_rope_head_dim", "linear_state_elements"):
        value = getattr(att, key)
        if value is not None:
            out.append(f"{pad}{key}: {value}")
    return out


def _str(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _size(n: int) -> str:
    """Bytes as the catalog's size parser reads them back exactly: a bare count from
    1 MiB up (smaller bare numbers are refused as sizes), else exact KiB."""
    if n >= _MIB:
        return str(n)
    return f"{Decimal(n) / 1024:f}KiB"


def _billions(n: int) -> str:
    return f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.2f}M"
