"""SGLang's token pools, reproduced: token-granular pages, full and sliding-window pools.

Read from sgl-project/sglang:

- ``python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py`` (``model_runner.py``
  before the split): ``profile_max_num_token`` sizes the pool from ``rest_memory =
  available after loading - available before loading x (1 - mem_fraction_static)``, i.e.
  about ``memory x mem_fraction_static - weights``, divided by ``cell_size``, the bytes one
  token takes in every layer on this GPU (``kv_heads x (head_dim + v_head_dim) x layers x
  bytes``; MLA ``(kv_lora_rank + qk_rope_head_dim) x layers x bytes``). The result,
  ``max_total_num_tokens``, is aligned down to ``page_size`` (1 by default: token-granular).
- Hybrid sliding-window models get two pools (``_resolve_hybrid_swa_tokens``,
  ``mem_cache/swa_memory_pool.py``): with F and S the full and SWA layers' bytes per token,
  ``full_tokens = tokens x (F + S) / (F + swa_full_tokens_ratio x S)`` and ``swa_tokens =
  full_tokens x swa_full_tokens_ratio`` (default 0.8). Only the architectures in
  ``is_hybrid_swa_model`` (``configs/model_config.py``: Llama-4, gpt-oss, MiMo-V2, Step-3.5,
  Gemma-4) get them, and ``server_args.py`` turns them off for gpt-oss on the trtllm_mha
  backend (Blackwell's default) and for Gemma-2/3; every other sliding model keeps all tokens
  of all layers in one pool.
- Mamba/linear hybrids (``handle_max_mamba_cache``): the state pool takes
  ``rest x mamba_full_memory_ratio / (1 + ratio)`` (ratio 0.9), ``max_mamba_cache_size =
  that // state bytes per request``; the KV pool gets the rest, full-attention layers only.
  The SSM state is fp32 by default (``mamba_ssm_dtype``); requests at once are at most
  ``max_mamba_cache_size // 3`` with the radix cache.
- ``mem_fraction_static`` defaults from the GPU's memory (``ServerArgs.
  _handle_gpu_memory_settings``): ``(MiB - reserved) / MiB``, reserved = 512 + 1.5 x
  max(chunked_prefill_size, 2048) + 2 x cuda_graph_max_bs + tp x pp / 8 x 1024, at least
  10 GiB on GPUs over 60 GiB; 0.88 without a GPU.
- Logs: ``KV Cache is allocated. #tokens: N, K size: X GB, V size: Y GB`` (memory_pool.py,
  "GB" = 2^30 bytes; MLA: ``KV size``) and ``max_total_num_tokens=N, ...`` (scheduler.py).
  SGLang logs no concurrency: tokcost's is the pools divided by one request's tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from tokcost.catalog.schema import LayerKind
from tokcost.errors import UsageError
from tokcost.memory.engines.base import (
    EngineGroup,
    EngineReport,
    past_model_len,
    refusal_cause,
)
from tokcost.memory.kv import KvLayout
from tokcost.memory.parallel import pp_stages

__all__ = [
    "HYBRID_SWA_FAMILIES",
    "SGLANG_VERSION",
    "SglangPlan",
    "default_mem_fraction_static",
    "plan_sglang",
]

SGLANG_VERSION = "SGLang token pools (v0.5 model_runner_kv_cache_mixin.py)"
GiB = 2**30
MiB = 2**20
DEFAULT_SWA_FULL_TOKENS_RATIO = 0.8
MAMBA_FULL_MEMORY_RATIO = 0.9
MAMBA_CACHE_PER_RUNNING_REQUEST = 3  # MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO
# Catalog families whose architectures is_hybrid_swa_model lists.
HYBRID_SWA_FAMILIES = frozenset({"gpt-oss", "llama-4", "gemma-4", "mimo-v2", "step-3.5"})


def _chunk_and_graph(mib: float, tp: int) -> tuple[int, int]:
    """chunked_prefill_size and cuda_graph_max_bs by GPU memory (NVIDIA branches)."""
    if mib < 20 * 1024:
        return 2048, 8
    if mib < 35 * 1024:
        return 2048, 24 if tp < 4 else 80
    if mib < 60 * 1024:
        return 4096, 32 if tp < 4 else 160
    if mib < 160 * 1024:
        return 8192, 256 if tp < 4 else 512
    return 16384, 512


def default_mem_fraction_static(memory_bytes: int | None, tp: int, pp: int) -> tuple[float, str]:
    """SGLang's default ``mem_fraction_static`` for this GPU, and how it was reached."""
    if memory_bytes is None:
        return 0.88, "SGLang's default without a known GPU"
    mib = memory_bytes / MiB
    chunk, graph_bs = _chunk_and_graph(mib, tp)
    reserved = 512 + max(chunk, 2048) * 1.5 + graph_bs * 2 + tp * pp / 8 * 1024
    if mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    value = round((mib - reserved) / mib, 3)
    return value, (
        f"SGLang's default: ({mib:,.0f} MiB - {reserved:,.0f} MiB reserved for activations "
        f"and CUDA graphs) / {mib:,.0f} MiB"
    )


@dataclass(frozen=True)
class _Stage:
    """One pipeline stage's layers by pool."""

    full: int  # full-attention (and MLA) layers, plus sliding ones kept in the full pool
    swa: int  # sliding layers in the SWA pool
    linear: int


@dataclass(frozen=True)
class SglangPlan:
    full_bytes: int  # F: bytes per token of one full-pool layer
    swa_bytes: int  # S: bytes per token of one SWA-pool layer
    stage: _Stage  # the stage with the largest cell (all stages take its capacity)
    window: int | None
    state_bytes: int  # one request's recurrent state over the stage's linear layers
    page_size: int
    swa_ratio: float
    hybrid_swa: bool
    mla: bool
    available: int | None
    settings: dict[str, object]
    # The model's context length: SGLang's ModelConfig (_derive_context_length) refuses a
    # longer --context-length unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1.
    model_max_len: int | None = None

    @property
    def block_size(self) -> int:
        return self.page_size

    @property
    def cell_size(self) -> int:
        return self.full_bytes * self.stage.full + self.swa_bytes * self.stage.swa

    def _align(self, n: int) -> int:
        return n // self.page_size * self.page_size

    def _pools(self) -> tuple[int, int, int, int] | None:
        """(max_total_num_tokens, full pool tokens, swa pool tokens, mamba states)."""
        if self.available is None:
            return None
        rest = self.available
        mamba = 0
        if self.stage.linear and self.state_bytes:
            mamba = int(rest * MAMBA_FULL_MEMORY_RATIO / (1 + MAMBA_FULL_MEMORY_RATIO)
                        // self.state_bytes)
            rest -= mamba * self.state_bytes
        tokens = self._align(max(rest, 0) // self.cell_size)
        if not self.hybrid_swa:
            return tokens, tokens, 0, mamba
        if self.stage.full == 0:
            return tokens, 0, tokens, mamba
        f_all = self.full_bytes * self.stage.full
        s_all = self.swa_bytes * self.stage.swa
        full = self._align(int(tokens * (f_all + s_all) / (f_all + self.swa_ratio * s_all)))
        swa = self._align(int(full * self.swa_ratio))
        return full, full, swa, mamba

    def _swa_tokens(self, context: int) -> int:
        return min(context, self.window) if self.window else context

    def request_bytes(self, context: int) -> int:
        if self.hybrid_swa:
            kv = (context * self.full_bytes * self.stage.full
                  + self._swa_tokens(context) * self.swa_bytes * self.stage.swa)
        else:
            kv = context * self.cell_size
        return kv + self.state_bytes

    def max_concurrency(self, context: int) -> float | None:
        pools = self._pools()
        if pools is None:
            return None
        _, full, swa, mamba = pools
        limits = []
        if self.stage.full:
            limits.append(full / context)
        if self.hybrid_swa and self.stage.swa:
            limits.append(swa / self._swa_tokens(context))
        if self.stage.linear:
            limits.append(mamba // MAMBA_CACHE_PER_RUNNING_REQUEST)
        return min(limits) if limits else None

    def fits(self, context: int, batch: int) -> bool | None:
        pools = self._pools()
        if pools is None:
            return None
        if past_model_len(context, self.model_max_len):
            return False
        conc = self.max_concurrency(context)
        # A prompt past max_total_num_tokens - 1 is rejected (scheduler max_req_input_len).
        return pools[0] > 0 and context < pools[0] + 1 and conc is not None and conc >= batch

    def largest_context(self, batch: int, limit: int) -> int | None:
        if self.available is None:
            return None
        lo, hi = 0, limit
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.fits(mid, batch):
                lo = mid
            else:
                hi = mid - 1
        return lo

    def _kv_line(self, tokens: int, layers: int, per_token: int) -> str:
        size = (tokens + self.page_size) * per_token * layers / GiB
        if self.mla:
            return f"KV Cache is allocated. #tokens: {tokens}, KV size: {size:.2f} GB"
        half = size / 2
        return (f"KV Cache is allocated. #tokens: {tokens}, K size: {half:.2f} GB, "
                f"V size: {half:.2f} GB")

    def report(self, max_model_len: int) -> EngineReport:
        pools = self._pools()
        groups = []
        if self.stage.full:
            groups.append(EngineGroup("mla" if self.mla else "full", self.stage.full,
                                      self.stage.full, self.page_size,
                                      self.page_size * self.full_bytes))
        if self.stage.swa:
            groups.append(EngineGroup("swa", self.stage.swa, self.stage.swa, self.page_size,
                                      self.page_size * self.swa_bytes, self.window))
        lines: list[str] = []
        refusal = None
        conc = None
        if past_model_len(max_model_len, self.model_max_len):
            # SGLang's words (configs/model_config.py), raised before any memory is sized.
            refusal = (f"User-specified context_length ({max_model_len}) is greater than the "
                       f"derived context_length ({self.model_max_len}) (set "
                       "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 to override)")
        if pools is not None:
            total, full, swa, mamba = pools
            if total <= 0:
                refusal = refusal or ("Not enough memory for the KV cache pool (SGLang's "
                                      "advice: increase mem_fraction_static)")
            else:
                if mamba:
                    lines.append(f"max_mamba_cache_size: {mamba}")
                if self.hybrid_swa:
                    lines.append(f"Use sliding window memory pool. full_layer_tokens={full}, "
                                 f"swa_layer_tokens={swa}")
                    if self.stage.full:
                        lines.append(self._kv_line(full, self.stage.full, self.full_bytes))
                    lines.append(self._kv_line(swa, self.stage.swa, self.swa_bytes))
                else:
                    lines.append(self._kv_line(total, self.stage.full, self.full_bytes))
                lines.append(f"max_total_num_tokens={total}")
                conc = self.max_concurrency(max_model_len)
        settings = dict(self.settings)
        settings.update({
            "cell_size_bytes": self.cell_size,
            "hybrid_swa_pools": self.hybrid_swa,
            "swa_full_tokens_ratio": self.swa_ratio if self.hybrid_swa else None,
            "full_pool_tokens": None if pools is None else pools[1],
            "swa_pool_tokens": None if pools is None or not self.hybrid_swa else pools[2],
            "max_mamba_cache_size": None if pools is None or not self.stage.linear else pools[3],
        })
        return EngineReport(
            name="sglang",
            version=SGLANG_VERSION,
            block_size=self.page_size,
            block_size_reason=(f"{self.page_size} (SGLang's page_size"
                               + (", token-granular)" if self.page_size == 1 else ")")),
            max_model_len=max_model_len,
            groups=tuple(groups),
            num_blocks=None if pools is None else pools[0] // self.page_size,
            cache_tokens=None if pools is None else pools[0],
            max_concurrency=conc,
            lines=tuple(lines),
            refuses_to_start=refusal is not None,
            refusal=refusal,
            refusal_cause=refusal_cause(refusal, max_model_len, self.model_max_len),
            settings=settings,
        )


def plan_sglang(
    layout: KvLayout,
    *,
    available: int | None,
    family: str | None = None,
    architecture: str | None = None,
    page_size: int = 1,
    swa_full_tokens_ratio: float | None = None,
    pp: int = 1,
    settings: dict[str, object] | None = None,
    model_max_len: int | None = None,
) -> SglangPlan:
    """SGLang's pools for ``layout`` (per-GPU sizes) and ``available`` bytes per GPU.

    Worked example (gpt-oss-120b on Hopper, 20 GiB, ratio 0.8): F = S = 8 x 64 x 2 x 2 =
    2,048 B, 18 full + 18 SWA layers, cell 73,728 B; tokens = 21,474,836,480 // 73,728 =
    291,271; full = int(291,271 x 36 / (18 + 0.8 x 18)) = 323,634; swa = int(0.8 x full)
    = 258,907.
    """
    ratio = swa_full_tokens_ratio
    if ratio is None:
        ratio = DEFAULT_SWA_FULL_TOKENS_RATIO
    if not 0 < ratio <= 1:
        raise UsageError(
            f"swa_full_tokens_ratio must be in (0, 1], got {ratio:g}", param="swa_full_tokens_ratio"
        )
    if page_size <= 0:
        raise UsageError(f"block_size must be a positive integer, got {page_size}",
                         param="block_size")
    counts = layout.counts
    hybrid_swa = bool(counts["sliding"]) and family in HYBRID_SWA_FAMILIES and not (
        family == "gpt-oss" and architecture == "blackwell"
    )
    full_kind: LayerKind = "mla" if counts["mla"] else ("full" if counts["full"] else "sliding")
    full_bytes = layout.token_bytes.get(full_kind, 0)
    swa_bytes = layout.token_bytes.get("sliding", 0)
    best: _Stage | None = None
    for stage in pp_stages(len(layout.layers), pp):
        kinds = [layout.layers[i] for i in stage]
        swa = kinds.count("sliding") if hybrid_swa else 0
        full = sum(1 for k in kinds if k in ("full", "mla", "sliding")) - swa
        cand = _Stage(full, swa, kinds.count("linear"))
        if best is None or (full_bytes * cand.full + swa_bytes * cand.swa
                            > full_bytes * best.full + swa_bytes * best.swa):
            best = cand
    assert best is not None
    if best.full + best.swa == 0:
        raise UsageError("this model caches no tokens (only fixed-state layers)")
    # SGLang's mamba_ssm_dtype defaults to float32: twice the bf16 bytes the layout counts.
    state = best.linear * layout.state_bytes * 2
    info = dict(settings or {})
    info["sliding_layers_in_full_pool"] = bool(counts["sliding"]) and not hybrid_swa
    return SglangPlan(
        full_bytes=full_bytes or swa_bytes,
        swa_bytes=swa_bytes,
        stage=best,
        window=layout.window,
        state_bytes=state,
        page_size=page_size,
        swa_ratio=ratio,
        hybrid_swa=hybrid_swa,
        mla=bool(counts["mla"]),
        available=available,
        settings=info,
        model_max_len=model_max_len,
    )
