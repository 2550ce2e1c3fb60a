"""tokcost: count tokens, price them, and size the KV cache that serves them. The public API
(docs/api.md): one use case per command, the frozen request it takes, and the errors. Names
resolve on first use (PEP 562): ``import tokcost`` loads none of numpy, tokenizers,
sentencepiece, matplotlib or dask.

>>> import tokcost
>>> tokcost.get_tokenizer("cl100k_base").count("hello world")
2
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

# The API, one line per module: each module's __all__ holds the same names (a test keeps
# them equal), which is what type checkers read through the imports at the bottom.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "tokcost.errors": ("TokcostError", "UsageError"), "tokcost.adapters": ("get_tokenizer",),
    "tokcost.app.count": ("count", "CountRequest", "tokenize", "TokenizeRequest", "count_chat",
                          "ChatRequest"), "tokcost.app.compare": ("compare", "CompareRequest"),
    "tokcost.app.price": ("price", "PriceRequest"),
    "tokcost.app.memory": ("estimate_memory", "KvRequest"),
    "tokcost.app.simulate": ("simulate", "SimulationRequest"),
    "tokcost.app.quality": ("kvmem_quality", "QualityRequest"),
    "tokcost.app.check": ("check", "CheckRequest"),
    "tokcost.app.bpe": ("train_bpe", "BPETrainRequest", "encode_bpe", "BPEEncodeRequest",
                        "decode_bpe", "BPEDecodeRequest", "inspect_bpe", "BPEInspectRequest",
                        "export_bpe", "BPEExportRequest"),
    "tokcost.app.sweep": ("sweep_bpe", "BPESweepRequest"),
    "tokcost.app.generate": ("generate", "GenerateRequest"),
    "tokcost.app.attention": ("attention", "AttentionRequest"),
    "tokcost.app.models": ("list_models", "list_gpus", "show_model", "validate_catalog",
                           "sync_prices", "SyncPricesRequest", "import_model",
                           "ImportModelRequest")}

_API: dict[str, str] = {name: module for module, names in _EXPORTS.items() for name in names}

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
    from tokcost.adapters import get_tokenizer as get_tokenizer
    from tokcost.app.attention import *  # noqa: F403
    from tokcost.app.bpe import *  # noqa: F403
    from tokcost.app.check import *  # noqa: F403
    from tokcost.app.compare import *  # noqa: F403
    from tokcost.app.count import *  # noqa: F403
    from tokcost.app.generate import *  # noqa: F403
    from tokcost.app.memory import *  # noqa: F403
    from tokcost.app.models import *  # noqa: F403
    from tokcost.app.price import *  # noqa: F403
    from tokcost.app.quality import *  # noqa: F403
    from tokcost.app.simulate import *  # noqa: F403
    from tokcost.app.sweep import *  # noqa: F403
    from tokcost.errors import TokcostError as TokcostError
    from tokcost.errors import UsageError as UsageError
