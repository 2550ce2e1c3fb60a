"""vLLM v1's KV cache manager, reproduced: groups, pages, blocks, the start-up check, the log.

Read from vllm-project/vllm (v0.11 to v0.20 code, current main where it changed):

- ``vllm/v1/kv_cache_interface.py``: one ``KVCacheSpec`` per layer. A page is one block of
  one layer, ``block_size x 2 x kv_heads x head_dim x bytes`` (MLA: ``block_size x 576 x
  bytes``, no K/V pair; Mamba: the whole recurrent state, padded to the attention page).
  ``max_memory_usage_bytes`` is what one request of ``max_model_len`` tokens can need:
  full/MLA ``cdiv(L, block)`` pages; sliding ``cdiv(min(window - 1 + max_num_batched_tokens,
  L), block) + 1`` pages (chunked prefill writes a whole batch past the window, and the window
  rarely starts on a block edge); Mamba one page.
- ``vllm/v1/core/kv_cache_utils.py``: ``get_kv_cache_groups`` puts identical specs in one
  group; mixed models are split into groups of ``group_size`` layers, the smallest kind's
  count (or the largest when it is under 1.5 x the smallest), padding the last group of a
  kind (Gemma-3-27B: 52 sliding + 10 full layers -> 7 groups of 10, the sliding layers in 60
  slots); layer ``i`` of every group shares one tensor, so ``num_blocks = available // page
  // group_size`` (``get_num_blocks``) and a block id costs ``page x group_size`` bytes.
  Per request the groups' block needs add up; ``max concurrency = num_blocks / that sum``
  (``get_max_concurrency_for_kv_cache_config``). With pipeline parallelism each stage holds
  its own layers of the global groups and every stage takes the smallest ``num_blocks``
  (``get_kv_cache_configs``). ``_check_enough_kv_cache_memory`` refuses to start when one
  request of ``max_model_len`` does not fit, and binary-searches the length that would.
- ``_report_kv_cache_config`` logs "GPU KV cache size: N tokens" and "Maximum concurrency
  for L tokens per request: X.XXx". Up to v0.20 ``N = num_blocks // groups x smallest block``;
  later versions log ``N = int(concurrency x L)`` (vLLM issues #40691 and #43308: Gemma-4's
  logged capacity jumped ~10x from v0.20.0 to v0.21.0 with the same memory). Both are shown.
- Block sizes: ``vllm/platforms/cuda.py`` forces 64-token blocks for FlashMLA (Hopper) and 128
  for CUTLASS MLA (Blackwell's default); ``HybridAttentionMambaModelConfig`` in
  ``vllm/model_executor/models/config.py`` raises the attention block of a Mamba/linear
  hybrid to the smallest multiple of 16 (32 on Blackwell with head_dim 256, 64/128 for MLA)
  whose page covers the state page (Qwen3-Next bf16: 16 x cdiv(1,097,728, 16 x 2,048) = 544)
  and pads the state page to it; ``unify_kv_cache_spec_page_size`` scales smaller pages up.
- Defaults: ``EngineArgs.get_batch_defaults`` in ``vllm/engine/arg_utils.py``: ``vllm serve``
  schedules 8,192 tokens per step on GPUs of 70 GiB or more other than A100, else 2,048
  (``LLM(...)`` in Python: 16,384 / 8,192).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

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
    "VLLM_VERSION",
    "VllmPlan",
    "default_max_num_batched_tokens",
    "plan_vllm",
    "resolve_block_size",
]

VLLM_VERSION = "vLLM v1 KV cache manager (v0.11-v0.20; newer log formula from v0.21)"
GiB = 2**30
DEFAULT_BLOCK = 16
SERVE_BATCHED_TOKENS_LARGE = 8192  # vllm serve, >= 70 GiB and not an A100
SERVE_BATCHED_TOKENS_SMALL = 2048

SpecKind = Literal["full", "sliding", "mla", "mamba"]


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def default_max_num_batched_tokens(
    gpu_name: str | None, memory_bytes: int | None
) -> tuple[int, str]:
    """``vllm serve``'s default tokens per scheduler step, and why (arg_utils.py)."""
    if memory_bytes is None:
        return SERVE_BATCHED_TOKENS_LARGE, (
            "vllm serve default for GPUs of 70 GiB or more but A100; no GPU given, smaller "
            f"GPUs get {SERVE_BATCHED_TOKENS_SMALL:,}"
        )
    name = (gpu_name or "").lower()
    if memory_bytes >= 70 * GiB and "a100" not in name:
        return SERVE_BATCHED_TOKENS_LARGE, (
            f"vllm serve default: {memory_bytes / GiB:.1f} GiB >= 70 GiB and not an A100"
        )
    why = "an A100" if "a100" in name else f"{memory_bytes / GiB:.1f} GiB < 70 GiB"
    return SERVE_BATCHED_TOKENS_SMALL, f"vllm serve default: {why}"


@dataclass(frozen=True)
class Spec:
    """One layer's ``KVCacheSpec``: what a block of that layer holds."""

    kind: SpecKind
    block_size: int
    page_bytes: int
    window: int | None = None

    def max_bytes(self, max_model_len: int, max_num_batched_tokens: int) -> int:
        """``max_memory_usage_bytes``: the most one request of ``max_model_len`` needs."""
        if self.kind == "mamba":
            return self.page_bytes  # mamba_cache_mode "none": one state per request
        if self.kind == "sliding":
            assert self.window is not None
            tokens = min(self.window - 1 + max_num_batched_tokens, max_model_len)
            return (cdiv(tokens, self.block_size) + 1) * self.page_bytes
        return cdiv(max_model_len, self.block_size) * self.page_bytes


@dataclass(frozen=True)
class Group:
    spec: Spec
    layers: tuple[int, ...]


def resolve_block_size(
    layout: KvLayout,
    *,
    block_size: int | None,
    architecture: str | None,
    head_dim: int | None,
) -> tuple[int, str]:
    """The attention block size vLLM ends up with, and why."""
    kinds = layout.counts
    block = block_size if block_size is not None else DEFAULT_BLOCK
    given = "block_size given" if block_size is not None else "vLLM's default"
    reason = f"{block} ({given})"
    arch = architecture or "hopper"
    assumed = "" if architecture else " (no GPU architecture given: Hopper assumed)"
    if kinds["mla"]:
        if arch == "blackwell":
            if block % 128:
                block = 128
                reason = ("128: vLLM forces 128-token blocks for CUTLASS MLA, Blackwell's "
                          "default MLA backend (vllm/platforms/cuda.py)")
        elif arch == "hopper":
            if block % 64:
                block = 64
                reason = ("64: vLLM forces 64-token blocks for FlashMLA on Hopper "
                          f"(vllm/platforms/cuda.py){assumed}")
        else:
            reason += f"; Triton MLA on {arch} keeps it"
    if kinds["linear"]:
        attn = layout.token_bytes.get("mla") or layout.token_bytes.get("full") or \
            layout.token_bytes.get("sliding")
        if attn:
            if kinds["mla"]:
                align = 128 if arch == "blackwell" else 64
            elif arch == "blackwell" and head_dim == 256:
                align = 32  # FlashInfer has no 16-token blocks for head_dim 256 on Blackwell
            else:
                align = 16
            needed = align * cdiv(layout.state_bytes, align * attn)
            if block < needed:
                block = needed
                reason = (
                    f"{needed}: vLLM raises the attention block until its page "
                    f"({needed} x {attn:,} B) covers the {layout.state_bytes:,} B linear-attention "
                    f"state, in steps of {align} (vllm/model_executor/models/config.py)"
                )
    return block, reason


def _specs(layout: KvLayout, block: int, hybrid_manager: bool) -> list[Spec]:
    kinds = layout.counts
    mixed_window = kinds["sliding"] and (kinds["full"] or kinds["mla"])
    if kinds["linear"] and not hybrid_manager:
        raise UsageError(
            "vLLM refuses to start: 'Hybrid KV cache manager is disabled but failed to convert "
            "the KV cache specs to one unified type' (linear-attention layers need the hybrid "
            "manager); drop hybrid_manager=False",
            param="hybrid_manager",
        )
    attn_pages = {
        kind: block * layout.token_bytes[kind]
        for kind in ("full", "sliding", "mla") if kinds[kind]
    }
    page = max(attn_pages.values()) if attn_pages else layout.state_bytes
    specs: list[Spec] = []
    for kind in layout.layers:
        if kind == "linear":
            # The state page is padded to the attention page (mamba_page_size_padded).
            specs.append(Spec("mamba", block, max(page, layout.state_bytes)))
        elif kind == "sliding" and not (mixed_window and not hybrid_manager):
            specs.append(Spec("sliding", block, attn_pages["sliding"], layout.window))
        elif kind == "sliding":
            # Without the hybrid manager a sliding layer is a full-attention one whose
            # blocks are never freed (unify_hybrid_kv_cache_specs).
            specs.append(Spec("full", block, attn_pages["sliding"]))
        else:
            specs.append(Spec(kind, block, attn_pages[kind]))
    # unify_kv_cache_spec_page_size: smaller pages grow by whole multiples of their block.
    top = max(s.page_bytes for s in specs)
    unified = []
    for s in specs:
        if s.page_bytes != top:
            if top % s.page_bytes:
                raise UsageError(
                    "vLLM cannot start this model: its layers' page sizes do not divide each "
                    "other ('Cannot unify by adjusting block_size')"
                )
            ratio = top // s.page_bytes
            s = Spec(s.kind, s.block_size * ratio, top, s.window)
        unified.append(s)
    return unified


def _groups(specs: list[Spec]) -> tuple[Group, ...]:
    """``get_kv_cache_groups``: one group if all specs are equal, else the padded split."""
    by_spec: dict[Spec, list[int]] = {}
    for i, spec in enumerate(specs):
        by_spec.setdefault(spec, []).append(i)
    if len(by_spec) == 1:
        ((spec, layers),) = by_spec.items()
        return (Group(spec, tuple(layers)),)
    counts = [len(v) for v in by_spec.values()]
    smallest, largest = min(counts), max(counts)
    size = largest if largest < smallest * 1.5 else smallest
    groups: list[Group] = []
    for spec, layers in by_spec.items():
        n = cdiv(len(layers), size)
        # layers[i::n], not contiguous runs, so pipeline stages pad less.
        groups.extend(Group(spec, tuple(layers[i::n])) for i in range(n))
    return tuple(groups)


@dataclass(frozen=True)
class VllmPlan:
    """vLLM's KV cache config for one model; ``available`` is per GPU (None: no budget)."""

    groups: tuple[Group, ...]
    stages: tuple[frozenset[int], ...]
    page_bytes: int
    block_size: int
    block_size_reason: str
    max_num_batched_tokens: int
    batched_tokens_source: str
    hybrid_manager: bool
    available: int | None
    # The model's max_position_embeddings: vLLM's ModelConfig refuses a longer
    # max_model_len unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 (None: the model states none).
    model_max_len: int | None = None

    @property
    def group_size(self) -> int:
        return max(len(g.layers) for g in self.groups)

    def _stage_group_size(self, stage: frozenset[int]) -> int:
        return max(sum(1 for i in g.layers if i in stage) for g in self.groups)

    @property
    def stage_group_size(self) -> int:
        """Layer slots a block id spans on the fullest pipeline stage (one GPU)."""
        return max(self._stage_group_size(s) for s in self.stages)

    @property
    def num_blocks(self) -> int | None:
        if self.available is None:
            return None
        per_stage = [
            max(0, self.available // self.page_bytes // size)
            for stage in self.stages if (size := self._stage_group_size(stage))
        ]
        return min(per_stage)

    def blocks_per_request(self, context: int) -> int:
        """Blocks one request of ``context`` tokens may hold, summed over the groups."""
        mnbt = self.max_num_batched_tokens
        return sum(cdiv(g.spec.max_bytes(context, mnbt), self.page_bytes) for g in self.groups)

    def request_bytes(self, context: int) -> int:
        return self.blocks_per_request(context) * self.page_bytes * self.stage_group_size

    def needed_bytes(self, context: int, stage: frozenset[int]) -> int:
        """``_max_memory_usage_bytes_from_groups`` on one stage (its padded group size)."""
        return self._stage_group_size(stage) * self.page_bytes * self.blocks_per_request(context)

    def max_concurrency(self, context: int) -> float | None:
        blocks = self.num_blocks
        return None if blocks is None else blocks / self.blocks_per_request(context)

    def _starts(self, context: int) -> bool:
        assert self.available is not None
        if past_model_len(context, self.model_max_len):
            return False
        return self.available > 0 and all(
            self.needed_bytes(context, s) <= self.available
            for s in self.stages if self._stage_group_size(s)
        )

    def fits(self, context: int, batch: int) -> bool | None:
        blocks = self.num_blocks
        if blocks is None:
            return None
        return self._starts(context) and batch * self.blocks_per_request(context) <= blocks

    def largest_context(self, batch: int, limit: int) -> int | None:
        if self.available is None:
            return None
        lo, hi = 0, limit
        while lo < hi:  # the largest n with fits(n), fits monotone decreasing in n
            mid = (lo + hi + 1) // 2
            if self.fits(mid, batch):
                lo = mid
            else:
                hi = mid - 1
        return lo

    def _estimated_max_len(self, limit: int, stage: frozenset[int]) -> int:
        """``_estimate_max_model_len_from_groups``: binary search 1..max_model_len."""
        assert self.available is not None
        lo, hi, best = 1, limit, 0
        while lo <= hi:
            mid = (lo + hi) // 2
            if self.needed_bytes(mid, stage) <= self.available:
                best, lo = mid, mid + 1
            else:
                hi = mid - 1
        return best

    def _refusal(self, max_model_len: int) -> str | None:
        if past_model_len(max_model_len, self.model_max_len):
            # vLLM's words (config/model.py): "User-specified max_model_len (N) is greater
            # than the derived max_model_len (max_position_embeddings=M ...)"; before memory.
            return (f"max_model_len {max_model_len:,} is greater than the model's "
                    f"{self.model_max_len:,} (set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 to override)")
        if self.available is None:
            return None
        if self.available <= 0:
            return ("No available memory for the cache blocks. Try increasing "
                    "`gpu_memory_utilization` when initializing the engine.")
        for stage in self.stages:
            if not self._stage_group_size(stage):
                continue
            needed = self.needed_bytes(max_model_len, stage)
            if needed > self.available:
                est = self._estimated_max_len(max_model_len, stage)
                hint = (f"Based on the available memory, the estimated maximum model length "
                        f"is {est}. " if est > 0 else "")
                return (
                    f"To serve at least one request with the models's max seq len "
                    f"({max_model_len}), ({needed / GiB:.2f} GiB KV cache is needed, which is "
                    f"larger than the available KV cache memory ({self.available / GiB:.2f} "
                    f"GiB). {hint}Try increasing `gpu_memory_utilization` or decreasing "
                    f"`max_model_len` when initializing the engine."
                )
        return None

    def logged_tokens(self, max_model_len: int) -> tuple[int, int] | None:
        """GPU KV cache size as v0.20 and earlier log it, and as later versions do."""
        blocks = self.num_blocks
        if blocks is None:
            return None
        # Mamba specs carry block_size = mamba_block_size = max_model_len (no prefix caching).
        smallest = min(
            max_model_len if g.spec.kind == "mamba" else g.spec.block_size for g in self.groups
        )
        older = blocks // len(self.groups) * smallest
        conc = blocks / self.blocks_per_request(max_model_len)
        return older, int(conc * max_model_len)

    def report(self, max_model_len: int) -> EngineReport:
        counts: dict[Spec, int] = {}
        groups = []
        for g in self.groups:
            counts[g.spec] = counts.get(g.spec, 0) + 1
            groups.append(EngineGroup(g.spec.kind, len(g.layers), self.group_size,
                                      g.spec.block_size, g.spec.page_bytes, g.spec.window))
        lines: list[str] = []
        refusal = self._refusal(max_model_len)
        conc = self.max_concurrency(max_model_len)
        tokens = self.logged_tokens(max_model_len)
        if self.available is not None:
            lines.append(f"Available KV cache memory: {self.available / GiB:.2f} GiB")
        if refusal is not None:
            lines.append(f"ValueError: {refusal}")
        elif tokens is not None and conc is not None:
            older, newer = tokens
            lines.append(f"GPU KV cache size: {older:,} tokens")
            if newer != older:
                lines.append(f"GPU KV cache size: {newer:,} tokens")
            lines.append(f"Maximum concurrency for {max_model_len:,} tokens per request: "
                         f"{conc:.2f}x")
        settings = {
            "group_size": self.group_size,
            "max_num_batched_tokens": self.max_num_batched_tokens,
            "max_num_batched_tokens_source": self.batched_tokens_source,
            "hybrid_manager": self.hybrid_manager,
            "pipeline_stages": [len(s) for s in self.stages],
            "blocks_per_request": self.blocks_per_request(max_model_len),
            "logged_tokens": None if tokens is None else {
                "v0.20_and_earlier": tokens[0], "v0.21_and_later": tokens[1],
            },
        }
        return EngineReport(
            name="vllm",
            version=VLLM_VERSION,
            block_size=self.block_size,
            block_size_reason=self.block_size_reason,
            max_model_len=max_model_len,
            groups=tuple(groups),
            num_blocks=self.num_blocks,
            cache_tokens=None if tokens is None or refusal else tokens[0],
            max_concurrency=None if refusal else conc,
            lines=tuple(lines),
            refuses_to_start=refusal is not None,
            refusal=refusal,
            refusal_cause=refusal_cause(refusal, max_model_len, self.model_max_len),
            settings=settings,
        )


def plan_vllm(
    layout: KvLayout,
    *,
    available: int | None,
    block_size: int | None = None,
    architecture: str | None = None,
    head_dim: int | None = None,
    max_num_batched_tokens: int | None = None,
    gpu_name: str | None = None,
    memory_bytes: int | None = None,
    hybrid_manager: bool = True,
    pp: int = 1,
    model_max_len: int | None = None,
) -> VllmPlan:
    """vLLM's KV cache config for ``layout`` (per-GPU sizes) and ``available`` bytes per GPU.

    Worked example (Gemma-3-27B, bf16, 20 GiB, max_model_len 131,072, 8,192 batched)::

        page       = 16 tokens x 2 x 16 kv heads x 128 x 2 B = 131,072 B
        groups     = 6 sliding groups + 1 full group of 10 layers (52 sliding in 60 slots)
        num_blocks = 21,474,836,480 // 131,072 // 10 = 16,384
        per request: sliding cdiv(min(1,023 + 8,192, 131,072), 16) + 1 = 577 blocks x 6,
                     full cdiv(131,072, 16) = 8,192 -> 11,654 blocks
        concurrency = 16,384 / 11,654 = 1.41x; GPU KV cache size 16,384 // 7 x 16 = 37,440
    """
    if max_num_batched_tokens is not None and max_num_batched_tokens <= 0:
        raise UsageError(
            f"max_num_batched_tokens must be a positive integer, got {max_num_batched_tokens}",
            param="max_num_batched_tokens",
        )
    if not any(k != "linear" for k in layout.layers):
        raise UsageError("this model caches no tokens (only fixed-state layers)")
    block, reason = resolve_block_size(
        layout, block_size=block_size, architecture=architecture, head_dim=head_dim
    )
    if max_num_batched_tokens is None:
        mnbt, source = default_max_num_batched_tokens(gpu_name, memory_bytes)
    else:
        mnbt, source = max_num_batched_tokens, "max_num_batched_tokens given"
    specs = _specs(layout, block, hybrid_manager)
    stages = tuple(frozenset(s) for s in pp_stages(len(layout.layers), pp))
    return VllmPlan(
        groups=_groups(specs),
        stages=stages,
        page_bytes=specs[0].page_bytes,
        block_size=block,
        block_size_reason=reason,
        max_num_batched_tokens=mnbt,
        batched_tokens_source=source,
        hybrid_manager=hybrid_manager,
        available=available,
        model_max_len=model_max_len,
    )
