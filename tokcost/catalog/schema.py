"""The catalog's declaration: one frozen dataclass per YAML mapping (DESIGN §4).

Each field is declared here once. Its annotation says how it is written in
``models.yaml`` and what is expected (the markers of ``tokcost.catalog.fields``);
from it come the validator, the JSON Schema shipped in ``tokcost/schemas/``, these
typed objects and their ``to_dict()`` (``tokcost.show_model``). Every consumer
(memory, pricing, chat counting) can trust the values. Prices are ``Decimal`` (USD
per million tokens) so money never goes through floats.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Annotated, Any, ClassVar, Literal

from tokcost.catalog.fields import (
    Choice,
    Count,
    Day,
    Doc,
    Flag,
    Flops,
    Items,
    Key,
    Number,
    PackagePath,
    Params,
    PathKey,
    Record,
    Required,
    Show,
    Size,
    Strings,
    Text,
)
from tokcost.errors import MissingDependency
from tokcost.units import WEIGHT_DTYPE_BITS

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


def _tokens() -> Count:
    return Count(cap=MAX_TOKENS, unit="tokens")


def _template() -> Count:
    return Count(minimum=0, cap=MAX_TEMPLATE_TOKENS, unit="tokens")


def _width() -> Count:
    return Count(cap=MAX_WIDTH)


_PRICE = Number("a number >= 0 (USD per million tokens)", cap=MAX_PRICE,
                cap_text=f"{MAX_PRICE:,} (USD per million tokens)")
_PRICE_NEEDED = Required("expected a price (USD per million tokens); omit pricing if unknown")
_LAYER_KINDS = ("full", "sliding", "linear")


@dataclass(frozen=True)
class ChatOverhead(Record):
    """Tokens a chat template adds around messages (OpenAI cookbook: 3 / +1 / +3)."""

    per_message: Annotated[int, _template(), Doc("tokens around each message")] = 0
    per_name: Annotated[int, _template(), Doc("extra tokens when a message has a name")] = 0
    reply_priming: Annotated[int, _template(), Doc("tokens that open the reply")] = 0


@dataclass(frozen=True)
class Attention(Record):
    """How layers attend, which decides what the KV cache holds per token.

    ``pattern`` repeats over the layers from layer 0: Gemma-2's ``(sliding, full)``
    makes layers 0, 2, 4... sliding-window and 1, 3, 5... global.
    """

    type: Annotated[
        AttentionType, Choice(("full", "sliding", "mla", "hybrid")),
        Doc("full, sliding window, multi-head latent (MLA) or hybrid with linear layers"),
    ] = "full"
    pattern: Annotated[
        tuple[LayerKind, ...],
        Strings(f"a list of layer kinds ({', '.join(_LAYER_KINDS)})", nonempty=True,
                single=False, choices=_LAYER_KINDS),
        Doc("layer kinds repeated from layer 0 (default: all of the type's kind)"),
    ] = ("full",)
    window: Annotated[int | None, _tokens(), Doc("sliding window in tokens")] = None
    kv_lora_rank: Annotated[int | None, _width(), Doc("MLA: compressed KV rank")] = None
    qk_rope_head_dim: Annotated[int | None, _width(), Doc("MLA: rotary head dimension")] = None
    # Fixed recurrent state of one linear-attention/SSM layer for one sequence, in
    # elements of the state dtype (independent of the sequence length).
    linear_state_elements: Annotated[
        int | None, Count(cap=MAX_STATE_ELEMENTS, unit="elements"),
        Doc("fixed state of one linear layer per sequence, in elements"),
    ] = None

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

    @classmethod
    def _build(cls, values: dict[str, Any]) -> Attention:
        if "pattern" not in values:  # a sliding model slides on every layer unless told
            values["pattern"] = ("sliding",) if values.get("type") == "sliding" else ("full",)
        return cls(**values)

    def _problems(self) -> Iterable[tuple[PathKey, str]]:
        # The first rule broken is the one to fix: the others may follow from it.
        kind, pattern = self.type, self.pattern
        missing = [k for k in ("kv_lora_rank", "qk_rope_head_dim") if getattr(self, k) is None]
        if kind == "mla" and missing:
            yield (), f"type mla needs {' and '.join(missing)}"
        elif "sliding" in pattern and self.window is None:
            yield ("window",), "expected the sliding window in tokens (layers use sliding)"
        elif kind == "full" and pattern != ("full",):
            yield ("pattern",), "type full has only full layers; use type sliding or hybrid"
        elif "linear" in pattern and self.linear_state_elements is None:
            yield (
                ("linear_state_elements",),
                "expected the fixed state size (elements per linear layer per sequence)",
            )
        elif kind == "hybrid" and "linear" not in pattern:
            yield ("pattern",), "type hybrid needs at least one 'linear' layer in the pattern"


@dataclass(frozen=True)
class Architecture(Record):
    """Shape numbers from the model's own config.json (head_dim as stated there)."""

    layers: Annotated[
        int, Count(cap=MAX_LAYERS, unit="layers"),
        Required("expected the number of layers (num_hidden_layers)"),
        Doc("number of layers (num_hidden_layers)"),
    ]
    hidden_size: Annotated[int | None, _width()] = None
    attention_heads: Annotated[int | None, _width(), Doc("query heads")] = None
    kv_heads: Annotated[int | None, _width(), Doc("key/value heads (GQA)")] = None
    head_dim: Annotated[int | None, _width()] = None
    vocab_size: Annotated[int | None, Count(cap=MAX_VOCAB, unit="tokens")] = None
    # One key in YAML (`params: 8.03B` or `params: {total, active}`), two attributes
    # here: the Params kind reads both as (total, active) and _build splits them.
    params_total: Annotated[
        int | None, Key("params"), Params(cap=MAX_PARAMS), Doc("parameters (MoE: total and active)")
    ] = None
    params_active: Annotated[int | None, Key(None)] = None  # MoE: parameters used per token
    weights_dtype: Annotated[
        str, Choice(tuple(WEIGHT_DTYPE_BITS), lower=True, hint=True), Doc("dtype of the weights")
    ] = "bf16"
    weights_bytes: Annotated[
        int | None, Size(cap=MAX_BYTES, cap_text="1 PiB"), Show(hidden=True),
        Doc("checkpoint size, when dtype x params is not exact"),
    ] = None
    # Mixture of experts: routed experts per MoE layer and how many each token uses
    # (config.json's num_local_experts / n_routed_experts / num_experts and
    # num_experts_per_tok). A decode batch touches more distinct experts than one token.
    experts: Annotated[
        int | None, Count(cap=MAX_EXPERTS, unit="experts"), Doc("MoE: routed experts per layer")
    ] = None
    experts_per_token: Annotated[
        int | None, Count(cap=MAX_EXPERTS, unit="experts"), Doc("MoE: experts each token uses")
    ] = None
    expert_weights_bytes: Annotated[
        int | None, Size(cap=MAX_BYTES, cap_text="1 PiB"), Show(hidden=True),
        Doc("bytes of all routed experts' weights (e.g. mxfp4 experts beside bf16 attention)"),
    ] = None
    attention: Attention = field(default_factory=Attention)
    source: Annotated[str | None, Text(), Doc("the config.json the numbers come from")] = None

    @property
    def is_moe(self) -> bool:
        return self.params_active is not None and self.params_active != self.params_total

    @classmethod
    def _build(cls, values: dict[str, Any]) -> Architecture:
        if "params_total" in values:
            values["params_total"], values["params_active"] = values["params_total"]
        return cls(**values)

    def _problems(self) -> Iterable[tuple[PathKey, str]]:
        kv, heads = self.kv_heads, self.attention_heads
        if kv is not None and heads is not None and heads % kv:
            yield ("kv_heads",), f"expected a divisor of attention_heads ({heads}), got {kv}"


@dataclass(frozen=True, kw_only=True)
class PriceTier(Record):
    """Prices that apply once a request's prompt exceeds ``above_input_tokens``.

    ``applies_to`` is ``"all"`` when the whole request is billed at the tier price
    (Gemini 2.5 Pro, Claude Sonnet 1M context: a 300k-token prompt is billed entirely
    at the higher rate), ``"excess"`` when only the tokens above the threshold are.
    """

    above_input_tokens: Annotated[int, _tokens(), Doc("the prompt size where the tier starts")]
    applies_to: Annotated[
        Literal["all", "excess"],
        Choice(("all", "excess"), "'all' (the whole request is billed at the tier price) or "
               "'excess' (only tokens above the threshold)"),
    ]
    input: Annotated[Decimal | None, _PRICE, Show(omit_none=True)] = None
    cached_input: Annotated[Decimal | None, _PRICE, Show(omit_none=True)] = None
    cache_write: Annotated[Decimal | None, _PRICE, Show(omit_none=True)] = None
    output: Annotated[Decimal | None, _PRICE, Show(omit_none=True)] = None
    reasoning: Annotated[Decimal | None, _PRICE, Show(omit_none=True)] = None


@dataclass(frozen=True, kw_only=True)
class Pricing(Record):
    """USD per million tokens."""

    input: Annotated[Decimal, _PRICE, _PRICE_NEEDED, Doc("prompt tokens")]
    cached_input: Annotated[Decimal | None, _PRICE, Doc("prompt tokens read from the cache")] = None
    cache_write: Annotated[Decimal | None, _PRICE, Doc("prompt tokens written to the cache")] = None
    output: Annotated[Decimal, _PRICE, _PRICE_NEEDED, Doc("output tokens")]
    reasoning: Annotated[
        Decimal | None, _PRICE, Doc("reasoning tokens (default: billed as output)")
    ] = None
    batch_discount: Annotated[
        Decimal | None, Number("a fraction in [0, 1) such as 0.5", below=Decimal(1)),
        Doc("fraction off with the Batch API"),
    ] = None
    batch_discount_cache: Annotated[
        bool, Flag(), Doc("does the batch discount also cover cache reads/writes?")
    ] = False
    tiers: Annotated[
        tuple[PriceTier, ...], Items("a list of tiers"), Doc("long-context price tiers")
    ] = ()
    as_of: Annotated[_dt.date | None, Day(), Doc("when the prices were checked")] = None
    source: Annotated[str | None, Text(), Doc("the price page")] = None

    @classmethod
    def _build(cls, values: dict[str, Any]) -> Pricing:
        tiers = values.get("tiers", ())
        values["tiers"] = tuple(sorted(tiers, key=lambda t: t.above_input_tokens))
        return cls(**values)


@dataclass(frozen=True)
class ModelEntry(Record):
    """One model of the catalog. Everything but ``id`` is optional."""

    # tokenizer_package named the pip extra shipping a tokenizer file; the
    # {mistral_common} placeholder in the spec says it now.
    retired_keys: ClassVar[frozenset[str]] = frozenset({"tokenizer_package"})

    id: Annotated[str, Text(), Doc("the model id")]
    aliases: Annotated[tuple[str, ...], Strings(), Doc("other names that resolve here")] = ()
    provider: Annotated[str | None, Text()] = None
    family: Annotated[str | None, Text()] = None
    # The spec as written; may hold a {package} placeholder (see ``tokenizer``).
    tokenizer_spec: Annotated[
        str | None, Key("tokenizer"), Show("tokenizer"),
        PackagePath(tuple(PACKAGE_PLACEHOLDERS), spec=True),
        Doc("tokenizer spec, e.g. tiktoken:o200k_base; {mistral_common} names that package"),
    ] = None
    tokenizer_exact: Annotated[
        bool, Flag(), Doc("false when the tokenizer is a proxy (counts approximate)")
    ] = True
    tokenizer_note: Annotated[str | None, Text(), Doc("why the tokenizer is a proxy")] = None
    context_window: Annotated[int | None, _tokens(), Doc("prompt + output tokens")] = None
    max_output_tokens: Annotated[int | None, _tokens()] = None
    chat: Annotated[ChatOverhead | None, Doc("tokens a chat template adds")] = None
    architecture: Architecture | None = None
    pricing: Pricing | None = None
    prefixes: Annotated[
        tuple[str, ...], Strings(), Show(hidden=True),
        Doc("dated ids starting with these resolve here"),
    ] = ()
    source: Annotated[str | None, Text(), Doc("the model's page")] = None
    notes: Annotated[str | None, Text()] = None
    weights_spec: Annotated[
        str | None, Key("weights"), Show("weights"), PackagePath(tuple(PACKAGE_PLACEHOLDERS)),
        Doc("reference weights file (tokcost generate)"),
    ] = None

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


# NVIDIA (Volta..Blackwell) and AMD Instinct (CDNA) generations, oldest first.
GPU_ARCHITECTURES: tuple[str, ...] = (
    "volta", "turing", "ampere", "ada", "hopper", "blackwell", "cdna2", "cdna3", "cdna4",
)


@dataclass(frozen=True, kw_only=True)
class Gpu(Record):
    """An accelerator: memory in bytes, HBM bandwidth in bytes/s, dense peak FLOP/s."""

    name: Annotated[str, Text(), Doc("the GPU's name")]
    aliases: Annotated[tuple[str, ...], Strings()] = ()
    memory_bytes: Annotated[
        int, Key("memory"), Size(cap=MAX_BYTES, cap_text="1 PiB"),
        Required("expected the GPU's memory (e.g. 80GiB)"),
        Doc("memory, e.g. 80GiB"),
    ]
    bandwidth_bytes_per_s: Annotated[
        int, Key("bandwidth"), Size(cap=MAX_BANDWIDTH, cap_text="1PB per second"),
        Required("expected the GPU's bandwidth (e.g. 3.35TB per second)"),
        Doc("HBM bandwidth per second, e.g. 3.35TB"),
    ]
    bf16_flops: Annotated[float | None, Flops(cap=MAX_FLOPS), Doc("dense bf16 peak FLOP/s")] = None
    fp8_flops: Annotated[float | None, Flops(cap=MAX_FLOPS), Doc("dense fp8 peak FLOP/s")] = None
    # The engines pick attention kernels (and with them KV block sizes) by GPU
    # generation: vLLM's FlashMLA needs 64-token blocks on Hopper, CUTLASS MLA 128 on
    # Blackwell (vllm/v1/attention/backends/mla/).
    architecture: Annotated[
        str | None, Choice(GPU_ARCHITECTURES, lower=True, hint=True),
        Doc("GPU generation: " + ", ".join(GPU_ARCHITECTURES)),
    ] = None
    source: Annotated[str | None, Text()] = None


@dataclass(frozen=True, kw_only=True)
class CatalogDocument(Record):
    """A catalog file (models.yaml): models and GPUs."""

    version: Annotated[
        int, Choice((SCHEMA_VERSION,), f"catalog schema version {SCHEMA_VERSION}")
    ] = SCHEMA_VERSION
    extends: Annotated[
        str | None, Choice(("shipped",), "'shipped' (add to the shipped catalog)"),
        Doc("'shipped': add these models to the shipped catalog instead of replacing it"),
    ] = None
    models: Annotated[tuple[ModelEntry, ...], Items("a list of model entries")] = ()
    gpus: Annotated[tuple[Gpu, ...], Items("a list of GPUs")] = ()
