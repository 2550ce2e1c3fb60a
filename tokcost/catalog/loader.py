"""Read models.yaml into checked, frozen objects.

Parsing is ``yaml.safe_load`` semantics (the C-accelerated ``CSafeLoader`` when
libyaml is present: same safe constructors, ~10x faster). Validation collects
every problem; each names the file, the line, the model id, the field and what was
expected::

    models.yaml:41: model 'gpt-4o': pricing.input: expected a number >= 0 (USD per
    million tokens), got 'cheap'

Line numbers are looked up only when there is an error, by composing the YAML
node tree once more, so a good catalog loads at full speed.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from tokcost.catalog.schema import (
    PACKAGE_PLACEHOLDERS,
    Architecture,
    Attention,
    ChatOverhead,
    Gpu,
    LayerKind,
    ModelEntry,
    PriceTier,
    Pricing,
)
from tokcost.catalog.units import WEIGHT_DTYPE_BITS, parse_count, parse_size
from tokcost.errors import CatalogError, TokcostError, suggest

if TYPE_CHECKING:
    import yaml

T = TypeVar("T")
PathKey = tuple[str | int, ...]

SCHEMA_VERSION = 1


@dataclass
class Problem:
    """One validation error, rendered as ``file:line: model 'id': field: message``."""

    file: str
    path: PathKey
    model: str | None
    field: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        who = f" model '{self.model}':" if self.model else ""
        fld = f" {self.field}:" if self.field else ""
        return f"{where}:{who}{fld} {self.message}"


class CatalogInvalid(CatalogError):
    """A catalog file has one or more problems (all kept in ``problems``)."""

    def __init__(self, problems: list[Problem]) -> None:
        first = str(problems[0])
        more = len(problems) - 1
        tail = (
            f" (and {more} more problem{'s' if more > 1 else ''}; "
            f"run: tokcost models validate {problems[0].file})"
            if more
            else ""
        )
        super().__init__(first + tail)
        self.problems = problems


@dataclass
class _Checker:
    """Walks one parsed file, converting values and recording problems."""

    file: str
    problems: list[Problem] = field(default_factory=list)
    model: str | None = None

    def fail(self, path: PathKey, message: str) -> None:
        # Inside a model the id already says which entry: show "pricing.tiers[0].input".
        parts = path[2:] if path[:1] == ("models",) else path
        fld = ""
        for part in parts:
            fld += f"[{part}]" if isinstance(part, int) else f"{'.' if fld else ''}{part}"
        self.problems.append(Problem(self.file, path, self.model, fld, message))

    # -- typed getters: return None after recording a problem --------------------------

    def mapping(self, value: Any, path: PathKey, allowed: Sequence[str]) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.fail(
                path, f"expected a mapping with keys {', '.join(allowed)}, got {_show(value)}"
            )
            return None
        for key in value:
            if key not in allowed:
                hint = suggest(str(key), allowed)
                self.fail(
                    (*path, str(key)),
                    f"unknown field{hint}"
                    if hint
                    else f"unknown field; expected one of {', '.join(allowed)}",
                )
        return value

    def integer(self, value: Any, path: PathKey, *, minimum: int = 1, what: str = "") -> int | None:
        desc = what or f"an integer >= {minimum}"
        try:
            number = parse_count(value) if isinstance(value, (int, str)) else None
        except TokcostError:
            number = None
        if number is None or isinstance(value, bool) or number < minimum:
            self.fail(path, f"expected {desc}, got {_show(value)}")
            return None
        return number

    def text(self, value: Any, path: PathKey) -> str | None:
        if not isinstance(value, str) or not value.strip():
            self.fail(path, f"expected a non-empty string, got {_show(value)}")
            return None
        return value

    def boolean(self, value: Any, path: PathKey) -> bool | None:
        if not isinstance(value, bool):
            self.fail(path, f"expected true or false, got {_show(value)}")
            return None
        return value

    def money(self, value: Any, path: PathKey) -> Decimal | None:
        """USD per million tokens; floats go through ``str`` so 2.5 stays 2.5 exactly."""
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            number = None
        else:
            try:
                number = Decimal(str(value).strip())
            except InvalidOperation:
                number = None
        if number is None or not number.is_finite() or number < 0:
            self.fail(path, f"expected a number >= 0 (USD per million tokens), got {_show(value)}")
            return None
        return number

    def fraction(self, value: Any, path: PathKey) -> Decimal | None:
        number = self.money(value, path) if not isinstance(value, bool) else None
        if number is not None and not 0 <= number < 1:
            self.fail(path, f"expected a fraction in [0, 1) such as 0.5, got {_show(value)}")
            return None
        return number

    def date(self, value: Any, path: PathKey) -> _dt.date | None:
        if isinstance(value, _dt.datetime):
            return value.date()
        if isinstance(value, _dt.date):
            return value
        if isinstance(value, str):
            try:
                return _dt.date.fromisoformat(value)
            except ValueError:
                pass
        self.fail(path, f"expected a date YYYY-MM-DD, got {_show(value)}")
        return None

    def size(self, value: Any, path: PathKey) -> int | None:
        try:
            return parse_size(value, param="size")
        except TokcostError as exc:
            self.fail(path, f"expected a size such as 80GB or 80GiB: {exc}")
            return None

    def strings(self, value: Any, path: PathKey) -> tuple[str, ...] | None:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            self.fail(path, f"expected a list of strings, got {_show(value)}")
            return None
        return tuple(value)

    def optional(
        self, data: Mapping[str, Any], key: str, path: PathKey, conv: Callable[[Any, PathKey], T]
    ) -> T | None:
        if key not in data or data[key] is None:
            return None
        return conv(data[key], (*path, key))


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- sections ---------------------------------------------------------------------------

_MODEL_KEYS = [
    "id",
    "weights",
    "aliases",
    "prefixes",
    "provider",
    "family",
    "tokenizer",
    "tokenizer_exact",
    "tokenizer_note",
    "tokenizer_package",
    "context_window",
    "max_output_tokens",
    "chat",
    "architecture",
    "pricing",
    "source",
    "notes",
]
_ARCH_KEYS = [
    "layers",
    "hidden_size",
    "attention_heads",
    "kv_heads",
    "head_dim",
    "vocab_size",
    "params",
    "weights_dtype",
    "weights_bytes",
    "attention",
    "source",
]
_ATTN_KEYS = [
    "type",
    "window",
    "pattern",
    "kv_lora_rank",
    "qk_rope_head_dim",
    "linear_state_elements",
]
_PRICE_FIELDS = ("input", "cached_input", "cache_write", "output", "reasoning")
_PRICE_KEYS = [*_PRICE_FIELDS, "batch_discount", "batch_discount_cache", "tiers", "as_of", "source"]
_TIER_KEYS = ["above_input_tokens", "applies_to", *_PRICE_FIELDS]
_GPU_KEYS = ["name", "aliases", "memory", "bandwidth", "bf16_flops", "fp8_flops", "source"]
_LAYER_KINDS: tuple[LayerKind, ...] = ("full", "sliding", "linear")


def _chat(c: _Checker, value: Any, path: PathKey) -> ChatOverhead | None:
    data = c.mapping(value, path, ["per_message", "per_name", "reply_priming"])
    if data is None:
        return None
    nums = [
        c.integer(data.get(k, 0), (*path, k), minimum=0)
        for k in ("per_message", "per_name", "reply_priming")
    ]
    if any(n is None for n in nums):
        return None
    return ChatOverhead(*cast(list[int], nums))


def _attention(c: _Checker, value: Any, path: PathKey) -> Attention | None:
    data = c.mapping(value, path, _ATTN_KEYS)
    if data is None:
        return None
    kind = data.get("type", "full")
    if kind not in ("full", "sliding", "mla", "hybrid"):
        c.fail((*path, "type"), f"expected one of full, sliding, mla, hybrid, got {_show(kind)}")
        return None
    window = c.optional(data, "window", path, c.integer)
    lora = c.optional(data, "kv_lora_rank", path, c.integer)
    rope = c.optional(data, "qk_rope_head_dim", path, c.integer)
    state = c.optional(data, "linear_state_elements", path, c.integer)
    default: tuple[LayerKind, ...] = ("sliding",) if kind == "sliding" else ("full",)
    pattern: tuple[LayerKind, ...] = default
    if "pattern" in data:
        raw = data["pattern"]
        if (
            not isinstance(raw, list)
            or not raw
            or not all(isinstance(k, str) and k in _LAYER_KINDS for k in raw)
        ):
            c.fail(
                (*path, "pattern"),
                f"expected a list of layer kinds ({', '.join(_LAYER_KINDS)}), got {_show(raw)}",
            )
            return None
        pattern = tuple(cast(list[LayerKind], raw))
    if kind == "mla" and (lora is None or rope is None):
        missing = [k for k in ("kv_lora_rank", "qk_rope_head_dim") if data.get(k) is None]
        if missing:
            c.fail(path, f"type mla needs {' and '.join(missing)}")
        return None
    if "sliding" in pattern and window is None:
        if "window" not in data:
            c.fail((*path, "window"), "expected the sliding window in tokens (layers use sliding)")
        return None
    if kind == "full" and pattern != ("full",):
        c.fail((*path, "pattern"), "type full has only full layers; use type sliding or hybrid")
        return None
    if "linear" in pattern and state is None:
        if "linear_state_elements" not in data:
            c.fail(
                (*path, "linear_state_elements"),
                "expected the fixed state size (elements per linear layer per sequence)",
            )
        return None
    if kind == "hybrid" and "linear" not in pattern:
        c.fail((*path, "pattern"), "type hybrid needs at least one 'linear' layer in the pattern")
        return None
    return Attention(kind, pattern, window, lora, rope, state)


def _params(c: _Checker, value: Any, path: PathKey) -> tuple[int | None, int | None]:
    if isinstance(value, dict):
        data = c.mapping(value, path, ["total", "active"])
        if data is None:
            return None, None
        total = c.optional(data, "total", path, c.integer)
        active = c.optional(data, "active", path, c.integer)
        return total, active if active is not None else total
    total = c.integer(value, path, what="a parameter count such as 8.03B or {total, active}")
    return total, total


def _architecture(c: _Checker, value: Any, path: PathKey) -> Architecture | None:
    data = c.mapping(value, path, _ARCH_KEYS)
    if data is None:
        return None
    ok = True
    if "layers" not in data:
        c.fail((*path, "layers"), "expected the number of layers (num_hidden_layers)")
        ok = False
    ints: dict[str, int | None] = {
        k: c.optional(data, k, path, c.integer)
        for k in ("layers", "hidden_size", "attention_heads", "kv_heads", "head_dim", "vocab_size")
    }
    total, active = (
        _params(c, data["params"], (*path, "params"))
        if "params" in data
        else (
            None,
            None,
        )
    )
    dtype = str(data.get("weights_dtype", "bf16")).lower()
    if dtype not in WEIGHT_DTYPE_BITS:
        c.fail(
            (*path, "weights_dtype"),
            f"expected one of {', '.join(WEIGHT_DTYPE_BITS)}{suggest(dtype, WEIGHT_DTYPE_BITS)}, "
            f"got {_show(data.get('weights_dtype'))}",
        )
        ok = False
    weights_bytes = c.optional(data, "weights_bytes", path, c.size)
    attention = (
        _attention(c, data["attention"], (*path, "attention"))
        if "attention" in data
        else Attention()
    )
    kv, heads = ints["kv_heads"], ints["attention_heads"]
    if kv is not None and heads is not None and heads % kv:
        c.fail((*path, "kv_heads"), f"expected a divisor of attention_heads ({heads}), got {kv}")
        ok = False
    if active is not None and total is not None and active > total:
        c.fail(
            (*path, "params", "active"), f"expected at most params.total ({total}), got {active}"
        )
        ok = False
    source = c.optional(data, "source", path, c.text)
    layers = ints["layers"]
    if not ok or attention is None or layers is None:
        return None
    return Architecture(
        layers=layers,
        hidden_size=ints["hidden_size"],
        attention_heads=heads,
        kv_heads=kv,
        head_dim=ints["head_dim"],
        vocab_size=ints["vocab_size"],
        params_total=total,
        params_active=active,
        weights_dtype=dtype,
        weights_bytes=weights_bytes,
        attention=attention,
        source=source,
    )


def _tier(c: _Checker, value: Any, path: PathKey) -> PriceTier | None:
    data = c.mapping(value, path, _TIER_KEYS)
    if data is None:
        return None
    above = c.integer(data.get("above_input_tokens"), (*path, "above_input_tokens"))
    applies = data.get("applies_to")
    if applies not in ("all", "excess"):
        c.fail(
            (*path, "applies_to"),
            "expected 'all' (the whole request is billed at the tier price) or 'excess' "
            f"(only tokens above the threshold), got {_show(applies)}",
        )
        return None
    prices = {k: c.optional(data, k, path, c.money) for k in _PRICE_FIELDS}
    if above is None:
        return None
    return PriceTier(above, applies, **prices)


def _pricing(c: _Checker, value: Any, path: PathKey) -> Pricing | None:
    data = c.mapping(value, path, _PRICE_KEYS)
    if data is None:
        return None
    ok = True
    for key in ("input", "output"):
        if data.get(key) is None:
            c.fail(
                (*path, key), "expected a price (USD per million tokens); omit pricing if unknown"
            )
            ok = False
    prices = {k: c.optional(data, k, path, c.money) for k in _PRICE_FIELDS}
    discount = c.optional(data, "batch_discount", path, c.fraction)
    discount_cache = c.optional(data, "batch_discount_cache", path, c.boolean)
    tiers: list[PriceTier] = []
    raw_tiers = data.get("tiers") or []
    if not isinstance(raw_tiers, list):
        c.fail((*path, "tiers"), f"expected a list of tiers, got {_show(raw_tiers)}")
        ok = False
    else:
        for i, raw in enumerate(raw_tiers):
            tier = _tier(c, raw, (*path, "tiers", i))
            if tier is None:
                ok = False
            else:
                tiers.append(tier)
        tiers.sort(key=lambda t: t.above_input_tokens)
    as_of = c.optional(data, "as_of", path, c.date)
    source = c.optional(data, "source", path, c.text)
    inp, out = prices["input"], prices["output"]
    if not ok or inp is None or out is None:
        return None
    return Pricing(
        input=inp,
        output=out,
        cached_input=prices["cached_input"],
        cache_write=prices["cache_write"],
        reasoning=prices["reasoning"],
        batch_discount=discount,
        batch_discount_cache=bool(discount_cache),
        tiers=tuple(tiers),
        as_of=as_of,
        source=source,
    )


def _model(c: _Checker, value: Any, path: PathKey) -> ModelEntry | None:
    c.model = (
        value.get("id") if isinstance(value, dict) and isinstance(value.get("id"), str) else None
    )
    data = c.mapping(value, path, _MODEL_KEYS)
    if data is None:
        return None
    before = len(c.problems)
    model_id = c.text(data.get("id"), (*path, "id"))
    aliases = c.optional(data, "aliases", path, c.strings) or ()
    prefixes = c.optional(data, "prefixes", path, c.strings) or ()
    texts = {
        k: c.optional(data, k, path, c.text)
        for k in (
            "provider", "family", "tokenizer", "tokenizer_note", "tokenizer_package", "weights"
        )
    }
    exact = c.optional(data, "tokenizer_exact", path, c.boolean)
    ctx = c.optional(data, "context_window", path, c.integer)
    max_out = c.optional(data, "max_output_tokens", path, c.integer)
    chat = c.optional(data, "chat", path, lambda v, p: _chat(c, v, p))
    arch = c.optional(data, "architecture", path, lambda v, p: _architecture(c, v, p))
    pricing = c.optional(data, "pricing", path, lambda v, p: _pricing(c, v, p))
    source = c.optional(data, "source", path, c.text)
    notes = c.optional(data, "notes", path, c.text)
    if texts["tokenizer"] is not None and ":" not in texts["tokenizer"]:
        c.fail(
            (*path, "tokenizer"),
            f"expected a tokenizer spec such as tiktoken:o200k_base or hf:ORG/REPO, "
            f"got {_show(texts['tokenizer'])}",
        )
    for key in ("tokenizer", "weights"):
        for name in re.findall(r"\{([^}]*)\}", texts[key] or ""):
            if name not in PACKAGE_PLACEHOLDERS:
                c.fail(
                    (*path, key),
                    f"unknown placeholder {{{name}}}; known: "
                    + ", ".join("{" + k + "}" for k in PACKAGE_PLACEHOLDERS),
                )
    if model_id is None or len(c.problems) > before:
        return None
    return ModelEntry(
        id=model_id,
        aliases=aliases,
        provider=texts["provider"],
        family=texts["family"],
        tokenizer_spec=texts["tokenizer"],
        tokenizer_exact=True if exact is None else exact,
        tokenizer_note=texts["tokenizer_note"],
        tokenizer_package=texts["tokenizer_package"],
        context_window=ctx,
        max_output_tokens=max_out,
        chat=chat,
        architecture=arch,
        pricing=pricing,
        prefixes=prefixes,
        source=source,
        notes=notes,
        weights_spec=texts["weights"],
    )


def _gpu(c: _Checker, value: Any, path: PathKey) -> Gpu | None:
    c.model = None
    data = c.mapping(value, path, _GPU_KEYS)
    if data is None:
        return None
    before = len(c.problems)
    name = c.text(data.get("name"), (*path, "name"))
    for key in ("memory", "bandwidth"):
        if key not in data:
            c.fail((*path, key), f"expected the GPU's {key} (e.g. 80GiB, 3.35TB per second)")
    memory = c.optional(data, "memory", path, c.size)
    bandwidth = c.optional(data, "bandwidth", path, c.size)  # bytes per second
    flops = {}
    for key in ("bf16_flops", "fp8_flops"):
        if data.get(key) is not None:
            raw = data[key]
            if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
                c.fail((*path, key), f"expected FLOP/s such as 989e12, got {_show(raw)}")
                continue
            try:
                flops[key] = float(raw)
            except ValueError:
                c.fail((*path, key), f"expected FLOP/s such as 989e12, got {_show(raw)}")
    aliases = c.optional(data, "aliases", path, c.strings) or ()
    source = c.optional(data, "source", path, c.text)
    if name is None or memory is None or bandwidth is None or len(c.problems) > before:
        return None
    return Gpu(
        name=name,
        memory_bytes=memory,
        bandwidth_bytes_per_s=bandwidth,
        aliases=aliases,
        bf16_flops=flops.get("bf16_flops"),
        fp8_flops=flops.get("fp8_flops"),
        source=source,
    )


# --- files ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ParsedFile:
    """The checked content of one catalog file."""

    path: Path
    models: tuple[ModelEntry, ...]
    gpus: tuple[Gpu, ...]
    extends: bool


def _safe_loader() -> type[yaml.SafeLoader]:
    import yaml  # imported on first load, so `import tokcost` stays light

    # CSafeLoader builds exactly the safe types SafeLoader does, in C.
    return cast(type[yaml.SafeLoader], getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def parse_file(path: Path, *, strict: bool = True) -> tuple[ParsedFile, list[Problem]]:
    """Parse and check one catalog file; with ``strict`` raise on any problem."""
    import yaml

    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CatalogError(
            f"catalog file '{name}' does not exist; check --catalog or TOKCOST_CATALOG"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(f"cannot read catalog file '{name}': {exc}") from None
    try:
        data = yaml.load(text, Loader=_safe_loader())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise CatalogError(f"{name}{line}: not valid YAML: {reason}") from None
    checker = _Checker(name)
    parsed = _check_document(checker, data, path)
    problems = checker.problems
    if problems:
        _attach_lines(text, problems)
        if strict:
            raise CatalogInvalid(problems)
    return parsed, problems


def _entries(
    c: _Checker,
    top: dict[str, Any],
    key: str,
    what: str,
    parse: Callable[[_Checker, Any, PathKey], T | None],
) -> list[T]:
    """The valid entries of a top-level list (``models``, ``gpus``); problems go to ``c``."""
    raw = top.get(key) or []
    if not isinstance(raw, list):
        c.fail((key,), f"expected a list of {what}, got {_show(raw)}")
        return []
    found = [parse(c, item, (key, i)) for i, item in enumerate(raw)]
    return [entry for entry in found if entry is not None]


def _check_document(c: _Checker, data: Any, path: Path) -> ParsedFile:
    top = c.mapping(data, (), ["version", "extends", "models", "gpus"])
    if top is None:
        return ParsedFile(path, (), (), False)
    version = top.get("version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        c.fail(
            ("version",), f"expected catalog schema version {SCHEMA_VERSION}, got {_show(version)}"
        )
    extends = top.get("extends")
    if extends not in (None, "shipped"):
        c.fail(
            ("extends",), f"expected 'shipped' (add to the shipped catalog), got {_show(extends)}"
        )
    models = _entries(c, top, "models", "model entries", _model)
    c.model = None
    gpus = _entries(c, top, "gpus", "GPUs", _gpu)
    return ParsedFile(path, tuple(models), tuple(gpus), extends == "shipped")


def _attach_lines(text: str, problems: list[Problem]) -> None:
    """Fill ``Problem.line`` from the YAML node tree (1-based line of the field)."""
    import yaml

    try:
        root = yaml.compose(text, Loader=_safe_loader())
    except yaml.YAMLError:  # pragma: no cover - text already parsed once
        return
    for problem in problems:
        node: yaml.Node | None = root
        line = node.start_mark.line + 1 if node is not None else None
        for key in problem.path:
            child = _child(node, key)
            if child is None:
                break
            node = child
            line = node.start_mark.line + 1
        problem.line = line


def _child(node: yaml.Node | None, key: str | int) -> yaml.Node | None:
    import yaml

    if isinstance(node, yaml.MappingNode) and isinstance(key, str):
        for k, v in node.value:
            if getattr(k, "value", None) == key:
                # Point at the key for unknown fields, at the value otherwise.
                return cast(yaml.Node, v if not isinstance(v, yaml.ScalarNode) else k)
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
        return cast(yaml.Node, node.value[key])
    return None


def duplicate_keys(path: Path) -> list[Problem]:
    """Keys written twice in one mapping (YAML keeps the last one silently).

    Checked by ``models validate`` only: it needs a second pass over the node tree.
    """
    import yaml

    text = path.read_text(encoding="utf-8")
    try:
        root = yaml.compose(text, Loader=_safe_loader())
    except yaml.YAMLError:
        return []  # parse errors are reported by parse_file
    problems: list[Problem] = []

    def walk(node: yaml.Node | None, model: str | None) -> None:
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key, value in node.value:
                name = str(getattr(key, "value", ""))
                if name == "id" and isinstance(value, yaml.ScalarNode):
                    model = str(value.value)
                if name in seen:
                    problems.append(
                        Problem(
                            str(path),
                            (),
                            model,
                            name,
                            "key written twice in one mapping; YAML would keep only the last",
                            key.start_mark.line + 1,
                        )
                    )
                seen.add(name)
            for _, value in node.value:
                walk(value, model)
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                walk(item, model)

    walk(root, None)
    return problems


_DATED_SUFFIX = re.compile(r"^[-@](\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|latest|v\d+(:\d+)?)$")


def is_dated_suffix(rest: str) -> bool:
    """``-2024-08-06``, ``-20250514``, ``@20240620``, ``-2411``, ``-latest`` are dated ids."""
    return bool(_DATED_SUFFIX.match(rest))
