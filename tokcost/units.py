"""Numbers as people write them (counts ``8k``, sizes ``80GiB``, money ``$0.05``, percentages
and shares), one grammar for every flag and config file (docs/numbers.md), and the formatting
of sizes, money and percentages that every command shares.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Context, Decimal

from tokcost.errors import UsageError, arg, suggest

__all__ = ["MAX_COUNT", "MAX_SIZE", "OutOfRange", "format_bytes", "format_percent", "format_usd",
           "parse_context_list", "parse_count", "parse_fraction", "parse_money", "parse_percent",
           "parse_size", "round_percent", "spec_label", "weight_bits"]

MAX_COUNT = 10**15  # tokens, lengths, requests: a million times the longest context window
MAX_SIZE = 2**60  # bytes: 1 EiB, thousands of the largest GPU clusters
MAX_MONEY = Decimal(10**12)  # USD
SIGNIFICANT_DIGITS = 3  # money under $1: enough decimals for this many significant digits

_DECIMAL, _BINARY = ("k", "m", "g", "t", "p", "e"), ("ki", "mi", "gi", "ti", "pi", "ei")
SIZE_UNITS: dict[str, int] = {**{f"{p}b": 10 ** (3 * i) for i, p in enumerate(_DECIMAL, 1)},
                              **{f"{p}b": 2 ** (10 * i) for i, p in enumerate(_BINARY, 1)}}
_UNIT_SPELLING = ["KB", "MB", "GB", "TB", "PB", "EB", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
COUNT_SUFFIXES: dict[str, int] = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12,
                                  **{p: 2 ** (10 * i) for i, p in enumerate(_BINARY[:4], 1)}}

# Patterns for the JSON Schemas (tokcost.catalog.validation, tokcost.budget.config): what the
# parsers accept when a value is written as text. Looser than the parsers (no digit
# grouping rules, no bounds), which still give the precise one-line message.
_NUMBER_PATTERN = r"([0-9][0-9_,]*(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?"
COUNT_PATTERN = rf"^\s*{_NUMBER_PATTERN}\s*([kKmMbBtT]|[kKmMgGtT][iI])?\s*$"
SIZE_PATTERN = rf"^\s*{_NUMBER_PATTERN}\s*([kKmMgGtTpPeE][iI]?[bB])?\s*$"
MONEY_PATTERN = rf"^\s*(\$|US\$)?\s*{_NUMBER_PATTERN}\s*([kKmM]|[cC¢])?\s*(USD|usd)?\s*$"
PERCENT_PATTERN = rf"^\s*{_NUMBER_PATTERN}\s*%?\s*$"

# Bytes per element of weights/activations. Quantized KV caches are described in
# tokcost.memory.dtypes, which adds their per-group scale overhead.
WEIGHT_DTYPE_BITS: dict[str, Decimal] = {
    "fp32": Decimal(32), "bf16": Decimal(16), "fp16": Decimal(16), "fp8": Decimal(8),
    "int8": Decimal(8), "int4": Decimal(4),
    "mxfp4": Decimal("4.25"),  # OCP MX FP4: 4-bit elements, one 8-bit exponent per 32
}

# sign, number, unit; the number's digit grouping is checked by _split.
_TEXT = re.compile(r"^\s*(?P<sign>[-+]?)\s*(?P<number>(?:[0-9][0-9_,]*(?:\.[0-9]*)?|\.[0-9]+)"
                   r"(?:[eE][-+]?[0-9]+)?)\s*(?P<unit>[A-Za-z%¢]*)\s*$")
# 8,000 and 8_000 group digits; 1,5 (one and a half in half the world) does not.
_GROUPED = re.compile(r"^(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+(?:_[0-9]+)*)$")
_NOT_FINITE = re.compile(r"^\s*[-+]?\s*(?:nan|inf|infinity)\s*$", re.IGNORECASE)


def _q(text: object) -> str:
    """The value as the message quotes it: ``'8q'``; ``repr`` when not printable (one line)."""
    shown = str(text).strip()
    return f"'{shown}'" if shown.isprintable() else repr(shown)


def _power(n: int | Decimal) -> str:
    """``10**15`` -> ``'10^15'``, ``2**60`` -> ``'2^60'``, else ``'1,234'``."""
    value = int(n)
    if value > 10**4 and str(value).rstrip("0") == "1":
        return f"10^{len(str(value)) - 1}"
    if value > 2**14 and value & (value - 1) == 0:
        return f"2^{value.bit_length() - 1}"
    return f"{value:,}"


def _split(text: str | int | float | Decimal, param: str, what: str
) -> tuple[bool, Decimal, str] | None:
    """``'-1.5 GiB'`` -> ``(True, Decimal('1.5'), 'GiB')``, None for no number; NaN, infinities
    and booleans (YAML's ``yes``) raise: no parser takes them."""
    if isinstance(text, bool):
        raise UsageError(f"{arg(param)} must be {what}, got {text!r}", param=param)
    if isinstance(text, (int, float, Decimal)):
        given = Decimal(str(text)) if isinstance(text, float) else Decimal(text)
        if not given.is_finite():
            raise UsageError(f"{arg(param)} must be a finite number, got {_q(text)}", param=param)
        return given < 0, abs(given), ""
    if _NOT_FINITE.match(text):
        raise UsageError(f"{arg(param)} must be a finite number, got {_q(text)}", param=param)
    match = _TEXT.match(text)
    if not match:
        return None
    number = match.group("number")
    whole = re.split(r"[.eE]", number)[0]
    if ("," in whole or "_" in whole) and not _GROUPED.match(whole):
        return None
    value = Decimal(number.replace("_", "").replace(",", ""))
    return match.group("sign") == "-", value, match.group("unit")


class OutOfRange(UsageError):
    """A number that parses but lies past the sane bound (``1e30`` tokens, ``2EiB``)."""


def _too_large(param: str, text: object, maximum: int | Decimal, unit: str, why: str) -> UsageError:
    return OutOfRange(
        f"{arg(param)} {_q(text)} is beyond {_power(maximum)}{unit}, more than {why}; check the "
        "number and its suffix", param=param)


def parse_count(text: str | int | float | Decimal, *, param: str = "count", minimum: int = 0,
    maximum: int = MAX_COUNT) -> int:
    """A whole number in ``[minimum, maximum]`` such as ``128000``, ``128k``, ``8Ki``, ``8.03B``."""
    parts = _split(text, param, "a count such as 8000 or 8k")
    if parts is None:
        raise UsageError(
            f"{arg(param)} {_q(text)} is not a count; write a whole number such as 8000, 8k "
            "(10^3), 8Ki (2^10), 1.5M or 1e6", param=param)
    negative, value, suffix = parts
    key = suffix.lower()
    if key not in COUNT_SUFFIXES:
        if key in SIZE_UNITS:
            raise UsageError(
                f"{arg(param)} {_q(text)} is a size; {arg(param)} is a count such as 8k or 8Ki",
                param=param)
        raise UsageError(
            f"{arg(param)} {_q(text)} has an unknown suffix '{suffix}'; use k, M, B, T (powers of "
            "1000) or Ki, Mi, Gi, Ti (powers of 1024), or none", param=param)
    try:
        value *= COUNT_SUFFIXES[key]
    except ArithmeticError:  # an exponent beyond Decimal's range
        raise _too_large(param, text, maximum, "", "any count tokcost handles") from None
    if negative and value:
        raise UsageError(_below(param, minimum, text), param=param)
    if value > maximum:
        raise _too_large(param, text, maximum, "",
                         "any corpus or model handles" if maximum == MAX_COUNT else "allowed")
    if value != value.to_integral_value():
        raise UsageError(f"{arg(param)} {_q(text)} is not a whole number", param=param)
    count = int(value)
    if count < minimum:
        raise UsageError(_below(param, minimum, text), param=param)
    return count


def _below(param: str, minimum: int, text: object) -> str:
    if minimum <= 0:
        return f"{arg(param)} must not be negative, got {_q(text)}"
    if minimum == 1:
        return f"{arg(param)} must be positive, got {_q(text)}"
    return f"{arg(param)} must be >= {minimum:,}, got {_q(text)}"


def parse_size(text: str | int | float | Decimal, *, param: str = "size", allow_zero: bool = False,
    maximum: int = MAX_SIZE) -> int:
    """Bytes in a size such as ``80GB``, ``80 GiB``, ``1.5e9`` or ``512MiB`` (rounded down)."""
    example = "80GB (10^9 bytes) or 80GiB (2^30 bytes)"
    parts = _split(text, param, f"a size such as {example}")
    if parts is None:
        raise UsageError(
            f"{arg(param)} {_q(text)} is not a size; write a number with a unit such as {example}",
            param=param)
    negative, value, unit = parts
    shown = str(text).strip()
    number = shown[: len(shown) - len(unit)].strip() if unit else shown
    key = unit.lower()
    if negative and value:
        raise UsageError(f"{arg(param)} must not be negative, got {_q(shown)}", param=param)
    if key == "b":
        # B is bytes, as vLLM's --kv-cache-memory takes them: 7240417280B.
        key = ""
    elif not unit and 0 < value < 2**20:
        # A GPU memory of "80" is surely not 80 bytes: ask instead of computing nonsense.
        raise UsageError(
            f"{arg(param)} {_q(shown)} has no unit; write {number}GB (10^9 bytes) or {number}GiB "
            "(2^30 bytes); a bare number is a byte count only from 1048576 (1 MiB) up", param=param,
        )
    if key in ("k", "m", "g", "t", "p", "e"):
        up = key.upper()
        raise UsageError(
            f"{arg(param)} {_q(shown)} is ambiguous; write {number}{up}B (powers of 1000) or "
            f"{number}{up}iB (powers of 1024)", param=param)
    if key and key not in SIZE_UNITS:
        hint = suggest(key, [u.lower() for u in _UNIT_SPELLING])
        raise UsageError(
            f"{arg(param)} has unknown unit '{unit}'{hint}; use one of {', '.join(_UNIT_SPELLING)}",
            param=param)
    try:
        exact = value * SIZE_UNITS.get(key, 1)
    except ArithmeticError:
        raise _too_large(param, shown, maximum, " bytes", "any machine holds") from None
    if exact > maximum:
        raise _too_large(param, shown, maximum, " bytes", "any machine holds")
    size = int(exact)
    if size == 0 and not allow_zero:
        raise UsageError(f"{arg(param)} must be greater than zero, got {_q(shown)}", param=param)
    return size


def parse_context_list(text: str, *, param: str = "context") -> list[int]:
    """Comma-separated counts of at least one token (``parse_count``)."""
    out = [parse_count(part, param=param, minimum=1) for part in text.split(",") if part.strip()]
    if not out:
        raise UsageError(f"{arg(param)} needs at least one length, e.g. {arg(param, '8k')} or "
                         "1k,8k,32k", param=param)
    return out


_CURRENCY = re.compile(r"[€£¥₹]|\b(?:EUR|GBP|JPY|CHF|CNY|INR)\b", re.IGNORECASE)
_MONEY = re.compile(r"^\s*(?P<sign>[-+]?)\s*(?P<dollar>US\$|\$)?\s*(?P<sign2>[-+]?)\s*(?P<rest>.*?)"
                    r"\s*(?:USD)?\s*$", re.IGNORECASE | re.DOTALL)
_MONEY_SUFFIXES = {"": Decimal(1), "k": Decimal(10**3), "m": Decimal(10**6),
                   "c": Decimal("0.01"), "¢": Decimal("0.01")}


def parse_money(text: str | int | float | Decimal, *, param: str = "amount",
    maximum: Decimal = MAX_MONEY) -> Decimal:
    """US dollars, exactly: ``0.05``, ``$0.05``, ``0.05 USD``, ``$1,200``, ``$1.2k``, ``5c``;
    another currency is refused, not converted (every catalog price is USD)."""
    if isinstance(text, str):
        shown = text.strip()
        if _CURRENCY.search(shown):
            number = re.sub(r"[^0-9.,_]", "", shown) or "5"
            raise UsageError(
                f"{arg(param)} {_q(shown)} is not in US dollars; tokcost prices are USD: write "
                f"${number} or {number}", param=param)
        match = _MONEY.match(shown)
        assert match is not None  # the pattern matches any text
        if match.group("dollar") and match.group("rest")[-1:] in ("c", "C", "¢"):
            parts = None  # '$5c': dollars or cents?
        else:
            parts = _split(match.group("rest"), param, "an amount in USD")
        if parts is not None and (match.group("sign") == "-" or match.group("sign2") == "-"):
            parts = (True, parts[1], parts[2])
    else:
        shown = str(text)
        parts = _split(text, param, "an amount in USD")
    if parts is None or parts[2].lower() not in _MONEY_SUFFIXES:
        raise UsageError(
            f"{arg(param)} {_q(shown)} is not an amount; write US dollars such as 0.05, $0.05, "
            "$1.2k or 5c (cents)", param=param)
    negative, value, suffix = parts
    if negative and value:
        raise UsageError(f"{arg(param)} must not be negative, got {_q(shown)}", param=param)
    try:
        amount = value * _MONEY_SUFFIXES[suffix.lower()]
    except ArithmeticError:
        raise _too_large(param, shown, maximum, " USD", "any budget") from None
    if amount > maximum:
        raise _too_large(param, shown, maximum, " USD", "any budget")
    return amount


def parse_percent(text: str | int | float | Decimal, *, param: str = "percent",
    maximum: Decimal | None = None) -> Decimal:
    """Percent points: ``10`` and ``10%`` are both 10 (a share is ``parse_fraction``'s)."""
    parts = _split(text, param, "a percentage such as 10 or 10%")
    if parts is None or parts[2] not in ("", "%"):
        raise UsageError(f"{arg(param)} {_q(text)} is not a percentage; write 10 or 10%",
                         param=param)
    negative, value, _ = parts
    if negative and value:
        raise UsageError(f"{arg(param)} must not be negative, got {_q(text)}", param=param)
    if maximum is not None and value > maximum:
        raise UsageError(f"{arg(param)} must be at most {maximum}%, got {_q(text)}", param=param)
    if maximum is None and value > MAX_COUNT:
        raise _too_large(param, text, MAX_COUNT, "%", "any growth")
    return value


def parse_fraction(text: str | int | float | Decimal, *, param: str = "share") -> Decimal:
    """A share of a whole in [0, 1]: ``0.5`` or ``50%`` (a bare ``50`` is refused)."""
    parts = _split(text, param, "a share such as 0.5 or 50%")
    if parts is None or parts[2] not in ("", "%"):
        raise UsageError(f"{arg(param)} {_q(text)} is not a share; write 0.5 or 50%", param=param)
    negative, value, unit = parts
    share = value / 100 if unit == "%" else value
    if negative and value:
        raise UsageError(f"{arg(param)} must not be negative, got {_q(text)}", param=param)
    if share > 1:
        hint = f"; for {value}% write {value}%" if not unit else ""
        raise UsageError(f"{arg(param)} must be a share in [0, 1], got {_q(text)}{hint}",
                         param=param)
    return share


def format_bytes(n: float, *, binary: bool = True) -> str:
    """``131072`` -> ``'128 KiB'``; decimal units with ``binary=False``."""
    base, units = ((1024, ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"]) if binary
                   else (1000, ["B", "KB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"]))
    value = float(n)
    for unit in units:
        # Switch units at 1000 so a table never shows "1000 MiB" for 0.98 GiB.
        if abs(value) < 1000 or unit == units[-1]:
            break
        value /= base
    return f"{int(value)} B" if unit == "B" else f"{value:.2f}".rstrip("0").rstrip(".") + f" {unit}"


def format_usd(amount: Decimal | int | float | str, *, per_million: bool = False) -> str:
    """Money for people (``--json`` keeps exact strings): to the cent from $1 up; under $1
    three significant digits, never $0.00, exact amounts without padding zeros; halves up."""
    value = amount if isinstance(amount, Decimal) else Decimal(str(amount))
    if not value.is_finite():
        raise ValueError(f"not an amount of money: {amount!r}")
    sign, value = ("-" if value < 0 else ""), abs(value)
    text = None
    if 0 < value < 1:
        places = max(2, SIGNIFICANT_DIGITS - 1 - value.adjusted())
        shown = _round(value, places)
        if shown.adjusted() > value.adjusted():  # 0.000999 rounds up to 0.00100: one place less
            shown = _round(value, max(2, places - 1))
        if shown < 1:  # 0.9996 rounds to 1.000 and is shown as dollars below
            whole, _, frac = f"{shown:f}".partition(".")
            if shown == value:  # exact: no zero that was not a rounded digit
                frac = frac.rstrip("0").ljust(2, "0")
            text = f"{whole}.{frac}"
    if text is None:
        text = f"{_round(value, 2):,.2f}"
    return f"{sign}${text}" + ("/M" if per_million else "")


def _round(value: Decimal, places: int) -> Decimal:
    # A context wide enough for every digit kept: quantize fails past the default 28.
    prec = max(28, value.adjusted() + places + 2)
    return value.quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP, Context(prec=prec))


def format_percent(value: float, *, sign: bool = False) -> str:
    """A percentage for people: one decimal from 0.1% up, two significant digits under it
    (a value that is not zero never reads as zero); ``sign``: a growth."""
    lead = ("+" if value >= 0 else "-") if sign else ("-" if value < 0 else "")
    magnitude = abs(value)
    if not math.isfinite(magnitude) or magnitude == 0 or magnitude >= 0.1:
        return f"{lead}{magnitude:.1f}%"
    return f"{lead}{_two_digits(magnitude)}%"


def round_percent(value: float) -> float:
    """``value`` for JSON: two decimals, two significant digits under 0.1 (never 0.0)."""
    magnitude = abs(value)
    if not math.isfinite(magnitude) or magnitude == 0 or magnitude >= 0.1:
        return round(value, 2)
    return math.copysign(float(_two_digits(magnitude)), value)


def _two_digits(magnitude: float) -> str:
    """0 < ``magnitude`` < 0.1 with two significant digits, halves up, never in e-notation."""
    exact = Decimal(magnitude)
    top = exact.adjusted()
    shown = exact.quantize(Decimal(1).scaleb(top - 1), ROUND_HALF_UP)
    if shown.adjusted() != top:  # 0.0996 -> 0.100: rounding gained a digit; keep two
        shown = shown.quantize(Decimal(1).scaleb(top), ROUND_HALF_UP)
    return f"{shown:f}"


def weight_bits(dtype: str) -> Decimal:
    """Bits per parameter of a weights dtype (``bf16`` -> 16, ``mxfp4`` -> 4.25)."""
    key = dtype.lower()
    if key not in WEIGHT_DTYPE_BITS:
        raise UsageError(f"unknown weights dtype '{dtype}'{suggest(key, WEIGHT_DTYPE_BITS)}; use "
                         f"one of {', '.join(WEIGHT_DTYPE_BITS)}")
    return WEIGHT_DTYPE_BITS[key]


def spec_label(spec: str) -> str:
    """A tokenizer spec as a column label: ``tiktoken:o200k_base`` -> ``o200k_base``."""
    family, _, name = spec.partition(":")
    return name if family == "tiktoken" and "/" not in name else spec
