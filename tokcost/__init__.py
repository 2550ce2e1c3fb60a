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
    "tokcost.catalog": ("load_catalog", "Catalog", "ModelEntry", "Gpu"),
    "tokcost.units": (
        "parse_size", "parse_count", "parse_context_list", "parse_money", "parse_percent",
        "parse_fraction", "format_bytes",
    ),
    "tokcost.memory": ("estimate_kv", "kv_bytes_per_token", "kv_cache_bytes", "KvDtypeName"),
    "tokcost.memory.roofline": ("DecodeStep", "Prefill"),
    "tokcost.memory.policies": ("PolicyName",),
    "tokcost.memory.simulate": ("compare_policies",),
    "tokcost.app.memory": ("estimate_memory", "KvEstimate", "MemoryEstimate"),
    "tokcost.app.simulate": ("simulate", "SimulationResult"),
    "tokcost.app.quality": ("kvmem_quality", "QualityResult", "QualityRow"),
    "tokcost.plotting.memory": ("plot_memory",),
    "tokcost.plotting.simulate": ("plot_policies",),
    "tokcost.pricing": ("estimate_cost", "format_usd"),
    "tokcost.budget.report": ("format_percent",),
    "tokcost.app.check": ("CheckResult", "CheckRun", "check", "check_many"),
    "tokcost.app.price": ("PriceResult", "price"),
    "tokcost.app.compare": (
        "CompareResult", "CorpusKind", "FloresSplit", "GroupReport", "Measurement", "Meter",
        "Row", "SentencePremiums", "compare",
    ),
    "tokcost.app.sweep": ("sweep_bpe", "BPESweepResult", "BPESweepPoint", "BPE_KNEE_GAIN"),
    "tokcost.app.bpe": (
        "train_bpe", "encode_bpe", "decode_bpe", "inspect_bpe", "export_bpe", "TrainerConfig",
        "PatternName", "ExportFormat", "BPETrainResult", "BPEEncodeResult", "BPEDecodeResult",
        "BPEInspectResult", "BPEMerge", "BPEExportResult", "DEFAULT_MAX_TOKEN_LENGTH",
    ),
    "tokcost.app.generate": (
        "generate", "CacheMode", "GenerateResult", "GenerationStart", "GenerationStep",
        "GeneratedSample", "Candidate", "AttentionFocus", "KVCacheUse", "CacheEvent",
        "PromptText", "decode_prompt",
    ),
    "tokcost.app.attention": ("attention", "AttentionResult", "NotableHead"),
    "tokcost.plotting.attention": ("plot_attention",),
    "tokcost.app.models": (
        "list_models", "list_gpus", "show_model", "validate_catalog", "sync_prices",
        "ModelList", "GpuList", "ModelDetails", "CatalogCheck", "PriceSync", "tokenizer_label",
        "weights_label", "import_model", "ModelImport",
    ),
    "tokcost.app.schemas": ("json_schema", "schema_path", "SchemaDocument"),
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
    from tokcost.app.attention import AttentionResult as AttentionResult
    from tokcost.app.attention import NotableHead as NotableHead
    from tokcost.app.attention import attention as attention
    from tokcost.app.bpe import DEFAULT_MAX_TOKEN_LENGTH as DEFAULT_MAX_TOKEN_LENGTH
    from tokcost.app.bpe import BPEDecodeResult as BPEDecodeResult
    from tokcost.app.bpe import BPEEncodeResult as BPEEncodeResult
    from tokcost.app.bpe import BPEExportResult as BPEExportResult
    from tokcost.app.bpe import BPEInspectResult as BPEInspectResult
    from tokcost.app.bpe import BPEMerge as BPEMerge
    from tokcost.app.bpe import BPETrainResult as BPETrainResult
    from tokcost.app.bpe import ExportFormat as ExportFormat
    from tokcost.app.bpe import PatternName as PatternName
    from tokcost.app.bpe import TrainerConfig as TrainerConfig
    from tokcost.app.bpe import decode_bpe as decode_bpe
    from tokcost.app.bpe import encode_bpe as encode_bpe
    from tokcost.app.bpe import export_bpe as export_bpe
    from tokcost.app.bpe import inspect_bpe as inspect_bpe
    from tokcost.app.bpe import train_bpe as train_bpe
    from tokcost.app.check import CheckResult as CheckResult
    from tokcost.app.check import CheckRun as CheckRun
    from tokcost.app.check import check as check
    from tokcost.app.check import check_many as check_many
    from tokcost.app.compare import CompareResult as CompareResult
    from tokcost.app.compare import CorpusKind as CorpusKind
    from tokcost.app.compare import FloresSplit as FloresSplit
    from tokcost.app.compare import GroupReport as GroupReport
    from tokcost.app.compare import Measurement as Measurement
    from tokcost.app.compare import Meter as Meter
    from tokcost.app.compare import Row as Row
    from tokcost.app.compare import SentencePremiums as SentencePremiums
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
    from tokcost.app.generate import AttentionFocus as AttentionFocus
    from tokcost.app.generate import CacheEvent as CacheEvent
    from tokcost.app.generate import CacheMode as CacheMode
    from tokcost.app.generate import Candidate as Candidate
    from tokcost.app.generate import GeneratedSample as GeneratedSample
    from tokcost.app.generate import GenerateResult as GenerateResult
    from tokcost.app.generate import GenerationStart as GenerationStart
    from tokcost.app.generate import GenerationStep as GenerationStep
    from tokcost.app.generate import KVCacheUse as KVCacheUse
    from tokcost.app.generate import PromptText as PromptText
    from tokcost.app.generate import decode_prompt as decode_prompt
    from tokcost.app.generate import generate as generate
    from tokcost.app.memory import KvEstimate as KvEstimate
    from tokcost.app.memory import MemoryEstimate as MemoryEstimate
    from tokcost.app.memory import estimate_memory as estimate_memory
    from tokcost.app.models import CatalogCheck as CatalogCheck
    from tokcost.app.models import GpuList as GpuList
    from tokcost.app.models import ModelDetails as ModelDetails
    from tokcost.app.models import ModelImport as ModelImport
    from tokcost.app.models import ModelList as ModelList
    from tokcost.app.models import PriceSync as PriceSync
    from tokcost.app.models import import_model as import_model
    from tokcost.app.models import list_gpus as list_gpus
    from tokcost.app.models import list_models as list_models
    from tokcost.app.models import show_model as show_model
    from tokcost.app.models import sync_prices as sync_prices
    from tokcost.app.models import tokenizer_label as tokenizer_label
    from tokcost.app.models import validate_catalog as validate_catalog
    from tokcost.app.models import weights_label as weights_label
    from tokcost.app.price import PriceResult as PriceResult
    from tokcost.app.price import price as price
    from tokcost.app.quality import QualityResult as QualityResult
    from tokcost.app.quality import QualityRow as QualityRow
    from tokcost.app.quality import kvmem_quality as kvmem_quality
    from tokcost.app.schemas import SchemaDocument as SchemaDocument
    from tokcost.app.schemas import json_schema as json_schema
    from tokcost.app.schemas import schema_path as schema_path
    from tokcost.app.simulate import SimulationResult as SimulationResult
    from tokcost.app.simulate import simulate as simulate
    from tokcost.app.sweep import BPE_KNEE_GAIN as BPE_KNEE_GAIN
    from tokcost.app.sweep import BPESweepPoint as BPESweepPoint
    from tokcost.app.sweep import BPESweepResult as BPESweepResult
    from tokcost.app.sweep import sweep_bpe as sweep_bpe
    from tokcost.budget.report import format_percent as format_percent
    from tokcost.catalog import Catalog as Catalog
    from tokcost.catalog import Gpu as Gpu
    from tokcost.catalog import ModelEntry as ModelEntry
    from tokcost.catalog import load_catalog as load_catalog
    from tokcost.counting import Inputs as Inputs
    from tokcost.errors import TokcostError as TokcostError
    from tokcost.memory import KvDtypeName as KvDtypeName
    from tokcost.memory import estimate_kv as estimate_kv
    from tokcost.memory import kv_bytes_per_token as kv_bytes_per_token
    from tokcost.memory import kv_cache_bytes as kv_cache_bytes
    from tokcost.memory.policies import PolicyName as PolicyName
    from tokcost.memory.roofline import DecodeStep as DecodeStep
    from tokcost.memory.roofline import Prefill as Prefill
    from tokcost.memory.simulate import compare_policies as compare_policies
    from tokcost.plotting.attention import plot_attention as plot_attention
    from tokcost.plotting.memory import plot_memory as plot_memory
    from tokcost.plotting.simulate import plot_policies as plot_policies
    from tokcost.pricing import estimate_cost as estimate_cost
    from tokcost.pricing import format_usd as format_usd
    from tokcost.runner import RunConfig as RunConfig
    from tokcost.tokenizers import TokenizerSelection as TokenizerSelection
    from tokcost.units import format_bytes as format_bytes
    from tokcost.units import parse_context_list as parse_context_list
    from tokcost.units import parse_count as parse_count
    from tokcost.units import parse_fraction as parse_fraction
    from tokcost.units import parse_money as parse_money
    from tokcost.units import parse_percent as parse_percent
    from tokcost.units import parse_size as parse_size
