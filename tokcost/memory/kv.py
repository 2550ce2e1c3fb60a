"""KV-cache bytes from a catalog architecture (DESIGN §5; the formulas: docs/kvmem.md), and how
vLLM (and SGLang) split a model over GPUs."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, replace
from enum import Enum
from itertools import accumulate
from typing import TYPE_CHECKING

from tokcost.catalog.schema import Architecture, LayerKind
from tokcost.errors import UsageError, arg, suggest

if TYPE_CHECKING:
    from collections.abc import Iterable


class ArchitectureIncomplete(UsageError):
    """The catalog entry lacks the architecture fields a memory estimate needs."""


@dataclass(frozen=True)
class KvDtype:
    """Storage of one cached element; int8/int4 add an fp16 scale and zero point per ``group``
    elements (KIVI, HF QuantizedCache). ``engine``: a layout of that engine's own (its group
    and scales fixed), ``vector_scale_bytes`` a scale per cached vector (one head's K or V)."""

    name: str
    bits: int
    group: int | None = None
    group_overhead_bytes: int = 0
    engine: str | None = None
    vector_scale_bytes: int = 0

    def vector_bytes(self, elements: int) -> int:
        """Bytes of one cached vector of ``elements`` values (e.g. one head's K)."""
        data = math.ceil(elements * self.bits / 8) + self.vector_scale_bytes
        if self.group is None:
            return data
        return data + math.ceil(elements / self.group) * self.group_overhead_bytes


KV_DTYPES: dict[str, KvDtype] = {
    "fp32": KvDtype("fp32", 32),
    "bf16": KvDtype("bf16", 16),
    "fp16": KvDtype("fp16", 16),
    # vLLM's fp8 cache scales per tensor (k_scale / v_scale per layer): no per-token overhead.
    "fp8": KvDtype("fp8", 8),
    "fp8_e4m3": KvDtype("fp8_e4m3", 8),
    "fp8_e5m2": KvDtype("fp8_e5m2", 8),
    "int8": KvDtype("int8", 8, group=64, group_overhead_bytes=4),
    "int4": KvDtype("int4", 4, group=64, group_overhead_bytes=4),
    # vLLM's own layouts (vllm/config/cache.py CacheDType; pages vllm/v1/kv_cache_interface.py).
    # *_per_token_head: a float32 scale per token and kv head, for K and for V
    # (AttentionSpec.page_size_bytes adds 2 x block x kv heads x 4 B); int4 packs two per byte.
    "fp8_per_token_head": KvDtype("fp8_per_token_head", 8, engine="vllm", vector_scale_bytes=4),
    "int8_per_token_head": KvDtype("int8_per_token_head", 8, engine="vllm", vector_scale_bytes=4),
    "int4_per_token_head": KvDtype("int4_per_token_head", 4, engine="vllm", vector_scale_bytes=4),
    # nvfp4: head_size // 2 B of fp4 data + head_size // 16 B of fp8 scales, one per 16 values
    # (vllm/utils/torch_utils.py nvfp4_kv_cache_full_dim).
    "nvfp4": KvDtype("nvfp4", 4, group=16, group_overhead_bytes=1, engine="vllm"),
    # DeepSeek-V3.2's MLA layout: 512 fp8 latent values, 4 fp32 scales, the 64 RoPE values in
    # bf16 = 656 B per token per layer (MLAAttentionSpec.real_page_size_bytes, flashmla_sparse.py).
    "fp8_ds_mla": KvDtype("fp8_ds_mla", 8, engine="vllm")}
FP8_DS_MLA_BYTES = 656
# Layouts vLLM has for GQA/MHA pages only (its MLA spec sizes pages without them).
_NOT_MLA = ("fp8_per_token_head", "int8_per_token_head", "int4_per_token_head", "nvfp4")
_DTYPE_ALIASES = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "half": "fp16"}


class KvDtypeName(str, Enum):
    """The keys of ``KV_DTYPES``."""

    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"
    FP8_E4M3 = "fp8_e4m3"
    FP8_E5M2 = "fp8_e5m2"
    INT8 = "int8"
    INT4 = "int4"
    FP8_PER_TOKEN_HEAD = "fp8_per_token_head"
    INT8_PER_TOKEN_HEAD = "int8_per_token_head"
    INT4_PER_TOKEN_HEAD = "int4_per_token_head"
    NVFP4 = "nvfp4"
    FP8_DS_MLA = "fp8_ds_mla"

    def __str__(self) -> str:
        return self.value


def kv_dtype(name: str | KvDtype, *, group: int | None = None) -> KvDtype:
    """A KV dtype by name or alias (``bfloat16``, ``half``...), with another ``group`` size."""
    if isinstance(name, KvDtype):
        found = name
    else:
        name = str(name)  # a KvDtypeName's str() is its value
        key = _DTYPE_ALIASES.get(name.lower(), name.lower())
        if key not in KV_DTYPES:
            raise UsageError(f"unknown KV dtype '{name}'{suggest(key, KV_DTYPES)}; use one of "
                             f"{', '.join(KV_DTYPES)}")
        found = KV_DTYPES[key]
    if group is not None:
        if group <= 0:
            raise UsageError(f"{arg('kv_group_size')} must be positive, got {group}",
                             param="kv_group_size")
        if found.group is None or found.engine is not None:
            raise UsageError(f"{arg('kv_group_size')} applies to int8/int4 caches, not "
                             f"{found.name}", param="kv_group_size")
        found = KvDtype(found.name, found.bits, group, found.group_overhead_bytes)
    return found


def _positive(value: int, param: str) -> None:
    if value <= 0:
        raise UsageError(f"{arg(param)} must be a positive integer, got {value}", param=param)


@dataclass(frozen=True)
class KvLayout:
    """What one sequence's cache looks like on one GPU, layer by layer."""

    layers: tuple[LayerKind, ...]
    token_bytes: dict[LayerKind, int]  # bytes per token per layer, by layer kind
    window: int | None
    state_bytes: int  # fixed bytes of one linear layer for one sequence
    kv_heads_per_gpu: int | None
    dtype: KvDtype
    tp: int
    indexer_bytes: int = 0  # of token_bytes["mla"]: DeepSeek-V3.2's indexer keys
    chunked: bool = False  # sliding layers hold their current chunk of ``window`` (Llama-4)
    kv_shared: int = 0  # layers after ``layers`` that read their caches (Gemma-3n)
    parallel: bool = False  # ``layers`` pairs each attention with its layer's Mamba (Falcon-H1)
    # Layers cached in the model's dtype whatever ``dtype`` is (vLLM's
    # --kv-cache-dtype-skip-layers), and their bytes per token per layer by kind.
    skipped: frozenset[int] = frozenset()
    skipped_bytes: dict[LayerKind, int] = field(default_factory=dict)
    skipped_dtype: str | None = None
    # Linear layers: one conv row's bytes per GPU (a Gated DeltaNet's: each speculative token
    # adds one), the chunk a Mamba1/Mamba2 family's prefix caching aligns to (None: not one),
    # and whether they are Mamba2 mixers.
    conv_row_bytes: int = 0
    mamba_chunk: int | None = None
    mamba2: bool = False
    mtp_layers: int = 0  # the model's multi-token-prediction head (its attention layers)
    draft_layers: int = 0  # of ``layers``, the last ones: a speculative drafter's
    # Bytes per token per layer, by kind, were V stored at K's head size: only the kinds whose
    # V heads are narrower than K's (MiMo-V2's v_head_dim; vLLM before v0.20 pads V).
    v_padded_bytes: dict[LayerKind, int] = field(default_factory=dict)
    v_padded: bool = False  # ``v_padded_bytes`` are applied (padding_v)
    # A linear layer's state per GPU split as SGLang stores it: conv elements (bf16) and SSM
    # (temporal) elements (mamba_ssm_dtype); 0 and 0 where the catalog lacks the split. The
    # config's own mamba_ssm_dtype, where it states one.
    conv_elements: int = 0
    ssm_elements: int = 0
    ssm_dtype: str | None = None
    ssm_cache_dtype: str | None = None  # the config's mamba_ssm_cache_dtype (vLLM's NemotronH)
    cacheless_layers: int = 0  # layers holding no cache (Nemotron-H's MLP/MoE), not in ``layers``

    def padding_v(self) -> KvLayout:
        """This layout with V stored at K's head size (``v_padded_bytes``)."""
        if not self.v_padded_bytes:
            return self
        return replace(self, token_bytes={**self.token_bytes, **self.v_padded_bytes},
                       v_padded_bytes={}, v_padded=True)

    def speculating(self, tokens: int, draft_layers: int) -> KvLayout:
        """This layout with a drafter's ``draft_layers`` attention layers after the model's (of
        its attention kind) and ``tokens`` more conv rows in each linear state (vLLM's
        speculative decoding: gated_delta_net_state_shape's conv_kernel_size - 1 + num_spec)."""
        kind: LayerKind = "mla" if self.counts["mla"] else "full"
        return replace(self, layers=self.layers + (kind,) * draft_layers,
                       state_bytes=self.state_bytes + tokens * self.conv_row_bytes,
                       draft_layers=draft_layers)

    @property
    def counts(self) -> Counter[LayerKind]:
        return Counter(self.layers)

    def layer_bytes(self, index: int) -> int:
        """Bytes per token of layer ``index`` (its own dtype)."""
        kind = self.layers[index]
        table = self.skipped_bytes if index in self.skipped else self.token_bytes
        return table.get(kind, 0)

    def take(self, indices: Iterable[int]) -> KvLayout:
        """The layout of the layers ``indices`` (a pipeline stage), in that order."""
        picked = tuple(indices)
        return replace(self, layers=tuple(self.layers[i] for i in picked),
                       skipped=frozenset(j for j, i in enumerate(picked) if i in self.skipped))

    def skipping(self, layers: Iterable[int], model_dtype: KvLayout) -> KvLayout:
        """This layout with ``layers`` cached as in ``model_dtype`` (the same model laid out
        in its own dtype)."""
        return replace(self, skipped=frozenset(layers), skipped_bytes=dict(model_dtype.token_bytes),
                       skipped_dtype=model_dtype.dtype.name)

    @property
    def bytes_per_token(self) -> int:
        """Bytes one more token adds while the context is shorter than every window."""
        if self.skipped:
            return sum(map(self.layer_bytes, range(len(self.layers))))
        return sum(self.token_bytes.get(kind, 0) for kind in self.layers)

    @property
    def uniform(self) -> bool:
        """Every layer caches every token (full or MLA): vLLM's one-pool case."""
        return all(kind in ("full", "mla") for kind in self.layers)

    def layer_slots(self, kind: LayerKind, tokens: int, block_size: int | None) -> int:
        if kind != "sliding" or not self.window:
            return tokens if block_size is None else math.ceil(tokens / block_size) * block_size
        if self.chunked:
            # The tokens of the current chunk: vLLM frees every block wholly before the chunk
            # start, num_computed // chunk x chunk (ChunkedLocalAttentionManager
            # .get_num_skipped_tokens, vllm/v1/core/single_type_kv_cache_manager.py, PR #19351).
            start = (tokens - 1) // self.window * self.window
            if block_size is None:
                return tokens - start
            return (math.ceil(tokens / block_size) - start // block_size) * block_size
        if block_size is None:
            return min(tokens, self.window)
        blocks = min(math.ceil(tokens / block_size),
                     math.ceil((self.window - 1) / block_size) + 1)
        return blocks * block_size

    def sequence_bytes(self, tokens: int, block_size: int | None = None) -> int:
        return sum(self.by_kind(tokens, block_size).values())

    def by_kind(self, tokens: int, block_size: int | None = None) -> dict[str, int]:
        if self.skipped:  # each layer in its own dtype
            held: dict[str, int] = dict.fromkeys(self.counts, 0)
            for i, kind in enumerate(self.layers):
                held[kind] += (self.state_bytes if kind == "linear" else self.layer_slots(
                    kind, tokens, block_size) * self.layer_bytes(i))
            return held
        return {kind: count * (self.state_bytes if kind == "linear" else
                               self.layer_slots(kind, tokens, block_size) * self.token_bytes[kind])
                for kind, count in self.counts.items()}


def attention_shape(arch: Architecture, model: str = "?") -> tuple[int, int]:
    """``(kv_heads, head_dim)`` with transformers' defaults for absent fields (kv heads: the
    attention heads; head_dim: ``hidden_size // num_attention_heads``, Qwen3-32B states 128)."""
    kv_heads = arch.kv_heads if arch.kv_heads is not None else arch.attention_heads
    head_dim = arch.head_dim
    if head_dim is None and arch.hidden_size is not None and arch.attention_heads:
        head_dim = arch.hidden_size // arch.attention_heads
    missing = [field for field, value in (("kv_heads (or attention_heads)", kv_heads),
               ("head_dim (or hidden_size and attention_heads)", head_dim)) if value is None]
    if missing:
        raise ArchitectureIncomplete(
            f"model '{model}' lacks architecture field{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)} needed for KV-cache sizes; add them to its catalog "
            f"entry (from the model's config.json)")
    assert kv_heads is not None and head_dim is not None
    return kv_heads, head_dim


def pp_stages(layers: int, pp: int, *, extra_last: bool = False) -> tuple[range, ...]:
    """The layers of each of ``pp`` stages: ``layers // pp``, the rest one by one backwards
    over the stages before the last (``vllm/distributed/utils.py`` get_pp_indices), or with
    ``extra_last`` to the last stages (SGLang's get_pp_indices, srt/distributed/utils.py)."""
    _positive(pp, "pp")
    if pp > layers:
        raise UsageError(f"{arg('pp', pp)} pipeline stages exceed the model's {layers} layers; "
                         f"use at most {layers}", param="pp")
    sizes = [layers // pp] * pp
    for i in range(1, layers % pp + 1) if extra_last else range(2, layers % pp + 2):
        sizes[-i] += 1
    ends = list(accumulate(sizes))
    return tuple(range(end - size, end) for size, end in zip(sizes, ends, strict=True))


def kv_layout(arch: Architecture, kv_dtype_name: str | KvDtype = "bf16", *, tp: int = 1,
    group: int | None = None, state_dtype: str = "bf16", model: str = "?") -> KvLayout:
    dtype = kv_dtype(kv_dtype_name, group=group)
    _positive(tp, "tp")
    att = arch.attention
    kinds = att.layer_kinds(arch.layers)
    if att.kv_shared_layers:
        # Gemma-3n: a layer with kv_sharing_target_layer_name gets no KVCacheSpec, so vLLM
        # allocates nothing for it (gpu_model_runner.py get_kv_cache_spec; gemma3n.py: the
        # last num_kv_shared_layers layers read layer first - 2's (sliding) or first - 1's).
        if att.kv_shared_layers >= arch.layers:
            raise ArchitectureIncomplete(f"{model}: {att.kv_shared_layers} kv-shared layers of "
                                         f"{arch.layers} leave no layer that holds a cache")
        kinds = kinds[:arch.layers - att.kv_shared_layers]
    if att.parallel_linear:  # Falcon-H1: an attention and a Mamba cache spec in every layer
        kinds = tuple(k for kind in kinds for k in (kind, "linear"))
    token_bytes: dict[LayerKind, int] = {}
    heads: int | None = None
    _check_layout(dtype, att.type == "mla", model)
    if att.type == "mla":
        assert att.kv_lora_rank is not None and att.qk_rope_head_dim is not None
        # The latent is shared by all heads, so TP ranks each hold all of it (vLLM).
        if dtype.name == "fp8_ds_mla" and (att.kv_lora_rank, att.qk_rope_head_dim) != (512, 64):
            raise UsageError(f"fp8_ds_mla's 656-byte layout is for a 512 + 64 latent; {model}'s "
                             f"is {att.kv_lora_rank} + {att.qk_rope_head_dim}", param="kv_dtype")
        token_bytes["mla"] = (FP8_DS_MLA_BYTES if dtype.name == "fp8_ds_mla" else
                              dtype.vector_bytes(att.kv_lora_rank + att.qk_rope_head_dim))
        indexer = indexer_bytes(att.indexer_head_dim)
        token_bytes["mla"] += indexer
    padded: dict[LayerKind, int] = {}
    if any(k in ("full", "sliding") for k in kinds):
        heads = _attention_bytes(arch, set(kinds), dtype, tp, (token_bytes, padded), model)
    heads_q = arch.attention_heads  # vLLM shards them (vllm/config/model.py)
    if heads_q is not None and tp > 1 and heads_q % tp:
        raise UsageError(f"{arg('tp', tp)} does not divide the model's {heads_q} attention heads "
                         f"(vLLM and SGLang shard heads across GPUs); use a divisor of {heads_q}",
                         param="tp")
    state = conv_row = conv = ssm = 0
    if "linear" in kinds:
        assert att.linear_state_elements is not None
        # The state stays in the model dtype (mamba_ssm_cache_dtype=auto); TP splits its heads.
        elements = att.linear_state_elements
        if att.mamba_groups and att.mamba_group_elements and att.mamba_groups % tp:
            # Mamba2's groups padded to the TP size, each rank keeping whole ones
            # (mamba_utils.py extra_groups_for_head_shards, in mamba2_state_shape)
            elements += (tp - att.mamba_groups) * att.mamba_group_elements
        # Qwen3.5's SSM part stays in float32 (linear_fp32_elements; vLLM's ssm cache dtype)
        fp32 = att.linear_fp32_elements or 0
        state = (math.ceil((elements - fp32) / tp) * kv_dtype(state_dtype).bits // 8
                 + math.ceil(fp32 / tp) * 4)
        # the conv state keeps the model dtype (mamba_utils.py _mamba_state_dtype)
        conv_row = math.ceil((att.linear_conv_channels or 0) / tp) * kv_dtype(state_dtype).bits // 8
        if att.linear_ssm_elements:  # the group padding is conv state (Mamba2StateShape)
            conv = math.ceil((elements - att.linear_ssm_elements) / tp)
            ssm = math.ceil(att.linear_ssm_elements / tp)
    return KvLayout(kinds, token_bytes, att.window, state, heads, dtype, tp,
                    indexer if att.type == "mla" else 0, att.chunked, att.kv_shared_layers,
                    att.parallel_linear, conv_row_bytes=conv_row,
                    mamba_chunk=att.mamba_chunk_size if "linear" in kinds else None,
                    mamba2=att.mamba_groups is not None, mtp_layers=att.mtp_layers or 0,
                    v_padded_bytes=padded,
                    conv_elements=conv, ssm_elements=ssm, ssm_dtype=att.linear_ssm_dtype,
                    ssm_cache_dtype=att.linear_ssm_cache_dtype,
                    cacheless_layers=att.cacheless_layers or 0)


def _attention_bytes(arch: Architecture, kinds: set[LayerKind], dtype: KvDtype, tp: int,
                     tables: tuple[dict[LayerKind, int], dict[LayerKind, int]],
                     model: str) -> int | None:
    """Fill ``tables``, token bytes and V-padded token bytes (kinds whose V is narrower than
    K), for full and sliding layers; the kv heads per GPU when every layer has the same heads
    and K and V the same head size (what cache policies and llama.cpp's cells assume), else
    None (Gemma-4, MiMo-V2)."""
    att = arch.attention
    token_bytes, padded = tables
    kv_heads, head_dim = attention_shape(arch, model)
    shapes = {kind: head_shape(arch, kind, kv_heads, head_dim) for kind in ("full", "sliding")
              if kind in kinds}
    for kind, (total, k_dim, v_dim) in shapes.items():
        if total % tp and tp % total:
            raise UsageError(f"{arg('tp', tp)} must divide the model's {total} kv heads or be "
                             "a multiple of it", param="tp")
        # vLLM: kv heads split, or replicated past kv_heads; a page holds K then V
        # (FullAttentionSpec.real_page_size_bytes: head_size + head_size_v).
        per_head = dtype.vector_bytes(k_dim) + dtype.vector_bytes(v_dim)
        if kind == "full" and _gemma4_padded(dtype, k_dim, att.global_head_dim):
            per_head = GEMMA4_PADDED_HEAD_BYTES
        token_bytes[kind] = max(1, total // tp) * per_head
        if v_dim < k_dim:
            padded[kind] = max(1, total // tp) * 2 * dtype.vector_bytes(k_dim)
    return max(1, kv_heads // tp) if set(shapes.values()) == {(kv_heads, head_dim, head_dim)} \
        else None


def head_shape(arch: Architecture, kind: LayerKind, kv_heads: int,
               head_dim: int) -> tuple[int, int, int]:
    """``(kv heads, K head size, V head size)`` of a ``kind`` layer: Gemma-4's global (full)
    layers have their own heads and head size (vLLM gemma4.py Gemma4DecoderLayer:
    global_head_dim, and num_global_key_value_heads under attention_k_eq_v, K stored again as
    V); elsewhere V's head size is ``v_head_dim`` where the config gives one (MiMo-V2:
    mimo_v2_flash.py passes Attention(head_size_v=...) to FullAttentionSpec.head_size_v,
    vllm/v1/kv_cache_interface.py). MiMo-V2-Flash has both: its full layers' own kv heads
    (global_kv_heads 4 beside the sliding layers' 8) with V's 128 beside K's 192."""
    att = arch.attention
    if kind == "full" and (att.global_kv_heads or att.global_head_dim):
        dim = att.global_head_dim or head_dim
        return att.global_kv_heads or kv_heads, dim, att.v_head_dim or dim
    return kv_heads, head_dim, att.v_head_dim or head_dim


# vLLM pads Gemma-4's 512-wide global heads under fp8/int8_per_token_head from 2 x (512 + 4)
# = 1,032 B to 1,040 B, twice a 256-wide sliding head's 520 B, so that the pages divide
# (vllm/model_executor/models/gemma4.py, Gemma4Attention: kv_cache_page_size_padded).
GEMMA4_PADDED_HEAD_BYTES = 1040


def _gemma4_padded(dtype: KvDtype, k_dim: int, global_head_dim: int | None) -> bool:
    return global_head_dim == 512 == k_dim and dtype.name in ("fp8_per_token_head",
                                                               "int8_per_token_head")


def indexer_bytes(head_dim: int | None) -> int:
    """DeepSeek-V3.2's indexer cache, a token in one layer: fp8 keys and a float32 scale per 128
    (``DeepseekV32IndexerCache``, head_dim + head_dim // 128 x 4 uint8, whatever the KV dtype;
    vllm/model_executor/models/deepseek_v2.py). vLLM keeps it in the MLA layers' group
    (``UniformTypeKVCacheSpecs``: one block's page is the sum of the layers' pages)."""
    return 0 if head_dim is None else head_dim + head_dim // 128 * 4


def _check_layout(dtype: KvDtype, mla: bool, model: str) -> None:
    """vLLM's own layouts where vLLM has them: fp8_ds_mla for MLA only, the rest not for MLA."""
    if dtype.name == "fp8_ds_mla" and not mla:
        raise UsageError(f"fp8_ds_mla is DeepSeek's MLA cache layout and {model} has no MLA "
                         f"layers; use {arg('kv_dtype', 'fp8')}", param="kv_dtype")
    if dtype.name in _NOT_MLA and mla:
        raise UsageError(f"{dtype.name} is vLLM's layout for attention heads, not for MLA's "
                         f"latent; use {arg('kv_dtype', 'fp8')} or fp8_ds_mla (DeepSeek-V3.2)",
                         param="kv_dtype")


def kv_bytes_per_token(arch: Architecture, kv_dtype: str | KvDtype = "bf16", *,
                       tp: int = 1, group: int | None = None) -> int:
    """Bytes one token adds to the cache (per GPU), while the context is inside every window."""
    return kv_layout(arch, kv_dtype, tp=tp, group=group).bytes_per_token


def kv_cache_bytes(arch: Architecture, tokens: int, kv_dtype: str | KvDtype = "bf16", *,
    block_size: int | None = None, tp: int = 1, batch: int = 1, group: int | None = None) -> int:
    """Bytes the cache holds for ``batch`` sequences of ``tokens`` (per GPU)."""
    _positive(tokens, "tokens")
    _positive(batch, "batch")
    if block_size is not None:
        _positive(block_size, "block_size")
    return batch * kv_layout(arch, kv_dtype, tp=tp, group=group).sequence_bytes(tokens, block_size)
