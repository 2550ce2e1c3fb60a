"""The catalog's use cases (``tokcost models``), each returning a frozen result whose
``to_dict()`` is the command's ``--json``."""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokcost.catalog import Catalog, CatalogSource, Gpu, ModelEntry, load_catalog, validate_file
from tokcost.catalog.loader import shipped_path
from tokcost.catalog.lookup import catalog_file, load_model_source
from tokcost.errors import CatalogError, MissingDependency, UsageError, arg, install_hint
from tokcost.tokenizers import open_catalog

if TYPE_CHECKING:
    from tokcost.catalog.pricedb import DbModel, PriceDb
    from tokcost.catalog.sync import PriceDiff

__all__ = ["ImportModelRequest", "SyncPricesRequest", "import_model", "list_gpus", "list_models",
           "show_model", "sync_prices", "validate_catalog"]


@dataclass(frozen=True)
class ModelList:
    """The catalog's models (one provider's when asked) and their tokenizers' short labels;
    with ``sources``, also genai-prices's models, each with where its prices come from."""

    models: tuple[ModelEntry, ...]
    tokenizers: tuple[str, ...]
    sources: tuple[str, ...] = ()  # per model: "catalog" or "genai-prices VERSION ..."

    def to_dict(self) -> dict[str, Any]:
        rows = [m.to_dict() for m in self.models]
        for row, source in zip(rows, self.sources, strict=False):
            row["prices_from"] = source
        return {"models": rows}


@dataclass(frozen=True)
class GpuList:
    gpus: tuple[Gpu, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"gpus": [g.to_dict() for g in self.gpus]}


@dataclass(frozen=True)
class ModelDetails:
    """A model's entry; ``tokenizer`` and ``weights`` name the files (or the package to install);
    ``database``: genai-prices's prices for it today and the providers that serve it."""

    entry: ModelEntry
    tokenizer: str
    weights: str | None = None
    database: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {**self.entry.to_dict(), "genai_prices": self.database}


@dataclass(frozen=True)
class CatalogCheck:
    """A catalog file's problems; ``models``/``gpus`` count the catalog it makes when valid."""

    file: str
    problems: tuple[str, ...]
    models: int = 0
    gpus: int = 0

    @property
    def valid(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "valid": self.valid, "problems": list(self.problems)}


def list_models(*, provider: str | None = None, catalog: CatalogSource = None,
                everything: bool = False) -> ModelList:
    """The catalog's models, in file order; ``provider`` (any case) keeps one provider's;
    ``everything`` adds the models only genai-prices knows, as ``price`` would see them."""
    from tokcost.catalog import pricedb
    cat = open_catalog(catalog)
    wanted = provider.strip().lower() if provider is not None else None
    entries = [m for m in cat.models
               if wanted is None or (m.provider or "").strip().lower() == wanted]
    db = pricedb.load() if everything else None
    now = _dt.datetime.now(_dt.timezone.utc)
    # An entry without prices of its own is priced as `price` prices it: by genai-prices.
    sources = ["catalog" if m.pricing else "" if (f := _database_model(db, m)) is None else
               f"genai-prices {f.version}: {pricedb.summary(f, now)}"
               for m in entries] if everything else []
    for model in db.models() if db is not None else ():
        if (wanted is None or model.provider == wanted) and not cat.find(model.id,
                                                                         database=False):
            entries.append(pricedb.database_entry(model))  # type: ignore[arg-type]
            sources.append(f"genai-prices {model.version}: {pricedb.summary(model, now)}")
    if provider is not None and not entries:
        known = sorted({m.provider for m in cat.models if m.provider})
        raise UsageError(f"{arg('provider', repr(provider))} matches no model; known: "
                         f"{', '.join(known)}", param="provider")
    return ModelList(tuple(entries), tuple(_tokenizer_label(m, short=True) for m in entries),
                     tuple(sources))


def list_gpus(*, catalog: CatalogSource = None) -> GpuList:
    return GpuList(open_catalog(catalog).gpus)


def show_model(model: str, *, catalog: CatalogSource = None) -> ModelDetails:
    from tokcost.catalog import pricedb
    entry = open_catalog(catalog).resolve(model)
    weights = _expanded(entry.weights_spec, entry.id) if entry.weights_spec else None
    db = pricedb.load()
    found = _database_model(db, entry, model)
    database = {
        "version": found.version, "provider": found.provider, "model": found.id,
        "prices": pricedb.summary(found, _dt.datetime.now(_dt.timezone.utc)),
        "providers": db.serving(found.id) if db else [], "source": found.pricing_url,
        } if found else None
    return ModelDetails(entry, _tokenizer_label(entry), weights, database)


def _database_model(db: PriceDb | None, entry: ModelEntry, *refs: str) -> DbModel | None:
    """genai-prices's model for a catalog entry (the reference asked, its id, its aliases),
    under the entry's provider where the database has it, as `price` looks it up."""
    if db is None:
        return None
    provider = entry.provider if entry.provider and db.provider(entry.provider) else None
    return next((f for ref in (*refs, entry.id, *entry.aliases)
                 if (f := db.find(ref, provider))), None)


def _tokenizer_label(entry: ModelEntry, *, short: bool = False) -> str:
    """An entry's tokenizer as ``models show`` names it (the file, package folder expanded)
    or ``models list`` (``short``: the package and the file's version; ``≈``: a proxy)."""
    from tokcost.adapters.registry import normalize_spec
    from tokcost.catalog.schema import PACKAGE_PLACEHOLDERS
    from tokcost.units import spec_label
    written = normalize_spec(entry.tokenizer_spec or "")
    if not written:
        return ""
    label = _expanded(written, entry.id)
    package = next((dist for module, (dist, _) in PACKAGE_PLACEHOLDERS.items()
                    if "{" + module + "}" in written), None)
    if short:
        # .../tokenizer.model.v7 -> v7; .../tekken_240718.json -> tekken_240718
        name = written.rsplit("/", 1)[-1]
        version = re.search(r"\.model\.(v\d+)$", name)
        label = (f"{package} {version.group(1) if version else name.split('.', 1)[0]}"
                 if package is not None else spec_label(written))
    return label if entry.tokenizer_exact else f"≈{label}"


def _expanded(spec: str, model_id: str) -> str:
    """A spec, placeholders expanded, else as written with the pip command it needs."""
    from tokcost.catalog.schema import expand_package_paths
    try:
        return expand_package_paths(spec, model_id) or spec
    except MissingDependency as exc:
        return f"{spec} (needs the '{exc.package}' package: {install_hint(exc.extra)})"


def validate_catalog(file: str | Path | None = None) -> CatalogCheck:
    """Every problem of a catalog file (default: the one in use), read afresh."""
    from tokcost.adapters.registry import check_spec
    path = str(file if file is not None else catalog_file())
    problems = tuple(str(p) for p in validate_file(path, judge=check_spec))
    if problems:
        return CatalogCheck(path, problems)
    cat = load_catalog(path)  # the catalog the file makes: with the shipped one if it extends
    return CatalogCheck(path, (), len(cat.models), len(cat.gpus))


@dataclass(frozen=True, kw_only=True)
class SyncPricesRequest:
    """``catalog``'s prices against genai-prices as of ``when``; ``write`` the differences."""

    catalog: str | Path | None = None
    write: bool = False
    when: _dt.datetime | None = None


@dataclass(frozen=True)
class PriceSync:
    """Catalog prices against the genai-prices database, and what was written."""

    file: Path
    database_version: str
    matched: tuple[str, ...]  # catalog ids found in the database
    unmatched: tuple[str, ...]  # priced catalog ids the database does not know
    differences: tuple[PriceDiff, ...]
    written: int  # differences written into ``file``
    write: bool  # was writing asked for?
    shipped: bool  # is ``file`` the catalog shipped with tokcost?
    dated: tuple[str, ...] = ()  # models whose ``as_of`` the write set

    @property
    def current(self) -> bool:
        """Does the catalog (as read, before any write) agree with the database?"""
        return not self.differences

    def to_dict(self) -> dict[str, Any]:
        return {"file": str(self.file), "database": f"genai-prices {self.database_version}",
                "matched": list(self.matched), "unmatched": list(self.unmatched),
                "differences": [d.to_dict() for d in self.differences],
                "written": self.written, "dated": list(self.dated)}


def sync_prices(request: SyncPricesRequest) -> PriceSync:
    """Compare the catalog's prices with genai-prices; ``write`` them in place (docs/models.md)."""
    from tokcost.atomic import ensure_writable
    from tokcost.catalog.sync import apply_diffs, compare_prices
    path = catalog_file(request.catalog)
    if request.write:
        ensure_writable(path)  # before the database is read and compared
    report = compare_prices(list(load_catalog(path).models), when=request.when)
    written, dated = (apply_diffs(path, list(report.diffs)) if request.write and report.diffs
                      else (0, ()))
    return PriceSync(path, report.database_version, report.matched, report.unmatched,
                     report.diffs, written, request.write,
                     path.resolve() == shipped_path("models.yaml").resolve(), dated)


@dataclass(frozen=True, kw_only=True)
class ImportModelRequest:
    """A catalog entry for ``source`` (``hf:ORG/REPO``, a config.json or a model folder),
    written to ``output`` when given (an existing file only with ``force``)."""

    source: str | Path
    model_id: str | None = None
    output: Path | None = None
    force: bool = False

    def __post_init__(self) -> None:
        if not str(self.source).strip():
            raise UsageError(f"{arg('source')} is empty; give hf:ORG/REPO, a model folder or "
                             "a config.json", param="source")
        if self.output is not None:
            object.__setattr__(self, "output", Path(self.output).expanduser())


@dataclass(frozen=True)
class ModelImport:
    entry: ModelEntry
    yaml: str  # a catalog document holding the entry
    config_file: str  # the config.json read
    origin: str  # its folder, the local Hugging Face cache, or the hub
    shards: int  # safetensors headers read (0: none found; the weights' size is unknown)
    header_bytes: int | None  # bytes read for them (None: read from the hub)
    notes: tuple[str, ...] = ()
    file: Path | None = None  # where the YAML was written, if asked

    def to_dict(self) -> dict[str, Any]:
        return {"entry": self.entry.to_dict(), "yaml": self.yaml, "config": self.config_file,
                "origin": self.origin, "shards": self.shards, "header_bytes": self.header_bytes,
                "notes": list(self.notes), "file": str(self.file) if self.file else None}


def import_model(request: ImportModelRequest) -> ModelImport:
    """The entry as catalog YAML beside the shipped one, written atomically to ``output``."""
    from tokcost.atomic import ensure_writable, write_text_atomic
    from tokcost.catalog.entry_yaml import catalog_text
    target = request.output
    if target is not None:
        if target.exists() and not target.is_dir() and not request.force:
            raise UsageError(f"{target} exists; pass {arg('force', True)} to overwrite it",
                             param="force")
        ensure_writable(target)
    loaded = load_model_source(request.source, model_id=request.model_id)
    # Fitted to extend the shipped catalog: without the aliases other shipped models have,
    # standing alone when its id names another.
    shipped = load_catalog(shipped_path("models.yaml"))
    entry = loaded.entry
    others = [m for m in shipped.models if m.id.lower() != entry.id.lower()]
    taken = {n.lower(): m.id for m in others for n in (m.id, *m.aliases)}
    notes = [*loaded.notes, *(f"alias {a} left out: the shipped catalog's {taken[a.lower()]} has it"
                              for a in entry.aliases if a.lower() in taken)]
    entry = replace(entry, aliases=tuple(a for a in entry.aliases if a.lower() not in taken))
    if len(others) < len(shipped.models):
        notes.append(f"loaded beside the shipped catalog, this entry replaces its {entry.id}")
    try:
        Catalog.build([*others, entry], shipped.gpus)
        extends = True
    except CatalogError:
        notes.append(f"the id {entry.id} names another model of the shipped catalog, so the "
                     "file stands alone (no extends: shipped); choose another model_id to "
                     "add it to the shipped models")
        extends = False
    header = [f"tokcost models import {request.source}"]
    if loaded.origin != str(Path(loaded.config_file).parent):  # the cache or the hub
        header.append(f"config: {loaded.config_file} ({loaded.origin})")
    text = catalog_text(entry, header=[*header, *notes], extends=extends,
                        weights_from="the safetensors headers" if loaded.shards else "config.json")
    if target is not None:
        write_text_atomic(target, text)
    return ModelImport(entry, text, loaded.config_file, loaded.origin, loaded.shards,
                       loaded.header_bytes, tuple(notes), target)
