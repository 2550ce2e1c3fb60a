"""Compare catalog prices with the genai-prices database and write the differences.

genai-prices (pydantic's maintained price database, an optional extra:
``pip install 'tokcost[prices]'``) is imported only here, inside functions.

Writing edits the YAML text in place, value by value, at the positions the YAML
parser reports, so comments and layout survive; the result is checked by the
loader before it atomically replaces the file.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

import yaml

from tokcost.atomic import atomic_path
from tokcost.catalog import yamltext
from tokcost.catalog.loader import CatalogInvalid, parse_file
from tokcost.catalog.schema import ModelEntry, Pricing
from tokcost.errors import CatalogError, MissingDependency

# catalog provider -> genai-prices provider id
PROVIDERS = {
    "openai": "openai",
    "anthropic": "anthropic",
    "google": "google",
    "mistral": "mistral",
    "deepseek": "deepseek",
}
# genai-prices price field -> catalog pricing field
FIELDS = {
    "input_mtok": "input",
    "cache_read_mtok": "cached_input",
    "cache_write_mtok": "cache_write",
    "output_mtok": "output",
}


@dataclass(frozen=True)
class PriceDiff:
    """One field where the catalog and the database disagree."""

    model: str
    field: str  # e.g. "input", "batch_discount", "tiers[0].output"
    catalog: Decimal | bool | None
    database: Decimal | bool | None
    database_model: str
    writable: bool = True  # False: needs a hand edit (e.g. a whole new tier)

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "field": self.field,
            "catalog": None
            if self.catalog is None
            else str(self.catalog).lower()
            if isinstance(self.catalog, bool)
            else str(self.catalog),
            "database": None
            if self.database is None
            else str(self.database).lower()
            if isinstance(self.database, bool)
            else str(self.database),
            "database_model": self.database_model,
            "writable": self.writable,
        }


@dataclass(frozen=True)
class SyncReport:
    diffs: tuple[PriceDiff, ...]
    matched: tuple[str, ...]  # catalog ids found in the database
    unmatched: tuple[str, ...]  # priced catalog ids the database does not know
    database_version: str


def _providers() -> tuple[list[Any], str]:
    try:
        from importlib.metadata import version

        from genai_prices.data import providers
    except ImportError:
        raise MissingDependency("genai-prices", "prices", "models sync-prices") from None
    return cast(list[Any], providers), version("genai-prices")


def _flatten(value: Any) -> tuple[Decimal | None, dict[int, Decimal]]:
    """A genai-prices price (Decimal or TieredPrices) -> (base, {threshold: price})."""
    if value is None:
        return None, {}
    if isinstance(value, Decimal):
        return value, {}
    base = cast(Decimal, value.base)
    return base, {int(t.start): cast(Decimal, t.price) for t in value.tiers}


def _database_prices(model: Any, when: _dt.datetime) -> tuple[dict[str, Any], dict[str, Any]]:
    """Standard prices and the batch variant's prices (empty when none)."""
    standard = model.get_prices(when)
    std = {k: getattr(standard, k, None) for k in FIELDS}
    batch: dict[str, Any] = {}
    for variant in model.price_variants or ():
        if variant.when == {"processing": "batch"} and (
            variant.constraint is None or variant.constraint.active(when)
        ):
            batch = {k: getattr(variant.prices, k, None) for k in FIELDS}
    return std, batch


def _compare(
    entry: ModelEntry, pricing: Pricing, db_id: str, std: dict[str, Any], batch: dict[str, Any]
) -> list[PriceDiff]:
    diffs: list[PriceDiff] = []
    tiers_db: dict[int, dict[str, Decimal]] = {}
    for key, name in FIELDS.items():
        base, tiers = _flatten(std[key])
        ours: Decimal | None = getattr(pricing, name)
        if base is not None and ours != base:
            diffs.append(PriceDiff(entry.id, name, ours, base, db_id))
        for start, price in tiers.items():
            tiers_db.setdefault(start, {})[name] = price
    ours_tiers = {t.above_input_tokens: (i, t) for i, t in enumerate(pricing.tiers)}
    for start, prices in sorted(tiers_db.items()):
        if start not in ours_tiers:
            diffs.append(
                PriceDiff(
                    entry.id,
                    f"tiers (above {start:,} input tokens)",
                    None,
                    None,
                    db_id,
                    writable=False,
                )
            )
            continue
        index, tier = ours_tiers[start]
        for name, price in prices.items():
            ours = getattr(tier, name)
            if ours != price:
                diffs.append(PriceDiff(entry.id, f"tiers[{index}].{name}", ours, price, db_id))
    # Batch: the discount is 1 - batch input / standard input.
    b_input, _ = _flatten(batch.get("input_mtok"))
    s_input, _ = _flatten(std["input_mtok"])
    if b_input is not None and s_input:
        discount = (Decimal(1) - b_input / s_input).normalize()
        if pricing.batch_discount is None or pricing.batch_discount.normalize() != discount:
            diffs.append(
                PriceDiff(entry.id, "batch_discount", pricing.batch_discount, discount, db_id)
            )
        b_cache, _ = _flatten(batch.get("cache_read_mtok"))
        s_cache, _ = _flatten(std["cache_read_mtok"])
        cache_discounted = b_cache is not None and s_cache is not None and b_cache < s_cache
        if s_cache is not None and cache_discounted != pricing.batch_discount_cache:
            diffs.append(
                PriceDiff(
                    entry.id,
                    "batch_discount_cache",
                    pricing.batch_discount_cache,
                    cache_discounted,
                    db_id,
                )
            )
    return diffs


def compare_prices(entries: list[ModelEntry], *, when: _dt.datetime | None = None) -> SyncReport:
    """Every difference between catalog prices and genai-prices, for models it knows."""
    providers, db_version = _providers()
    by_id = {p.id: p for p in providers}
    when = when or _dt.datetime.now(tz=_dt.timezone.utc)
    diffs: list[PriceDiff] = []
    matched: list[str] = []
    unmatched: list[str] = []
    for entry in entries:
        # Provider names ignore case, as everywhere in tokcost ("OpenAI" is "openai").
        provider = by_id.get(PROVIDERS.get((entry.provider or "").strip().lower(), ""))
        if entry.pricing is None:
            continue
        model = None
        if provider is not None:
            for ref in (entry.id, *entry.aliases):
                model = provider.find_model(ref, all_providers=providers)
                if model is not None:
                    break
        if model is None:
            unmatched.append(entry.id)
            continue
        matched.append(entry.id)
        std, batch = _database_prices(model, when)
        diffs.extend(_compare(entry, entry.pricing, model.id, std, batch))
    return SyncReport(tuple(diffs), tuple(matched), tuple(unmatched), db_version)


# --- writing ---------------------------------------------------------------------------


def _scalar(value: Decimal | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    text = format(value.normalize(), "f")
    return text


def _child(node: yaml.Node, key: str) -> tuple[yaml.Node, yaml.Node] | None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if getattr(k, "value", None) == key:
                return cast(yaml.Node, k), cast(yaml.Node, v)
    return None


def apply_diffs(path: Path, diffs: list[PriceDiff]) -> int:
    """Write the writable differences into the catalog file; returns how many."""
    text = path.read_text(encoding="utf-8")
    root = yamltext.compose(text)
    models = _child(root, "models") if root is not None else None
    if models is None or not isinstance(models[1], yaml.SequenceNode):
        raise CatalogError(f"{path}: no models list to write prices into")
    pricing_nodes: dict[str, yaml.Node] = {}
    for item in models[1].value:
        found = _child(item, "id")
        pricing = _child(item, "pricing")
        if found is not None and pricing is not None:
            pricing_nodes[str(found[1].value)] = pricing[1]
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement)
    written = 0
    for diff in diffs:
        node = pricing_nodes.get(diff.model)
        if not diff.writable or node is None or diff.database is None:
            continue
        target = node
        field = diff.field
        if field.startswith("tiers["):
            index = int(field[6 : field.index("]")])
            field = field.split(".", 1)[1]
            tiers = _child(node, "tiers")
            if tiers is None or not isinstance(tiers[1], yaml.SequenceNode):
                continue
            target = tiers[1].value[index]
        value = _scalar(diff.database)
        existing = _child(target, field)
        if existing is not None:
            v = existing[1]
            edits.append((v.start_mark.index, v.end_mark.index, value))
        elif isinstance(target, yaml.MappingNode) and target.flow_style:
            at = target.start_mark.index + 1
            edits.append((at, at, f"{field}: {value}, "))
        elif isinstance(target, yaml.MappingNode) and target.value:
            first = target.value[0][0]
            at = first.start_mark.index
            indent = " " * first.start_mark.column
            edits.append((at, at, f"{field}: {value}\n{indent}"))
        else:
            continue
        written += 1
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    if written:
        _write_checked(path, text)
    return written


def _write_checked(path: Path, text: str) -> None:
    """Validate the new text with the loader, then replace the file atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
        problems = parse_file(tmp)[1]
        if problems:  # the original stays untouched
            raise CatalogInvalid(problems)
