"""Budget configuration: ``tokcost.yaml`` or ``[tool.tokcost]`` in ``pyproject.toml``
(docs/check.md); every problem names the file, line and key, the first raised with a count."""

from __future__ import annotations

import bisect
import contextlib
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, Field, PrivateAttr, model_validator

from tokcost.catalog import validation, yamltext
from tokcost.catalog.validation import Invalid, Issue, Strict, check
from tokcost.catalog.yamltext import PathKey, dotted
from tokcost.errors import TokcostError, UsageError, arg, suggest
from tokcost.limits import glob_problem, loads_toml

CONFIG_NAMES = ("tokcost.yaml", "tokcost.yml", ".tokcost.yaml")
DEFAULT_BASELINE = ".tokcost-baseline.json"
CONFIG_VERSION = 1
# A budget must set at least one of these (the context-window check is implicit).
LIMIT_KEYS = ("max_tokens_per_file", "max_total_tokens", "max_cost_per_call",
              "max_growth_percent", "max_file_growth_percent", "max_context_percent")

Name = Annotated[str, validation.text(strip=True)]
def _bounded(globs: tuple[str, ...]) -> tuple[str, ...]:
    for glob in globs:
        if (problem := glob_problem(glob)) is not None:
            raise Invalid(problem)
    return globs


Globs = Annotated[tuple[str, ...], validation.strings("a glob or a list of globs", nonempty=True,
                                                      strip=True), AfterValidator(_bounded)]
Tokens = Annotated[int, validation.count(what="a whole number >= 1")]
Reserve = Annotated[int, validation.count(0, what="a whole number >= 0")]
Percent = Annotated[float, validation.PERCENT]
_TOKENS = "tokens, e.g. 2000 or 10k"


class BudgetConfigError(UsageError):
    """The budget config is missing or malformed (exit code 2)."""


class Budget(Strict):
    """One budget: which files, counted how, and the limits they must keep.

    ``combine`` means the matched files are sent together as one prompt, so the
    cost per call and the context-window share apply to their sum.
    """

    missing: ClassVar[Mapping[str, str]] = {
        "name": "missing key 'name'; give every budget a unique name",
        "paths": "missing key 'paths'; list the globs of the files to check"}
    name: Name = Field(description="unique name of the budget")
    paths: Globs = Field(description="gitignore-style globs, relative to the config's folder")
    exclude: Globs = Field((), description="globs of files to leave out")
    model: Name | None = Field(None, description="catalog model (default: the config's)")
    tokenizer: Name | None = Field(None, description="tokenizer spec (default: the model's)")
    max_tokens_per_file: Tokens | None = Field(None, description=_TOKENS)
    max_total_tokens: Tokens | None = Field(None, description=_TOKENS)
    max_cost_per_call: Annotated[Decimal, validation.usd("per call")] | None = Field(
        None, description="USD, each file (or, with combine, all of them) as one call's prompt")
    output_tokens: Reserve = Field(0, description="output tokens priced with each call")
    cached_share: Annotated[Decimal, validation.SHARE] = Field(
        Decimal(0), description="share of the prompt read from the cache (0.5 or 50%)")
    max_growth_percent: Percent | None = Field(
        None, description="growth of the total against the baseline")
    max_file_growth_percent: Percent | None = Field(
        None, description="growth of each file against the baseline")
    max_context_percent: Percent | None = Field(
        None, description="share of the model's context window")
    reserve_output_tokens: Reserve | None = Field(
        None, description="output tokens kept free in the context window (default: output_tokens)")
    combine: Annotated[bool, validation.FLAG] = Field(
        False, description="the files are sent together as one prompt")
    _line: int | None = PrivateAttr(None)

    @property
    def line(self) -> int | None:
        """Where the budget starts in its config file."""
        return self._line

    @property
    def reserve(self) -> int:
        """Output tokens kept free in the context window (default: ``output_tokens``)."""
        own = self.reserve_output_tokens
        return self.output_tokens if own is None else own

    @model_validator(mode="after")
    def _a_limit(self) -> Budget:
        if all(getattr(self, key) is None for key in LIMIT_KEYS):
            raise Invalid(f"sets no limit; add one of {', '.join(LIMIT_KEYS)}")
        return self


class ConfigDocument(Strict):
    """A budget config (tokcost.yaml, or [tool.tokcost] in pyproject.toml)."""

    missing: ClassVar[Mapping[str, str]] = {
        "budgets": "expected a non-empty list under 'budgets', got None"}
    version: Annotated[int, validation.choice((CONFIG_VERSION,),
                                              f"config version {CONFIG_VERSION}")] = CONFIG_VERSION
    model: Name | None = Field(None, description="default catalog model of the budgets")
    tokenizer: Name | None = Field(None, description="default tokenizer spec")
    catalog: Name | None = Field(None, description="models YAML, relative to this file")
    baseline: Name | None = Field(
        None, description=f"baseline JSON, relative to this file (default {DEFAULT_BASELINE})")
    budgets: Annotated[tuple[Budget, ...], validation.listed(
        "a non-empty list under 'budgets'", nonempty=True)] = Field(
        json_schema_extra={"minItems": 1})

    @model_validator(mode="after")
    def _unique_names(self) -> ConfigDocument:
        first: dict[str, int] = {}
        twice = [(("budgets", i, "name"), f"duplicate budget name (also budgets["
                  f"{first[b.name]}]); names must be unique")
                 for i, b in enumerate(self.budgets) if first.setdefault(b.name, i) != i]
        if twice:
            raise Invalid(twice[0][1], twice[0][0], *twice[1:])
        return self


@dataclass(frozen=True)
class BudgetConfig:
    """A loaded config: its file, the folder globs are relative to, and the budgets."""

    path: Path
    root: Path
    budgets: tuple[Budget, ...]
    model: str | None = None
    tokenizer: str | None = None
    catalog: Path | None = None
    baseline: Path = field(default_factory=lambda: Path(DEFAULT_BASELINE))
    display: str = ""  # the config path as shown in reports
    shadowed: tuple[Path, ...] = ()  # other configs in the same folder, not used

    def where(self, budget: Budget | None = None) -> str:
        """``tokcost.yaml:12`` for a budget, ``tokcost.yaml`` for the file."""
        name = self.display or str(self.path)
        return f"{name}:{budget.line}" if budget is not None and budget.line else name


def work_tree_root(start: Path | None = None) -> Path | None:
    """The nearest folder at or above ``start`` (default: cwd) with a ``.git``, or None."""
    here = Path(os.path.abspath(start or Path.cwd()))
    return next((f for f in (here, *here.parents) if (f / ".git").exists()), None)


def configs_in(folder: Path) -> tuple[Path, tuple[Path, ...]] | None:
    """The config used in ``folder`` and the others there it shadows; None without one."""
    found = [folder / name for name in CONFIG_NAMES if (folder / name).is_file()]
    pyproject = folder / "pyproject.toml"
    if pyproject.is_file() and _has_tool_table(pyproject):
        found.append(pyproject)
    return (found[0], tuple(found[1:])) if found else None


def _has_tool_table(pyproject: Path) -> bool:
    try:
        text = pyproject.read_text(encoding="utf-8")
        data = _load_toml(text, str(pyproject))
    except (OSError, UnicodeDecodeError):
        return False
    except BudgetConfigError:
        # Broken TOML that mentions tokcost is meant as one (load_config reports its line).
        return "tokcost" in text
    return isinstance(data.get("tool"), dict) and "tokcost" in data["tool"]


def discover_config(directory: Path | None = None) -> tuple[Path, tuple[Path, ...]]:
    """The config that applies in ``directory`` and the ones it shadows: the first found
    walking up to the git work tree's root (outside one, ``directory`` only)."""
    here = Path(os.path.abspath(directory or Path.cwd()))
    top = work_tree_root(here)
    folders = [here, *(f for f in here.parents if top is not None and top in (f, *f.parents))]
    for found in map(configs_in, folders):
        if found:
            return found
    where = f"{here} or a folder above it up to {top}" if top not in (None, here) else here
    raise BudgetConfigError(f"no tokcost.yaml (or [tool.tokcost] in pyproject.toml) in {where}; "
                            f"create one (see README: tokcost check) or pass "
                            f"{arg('config', 'PATH')}", param="config")


def find_configs(directory: Path | None = None) -> list[tuple[Path, tuple[Path, ...]]]:
    """Every config at or below ``directory``, one per folder, ``.gitignore``d ones left out."""
    from tokcost.counting import walk
    here = Path(os.path.abspath(directory or Path.cwd()))
    names = [*CONFIG_NAMES, "pyproject.toml"]
    folders = {Path(s.path).parent for s in walk([str(here)], include=names)}
    ordered = sorted(folders, key=lambda f: f.relative_to(here).parts)
    return [found for found in map(configs_in, ordered) if found is not None]


def shadow_notice(config: BudgetConfig) -> str | None:
    """The warning for a folder with two configs, saying which one is used."""
    if not config.shadowed:
        return None
    shown = display_path(config.root)
    folder = "this folder" if shown == "." else shown.rstrip("/") + "/"
    labels = ["[tool.tokcost] in pyproject.toml" if p.suffix == ".toml" else p.name
              for p in (config.path, *config.shadowed)]
    return (f"both {' and '.join(labels)} in {folder}; using {config.path.name}, the other is "
            "ignored; remove one")


def _at(issue: Issue) -> PathKey:
    # A missing key is shown at its mapping: "budgets[0] 'a': missing key 'paths'".
    return issue.loc[:-1] if issue.missing else issue.loc


def load_config(path: str | Path | None = None) -> BudgetConfig:
    """Read and check a config file; ``None`` finds it (``discover_config``)."""
    file, shadowed = discover_config() if path is None else (Path(path), ())
    name = display_path(file)
    data, locate = _read(file, name)
    checked, issues = check(ConfigDocument, {} if data is None else data, noun="key")
    located = [(_at(issue), issue.message) for issue in issues]
    located.extend(_spec_problems(data))
    if checked is None or located:
        located.sort(key=lambda item: locate(item[0]) or 0)  # file order
        problems = [_problem(name, key, message, data, locate) for key, message in located]
        more = len(problems) - 1
        tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        raise BudgetConfigError(problems[0] + tail)
    for i, budget in enumerate(checked.budgets):
        budget._line = locate(("budgets", i))
    root = file.resolve().parent
    return BudgetConfig(
        path=file, root=root, model=checked.model, tokenizer=checked.tokenizer,
        budgets=checked.budgets, catalog=(root / checked.catalog) if checked.catalog else None,
        baseline=root / (checked.baseline or DEFAULT_BASELINE), display=name, shadowed=shadowed)


Locate = Callable[[PathKey], "int | None"]


def _read(file: Path, name: str) -> tuple[Any, Locate]:
    """A config's data (a pyproject.toml's ``[tool.tokcost]``) and the line of each key."""
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        quoted = f"'{name}'"
        raise BudgetConfigError(f"{arg('config', quoted)} does not exist; give a "
                                "tokcost.yaml or a pyproject.toml", param="config") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BudgetConfigError(f"cannot read config file '{name}': {exc}") from None
    if file.suffix != ".toml":
        data = yamltext.parse(text, name, BudgetConfigError)
        root = yamltext.load(text, nodes=True) if text.strip() else None
        return data, lambda key: yamltext.line_of(root, key)
    tool = _load_toml(text, name).get("tool")
    if not isinstance(tool, dict) or "tokcost" not in tool:
        raise BudgetConfigError(f"{name}: no [tool.tokcost] table; add one or pass "
                                f"{arg('config', 'tokcost.yaml')}", param="config")
    lines = key_lines(text)
    return tool["tokcost"], lambda key: nearest(lines, ("tool", "tokcost", *key))


ADHOC = "(command line)"  # what reports show as the config of an ad-hoc check
# Growth is measured against a baseline, and a baseline belongs to a config file.
_GROWTH_KEYS = ("max_growth_percent", "max_file_growth_percent")
_NEEDS_MODEL = {"max_cost_per_call": "price", "max_context_percent": "context window"}


def adhoc_config(paths: Sequence[str | Path], limits: Mapping[str, Any], *,
                 model: str | None = None, tokenizer: str | None = None,
                 root: str | Path | None = None) -> BudgetConfig:
    """The config a tokcost.yaml with one budget on ``paths`` under ``limits`` would give."""
    base = Path(os.path.abspath(root if root is not None else Path.cwd()))
    given = [str(p) for p in paths]  # AdhocBudget makes sure there are some
    _check_limits(limits, model)
    # The budget's name: the paths as typed (a shell-expanded glob can be long).
    name = " ".join(given) if len(given) <= 3 else (
        f"{given[0]} {given[1]} (+{len(given) - 2} more)")
    budget = {"name": name, "paths": [_adhoc_glob(p, base) for p in given], **limits,
              **({} if tokenizer is None else {"tokenizer": tokenizer})}
    data = {"budgets": [budget], **({} if model is None else {"model": model})}
    checked, issues = check(ConfigDocument, data, noun="key")
    if checked is None:
        loc = _at(issues[0])
        if loc[:2] == ("budgets", 0):
            loc = loc[2:]
        param = str(loc[0]) if loc and loc[0] in ("model", "tokenizer") else "limits"
        label = f"{dotted(loc)}: " if loc and param == "limits" else ""
        raise UsageError(f"{arg(param)}: {label}{issues[0].message}", param=param)
    return BudgetConfig(path=Path(ADHOC), root=base, budgets=checked.budgets,
                        model=checked.model, tokenizer=checked.tokenizer,
                        baseline=base / DEFAULT_BASELINE, display=ADHOC)


def _check_limits(limits: Mapping[str, Any], model: str | None) -> None:
    """The limits of an ad-hoc budget: budget keys, at least one limit, no growth."""
    keys = list(Budget.model_fields)
    for key in limits:
        if key not in keys:
            raise UsageError(f"{arg('limits')}: unknown key '{key}'{suggest(key, keys)}; use "
                             "budget keys such as max_tokens_per_file, max_cost_per_call, "
                             "max_context_percent", param="limits")
        if key in ("name", "paths"):
            raise UsageError(f"{arg('limits')} cannot set '{key}'; pass the files as "
                             f"{arg('paths')}", param="limits", related=("paths",))
        if key in _GROWTH_KEYS:
            raise UsageError(f"{arg('limits')} '{key}' needs a baseline, and a baseline needs a "
                             "config file; write the budget into tokcost.yaml", param="limits")
    if not any(key in LIMIT_KEYS for key in limits):
        wanted = ", ".join(k for k in LIMIT_KEYS if k not in _GROWTH_KEYS)
        raise UsageError(f"{arg('limits')} sets no limit; give one of {wanted}", param="limits")
    for key, what in _NEEDS_MODEL.items():
        if key in limits and model is None and limits.get("model") is None:
            raise UsageError(f"limits '{key}' needs a model for its {what}; pass "
                             f"{arg('model', 'ID')} (a catalog model such as 'gpt-4o')",
                             param="model")


def _adhoc_glob(typed: str, root: Path) -> str:
    """A path from the command line as a budget glob: an existing file or folder exactly
    (anchored, escaped), other text as a gitignore-style glob."""
    text = typed.strip()
    path = Path(text)
    full = Path(os.path.abspath(path if path.is_absolute() else root / path))
    if full != root and root not in full.parents:
        raise UsageError(f"'{typed}' lies outside {root}; check it from a folder that holds "
                         "it", param="paths")
    rel = full.relative_to(root).as_posix()
    if full.exists():
        if rel in ("", "."):
            return "**"
        escaped = "".join("\\" + c if c in "\\*?[" else c for c in rel)
        escaped = "\\" + escaped if escaped[:1] in ("!", "#") else escaped
        return "/" + escaped + ("/" if full.is_dir() else "")
    if not set("*?[") & set(text):
        raise UsageError(f"no such file or folder: '{typed}'", param="paths")
    # Keep the glob as typed (relative to root), only normalised: ./a/*.md is a/*.md.
    return rel if path.is_absolute() else re.sub(r"^(\./)+", "", text)


def _spec_problems(data: Any) -> Iterable[tuple[PathKey, str]]:
    """Each ``tokenizer:`` that names nothing tokcost can load, as ``check_spec`` judges it."""
    if not isinstance(data, dict):
        return
    from tokcost.adapters.registry import check_spec
    budgets = data.get("budgets")
    places: list[tuple[PathKey, Any]] = [(("tokenizer",), data.get("tokenizer"))]
    if isinstance(budgets, list):
        places.extend((("budgets", i, "tokenizer"), item.get("tokenizer"))
                      for i, item in enumerate(budgets) if isinstance(item, dict))
    for key, spec in places:
        try:
            if isinstance(spec, str) and spec.strip():  # else the schema's to report
                check_spec(spec)
        except TokcostError as exc:
            yield key, str(exc)


def _problem(name: str, key: PathKey, message: str, data: Any, locate: Locate) -> str:
    """``tokcost.yaml:4: budgets[0] 'a': max_tokens_per_file: expected ...``."""
    line = locate(key)
    where = f"{name}:{line}" if line else name
    label = dotted(key)
    if len(key) >= 2 and key[0] == "budgets" and isinstance(key[1], int):
        # A broken budget is shown by its own name, else by its number.
        budgets = data.get("budgets") if isinstance(data, dict) else None
        item = budgets[key[1]] if isinstance(budgets, list) and key[1] < len(budgets) else None
        raw = item.get("name") if isinstance(item, dict) else None
        shown = raw.strip() if isinstance(raw, str) and raw.strip() else f"#{key[1]}"
        rest = dotted(key[2:])
        label = f"budgets[{key[1]}] '{shown}'" + (f": {rest}" if rest else "")
    return f"{where}: {label}: {message}" if label else f"{where}: {message}"


def display_path(file: Path) -> str:
    """A path relative to cwd below it, ``../x`` in a folder above it, else as given."""
    here, full = Path.cwd().resolve(), file.resolve()
    if full == here or here in full.parents:
        return full.relative_to(here).as_posix() or "."
    if full in here.parents or full.parent in here.parents:
        return Path(os.path.relpath(full, here)).as_posix()
    return str(file)


def _load_toml(text: str, name: str) -> dict[str, Any]:
    try:
        return loads_toml(text)
    except ValueError as exc:  # TOMLDecodeError, or TooNested
        # The message ends with "(at line N, column M)": show it as name:N like YAML.
        msg = str(exc)
        found = re.search(r"\(at line (\d+), column \d+\)", msg)
        line = f":{found.group(1)}" if found else ""
        reason = msg[: found.start()].strip() if found else msg
        raise BudgetConfigError(f"{name}{line}: not valid TOML: {reason}") from None


_SPACE = re.compile(r"(?:[ \t\r]+|#[^\n]*)*")  # spaces and a comment, within the line
_BLANK = re.compile(r"(?:[ \t\r\n]+|#[^\n]*)*")  # ... and line ends
# One part of a dotted key: bare, "basic" (kept as written) or 'literal'.
_KEY = re.compile(r"""[ \t]*(?:([A-Za-z0-9_-]+)|"((?:\\.|[^"\\])*)"|'([^']*)')[ \t]*""")
_DOTTED = re.compile(rf"{_KEY.pattern}(?:\.{_KEY.pattern})*")
# A string (a multi-line one may end in up to five quotes), else all up to a delimiter.
_SCALAR = re.compile(r'"""(?:\\.|[^\\])*?"""+' r"|'''.*?'''+" r'|"(?:\\.|[^"\\])*"' r"|'[^']*'"
                     r"|[^,\]}\n#]*", re.DOTALL)


def key_lines(text: str) -> dict[PathKey, int]:
    """1-based line of every table, array element and key, by its full path (tomllib keeps no
    positions): a scan of TOML's shapes (multi-line arrays, strings hiding ``=``) on valid text."""
    scanner = _Scanner(text)
    with contextlib.suppress(IndexError, ValueError):  # tomllib accepted the text already
        scanner.document()
    return scanner.lines


def nearest(lines: Mapping[PathKey, int], path: PathKey) -> int | None:
    """The line of ``path``, else of its closest written parent."""
    return next((lines[path[:n]] for n in range(len(path), 0, -1) if path[:n] in lines), None)


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.newlines = [n for n, ch in enumerate(text) if ch == "\n"]
        self.lines: dict[PathKey, int] = {}
        self.last: dict[PathKey, int] = {}  # array-of-tables path -> its last element

    def line(self) -> int:
        return bisect.bisect_left(self.newlines, self.i) + 1

    def skip(self, pattern: re.Pattern[str]) -> str:
        """Move past ``pattern``; the character then under the cursor ('' at the end)."""
        # Each pattern may match nothing, so it always matches.
        self.i = pattern.match(self.text, self.i).end()  # type: ignore[union-attr]
        return self.text[self.i : self.i + 1]

    def expect(self, token: str) -> None:
        self.skip(_SPACE)
        if not self.text.startswith(token, self.i):
            raise ValueError(token)
        self.i += len(token)

    def mark(self, path: PathKey, line: int) -> None:
        """Mark ``path`` and each of its parents at ``line``, unless already marked."""
        for end in range(1, len(path) + 1):
            self.lines.setdefault(path[:end], line)

    def document(self) -> None:
        table: PathKey = ()
        while self.skip(_BLANK):
            line = self.line()
            if self.text.startswith("[", self.i):
                double = self.text.startswith("[[", self.i)
                self.i += 2 if double else 1
                table = self.resolve(self.key())
                self.expect("]]" if double else "]")
                if double:
                    self.last[table] = self.last.get(table, -1) + 1
                    table = (*table, self.last[table])
                self.mark(table, line)
            else:
                self.assignment(table, line)

    def resolve(self, parts: tuple[str, ...]) -> PathKey:
        """A header's path, through the last element of each array of tables on the way."""
        path: PathKey = ()
        for n, part in enumerate(parts):
            path = (*path, part)
            if n < len(parts) - 1 and path in self.last:
                path = (*path, self.last[path])
        return path

    def key(self) -> tuple[str, ...]:
        """A dotted key: ``a``, ``"a.b"``, ``a . 'b' . c``."""
        found = _DOTTED.match(self.text, self.i)
        if found is None:
            raise ValueError("key")
        self.i = found.end()
        return tuple(next(g for g in part.groups() if g is not None)
                     for part in _KEY.finditer(found.group()))

    def assignment(self, table: PathKey, line: int) -> None:
        path = (*table, *self.key())
        self.mark(path, line)
        self.expect("=")
        self.value(path)

    def value(self, path: PathKey) -> None:
        opening = self.skip(_SPACE)
        if opening in ("[", "{"):
            self.i += 1
            self.items(path, "]" if opening == "[" else "}")
        else:
            self.skip(_SCALAR)

    def items(self, path: PathKey, end: str) -> None:
        """An array's values (numbered) or an inline table's assignments, up to ``end``."""
        index = 0
        while (ahead := self.skip(_BLANK)) != end:
            if not ahead:
                raise ValueError(end)
            if end == "]":
                self.lines.setdefault((*path, index), self.line())
                self.value((*path, index))
                index += 1
            else:
                self.assignment(path, self.line())
            if self.skip(_BLANK) == ",":
                self.i += 1
        self.i += 1
