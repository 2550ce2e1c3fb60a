"""models.yaml as pydantic models (field names are the YAML keys): what a catalog file may hold,
what each value means, and the shipped JSON Schema (``tokcost/schemas/``)."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from decimal import Decimal
from typing import Annotated, Any, ClassVar

from pydantic import Field, model_validator

from tokcost.catalog import schema as s
from tokcost.catalog import validation as v
from tokcost.catalog.validation import Invalid, count
from tokcost.errors import suggest
from tokcost.units import WEIGHT_DTYPE_BITS

Tokens = Annotated[int, count(cap=s.MAX_TOKENS, unit="tokens")]
Template = Annotated[int, count(0, cap=s.MAX_TEMPLATE_TOKENS, unit="tokens")]
Width = Annotated[int, count(cap=s.MAX_WIDTH)]
Experts = Annotated[int, count(cap=s.MAX_EXPERTS, unit="experts")]
Price = Annotated[Decimal, v.number("a number >= 0 (USD per million tokens)", cap=s.MAX_PRICE,
                                    cap_text=f"{s.MAX_PRICE:,} (USD per million tokens)")]
Bytes = Annotated[int, v.size(cap=s.MAX_BYTES, cap_text="1 PiB")]
Flops = Annotated[float, v.flops(cap=s.MAX_FLOPS)]
Text = Annotated[str, v.text()]
Names = Annotated[tuple[str, ...], v.strings()]
Flag = Annotated[bool, v.FLAG]
_PLACES = tuple(s.PACKAGE_PLACEHOLDERS)
_LAYER_KINDS = ("full", "sliding", "linear")
Kinds = Annotated[tuple[str, ...], v.strings(
    f"a list of layer kinds ({', '.join(_LAYER_KINDS)})", nonempty=True, single=False,
    choices=_LAYER_KINDS)]


class Built(v.Strict):
    """A mapping that becomes the ``schema`` class of its name, YAML keys ``renamed``."""

    renamed: ClassVar[Mapping[str, str]] = {}  # YAML key -> attribute

    def values(self) -> dict[str, Any]:
        return {self.renamed.get(k, k): _built(getattr(self, k)) for k in self.model_fields_set}

    def build(self) -> Any:
        return getattr(s, type(self).__name__)(**self.values())


def _built(value: Any) -> Any:
    if isinstance(value, Built):
        return value.build()
    return tuple(map(_built, value)) if isinstance(value, tuple) else value


class ChatOverhead(Built):
    """Tokens a chat template adds around messages (OpenAI cookbook: 3 / +1 / +3)."""

    per_message: Template = Field(0, description="tokens around each message")
    per_name: Template = Field(0, description="extra tokens when a message has a name")
    reply_priming: Template = Field(0, description="tokens that open the reply")


class Attention(Built):
    """How layers attend, which decides what the KV cache holds per token."""

    type: Annotated[str, v.choice(("full", "sliding", "mla", "hybrid"))] = Field(
        "full", description="full, sliding window, multi-head latent (MLA) or hybrid")
    pattern: Kinds | None = Field(
        None, description="layer kinds repeated from layer 0 (default: all of the type's kind)")
    window: Tokens | None = Field(None, description="sliding window in tokens")
    kv_lora_rank: Width | None = Field(None, description="MLA: compressed KV rank")
    qk_rope_head_dim: Width | None = Field(None, description="MLA: rotary head dimension")
    linear_state_elements: Annotated[int, count(cap=s.MAX_STATE_ELEMENTS, unit="elements")] | \
        None = Field(None, description="fixed state of one linear layer per sequence")
    indexer_head_dim: Width | None = Field(
        None, description="MLA: head size of DeepSeek-V3.2's indexer keys (cached per layer)")
    chunked: bool = Field(False, description="sliding layers attend within fixed chunks of "
                          "window tokens (Llama-4's chunked local attention)")
    kv_shared_layers: Annotated[int, count(0, cap=s.MAX_LAYERS, unit="layers")] = Field(
        0, description="the last layers reuse earlier layers' KV caches and hold none (Gemma-3n)")
    parallel_linear: bool = Field(False, description="every layer runs a linear (Mamba) branch "
                                  "beside its attention and holds both (Falcon-H1)")
    mamba_groups: Width | None = Field(None, description="Mamba2: n_groups (vLLM pads them to "
                                       "the tensor-parallel size when it does not divide them)")
    mamba_group_elements: Annotated[int, count(cap=s.MAX_STATE_ELEMENTS, unit="elements")] | \
        None = Field(None, description="Mamba2: one group's conv state elements")
    global_kv_heads: Width | None = Field(None, description="full-attention layers' own kv "
                                          "heads (Gemma-4's global layers)")
    global_head_dim: Width | None = Field(None, description="full-attention layers' own head "
                                          "size, K and V (Gemma-4's global layers)")
    v_head_dim: Width | None = Field(None, description="V's head size where it differs from "
                                     "K's head_dim (MiMo-V2)")
    linear_fp32_elements: Annotated[int, count(cap=s.MAX_STATE_ELEMENTS, unit="elements")] | \
        None = Field(None, description="of the linear state, the elements vLLM keeps in float32 "
                     "(Qwen3.5's SSM state, mamba_ssm_dtype)")
    linear_conv_channels: Annotated[int, count(cap=s.MAX_STATE_ELEMENTS, unit="channels")] | \
        None = Field(None, description="a linear layer's convolution channels (vLLM's conv_dim); "
                     "each speculative token adds a row of them to the state")
    mamba_chunk_size: Tokens | None = Field(None, description="Mamba1/Mamba2: the chunk vLLM's "
                                            "prefix caching aligns blocks to")
    mtp_layers: Annotated[int, count(0, cap=s.MAX_LAYERS, unit="layers")] | None = Field(
        None, description="attention layers of the model's multi-token-prediction head "
        "(num_nextn_predict_layers), cached by vLLM's MTP drafter")
    linear_ssm_elements: Annotated[int, count(cap=s.MAX_STATE_ELEMENTS, unit="elements")] | \
        None = Field(None, description="of the linear state, the SSM (temporal) part; the rest "
                     "is the conv state (SGLang keeps the two in different dtypes)")
    linear_ssm_dtype: Annotated[str, v.choice(("fp32", "bf16", "fp16"))] | None = Field(
        None, description="the config's mamba_ssm_dtype (SGLang reads it from v0.5.9)")
    linear_ssm_cache_dtype: Annotated[str, v.choice(("fp32", "bf16", "fp16"))] | None = Field(
        None, description="the config's mamba_ssm_cache_dtype (vLLM reads it for NemotronH from "
        "v0.13)")
    cacheless_layers: Annotated[int, count(0, cap=s.MAX_LAYERS, unit="layers")] | None = Field(
        None, description="layers with no cache, outside the layer count (Nemotron-H's MLP and "
        "MoE layers); llama.cpp's n_layer counts them")

    @property
    def kinds(self) -> tuple[str, ...]:
        """The pattern, or the type's own kind on every layer (a sliding model slides)."""
        return self.pattern or (("sliding",) if self.type == "sliding" else ("full",))

    def values(self) -> dict[str, Any]:
        return {**super().values(), "pattern": self.kinds}

    @model_validator(mode="after")
    def _rules(self) -> Attention:
        # The first rule broken is the one to fix: the others may follow from it.
        kind, pattern = self.type, self.kinds
        missing = [k for k in ("kv_lora_rank", "qk_rope_head_dim") if getattr(self, k) is None]
        if kind == "mla" and missing:
            raise Invalid(f"type mla needs {' and '.join(missing)}")
        if kind != "mla" and self.indexer_head_dim is not None:
            raise Invalid("indexer_head_dim is for type mla (DeepSeek-V3.2's indexer)",
                          ("indexer_head_dim",))
        own = [k for k in ("global_kv_heads", "global_head_dim", "v_head_dim")
               if getattr(self, k) is not None]
        if kind == "mla" and own:
            raise Invalid(f"{own[0]} is for attention heads, not an MLA latent", (own[0],))
        if "full" not in pattern and own and own[0] != "v_head_dim":
            raise Invalid(f"{own[0]} applies to full-attention layers, and the pattern has "
                          "none", (own[0],))
        if self.chunked and "sliding" not in pattern:
            raise Invalid("chunked applies to sliding layers (Llama-4's local ones)", ("chunked",))
        if "sliding" in pattern and self.window is None:
            raise Invalid("expected the sliding window in tokens (layers use sliding)", ("window",))
        if kind == "full" and pattern != ("full",):
            raise Invalid("type full has only full layers; use type sliding or hybrid",
                          ("pattern",))
        if ("linear" in pattern or self.parallel_linear) and self.linear_state_elements is None:
            raise Invalid("expected the fixed state size (elements per linear layer per "
                          "sequence)", ("linear_state_elements",))
        if kind == "hybrid" and "linear" not in pattern and not self.parallel_linear:
            raise Invalid("type hybrid needs at least one 'linear' layer in the pattern",
                          ("pattern",))
        if self.linear_fp32_elements is not None and (
                self.linear_state_elements is None
                or self.linear_fp32_elements > self.linear_state_elements):
            raise Invalid("linear_fp32_elements is a part of linear_state_elements; give at most "
                          "that many", ("linear_fp32_elements",))
        if self.linear_ssm_elements is not None and (
                self.linear_state_elements is None
                or self.linear_ssm_elements > self.linear_state_elements):
            raise Invalid("linear_ssm_elements is a part of linear_state_elements; give at most "
                          "that many", ("linear_ssm_elements",))
        for key in ("linear_conv_channels", "mamba_chunk_size", "linear_ssm_dtype",
                    "linear_ssm_cache_dtype"):
            if getattr(self, key) is not None and self.linear_state_elements is None:
                raise Invalid(f"{key} is for models with linear layers (linear_state_elements)",
                              (key,))
        return self


def _params(value: Any) -> tuple[int | None, int | None]:
    """``8.03B``, or ``{total, active}`` for a mixture of experts (active defaults to total)."""
    if not isinstance(value, dict):
        n = count(cap=s.MAX_PARAMS, unit="parameters",
                  what="a parameter count such as 8.03B or {total, active}").parse(value)
        return n, n
    for key in value:
        if key not in ("total", "active"):
            hint = suggest(str(key), ("total", "active"))
            raise Invalid(f"unknown field{hint}" if hint else "unknown field; use total, active",
                          (str(key),))
    found: dict[str, int | None] = {}
    for key in ("total", "active"):
        try:
            found[key] = None if value.get(key) is None else count(
                cap=s.MAX_PARAMS, unit="parameters").parse(value[key])
        except Invalid as exc:
            raise Invalid(str(exc), (key,)) from None
    total = found["total"]
    active = total if found["active"] is None else found["active"]
    if active is not None and total is not None and active > total:
        raise Invalid(f"expected at most params.total ({total}), got {active}", ("active",))
    return total, active


_COUNT = count(cap=s.MAX_PARAMS).schema
Params = Annotated[tuple[Any, ...], v.Reads(_params, {"anyOf": [_COUNT, {
    "type": "object", "additionalProperties": False,
    "properties": {"total": _COUNT, "active": _COUNT}}]})]


class Architecture(Built):
    """Shape numbers from the model's own config.json (head_dim as stated there)."""

    missing: ClassVar[Mapping[str, str]] = {
        "layers": "expected the number of layers (num_hidden_layers)"}
    layers: Annotated[int, count(cap=s.MAX_LAYERS, unit="layers")] = Field(
        description="number of layers (num_hidden_layers)")
    hidden_size: Width | None = None
    attention_heads: Width | None = Field(None, description="query heads")
    kv_heads: Width | None = Field(None, description="key/value heads (GQA)")
    head_dim: Width | None = None
    vocab_size: Annotated[int, count(cap=s.MAX_VOCAB, unit="tokens")] | None = None
    params: Params | None = Field(None, description="parameters (MoE: total and active)")
    weights_dtype: Annotated[str, v.choice(tuple(WEIGHT_DTYPE_BITS), lower=True, hint=True)] = \
        Field("bf16", description="dtype of the weights")
    weights_bytes: Bytes | None = Field(
        None, description="checkpoint size, when dtype x params is not exact")
    experts: Experts | None = Field(None, description="MoE: routed experts per layer")
    experts_per_token: Experts | None = Field(None, description="MoE: experts each token uses")
    expert_weights_bytes: Bytes | None = Field(
        None, description="bytes of all routed experts' weights (mxfp4 beside bf16...)")
    attention: Attention | None = None
    source: Text | None = Field(None, description="the config.json the numbers come from")
    model_class: Text | None = Field(
        None, description="the model class config.json's architectures names (engines' model "
        "registries key on it), e.g. LlamaForCausalLM")

    def values(self) -> dict[str, Any]:
        found = super().values()
        if "params" in found:
            found["params_total"], found["params_active"] = found.pop("params")
        return found

    @model_validator(mode="after")
    def _rules(self) -> Architecture:
        kv, heads = self.kv_heads, self.attention_heads
        if kv is not None and heads is not None and heads % kv:
            raise Invalid(f"expected a divisor of attention_heads ({heads}), got {kv}",
                          ("kv_heads",))
        return self


class PriceTier(Built):
    """Prices that apply once a request's prompt exceeds ``above_input_tokens``."""

    missing: ClassVar[Mapping[str, str]] = {
        "above_input_tokens": "expected an integer >= 1, got None",
        "applies_to": "expected 'all' or 'excess', got None"}
    above_input_tokens: Tokens = Field(description="the prompt size where the tier starts")
    applies_to: Annotated[str, v.choice(("all", "excess"), (
        "'all' (the whole request is billed at the tier price) or 'excess' (only tokens "
        "above the threshold)"))]
    input: Price | None = None
    cached_input: Price | None = None
    cache_write: Price | None = None
    output: Price | None = None
    reasoning: Price | None = None


_NEEDED = "expected a price (USD per million tokens); omit pricing if unknown"


class Pricing(Built):
    """USD per million tokens."""

    missing: ClassVar[Mapping[str, str]] = {"input": _NEEDED, "output": _NEEDED}
    input: Price = Field(description="prompt tokens")
    cached_input: Price | None = Field(None, description="prompt tokens read from the cache")
    cache_write: Price | None = Field(None, description="prompt tokens written to the cache")
    output: Price = Field(description="output tokens")
    reasoning: Price | None = Field(
        None, description="reasoning tokens (default: billed as output)")
    batch_discount: Annotated[Decimal, v.number("a fraction in [0, 1) such as 0.5",
                                                below=Decimal(1))] | None = Field(
        None, description="fraction off with the Batch API")
    batch_discount_cache: Flag = Field(
        False, description="does the batch discount also cover cache reads/writes?")
    tiers: Annotated[tuple[PriceTier, ...], v.listed("a list of tiers")] = Field(
        (), description="long-context price tiers")
    as_of: Annotated[_dt.date, v.DAY] | None = Field(None, description="when prices were checked")
    source: Text | None = Field(None, description="the price page")

    def values(self) -> dict[str, Any]:
        found = super().values()
        found["tiers"] = tuple(sorted(found.get("tiers", ()), key=lambda t: t.above_input_tokens))
        return found


class ModelEntry(Built):
    """One model of the catalog. Everything but ``id`` is optional."""

    renamed: ClassVar[Mapping[str, str]] = {"tokenizer": "tokenizer_spec",
                                            "weights": "weights_spec"}
    missing: ClassVar[Mapping[str, str]] = {"id": "expected a non-empty string, got None"}
    # 0.1's tokenizer_package named the pip extra; the {mistral_common} placeholder says it now.
    retired: ClassVar[frozenset[str]] = frozenset({"tokenizer_package"})
    id: Text = Field(description="the model id")
    aliases: Names = Field((), description="other names that resolve here")
    provider: Text | None = None
    family: Text | None = None
    # Only the spec's form is checked here; what it names is judged one layer up
    # (tokcost.adapters.registry.check_spec), by `models validate` and every use.
    tokenizer: Annotated[str, v.text(placeholders=_PLACES, what=(
        "a tokenizer spec such as tiktoken:o200k_base or hf:ORG/REPO"))] | None = Field(
        None, description="tokenizer spec, e.g. tiktoken:o200k_base; {mistral_common} names "
        "that package")
    tokenizer_exact: Flag = Field(
        True, description="false when the tokenizer is a proxy (counts approximate)")
    tokenizer_note: Text | None = Field(None, description="why the tokenizer is a proxy")
    context_window: Tokens | None = Field(None, description="prompt + output tokens")
    max_output_tokens: Tokens | None = None
    chat: ChatOverhead | None = Field(None, description="tokens a chat template adds")
    architecture: Architecture | None = None
    pricing: Pricing | None = None
    prefixes: Names = Field((), description="dated ids starting with these resolve here")
    source: Text | None = Field(None, description="the model's page")
    notes: Text | None = None
    weights: Annotated[str, v.text(placeholders=_PLACES)] | None = Field(
        None, description="reference weights file (tokcost generate)")


class Gpu(Built):
    """An accelerator: memory in bytes, HBM bandwidth in bytes/s, dense peak FLOP/s."""

    renamed: ClassVar[Mapping[str, str]] = {"memory": "memory_bytes",
                                            "bandwidth": "bandwidth_bytes_per_s",
                                            "interconnect": "interconnect_bytes_per_s"}
    missing: ClassVar[Mapping[str, str]] = {
        "name": "expected a non-empty string, got None",
        "memory": "expected the GPU's memory (e.g. 80GiB)",
        "bandwidth": "expected the GPU's bandwidth (e.g. 3.35TB per second)"}
    name: Text = Field(description="the GPU's name")
    aliases: Names = ()
    memory: Bytes = Field(description="memory, e.g. 80GiB")
    bandwidth: Annotated[int, v.size(cap=s.MAX_BANDWIDTH, cap_text="1PB per second")] = Field(
        description="HBM bandwidth per second, e.g. 3.35TB")
    bf16_flops: Flops | None = Field(None, description="dense bf16 peak FLOP/s")
    fp8_flops: Flops | None = Field(None, description="dense fp8 peak FLOP/s")
    interconnect: Annotated[int, v.size(cap=s.MAX_BANDWIDTH, cap_text="1PB per second")] | \
        None = Field(None, description="GPU-to-GPU bandwidth per second, both directions, as "
                     "the datasheet states it (NVLink, Infinity Fabric or PCIe), e.g. 900GB")
    architecture: Annotated[str, v.choice(s.GPU_ARCHITECTURES, lower=True, hint=True)] | None = \
        Field(None, description="GPU generation: " + ", ".join(s.GPU_ARCHITECTURES))
    source: Text | None = None


class CatalogDocument(v.Strict):
    """A catalog file (models.yaml): models and GPUs."""

    version: Annotated[int, v.choice((s.SCHEMA_VERSION,),
                                     f"catalog schema version {s.SCHEMA_VERSION}")] = 1
    extends: Annotated[str, v.choice(("shipped",), "'shipped' (add to the shipped catalog)")] | \
        None = Field(None, description="'shipped': add these models to the shipped catalog "
                     "instead of replacing it")
    models: Annotated[tuple[ModelEntry, ...], v.listed("a list of model entries")] = ()
    gpus: Annotated[tuple[Gpu, ...], v.listed("a list of GPUs")] = ()
