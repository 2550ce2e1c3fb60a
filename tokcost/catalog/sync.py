"""Compare catalog prices with the genai-prices database and write the differences.

genai-prices (pydantic's maintained price database, an optional extra:
``pip install 'tokcost[prices]'``) is imported only here, inside functions.

Writing edits the YAML text in place, value by value, at the positions the YAML
parser reports, so comments and layout survive; the result is checked by the
loader before it atomically replaces the file.

An entry whose differences are all written gets a new ``as_of``: the database's
date for the prices it was compared with (the latest start date of the standard
price and of the batch variant in use), or, when the database dates neither, the
day of the comparison (today, UTC). A start date is a fact about the price, so a
re-run on another day writes the same file; "today" only stands in where the
database says nothing. An entry left with a difference to edit by hand (a whole
new tier) keeps its ``as_of``: its prices are not yet the database's.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

import yaml

from tokcost.atomic import atomic_path
from tokcost.catalog import yamltext
from tokcost.catalog.loader import CatalogInvalid, check_file
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
    as_of: _dt.date | None = None  # the date writing gives the entry (see the module doc)

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "field": self.field, "catalog": _text(self.catalog),
                "database": _text(self.database), "database_model": self.database_model,
                "writable": self.writable,
                "as_of": self.as_of.isoformat() if self.as_of is not None else None}

    def describe(self) -> str:
        """The difference as one line: model, field, the catalog's value, the database's."""
        if not self.writable:
            return f"{self.model}: {self.field}: not in the catalog (add by hand)"
        return (f"{self.model}: {self.field}: catalog {_text(self.catalog) or 'unset'}, "
                f"genai-prices {_text(self.database) or 'unset'}")


def _text(value: Decimal | bool | None) -> str | None:
    """``true``/``false`` for a flag, the exact decimal for a price."""
    if value is None:
        return None
    return str(value).lower() if isinstance(value, bool) else str(value)


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


def _database_prices(
    model: Any, when: _dt.datetime
) -> tuple[dict[str, Any], dict[str, Any], _dt.date | None]:
    """Standard prices, the batch variant's prices (empty when none), and the latest
    start date of the two (None when the database dates neither)."""
    standard = model.get_prices(when)
    std = {k: getattr(standard, k, None) for k in FIELDS}
    dates = [_start(_standard_constraint(model, when))]
    batch: dict[str, Any] = {}
    for variant in model.price_variants or ():
        if variant.when == {"processing": "batch"} and (
            variant.constraint is None or variant.constraint.active(when)
        ):
            batch = {k: getattr(variant.prices, k, None) for k in FIELDS}
            dates.append(_start(variant.constraint))
    known = [d for d in dates if d is not None]
    return std, batch, max(known) if known else None


def _standard_constraint(model: Any, when: _dt.datetime) -> Any:
    """The constraint of the conditional price ``model.get_prices(when)`` picks, if any
    (genai-prices tries them last to first; the first one when none is active)."""
    if not isinstance(model.prices, list):
        return None
    for conditional in reversed(model.prices):
        if conditional.constraint is None or conditional.constraint.active(when):
            return conditional.constraint
    return None  # the fallback price is not active at ``when``: it dates nothing


def _start(constraint: Any) -> _dt.date | None:
    """A start-date constraint's date; None for none or a time-of-day window."""
    start = getattr(constraint, "start_date", None)
    return start if isinstance(start, _dt.date) else None


def _compare(
    entry: ModelEntry, pricing: Pricing, db_id: str, std: dict[str, Any], batch: dict[str, Any]
) -> list[PriceDiff]:
    """The entry's differences (``as_of`` not yet set)."""
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
            diffs.append(PriceDiff(entry.id, f"tiers (above {start:,} input tokens)", None,
                                   None, db_id, writable=False))
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
            diffs.append(PriceDiff(entry.id, "batch_discount", pricing.batch_discount,
                                   discount, db_id))
        b_cache, _ = _flatten(batch.get("cache_read_mtok"))
        s_cache, _ = _flatten(std["cache_read_mtok"])
        cache_discounted = b_cache is not None and s_cache is not None and b_cache < s_cache
        if s_cache is not None and cache_discounted != pricing.batch_discount_cache:
            diffs.append(PriceDiff(entry.id, "batch_discount_cache",
                                   pricing.batch_discount_cache, cache_discounted, db_id))
    return diffs


def _utc_day(when: _dt.datetime) -> _dt.date:
    """The UTC day of ``when`` (naive means UTC, as genai-prices reads it)."""
    return (when if when.tzinfo is None else when.astimezone(_dt.timezone.utc)).date()


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
        std, batch, dated = _database_prices(model, when)
        as_of = dated or _utc_day(when)
        diffs.extend(replace(d, as_of=as_of)
                     for d in _compare(entry, entry.pricing, model.id, std, batch))
    return SyncReport(tuple(diffs), tuple(matched), tuple(unmatched), db_version)


# --- writing ---------------------------------------------------------------------------


def _scalar(value: Decimal | bool) -> str:
    return str(value).lower() if isinstance(value, bool) else format(value.normalize(), "f")


def _child(node: yaml.Node, key: str) -> tuple[yaml.Node, yaml.Node] | None:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if getattr(k, "value", None) == key:
                return cast(yaml.Node, k), cast(yaml.Node, v)
    return None


@dataclass(frozen=True)
class Written:
    """What ``apply_diffs`` changed in the file."""

    changes: int  # differences written
    dated: tuple[str, ...]  # models whose ``as_of`` was set (all their differences written)


def apply_diffs(path: Path, diffs: list[PriceDiff]) -> Written:
    """Write the writable differences into the catalog file, and the ``as_of`` of each
    entry they bring up to date (see the module doc)."""
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
    pending: dict[str, int] = {}  # model -> its differences not written
    for diff in diffs:
        pending.setdefault(diff.model, 0)
        edit = _price_edit(pricing_nodes.get(diff.model), diff)
        if edit is None:
            pending[diff.model] += 1
            continue
        edits.append(edit)
        written += 1
    dated: list[str] = []
    for model, left in pending.items():
        node = pricing_nodes.get(model)
        day = next(d.as_of for d in diffs if d.model == model) or _utc_day(
            _dt.datetime.now(tz=_dt.timezone.utc))
        edit = _set_edit(node, "as_of", day.isoformat()) if node is not None else None
        if left == 0 and edit is not None:
            edits.append(edit)
            dated.append(model)
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    if written:
        _write_checked(path, text)
    return Written(written, tuple(dated))


def _price_edit(node: yaml.Node | None, diff: PriceDiff) -> tuple[int, int, str] | None:
    """The text edit that writes ``diff`` into its entry's pricing node, if it can be."""
    if not diff.writable or node is None or diff.database is None:
        return None
    target: yaml.Node = node
    field = diff.field
    if field.startswith("tiers["):
        index = int(field[6 : field.index("]")])
        field = field.split(".", 1)[1]
        tiers = _child(node, "tiers")
        if tiers is None or not isinstance(tiers[1], yaml.SequenceNode):
            return None
        target = tiers[1].value[index]
    return _set_edit(target, field, _scalar(diff.database))


def _set_edit(target: yaml.Node, field: str, value: str) -> tuple[int, int, str] | None:
    """Replace ``field``'s value in a mapping node, or add the key (first, in its style)."""
    existing = _child(target, field)
    if existing is not None:
        v = existing[1]
        return v.start_mark.index, v.end_mark.index, value
    if isinstance(target, yaml.MappingNode) and target.flow_style:
        at = target.start_mark.index + 1
        return at, at, f"{field}: {value}, "
    if isinstance(target, yaml.MappingNode) and target.value:
        first = target.value[0][0]
        at = first.start_mark.index
        indent = " " * first.start_mark.column
        return at, at, f"{field}: {value}\n{indent}"
    return None


def _write_checked(path: Path, text: str) -> None:
    """Validate the new text with the loader, then replace the file atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
        problems = check_file(tmp)[1]
        if problems:  # the original stays untouched
            raise CatalogInvalid(problems)
