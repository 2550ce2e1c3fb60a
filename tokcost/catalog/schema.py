"""The catalog's typed objects, one frozen dataclass per mapping of models.yaml (DESIGN §4):
standard library only, since every command reads a catalog; prices in ``Decimal``."""

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

# Placeholder -> (pip distribution, tokcost extra) for tokenizer files inside packages
# (tokcost's own: the tiny-ref files).
PACKAGE_PLACEHOLDERS = {"mistral_common": ("mistral-common", "mistral"),
                        "tokcost": ("tokcost", "test")}

# Sanity bounds far beyond every real model and GPU, met only by a typo (`1e30`).
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

# NVIDIA (Volta..Blackwell) and AMD Instinct (CDNA) generations, oldest first. Blackwell is two:
# "blackwell", compute capability 10.x (B200, GB200, B300), and "blackwell-geforce", 12.x
# (GeForce RTX 50xx, RTX PRO, the GB10), whose kernels differ: vLLM and SGLang give 12.x the
# Hopper-side backend order (vllm/platforms/cuda.py _get_backend_priorities keys on major 10).
GPU_ARCHITECTURES = ("volta", "turing", "ampere", "ada", "hopper", "blackwell",
                     "blackwell-geforce", "cdna2", "cdna3", "cdna4")


class Record:
    """``to_dict()``: the JSON form, each field under its YAML key (``shown``; None: left out)."""

    shown: ClassVar[Mapping[str, str | None]] = {}

    def to_dict(self) -> dict[str, Any]:
        fields = dataclasses.fields(self)  # type: ignore[arg-type]
        named = {self.shown.get(f.name, f.name): getattr(self, f.name) for f in fields}
        return {k: jsonable(v) for k, v in named.items() if k is not None}


def jsonable(value: Any) -> Any:
    """A value as JSON shows it: ``Decimal('2.50')`` -> ``'2.5'``, tuples as lists."""
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, Decimal):
        return f"{value.normalize():f}"
    if isinstance(value, _dt.date):
        return value.isoformat()
    return [jsonable(v) for v in value] if isinstance(value, tuple) else value


@dataclass(frozen=True)
class ChatOverhead(Record):
    """Tokens a chat template adds around messages (OpenAI cookbook: 3 / +1 / +3)."""

    per_message: int = 0
    per_name: int = 0
    reply_priming: int = 0


@dataclass(frozen=True)
class Attention(Record):
    """How layers attend; ``pattern`` repeats from layer 0 (Gemma-2's ``(sliding, full)``)."""

    type: AttentionType = "full"
    pattern: tuple[LayerKind, ...] = ("full",)
    window: int | None = None
    kv_lora_rank: int | None = None  # MLA
    qk_rope_head_dim: int | None = None  # MLA
    linear_state_elements: int | None = None  # of one linear layer, for one sequence
    indexer_head_dim: int | None = None  # MLA with DeepSeek-V3.2's sparse-attention indexer
    chunked: bool = False  # Llama-4: sliding layers attend within chunks of ``window`` tokens
    kv_shared_layers: int = 0  # Gemma-3n: the last ones read earlier layers' caches, hold none
    parallel_linear: bool = False  # Falcon-H1: every layer also holds a linear (Mamba) state
    mamba_groups: int | None = None  # Mamba2's n_groups: vLLM pads them to the TP size
    mamba_group_elements: int | None = None  # of the state: one group's conv elements
    # Full-attention layers' own KV shape (Gemma-4's global layers: num_global_key_value_heads
    # with attention_k_eq_v, global_head_dim), and V's head size where it is not K's (MiMo-V2).
    global_kv_heads: int | None = None
    global_head_dim: int | None = None
    v_head_dim: int | None = None
    # Of linear_state_elements, those vLLM keeps in float32 whatever the model dtype (Qwen3.5's
    # SSM state, its config's mamba_ssm_dtype: vllm/model_executor/models/config.py
    # Qwen3_5ForConditionalGenerationConfig, PR #34489).
    linear_fp32_elements: int | None = None
    # A linear layer's convolution channels, the whole model's (vLLM's conv_dim: Gated DeltaNet
    # 2 x key heads x key size + value heads x value size; Mamba2 intermediate + 2 x groups x
    # state): each speculative token adds a row of them to the conv state (mamba_utils.py).
    linear_conv_channels: int | None = None
    # Mamba1/Mamba2 families (vLLM's SupportsMambaPrefixCaching): the chunk their prefix caching
    # aligns blocks to (mamba_chunk_size or chunk_size; Mamba1: 2048, ModelConfig
    # .get_mamba_chunk_size).
    mamba_chunk_size: int | None = None
    # Attention layers of the model's own multi-token-prediction head (num_nextn_predict_layers,
    # mtp_num_hidden_layers): the drafter vLLM's MTP speculative decoding runs and caches.
    mtp_layers: int | None = None
    # Of linear_state_elements, the SSM (temporal) part, the rest being the conv state: Mamba2
    # heads x head size x state, Gated DeltaNet value heads x key size x value size, Mamba1
    # inner x state. SGLang keeps it in mamba_ssm_dtype (float32), the conv part in bf16
    # (configs/mamba_utils.py Mamba2StateShape, Mamba2StateDType).
    linear_ssm_elements: int | None = None
    # The config's own mamba_ssm_dtype (fp32, bf16, fp16), which SGLang reads from v0.5.9, and
    # its mamba_ssm_cache_dtype, which vLLM reads for NemotronH from v0.13 (PR #29978).
    linear_ssm_dtype: str | None = None
    linear_ssm_cache_dtype: str | None = None
    # Layers that hold no cache at all (Nemotron-H's MLP and MoE layers, hybrid_override_pattern
    # '-' and 'E'): not among ``layers``, but llama.cpp's n_layer counts them.
    cacheless_layers: int | None = None

    _LATER: ClassVar[tuple[str, ...]] = ("global_kv_heads", "global_head_dim", "v_head_dim",
                                         "linear_fp32_elements", "linear_conv_channels",
                                         "mamba_chunk_size", "mtp_layers",
                                         "linear_ssm_elements", "linear_ssm_dtype",
                                         "linear_ssm_cache_dtype", "cacheless_layers")

    def to_dict(self) -> dict[str, Any]:
        """Fields added after the first JSON form appear only when set (its keys stay as
        they were for every other model)."""
        return {k: v for k, v in super().to_dict().items() if k not in self._LATER or v}

    def layer_kinds(self, layers: int) -> tuple[LayerKind, ...]:
        """Kind of each of ``layers`` layers."""
        pattern: tuple[LayerKind, ...] = ("mla",) if self.type == "mla" else self.pattern
        return tuple(pattern[i % len(pattern)] for i in range(layers))


@dataclass(frozen=True)
class Architecture(Record):
    """Shape numbers from the model's own config.json (head_dim as stated there)."""

    shown: ClassVar[Mapping[str, str | None]] = {"weights_bytes": None,
                                                 "expert_weights_bytes": None,
                                                 "model_class": None}

    layers: int
    hidden_size: int | None = None
    attention_heads: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    vocab_size: int | None = None
    params_total: int | None = None
    params_active: int | None = None  # MoE: parameters used per token
    weights_dtype: str = "bf16"
    weights_bytes: int | None = None
    experts: int | None = None
    experts_per_token: int | None = None
    expert_weights_bytes: int | None = None
    attention: Attention = field(default_factory=Attention)
    source: str | None = None
    # config.json's architectures[0], the class serving engines look up in their model
    # registries (vLLM's registry.py); None: not known (no refusal by release then)
    model_class: str | None = None

    @property
    def is_moe(self) -> bool:
        return self.params_active is not None and self.params_active != self.params_total


@dataclass(frozen=True, kw_only=True)
class PriceTier(Record):
    """Prices once a request's prompt exceeds ``above_input_tokens``: for the whole request
    (``applies_to`` all: Gemini 2.5 Pro, Claude 1M context) or the tokens above (excess)."""

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
    batch_discount_cache: bool = False
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
    tokenizer_spec: str | None = None  # as written: may hold a {package} placeholder
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
        return expand_package_paths(self.weights_spec, self.id)

    @property
    def tokenizer(self) -> str | None:
        """The spec with ``{package}`` placeholders expanded (or ``MissingDependency``)."""
        return expand_package_paths(self.tokenizer_spec, self.id)


def expand_package_paths(spec: str | None, model_id: str) -> str | None:
    """Replace ``{package}`` with the installed package's folder (no import)."""
    if spec is None or "{" not in spec:
        return spec
    import importlib.util
    for module, (dist, extra) in PACKAGE_PLACEHOLDERS.items():
        token = "{" + module + "}"
        if token in spec:
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
    interconnect_bytes_per_s: int | None = None  # GPU to GPU, both directions (datasheet)
    # The engines' attention kernels, and so KV block sizes, follow it (vLLM's mla/ backends).
    architecture: str | None = None
    source: str | None = None
