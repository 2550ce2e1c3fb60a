"""Engine profiles, one module per engine (vllm, sglang, llama.cpp, trtllm, ideal), found by
name here and imported on first use; no other module compares an engine's name.
``NAME@MAJOR.MINOR`` picks a release (``Engine.release_of``). Adding one: docs/kvmem.md."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from tokcost.errors import UsageError, arg, suggest

if TYPE_CHECKING:
    from tokcost.memory.engines.base import Engine

__all__ = ["engine_class", "engine_classes", "engine_names", "split_engine"]

# name -> "module:class", imported on first use (the registry of tiktoken's style).
_PROFILES = (("vllm", "tokcost.memory.engines.vllm:Vllm"),
             ("sglang", "tokcost.memory.engines.sglang:Sglang"),
             ("llama.cpp", "tokcost.memory.engines.llamacpp:LlamaCpp"),
             ("trtllm", "tokcost.memory.engines.trtllm:TrtLlm"),
             ("ideal", "tokcost.memory.engines.ideal:Ideal"))


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
    """The profile registered as ``name`` (any case), or a one-line error with a suggestion."""
    key = str(name).lower()
    if key not in _REGISTRY:
        raise UsageError(f"unknown {arg('engine')} '{name}'{suggest(key, _REGISTRY)}; use one "
                         f"of {', '.join(_REGISTRY)}", param="engine")
    module, _, attr = _REGISTRY[key].partition(":")
    return getattr(import_module(module), attr)  # type: ignore[no-any-return]


def split_engine(given: str) -> tuple[type[Engine], str | None]:
    """``vllm@0.20`` -> the profile and ``"0.20"`` (None when no release is named)."""
    name, at, release = str(given).partition("@")
    return engine_class(name), release if at else None


def engine_classes() -> tuple[type[Engine], ...]:
    return tuple(engine_class(name) for name in _REGISTRY)

