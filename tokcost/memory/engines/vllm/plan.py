"""``VllmPlan``: the pool vLLM sizes for one pipeline stage, its blocks, the start-up check
and the lines it logs (vllm/v1/core/kv_cache_utils.py)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING

from tokcost.errors import Note, arg
from tokcost.memory.engines.base import (
    EngineGroup,
    EngineReport,
    HostGroup,
    HostLayout,
    Plan,
    Release,
    largest,
)
from tokcost.memory.engines.vllm.releases import (
    NAME,
    TITLE,
    V0_21,
    V0_22,
    V0_26,
    V0_28,
    V0_29,
    MambaMode,
    cdiv,
    log_gib,
)
from tokcost.memory.engines.vllm.specs import Group, Spec
from tokcost.memory.fit import GiB

if TYPE_CHECKING:

    pass


# The model runner vLLM picks (VllmConfig.use_v2_model_runner, vllm/config/vllm.py), by release.
# It sets max_concurrent_batches, the batches a sliding or chunked group reserves for from v0.26
# (see V0_26): with async scheduling, on by default, the V2 runner keeps pp + 1, the V1 runner 2 on
# one stage and pp on more ("V1 Model Runner does not fully support async scheduling with PP"),
# so the runner changes the reserve only with --pp:
# - v0.26 to v0.28, as v0.25 chose (PR #44443, "Enable by default for all dense models"):
#   _is_default_v2_model_runner_model is False for a MoE model (ModelConfig.is_moe: num_experts
#   > 0) and a Mamba hybrid (is_hybrid), which keep V1, unless the architecture is in
#   DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES (DeepseekV2, Qwen2Moe, GraniteMoe; v0.26 adds Inkling
#   and LongcatFlashNgram, v0.27 KimiK3 and lets a listed hybrid have V2, v0.28 DeepseekV4). None
#   of those has sliding or chunked layers, so tokcost reads "MoE or linear hybrid" as V1.
# - v0.29 (PR #53183, which closed #46646 "Enable by default for all non-pooling models"): V2 for
#   every model; V1 only where V2 lacks a feature (_get_v2_model_runner_unsupported_features:
#   mamba_cache_mode "all" in v0.30 and v0.31, which tokcost never picks from v0.28; n-gram,
#   suffix or Medusa drafting, which it does not model), or on ROCm for DeepSeek-V3.2/V4 and
#   GLM-5 (ROCM_DEFAULT_MRV1_ARCHITECTURES: MLA only, no local groups).
# - v0.34: no V1 runner; max_concurrent_batches is pp + 1 with async scheduling.
# Async scheduling is off by default only for pooling models, drafters other than EAGLE/MTP/
# GPU n-gram/DSpark, and executors without it (Ray): none modelled.
def v1_model_runner(release: Release, moe: bool, hybrid: bool) -> bool:
    """Whether vLLM ``release`` runs the model on the V1 model runner (see above)."""
    return V0_26 <= release < V0_29 and (moe or hybrid)


@dataclass(frozen=True)
class VllmPlan(Plan):
    """vLLM's KV cache config for one model (worked example: docs/kvmem.md)."""

    groups: tuple[Group, ...]
    stages: tuple[frozenset[int], ...]
    page_bytes: int
    block_size: int
    block_size_reason: Note
    max_num_batched_tokens: int
    batched_tokens_source: Note
    hybrid_manager: bool
    available: int | None  # per GPU (None: no budget)
    model_max_len: int | None = None  # the model's own: a longer max_model_len is refused
    release: Release = V0_21
    version: str = ""  # the profile's words for the release followed
    dcp: int = 1
    layer_pages: tuple[int, ...] = ()  # each layer's page where they differ (uniform_type)
    mamba_mode: MambaMode = "none"  # a linear hybrid's mamba_cache_mode (prefix caching)
    spec_blocks: int = 0  # num_speculative_blocks, where the release counts them
    checkpoint_blocks: int = 0  # num_prefill_checkpoint_blocks ("align", v0.32 on)
    draft_layers: int = 0  # a speculative drafter's attention layers in the groups
    v1_runner: bool = False  # vLLM's V1 model runner (v0.26 to v0.28: MoE, Mamba hybrids)

    # v0.34's extensible KV cache: the profiling estimate it logs and first checks (the blocks
    # come from ``available``, measured after warmup), the budget requested, and its granule
    estimate: int | None = None
    requested: int | None = None
    granule: int = 0
    util: float | None = None  # v0.34's hint names a gpu_memory_utilization below 1

    # Before v0.14 the start-up check sums each layer's own spec (V0_14 above); empty: the groups
    check_specs: tuple[Spec, ...] = ()
    hybrid_off_reason: str = ""  # why vLLM turned the hybrid manager off by itself

    def state_blocks(self, context: int) -> int:
        """State blocks a request holds in each linear group (MambaSpec
        .max_memory_usage_bytes of the release; see V0_28)."""
        if self.mamba_mode == "all":  # (no spec blocks: tokcost refuses them on Mamba families)
            return cdiv(context, self.block_size)
        return (2 if self.mamba_mode == "align" else 1) + self.spec_blocks + self.checkpoint_blocks

    @property
    def group_size(self) -> int:
        return max(len(g.layers) for g in self.groups)

    def _stage_group_size(self, stage: frozenset[int]) -> int:
        return max(sum(1 for i in g.layers if i in stage) for g in self.groups)

    @property
    def stage_group_size(self) -> int:
        """Layer slots a block id spans on the fullest pipeline stage (one GPU)."""
        return max(self._stage_group_size(s) for s in self.stages)

    def _stage_block_bytes(self, stage: frozenset[int]) -> int:
        """Bytes a block id takes on ``stage``: a page per layer slot, or the sum of its layers'
        own pages (``UniformTypeKVCacheSpecs.page_size_bytes``)."""
        if self.layer_pages:
            return sum(self.layer_pages[i] for i in stage)
        return self.page_bytes * self._stage_group_size(stage)

    @property
    def block_bytes(self) -> int:
        """Bytes a block id takes on the fullest pipeline stage (one GPU)."""
        return max(self._stage_block_bytes(s) for s in self.stages)

    def _stage_strides(self, stage: frozenset[int]) -> list[int]:
        """A block's bytes in each layer segment of ``stage`` (one per layer slot)."""
        if self.layer_pages:
            return [self.layer_pages[i] for i in stage]
        return [self.page_bytes] * self._stage_group_size(stage)

    def _stage_blocks(self, stage: frozenset[int], size: int) -> int:
        assert self.available is not None
        blocks = max(0, self.available // size)
        if not self.granule or self.estimate is None:
            return blocks
        # ExtensibleKVCache.blocks_within: at most the capacity reserved from the estimate,
        # and no more than the granules committed per segment fit in the measured bytes
        blocks = min(blocks, max(0, self.estimate // size))
        strides, g = self._stage_strides(stage), self.granule
        while blocks > 0 and sum(cdiv(blocks * s, g) * g for s in strides) > self.available:
            blocks -= 1
        return blocks

    @property
    def num_blocks(self) -> int | None:
        if self.available is None:
            return None
        # floor(available / page / slots) = floor(available / (page x slots))
        return min(self._stage_blocks(stage, size)
                   for stage in self.stages if (size := self._stage_block_bytes(stage)))

    @property
    def in_flight_batches(self) -> int:
        """Batches a local group reserves for: one to v0.25; from v0.26 max_concurrent_batches
        with async scheduling (vllm/config/vllm.py): pp + 1 on the V2 model runner; the V1
        runner keeps 2 on one stage and pp on more (see ``v1_model_runner``)."""
        if self.release < V0_26:
            return 1
        pp = len(self.stages)
        return (2 if pp == 1 else pp) if self.v1_runner else pp + 1

    def blocks_per_request(self, context: int) -> int:
        """Blocks one request of ``context`` tokens may hold, summed over the groups."""
        mnbt = self.max_num_batched_tokens * self.in_flight_batches
        states = self.state_blocks(context)
        return sum(cdiv(g.spec.max_bytes(context, mnbt, self.dcp, states),
                        g.spec.page_bytes) for g in self.groups)

    engine_blocks = blocks_per_request

    def host_layout(self) -> HostLayout:
        """What vLLM's native CPU offload copies per block id (v0.21 on: every group; each
        OffloadingGroupConfig keeps get_sliding_window_size_in_chunks of a request:
        kv_connector/v1/offloading/scheduler.py, config.py from v0.33): a full or MLA group
        every block, a sliding one cdiv(window, block), a chunked-local one cdiv(chunk, block)
        (from v0.28; before, the FullAttentionSpec assert), a Mamba group one state. The bytes
        are the GPU tensors' total // num_blocks (CPUOffloadingSpec; the scheduler's config is
        the first worker's), every layer slot of the first stage."""
        # under decode context parallel a block spans block x dcp tokens (see offload.DCP)
        groups = tuple(HostGroup(g.spec.block_size * self.dcp,
                                 None if g.spec.kind in ("full", "mla")
                                 else 1 if g.spec.kind == "mamba"
                                 else cdiv(g.spec.window or 1, g.spec.block_size),
                                 g.spec.kind)
                       for g in self.groups)
        return HostLayout(self._stage_block_bytes(self.stages[0]), groups)

    def request_bytes(self, context: int) -> int:
        return self.blocks_per_request(context) * self.block_bytes

    def needed_bytes(self, context: int, stage: frozenset[int]) -> int:
        """``_max_memory_usage_bytes_from_groups`` on one stage (its padded group size); before
        v0.14 ``max_memory_usage_bytes`` over the stage's layers, each by its own spec."""
        if self.check_specs:
            mnbt = self.max_num_batched_tokens
            return sum(self.check_specs[i].max_bytes(context, mnbt, self.dcp,
                                                          self.state_blocks(context))
                       for i in stage)
        return self._stage_block_bytes(stage) * self.blocks_per_request(context)

    def _checks(self, stage: frozenset[int]) -> list[tuple[int, bool]]:
        """The bytes each start-up check holds one request to, and whether it runs after
        warmup (v0.34); from v0.29 less the null block."""
        size = self._stage_block_bytes(stage)
        assert self.available is not None
        if self.estimate is None:
            return [(self.available - (size if self.release >= V0_29 else 0), False)]
        return [(self.estimate - size, False), (((self.num_blocks or 0) - 1) * size, True)]

    def _fits_alone(self, context: int, stage: frozenset[int], avail: int) -> bool:
        return self.needed_bytes(context, stage) <= avail

    def max_concurrency(self, context: int) -> float | None:
        blocks = self.num_blocks
        return None if blocks is None else blocks / self.blocks_per_request(context)

    def fits(self, context: int, batch: int) -> bool | None:
        blocks = self.num_blocks
        if blocks is None or self.available is None:
            return None
        starts = not self.past_model_len(context) and all(
            avail > 0 and self._fits_alone(context, s, avail) for s in self.stages
            if self._stage_group_size(s) for avail, _ in self._checks(s))
        return starts and batch * self.blocks_per_request(context) <= blocks

    def _hint(self, warm: bool) -> str:
        """What vLLM tells to do (kv_cache_planning.py _more_kv_cache_memory_hint, v0.34)."""
        if self.release < V0_22:
            return "Try increasing `gpu_memory_utilization` when initializing the engine."
        if self.estimate is None:
            return ("Try increasing `gpu_memory_utilization` when initializing the engine "
                    "(this flag also controls CPU memory reservation on the CPU backend, "
                    "despite its name).")
        used = "the model, its activations, CUDA graphs and warmup" if warm else (
            "the model and its activations")
        graphs = (" CUDA graphs take less with fewer or smaller capture sizes in the "
                  "compilation config.") if warm else ""
        if self.util is not None and self.util < 1:
            return (f"The KV cache gets what is left after {used} within "
                    f"`gpu_memory_utilization`={self.util}; increase it (with the extensible "
                    "KV cache it defaults to 1.0) or decrease `max_model_len` or "
                    f"`max_num_seqs`.{graphs}")
        return ("The extensible KV cache already takes all device memory left after "
                f"{used}; decrease `max_model_len` or `max_num_seqs`, or the model needs a "
                f"device with more memory.{graphs}")

    def _refusal_at(self, max_model_len: int) -> tuple[str, bool] | None:
        """vLLM's refusal and whether it comes after warmup (v0.34), or None."""
        if self.past_model_len(max_model_len):
            # vLLM's words (config/model.py), checked before memory
            return (f"max_model_len {max_model_len:,} is greater than the model's "
                    f"{self.model_max_len:,} (set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 to override)",
                    False)
        if self.available is None:
            return None
        old = self.release < V0_22
        for stage in self.stages:
            if not self._stage_group_size(stage):
                continue
            for avail, warm in self._checks(stage):
                if avail <= 0 and old:
                    return ("No available memory for the cache blocks. Try increasing "
                            "`gpu_memory_utilization` when initializing the engine.", warm)
                if avail <= 0:
                    return f"No available memory for the cache blocks. {self._hint(warm)}", warm
                needed = self.needed_bytes(max_model_len, stage)
                if needed <= avail:
                    continue
                # _estimate_max_model_len_from_groups: a binary search up to max_model_len
                est = largest(partial(self._fits_alone, stage=stage, avail=avail),
                              max_model_len)
                hint = (f"Based on the available memory, the estimated maximum model length "
                        f"is {est}. " if est > 0 else "")
                head = (f"To serve at least one request with the model{'s' if old else ''}'s "
                        f"max seq len ({max_model_len}), ({self._gib(needed)} GiB KV cache is "
                        "needed, which is larger than the available KV cache memory "
                        f"({self._gib(avail)} GiB). {hint}")
                if old:
                    return (head + "Try increasing `gpu_memory_utilization` or decreasing "
                            "`max_model_len` when initializing the engine.", warm)
                if self.estimate is None:
                    return (head + "Try increasing `gpu_memory_utilization` (which also "
                            "controls CPU memory on the CPU backend) or decreasing "
                            "`max_model_len` when initializing the engine.", warm)
                return (head + f"{self._hint(warm)} Decreasing `max_model_len` also reduces "
                        "what is needed.", warm)
        return None

    def _gib(self, size: int) -> str:
        return log_gib(size, self.release)

    def _refusal(self, max_model_len: int) -> str | None:
        refusal = self._refusal_at(max_model_len)
        return None if refusal is None else refusal[0]

    def logged_tokens(self, max_model_len: int) -> tuple[int, int] | None:
        """GPU KV cache size as v0.20 and earlier log it (x dcp: "Multiplying the GPU KV cache
        size by the dcp_world_size"), and as later versions do."""
        blocks = self.num_blocks
        if blocks is None:
            return None
        # Mamba specs carry block_size = mamba_block_size = max_model_len (no prefix caching;
        # "align" and "all": the attention block).
        smallest = min(max_model_len if g.spec.kind == "mamba" and self.mamba_mode == "none"
                       else g.spec.block_size for g in self.groups)
        conc = blocks / self.blocks_per_request(max_model_len)
        return blocks // len(self.groups) * smallest * self.dcp, int(conc * max_model_len)

    def cache_tokens(self, max_model_len: int) -> int | None:
        """The "GPU KV cache size" the release logs."""
        tokens = self.logged_tokens(max_model_len)
        return None if tokens is None else tokens[self.release >= V0_21]

    def _lines(self, max_model_len: int, refusal: str | None) -> list[str]:
        tokens = self.cache_tokens(max_model_len)
        shown = self.available if self.estimate is None else self.estimate
        lines = [] if shown is None else [f"Available KV cache memory: {self._gib(shown)} GiB"]
        at = self._refusal_at(max_model_len)
        blocks = self.num_blocks
        if self.estimate is not None and blocks is not None and (at is None or at[1]):
            # extensible_kv_cache.py measure_kv_cache_blocks; tokcost does not know the free,
            # committed and transient figures that open the line
            lines.append(f"Memory after warmup: ... {blocks} KV cache blocks "
                         f"({self._gib(blocks * self.block_bytes)} GiB) fit within the "
                         f"requested {self._gib(self.requested or 0)} GiB.")
        if refusal is not None:
            return [*lines, f"ValueError: {refusal}"]
        if tokens is None:
            return lines
        conc = (f"Maximum concurrency for {max_model_len:,} tokens per request: "
                f"{self.max_concurrency(max_model_len):.2f}x")
        if self.release >= V0_28:  # one line from v0.28
            return [*lines, f"GPU KV cache size: {tokens:,} tokens, {conc}"]
        return [*lines, f"GPU KV cache size: {tokens:,} tokens", conc]

    def _details(self, report: EngineReport) -> tuple[str, ...]:
        if self.available is None:
            return ()
        size, groups = self.group_size, Counter(g.spec.kind for g in self.groups)
        slots = self.stage_group_size  # one GPU's: with --pp its stage's share of each group
        layers = {kind: sum(len(g.layers) for g in self.groups if g.spec.kind == kind)
                  for kind in groups}
        blocks = {g.spec.kind: g.spec.block_size for g in self.groups if g.spec.kind != "mamba"}
        own: dict[str, str] = {k: f", {b}-token blocks" if len(set(blocks.values())) > 1
                               else "" for k, b in blocks.items()}
        desc = [f"{n} {kind} ({layers[kind]} layers{own.get(kind, '')}"
                + (f" + {n * size - layers[kind]} padding)" if n * size > layers[kind] else ")")
                for kind, n in groups.items()]
        tokens = self.logged_tokens(report.max_model_len) or (0, 0)
        local, read = (("a chunked layer's chunk", "chunk") if groups["chunked"] else
                       ("a sliding layer's window - 1", "window"))
        tag = "" if tokens[0] == tokens[1] else (
            "   (v0.21 on: concurrency x max_model_len; v0.20: "
            f"num_blocks // groups x block = {tokens[0]:,})" if self.release >= V0_21 else
            f"   (v0.20: num_blocks // groups x block; v0.21 on: concurrency x max_model_len "
            f"= {tokens[1]:,})")
        log = [line + (tag if line.startswith("GPU KV cache size") else "")
               for line in report.lines if not line.startswith("ValueError")]
        return (
            f"vLLM groups: {len(self.groups)}, each of {size} layer slots"
            + (f" ({slots} on the fullest pipeline stage, one GPU)" if slots != size else "")
            + f": {', '.join(desc)}; page "
            + (f"{self.page_bytes:,} B ({self.block_size} tokens x 1 layer)"
               if not self.layer_pages else " + ".join(
                   f"{n} x {page:,} B" for page, n in Counter(self.layer_pages).most_common())
               + f" ({self.block_size} tokens, each layer in its own dtype: "
               "UniformTypeKVCacheSpecs)"),
            # vLLM divides by the slots of the stage it runs on (the fullest sets the pool)
            (f"blocks: floor({self.available:,} / {self.page_bytes:,} B / {slots} layers per "
             "group" + (" on the fullest stage)" if slots != size else ")")
             if not self.layer_pages else
             f"blocks: floor({self.available:,} / {self.block_bytes:,} B per block)")
            + ("" if not self.granule or self.available is None
               or self.available // self.block_bytes == self.num_blocks else
               f" = {self.available // self.block_bytes:,}, in whole 2 MiB granules per layer")
            + f" = {self.num_blocks:,} blocks of {self.block_bytes:,} B",
            f"per request of {report.max_model_len:,} tokens: "
            f"{self.blocks_per_request(report.max_model_len):,} blocks summed over the groups"
            + ("" if not {"sliding", "chunked"} & groups.keys() else  # why more than decode reads
               f" = {self.request_bytes(report.max_model_len) / GiB:.2f} GiB per sequence, "
               f"vLLM's reserve: {local} + "
               + (f"{self.in_flight_batches} x " if self.in_flight_batches > 1 else "")
               + "max_num_batched_tokens"
               + (" (batches in flight: pp on the V1 model runner, vLLM's choice for MoE and "
                  "Mamba hybrids in v0.26 to v0.28)" if self.v1_runner and len(self.stages) > 1
                  else "")
               + ", padding slots too; decode "
               f"reads only the {read}"),
            *report.logs(log))

    def _state_header(self, max_model_len: int) -> str:
        if self.mamba_mode == "none" and not self.spec_blocks and not self.draft_layers:
            return ""
        parts = []
        if self.mamba_mode != "none":
            parts.append(f"prefix caching: mamba_cache_mode {self.mamba_mode}")
        if self.mamba_mode != "none" or self.spec_blocks:
            extra = [f"{self.spec_blocks} speculative"] if self.spec_blocks else []
            extra += [f"{self.checkpoint_blocks} prefill checkpoint"] if self.checkpoint_blocks \
                else []
            parts.append(f"{self.state_blocks(max_model_len):,} state blocks per request in each "
                         "linear group" + (f" ({', '.join(extra)})" if extra else ""))
        if self.draft_layers:
            parts.append(f"{self.draft_layers} drafter attention layer"
                         f"{'s' if self.draft_layers > 1 else ''} in the pool")
        return "; " + "; ".join(parts)

    def report(self, max_model_len: int) -> EngineReport:
        refusal = self._refusal(max_model_len)
        tokens = self.logged_tokens(max_model_len)
        header = (f"block {self.block_size_reason.template}; max_num_batched_tokens "
                  f"{self.max_num_batched_tokens:,} ({self.batched_tokens_source.template})"
                  + ("" if self.hybrid_manager else "; hybrid KV cache manager off"
                     + (f" ({self.hybrid_off_reason})" if self.hybrid_off_reason else ""))
                  + self._state_header(max_model_len))
        report = EngineReport(
            name=NAME, version=self.version, block_size=self.block_size,
            block_size_reason=self.block_size_reason, max_model_len=max_model_len,
            model_max_len=self.model_max_len,
            groups=tuple(EngineGroup(g.spec.kind, len(g.layers), self.group_size,
                                     g.spec.block_size, g.spec.page_bytes, g.spec.window)
                         for g in self.groups), num_blocks=self.num_blocks,
            cache_tokens=None if refusal else self.cache_tokens(max_model_len),
            max_concurrency=None if refusal else self.max_concurrency(max_model_len),
            lines=tuple(self._lines(max_model_len, refusal)), refusal=refusal, settings={
                "group_size": self.group_size,
                "max_num_batched_tokens": self.max_num_batched_tokens,
                "max_num_batched_tokens_source": self.batched_tokens_source,
                "hybrid_manager": self.hybrid_manager,
                "pipeline_stages": [len(s) for s in self.stages],
                **({"mamba_cache_mode": self.mamba_mode} if self.mamba_mode != "none" else {}),
                **({"state_blocks_per_request": self.state_blocks(max_model_len)}
                   if self.mamba_mode != "none" or self.spec_blocks else {}),
                **({"draft_layers": self.draft_layers} if self.draft_layers else {}),
                "blocks_per_request": self.blocks_per_request(max_model_len),
                "logged_tokens": None if tokens is None else {
                    "v0.20_and_earlier": tokens[0], "v0.21_and_later": tokens[1]}},
            title=TITLE, header=Note(header),
            advice=self.advice(max_model_len, f"{arg('max_model_len')} ({arg('contexts')}) or "
                               f"raise {arg('gpu_memory_utilization')}"))
        return replace(report, details=self._details(report))
