"""The loaded catalog and its lookups, as tiktoken's: exact id, alias, then the longest prefix
(a dated id ``gpt-4o-2024-08-06``, or explicit ``prefixes``); a name claimed twice is an error.
And the one place a model argument (an id, ``hf:ORG/REPO`` or a config) is resolved."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, NamedTuple

from tokcost.catalog import rules
from tokcost.catalog.loader import Judge, Problem, check_file, read_file, shipped_path
from tokcost.catalog.rules import gpu_key
from tokcost.catalog.schema import Gpu, ModelEntry
from tokcost.errors import CatalogError, GpuNotFound, ModelNotFound, UsageError, arg, suggest

if TYPE_CHECKING:
    from tokcost.catalog.hf_model import HfModel

ENV_VAR = "TOKCOST_CATALOG"
# -2024-08-06, -20250514, @20240620, -2411, -latest, -v2:1
_DATED_SUFFIX = re.compile(r"^[-@](\d{4}-\d{2}-\d{2}|\d{8}|\d{4}|latest|v\d+(:\d+)?)$")


class _Index(NamedTuple):
    names: Mapping[str, ModelEntry]
    aliases: Mapping[str, ModelEntry]
    prefixes: tuple[tuple[str, bool, ModelEntry], ...]  # longest first
    gpus: Mapping[str, Gpu]


@dataclass(frozen=True)
class Catalog:
    """Models and GPUs from one or more catalog files, checked and indexed by ``build``."""

    models: tuple[ModelEntry, ...]
    gpus: tuple[Gpu, ...]
    files: tuple[Path, ...] = ()
    _index: _Index = field(default=None, repr=False, compare=False)  # type: ignore[assignment]

    @classmethod
    def build(cls, models: Iterable[ModelEntry], gpus: Iterable[Gpu], files: Iterable[Path] = ()
    ) -> Catalog:
        """Raises ``CatalogError`` on a name claimed twice; lends ``tokenizer: model:ID``."""
        models, gpus, files = tuple(models), tuple(gpus), tuple(files)
        entries = [rules.from_model(m) for m in models]
        targets, bad_refs = rules.tokenizer_targets(entries)
        clashes = [(f"model '{c.entry.id}': " if c.at != ("id",) else "", c)
                   for c in [*rules.name_clashes(entries), *bad_refs]]
        clashes += [(f"GPU '{c.entry.id}': " if c.at != ("name",) else "", c)
                    for c in rules.gpu_clashes([rules.from_gpu(g) for g in gpus])]
        if clashes:
            (who, first), more = clashes[0], len(clashes) - 1
            tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
            where = ", ".join(str(f) for f in files) or "the catalog"
            raise CatalogError(f"{where}: {who}{first.message}{tail}")
        lent = list(models)
        for i, t in targets.items():  # that entry's tokenizer, still a proxy if either says so
            lent[i] = dataclasses.replace(
                models[i], tokenizer_spec=models[t].tokenizer_spec,
                tokenizer_exact=models[i].tokenizer_exact and models[t].tokenizer_exact,
                tokenizer_note=models[i].tokenizer_note or models[t].tokenizer_note)
        models = tuple(lent)
        names = {m.id.lower(): m for m in models}
        aliases = {a.lower(): m for m in models for a in m.aliases if a.lower() not in names}
        # Dated ids extend the id only: an alias such as "mistral-large" names a family,
        # and "mistral-large-2407" is another version, not the aliased one.
        prefixes = [(p.lower(), True, m) for m in models for p in m.prefixes]
        prefixes += [(m.id.lower(), False, m) for m in models]
        prefixes.sort(key=lambda item: -len(item[0]))
        gpu_names = {gpu_key(n): g for g in gpus for n in (g.name, *g.aliases)}
        index = _Index(MappingProxyType(names), MappingProxyType(aliases), tuple(prefixes),
                       MappingProxyType(gpu_names))
        return cls(models, gpus, files, index)

    def __post_init__(self) -> None:
        if self._index is None:
            raise TypeError("make a Catalog with Catalog.build(models, gpus, files)")

    def find(self, model_id: str, *, database: bool = True) -> ModelEntry | None:
        """The entry for an id, alias or dated id; else (``database``) one made from
        genai-prices's model (its context window, a proxy tokenizer); else None."""
        key = model_id.strip().lower().removeprefix("model:")
        entry = self._index.names.get(key) or self._index.aliases.get(key)
        if entry is not None:
            return entry
        for prefix, explicit, candidate in self._index.prefixes:
            if key.startswith(prefix) and (explicit or _DATED_SUFFIX.match(key[len(prefix) :])):
                return candidate
        from tokcost.catalog.pricedb import database_entry
        return database_entry(key) if database else None

    def resolve(self, model_id: str, *, database: bool = True) -> ModelEntry:
        """``find``, or ModelNotFound with the names closest to ``model_id``."""
        found = self.find(model_id, database=database)
        if found is not None:
            return found
        key = model_id.strip().lower().removeprefix("model:")
        names = [m.id for m in self.models] + [a for m in self.models for a in m.aliases]
        hint = suggest(key, names) or suggest(key, [n.lower() for n in names])
        raise ModelNotFound(f"unknown model '{model_id}'{hint}; to add one, pass a models YAML "
                            f"as {arg('catalog', 'PATH')}", param="catalog")

    def resolve_gpu(self, name: str) -> Gpu:
        """A GPU by name or alias (as ``gpu_key`` compares), never by a prefix of several."""
        gpu = self._index.gpus.get(gpu_key(name))
        if gpu is not None:
            return gpu
        candidates = self.gpu_candidates(name)
        if len(candidates) > 1:
            raise GpuNotFound(
                f"GPU '{name}' is ambiguous: it matches {', '.join(g.name for g in candidates)}; "
                f"name one of them, e.g. {arg('gpu', candidates[0].name)}", param="gpu")
        names = [g.name for g in self.gpus]
        if candidates:  # one GPU begins so: the likely intent, but not its name
            hint = f" (did you mean: {candidates[0].name}?)"
        else:
            hint = suggest(name, names) or suggest(gpu_key(name), {gpu_key(n): n for n in names})
        raise GpuNotFound(f"unknown GPU '{name}'{hint}; name one the catalog lists, or give its "
                          f"memory as {arg('gpu_memory', 'SIZE')} (e.g. 80GiB)", param="gpu_memory")

    def gpu_candidates(self, name: str) -> tuple[Gpu, ...]:
        """The GPUs whose name or an alias begins with ``name`` (none for ``""``)."""
        key = gpu_key(name)
        return tuple(g for g in self.gpus if key and any(
            gpu_key(n).startswith(key) for n in (g.name, *g.aliases)))


def catalog_file(path: str | Path | None = None) -> Path:
    """The file a catalog is read from: ``path``, else ``$TOKCOST_CATALOG``, else shipped."""
    chosen = path if path is not None else os.environ.get(ENV_VAR) or None
    return shipped_path("models.yaml") if chosen is None else Path(chosen).expanduser()


def load_catalog(path: str | Path | None = None) -> Catalog:
    """The catalog of ``catalog_file(path)``, the shipped one under it if it ``extends`` it."""
    file = catalog_file(path)
    try:
        st = file.stat()
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)  # what makes a cached load stale
    except OSError:
        stamp = (-1, -1, -1)
    try:
        return _load_cached(str(file.resolve()), stamp)
    except FileNotFoundError as exc:
        missing = f"'{exc.filename or file}'"
        if path is not None:
            raise CatalogError(f"{arg('catalog', missing)} does not exist; give the path of a "
                               "models YAML file", param="catalog") from None
        raise CatalogError(f"{ENV_VAR}={missing} does not exist; fix or unset the variable"
                           ) from None


@lru_cache(maxsize=8)
def _load_cached(name: str, stamp: tuple[int, int, int]) -> Catalog:
    """Later files replace same-id models and same-name GPUs; ``stamp`` keys the cache."""
    user = read_file(Path(name))
    shipped = shipped_path("models.yaml").resolve()
    models: dict[str, ModelEntry] = {}
    gpus: dict[str, Gpu] = {}
    files = [read_file(shipped)] if user.extends and shipped != Path(name) else []
    for parsed in [*files, user]:
        for entry in parsed.models:
            models.pop(entry.id.lower(), None)  # re-inserted: the override keeps file order
            models[entry.id.lower()] = entry
        gpus.update((gpu_key(g.name), g) for g in parsed.gpus)
    return Catalog.build(models.values(), gpus.values(), [p.path for p in [*files, user]])


def validate_file(path: str | Path, *, judge: Judge | None = None) -> list[Problem]:
    """Every problem of one catalog file; ``judge`` (from ``tokcost.adapters``) judges specs."""
    target = Path(path)
    try:
        return check_file(target, whole=True, judge=judge)[1]
    except FileNotFoundError:
        raise CatalogError(f"'{target}' does not exist; give the path of a models YAML "
                           f"{arg('file')}", param="file") from None


def load_model_source(source: str | Path, *, model_id: str | None = None) -> HfModel:
    """``hf:ORG/REPO`` (the local cache, else the hub), ``hf:PATH``, a config.json or a folder."""
    from tokcost.catalog.hf_model import is_hf_spec, load_config, load_hf_model
    if isinstance(source, str) and is_hf_spec(source):
        return load_hf_model(source, model_id=model_id)
    return load_config(source, model_id=model_id)


def resolve_model(model: str | ModelEntry | None, *, config: str | Path | None = None,
    catalog: Catalog, needs_weights: bool = False) -> tuple[ModelEntry, HfModel | None]:
    """The entry a use case works on (a catalog id, an entry, ``hf:ORG/REPO`` or ``config``)
    and what was read to make it; ``needs_weights``: the weights' size must be known (from the
    safetensors headers, else from config.json: catalog/hf_params.py)."""
    if config is not None and model is not None:
        raise UsageError(f"give {arg('model', 'ID')} or {arg('config', 'PATH')}, not both",
                         param="config", related=("model",))
    if config is None and model is None:
        raise UsageError(f"give {arg('model', 'ID')} (a catalog id or hf:ORG/REPO) or "
                         f"{arg('config', 'PATH')} (a model's config.json or its folder)",
                         param="model", related=("config",))
    # hf_model.is_hf_spec without importing it: kvmem's start stays that of a catalog lookup.
    hf = isinstance(model, str) and model.strip().lower().startswith("hf:")
    if model is not None and not hf:
        return (catalog.resolve(model) if isinstance(model, str) else model), None
    loaded = load_model_source(config if config is not None else str(model))
    arch = loaded.entry.architecture
    if needs_weights and arch is not None and arch.params_total is None:
        # config_weights' reason: a family or quantization without a rule, or a config value
        # out of range (said with its field, not as a missing rule)
        why = (loaded.unsized or f"tokcost has no rule for the parameters of its model_type "
               f"({loaded.entry.family}) or quantization").removeprefix(loaded.config_file)
        why = why.lstrip(": ")  # the file is named once, first
        raise UsageError(
            f"{loaded.config_file}: no safetensors headers beside it, and {why}, so "
            f"the weights' size is unknown; give the model folder with its shards, or "
            f"{arg('kv_memory', 'SIZE')} without {arg('gpu')} and {arg('bandwidth')}",
            param="kv_memory", related=("gpu", "bandwidth"))
    return loaded.entry, loaded
