"""Rules across a catalog's entries (a name claimed twice, a tokenizer naming a model), asked
by both file checks and ``Catalog.build``, so they never disagree."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tokcost.catalog.yamltext import PathKey
from tokcost.errors import suggest

if TYPE_CHECKING:
    from tokcost.catalog.schema import Gpu, ModelEntry

MODEL_REF = "model:"  # a tokenizer spec naming another entry: use that one's tokenizer

Line = Callable[[PathKey], "int | None"]
Claim = tuple["Entry", PathKey, str]  # who claimed a name first, where, and as written


@dataclass(frozen=True)
class Entry:
    """What a model entry (or GPU) claims, each name with its path below it; ``loc`` is the
    entry's in the file checked, None for one from elsewhere (``origin`` names it)."""

    id: str | None
    aliases: tuple[tuple[str, PathKey], ...] = ()
    prefixes: tuple[tuple[str, PathKey], ...] = ()
    tokenizer: str | None = None
    loc: PathKey | None = None
    origin: str = ""


@dataclass(frozen=True)
class Clash:
    """One broken rule: the entry to fix, the path below it, and what is wrong."""

    entry: Entry
    at: PathKey
    message: str


def from_model(model: ModelEntry, *, origin: str = "") -> Entry:
    return Entry(model.id, _names(model.aliases, "aliases"), _names(model.prefixes, "prefixes"),
                 model.tokenizer_spec, None, origin)


def from_gpu(gpu: Gpu, *, origin: str = "") -> Entry:
    return Entry(gpu.name, _names(gpu.aliases, "aliases"), origin=origin)


def from_data(items: Any, section: str, key: str) -> list[Entry]:
    """A section's entries as written: a value of the wrong type claims nothing."""
    entries = []
    for index, item in enumerate(items if isinstance(items, list) else ()):
        if isinstance(item, dict):
            name, tokenizer = item.get(key), item.get("tokenizer")
            entries.append(Entry(
                name if isinstance(name, str) and name.strip() else None,
                _names(item.get("aliases"), "aliases"),
                _names(item.get("prefixes"), "prefixes") if section == "models" else (),
                tokenizer if isinstance(tokenizer, str) else None, (section, index)))
    return entries


def _names(value: Any, key: str) -> tuple[tuple[str, PathKey], ...]:
    if isinstance(value, str):  # one string stands for a list of one
        return ((value, (key,)),)
    if isinstance(value, (list, tuple)):
        return tuple((v, (key, i)) for i, v in enumerate(value) if isinstance(v, str))
    return ()


def name_clashes(entries: Sequence[Entry], line: Line | None = None) -> list[Clash]:
    """Every model id, alias or prefix two entries claim, ignoring case: entries from
    elsewhere claim first, then ids before aliases, as ``Catalog.build`` indexes."""
    out: list[Clash] = []
    names: dict[str, Claim] = {}
    prefixes: dict[str, Claim] = {}
    for group in _groups(entries):
        ids = [(e, ("id",), e.id, "id") for e in group if e.id is not None]
        aliases = [(e, at, a, "alias") for e in group for a, at in e.aliases]
        for entry, at, name, what in [*ids, *aliases]:
            first = names.setdefault(name.strip().lower(), (entry, at, name))
            if first[0] is entry:
                continue  # the first claim, or an entry naming itself twice: no lookup misled
            other, other_at = first[0], first[1]
            if what == "id" and other_at == ("id",):
                same = _first(first, name, line, "case is ignored")
                message = f"duplicate model id '{name}'{same}; ids must be unique"
            else:
                role = "the id" if other_at == ("id",) else "an alias"
                message = f"{what} '{name}' is already {role} of '{other.id}'{_where(first, line)}"
            out.append(Clash(entry, at, message))
        for entry in group:
            for prefix, at in entry.prefixes:
                first = prefixes.setdefault(prefix.strip().lower(), (entry, at, prefix))
                if first[0] is not entry:
                    out.append(Clash(entry, at, f"prefix '{prefix}' is already claimed by "
                                                f"'{first[0].id}'{_where(first, line)}"))
    return out


def gpu_clashes(entries: Sequence[Entry], line: Line | None = None) -> list[Clash]:
    """Every GPU name or alias claimed twice, compared as ``resolve_gpu`` compares."""
    out: list[Clash] = []
    names: dict[str, Claim] = {}
    for group in _groups(entries):
        for entry in group:
            for name, at in ((entry.id, ("name",)), *entry.aliases):
                if name is None:
                    continue
                first = names.setdefault(gpu_key(name), (entry, at, name))
                if first[0] is not entry:
                    same = _first(first, name, line, "case, spaces and dashes are ignored")
                    out.append(Clash(entry, at, f"duplicate GPU name '{name}'{same}; GPU names "
                                                "must be unique"))
    return out


def gpu_key(name: str) -> str:
    """What GPU lookup compares: ``H100-80GB``, ``h100 80gb`` and ``H100_80GB`` are one."""
    return "".join(ch for ch in name.lower() if ch.isalnum())


def tokenizer_targets(entries: Sequence[Entry], line: Line | None = None
                      ) -> tuple[dict[int, int], list[Clash]]:
    """Where each ``tokenizer: model:ID`` leads (entry index -> index with the spec), and a
    clash for each that names no entry, ends without a tokenizer or goes round."""
    index: dict[str, int] = {}
    for i, entry in enumerate(entries):
        for name in (entry.id, *(a for a, _ in entry.aliases)):
            if name is not None:
                index.setdefault(name.strip().lower(), i)
    targets: dict[int, int] = {}
    clashes: list[Clash] = []
    for start, entry in enumerate(entries):
        if not (entry.tokenizer or "").strip().startswith(MODEL_REF):
            continue
        spec, seen, problem = str(entry.tokenizer).strip(), [start], ""
        while not problem and (entries[seen[-1]].tokenizer or "").strip().startswith(MODEL_REF):
            ref = str(entries[seen[-1]].tokenizer).strip()[len(MODEL_REF):].strip()
            nxt = index.get(ref.lower())
            if nxt is None:
                known = [n for e in entries for n in (e.id, *(a for a, _ in e.aliases)) if n]
                problem = (f"'{spec}' names no model of the catalog"
                           f"{suggest(ref, known)}; name one by its id or an alias")
            elif nxt in seen:
                chain = " -> ".join(str(entries[i].id) for i in [*seen, nxt])
                problem = (f"'{spec}' goes round in a circle ({chain}); "
                           "let one of them name a tokenizer spec")
            else:
                seen.append(nxt)
        end = entries[seen[-1]]
        if not problem and end.tokenizer is None:
            problem = (f"'{spec}' leads to model '{end.id}'"
                       f"{_where((end, ('id',), ''), line)}, which names no tokenizer")
        if problem:
            clashes.append(Clash(entry, ("tokenizer",), problem))
        else:
            targets[start] = seen[-1]
    return targets, clashes


def _groups(entries: Sequence[Entry]) -> Iterable[list[Entry]]:
    """Entries from elsewhere first, then the file's own, each group in file order."""
    yield [e for e in entries if e.loc is None]
    yield [e for e in entries if e.loc is not None]


def _first(first: Claim, name: str, line: Line | None, rule: str) -> str:
    """`` (first at line 2)``, or `` ('a' at line 2; case is ignored)`` when written differently."""
    entry, at, written = first
    number = line((*entry.loc, *at)) if entry.loc is not None and line else None
    place = f"at line {number}" if number else (f"in {entry.origin}" if entry.origin else "")
    if written == name:
        return f" (first {place})" if place else ""
    return f" ('{written}'{' ' + place if place else ''}; {rule})"


def _where(first: Claim, line: Line | None) -> str:
    entry, at = first[0], first[1]
    if entry.loc is None:
        return f" in {entry.origin}" if entry.origin else ""
    number = line((*entry.loc, *at)) if line else None
    return f" (line {number})" if number else ""
