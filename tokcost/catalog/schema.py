"""The catalog's typed objects: frozen dataclasses, one per YAML mapping (DESIGN §4).

Loading and validation live in ``tokcost.catalog.loader``; these classes only hold
already-checked values, so every consumer (kvmem, price, count --chat) can trust them.
Prices are ``Decimal`` (USD per million tokens) so money never goes through floats.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

from tokcost.errors import MissingDependency

LayerKind = Literal["full", "sliding", "linear", "mla"]
AttentionType = Literal["full", "sliding", "mla", "hybrid"]


@dataclass(frozen=True)
class ChatOverhead:
    """Tokens a chat template adds around messages (OpenAI cookbook: 3 / +1 / +3)."""

    per_message: int
    per_name: int
    reply_priming: int


@dataclass(frozen=True)
class Attention:
    """How layers attend, which decides what the KV cache holds per token.

    ``pattern`` repeats over the layers from layer 0: Gemma-2's ``(sliding, full)``
    makes layers 0, 2, 4... sliding-window and 1, 3, 5... global.
    """

    type: AttentionType = "full"
    pattern: tuple[LayerKind, ...] = ("full",)
    window: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
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
class Architecture:
    """Shape numbers from the model's own config.json (head_dim as stated there)."""

    layers: int
    hidden_size: int | None = None
    attention_heads: int | None = None
    kv_heads: int | None = None
    head_dim: int | None = None
    vocab_size: int | None = None
    params_total: int | None = None
    params_active: int | None = None  # MoE: parameters used per token
    weights_dtype: str = "bf16"
    weights_bytes: int | None = None  # checkpoint size when dtype x params is not exact
    attention: Attention = field(default_factory=Attention)
    source: str | None = None

    @property
    def is_moe(self) -> bool:
        return self.params_active is not None and self.params_active != self.params_total


@dataclass(frozen=True)
class PriceTier:
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


@dataclass(frozen=True)
class Pricing:
    """USD per million tokens."""

    input: Decimal
    output: Decimal
    cached_input: Decimal | None = None
    cache_write: Decimal | None = None
    reasoning: Decimal | None = None  # None: reasoning tokens are billed as output
    batch_discount: Decimal | None = None  # fraction off, e.g. 0.5 for the Batch API
    batch_discount_cache: bool = False  # does the discount also cover cache reads/writes?
    tiers: tuple[PriceTier, ...] = ()
    as_of: _dt.date | None = None
    source: str | None = None


@dataclass(frozen=True)
class ModelEntry:
    """One model of the catalog. Everything but ``id`` is optional."""

    id: str
    aliases: tuple[str, ...] = ()
    provider: str | None = None
    family: str | None = None
    # The spec as written; may hold a {package} placeholder (see ``tokenizer``).
    tokenizer_spec: str | None = None
    tokenizer_exact: bool = True
    tokenizer_note: str | None = None
    tokenizer_package: str | None = None  # pip extra that ships the tokenizer file
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


# Placeholder -> (pip distribution, tokcost extra) for tokenizer files inside packages.
PACKAGE_PLACEHOLDERS: dict[str, tuple[str, str]] = {
    "mistral_common": ("mistral-common", "mistral"),
    "tokcost": ("tokcost", "test"),  # files shipped with tokcost itself (tiny-ref)
}


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


@dataclass(frozen=True)
class Gpu:
    """An accelerator: memory in bytes, HBM bandwidth in bytes/s, dense peak FLOP/s."""

    name: str
    memory_bytes: int
    bandwidth_bytes_per_s: int
    aliases: tuple[str, ...] = ()
    bf16_flops: float | None = None
    fp8_flops: float | None = None
    source: str | None = None
