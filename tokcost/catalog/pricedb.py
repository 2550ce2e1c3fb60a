"""The genai-prices database offline: its bundled data (never its auto-update from the net),
read once per installed version into a checksummed cache entry of plain values
(``tokcost.cachefile``), then matched with the database's own rules, standard library only.

Importing ``genai_prices`` costs ~0.35-0.95 s of CPU, more than all of ``tokcost price``: the
data is converted once (``_build``) and later runs unpickle plain tuples (~20 ms).
The matching below restates pydantic/genai-prices 0.2.3 ``types.py`` (the ``Clause*`` classes,
``Provider.find_model``, ``_normalize_compact_dated_ref``) and ``data_snapshot.py``
(``find_provider``, ``find_provider_by_id``); tests compare it with the package itself."""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import importlib.util
import io
import pickle
import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from tokcost import cachefile
from tokcost.catalog.schema import ModelEntry

_FORMAT = "pricedb-v2"
# A clause: ("starts_with"|"ends_with"|"contains"|"equals"|"regex", text) or ("or"|"and", clauses)
Clause = tuple[Any, ...]
# A price: Decimal, or ("tiers", base, ((start, price), ...)): past ``start`` input tokens of the
# whole request the tier's price applies to every unit (TieredPrices' docstring).
Price = Any
# A constraint: None, ("date", date) or ("time", start, end) in UTC seconds of the day.
Constraint = tuple[Any, ...] | None


@dataclass(frozen=True, eq=False)  # compared by identity: one object per model and lookup
class DbModel:
    """One model of one provider: its prices as the database dates them."""

    provider: str  # the provider the price is billed by (``--provider``)
    provider_name: str
    id: str
    name: str | None
    context_window: int | None
    prices: tuple[tuple[Constraint, dict[str, Price]], ...]  # tried last to first
    variants: tuple[tuple[dict[str, str], Constraint, dict[str, Price]], ...]
    own: bool  # False: found through the provider's fallback providers (variants then unused)
    pricing_url: str | None
    version: str  # of genai-prices

    def prices_at(self, when: _dt.datetime, context: dict[str, str] | None = None
                  ) -> dict[str, Price]:
        """The price keys in force at ``when`` (``ModelInfo.get_prices``): the last active
        conditional price, else the first; then variants whose ``when`` matches ``context``,
        first to last per key; a model borrowed from a fallback provider takes none."""
        standard = self.prices[0][1]
        for constraint, prices in reversed(self.prices):
            if active(constraint, when):
                standard = prices
                break
        overrides: dict[str, Price] = {}
        ctx = context or {}
        for wanted, constraint, prices in self.variants if ctx and self.own else ():
            if active(constraint, when) and wanted.items() <= ctx.items():
                for key, price in prices.items():
                    overrides.setdefault(key, price)
        return {**standard, **overrides}

    def has_variant(self, key: str, value: str, when: _dt.datetime | None = None) -> bool:
        """A variant for ``key=value`` (in force at ``when``) that ``prices_at`` would apply."""
        return self.own and any(w.get(key) == value and (when is None or active(c, when))
                                for w, c, _ in self.variants)


def active(constraint: Constraint, when: _dt.datetime) -> bool:
    """``StartDateConstraint.active`` / ``TimeOfDateConstraint.active``: UTC, naive is UTC."""
    if constraint is None:
        return True
    utc = when.replace(tzinfo=_dt.timezone.utc) if when.tzinfo is None else when.astimezone(
        _dt.timezone.utc)
    if constraint[0] == "date":
        return bool(utc.date() >= constraint[1])
    now = utc.hour * 3600 + utc.minute * 60 + utc.second + utc.microsecond / 1e6
    start, end = float(constraint[1]), float(constraint[2])
    return (now >= start or now < end) if end < start else start <= now < end


def matches(clause: Clause, text: str) -> bool:
    """The ``Clause*.is_match`` rules on a lower-case ``text`` (as ``ModelInfo.is_match``
    passes it), each value stored lower-case but a regex's (``_clause``)."""
    kind, value = clause
    if kind == "starts_with":
        return text.startswith(value)
    if kind == "equals":
        return bool(text == value)
    if kind == "contains":
        return value in text
    if kind == "ends_with":
        return text.endswith(value)
    if kind == "or":
        return any(matches(c, text) for c in value)
    if kind == "and":
        return all(matches(c, text) for c in value)
    return re.search(value, text) is not None  # regex


_COMPACT_DATE = re.compile(r"(-)(20\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?=-|:|$)")


def _dashed_date(ref: str) -> str:
    """``gpt-5.2-20251211`` -> ``gpt-5.2-2025-12-11`` (a real date only)."""
    def one(m: re.Match[str]) -> str:
        try:
            _dt.date(int(m[2]), int(m[3]), int(m[4]))
        except ValueError:
            return m[0]
        return f"{m[1]}{m[2]}-{m[3]}-{m[4]}"
    return _COMPACT_DATE.sub(one, ref)


@dataclass(frozen=True)
class PriceDb:
    """The database as plain values: providers in the package's order."""

    version: str
    providers: tuple[dict[str, Any], ...]
    units: dict[str, tuple[str, int, dict[str, str]]]  # usage key -> (price key, per, dims)

    def provider(self, name: str) -> dict[str, Any] | None:
        """By id, then by the providers' ``provider_match`` (``find_provider_by_id``)."""
        key = name.lower().strip()
        return next((p for p in self.providers if p["id"] == key), None) or next(
            (p for p in self.providers if p["provider_match"] is not None
             and matches(p["provider_match"], key)), None)

    def find(self, ref: str, provider: str | None = None) -> DbModel | None:
        """``ref`` as ``calc_price(..., provider_id=provider)`` finds it; without a provider,
        in the first whose ``model_match`` claims the ref; where the package gives up there,
        in the first provider that serves it."""
        ref = ref.strip().lower()
        if provider is not None:
            chosen = self.provider(provider)
            return self._in(chosen, ref) if chosen is not None else None
        claimed = next((p for p in self.providers if p["model_match"] is not None
                        and matches(p["model_match"], ref)), None)
        found = self._in(claimed, ref) if claimed is not None else None
        return found or next(
            (m for p in self.providers if (m := self._in(p, ref, borrow=False))), None)

    def serving(self, ref: str) -> list[str]:
        """Every provider whose own models match ``ref``."""
        return [p["id"] for p in self.providers if self._in(p, ref.lower(), borrow=False)]

    def _in(self, provider: dict[str, Any], ref: str, *, borrow: bool = True) -> DbModel | None:
        found = self._match(provider, ref, borrow)
        dashed = _dashed_date(ref)
        if found is None and dashed != ref:
            found = self._match(provider, dashed, borrow)
        return found

    def _match(self, provider: dict[str, Any], ref: str, borrow: bool) -> DbModel | None:
        for model in provider["models"]:
            if matches(model["match"], ref):
                return self._model(provider, model, own=True)
        for other in provider["fallback"] if borrow else ():  # one step, as the package
            lender = next((p for p in self.providers if p["id"] == other), None)
            if lender is not None and (model := next(
                    (m for m in lender["models"] if matches(m["match"], ref)), None)):
                return self._model(provider, model, own=False)
        return None

    def _model(self, provider: dict[str, Any], model: dict[str, Any], *, own: bool) -> DbModel:
        urls = provider["pricing_urls"]
        return DbModel(provider["id"], provider["name"], model["id"], model["name"],
                       model["context_window"], model["prices"], model["variants"], own,
                       urls[0] if urls else None, self.version)

    def models(self) -> Iterator[DbModel]:
        for provider in self.providers:
            for model in provider["models"]:
                yield self._model(provider, model, own=True)


def _package() -> tuple[str, Path] | None:
    """genai-prices's version and data file, found without importing it."""
    spec = importlib.util.find_spec("genai_prices")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent
    infos = sorted(folder.parent.glob("genai_prices-*.dist-info"))
    version = infos[-1].name[len("genai_prices-"):-len(".dist-info")] if infos else "unknown"
    return version, folder / "data.py"


class _Unpickler(pickle.Unpickler):
    """A cache entry is data: plain containers, Decimal and date, nothing else."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in {("decimal", "Decimal"), ("datetime", "date")}:
            raise pickle.UnpicklingError(f"{module}.{name} is not a price value")
        return super().find_class(module, name)


@functools.cache
def load() -> PriceDb | None:
    """The installed database (None: genai-prices is not installed), cached per version and
    data file; a damaged entry is rebuilt (``cachefile`` checks it)."""
    found = _package()
    if found is None:
        return None
    version, data = found
    try:
        st = data.stat()
    except OSError:
        return None
    key = hashlib.sha256(f"{_FORMAT} {version} {st.st_size} {st.st_mtime_ns} {data}".encode())
    entry = cachefile.cache_dir() / f"{key.hexdigest()[:32]}.{_FORMAT}"
    payload = cachefile.read(entry)
    if payload is not None:
        try:
            providers, units = _Unpickler(io.BytesIO(payload)).load()
            return PriceDb(version, providers, units)
        except Exception:  # an entry this code did not write: build it again
            pass
    providers, units = _build()
    cachefile.write(entry, pickle.dumps((providers, units), pickle.HIGHEST_PROTOCOL))
    return PriceDb(version, providers, units)


def _build() -> tuple[tuple[dict[str, Any], ...], dict[str, tuple[str, int, dict[str, str]]]]:
    """Plain values from the package's bundled data (``genai_prices.data``, never
    ``UpdatePrices``: no network)."""
    from genai_prices.data import providers
    from genai_prices.data_units import unit_data

    units = {k: (v["price_key"], int(v["per"]), dict(v["dimensions"])) for k, v in
             unit_data.items()}
    return tuple({
        "id": p.id, "name": p.name, "pricing_urls": tuple(p.pricing_urls or ()),
        "model_match": _clause(p.model_match), "provider_match": _clause(p.provider_match),
        "fallback": tuple(p.fallback_model_providers or ()),
        "models": tuple({
            "id": m.id, "name": m.name, "match": _clause(m.match),
            "context_window": m.context_window,
            "prices": tuple((_constraint(c.constraint), _prices(c.prices)) for c in m.prices)
            if isinstance(m.prices, list) else ((None, _prices(m.prices)),),
            "variants": tuple((dict(v.when), _constraint(v.constraint), _prices(v.prices))
                              for v in m.price_variants or ())} for m in p.models)}
        for p in providers), units


def _clause(clause: Any) -> Clause | None:
    if clause is None:
        return None
    for kind in ("or_", "and_"):
        if hasattr(clause, kind):
            return kind[:-1], tuple(_clause(c) for c in getattr(clause, kind))
    (kind, value), = vars(clause).items()
    return kind, value if kind == "regex" else value.lower()


def _constraint(constraint: Any) -> Constraint:
    if constraint is None:
        return None
    if hasattr(constraint, "start_date"):
        return "date", constraint.start_date

    def seconds(t: _dt.time) -> int:  # a naive time is UTC
        utc = _dt.datetime.combine(_dt.date(1970, 1, 1), t, t.tzinfo or _dt.timezone.utc)
        u = utc.astimezone(_dt.timezone.utc)
        return u.hour * 3600 + u.minute * 60 + u.second
    return "time", seconds(constraint.start_time), seconds(constraint.end_time)


def _prices(model_price: Any) -> dict[str, Price]:
    """Set keys in the object's order (the order ``ModelPrice.calc_price`` sums them)."""
    out: dict[str, Price] = {}
    for key, value in vars(model_price).items():
        if key.startswith("_") or value is None:
            continue
        out[key] = value if isinstance(value, Decimal) else (
            "tiers", value.base, tuple((int(t.start), t.price) for t in value.tiers))
    return out


PROXY_TOKENIZER = "tiktoken:o200k_base"


def database_entry(ref: str | DbModel) -> ModelEntry | None:
    """A catalog entry for a model only genai-prices knows: its id, provider and context
    window, and a proxy tokenizer (counts marked approximate); its prices stay there."""
    db = load() if isinstance(ref, str) else None
    model = (db.find(ref) if db is not None else None) if isinstance(ref, str) else ref
    if model is None:
        return None
    return ModelEntry(
        id=model.id, provider=model.provider, context_window=model.context_window,
        tokenizer_spec=PROXY_TOKENIZER, tokenizer_exact=False,
        tokenizer_note=f"genai-prices does not name this model's tokenizer; "
                       f"{PROXY_TOKENIZER} counts as a proxy",
        source=f"genai-prices {model.version}",
        notes=f"known only to genai-prices {model.version} ({model.provider_name}): prices and "
              "context window from the database, tokenizer a proxy")


def summary(model: DbModel, when: _dt.datetime) -> str:
    """The prices in force at ``when`` as one line: ``input $3/M, output $15/M (+tiers)``."""
    names = {"input_mtok": "input", "output_mtok": "output", "cache_read_mtok": "cached input",
             "cache_write_mtok": "cache write", "cache_write_1h_mtok": "cache write 1h"}
    parts = []
    for key, price in model.prices_at(when).items():
        base, tiers = (price[1], " (+tiers)") if isinstance(price, tuple) else (price, "")
        stem, _, unit = key.rpartition("_")
        per = {"mtok": "/M", "kcount": " per 1k", "kpages": " per 1k pages", "hours": " per hour",
               "mchars": " per M chars", "gpixels": " per G pixels"}.get(unit, f" per {unit}")
        label = names.get(key, stem.replace("_", " "))
        parts.append(f"{label} ${base.normalize():f}{per}{tiers}")
    return ", ".join(parts)
