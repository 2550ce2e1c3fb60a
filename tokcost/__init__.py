"""tokcost: count tokens, price them, and size the KV cache that serves them.

This is the public API of tokcost: the application layer's use cases (one
function per command, each returning a frozen result whose ``to_dict()`` is the
command's ``--json`` document) and the few building blocks they are made of.
The CLI imports only what is re-exported here, and ``tokcost.errors``.

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

__version__ = "0.2.0"

# module -> the public names it defines (each module's __all__; a test keeps them equal).
# One line per module, so use cases can be added without touching the others.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "tokcost.adapters": ("Tokenizer", "get_tokenizer"),
    "tokcost.errors": ("TokcostError",),
    "tokcost.tokenizers": ("TokenizerSelection",),
    "tokcost.counting": ("Inputs",),
    "tokcost.runner": ("RunConfig",),
    "tokcost.app.count": (
        "count", "CountRequest", "CountResult", "tokenize", "tokenize_paths", "TokenizeRequest",
        "TokenizeResult", "TokensResult", "count_chat", "ChatRequest", "ChatResult",
    ),
    "tokcost.catalog": ("load_catalog", "Catalog"),
    "tokcost.app.memory": ("estimate_memory", "KvRequest", "KvResult"),
    "tokcost.app.simulate": ("simulate", "SimulationRequest", "SimulationResult"),
    "tokcost.app.quality": ("kvmem_quality", "QualityRequest", "QualityResult"),
    "tokcost.app.check": ("check", "CheckRequest", "CheckResult", "AdhocBudget", "Growth"),
    "tokcost.app.price": ("price", "PriceRequest", "PriceResult"),
    "tokcost.app.compare": ("compare", "CompareRequest", "CompareResult", "Corpus"),
    "tokcost.app.sweep": ("sweep_bpe", "BPESweepRequest"),
    "tokcost.app.bpe": (
        "train_bpe", "BPETrainRequest", "TrainerConfig", "encode_bpe", "BPEEncodeRequest",
        "decode_bpe", "BPEDecodeRequest", "inspect_bpe", "BPEInspectRequest", "export_bpe",
        "BPEExportRequest",
    ),
    "tokcost.app.generate": ("generate", "GenerateRequest", "GenerateResult"),
    "tokcost.app.attention": ("attention", "AttentionRequest", "AttentionResult"),
    "tokcost.app.models": (
        "list_models", "list_gpus", "show_model", "validate_catalog", "sync_prices",
        "import_model", "SyncPricesRequest", "ImportModelRequest", "ModelList", "GpuList",
        "ModelDetails", "CatalogCheck", "PriceSync", "ModelImport",
    ),
}

# public name -> module that defines it
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
    from tokcost.adapters import Tokenizer as Tokenizer
    from tokcost.adapters import get_tokenizer as get_tokenizer
    from tokcost.app.attention import AttentionRequest as AttentionRequest
    from tokcost.app.attention import AttentionResult as AttentionResult
    from tokcost.app.attention import attention as attention
    from tokcost.app.bpe import BPEDecodeRequest as BPEDecodeRequest
    from tokcost.app.bpe import BPEEncodeRequest as BPEEncodeRequest
    from tokcost.app.bpe import BPEExportRequest as BPEExportRequest
    from tokcost.app.bpe import BPEInspectRequest as BPEInspectRequest
    from tokcost.app.bpe import BPETrainRequest as BPETrainRequest
    from tokcost.app.bpe import TrainerConfig as TrainerConfig
    from tokcost.app.bpe import decode_bpe as decode_bpe
    from tokcost.app.bpe import encode_bpe as encode_bpe
    from tokcost.app.bpe import export_bpe as export_bpe
    from tokcost.app.bpe import inspect_bpe as inspect_bpe
    from tokcost.app.bpe import train_bpe as train_bpe
    from tokcost.app.check import AdhocBudget as AdhocBudget
    from tokcost.app.check import CheckRequest as CheckRequest
    from tokcost.app.check import CheckResult as CheckResult
    from tokcost.app.check import Growth as Growth
    from tokcost.app.check import check as check
    from tokcost.app.compare import CompareRequest as CompareRequest
    from tokcost.app.compare import CompareResult as CompareResult
    from tokcost.app.compare import Corpus as Corpus
    from tokcost.app.compare import compare as compare
    from tokcost.app.count import ChatRequest as ChatRequest
    from tokcost.app.count import ChatResult as ChatResult
    from tokcost.app.count import CountRequest as CountRequest
    from tokcost.app.count import CountResult as CountResult
    from tokcost.app.count import TokenizeRequest as TokenizeRequest
    from tokcost.app.count import TokenizeResult as TokenizeResult
    from tokcost.app.count import TokensResult as TokensResult
    from tokcost.app.count import count as count
    from tokcost.app.count import count_chat as count_chat
    from tokcost.app.count import tokenize as tokenize
    from tokcost.app.count import tokenize_paths as tokenize_paths
    from tokcost.app.generate import GenerateRequest as GenerateRequest
    from tokcost.app.generate import GenerateResult as GenerateResult
    from tokcost.app.generate import generate as generate
    from tokcost.app.memory import KvRequest as KvRequest
    from tokcost.app.memory import KvResult as KvResult
    from tokcost.app.memory import estimate_memory as estimate_memory
    from tokcost.app.models import CatalogCheck as CatalogCheck
    from tokcost.app.models import GpuList as GpuList
    from tokcost.app.models import ImportModelRequest as ImportModelRequest
    from tokcost.app.models import ModelDetails as ModelDetails
    from tokcost.app.models import ModelImport as ModelImport
    from tokcost.app.models import ModelList as ModelList
    from tokcost.app.models import PriceSync as PriceSync
    from tokcost.app.models import SyncPricesRequest as SyncPricesRequest
    from tokcost.app.models import import_model as import_model
    from tokcost.app.models import list_gpus as list_gpus
    from tokcost.app.models import list_models as list_models
    from tokcost.app.models import show_model as show_model
    from tokcost.app.models import sync_prices as sync_prices
    from tokcost.app.models import validate_catalog as validate_catalog
    from tokcost.app.price import PriceRequest as PriceRequest
    from tokcost.app.price import PriceResult as PriceResult
    from tokcost.app.price import price as price
    from tokcost.app.quality import QualityRequest as QualityRequest
    from tokcost.app.quality import QualityResult as QualityResult
    from tokcost.app.quality import kvmem_quality as kvmem_quality
    from tokcost.app.simulate import SimulationRequest as SimulationRequest
    from tokcost.app.simulate import SimulationResult as SimulationResult
    from tokcost.app.simulate import simulate as simulate
    from tokcost.app.sweep import BPESweepRequest as BPESweepRequest
    from tokcost.app.sweep import sweep_bpe as sweep_bpe
    from tokcost.catalog import Catalog as Catalog
    from tokcost.catalog import load_catalog as load_catalog
    from tokcost.counting import Inputs as Inputs
    from tokcost.errors import TokcostError as TokcostError
    from tokcost.runner import RunConfig as RunConfig
    from tokcost.tokenizers import TokenizerSelection as TokenizerSelection
