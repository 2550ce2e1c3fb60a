"""The catalog's use cases (``tokcost models``): list, show, validate, sync prices,
import a Hugging Face model; and the one place a model argument is resolved.

Each returns a frozen result whose ``to_dict()`` is the command's ``--json`` document.

>>> [m.id for m in list_models(provider="openai").models][:2]
['gpt-4o', 'gpt-4o-2024-05-13']
>>> show_model("gpt-4o-2024-08-06").to_dict()["id"]
'gpt-4o'
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokcost.errors import UsageError

if TYPE_CHECKING:
    from tokcost.catalog import Catalog, Gpu, ModelEntry
    from tokcost.catalog.hf_model import HfModel
    from tokcost.catalog.sync import PriceDiff

__all__ = [
    "CatalogCheck",
    "GpuList",
    "ModelDetails",
    "ModelImport",
    "ModelList",
    "PriceSync",
    "import_model",
    "list_gpus",
    "list_models",
    "show_model",
    "sync_prices",
    "tokenizer_label",
    "validate_catalog",
    "weights_label",
]


@dataclass(frozen=True)
class ModelList:
    """The catalog's models (those of one provider when asked)."""

    models: tuple[ModelEntry, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"models": [m.to_dict() for m in self.models]}


@dataclass(frozen=True)
class GpuList:
    """The GPUs the catalog knows (kvmem's ``gpu=NAME``)."""

    gpus: tuple[Gpu, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"gpus": [g.to_dict() for g in self.gpus]}


@dataclass(frozen=True)
class ModelDetails:
    """Everything the catalog knows about one model."""

    entry: ModelEntry

    def to_dict(self) -> dict[str, Any]:
        return self.entry.to_dict()


@dataclass(frozen=True)
class CatalogCheck:
    """The problems of one catalog file, one line each (``file:line: model: field: ...``).

    ``models`` and ``gpus`` count the catalog the file makes (with the shipped one
    when it says ``extends: shipped``); they are 0 when the file has problems.
    """

    file: str
    problems: tuple[str, ...]
    models: int = 0
    gpus: int = 0

    @property
    def valid(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "valid": self.valid, "problems": list(self.problems)}


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
        return {
            "file": str(self.file),
            "database": f"genai-prices {self.database_version}",
            "matched": list(self.matched),
            "unmatched": list(self.unmatched),
            "differences": [d.to_dict() for d in self.differences],
            "written": self.written,
            "dated": list(self.dated),
        }


def list_models(
    *, provider: str | None = None, catalog: str | Path | Catalog | None = None
) -> ModelList:
    """The catalog's models, in file order; ``provider`` (any case) keeps one provider's."""
    from tokcost.tokenizers import open_catalog

    cat = open_catalog(catalog)
    # Provider names compare as model ids do: "OpenAI" is "openai".
    wanted = provider.strip().lower() if provider is not None else None
    entries = tuple(m for m in cat.models
                    if wanted is None or (m.provider or "").strip().lower() == wanted)
    if provider is not None and not entries:
        known = sorted({m.provider for m in cat.models if m.provider})
        raise UsageError(
            f"provider={provider!r} matches no model; known: {', '.join(known)}",
            param="provider",
        )
    return ModelList(entries)


def tokenizer_label(entry: ModelEntry, *, short: bool = False) -> str:
    """How ``models list`` (``short``) and ``models show`` name an entry's tokenizer.

    Placeholders never show: ``show`` gives the file itself (the package's folder
    expanded, ``sp:/.../mistral_common/data/tokenizer.model.v1``), ``list`` the
    package and the file's version (``mistral-common v1``). A tiktoken encoding is
    its real name (``o200k`` written in a catalog shows as ``o200k_base``); ``≈``
    marks a proxy.

    >>> from tokcost.catalog import load_catalog
    >>> cat = load_catalog()
    >>> [tokenizer_label(cat.resolve(m), short=True) for m in ("gpt-4o", "claude-sonnet-4-5")]
    ['o200k_base', '≈o200k_base']
    >>> tokenizer_label(cat.resolve("mistral-nemo"), short=True)
    'mistral-common tekken_240718'
    """
    from tokcost.adapters.registry import normalize_spec
    from tokcost.tokenizers import spec_label

    written = normalize_spec(entry.tokenizer_spec or "")
    if not written:
        return ""
    if short:
        package = _placeholder_package(written)
        label = (f"{package} {_file_version(written)}" if package is not None
                 else spec_label(written))
    else:
        label = _expanded(written, entry.id)
    return label if entry.tokenizer_exact else f"≈{label}"


def weights_label(entry: ModelEntry) -> str | None:
    """The entry's reference weights file as ``models show`` prints it (expanded)."""
    return _expanded(entry.weights_spec, entry.id) if entry.weights_spec else None


def _expanded(spec: str, model_id: str) -> str:
    """A spec with its package placeholders expanded; when the package is missing,
    the spec as written and the pip command that installs it."""
    from tokcost.catalog.schema import expand_package_paths
    from tokcost.errors import MissingDependency

    try:
        return expand_package_paths(spec, model_id) or spec
    except MissingDependency as exc:
        return f"{spec} (needs the '{exc.package}' package: pip install 'tokcost[{exc.extra}]')"


def _placeholder_package(spec: str) -> str | None:
    """The pip name of the package a ``{placeholder}`` in ``spec`` stands for."""
    from tokcost.catalog.schema import PACKAGE_PLACEHOLDERS

    for module, (dist, _extra) in PACKAGE_PLACEHOLDERS.items():
        if "{" + module + "}" in spec:
            return dist
    return None


def _file_version(spec: str) -> str:
    """``.../tokenizer.model.v7`` -> ``v7``; ``.../tekken_240718.json`` -> ``tekken_240718``."""
    import re

    name = spec.rsplit("/", 1)[-1]
    version = re.search(r"\.model\.(v\d+)$", name)
    return version.group(1) if version else name.split(".", 1)[0]


def list_gpus(*, catalog: str | Path | Catalog | None = None) -> GpuList:
    """The catalog's GPUs, in file order."""
    from tokcost.tokenizers import open_catalog

    return GpuList(open_catalog(catalog).gpus)


def show_model(model: str, *, catalog: str | Path | Catalog | None = None) -> ModelDetails:
    """The entry of a model id, alias or dated id (``gpt-4o-2024-08-06``)."""
    from tokcost.tokenizers import open_catalog

    return ModelDetails(open_catalog(catalog).resolve(model))


def validate_catalog(file: str | Path | None = None) -> CatalogCheck:
    """Every problem of a catalog file (default: the one in use), each ``file:line: ...``.

    Unlike loading, this reads the file afresh (no cache) and also reports keys
    written twice (YAML would silently keep the last), each tokenizer spec that
    ``tokenizers=SPEC`` would refuse (judged offline: known encodings and families,
    ``model:`` ids of the catalog; a path only for its form), and names that clash
    with the shipped catalog a file extends. A file that is not YAML, not UTF-8 or
    empty is a problem like any other; one that cannot be opened raises
    ``CatalogError`` (there is nothing to check).
    """
    from tokcost.adapters.registry import check_spec
    from tokcost.catalog import load_catalog, validate_file
    from tokcost.catalog.lookup import catalog_files
    from tokcost.errors import CatalogError

    path = str(file) if file is not None else str(catalog_files(None)[0])
    problems = tuple(str(p) for p in validate_file(path, check_tokenizer=check_spec))
    if problems:
        return CatalogCheck(path, problems)
    try:  # the catalog the file makes: with the shipped one when it extends it
        cat = load_catalog(path)
    except CatalogError as exc:  # pragma: no cover - validate_file checks what loading does
        return CatalogCheck(path, (str(exc),))
    return CatalogCheck(path, (), len(cat.models), len(cat.gpus))


def sync_prices(
    *, catalog: str | Path | None = None, write: bool = False, when: _dt.datetime | None = None
) -> PriceSync:
    """Compare the catalog's prices with genai-prices (``pip install 'tokcost[prices]'``).

    With ``write``, the differences that are plain values are written into the
    catalog file, in place (comments and layout kept), checked, then atomically
    replaced; a whole new tier is left to a hand edit. Each entry brought up to date
    gets a new ``as_of``: the database's start date for its prices, or the UTC day of
    ``when`` where the database has none. ``when`` dates the database prices
    (default: now). ``current`` on the result says whether there was nothing to change
    (what ``models sync-prices --check`` exits on).
    """
    from tokcost.catalog import load_catalog
    from tokcost.catalog.lookup import catalog_files
    from tokcost.catalog.sync import apply_diffs, compare_prices
    from tokcost.resources import shipped_path

    path = Path(catalog) if catalog is not None else catalog_files(None)[0]
    if write:
        from tokcost.atomic import ensure_writable

        ensure_writable(path)  # before the database is read and compared
    report = compare_prices(list(load_catalog(path).models), when=when)
    done = apply_diffs(path, list(report.diffs)) if write and report.diffs else None
    return PriceSync(
        file=path,
        database_version=report.database_version,
        matched=report.matched,
        unmatched=report.unmatched,
        differences=report.diffs,
        written=done.changes if done is not None else 0,
        write=write,
        shipped=path.resolve() == shipped_path("models.yaml").resolve(),
        dated=done.dated if done is not None else (),
    )


@dataclass(frozen=True)
class ModelImport:
    """A catalog entry made from a Hugging Face model (``tokcost models import``)."""

    entry: ModelEntry
    yaml: str  # a catalog document holding the entry
    config_file: str  # the config.json read
    origin: str  # its folder, the local Hugging Face cache, or the hub
    shards: int  # safetensors headers read (0: none found; the weights' size is unknown)
    header_bytes: int | None  # bytes read for them (None: read from the hub)
    notes: tuple[str, ...] = ()
    file: Path | None = None  # where the YAML was written, if asked

    def to_dict(self) -> dict[str, Any]:
        return {
            "entry": self.entry.to_dict(),
            "yaml": self.yaml,
            "config": self.config_file,
            "origin": self.origin,
            "shards": self.shards,
            "header_bytes": self.header_bytes,
            "notes": list(self.notes),
            "file": str(self.file) if self.file is not None else None,
        }


def load_model_source(source: str | Path, *, model_id: str | None = None) -> HfModel:
    """A Hugging Face model by ``hf:ORG/REPO`` (the local cache, else the hub), ``hf:PATH``,
    or a path: a config.json or a model folder (config.json + safetensors shards)."""
    from tokcost.catalog.hf_model import is_hf_spec, load_config, load_hf_model

    if isinstance(source, str) and is_hf_spec(source):
        return load_hf_model(source, model_id=model_id)
    return load_config(source, model_id=model_id)


def resolve_model(
    model: str | ModelEntry | None,
    *,
    config: str | Path | None = None,
    catalog: Catalog,
    needs_weights: bool = False,
) -> tuple[ModelEntry, HfModel | None]:
    """The entry a use case works on: a catalog id or alias, an entry, ``hf:ORG/REPO``,
    or the ``config`` (a config.json or model folder); and, for the latter two, what
    was read to make it. ``needs_weights``: the caller sizes the weights, which a
    config without safetensors headers cannot tell.
    """
    if config is not None and model is not None:
        raise UsageError("give model=ID or config=PATH, not both", param="config",
                         related=("model",))
    if config is None and model is None:
        raise UsageError("give model=ID (a catalog id or hf:ORG/REPO) or config=PATH (a "
                         "model's config.json or its folder)", param="model", related=("config",))
    # A catalog model imports nothing more: kvmem's start stays that of a catalog lookup.
    if config is None and not (isinstance(model, str) and _is_hf(model)):
        assert model is not None
        return (catalog.resolve(model) if isinstance(model, str) else model), None
    source: str | Path = config if config is not None else str(model)
    loaded = load_model_source(source)
    arch = loaded.entry.architecture
    if needs_weights and arch is not None and arch.params_total is None:
        raise UsageError(
            f"{loaded.config_file}: no safetensors headers beside it, so the weights' size is "
            "unknown; give the model folder with its shards, or kv_memory=SIZE without gpu "
            "and bandwidth",
            param="kv_memory", related=("gpu", "bandwidth"),
        )
    return loaded.entry, loaded


def _is_hf(model: str) -> bool:
    return model.strip().lower().startswith("hf:")  # tokcost.catalog.hf_model.HF_PREFIX


def import_model(
    source: str | Path,
    *,
    model_id: str | None = None,
    output: str | Path | None = None,
    force: bool = False,
) -> ModelImport:
    """A catalog entry for ``source`` (``hf:ORG/REPO``, a config.json or a model folder),
    as YAML that loads as a catalog (``catalog=FILE``) beside the shipped one.

    ``output`` writes the YAML there atomically; an existing file is replaced only with
    ``force``. The file is checked before anything is read.
    """
    from tokcost.catalog.entry_yaml import catalog_text

    target = Path(output).expanduser() if output is not None else None
    if target is not None:
        from tokcost.atomic import ensure_writable

        if target.exists() and not target.is_dir() and not force:
            raise UsageError(f"{target} exists; pass force=True to overwrite it", param="force")
        ensure_writable(target)
    loaded = load_model_source(source, model_id=model_id)
    entry, extends, fitted = _beside_shipped(loaded.entry)
    notes = (*loaded.notes, *fitted)
    header = [f"tokcost models import {source}"]
    if loaded.origin != str(Path(loaded.config_file).parent):  # the cache or the hub
        header.append(f"config: {loaded.config_file} ({loaded.origin})")
    header += notes
    text = catalog_text(entry, header=header, extends=extends)
    if target is not None:
        from tokcost.atomic import write_text_atomic

        write_text_atomic(target, text)
    return ModelImport(entry, text, loaded.config_file, loaded.origin, loaded.shards,
                       loaded.header_bytes, notes, target)


def _beside_shipped(entry: ModelEntry) -> tuple[ModelEntry, bool, tuple[str, ...]]:
    """``entry`` fitted to extend the shipped catalog: aliases another shipped model
    already has are left out; an id that names another shipped model (an alias or a
    dated id of it) makes the file stand alone instead."""
    import dataclasses

    from tokcost.catalog import Catalog, load_catalog
    from tokcost.errors import CatalogError
    from tokcost.resources import shipped_path

    shipped = load_catalog(shipped_path("models.yaml"))
    key = entry.id.lower()
    others = [m for m in shipped.models if m.id.lower() != key]
    taken = {n.lower(): m.id for m in others for n in (m.id, *m.aliases)}
    notes = [f"alias {a} left out: the shipped catalog's {taken[a.lower()]} has it"
             for a in entry.aliases if a.lower() in taken]
    entry = dataclasses.replace(
        entry, aliases=tuple(a for a in entry.aliases if a.lower() not in taken)
    )
    if len(others) < len(shipped.models):
        notes.append(f"loaded beside the shipped catalog, this entry replaces its {entry.id}")
    try:
        Catalog.build([*others, entry], shipped.gpus)
    except CatalogError:
        notes.append(f"the id {entry.id} names another model of the shipped catalog, so the "
                     "file stands alone (no extends: shipped); choose another model_id to "
                     "add it to the shipped models")
        return entry, False, tuple(notes)
    return entry, True, tuple(notes)
