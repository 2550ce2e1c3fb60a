"""Sizes, counts and dtypes as people write them: ``80GB`` vs ``80GiB``, ``8.03B``, ``bf16``.

Decimal units (KB, MB, GB, TB) are powers of 1000 and binary ones (KiB, MiB, GiB,
TiB) powers of 1024, as the SI/IEC standards and ``nvidia-smi`` mean them. A bare
``G`` is refused because it is ambiguous, which is exactly the mistake that makes
capacity plans 7% wrong.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from tokcost.errors import UsageError, suggest

SIZE_UNITS: dict[str, int] = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_UNIT_SPELLING = ["B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB"]

COUNT_SUFFIXES: dict[str, int] = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}

# Bytes per element of weights/activations. Quantized KV caches are described in
# tokcost.memory.dtypes, which adds their per-group scale overhead.
WEIGHT_DTYPE_BITS: dict[str, Decimal] = {
    "fp32": Decimal(32),
    "bf16": Decimal(16),
    "fp16": Decimal(16),
    "fp8": Decimal(8),
    "int8": Decimal(8),
    "int4": Decimal(4),
    # OCP MX FP4: 4-bit elements plus one 8-bit shared exponent per 32 elements.
    "mxfp4": Decimal("4.25"),
}

_NUMBER_UNIT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]*)\s*$")


def parse_size(text: str | int | float, *, param: str = "size", allow_zero: bool = False) -> int:
    """Bytes in a size such as ``80GB``, ``80 GiB``, ``1.5e9`` or ``512MiB``.

    >>> parse_size("80GB"), parse_size("1GiB"), parse_size("2 KiB")
    (80000000000, 1073741824, 2048)
    """
    if isinstance(text, bool):
        raise UsageError(f"{param} must be a size such as 80GB or 80GiB, got {text!r}",
                         param=param)
    if isinstance(text, (int, float)):
        value, unit = Decimal(str(text)), "b"
    else:
        match = _NUMBER_UNIT.match(text)
        if not match:
            raise UsageError(
                f"{param} '{text}' is not a size; write a positive number with a unit "
                f"such as 80GB (10^9 bytes) or 80GiB (2^30 bytes)", param=param
            )
        value, unit = Decimal(match.group(1)), (match.group(2) or "b").lower()
        if not match.group(2) and 0 < value < 2**20:
            # a GPU memory of "80" is surely not 80 bytes: ask instead of computing nonsense.
            raise UsageError(
                f"{param} '{text}' has no unit; write {text}GB (10^9 bytes) or {text}GiB "
                f"(2^30 bytes), or {text}B if you mean bytes", param=param
            )
    if unit in ("g", "m", "k", "t"):
        up = unit.upper()
        raise UsageError(
            f"{param} '{text}' is ambiguous; write {up}B (powers of 1000) or {up}iB "
            "(powers of 1024)", param=param
        )
    if unit not in SIZE_UNITS:
        hint = suggest(unit, [u.lower() for u in _UNIT_SPELLING])
        raise UsageError(
            f"{param} has unknown unit '{unit}'{hint}; use one of {', '.join(_UNIT_SPELLING)}",
            param=param,
        )
    size = int(value * SIZE_UNITS[unit])
    if size < 0 or (size == 0 and not allow_zero):
        raise UsageError(f"{param} must be greater than zero, got '{text}'", param=param)
    return size


def parse_count(text: str | int | float, *, param: str = "count") -> int:
    """A count such as ``128000``, ``128k``, ``8.03B`` or ``1e6`` (no binary meaning).

    >>> parse_count("128k"), parse_count("8.03B"), parse_count(1000)
    (128000, 8030000000, 1000)
    """
    if isinstance(text, bool):
        raise UsageError(f"{param} must be a number, got {text!r}", param=param)
    if isinstance(text, int):
        return text
    raw = str(text).strip().replace("_", "").replace(",", "")
    suffix = raw[-1:].lower() if raw[-1:].isalpha() else ""
    number = raw[: len(raw) - len(suffix)] if suffix else raw
    if suffix not in COUNT_SUFFIXES:
        raise UsageError(f"{param} '{text}' has an unknown suffix; use k, M, B or T (or none)",
                         param=param)
    try:
        value = Decimal(number) * COUNT_SUFFIXES[suffix]
    except InvalidOperation:
        raise UsageError(f"{param} '{text}' is not a number", param=param) from None
    if value != value.to_integral_value():
        raise UsageError(f"{param} '{text}' is not a whole number", param=param)
    return int(value)


def parse_context_list(text: str, *, param: str = "context") -> list[int]:
    """``"1k,8k,32k,128k"`` -> ``[1000, 8000, 32000, 128000]``; ``1Ki`` means 1024.

    Context lengths follow the count convention (``k`` = 1000), except that a
    ``Ki`` suffix gives the power of two (``128Ki`` = 131072).
    """
    out: list[int] = []
    for part in text.split(","):
        item = part.strip()
        if not item:
            continue
        if item.lower().endswith("ki"):
            n = parse_count(item[:-2], param=param) * 1024
        else:
            n = parse_count(item, param=param)
        if n <= 0:
            raise UsageError(f"{param} must be positive, got '{item}'", param=param)
        out.append(n)
    if not out:
        raise UsageError(f"{param} needs at least one length, e.g. {param}=8k or 1k,8k,32k",
                         param=param)
    return out


def format_bytes(n: float, *, binary: bool = True) -> str:
    """``131072`` -> ``'128 KiB'``; decimal units with ``binary=False``.

    >>> format_bytes(131072), format_bytes(819200, binary=False)
    ('128 KiB', '819.2 KB')
    """
    base, units = (
        (1024, ["B", "KiB", "MiB", "GiB", "TiB", "PiB"])
        if binary
        else (
            1000,
            ["B", "KB", "MB", "GB", "TB", "PB"],
        )
    )
    value = float(n)
    for unit in units:
        # Switch units at 1000 so a table never shows "1000 MiB" for 0.98 GiB.
        if abs(value) < 1000 or unit == units[-1]:
            if unit == "B":
                return f"{int(value)} B"
            text = f"{value:.2f}".rstrip("0").rstrip(".")
            return f"{text} {unit}"
        value /= base
    return f"{value} {units[-1]}"  # pragma: no cover


def weight_bits(dtype: str) -> Decimal:
    """Bits per parameter of a weights dtype (``bf16`` -> 16, ``mxfp4`` -> 4.25)."""
    key = dtype.lower()
    if key not in WEIGHT_DTYPE_BITS:
        raise UsageError(
            f"unknown weights dtype '{dtype}'{suggest(key, WEIGHT_DTYPE_BITS)}; "
            f"use one of {', '.join(WEIGHT_DTYPE_BITS)}"
        )
    return WEIGHT_DTYPE_BITS[key]
