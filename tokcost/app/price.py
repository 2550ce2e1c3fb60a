"""``tokcost price``: what a request (or many identical ones) costs on one model or several,
with the catalog's prices, else genai-prices's (``tokcost.catalog.pricedb``)."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from tokcost.app import names
from tokcost.catalog import Catalog, CatalogSource, ModelEntry
from tokcost.catalog.pricedb import DbModel, PriceDb
from tokcost.errors import InputError, ModelNotFound, Note, UsageError, arg, suggest
from tokcost.pricing import (
    CostBreakdown,
    NoPrice,
    Usage,
    database_cost,
    estimate_cost,
    limit_warnings,
    require_price,
)
from tokcost.tokenizers import model_choice, open_catalog
from tokcost.units import parse_count

if TYPE_CHECKING:
    from tokcost.requestbody import BodyCount

__all__ = ["PriceRequest", "price"]

CACHE_TTLS = ("5m", "1h")
MAX_MODELS = 200  # rows one glob may give: past it, a pattern is too broad to read


@dataclass(frozen=True, kw_only=True)
class PriceRequest:
    """``requests`` identical requests of ``model`` (and ``models``: several, or globs such as
    ``claude-*``, side by side), the prompt given as ``input_tokens``, as ``paths`` (``-``:
    stdin) or as a whole ``request`` body (a JSON file, counted by the provider's rules:
    ``count --request``); counts as people write them (``"12k"``). ``provider`` picks genai-prices's
    provider, ``at`` a date of its price history (``2025-06-01``, UTC), ``cache_ttl`` the
    cache writes' lifetime (``5m``/``1h``), ``usage`` any other usage key of the database
    (``input_audio_tokens``: a part of the prompt)."""

    model: str = ""
    models: Sequence[str] = ()
    input_tokens: int | None = None
    paths: Sequence[str | Path] = ()
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    batch: bool = False
    requests: int = 1
    catalog: CatalogSource = None
    provider: str | None = None
    at: str | _dt.date | None = None
    cache_ttl: str | None = None
    usage: Mapping[str, int | str] = field(default_factory=dict)
    request: str | Path | None = None

    def __post_init__(self) -> None:
        wanted = tuple(m.strip() for m in (self.model, *names(self.models)) if m.strip())
        if not wanted and self.request is None:  # a request body may name its own model
            raise UsageError(f"price needs a model: {arg('model', 'ID')} (see `tokcost models "
                             "list`)", param="model")
        object.__setattr__(self, "models", tuple(dict.fromkeys(wanted)))
        for name in ("input_tokens", "output_tokens", "cached_tokens", "cache_write_tokens",
                     "reasoning_tokens", "requests"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, parse_count(value, param=name))
        if self.requests < 1:
            raise UsageError(f"{arg('requests')} must be a positive integer, got "
                             f"{self.requests}", param="requests")
        object.__setattr__(self, "paths", names(self.paths))
        given = [what for what, on in (("files", bool(self.paths)), (arg("input_tokens"),
                 self.input_tokens is not None), (arg("request"), self.request is not None)) if on]
        if len(given) > 1:
            raise UsageError(f"give the prompt as {given[0]} or as {given[1]}, not both",
                             param="input_tokens", related=("request",))
        if not given:
            raise UsageError(f"give the prompt: {arg('input_tokens', 'N')}, files / '-' for "
                             f"stdin, or {arg('request', 'FILE')}", param="input_tokens",
                             related=("request",))
        if self.cache_ttl is not None and self.cache_ttl not in CACHE_TTLS:
            raise UsageError(f"{arg('cache_ttl', self.cache_ttl)}: give 5m or 1h",
                             param="cache_ttl")
        object.__setattr__(self, "usage", {k: parse_count(v, param="usage")
                                           for k, v in dict(self.usage).items()})
        object.__setattr__(self, "at", _moment(self.at) if self.at is not None else None)

    @property
    def several(self) -> bool:
        """Several models or a glob: a comparison rather than one breakdown."""
        return len(self.models) > 1 or any(c in m for m in self.models for c in "*?[")


def _moment(value: str | _dt.date) -> _dt.datetime:
    """A date (00:00 UTC) or an ISO time (naive: UTC), as genai-prices reads timestamps."""
    try:
        when = value if isinstance(value, _dt.date) else (
            _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00")))
    except ValueError:
        raise UsageError(f"{arg('at', value)} is not a date; give one as 2025-06-01 (or "
                         "2025-06-01T17:00Z)", param="at") from None
    if not isinstance(when, _dt.datetime):
        when = _dt.datetime.combine(when, _dt.time())
    return when if when.tzinfo else when.replace(tzinfo=_dt.timezone.utc)


@dataclass(frozen=True)
class PriceResult:
    """A cost breakdown, how its prompt was counted, and the input and limit warnings;
    ``entry``/``database`` say where the figures come from."""

    breakdown: CostBreakdown
    exact: bool = True  # False: the prompt was counted with a proxy tokenizer
    input_counted_from_files: bool = False
    warnings: tuple[str, ...] = ()
    request: BodyCount | None = None  # the request body's parts (price --request)
    entry: ModelEntry | None = field(default=None, compare=False)
    database: DbModel | None = field(default=None, compare=False)  # None: the catalog's price
    prompt_tokens: int = 0  # of one request

    def to_dict(self) -> dict[str, Any]:
        return {**self.breakdown.to_dict(), "input_counted_from_files":
                self.input_counted_from_files, "exact": self.exact, "warnings": list(self.warnings),
                **({"request": self.request.to_dict()} if self.request else {})}

    @property
    def fits(self) -> bool | None:
        """One request's prompt fits the model's context window (None: unknown window)."""
        window = self.entry.context_window if self.entry else None
        return None if window is None else self.prompt_tokens <= window


@dataclass(frozen=True)
class PriceComparison:
    """One result per model, cheapest first (``price`` with several models or a glob); the
    cheapest is the first whose context window holds the prompt."""

    rows: tuple[PriceResult, ...]
    skipped: tuple[str, ...] = ()  # models a glob found that have no price for this request

    @property
    def cheapest(self) -> PriceResult | None:
        """The cheapest model whose window the prompt does not overflow."""
        return next((r for r in self.rows if r.fits is not False), None)

    def to_dict(self) -> list[dict[str, Any]]:
        return [{**r.to_dict(), "cheapest": r is self.cheapest, "provider": _provider(r),
                 "prices_from": f"genai-prices {r.database.version}" if r.database else "catalog",
                 "context_window": r.entry.context_window if r.entry else None,
                 "fits_context": r.fits} for r in self.rows]


def _provider(result: PriceResult) -> str | None:
    if result.database is not None:
        return result.database.provider
    return result.entry.provider if result.entry else None


def price(request: PriceRequest, *, stdin: BinaryIO | None = None
          ) -> PriceResult | PriceComparison:
    """Price ``request``: a ``PriceResult`` for one model, a ``PriceComparison`` for several
    or a glob; ``stdin`` stands for ``-`` in its paths (default: the process's)."""
    catalog = open_catalog(request.catalog)
    if "-" in (*request.paths, str(request.request)) and stdin is None:  # read once, by all
        import shutil
        import sys
        import tempfile
        with tempfile.SpooledTemporaryFile(max_size=1 << 24) as spool:
            shutil.copyfileobj(sys.stdin.buffer, spool)
            return _price(catalog, request, cast(BinaryIO, spool))
    return _price(catalog, request, stdin)


def _price(catalog: Catalog, request: PriceRequest, stdin: BinaryIO | None
           ) -> PriceResult | PriceComparison:
    if not request.models:  # price --request without -m: the body's own "model", as count's
        from tokcost.requestbody import load_body
        model = load_body(str(request.request), stdin=stdin).model
        if not model:
            raise UsageError(f"price needs a model: {arg('model', 'ID')} (the request body "
                             "names none; see `tokcost models list`)", param="model")
        request = replace(request, model=model)
    if not request.several:
        return _price_one(catalog, request.models[0], request, stdin, {})
    refs = _expand(catalog, request.models, request.provider)
    return _compare(catalog, refs, request, stdin)


def _compare(catalog: Catalog, refs: list[str | DbModel], request: PriceRequest,
             stdin: BinaryIO | None) -> PriceComparison:
    counted: dict[str, tuple[int, bool, tuple[str, ...]]] = {}
    rows: dict[tuple[str | None, str], PriceResult] = {}
    skipped: list[str] = []
    for ref in refs:
        try:
            row = _price_one(catalog, ref, request, stdin, counted)
        except NoPrice:  # a model a glob found (no batch price...): left out, and said so
            if isinstance(ref, str) and ref in request.models:
                raise
            skipped.append(ref if isinstance(ref, str) else ref.id)
            continue
        rows.setdefault((_provider(row), row.breakdown.model.lower()), row)
    if not rows:
        raise NoPrice(f"none of the {len(skipped)} models matched has a price for this request "
                      f"(e.g. '{skipped[0]}'); drop {arg('batch', True)} or widen the pattern",
                      param="batch")
    ordered = sorted(rows.values(), key=lambda r: (r.breakdown.total, r.breakdown.model))
    return PriceComparison(tuple(ordered), tuple(skipped))


def _expand(catalog: Catalog, patterns: Sequence[str], provider: str | None
            ) -> list[str | DbModel]:
    """Model references with globs matched against the catalog's priced ids and the models of
    genai-prices (of ``provider`` when given), each pattern's matches sorted; a database model
    the catalog knows is priced as the catalog's."""
    import fnmatch

    from tokcost.catalog import pricedb
    from tokcost.limits import glob_problem
    refs: list[str | DbModel] = []
    for pattern in patterns:
        if not any(c in pattern for c in "*?["):
            refs.append(pattern)
            continue
        problem = glob_problem(pattern)
        if problem:
            raise UsageError(f"{arg('model')}: {problem}", param="model")
        db = pricedb.load()
        chosen = db.provider(provider) if db is not None and provider else None
        glob = pattern.lower()
        found: dict[str, str | DbModel] = {m.id.lower(): m.id for m in catalog.models if
                                           m.pricing is not None and fnmatch.fnmatchcase(
                                               m.id.lower(), glob)}
        for m in db.models() if db is not None else ():
            if not fnmatch.fnmatchcase(m.id.lower(), glob) or m.id.lower() in found:
                continue
            if chosen is not None and m.provider != chosen["id"]:
                continue
            if chosen is None:  # one row per model: where genai-prices's matching sends it
                home = db.find(m.id) if db is not None else None
                if home is None or (home.provider, home.id) != (m.provider, m.id):
                    continue
            known = catalog.find(m.id, database=False)
            found[m.id.lower()] = m.id if known and known.pricing else m
        hits = sorted(found)
        if not hits:
            raise ModelNotFound(f"no model matches '{pattern}' in the catalog or genai-prices",
                                param="model")
        if len(hits) > MAX_MODELS:
            raise UsageError(f"'{pattern}' matches {len(hits):,} models; at most {MAX_MODELS} "
                             "side by side: narrow the pattern or name a provider", param="model")
        refs += [found[k] for k in hits]
    return list(dict.fromkeys(refs))


def _price_one(catalog: Catalog, ref: str | DbModel, r: PriceRequest, stdin: BinaryIO | None,
               counted: dict[str, tuple[int, bool, tuple[str, ...]]]) -> PriceResult:
    entry, db_model, db = _source(catalog, ref, r)
    if db_model is None:
        require_price(entry, batch=r.batch)  # before counting any file
    body: BodyCount | None = None
    if r.request is not None:  # a whole request body, by the provider's rules
        from tokcost.requestbody import count_body, load_body
        if stdin is not None and stdin.seekable():
            stdin.seek(0)
        body = count_body(load_body(str(r.request), stdin=stdin), entry,
                          model_choice(entry).load())
        prompt, exact, warnings = body.total, body.exact, body.notes
    else:
        prompt, exact, warnings = (r.input_tokens, True, ()) if r.input_tokens is not None else (
            _count_prompt(entry, r, stdin, counted))
    if db_model is not None and db is not None:
        usage = Usage(prompt, r.output_tokens, r.cached_tokens, r.cache_write_tokens,
                      r.reasoning_tokens, r.cache_ttl,
                      tuple((k, int(v)) for k, v in r.usage.items()))
        when = r.at if isinstance(r.at, _dt.datetime) else _dt.datetime.now(_dt.timezone.utc)
        breakdown = database_cost(db_model, db, usage, when=when, batch=r.batch,
                                  requests=r.requests)
        others = [p for p in db.serving(ref) if p != db_model.provider
                  ] if isinstance(ref, str) and not (r.provider or r.several) else []
        if others:
            breakdown = replace(breakdown, notes=(*breakdown.notes, Note(
                f"also priced for {', '.join(others[:5])}{' ...' if len(others) > 5 else ''}: "
                f"choose with {arg('provider')}")))
    else:  # the catalog's own price (_source sends --at, --usage, --cache-ttl to the database)
        breakdown = estimate_cost(
            entry, input_tokens=prompt, output_tokens=r.output_tokens,
            cached_tokens=r.cached_tokens, cache_write_tokens=r.cache_write_tokens,
            reasoning_tokens=r.reasoning_tokens, batch=r.batch, requests=r.requests)
    warnings += limit_warnings(entry, input_tokens=prompt, output_tokens=r.output_tokens,
                               reasoning_tokens=r.reasoning_tokens, exact=exact)
    return PriceResult(breakdown, exact, bool(r.paths), warnings, body, entry, db_model, prompt)


def _source(catalog: Catalog, ref: str | DbModel, r: PriceRequest
            ) -> tuple[ModelEntry, DbModel | None, PriceDb | None]:
    """The model's entry and, unless the catalog's own price serves, its genai-prices model:
    the catalog prices a model it prices, unless a provider or a date is asked for."""
    from tokcost.catalog import pricedb
    if not isinstance(ref, str):  # a database model a glob found
        return pricedb.database_entry(ref), ref, pricedb.load()  # type: ignore[return-value]
    try:  # with a provider, its own ids (anthropic.claude-... on aws) are the database's
        entry: ModelEntry | None = catalog.resolve(ref, database=not r.provider)
    except ModelNotFound:
        if not r.provider:
            raise
        entry = None
    extended = r.usage or r.cache_ttl
    if entry is not None and entry.pricing is not None and not (r.provider or r.at or extended):
        return entry, None, None
    db = pricedb.load()
    if db is None:
        if entry is None or entry.pricing is None:
            require_price(entry or catalog.resolve(ref))
        from tokcost.errors import MissingDependency
        raise MissingDependency("genai-prices", "prices",
                                f"{arg('provider')}, {arg('at')} and {arg('usage')}")
    # A catalog entry is looked up under its provider, as `models sync-prices` does.
    provider = r.provider or (entry.provider if entry and entry.provider and db.provider(
        entry.provider) else None)
    for name in dict.fromkeys([ref, *([entry.id, *entry.aliases] if entry else [])]):
        found = db.find(name, provider)
        if found is not None:
            return entry or pricedb.database_entry(found), found, db  # type: ignore[return-value]
    if r.provider:
        chosen = db.provider(r.provider)
        if chosen is None:
            raise UsageError(f"genai-prices has no provider '{r.provider}'"
                             f"{suggest(r.provider, [p['id'] for p in db.providers])}",
                             param="provider")
        near = [m["id"] for m in chosen["models"] if ref.lower() in m["id"].lower()][:3]
        serving = db.serving(ref)
        raise NoPrice(f"genai-prices has no '{ref}' on {chosen['id']}"
                      + (f" (did you mean: {', '.join(near)}?)" if near else "")
                      + (f"; it is priced on {', '.join(serving[:8])}" if serving else "")
                      + f"; choose another {arg('provider', 'NAME')}", param="provider")
    if entry is None or entry.pricing is None:
        require_price(entry or catalog.resolve(ref))
    raise NoPrice(f"genai-prices does not know '{ref}', so {arg('at')}, {arg('usage')} and "
                  f"{arg('cache_ttl')} cannot price it (the catalog has no price history or "
                  "units); drop them", param="at")


def _count_prompt(entry: ModelEntry, r: PriceRequest, stdin: BinaryIO | None,
                  counted: dict[str, tuple[int, bool, tuple[str, ...]]]
                  ) -> tuple[int, bool, tuple[str, ...]]:
    """The files' tokens by the model's tokenizer (once per tokenizer), exact or not, and
    the input policy's warnings."""
    from tokcost.counting import Inputs, count_paths
    if not entry.tokenizer:
        raise UsageError(f"model '{entry.id}' names no tokenizer in the catalog; "
                         f"pass {arg('input_tokens', 'N')}", param="input_tokens")
    choice = model_choice(entry)
    key = f"{choice.spec} {choice.exact}"
    if key in counted:
        return counted[key]
    tokenizer = choice.load()
    if stdin is not None and stdin.seekable():
        stdin.seek(0)
    report = count_paths(Inputs(paths=list(map(str, r.paths)), stdin=stdin),
                         {choice.spec: tokenizer})
    if not report.files and report.skipped:  # as count says it: the policy left them all out
        notes = "; ".join(s.note for s in report.skipped[:3])
        more = len(report.skipped) - 3
        raise InputError("nothing to count: every input was skipped (" + notes
                         + (f"; and {more} more" if more > 0 else "") + ")")
    if not report.files:
        raise UsageError(f"no text to count in {', '.join(map(str, r.paths))}; give text "
                         f"files, or {arg('input_tokens', 'N')}", param="input_tokens")
    counted[key] = report.total_tokens(choice.spec), tokenizer.exact, report.warnings
    return counted[key]
