"""Each layer's ``KVCacheSpec`` and how vLLM groups them (vllm/v1/kv_cache_interface.py,
vllm/v1/core/kv_cache_utils.py), and the layers --kv-cache-dtype-skip-layers keeps in the
model dtype."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from tokcost.errors import UsageError, arg
from tokcost.memory.engines.base import (
    Deployment,
    Release,
)
from tokcost.memory.engines.vllm.blocks import kernel_blocks, largest_within
from tokcost.memory.engines.vllm.releases import V0_19, V0_21, V0_24, V0_25, V0_26, V0_30, cdiv
from tokcost.memory.kv import KvLayout

if TYPE_CHECKING:

    pass


SpecKind = Literal["full", "sliding", "chunked", "mla", "mamba"]


@dataclass(frozen=True)
class Spec:
    """One layer's ``KVCacheSpec``: what a block of that layer holds."""

    kind: SpecKind
    block_size: int
    page_bytes: int
    window: int | None = None

    def max_bytes(self, max_model_len: int, max_num_batched_tokens: int, dcp: int = 1,
                  states: int = 1) -> int:
        """``max_memory_usage_bytes``: the most one request of ``max_model_len`` needs; with
        decode context parallel each GPU of a DCP group holds every ``dcp``-th token
        (``AttentionSpec.max_memory_usage_bytes``, PR #23734). ``max_num_batched_tokens``: the
        tokens in flight a local (sliding, chunked) group reserves for (from v0.26 every
        batch in flight's, ``VllmPlan.in_flight_tokens``)."""
        if self.kind == "mamba":  # the plan counts them by mode and release (see V0_28)
            return self.page_bytes * states
        if self.kind == "sliding":
            assert self.window is not None
            tokens = min(self.window - 1 + max_num_batched_tokens, max_model_len)
            return (cdiv(tokens, self.block_size) + 1) * self.page_bytes
        if self.kind == "chunked":  # ChunkedLocalAttentionSpec: one chunk + the step, no +1
            # (Llama-4 gets the hybrid manager: VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE
            # defaults to 1 since PR #29627, vllm/envs.py; 0 disables it, --no-hybrid-manager)
            assert self.window is not None
            tokens = min(self.window + max_num_batched_tokens, max_model_len)
            return cdiv(tokens, self.block_size) * self.page_bytes
        return cdiv(cdiv(max_model_len, dcp), self.block_size) * self.page_bytes


@dataclass(frozen=True)
class Group:
    spec: Spec
    layers: tuple[int, ...]


# --kv-cache-dtype-skip-layers (vllm/config/cache.py kv_cache_dtype_skip_layers): PR #33695,
# merged 2026-03-27, after v0.18.0 was out (see DTYPE_SINCE). Attention.__init__
# (vllm/model_executor/layers/attention/attention.py) caches a layer with "auto", the model's
# dtype, when its index (extract_layer_index) is listed or when it has a sliding window and
# "sliding_window" is; the others keep --kv-cache-dtype. Pages that do not divide are padded
# from v0.24 and skip layers raise the block from v0.25 (align_skipped, below hybrid_step).
# MLA layers read the list from PR #47309 (commit 0becb7486, merged 2026-07-16):
# MLAAttention.__init__ (vllm/model_executor/layers/attention/mla_attention.py) caches a layer
# whose index is listed with "auto" (index only: MLA layers ignore "sliding_window"), and its
# get_kv_cache_spec passes that per-layer dtype as cache_dtype_str, so a skipped layer is paged
# as (kv_lora_rank + qk_rope_head_dim) x the model dtype's bytes (MLAAttentionSpec
# .real_page_size_bytes, vllm/v1/kv_cache_interface.py), also under fp8_ds_mla; the indexer cache
# (DeepSeek-V3.2) is another layer and keeps its own. The specs stay MLAAttentionSpec with one
# block, so they make one UniformTypeKVCacheSpecs group as attention layers do; the block is the
# backend's for --kv-cache-dtype, raised by align_skipped. v0.26's mla_attention.py is the first
# to read kv_cache_dtype_skip_layers (v0.25's does not).
SKIP_SLIDING = "sliding_window"


def own_specs(layout: KvLayout, block: int) -> list[Spec]:
    """Each layer's own ``KVCacheSpec`` as the model reports it, before any unification."""
    pages = {k: block * layout.token_bytes[k] for k in ("full", "sliding", "mla")
             if layout.counts[k]}
    top_attn = max(pages.values()) if pages else layout.state_bytes
    specs: list[Spec] = []
    for i, kind in enumerate(layout.layers):
        page = block * layout.layer_bytes(i)  # a skipped layer's in the model dtype
        if kind == "linear":  # the state page is padded to the attention page
            specs.append(Spec("mamba", block, max(top_attn, layout.state_bytes)))
        elif kind == "sliding":
            specs.append(Spec("chunked" if layout.chunked else "sliding", block, page,
                              layout.window))
        else:
            specs.append(Spec(kind, block, page))
    return specs


def kv_cache_specs(layout: KvLayout, block: int, hybrid_manager: bool,
                   dep: Deployment | None = None, release: Release = V0_21,
                   shared: int | None = None) -> list[Spec]:
    kinds = layout.counts
    if kinds["linear"] and not hybrid_manager:
        raise UsageError(
            "vLLM refuses to start: 'Hybrid KV cache manager is disabled but failed to convert "
            "the KV cache specs to one unified type' (linear-attention layers need the hybrid "
            f"manager); drop {arg('hybrid_manager', False)}", param="hybrid_manager")
    # Hybrid manager off: a sliding layer beside full ones is full (unify_hybrid_kv_cache_specs).
    unify = kinds["sliding"] and (kinds["full"] or kinds["mla"]) and not hybrid_manager
    pages = {k: block * layout.token_bytes[k] for k in ("full", "sliding", "mla") if kinds[k]}
    top_attn = max(pages.values()) if pages else layout.state_bytes
    dep = dep or Deployment(layout=layout)
    where = (dep.gpu.architecture if dep.gpu is not None else None) or "hopper"
    own = release >= V0_25 and not unify and not layout.chunked  # sliding layers' own block
    specs: list[Spec] = []
    for i, kind in enumerate(layout.layers):
        page = block * layout.layer_bytes(i)  # a skipped layer's in the model dtype
        if kind == "linear":  # the state page is padded to the attention page
            specs.append(Spec("mamba", block, max(top_attn, layout.state_bytes)))
        elif kind == "sliding" and own:
            per_token, blocks = layout.layer_bytes(i), kernel_blocks(layout, dep, where)
            if shared is not None:
                sw = largest_within(blocks, per_token, shared, release)
                specs.append(Spec("sliding", sw, shared, layout.window))
            else:
                sw = (largest_within(blocks, per_token, per_token * block, release)
                      if release >= V0_30 else min(blocks[0] or (blocks[1],)))
                specs.append(Spec("sliding", sw, sw * per_token, layout.window))
        elif kind == "sliding":
            specs.append(Spec("full", block, page) if unify else Spec(
                "chunked" if layout.chunked else "sliding", block, page, layout.window))
        else:
            specs.append(Spec(kind, block, page))
    if uniform_type(specs):
        return specs
    # unify_kv_cache_spec_page_size: smaller pages grow by whole multiples of their block; from
    # v0.24 a non-MLA attention page that does not divide is padded instead (above).
    top = max(s.page_bytes for s in specs)
    pad = release >= V0_24
    if any(top % s.page_bytes and not (pad and s.kind != "mla") for s in specs):
        raise UsageError("vLLM cannot start this model: its layers' page sizes do not divide "
                         "each other ('Cannot unify by adjusting block_size')" + (
                             "; vLLM pads attention pages from v0.24 (PR #45181) and aligns skip "
                             f"layers from v0.25 (PR #42890): {arg('engine', 'vllm@0.25')}"
                             if layout.skipped and release < V0_24 else ""),
                         related=("engine",))
    return [s if s.page_bytes == top else replace(s, page_bytes=top) if top % s.page_bytes
            else replace(s, block_size=s.block_size * top // s.page_bytes, page_bytes=top)
            for s in specs]


def uniform_type(specs: list[Spec]) -> bool:
    """Pages that differ by layer in specs of one type and block (here: layers kept in the
    model dtype beside quantized ones): vLLM puts every layer in one group whose page is the sum
    of the layers' own (``UniformTypeKVCacheSpecs``, vllm/v1/kv_cache_interface.py, tried by
    get_kv_cache_groups before unify_kv_cache_spec_page_size, vllm/v1/core/kv_cache_utils.py)."""
    return (len({(s.kind, s.block_size, s.window) for s in specs}) == 1
            and len({s.page_bytes for s in specs}) > 1)


def groups_of(specs: list[Spec]) -> tuple[Group, ...]:
    """``get_kv_cache_groups``: one group if all specs are equal, else the padded split."""
    by_spec = {spec: [i for i, s in enumerate(specs) if s == spec] for spec in specs}
    smallest, largest = min(map(len, by_spec.values())), max(map(len, by_spec.values()))
    size = largest if largest < smallest * 1.5 else smallest
    # layers[i::n], not contiguous runs, so pipeline stages pad less.
    return tuple(Group(spec, tuple(layers[i::n])) for spec, layers in by_spec.items()
                 for n in [cdiv(len(layers), size)] for i in range(n))


def skip_items(given: str | tuple[str, ...] | None, release: Release) -> tuple[str, ...]:
    """``--kv-cache-dtype-skip-layers``' items (commas or spaces between them), checked; an
    empty tuple is what an unset option became (``dataclasses.replace`` checks it again)."""
    if given is None or given == ():
        return ()
    text = given if isinstance(given, str) else " ".join(map(str, given))
    items = tuple(text.replace(",", " ").split())
    if release < V0_19:
        raise UsageError(f"vLLM {release} has no {arg('kv_cache_dtype_skip_layers')}: it came "
                         f"in v0.19 (PR #33695); use {arg('engine', 'vllm@0.19')} or later",
                         param="kv_cache_dtype_skip_layers", related=("engine",))
    bad = next((i for i in items if not i.isdigit() and i != SKIP_SLIDING), None)
    if not items or bad is not None:
        raise UsageError(f"{arg('kv_cache_dtype_skip_layers', repr(text))}: give layer indices "
                         f"and/or {SKIP_SLIDING}, e.g. 0,31 or {SKIP_SLIDING}",
                         param="kv_cache_dtype_skip_layers")
    return items


def skipped_layers(items: tuple[str, ...], layout: KvLayout, release: Release) -> frozenset[int]:
    """The layers ``items`` keep in the model dtype, as vLLM's Attention layers (and, from
    v0.26, its MLAAttention layers, PR #47309) pick them."""
    kinds, param = layout.counts, "kv_cache_dtype_skip_layers"
    if kinds["mla"] and release < V0_26:
        raise UsageError(f"vLLM {release} reads {arg(param)} for attention layers only; this "
                         "model has MLA layers (vLLM reads the list for them from PR #47309, "
                         f"merged 2026-07-16, after v0.25.0): use {arg('engine', 'vllm@0.26')} "
                         "or later", param=param, related=("engine",))
    if kinds["linear"]:
        # v0.19 to v0.24: platforms/interface.py pads the Mamba state page to one block of the
        # --kv-cache-dtype attention page (mamba_page_size_padded); the skipped layers' pages are
        # larger, and unify_kv_cache_spec_page_size (vllm/v1/core/kv_cache_utils.py) cannot grow
        # a padded MambaSpec page: a bare AssertionError where the pages divide, else its
        # NotImplementedError. From v0.25 (first in its sdist; the PR is not pinned) Platform
        # ._align_heterogeneous_kv_block_size raises the block so that one page covers the
        # skipped layers' and the Mamba page, which tokcost does not model.
        why = ("from v0.25 vLLM raises the block until one page covers the skipped layers' and "
               "the Mamba state's (_align_heterogeneous_kv_block_size, vllm/platforms/"
               "interface.py), which tokcost does not model" if release >= V0_25 else
               f"vLLM {release} fails to start: it pads the Mamba state page to the "
               f"{arg('kv_dtype')} attention page (mamba_page_size_padded) and "
               "unify_kv_cache_spec_page_size cannot grow that page to the skipped layers' larger "
               "one (an AssertionError in vllm/v1/core/kv_cache_utils.py; v0.25 aligns them)")
        raise UsageError(f"{arg(param)} on a model with linear-attention layers (Mamba, Gated "
                         f"DeltaNet...): {why}; leave out {arg(param)} (every layer then caches "
                         f"in {arg('kv_dtype')})",
                         param=param, related=("kv_dtype",))
    n = len(layout.layers)
    wrong = next((int(i) for i in items if i.isdigit() and int(i) >= n), None)
    if wrong is not None:
        raise UsageError(f"{arg(param)}: the model has no layer {wrong} (its cached layers are 0 "
                         f"to {n - 1}; vLLM would match none)", param=param)
    sliding = {i for i, kind in enumerate(layout.layers) if kind == "sliding"}
    if SKIP_SLIDING in items and (not sliding or layout.chunked):
        raise UsageError(f"{arg(param, SKIP_SLIDING)}: the model has no sliding-window layers "
                         "(vLLM would match none); give layer indices", param=param)
    return frozenset({int(i) for i in items if i.isdigit()}
                     | (sliding if SKIP_SLIDING in items else set()))
