"""tokcost: count tokens, price them, and size the KV cache that serves them.

This is the public API of tokcost; the CLI imports only what is re-exported here.
Names are resolved on first use (PEP 562), so ``import tokcost`` costs almost
nothing and never loads numpy, tokenizers, sentencepiece, matplotlib or dask;
heavy packages are imported inside the functions that need them.

>>> import tokcost
>>> tokcost.get_tokenizer("cl100k_base").count("hello world")
2
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> module that defines it
_API: dict[str, str] = {
    "Tokenizer": "tokcost.adapters",
    "get_tokenizer": "tokcost.adapters",
    "TokcostError": "tokcost.errors",
    "count_text": "tokcost.counting",
    "count_texts": "tokcost.counting",
    "count_paths": "tokcost.counting",
    "load_catalog": "tokcost.catalog",
    "estimate_kv": "tokcost.memory",
    "kv_bytes_per_token": "tokcost.memory",
    "kv_cache_bytes": "tokcost.memory",
    "compare_policies": "tokcost.memory.simulate",
    "estimate_cost": "tokcost.pricing",
}

__all__ = [*_API, "__version__"]


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'tokcost' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:
    from tokcost.adapters import Tokenizer as Tokenizer
    from tokcost.adapters import get_tokenizer as get_tokenizer
    from tokcost.catalog import load_catalog as load_catalog
    from tokcost.counting import count_paths as count_paths
    from tokcost.counting import count_text as count_text
    from tokcost.counting import count_texts as count_texts
    from tokcost.errors import TokcostError as TokcostError
    from tokcost.memory import estimate_kv as estimate_kv
    from tokcost.memory import kv_bytes_per_token as kv_bytes_per_token
    from tokcost.memory import kv_cache_bytes as kv_cache_bytes
    from tokcost.memory.simulate import compare_policies as compare_policies
    from tokcost.pricing import estimate_cost as estimate_cost
