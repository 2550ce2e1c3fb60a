"""The catalog's typed objects: one frozen dataclass per mapping of models.yaml (DESIGN §4).

These are what the library uses: light to import (the standard library only), since
every command reads a catalog. ``tokcost.catalog.document`` (pydantic, imported only to
check a file) validates a file and builds them; every value here is already checked.
Prices are ``Decimal`` (USD per million tokens), so money never goes through floats.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, ClassVar, Literal

from tokcost.errors import MissingDependency

SCHEMA_VERSION = 1

LayerKind = Literal["full", "sliding", "linear", "mla"]
AttentionType = Literal["full", "sliding", "mla", "hybrid"]

# Placeholder -> (pip distribution, tokcost extra) for tokenizer files inside packages.
PACKAGE_PLACEHOLDERS: dict[str, tuple[str, str]] = {
    "mistral_common": ("mistral-common", "mistral"),
    "tokcost": ("tokcost", "test"),  # files shipped with tokcost itself (tiny-ref)
}

# Sanity bounds: far beyond every real model and GPU, so only a typo (a missing
# unit, an extra exponent: `context_window: 1e30`) meets them. Without them such a
# value validates and every estimate made from it is nonsense.
MAX_TOKENS = 10**9  # context windows, outputs, sliding windows, tier thresholds
MAX_TEMPLATE_TOKENS = 10**4  # a chat template's tokens around one message
MAX_LAYERS = 10**4
MAX_WIDTH = 10**6  # hidden size, heads, head dim, MLA ranks
MAX_VOCAB = 10**8
MAX_PARAMS = 10**15
MAX_STATE_ELEMENTS = 10**12  # one linear-attention layer's state per sequence
MAX_EXPERTS = 10**5  # routed experts per MoE layer (DeepSeek-V3: 256)
MAX_PRICE = Decimal(10**6)  # USD per million tokens
MAX_BYTES = 2**50  # 1 PiB: a GPU's memory, a checkpoint
MAX_BANDWIDTH = 10**15  # 1 PB/s
MAX_FLOPS = 1e18

# NVIDIA (Volta..Blackwell) and AMD Instinct (CDNA) generations, oldest first.
GPU_ARCHITECTURES: tuple[str, ...] = (
    "volta", "turing", "ampere", "ada", "hopper", "blackwell", "cdna2", "cdna3", "cdna4",
)


class Record:
    """``to_dict()``, the JSON form (``tokcost models show --json``): prices as exact
    strings, dates ISO, each field under its YAML key (``shown``; None: left out)."""

    shown: ClassVar[Mapping[str, str | None]] = {}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            key = self.shown.get(f.name, f.name)
            if key is not None:
                out[key] = jsonable(getattr(self, f.name))
        return out


def jsonable(value: Any) -> Any:
    """A value as JSON shows it: ``Decimal('2.50')`` -> ``'2.5'``, tuples as lists."""
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, Decimal):
        return f"{value.normalize():f}"
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, tuple):
        return [jsonable(v) for v in value]
    return value


@dataclass(frozen=True)
class ChatOverhead(Record):
    """Tokens a chat template adds around messages (OpenAI cookbook: 3 / +1 / +3)."""

    per_message: int = 0
    per_name: int = 0
    reply_priming: int = 0


@dataclass(frozen=True)
class Attention(Record):
    """How layers attend, which decides what the KV cache holds per token.

    ``pattern`` repeats over the layers from layer 0: Gemma-2's ``(sliding, full)``
    makes layers 0, 2, 4... sliding-window and 1, 3, 5... global.
    """

    type: AttentionType = "full"
    pattern: tuple[LayerKind, ...] = ("full",)
    window: int | None = None
    kv_lora_rank: int | None = None  # MLA: the compressed KV rank
    qk_rope_head_dim: int | None = None  # MLA: the rotary head dimension
    # Fixed recurrent state of one linear-attention/SSM layer for one sequence, in
    # elements of the state dtype (independent of the sequence length).
    linear_state_elements: int | None = None

    def layer_kinds(self, layers: int) -> tuple[LayerKind, ...]:
        """Kind of each of ``layers`` layers.

        >>> Attention("sliding", ("sliding", "full"), 4096).layer_kinds(4)
        ('sliding', 'full', 'sliding', 'full')
        """
        if self.type == "mla":
            mla: LayerKind = "mla"
            return (mla,) * layers
        n = len(self.pattern)
        return tuple(self.pattern[i % n] for i in range(layers))


@dataclass(frozen=True)
class Architecture(Record):
    """Shape numbers from the model's own config.json (head_dim as stated there)."""

    shown: ClassVar[Mapping[str, str | None]] = {"weights_bytes": None,
                                                 "expert_weights_bytes": None}

    layers: int
    hidden_size: int | None = None
    attention_heads: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    vocab_size: int | None = None
    params_total: int | None = None
    params_active: int | None = None  # MoE: parameters used per token
    weights_dtype: str = "bf16"
    weights_bytes: int | None = None  # the checkpoint's size, when dtype x params is not exact
    # Mixture of experts: routed experts per MoE layer and how many each token uses. A
    # decode batch touches more distinct experts than one token.
    experts: int | None = None
    experts_per_token: int | None = None
    expert_weights_bytes: int | None = None  # all routed experts (mxfp4 beside bf16...)
    attention: Attention = field(default_factory=Attention)
    source: str | None = None  # the config.json the numbers come from

    @property
    def is_moe(self) -> bool:
        return self.params_active is not None and self.params_active != self.params_total


@dataclass(frozen=True, kw_only=True)
class PriceTier(Record):
    """Prices that apply once a request's prompt exceeds ``above_input_tokens``.

    ``applies_to`` is ``"all"`` when the whole request is billed at the tier price
    (Gemini 2.5 Pro, Claude Sonnet 1M context: a 300k-token prompt is billed entirely
    at the higher rate), ``"excess"`` when only the tokens above the threshold are.
    """

    above_input_tokens: int
    applies_to: Literal["all", "excess"]
    input: Decimal | None = None
    cached_input: Decimal | None = None
    cache_write: Decimal | None = None
    output: Decimal | None = None
    reasoning: Decimal | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in super().to_dict().items() if v is not None}


@dataclass(frozen=True, kw_only=True)
class Pricing(Record):
    """USD per million tokens; ``tiers`` sorted by threshold."""

    input: Decimal
    cached_input: Decimal | None = None
    cache_write: Decimal | None = None
    output: Decimal
    reasoning: Decimal | None = None  # None: billed as output
    batch_discount: Decimal | None = None  # the fraction off with the Batch API
    batch_discount_cache: bool = False  # does it cover cache reads/writes too?
    tiers: tuple[PriceTier, ...] = ()
    as_of: _dt.date | None = None
    source: str | None = None


@dataclass(frozen=True)
class ModelEntry(Record):
    """One model of the catalog. Everything but ``id`` is optional."""

    shown: ClassVar[Mapping[str, str | None]] = {
        "tokenizer_spec": "tokenizer", "weights_spec": "weights", "prefixes": None}

    id: str
    aliases: tuple[str, ...] = ()
    provider: str | None = None
    family: str | None = None
    # The spec as written; may hold a {package} placeholder (see ``tokenizer``).
    tokenizer_spec: str | None = None
    tokenizer_exact: bool = True  # False: a proxy, counts approximate
    tokenizer_note: str | None = None
    context_window: int | None = None
    max_output_tokens: int | None = None
    chat: ChatOverhead | None = None
    architecture: Architecture | None = None
    pricing: Pricing | None = None
    prefixes: tuple[str, ...] = ()  # dated ids starting with these resolve here
    source: str | None = None
    notes: str | None = None
    weights_spec: str | None = None  # reference weights file (tokcost generate)

    @property
    def weights(self) -> str | None:
        """Path of the model's weights file, placeholders such as ``{tokcost}`` expanded."""
        return expand_package_paths(self.weights_spec, self.id)

    @property
    def tokenizer(self) -> str | None:
        """The tokenizer spec, with package placeholders expanded.

        ``sp:{mistral_common}/data/tokenizer.model.v1`` names a file shipped inside
        the mistral-common package; when that package is not installed this raises
        ``MissingDependency`` naming the pip extra, instead of a file-not-found.
        """
        return expand_package_paths(self.tokenizer_spec, self.id)


def expand_package_paths(spec: str | None, model_id: str) -> str | None:
    """Replace ``{package}`` with the installed package's folder (no import)."""
    if spec is None or "{" not in spec:
        return spec
    import importlib.util

    for module, (dist, extra) in PACKAGE_PLACEHOLDERS.items():
        token = "{" + module + "}"
        if token not in spec:
            continue
        found = importlib.util.find_spec(module)
        folders = list(found.submodule_search_locations or []) if found else []
        if not folders:
            raise MissingDependency(dist, extra, f"the tokenizer of '{model_id}'")
        spec = spec.replace(token, folders[0])
    return spec


@dataclass(frozen=True, kw_only=True)
class Gpu(Record):
    """An accelerator: memory in bytes, HBM bandwidth in bytes/s, dense peak FLOP/s."""

    name: str
    aliases: tuple[str, ...] = ()
    memory_bytes: int
    bandwidth_bytes_per_s: int
    bf16_flops: float | None = None
    fp8_flops: float | None = None
    # The engines pick attention kernels (and with them KV block sizes) by GPU
    # generation: vLLM's FlashMLA needs 64-token blocks on Hopper, CUTLASS MLA 128 on
    # Blackwell (vllm/v1/attention/backends/mla/).
    architecture: str | None = None
    source: str | None = None


# By name, for the cache of validated files (tokcost.catalog.cache).
RECORDS: dict[str, type[Record]] = {
    c.__name__: c for c in (ChatOverhead, Attention, Architecture, PriceTier, Pricing,
                            ModelEntry, Gpu)}
