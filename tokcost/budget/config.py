"""Budget configuration: ``tokcost.yaml`` or ``[tool.tokcost]`` in ``pyproject.toml``.

A config names a default model and a list of budgets; each budget is a set of
gitignore-style path globs (relative to the config file's folder) and the limits
its files must keep::

    model: gpt-4o-mini
    budgets:
      - name: system prompts
        paths: ["prompts/**/*.md"]
        max_tokens_per_file: 2k      # counts as everywhere: 2000, 2k, 2Ki, 1.5M
        max_cost_per_call: $0.01     # USD, the file as one call's prompt (0.01 or 1c too)
        output_tokens: 500
        max_growth_percent: 10%      # against the baseline JSON (10 alike)

Every problem names the file, the line and the key, e.g.
``tokcost.yaml:7: budgets[0] 'system prompts': max_tokens_per_file: expected a whole
number >= 1, got 'lots'``. All problems are collected; the first is raised with a count.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

from tokcost.budget.kinds import Percent, Share, Tokens, Usd
from tokcost.catalog import yamltext
from tokcost.catalog.fields import (
    Choice,
    Doc,
    Flag,
    Items,
    Key,
    PathKey,
    Record,
    Required,
    Strings,
    Text,
    dotted,
)
from tokcost.errors import TokcostError, UsageError

KeyPath = PathKey

CONFIG_NAMES = ("tokcost.yaml", "tokcost.yml", ".tokcost.yaml")
DEFAULT_BASELINE = ".tokcost-baseline.json"
CONFIG_VERSION = 1

# A budget must set at least one of these (the context-window check is implicit).
LIMIT_KEYS = (
    "max_tokens_per_file",
    "max_total_tokens",
    "max_cost_per_call",
    "max_growth_percent",
    "max_file_growth_percent",
    "max_context_percent",
)

_TEXT = Text(strip=True)
_GLOBS = Strings("a glob or a list of globs", nonempty=True, strip=True)
_PERCENT = Percent()


class BudgetConfigError(UsageError):
    """The budget config is missing or malformed (exit code 2)."""


@dataclass(frozen=True)
class Budget(Record):
    """One budget: which files, counted how, and the limits they must keep.

    ``combine`` means the matched files are sent together as one prompt, so the
    cost per call and the context-window share apply to their sum.
    """

    name: Annotated[
        str, _TEXT, Required("missing key 'name'; give every budget a unique name"),
        Doc("unique name of the budget"),
    ]
    paths: Annotated[
        tuple[str, ...], _GLOBS,
        Required("missing key 'paths'; list the globs of the files to check"),
        Doc("gitignore-style globs, relative to the config's folder"),
    ]
    exclude: Annotated[tuple[str, ...], _GLOBS, Doc("globs of files to leave out")] = ()
    model: Annotated[str | None, _TEXT, Doc("catalog model (default: the config's)")] = None
    tokenizer: Annotated[str | None, _TEXT, Doc("tokenizer spec (default: the model's)")] = None
    max_tokens_per_file: Annotated[int | None, Tokens(), Doc("tokens, e.g. 2000 or 10k")] = None
    max_total_tokens: Annotated[int | None, Tokens(), Doc("tokens, e.g. 2000 or 10k")] = None
    max_cost_per_call: Annotated[
        Decimal | None, Usd("per call"),
        Doc("USD, each file (or, with combine, all of them) as one call's prompt"),
    ] = None
    output_tokens: Annotated[
        int, Tokens(minimum=0), Doc("output tokens priced with each call")
    ] = 0
    cached_share: Annotated[
        Decimal, Share(), Doc("share of the prompt read from the cache (0.5 or 50%)"),
    ] = Decimal(0)
    max_growth_percent: Annotated[
        float | None, _PERCENT, Doc("growth of the total against the baseline")
    ] = None
    max_file_growth_percent: Annotated[
        float | None, _PERCENT, Doc("growth of each file against the baseline")
    ] = None
    max_context_percent: Annotated[
        float | None, _PERCENT, Doc("share of the model's context window")
    ] = None
    reserve_output_tokens: Annotated[
        int | None, Tokens(minimum=0),
        Doc("output tokens kept free in the context window (default: output_tokens)"),
    ] = None
    combine: Annotated[bool, Flag(), Doc("the files are sent together as one prompt")] = False
    line: Annotated[int | None, Key(None)] = None  # where the budget starts in the config file

    @property
    def reserve(self) -> int:
        """Output tokens kept free in the context window (default: ``output_tokens``)."""
        return self.output_tokens if self.reserve_output_tokens is None else (
            self.reserve_output_tokens
        )

    def _problems(self) -> Iterable[tuple[PathKey, str]]:
        if all(getattr(self, key) is None for key in LIMIT_KEYS):
            yield (), f"sets no limit; add one of {', '.join(LIMIT_KEYS)}"


@dataclass(frozen=True, kw_only=True)
class ConfigDocument(Record):
    """A budget config (tokcost.yaml, or [tool.tokcost] in pyproject.toml)."""

    version: Annotated[
        int, Choice((CONFIG_VERSION,), f"config version {CONFIG_VERSION}")
    ] = CONFIG_VERSION
    model: Annotated[str | None, _TEXT, Doc("default catalog model of the budgets")] = None
    tokenizer: Annotated[str | None, _TEXT, Doc("default tokenizer spec")] = None
    catalog: Annotated[str | None, _TEXT, Doc("models YAML, relative to this file")] = None
    baseline: Annotated[
        str | None, _TEXT, Doc(f"baseline JSON, relative to this file (default {DEFAULT_BASELINE})")
    ] = None
    budgets: Annotated[
        tuple[Budget, ...], Items("a non-empty list under 'budgets'", nonempty=True),
        Required("expected a non-empty list under 'budgets', got None"),
    ]

    def _problems(self) -> Iterable[tuple[PathKey, str]]:
        seen: dict[str, int] = {}
        for i, budget in enumerate(self.budgets):
            if budget.name in seen:
                yield (
                    ("budgets", i, "name"),
                    f"duplicate budget name (also budgets[{seen[budget.name]}]); "
                    "names must be unique",
                )
            seen.setdefault(budget.name, i)


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
        "create one (see README: tokcost check) or pass config=PATH",
        param="config",
    )


def load_config(path: str | Path | None = None) -> BudgetConfig:
    """Read and check a config file; ``None`` looks in the current folder."""
    file = Path(path) if path is not None else find_config()
    name = _display(file)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BudgetConfigError(
            f"config='{name}' does not exist; give a tokcost.yaml or a pyproject.toml",
            param="config",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BudgetConfigError(f"cannot read config file '{name}': {exc}") from None
    locate: Callable[[KeyPath], int | None]
    if file.suffix == ".toml":
        from tokcost.budget.toml_lines import key_lines, nearest

        doc = _load_toml(text, name)
        tool = doc.get("tool")
        if not isinstance(tool, dict) or "tokcost" not in tool:
            raise BudgetConfigError(
                f"{name}: no [tool.tokcost] table; add one or pass config=tokcost.yaml",
                param="config",
            )
        data: Any = tool["tokcost"]
        lines = key_lines(text)

        def locate(key: KeyPath) -> int | None:
            return nearest(lines, ("tool", "tokcost", *key))
    else:
        data = yamltext.parse(text, name, BudgetConfigError)
        root_node = yamltext.compose(text) if text.strip() else None

        def locate(key: KeyPath) -> int | None:
            return yamltext.line_of(root_node, key)

    from tokcost.catalog.validation import validate  # pydantic: only when validating

    checked, issues = validate(ConfigDocument, {} if data is None else data, noun="key")
    # A missing key is shown at its mapping: "budgets[0] 'a': missing key 'paths'".
    located = [(issue.loc[:-1] if issue.missing else issue.loc, issue.message)
               for issue in issues]
    located.extend(_spec_problems(data))
    if checked is None or located:
        located.sort(key=lambda item: locate(item[0]) or 0)  # file order
        problems = [_problem(name, key, message, data, locate) for key, message in located]
        more = len(problems) - 1
        tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        raise BudgetConfigError(problems[0] + tail)
    assert checked is not None  # no problem found means the document validated
    root = file.resolve().parent
    return BudgetConfig(
        path=file,
        root=root,
        budgets=tuple(
            replace(b, line=locate(("budgets", i))) for i, b in enumerate(checked.budgets)
        ),
        model=checked.model,
        tokenizer=checked.tokenizer,
        catalog=(root / checked.catalog) if checked.catalog else None,
        baseline=root / (checked.baseline or DEFAULT_BASELINE),
        display=name,
    )


def _spec_problems(data: Any) -> Iterable[tuple[KeyPath, str]]:
    """Each ``tokenizer:`` (the config's, each budget's) that names nothing tokcost can
    load, judged at load by ``check_spec``, the judge of ``-t`` and of catalog entries,
    rather than when the budget is first counted. A value that is not text at all is
    the schema's to report."""
    if not isinstance(data, dict):
        return
    from tokcost.adapters.registry import check_spec

    budgets = data.get("budgets")
    places: list[tuple[KeyPath, Any]] = [(("tokenizer",), data.get("tokenizer"))]
    if isinstance(budgets, list):
        places.extend((("budgets", i, "tokenizer"), item.get("tokenizer"))
                      for i, item in enumerate(budgets) if isinstance(item, dict))
    for key, spec in places:
        if not isinstance(spec, str) or not spec.strip():
            continue
        try:
            check_spec(spec)
        except TokcostError as exc:
            yield key, str(exc)


def _problem(
    name: str, key: KeyPath, message: str, data: Any, locate: Callable[[KeyPath], int | None]
) -> str:
    """``tokcost.yaml:4: budgets[0] 'a': max_tokens_per_file: expected ...``."""
    line = locate(key)
    where = f"{name}:{line}" if line else name
    label = dotted(key)
    if len(key) >= 2 and key[0] == "budgets" and isinstance(key[1], int):
        head = f"budgets[{key[1]}] '{_budget_name(data, key[1])}'"
        rest = dotted(key[2:])
        label = f"{head}: {rest}" if rest else head
    return f"{where}: {label}: {message}" if label else f"{where}: {message}"


def _budget_name(data: Any, index: int) -> str:
    """The name a broken budget is shown by: its own, else its number."""
    budgets = data.get("budgets") if isinstance(data, dict) else None
    item = budgets[index] if isinstance(budgets, list) and index < len(budgets) else None
    raw = item.get("name") if isinstance(item, dict) else None
    return raw.strip() if isinstance(raw, str) and raw.strip() else f"#{index}"


def _display(file: Path) -> str:
    """The path relative to cwd when it lies below it, else as given (stable in reports)."""
    try:
        return file.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return str(file)


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
