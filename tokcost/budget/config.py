"""Budget configuration: ``tokcost.yaml`` or ``[tool.tokcost]`` in ``pyproject.toml``.

A config names a default model and a list of budgets; each budget is a set of
gitignore-style path globs (relative to the config file's folder) and the limits
its files must keep::

    model: gpt-4o-mini
    budgets:
      - name: system prompts
        paths: ["prompts/**/*.md"]
        max_tokens_per_file: 2000
        max_cost_per_call: 0.01      # USD, the file as one call's prompt
        output_tokens: 500
        max_growth_percent: 10       # against the baseline JSON

Every problem names the file, the line and the key, e.g.
``tokcost.yaml:7: budgets[0] 'system prompts': max_tokens_per_file: expected a whole
number >= 1, got 'lots'``. All problems are collected; the first is raised with a count.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, TypeVar, cast

import yaml

from tokcost.errors import UsageError, suggest

T = TypeVar("T")
KeyPath = tuple[str | int, ...]

CONFIG_NAMES = ("tokcost.yaml", "tokcost.yml", ".tokcost.yaml")
DEFAULT_BASELINE = ".tokcost-baseline.json"
CONFIG_VERSION = 1

TOP_KEYS = ("version", "model", "tokenizer", "catalog", "baseline", "budgets")
BUDGET_KEYS = (
    "name",
    "paths",
    "exclude",
    "model",
    "tokenizer",
    "max_tokens_per_file",
    "max_total_tokens",
    "max_cost_per_call",
    "output_tokens",
    "cached_share",
    "max_growth_percent",
    "max_file_growth_percent",
    "max_context_percent",
    "reserve_output_tokens",
    "combine",
)
# A budget must set at least one of these (the context-window check is implicit).
LIMIT_KEYS = (
    "max_tokens_per_file",
    "max_total_tokens",
    "max_cost_per_call",
    "max_growth_percent",
    "max_file_growth_percent",
    "max_context_percent",
)


class BudgetConfigError(UsageError):
    """The budget config is missing or malformed (exit code 2)."""


@dataclass(frozen=True)
class Budget:
    """One budget: which files, counted how, and the limits they must keep.

    ``combine`` means the matched files are sent together as one prompt, so the
    cost per call and the context-window share apply to their sum.
    """

    name: str
    paths: tuple[str, ...]
    exclude: tuple[str, ...] = ()
    model: str | None = None
    tokenizer: str | None = None
    max_tokens_per_file: int | None = None
    max_total_tokens: int | None = None
    max_cost_per_call: Decimal | None = None
    output_tokens: int = 0
    cached_share: Decimal = Decimal(0)
    max_growth_percent: float | None = None
    max_file_growth_percent: float | None = None
    max_context_percent: float | None = None
    reserve_output_tokens: int | None = None
    combine: bool = False
    line: int | None = None  # where the budget starts in the config file

    @property
    def reserve(self) -> int:
        """Output tokens kept free in the context window (default: ``output_tokens``)."""
        return self.output_tokens if self.reserve_output_tokens is None else (
            self.reserve_output_tokens
        )


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

    def where(self, budget: Budget | None = None) -> str:
        """``tokcost.yaml:12`` for a budget, ``tokcost.yaml`` for the file."""
        name = self.display or str(self.path)
        if budget is not None and budget.line:
            return f"{name}:{budget.line}"
        return name


# --- discovery ------------------------------------------------------------------------


def find_config(directory: Path | None = None) -> Path:
    """The config in ``directory`` (default: cwd): tokcost.yaml, then pyproject.toml."""
    here = directory or Path.cwd()
    for name in CONFIG_NAMES:
        if (here / name).is_file():
            return here / name
    pyproject = here / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = _load_toml(pyproject.read_text(encoding="utf-8"), str(pyproject))
        except BudgetConfigError:
            return pyproject  # let load_config report the parse error with its line
        if isinstance(data.get("tool"), dict) and "tokcost" in data["tool"]:
            return pyproject
    raise BudgetConfigError(
        f"no tokcost.yaml (or [tool.tokcost] in pyproject.toml) in {here}; "
        "create one (see README: tokcost check) or pass --config FILE"
    )


def load_config(path: str | Path | None = None) -> BudgetConfig:
    """Read and check a config file; ``None`` looks in the current folder."""
    file = Path(path) if path is not None else find_config()
    name = _display(file)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BudgetConfigError(
            f"config file '{name}' does not exist; check --config"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BudgetConfigError(f"cannot read config file '{name}': {exc}") from None
    locate: Callable[[KeyPath], int | None]
    if file.suffix == ".toml":
        doc = _load_toml(text, name)
        tool = doc.get("tool")
        if not isinstance(tool, dict) or "tokcost" not in tool:
            raise BudgetConfigError(
                f"{name}: no [tool.tokcost] table; add one or pass --config tokcost.yaml"
            )
        data: Any = tool["tokcost"]
        lines = _toml_lines(text)

        def locate(key: KeyPath) -> int | None:
            return _nearest(lines, ("tool", "tokcost", *key))
    else:
        data = _load_yaml(text, name)
        root_node = yaml.compose(text, Loader=_loader()) if text.strip() else None

        def locate(key: KeyPath) -> int | None:
            return _yaml_line(root_node, key)

    checker = _Checker(name, locate)
    config = _check(checker, data, file, name)
    if checker.problems:
        first = checker.problems[0]
        more = len(checker.problems) - 1
        tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        raise BudgetConfigError(first + tail)
    return config


def _display(file: Path) -> str:
    """The path relative to cwd when it lies below it, else as given (stable in reports)."""
    try:
        return file.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(file)


# --- parsing ------------------------------------------------------------------------------


def _loader() -> type[yaml.SafeLoader]:
    return cast(type[yaml.SafeLoader], getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _load_yaml(text: str, name: str) -> Any:
    try:
        return yaml.load(text, Loader=_loader())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise BudgetConfigError(f"{name}{line}: not valid YAML: {reason}") from None


def _load_toml(text: str, name: str) -> dict[str, Any]:
    # tomllib is in the standard library from 3.11; tomli is the same parser for 3.10.
    tomllib = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")
    try:
        data: dict[str, Any] = tomllib.loads(text)
        return data
    except tomllib.TOMLDecodeError as exc:
        # The message ends with "(at line N, column M)": show it as name:N like YAML.
        msg = str(exc)
        found = re.search(r"\(at line (\d+), column \d+\)", msg)
        line = f":{found.group(1)}" if found else ""
        reason = msg[: found.start()].strip() if found else msg
        raise BudgetConfigError(f"{name}{line}: not valid TOML: {reason}") from None


def _yaml_line(node: yaml.Node | None, key: KeyPath) -> int | None:
    """1-based line of the deepest node along ``key`` (the key itself for scalars)."""
    if node is None:
        return None
    line: int | None = node.start_mark.line + 1
    for part in key:
        child: yaml.Node | None = None
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            for k, v in node.value:
                if getattr(k, "value", None) == part:
                    child = k if isinstance(v, yaml.ScalarNode) else v
                    break
        elif (isinstance(node, yaml.SequenceNode) and isinstance(part, int)
              and part < len(node.value)):
            child = node.value[part]
        if child is None:
            break
        node = child
        line = child.start_mark.line + 1
    return line


_TOML_TABLE = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_TOML_KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*')\s*=")


def _toml_lines(text: str) -> dict[KeyPath, int]:
    """Map table and key paths to 1-based lines (tomllib keeps no positions).

    ``[[tool.tokcost.budgets]]`` tables are numbered in order, so the second one is
    ``("tool", "tokcost", "budgets", 1)``. Inline tables point at their key's line.
    """
    lines: dict[KeyPath, int] = {}
    counts: dict[KeyPath, int] = {}
    table: KeyPath = ()
    for number, raw in enumerate(text.splitlines(), start=1):
        head = _TOML_TABLE.match(raw)
        if head:
            parts: KeyPath = tuple(p.strip().strip("\"'") for p in head.group(2).split("."))
            if head.group(1) == "[[":
                index = counts.get(parts, 0)
                counts[parts] = index + 1
                table = (*parts, index)
            else:
                table = parts
            lines.setdefault(table, number)
            continue
        key = _TOML_KEY.match(raw)
        if key:
            lines.setdefault((*table, key.group(1).strip("\"'")), number)
    return lines


def _nearest(lines: Mapping[KeyPath, int], key: KeyPath) -> int | None:
    for end in range(len(key), 0, -1):
        if key[:end] in lines:
            return lines[key[:end]]
    return None


# --- checking -----------------------------------------------------------------------------


@dataclass
class _Checker:
    file: str
    locate: Callable[[KeyPath], int | None]
    problems: list[str] = field(default_factory=list)
    budget: str | None = None

    def fail(self, key: KeyPath, message: str) -> None:
        line = self.locate(key)
        where = f"{self.file}:{line}" if line else self.file
        label = ""
        for part in key:
            label += f"[{part}]" if isinstance(part, int) else f"{'.' if label else ''}{part}"
        if self.budget is not None and len(key) >= 2 and key[0] == "budgets":
            head = f"budgets[{key[1]}] '{self.budget}'"
            rest = label[len(f"budgets[{key[1]}]"):].lstrip(".")
            label = f"{head}: {rest}" if rest else head
        self.problems.append(f"{where}: {label}: {message}" if label else f"{where}: {message}")

    def get(self, data: Mapping[str, Any], key: str, path: KeyPath,
            conv: Callable[[Any, KeyPath], T | None]) -> T | None:
        if key not in data or data[key] is None:
            return None
        return conv(data[key], (*path, key))

    def mapping(self, value: Any, path: KeyPath, allowed: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(path, f"expected a mapping with keys {', '.join(allowed)}, "
                      f"got {_show(value)}")
            return {}
        for key in value:
            if key not in allowed:
                hint = suggest(str(key), allowed)
                self.fail(
                    (*path, str(key)),
                    f"unknown key{hint}" if hint else
                    f"unknown key; expected one of {', '.join(allowed)}",
                )
        return cast(dict[str, Any], value)

    def text(self, value: Any, path: KeyPath) -> str | None:
        if not isinstance(value, str) or not value.strip():
            self.fail(path, f"expected a non-empty string, got {_show(value)}")
            return None
        return value.strip()

    def strings(self, value: Any, path: KeyPath) -> tuple[str, ...] | None:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not value or not all(
            isinstance(v, str) and v.strip() for v in value
        ):
            self.fail(path, f"expected a glob or a list of globs, got {_show(value)}")
            return None
        return tuple(v.strip() for v in value)

    def whole(self, value: Any, path: KeyPath, minimum: int = 1) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self.fail(path, f"expected a whole number >= {minimum}, got {_show(value)}")
            return None
        return value

    def number(self, value: Any, path: KeyPath, what: str) -> Decimal | None:
        # Floats go through str so 0.01 stays 0.01 exactly.
        number: Decimal | None = None
        if not isinstance(value, bool) and isinstance(value, (int, float, str)):
            try:
                number = Decimal(str(value).strip())
            except InvalidOperation:
                number = None
        if number is None or not number.is_finite() or number < 0:
            self.fail(path, f"expected {what}, got {_show(value)}")
            return None
        return number

    def money(self, value: Any, path: KeyPath) -> Decimal | None:
        return self.number(value, path, "a number >= 0 (USD per call)")

    def percent(self, value: Any, path: KeyPath) -> float | None:
        number = self.number(value, path, "a percentage >= 0 such as 10")
        return None if number is None else float(number)

    def share(self, value: Any, path: KeyPath) -> Decimal | None:
        number = self.number(value, path, "a fraction in [0, 1] such as 0.5")
        if number is not None and number > 1:
            self.fail(path, f"expected a fraction in [0, 1] such as 0.5, got {_show(value)}")
            return None
        return number

    def boolean(self, value: Any, path: KeyPath) -> bool | None:
        if not isinstance(value, bool):
            self.fail(path, f"expected true or false, got {_show(value)}")
            return None
        return value


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check(c: _Checker, data: Any, file: Path, name: str) -> BudgetConfig:
    root = file.resolve().parent
    if data is None:
        data = {}
    top = c.mapping(data, (), TOP_KEYS)
    version = top.get("version", CONFIG_VERSION)
    if version != CONFIG_VERSION:
        c.fail(("version",), f"expected config version {CONFIG_VERSION}, got {_show(version)}")
    model = c.get(top, "model", (), c.text)
    tokenizer = c.get(top, "tokenizer", (), c.text)
    catalog = c.get(top, "catalog", (), c.text)
    baseline = c.get(top, "baseline", (), c.text)
    raw = top.get("budgets")
    budgets: list[Budget] = []
    if not isinstance(raw, list) or not raw:
        c.fail(("budgets",) if "budgets" in top else (),
               f"expected a non-empty list under 'budgets', got {_show(raw)}")
        raw = []
    seen: dict[str, int] = {}
    for i, item in enumerate(raw):
        budget = _budget(c, item, ("budgets", i))
        if budget is None:
            continue
        if budget.name in seen:
            c.budget = budget.name
            c.fail(("budgets", i, "name"),
                   f"duplicate budget name (also budgets[{seen[budget.name]}]); "
                   "names must be unique")
            c.budget = None
            continue
        seen[budget.name] = i
        budgets.append(budget)
    return BudgetConfig(
        path=file,
        root=root,
        budgets=tuple(budgets),
        model=model,
        tokenizer=tokenizer,
        catalog=(root / catalog) if catalog else None,
        baseline=root / (baseline or DEFAULT_BASELINE),
        display=name,
    )


def _budget(c: _Checker, item: Any, path: KeyPath) -> Budget | None:
    raw_name = item.get("name") if isinstance(item, dict) else None
    c.budget = raw_name.strip() if isinstance(raw_name, str) and raw_name.strip() else (
        f"#{path[-1]}"
    )
    try:
        data = c.mapping(item, path, BUDGET_KEYS)
        if not data:
            return None
        name = c.get(data, "name", path, c.text)
        if name is None and "name" not in data:
            c.fail(path, "missing key 'name'; give every budget a unique name")
        paths = c.get(data, "paths", path, c.strings)
        if paths is None and "paths" not in data:
            c.fail(path, "missing key 'paths'; list the globs of the files to check")
        if not any(key in data for key in LIMIT_KEYS):
            c.fail(path, f"sets no limit; add one of {', '.join(LIMIT_KEYS)}")
        budget = Budget(
            name=name or "",
            paths=paths or (),
            exclude=c.get(data, "exclude", path, c.strings) or (),
            model=c.get(data, "model", path, c.text),
            tokenizer=c.get(data, "tokenizer", path, c.text),
            max_tokens_per_file=c.get(data, "max_tokens_per_file", path, c.whole),
            max_total_tokens=c.get(data, "max_total_tokens", path, c.whole),
            max_cost_per_call=c.get(data, "max_cost_per_call", path, c.money),
            output_tokens=c.get(data, "output_tokens", path, _zero_ok(c)) or 0,
            cached_share=c.get(data, "cached_share", path, c.share) or Decimal(0),
            max_growth_percent=c.get(data, "max_growth_percent", path, c.percent),
            max_file_growth_percent=c.get(data, "max_file_growth_percent", path, c.percent),
            max_context_percent=c.get(data, "max_context_percent", path, c.percent),
            reserve_output_tokens=c.get(data, "reserve_output_tokens", path, _zero_ok(c)),
            combine=bool(c.get(data, "combine", path, c.boolean)),
            line=c.locate(path),
        )
    finally:
        c.budget = None
    if name is None or paths is None:
        return None
    return budget


def _zero_ok(c: _Checker) -> Callable[[Any, KeyPath], int | None]:
    def conv(value: Any, path: KeyPath) -> int | None:
        return c.whole(value, path, minimum=0)

    return conv
