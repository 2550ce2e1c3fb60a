"""Engine profiles: how serving engines account for KV memory, one module per engine.

``vllm`` (the default) and ``sglang`` reproduce those engines' start-up arithmetic, read
from their source (cited in each module); ``ideal`` is the bytes truly held. A profile is
found by name here, imported on first use; no other module compares an engine's name.

Adding an engine takes one new file and one line:

1. ``tokcost/memory/engines/NAME.py``: a frozen ``kw_only`` dataclass subclassing ``Engine``
   (engines/base.py) with ``name``, ``title`` and ``version``; its options as fields with
   defaults, each named as the request parameter (and CLI flag) that sets it, checked in
   ``__post_init__``; ``plan`` (a ``Deployment`` -> its ``Plan`` and the GPU fit); and the
   notes it owns (``check``, ``budget_notes``, ``pool_notes``...). It imports nothing from
   the other engine modules (an import-linter contract checks it).
2. Its line in ``_PROFILES`` below. An option that is new to the CLI is also a parameter
   of ``kvmem estimate`` (tokcost/cli/kvmem.py) of the same name; the request hands every
   engine option to the chosen profile, which refuses another engine's.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from tokcost.errors import UsageError, arg, suggest

if TYPE_CHECKING:
    from tokcost.memory.engines.base import Engine

__all__ = ["engine_class", "engine_classes", "engine_names", "plan_sglang", "plan_vllm"]

# name -> "module:class", imported on first use (the registry of tiktoken's style).
_PROFILES = (
    ("vllm", "tokcost.memory.engines.vllm:Vllm"),
    ("sglang", "tokcost.memory.engines.sglang:Sglang"),
    ("ideal", "tokcost.memory.engines.ideal:Ideal"),
)


def _registry() -> dict[str, str]:
    registry: dict[str, str] = {}
    for name, where in _PROFILES:
        if name in registry:
            raise ValueError(f"engine {name!r} is registered twice")
        registry[name] = where
    return registry


_REGISTRY = _registry()


def engine_names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def engine_class(name: str) -> type[Engine]:
    """The profile registered as ``name`` (any case), or a one-line error with a suggestion.

    >>> engine_class("SGLang").title
    'SGLang'
    """
    key = str(name).lower()
    if key not in _REGISTRY:
        raise UsageError(f"unknown {arg('engine')} '{name}'{suggest(key, _REGISTRY)}; use one "
                         f"of {', '.join(_REGISTRY)}", param="engine")
    module, _, attr = _REGISTRY[key].partition(":")
    profile: type[Engine] = getattr(import_module(module), attr)
    return profile


def engine_classes() -> tuple[type[Engine], ...]:
    """Every registered profile (to name the owner of an option another engine was given)."""
    return tuple(engine_class(name) for name in _REGISTRY)


def __getattr__(name: str) -> Any:
    """``plan_vllm`` and ``plan_sglang``, each engine's plan from a layout and its KV
    memory alone, imported on first use like the profiles."""
    if name in ("plan_vllm", "plan_sglang"):
        return getattr(import_module(f"{__name__}.{name.removeprefix('plan_')}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
