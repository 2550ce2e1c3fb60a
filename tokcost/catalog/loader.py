"""Read models.yaml into checked, frozen objects (``schema``), every problem as ``file:line:
model 'id': field: expected``; a file validated once comes back from ``cache``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokcost.catalog import cache, rules, yamltext
from tokcost.catalog.schema import Gpu, ModelEntry
from tokcost.catalog.yamltext import PathKey, dotted
from tokcost.errors import CatalogError, TokcostError

Judge = Callable[[str], object]  # judges a tokenizer spec: raises a TokcostError to refuse it
EMPTY = "the file is empty; a catalog needs a 'models:' list of entries"
SHIPPED_ORIGIN = "the shipped catalog"


def shipped_path(name: str) -> Path:
    """A shipped data file or folder (``models.yaml``, ``corpora``): inside the wheel
    (force-included into ``tokcost/``), or at the top of a checkout or editable install."""
    package = Path(__file__).resolve().parents[1]
    return package / name if (package / name).exists() else package.parent / name


@dataclass(frozen=True)
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
        more = len(problems) - 1
        tail = (f" (and {more} more problem{'s' if more > 1 else ''}; "
                f"run: tokcost models validate {problems[0].file})" if more else "")
        super().__init__(str(problems[0]) + tail)
        self.problems = problems


@dataclass(frozen=True)
class ParsedFile:
    path: Path
    models: tuple[ModelEntry, ...]
    gpus: tuple[Gpu, ...]
    extends: bool


def read_file(path: Path) -> ParsedFile:
    """One catalog file, checked, or from the cache when these bytes validated before."""
    data = _read_bytes(path)
    hit = cache.load(path, data)
    if hit is not None:
        return ParsedFile(path, *hit)
    parsed, problems = check_file(path, raw=data)
    if parsed is None:
        raise CatalogInvalid(problems)
    cache.store(path, data, (parsed.models, parsed.gpus, parsed.extends))
    return parsed


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise
    except IsADirectoryError:
        raise CatalogError(f"'{path}' is a folder; give the path of a models YAML file") from None
    except OSError as exc:
        raise CatalogError(f"cannot read catalog file '{path}': {exc}") from None


def check_file(path: Path, *, whole: bool = False, judge: Judge | None = None,
               raw: bytes | None = None) -> tuple[ParsedFile | None, list[Problem]]:
    """Everything wrong with one catalog file (its bytes: ``raw``), without the cache; ``whole``
    (``models validate``) adds the checks of docs/models.md, tokenizer specs by ``judge``."""
    from tokcost.catalog.document import CatalogDocument  # pydantic: only when validating
    from tokcost.catalog.validation import check
    name, raw = str(path), _read_bytes(path) if raw is None else raw
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        at = raw[: exc.start].count(b"\n") + 1
        return None, [Problem(name, (), None, "", f"not UTF-8 text (byte 0x{raw[exc.start]:02x} "
                              f"at offset {exc.start}); save the file as UTF-8", at)]
    try:
        data = yamltext.load(text)
    except yamltext.SyntaxProblem as exc:
        return None, [Problem(name, (), None, "", str(exc), exc.line)]
    if data is None:  # nothing but blanks and comments
        return None, [Problem(name, (), None, "", EMPTY)]
    nodes = functools.cache(functools.partial(yamltext.load, text, nodes=True))  # on first need

    def line(loc: PathKey) -> int | None:
        return yamltext.line_of(nodes(), loc)

    def problem(loc: PathKey, message: str) -> Problem:
        try:
            model = data["models"][loc[1]]["id"] if loc[0] == "models" else None
        except (LookupError, TypeError):  # not a models entry, or not one written as a mapping
            model = None
        model = model if isinstance(model, str) else None
        # Inside a model the id already says which entry: show "pricing.tiers[0].input".
        shown = loc[2:] if model is not None else loc
        return Problem(name, loc, model, dotted(shown), message, line(loc))

    doc, issues = check(CatalogDocument, data)
    problems = [problem(i.loc, i.message) for i in issues]
    flagged = {i.loc for i in issues}
    for clash in _rules(path, data, line, whole, judge) if isinstance(data, dict) else ():
        loc = (*(clash.entry.loc or ()), *clash.at)
        if clash.entry.loc is not None and loc not in flagged:  # one problem per place
            problems.append(problem(loc, clash.message))
    if whole:
        problems.extend(_duplicate_keys(name, nodes()))
    if problems or doc is None:
        problems.sort(key=lambda p: p.line or 0)  # file order, as an editor shows them
        return None, problems
    return ParsedFile(path, tuple(m.build() for m in doc.models),
                      tuple(g.build() for g in doc.gpus), doc.extends == "shipped"), []


def _rules(path: Path, data: dict[Any, Any], line: rules.Line, whole: bool,
           judge: Judge | None) -> list[rules.Clash]:
    """The rules across entries, on the data as written (``whole``: with the shipped ones)."""
    models = rules.from_data(data.get("models"), "models", "id")
    gpus = rules.from_data(data.get("gpus"), "gpus", "name")
    shipped = shipped_path("models.yaml")
    if whole and data.get("extends") == "shipped" and path.resolve() != shipped.resolve():
        base = read_file(shipped)
        ids = {e.id.strip().lower() for e in models if e.id}
        gpu_names = {rules.gpu_key(e.id) for e in gpus if e.id}
        models = [*(rules.from_model(m, origin=SHIPPED_ORIGIN) for m in base.models
                    if m.id.strip().lower() not in ids), *models]
        gpus = [*(rules.from_gpu(g, origin=SHIPPED_ORIGIN) for g in base.gpus
                  if rules.gpu_key(g.name) not in gpu_names), *gpus]
    clashes = [*rules.name_clashes(models, line), *rules.gpu_clashes(gpus, line)]
    if whole:
        clashes.extend(rules.tokenizer_targets(models, line)[1])
        for entry in models:
            spec = (entry.tokenizer or "").strip()
            if judge is None or entry.loc is None or not spec or spec.startswith(rules.MODEL_REF):
                continue  # a model: reference is judged above, against the entries
            try:
                judge(spec)
            except TokcostError as exc:
                clashes.append(rules.Clash(entry, ("tokenizer",), str(exc)))
    return clashes


def _duplicate_keys(name: str, node: Any, model: str | None = None) -> list[Problem]:
    """Keys written twice in one mapping (YAML keeps the last one silently)."""
    import yaml
    found: list[Problem] = []
    children = node.value if isinstance(node, yaml.SequenceNode) else []
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            key_name = str(getattr(key, "value", ""))
            if key_name == "id" and isinstance(value, yaml.ScalarNode):
                model = str(value.value)
            if key_name in seen:
                found.append(Problem(name, (), model, key_name, "key written twice in one mapping; "
                                     "YAML would keep only the last", key.start_mark.line + 1))
            seen.add(key_name)
        children = [value for _, value in node.value]
    return found + [p for child in children for p in _duplicate_keys(name, child, model)]
