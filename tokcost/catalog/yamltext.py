"""YAML text for tokcost's files: ``yaml.safe_load`` semantics (libyaml when present), and the
line of a key path, from a node tree composed only when a problem is reported."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tokcost.errors import TokcostError
from tokcost.limits import MAX_YAML_NODES

if TYPE_CHECKING:
    import yaml

PathKey = tuple[str | int, ...]  # where a value lies: ("models", 3, "pricing", "input")


def dotted(path: PathKey) -> str:
    """``("pricing", "tiers", 0, "input")`` -> ``"pricing.tiers[0].input"``."""
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).removeprefix(".")


class SyntaxProblem(Exception):
    """A text that is not YAML: where (1-based line, when known) and why."""

    def __init__(self, line: int | None, reason: str) -> None:
        super().__init__(f"not valid YAML: {reason}")
        self.line = line


def load(text: str, *, nodes: bool = False) -> Any:
    """The data of a YAML text (``nodes``: its node tree), or ``SyntaxProblem``."""
    import yaml  # on first use, so `import tokcost` stays light
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)
    try:
        root = loader.get_single_node()
        _bounded(root)
        return root if nodes or root is None else loader.construct_document(root)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SyntaxProblem(mark.line + 1 if mark is not None else None, reason) from None
    finally:
        loader.dispose()


def _bounded(root: yaml.Node | None) -> None:
    """Refuse a document whose aliases expand past MAX_YAML_NODES (a "billion laughs"):
    every reader walks the expanded data, so a few hundred bytes could take minutes."""
    seen, stack = 0, [root] if root is not None else []
    while stack:
        node = stack.pop()
        seen += 1
        if seen > MAX_YAML_NODES:
            raise SyntaxProblem(None, f"its aliases expand to more than {MAX_YAML_NODES:,} "
                                      "values (an alias bomb?)")
        if isinstance(node.value, list):
            for item in node.value:
                stack.extend(item) if isinstance(item, tuple) else stack.append(item)


def parse(text: str, name: str, error: type[TokcostError]) -> Any:
    """The data of a YAML text; a syntax error raises ``error`` as ``name:line: ...``."""
    try:
        return load(text)
    except SyntaxProblem as exc:
        line = f":{exc.line}" if exc.line is not None else ""
        raise error(f"{name}{line}: {exc}") from None


def child(node: Any, key: str) -> tuple[yaml.Node, yaml.Node] | None:
    """The (key, value) nodes of ``key`` in a mapping node, or None."""
    import yaml
    if isinstance(node, yaml.MappingNode):
        return next(((k, v) for k, v in node.value if getattr(k, "value", None) == key), None)
    return None


def line_of(root: yaml.Node | None, path: PathKey) -> int | None:
    """1-based line of the deepest node along ``path`` (a scalar's key, else the value)."""
    import yaml
    if root is None:
        return None
    node = root
    for part in path:
        found: yaml.Node | None = None
        if isinstance(part, str) and (pair := child(node, part)) is not None:
            found = pair[0] if isinstance(pair[1], yaml.ScalarNode) else pair[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            found = node.value[part] if part < len(node.value) else None
        if found is None:
            break
        node = found
    return int(node.start_mark.line) + 1
