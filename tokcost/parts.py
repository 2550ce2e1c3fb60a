"""Frozen requests made of frozen parts; ``Request.of(**options)`` gives each flat option to the
request's field of that name, else to every part with one (``seed``), else to the part naming
a ``rest`` field (an engine's own options); a name nothing takes is a UsageError."""

from __future__ import annotations

import sys
from dataclasses import MISSING, Field, fields, is_dataclass
from typing import Any, TypeVar

from tokcost.errors import UsageError

R = TypeVar("R", bound="Parts")


class Parts:
    """A frozen dataclass request whose parts ``of`` builds from flat options."""

    @classmethod
    def of(cls: type[R], **options: Any) -> R:
        given: dict[str, Any] = {}
        used: set[str] = set()
        rest: tuple[str, type] | None = None
        for f in fields(cls):  # type: ignore[arg-type]
            if not f.init:
                continue
            part = _part(cls, f)
            # A part given whole is taken as it is; CountRequest's ``tokenizers`` part has
            # a ``tokenizers`` field of its own, which a flat list fills.
            if f.name in options and (part is None or isinstance(options[f.name], part)):
                given[f.name] = options[f.name]
                used.add(f.name)
                continue
            if part is None:
                continue
            if hasattr(part, "rest"):
                rest = (f.name, part)
                continue
            names = {g.name for g in fields(part) if g.init} & options.keys()
            if names or (f.default is MISSING and f.default_factory is MISSING):
                given[f.name] = part(**{name: options[name] for name in names})
                used |= names
        left = {k: v for k, v in options.items() if k not in used}
        if rest is not None:
            name, part = rest
            own = {g.name for g in fields(part) if g.init} - {part.rest}  # type: ignore[attr-defined]
            mine = {k: left.pop(k) for k in list(left) if k in own}
            given[name] = part(**mine, **{part.rest: left})  # type: ignore[attr-defined]
            left = {}
        if left:
            raise UsageError(f"{cls.__name__} has no option {sorted(left)[0]!r}")
        return cls(**given)


def _part(cls: type, f: Field[Any]) -> type | None:
    """The dataclass of field ``f``'s default factory or annotation (``Inputs | None``), or None."""
    if isinstance(f.default_factory, type) and is_dataclass(f.default_factory):
        return f.default_factory
    names = str(f.type).replace("None", "").split("|")
    found = (vars(sys.modules[cls.__module__]).get(n.strip()) for n in names)
    return next((t for t in found if isinstance(t, type) and is_dataclass(t)), None)
