"""Compare catalog prices with genai-prices (an optional extra) and write the differences in
place, comments and layout kept, checked, atomic, dated by ``as_of`` (docs/models.md)."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple, cast

import yaml

from tokcost.atomic import atomic_path
from tokcost.catalog import yamltext
from tokcost.catalog.loader import CatalogInvalid, check_file
from tokcost.catalog.schema import ModelEntry, Pricing
from tokcost.catalog.yamltext import child
from tokcost.errors import CatalogError, MissingDependency

PROVIDERS = frozenset({"openai", "anthropic", "google", "mistral", "deepseek"})  # same ids there
# genai-prices price field -> catalog pricing field
FIELDS = {"input_mtok": "input", "cache_read_mtok": "cached_input",
          "cache_write_mtok": "cache_write", "output_mtok": "output"}
Edit = tuple[int, int, str]  # (start, end, replacement) in the YAML text


@dataclass(frozen=True)
class PriceDiff:
    """One field where the catalog and the database disagree."""

    model: str
    field: str  # e.g. "input", "batch_discount", "tiers[0].output"
    catalog: Decimal | bool | None
    database: Decimal | bool | None
    database_model: str
    writable: bool = True  # False: needs a hand edit (e.g. a whole new tier)
    as_of: _dt.date | None = None  # the date writing gives the entry

    def to_dict(self) -> dict[str, Any]:
        return {**vars(self), "catalog": _text(self.catalog), "database": _text(self.database),
                "as_of": self.as_of.isoformat() if self.as_of is not None else None}

    def describe(self) -> str:
        """The difference as one line: model, field, the catalog's value, the database's."""
        if not self.writable:
            return f"{self.model}: {self.field}: not in the catalog (add by hand)"
        return (f"{self.model}: {self.field}: catalog {_text(self.catalog) or 'unset'}, "
                f"genai-prices {_text(self.database) or 'unset'}")


def _text(value: Decimal | bool | None) -> str | None:
    if value is None:
        return None
    return str(value).lower() if isinstance(value, bool) else str(value)


class SyncReport(NamedTuple):
    diffs: tuple[PriceDiff, ...]
    matched: tuple[str, ...]  # catalog ids found in the database
    unmatched: tuple[str, ...]  # priced catalog ids the database does not know
    database_version: str


def _flatten(value: Any) -> tuple[Decimal | None, dict[int, Decimal]]:
    """A genai-prices price (Decimal or TieredPrices) -> (base, {threshold: price})."""
    if value is None or isinstance(value, Decimal):
        return value, {}
    return cast(Decimal, value.base), {int(t.start): cast(Decimal, t.price) for t in value.tiers}


def _compare(entry: ModelEntry, pricing: Pricing, db_id: str, std: dict[str, Any],
             batch: dict[str, Any]) -> list[PriceDiff]:
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
        diffs.extend(PriceDiff(entry.id, f"tiers[{index}].{name}", getattr(tier, name), price,
                               db_id) for name, price in prices.items()
                     if getattr(tier, name) != price)
    # Batch: the discount is 1 - batch input / standard input.
    b_input, s_input = _flatten(batch.get("input_mtok"))[0], _flatten(std["input_mtok"])[0]
    if b_input is not None and s_input:
        discount = (Decimal(1) - b_input / s_input).normalize()
        if pricing.batch_discount is None or pricing.batch_discount.normalize() != discount:
            diffs.append(PriceDiff(entry.id, "batch_discount", pricing.batch_discount,
                                   discount, db_id))
        b_cache = _flatten(batch.get("cache_read_mtok"))[0]
        s_cache = _flatten(std["cache_read_mtok"])[0]
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
    try:
        from importlib.metadata import version

        from genai_prices.data import providers
    except ImportError:
        raise MissingDependency("genai-prices", "prices", "models sync-prices") from None
    by_id = {p.id: p for p in providers}
    when = when or _dt.datetime.now(tz=_dt.timezone.utc)
    diffs: list[PriceDiff] = []
    matched: list[str] = []
    unmatched: list[str] = []
    for entry in entries:
        if entry.pricing is None:
            continue
        # Provider names ignore case, as everywhere in tokcost ("OpenAI" is "openai").
        name = (entry.provider or "").strip().lower()
        provider = by_id.get(name) if name in PROVIDERS else None
        model = None
        if provider is not None:
            refs = (entry.id, *entry.aliases)
            found = (provider.find_model(ref, all_providers=providers) for ref in refs)
            model = next((m for m in found if m is not None), None)
        if model is None:
            unmatched.append(entry.id)
            continue
        matched.append(entry.id)
        std = {k: getattr(model.get_prices(when), k, None) for k in FIELDS}
        constraints: list[Any] = [None]  # of the price get_prices picks (tried last to first)
        if isinstance(model.prices, list):
            constraints = [next((c.constraint for c in reversed(model.prices)
                                 if c.constraint is None or c.constraint.active(when)), None)]
        batch: dict[str, Any] = {}
        for variant in model.price_variants or ():
            if variant.when == {"processing": "batch"} and (
                    variant.constraint is None or variant.constraint.active(when)):
                batch = {k: getattr(variant.prices, k, None) for k in FIELDS}
                constraints.append(variant.constraint)
        # A start-date constraint dates a price; none, or a time-of-day window, does not.
        dates = [d for c in constraints
                 if isinstance(d := getattr(c, "start_date", None), _dt.date)]
        diffs.extend(replace(d, as_of=max(dates, default=None) or _utc_day(when))
                     for d in _compare(entry, entry.pricing, model.id, std, batch))
    return SyncReport(tuple(diffs), tuple(matched), tuple(unmatched), version("genai-prices"))


def apply_diffs(path: Path, diffs: list[PriceDiff]) -> tuple[int, tuple[str, ...]]:
    """Write the writable differences and the ``as_of`` of each entry they complete."""
    text = path.read_text(encoding="utf-8")
    root = yamltext.load(text, nodes=True)
    models = child(root, "models") if root is not None else None
    if models is None or not isinstance(models[1], yaml.SequenceNode):
        raise CatalogError(f"{path}: no models list to write prices into")
    pricing_nodes: dict[str, yaml.Node] = {}
    for item in models[1].value:
        found, pricing = child(item, "id"), child(item, "pricing")
        if found is not None and pricing is not None:
            pricing_nodes[str(found[1].value)] = pricing[1]
    edits: list[Edit] = []
    pending: dict[str, int] = {}  # model -> its differences not written
    for diff in diffs:
        edit = _price_edit(pricing_nodes.get(diff.model), diff)
        pending[diff.model] = pending.get(diff.model, 0) + (edit is None)
        if edit is not None:
            edits.append(edit)
    written = len(edits)
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
        with atomic_path(path) as tmp:  # checked by the loader: the original stays if not
            tmp.write_text(text, encoding="utf-8")
            problems = check_file(tmp)[1]
            if problems:
                raise CatalogInvalid(problems)
    return written, tuple(dated)


def _price_edit(node: yaml.Node | None, diff: PriceDiff) -> Edit | None:
    """The text edit that writes ``diff`` into its entry's pricing node, if it can be."""
    if not diff.writable or node is None or diff.database is None:
        return None
    field = diff.field
    if field.startswith("tiers["):
        tiers = child(node, "tiers")
        if tiers is None or not isinstance(tiers[1], yaml.SequenceNode):
            return None
        node = tiers[1].value[int(field[6 : field.index("]")])]
        field = field.split(".", 1)[1]
    value = diff.database
    text = str(value).lower() if isinstance(value, bool) else format(value.normalize(), "f")
    return _set_edit(node, field, text)


def _set_edit(target: yaml.Node, field: str, value: str) -> Edit | None:
    """Replace ``field``'s value in a mapping node, or add the key (first, in its style)."""
    existing = child(target, field)
    if existing is not None:
        return existing[1].start_mark.index, existing[1].end_mark.index, value
    if isinstance(target, yaml.MappingNode) and target.flow_style:
        at = target.start_mark.index + 1
        return at, at, f"{field}: {value}, "
    if isinstance(target, yaml.MappingNode) and target.value:
        first = target.value[0][0]
        at = first.start_mark.index
        return at, at, f"{field}: {value}\n{' ' * first.start_mark.column}"
    return None
