"""TensorRT-LLM's paged KV cache, reproduced (docs/kvmem.md), from NVIDIA/TensorRT-LLM 1.1:
``tensorrt_llm/llmapi/llm_args.py`` (KvCacheConfig: ``free_gpu_memory_fraction`` 0.9,
``tokens_per_block`` 32), ``tensorrt_llm/_torch/pyexecutor/_util.py`` (KvCacheCreator: the
fraction of what the profiling run leaves), ``tensorrt_llm/_torch/pyexecutor/resource_manager.py``
(KVCacheManager: bytes per token) and ``cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp``
(``allocatePools``: the log lines)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from tokcost.errors import Note, UsageError, arg
from tokcost.memory.engines.base import Deployment, Engine, EngineGroup, EngineReport, Plan
from tokcost.memory.fit import DoesNotFit, GiB, GpuFit
from tokcost.units import format_bytes

if TYPE_CHECKING:
    from tokcost.memory.request import KvRequest

__all__ = ["TrtLlm", "TrtLlmPlan"]

# The release whose rules these are: 1.1 (the 1.1.0rc3 log in tests/fixtures/engine_logs.yaml,
# gpt-oss-120b, "max tokens" 86,711 -> 86,720 in whole blocks, rounded up). KvCacheConfig's
# defaults below are the same in every llm_args.py read, 1.0 to the 2026 main branch (1.2.1 of
# Apr 2026 is PyPI's newest release): free_gpu_memory_fraction 0.9, tokens_per_block 32,
# enable_block_reuse True, max_tokens and host_cache_size None. Not followed: main's
# KVCacheManager.calculate_max_num_blocks (resource_manager.py, commit 001541ba) rounds the
# blocks down, ``int(max_tokens // tokens_per_block)``, where 1.1 rounds up (``math.ceil``):
# one block fewer at most; 1.2.x's own source (wheels on pypi.nvidia.com only, its PyPI sdist a
# stub) could not be read to tie that to a release, so ``--engine trtllm`` keeps 1.1's.
RELEASE = "1.1"
DEFAULT_FRACTION = 0.9  # KvCacheConfig.free_gpu_memory_fraction ("Default is 90%")
# KvCacheConfig.tokens_per_block (PyTorch backend); engines built by trtllm-build take theirs
# from the plugin config (tensorrt_llm/plugin/plugin.py), 64 in earlier releases.
DEFAULT_TOKENS_PER_BLOCK = 32
LOG = "[TensorRT-LLM][INFO] "


@dataclass(frozen=True)
class TrtLlmPlan(Plan):
    """One pool of blocks, each ``tokens_per_block`` tokens of every layer of the stage."""

    # Per GPU: 2 (K, V) x ceil(kv heads / tp) x head_dim x layers x dtype bytes; MLA caches its
    # latent once, kv_lora_rank + qk_rope_head_dim values, kv factor 1, not split by TP; fp8 is
    # 1 byte (KVCacheManager.get_cache_size_per_token, resource_manager.py, main at 001541ba;
    # a 1.3.0rc7 Kimi-K2.5 log, 61 x 576 x 1 B, in tests/fixtures/engine_logs.yaml).
    token_bytes: int
    block_size: int
    available: int | None
    fit: GpuFit | None
    layers: dict[str, tuple[int, int]]  # kind: (layers, bytes per token of one)
    model_max_len: int | None = None

    @property
    def num_blocks(self) -> int | None:
        """``max_tokens = memory // bytes per token`` (KvCacheCreator, PR #5933), rounded up to
        whole blocks when the pool is allocated (issue #224)."""
        if self.available is None:
            return None
        return -(-(self.available // self.token_bytes) // self.block_size)

    def _blocks(self, context: int) -> int:
        return -(-context // self.block_size)

    def request_bytes(self, context: int) -> int:
        return self._blocks(context) * self.block_size * self.token_bytes

    def engine_blocks(self, context: int) -> int | None:
        return self._blocks(context)

    def max_concurrency(self, context: int) -> float | None:
        blocks = self.num_blocks
        return None if blocks is None else blocks / self._blocks(context)

    def fits(self, context: int, batch: int) -> bool | None:
        blocks = self.num_blocks
        return None if blocks is None else batch * self._blocks(context) <= blocks

    def lines(self, max_model_len: int) -> list[str]:
        blocks = self.num_blocks
        if blocks is None:
            return []
        tokens, tpb = blocks * self.block_size, self.block_size
        # A window longer than the pool is cut to it, and max_seq_len with it (beam width 1, no
        # sink tokens: the bound is blocks x tokens_per_block): KVCacheManager.
        # _validate_and_adjust_attention_windows / get_max_atten_window_upper_bound in
        # tensorrt_llm/_torch/pyexecutor/resource_manager.py; logged by 1.1.0rc3 (gpt-oss-120b,
        # tests/fixtures/engine_logs.yaml: "Adjusted max_seq_len to 86720").
        window = min(max_model_len, tokens)
        cut = [] if window == max_model_len else [
            f"[TRT-LLM] [W] Attention window size {max_model_len} exceeds upper bound {tokens} "
            f"for available blocks. Reducing to {tokens}.",
            f"[TRT-LLM] [W] Adjusted max_seq_len to {tokens}"]
        return [*cut, f"{LOG}Max KV cache blocks per sequence: {self._blocks(window)} [window "
                f"size={window}], tokens per block={tpb}, primary blocks={blocks}, "
                "secondary blocks=0", f"{LOG}Number of tokens per block: {tpb}.",
                f"{LOG}[MemUsageChange] Allocated {tokens * self.token_bytes / GiB:.2f} GiB for max"
                f" tokens in paged KV cache ({tokens})."]

    def report(self, max_model_len: int) -> EngineReport:
        blocks, fit = self.num_blocks, self.fit
        lines = self.lines(max_model_len)
        fraction = "" if fit is None or fit.util is None else (
            f"; free_gpu_memory_fraction {fit.util:g}")
        details = () if blocks is None else (
            f"blocks: ceil(floor({self.available:,} / {self.token_bytes:,} B per token) / "
            f"{self.block_size}) = {blocks:,} -> {blocks * self.block_size:,} tokens",
            f"TensorRT-LLM logs (max_seq_len {max_model_len:,}):",
            *(f"  {line.removeprefix(LOG)}" for line in lines))
        return EngineReport(
            name=TrtLlm.name, version=TrtLlm.code, block_size=self.block_size,
            block_size_reason=Note(f"{self.block_size} (tokens_per_block)"),
            max_model_len=max_model_len,
            groups=tuple(EngineGroup(kind, n, n, self.block_size, self.block_size * per_token)
                         for kind, (n, per_token) in self.layers.items() if n),
            num_blocks=blocks, cache_tokens=None if blocks is None else blocks * self.block_size,
            max_concurrency=self.max_concurrency(max_model_len), lines=tuple(lines),
            settings={"tokens_per_block": self.block_size,
                      "free_gpu_memory_fraction": None if fit is None else fit.util,
                      "kv_bytes_per_token": self.token_bytes},
            title=TrtLlm.title, header=Note(f"block {self.block_size} (tokens_per_block)"
                                            f"{fraction}"), details=details,
            advice=Note(f"lower {arg('contexts')} or raise {arg('free_gpu_memory_fraction')}"))


@dataclass(frozen=True, kw_only=True)
class TrtLlm(Engine):
    """TensorRT-LLM (PyTorch backend), with its free-memory fraction and its block."""

    name: ClassVar[str] = "trtllm"
    title: ClassVar[str] = "TensorRT-LLM"
    code: ClassVar[str] = f"TensorRT-LLM {RELEASE} KV cache manager (PyTorch backend)"

    free_gpu_memory_fraction: float | None = None  # None: 0.9
    tokens_per_block: int | None = None  # None: 32

    def __post_init__(self) -> None:
        frac, tpb = self.free_gpu_memory_fraction, self.tokens_per_block
        if frac is not None and not 0 < frac <= 1:
            raise UsageError(f"{arg('free_gpu_memory_fraction')} must be in (0, 1], got {frac:g}",
                             param="free_gpu_memory_fraction")
        if tpb is not None and (not isinstance(tpb, int) or tpb <= 0):
            raise UsageError(f"{arg('tokens_per_block')} must be a positive integer, got {tpb}",
                             param="tokens_per_block")

    def gpu_knobs(self) -> dict[str, bool]:
        return {"free_gpu_memory_fraction": self.free_gpu_memory_fraction is not None}

    def check(self, request: KvRequest) -> None:
        super().check(request)  # --dcp is vLLM's (TensorRT-LLM's helix parallelism is not modelled)
        cache = request.cache
        for param, given in (("gpu_util", request.budget.gpu_util is not None),
                             ("block_size", cache.block_size is not None),
                             ("kv_dtype", str(cache.kv_dtype).lower() in ("int8", "int4"))):
            if given:
                raise UsageError(
                    f"{arg(param)} is not TensorRT-LLM's: it sizes its pool with "
                    f"{arg('free_gpu_memory_fraction')} and {arg('tokens_per_block')}, and caches "
                    "in bf16/fp16, fp8 or fp32", param=param,
                    related=("engine", "free_gpu_memory_fraction", "tokens_per_block"))

    def plan(self, dep: Deployment) -> tuple[TrtLlmPlan, GpuFit | None]:
        self.refuse_layout(dep)
        layout = dep.stage_layout
        counts = layout.counts
        if counts["linear"]:
            # MambaHybridCacheManager keeps a conv and an SSM state per Mamba layer for each of
            # max_batch_size slots (main's _torch/pyexecutor/mamba_cache_manager.py, PR #6796
            # moved it out of resource_manager.py); no release's copy of it, nor of how
            # KvCacheCreator leaves room for it, could be read, so it is not modelled. Qwen3-Next
            # (PR #7892) came to main after 1.2.0rc0 was cut.
            raise UsageError(f"{dep.model} has linear-attention layers: TensorRT-LLM's Mamba "
                             "cache manager is not modelled by tokcost (its source could not be "
                             f"read at a release); use {arg('engine', 'vllm')} or "
                             f"{arg('engine', 'sglang')}", param="engine")
        tpb = self.tokens_per_block or DEFAULT_TOKENS_PER_BLOCK
        fraction = self.free_gpu_memory_fraction or DEFAULT_FRACTION
        available: int | None = dep.kv_memory  # the logged "available KV cache memory"
        if available is None and dep.memory_bytes is not None:
            # (total - peak of the profiling run) x fraction; the peak is weights + reserve here
            free = dep.memory_bytes - dep.weights - dep.reserve
            if free <= 0:
                raise DoesNotFit(
                    f"nothing is left for TensorRT-LLM's KV cache: {dep.memory_bytes / GiB:.1f} "
                    f"GiB minus {dep.weights / GiB:.1f} GiB weights and {dep.reserve / GiB:.1f} "
                    f"GiB reserve; use more GPUs ({arg('tp')}), a smaller weights dtype, or a "
                    "larger GPU", param="tp")
            available = int(free * fraction)
        # A sliding layer caches max_seq_len like a full one (no max_attention_window given).
        plan = TrtLlmPlan(token_bytes=layout.bytes_per_token, block_size=tpb, available=available,
                          fit=None, layers={k: (counts[k], layout.token_bytes.get(k, 0))
                                  for k in ("full", "sliding", "mla")},
                          model_max_len=dep.model_max_len)
        blocks = plan.num_blocks
        if available is None or blocks is None:
            return plan, None
        given = dep.kv_memory is not None
        fit = GpuFit(None if given else dep.memory_bytes, None if given else fraction,
                     0 if given else dep.weights, 0 if given else dep.reserve, available, tpb,
                     tpb * plan.token_bytes, blocks, blocks * tpb)
        return TrtLlmPlan(plan.token_bytes, tpb, available, fit, plan.layers,
                          model_max_len=dep.model_max_len), fit

    def budget_line(self, fit: GpuFit, dep: Deployment) -> str:
        if fit.memory_bytes is None or fit.util is None:
            return super().budget_line(fit, dep)
        return (f"GPU {dep.gpu.name if dep.gpu else 'custom'}: ({format_bytes(fit.memory_bytes)}"
                f" - weights {format_bytes(fit.weights_bytes)} - reserve "
                f"{format_bytes(fit.reserve_bytes)}) x {fit.util:g} (free_gpu_memory_fraction) = "
                f"{format_bytes(fit.available_bytes)} for the KV cache")

    def budget_notes(self, dep: Deployment) -> list[Note]:
        notes = []
        if dep.memory_bytes is not None and dep.kv_memory is None:
            notes.append(Note(f"reserve of {dep.reserve / GiB:g} GiB per GPU for what TensorRT-LLM"
                              f"'s profiling run peaks at beyond the weights (set "
                              f"{arg('reserve', 'SIZE')}, or pass its logged 'available KV cache "
                              f"memory' as {arg('kv_memory', 'SIZE')})"))
        if dep.layout.counts["sliding"]:
            notes.append(Note("TensorRT-LLM's sliding-window layers are counted as full ones (no "
                              "max_attention_window given)"))
        if dep.layout.indexer_bytes:
            # TensorRT-LLM runs DeepSeek-V3.2 from PR #8405 (merged to main in Oct 2025, after
            # 1.2.0rc0 was cut; a cherry-pick into 1.1 not checked). Its DSACacheManager
            # (_torch/attention_backend/sparse/dsa.py, main) sizes the indexer keys as
            # index_head_dim + index_head_dim // 128 x 4 values a layer at the cache dtype
            # (get_cache_size_per_token: 2 B each in bf16, 1 in fp8); some main revisions scale
            # that by indexer_k_cache_tokens_per_block / tokens_per_block, a newer one does not.
            # No release's copy could be read and no log was found: not modelled, only said.
            indexer = dep.layout.indexer_bytes
            trt = dep.layout.dtype.vector_bytes(indexer)
            notes.append(Note(f"DeepSeek-V3.2's indexer keys are counted as vLLM keeps them "
                              f"({indexer} B a layer and token); TensorRT-LLM added the model on "
                              f"main after 1.2.0rc0 (PR #8405), and its DSA cache manager keeps "
                              f"them at the cache dtype ({trt} B here; not modelled)"))
        return notes

    def pool_notes(self, report: EngineReport, context: int) -> list[Note]:
        pool = report.cache_tokens
        if pool is None or context <= pool:
            return []
        return [Note(f"TensorRT-LLM's pool of {pool:,} tokens cannot hold one {context:,}-token "
                     f"request; give a smaller context or a larger "
                     f"{arg('free_gpu_memory_fraction')}")]
