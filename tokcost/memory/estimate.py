"""One ``kvmem estimate``: a model's KV cache at a set of context lengths, optionally on a GPU;
``KvResult.to_dict`` is the ``--json`` document (keys in docs/kvmem.md)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from tokcost.catalog.schema import Architecture, Gpu, ModelEntry
from tokcost.errors import Note, UsageError, arg
from tokcost.memory.cache_policy import Eviction, KvQuant, QuantFormat, policy_bytes
from tokcost.memory.engines.base import Deployment, Engine, EngineReport, Plan
from tokcost.memory.fit import DEFAULT_RESERVE, GpuFit
from tokcost.memory.kv import ArchitectureIncomplete, attention_shape, kv_layout, pp_stages
from tokcost.memory.offload import OffloadTier, offload_tier
from tokcost.memory.request import CacheSpec, KvRequest
from tokcost.memory.roofline import Roofline, gpu_peaks, roofline_notes, weights_bytes

if TYPE_CHECKING:
    from pathlib import Path

    from tokcost.memory.kv import KvLayout
    from tokcost.memory.roofline import DecodeStep, Prefill

__all__ = ["ContextRow", "KvResult", "PolicyPlan", "estimate_kv", "policy_plan"]

_SEARCH_LIMIT = 10**8  # the "largest context" search when the model states no window
MAX_CONTEXT = 10**9  # a typo: the longest context windows are about 10^7 tokens
# kv_cache_dtype "auto" is the model's dtype; fp8/int4 checkpoints still cache in bf16.
AUTO_KV = {"bf16": "bf16", "fp16": "fp16", "fp32": "fp32"}


@dataclass(frozen=True)
class ContextRow:
    """Cache sizes for one context length (bytes per GPU), in the JSON document's order."""

    context: int
    sequence_bytes: int  # exact, no block rounding
    paged_sequence_bytes: int  # whole blocks
    batch_bytes: int  # paged, x batch
    blocks_per_sequence: int
    by_layer_kind: dict[str, int]
    beyond_context_window: bool
    max_concurrency: float | None = None
    fits: bool | None = None
    engine_blocks_per_request: int | None = None  # vLLM: blocks one request holds
    decode: DecodeStep | None = None
    prefill: Prefill | None = None  # time to first token for the row's prompt

    def to_dict(self) -> dict[str, Any]:
        return {f.name: v.to_dict() if hasattr(v := getattr(self, f.name), "to_dict") else v
                for f in fields(self)}


@dataclass(frozen=True)
class KvResult:
    """Every number ``kvmem estimate`` reports for one model (per GPU)."""

    model: str
    kv_dtype: str
    block_size: int
    tp: int
    pp: int
    batch: int
    dcp: int
    dp: int
    layout: KvLayout
    rows: tuple[ContextRow, ...]
    context_window: int | None
    engine: EngineReport
    gpu: str | None = None  # the GPU's name, "custom" for a memory size, None without either
    fit: GpuFit | None = None
    largest_context: int | None = None
    notes: tuple[Note, ...] = ()
    cache_policy: dict[str, Any] | None = None  # with evict/residual (PolicyPlan.to_dict)
    budget_line: str | None = None  # the budget, in the engine's words (the table's line)
    plot: Path | None = None
    offload: OffloadTier | None = None  # --cpu-offload's host tier
    # The fullest pipeline stage (one GPU's layers; ``layout`` itself without --pp): the per-GPU
    # figures (bytes per token, rows) are its. Not in the JSON beyond those figures.
    stage: KvLayout | None = None
    # Not in the JSON: where a config.json / hf: model's numbers came from; the engine's plan.
    source_notes: tuple[str, ...] = ()
    plan: Plan | None = field(default=None, repr=False, compare=False)

    @property
    def bytes_per_token(self) -> int:
        """One GPU's: with --pp the fullest stage's layers (what its pool is sized by)."""
        return (self.stage or self.layout).bytes_per_token

    def to_dict(self) -> dict[str, Any]:
        lay, counts, f = self.layout, self.layout.counts, self.fit
        data: dict[str, Any] = {
            "model": self.model, "kv_dtype": self.kv_dtype, "block_size": self.block_size,
            "tp": self.tp, "pp": self.pp, "dcp": self.dcp, "dp": self.dp, "batch": self.batch,
            "per_gpu": self.tp > 1 or self.pp > 1,
            "layers": {**{kind: counts[kind] for kind in ("full", "sliding", "mla", "linear")},
                       "kv_shared": lay.kv_shared},
            "sliding_window": lay.window if counts["sliding"] else None,
            "sliding_chunked": lay.chunked,  # Llama-4: the window is a chunk (docs/kvmem.md)
            "kv_heads_per_gpu": lay.kv_heads_per_gpu, "bytes_per_token": self.bytes_per_token,
            "linear_state_bytes_per_layer": lay.state_bytes if counts["linear"] else None,
            "context_window": self.context_window, "contexts": [r.to_dict() for r in self.rows],
            "gpu": None if f is None else {
                "name": self.gpu, "memory_bytes": f.memory_bytes, "gpu_util": f.util,
                "weights_bytes": f.weights_bytes, "reserve_bytes": f.reserve_bytes,
                "available_kv_bytes": f.available_bytes, "page_bytes": f.page_bytes,
                "num_blocks": f.num_blocks, "cache_tokens": f.cache_tokens,
                "largest_context": self.largest_context}, "engine": self.engine.to_dict(),
            "notes": [str(n) for n in self.notes]}
        if self.cache_policy is not None:  # only with evict/residual: other documents unchanged
            data["cache_policy"] = self.cache_policy
        if self.offload is not None:  # likewise only with --cpu-offload
            data["cpu_offload"] = self.offload.to_dict(tuple(r.context for r in self.rows))
        return {**data, "plot": str(self.plot) if self.plot else None}


def estimate_kv(entry: ModelEntry, request: KvRequest, gpu: Gpu | None = None) -> KvResult:
    """Everything ``kvmem estimate`` reports for ``entry`` (per GPU); ``gpu``: the request's,
    looked up (tokcost.estimate_memory does both)."""
    arch = entry.architecture
    if arch is None:
        raise ArchitectureIncomplete(
            f"model '{entry.id}' has no architecture (layers, kv_heads, head_dim...); KV sizes "
            f"need them: add them from its config.json to your own {arg('catalog', 'FILE')}",
            param="catalog")
    if gpu is None and isinstance(request.budget.gpu, Gpu):
        gpu = request.budget.gpu
    engine, cache, roof = request.engine_spec.profile, request.cache, request.roofline
    stages = pp_stages(arch.layers, request.parallel.pp)  # a bad split, before any work
    if request.parallel.pp > 1 and (arch.attention.kv_shared_layers or
                                    arch.attention.parallel_linear):
        raise UsageError(f"{arg('pp')} is not modelled for {entry.id}'s layers (KV shared "
                         "across layers, or attention and Mamba side by side); use "
                         f"{arg('pp', 1)}", param="pp")
    contexts = _contexts(entry, request.contexts)
    prompt_note = _prompt_check(roof.input_tokens, contexts)
    weights_dtype = request.budget.weights_dtype
    peaks = gpu_peaks(gpu, roof, weights_dtype=weights_dtype or arch.weights_dtype)
    if roof.input_tokens is not None and peaks is not None and peaks.flops_per_s is None:
        raise UsageError(
            f"a time to first token needs the GPU's peak FLOP/s, and "
            f"{gpu.name if gpu else 'a custom GPU'} states none: give {arg('flops', 'FLOP/s')}",
            param="flops")
    dep = engine.settle(replace(_deployment(entry, arch, request, gpu),
                                pp_extra_last=engine.pp_extra_last))
    plan, fit = engine.plan(dep)
    notes: list[Note] = []
    if cache.evict is not None or cache.residual is not None:
        plan, notes = policy_plan(plan, fit, dep, cache, engine,
                                  layers=max(len(s) for s in stages), prompt=roof.input_tokens)
    notes += engine.budget_notes(dep)
    # A decode step passes every pipeline stage: one tp group reads all layers' weights.
    roofline = None
    if peaks is not None:
        # (with DP attention the whole TP group still splits the weights and all-reduces)
        roofline = Roofline(arch, replace(dep.layout, tp=request.parallel.tp), peaks,
                            weights_dtype=weights_dtype, model=entry.id)
        notes += roofline_notes(arch, peaks, batch=request.batch, gpu=gpu.name if gpu else None,
                                weights_dtype=weights_dtype, model=entry.id,
                                tp=request.parallel.tp)
    notes += _layout_notes(entry, dep, engine, plan.block_size, contexts)
    notes += engine.idle_notes(dep)
    notes += [prompt_note] if prompt_note is not None and roofline is not None else []
    tier = None
    if request.offload.cpu_offload is not None:
        tier = offload_tier(request.offload.cpu_offload, request.offload.offload_backend, dep,
                            block=plan.block_size, release=getattr(engine, "release", None),
                            hybrid_manager=getattr(engine, "hybrid_manager", True),
                            host=plan.host_layout())
        notes.append(Note("the host tier keeps blocks the GPU let go (prefix caching) and loads "
                          "them back instead of recomputing them; running sequences stay in the "
                          "GPU's pool, which it leaves as it is"))
    report = plan.report(max(contexts))
    notes += _parallel_notes(dep, request.parallel.dp, report)
    return KvResult(
        model=entry.id, kv_dtype=dep.layout.dtype.name, block_size=plan.block_size,
        tp=request.parallel.tp, pp=dep.pp, batch=request.batch, dcp=dep.dcp,
        dp=request.parallel.dp, layout=dep.layout,
        rows=_rows(entry, request, dep, plan, roofline, contexts), stage=dep.stage_layout,
        context_window=entry.context_window, engine=report,
        gpu=gpu.name if gpu else ("custom" if dep.memory_bytes is not None else None), fit=fit,
        largest_context=plan.largest_context(request.batch, entry.context_window or _SEARCH_LIMIT),
        notes=(*notes, *engine.pool_notes(report, max(contexts)),
               *plan.batch_notes(request.batch, contexts)),
        cache_policy=plan.to_dict() if isinstance(plan, PolicyPlan) else None,
        budget_line=None if fit is None else engine.budget_line(fit, dep), plan=plan,
        offload=tier)


def _contexts(entry: ModelEntry, given: tuple[int, ...]) -> tuple[int, ...]:
    contexts = given or (entry.context_window or 8192,)
    for ctx in contexts:
        if ctx > MAX_CONTEXT:
            window = (f"{entry.context_window:,} tokens" if entry.context_window
                      else "no window stated")
            raise UsageError(
                f"{arg('contexts', f'{ctx:,}')} is beyond {MAX_CONTEXT:,} tokens, far past any "
                f"model's context window ({entry.id}: {window}); check the number and its "
                "suffix", param="contexts")
    return contexts


def _prompt_check(prompt: int | None, contexts: tuple[int, ...]) -> Note | None:
    """A prompt longer than every context is a mistake; one longer than some, a note."""
    if prompt is None or prompt <= min(contexts):
        return None
    if prompt > max(contexts):
        raise UsageError(
            f"{arg('input_tokens', f'{prompt:,}')} is longer than the longest context, "
            f"{max(contexts):,} tokens ({arg('contexts')}): a prompt must fit in the context "
            f"it is served at; give {arg('contexts')} of at least {prompt:,} tokens or a "
            "shorter prompt", param="input_tokens", related=("contexts",))
    short = ", ".join(f"{c:,}" for c in contexts if c < prompt)
    return Note(f"{arg('input_tokens', f'{prompt:,}')} is longer than the context of "
                f"{short}: those rows' TTFT is for a prompt they cannot hold")


def _deployment(entry: ModelEntry, arch: Architecture, request: KvRequest,
                gpu: Gpu | None) -> Deployment:
    cache, par, budget = request.cache, request.parallel, request.budget
    auto = str(cache.kv_dtype).lower() == "auto"
    dtype = AUTO_KV.get(arch.weights_dtype, "bf16") if auto else cache.kv_dtype
    attn_dp = request.engine_spec.profile.attention_dp(par.dp)
    attn_tp = par.tp // attn_dp  # kv heads split over the attention TP group
    layout = request.engine_spec.profile.cache_layout(
        kv_layout(arch, dtype, tp=attn_tp, group=cache.kv_group_size, model=entry.id),
        lambda: kv_layout(arch, AUTO_KV.get(arch.weights_dtype, "bf16"), tp=attn_tp,
                          model=entry.id))
    head_dim = attention_shape(arch, entry.id)[1] if layout.token_bytes.keys() - {"mla"} else None
    group = cache.kv_group_size
    if group is not None and head_dim is not None and group < head_dim and head_dim % group:
        # Values are grouped over a head's channels: a cache stores whole groups (as kvmem quality).
        raise UsageError(f"{arg('kv_group_size', group)} must divide {entry.id}'s head_dim "
                         f"{head_dim}", param="kv_group_size")
    memory = gpu.memory_bytes if gpu is not None else budget.gpu_memory
    weights = 0
    if budget.kv_memory is None and memory is not None:
        weights = -(-weights_bytes(arch, dtype=budget.weights_dtype, model=entry.id)
                    // (par.tp * par.pp))
    return Deployment(
        layout=layout, gpu=gpu, memory_bytes=memory, kv_memory=budget.kv_memory, weights=weights,
        util=budget.gpu_util, reserve=DEFAULT_RESERVE if budget.reserve is None else budget.reserve,
        block_size=cache.block_size, head_dim=head_dim, pp=par.pp, dcp=par.dcp, attn_dp=attn_dp,
        kv_heads=None if head_dim is None else attention_shape(arch, entry.id)[0], model=entry.id,
        model_max_len=entry.context_window, family=entry.family, model_class=arch.model_class,
        attention_heads=arch.attention_heads, kv_dtype_given="auto" if auto else None,
        moe=bool(arch.experts))


def _layout_notes(entry: ModelEntry, dep: Deployment, engine: Engine, block: int,
                  contexts: tuple[int, ...]) -> list[Note]:
    layout, counts = dep.layout, dep.layout.counts
    notes = []
    if dep.attn_dp > 1:
        # an MLA latent has no kv heads to split (the note below says it is whole on each GPU)
        heads = (f", so kv heads split {layout.tp} way{'s' * (layout.tp > 1)}, not "
                 f"{layout.tp * dep.attn_dp}" if counts["full"] or counts["sliding"] else "")
        notes.append(Note(f"numbers are per GPU: DP attention runs {dep.attn_dp} attention ranks "
                          f"of {layout.tp} GPU{'s' * (layout.tp > 1)} in the "
                          f"{layout.tp * dep.attn_dp}-way tensor-parallel group{heads}"))
    elif layout.tp > 1:
        notes.append(Note(f"numbers are per GPU: {layout.tp}-way tensor parallelism splits kv "
                          "heads"))
    if "mla" in counts and layout.tp * dep.attn_dp > 1:
        notes.append(Note("MLA's latent cache is replicated on every tensor-parallel GPU"))
    if dep.pp > 1:
        sizes = ", ".join(str(len(s)) for s in dep.stages)
        split = "SGLang's split" if dep.pp_extra_last else "vLLM's split"
        if len(layout.layers) % dep.pp:
            split += (": the last stages take the layers left over" if dep.pp_extra_last else
                      ": the stages before the last take the layers left over")
        notes.append(Note(f"pipeline parallelism: {dep.pp} stages of {sizes} layers ({split}); "
                          "the fullest stage sets every stage's pool"))
    if "linear" in counts:
        arch = entry.architecture
        att = arch.attention if arch is not None else None
        notes.append(Note(
            "linear-attention layers hold a fixed state per sequence: the SSM part in float32 "
            "(the config's mamba_ssm_dtype), the rest in bf16"
            if att is not None and att.linear_fp32_elements else
            # NemotronH: vLLM reads mamba_ssm_cache_dtype from v0.13 (PR #29978)
            "linear-attention layers hold a fixed state per sequence, the SSM part in the "
            "config's mamba_ssm_cache_dtype where the engine reads it (docs/kvmem-engines.md)"
            if att is not None and att.linear_ssm_cache_dtype else
            "linear-attention layers hold a fixed bf16 state per sequence"))
    if "sliding" in counts or "linear" in counts:
        notes.append(Note(f"the blocks column counts the context's {block}-token blocks; "
                          "windowed and linear layers hold fewer, which per sequence, "
                          "concurrency and fits already count"))
    if layout.skipped:
        notes.append(_skipped_note(layout))
    foreign = engine.layout_note(layout.dtype)
    notes += [foreign] if foreign is not None else []
    window = entry.context_window
    if window and any(ctx > window for ctx in contexts):
        notes.append(Note(f"contexts marked >window exceed {entry.id}'s {window:,}-token "
                          "context window: sizes for a model that cannot serve them"))
    return notes


def _skipped_note(layout: KvLayout) -> Note:
    """Which layers cache in the model's dtype (``--kv-cache-dtype-skip-layers``)."""
    kept = sorted(layout.skipped)
    sliding = [i for i, kind in enumerate(layout.layers) if kind == "sliding"]
    which = (f"its {len(kept)} sliding-window layers" if kept == sliding else
             f"layer{'s' * (len(kept) > 1)} {', '.join(map(str, kept))}")
    if layout.skipped_dtype == layout.dtype.name:
        return Note(f"{arg('kv_cache_dtype_skip_layers')} has no effect: the cache is already in "
                    f"the model's dtype, {layout.dtype.name}; it keeps {which} in it when "
                    f"{arg('kv_dtype')} is another (fp8)")
    return Note(f"{arg('kv_cache_dtype_skip_layers')}: {which} cache in "
                f"{layout.skipped_dtype} (the model's dtype), the other "
                f"{len(layout.layers) - len(kept)} in {layout.dtype.name}")


def _parallel_notes(dep: Deployment, dp: int, report: EngineReport) -> list[Note]:
    notes = []
    if dep.dcp > 1:
        notes.append(Note(f"decode context parallel {dep.dcp}: each GPU of a DCP group holds one "
                          f"token in {dep.dcp} of a sequence (vLLM PR #23734), so a GPU's pool "
                          f"serves {dep.dcp} x the tokens; sizes per sequence are one GPU's "
                          "share (the decode roofline still reads the whole sequence)"))
    if dep.attn_dp > 1:
        # SGLang: a scheduler per attention DP rank, each with its own pool of
        # max_total_num_tokens (its GPUs' share), over the same TP group's GPUs.
        conc = report.max_concurrency
        total = (f": {dp * conc:,.2f}x requests of {report.max_model_len:,} tokens in all"
                 if conc is not None and not report.refuses_to_start else "")
        notes.append(Note(f"DP attention {dp}: each of the {dp} attention ranks holds its own "
                          "pool on its GPUs of the tensor-parallel group (no more GPUs), the "
                          f"numbers above are one rank's{total}"))
    elif dp > 1:
        # vllm/config/cache.py: kv_cache_size_tokens is "per-DP-engine"; SGLang's DP likewise.
        conc = report.max_concurrency
        total = (f": {dp * conc:,.2f}x requests of {report.max_model_len:,} tokens in all"
                 if conc is not None and not report.refuses_to_start else "")
        notes.append(Note(f"data parallel {dp}: each of the {dp} engines holds its own cache, "
                          f"the numbers above are one engine's{total}"))
    return notes


def _rows(entry: ModelEntry, request: KvRequest, dep: Deployment, plan: Plan,
          roofline: Roofline | None, contexts: tuple[int, ...]) -> tuple[ContextRow, ...]:
    batch, block, window = request.batch, plan.block_size, entry.context_window
    prompt, policy = request.roofline.input_tokens, isinstance(plan, PolicyPlan)
    dcp = request.parallel.dcp  # a GPU holds every dcp-th token
    # Per GPU: with --pp the stage holding the most at each context (the plan's fullest stage)
    stages = [dep.layout.take(s) for s in dep.stages]
    def fullest(tokens: int) -> KvLayout:
        return max(stages, key=lambda lay: lay.sequence_bytes(tokens))
    return tuple(ContextRow(
        context=ctx, sequence_bytes=paged if policy else lay.sequence_bytes(-(-ctx // dcp)),
        paged_sequence_bytes=paged, batch_bytes=batch * paged,
        blocks_per_sequence=-(-ctx // (block * dcp)),
        by_layer_kind={"full": paged} if policy else lay.by_kind(-(-ctx // dcp), block),
        beyond_context_window=bool(window and ctx > window),
        max_concurrency=plan.max_concurrency(ctx), fits=plan.fits(ctx, batch),
        engine_blocks_per_request=plan.engine_blocks(ctx),
        decode=roofline.decode(ctx, batch) if roofline else None,
        prefill=roofline.prefill(prompt or ctx) if roofline else None)
        for ctx in contexts for paged in [plan.request_bytes(ctx)]
        for lay in [fullest(-(-ctx // dcp))])


# A quantized cache keeps its residual in the model's compute dtype (bf16/fp16).
_RESIDUAL_BYTES = 2


@dataclass(frozen=True)
class PolicyPlan(Plan):
    """An engine plan whose per-request bytes are a cache policy's (``evict``, ``residual``;
    full-attention models only), in the engine's KV memory (numbers per GPU)."""

    inner: Plan
    block_size: int
    fit: GpuFit | None
    quant: KvQuant | None
    evict: Eviction | None
    layers: int
    kv_heads: int
    head_dim: int
    full_bytes: int
    prompt: int | None = None  # SnapKV compresses this many prompt tokens (None: all)

    def request_bytes(self, context: int) -> int:
        return policy_bytes(context, layers=self.layers, kv_heads=self.kv_heads,
                            head_dim=self.head_dim, full_bytes=self.full_bytes,
                            quant=self.quant, evict=self.evict, prompt=self.prompt)

    def largest_context(self, batch: int, limit: int) -> int | None:
        return super().largest_context(batch, limit) or None  # none at all: no answer

    def report(self, max_model_len: int) -> EngineReport:
        return self.inner.report(max_model_len)

    def to_dict(self) -> dict[str, Any]:
        q, e = self.quant, self.evict
        grouped = q if q is not None and q.grouped else None
        return {"kv_dtype": q.format if q is not None else None, "keys": grouped and grouped.keys,
                "values": grouped and grouped.values, "group": grouped and grouped.group,
                "residual": grouped and grouped.residual,
                "evict": None if e is None else {
                    k: getattr(e, k) for k in ("kind", "sinks", "heavy", "budget", "recent")},
                "prompt": self.prompt if e is not None and e.kind == "snapkv" else None}


def policy_plan(inner: Plan, fit: GpuFit | None, dep: Deployment, cache: CacheSpec, engine: Engine,
    *, layers: int, prompt: int | None) -> tuple[PolicyPlan, list[Note]]:
    """The plan for ``cache``'s policy (``layers``: the fullest stage's), and its notes."""
    layout, residual, ev = dep.layout, cache.residual, cache.eviction
    kinds = [kind for kind, n in layout.counts.items() if n and kind != "full"]
    if kinds or dep.head_dim is None or layout.kv_heads_per_gpu is None:
        raise UsageError(f"model '{dep.model}' has {', '.join(sorted(kinds))} layers; cache "
                         "policies are planned for full-attention models only",
                         param="evict" if ev is not None else "residual")
    dtype = layout.dtype
    if residual is not None and dtype.group is None:
        raise UsageError(f"{arg('residual')} applies to int8/int4 caches (KIVI), not "
                         f"{dtype.name}; give {arg('kv_dtype', 'int8')} or int4",
                         param="residual", related=("kv_dtype",))
    quant: KvQuant | None = None
    full_bytes = dtype.bits // 8
    if dtype.name == "fp8":
        quant = KvQuant("fp8", residual=0)
    elif dtype.group is not None:
        fmt: QuantFormat = "int8" if dtype.name == "int8" else "int4"
        # Without a residual, keys per token as kv_layout sizes them; with one, KIVI's layout.
        quant = KvQuant(fmt, group=dtype.group, keys="token" if residual is None else "channel",
                        residual=residual or 0)
        full_bytes = _RESIDUAL_BYTES
    plan = PolicyPlan(inner, inner.block_size, fit, quant, ev, layers, layout.kv_heads_per_gpu,
                      dep.head_dim, full_bytes, prompt)
    if max(plan.request_bytes(1), plan.request_bytes(10**6)) == 0:
        raise UsageError(f"{arg('evict')} '{cache.evict}' keeps no tokens; give a budget of at "
                         "least one", param="evict")
    what = ([f"{quant.format} keys per {quant.keys}, values per {quant.values} in groups of "
             f"{quant.group}, the last {quant.residual:,} tokens in bf16"]
            if quant is not None and quant.grouped else [])
    what += [f"{ev.kind} eviction"] if ev is not None else []
    notes = [Note(f"cache policy: {'; '.join(what)} (tokcost.memory.cache_policy); per "
                  "sequence is the bytes it holds at each context")] if what else []
    kept = engine.eviction_note() if ev is not None else None
    return plan, [*notes, *([kept] if kept else []),
                  Note("the decode and prefill rooflines read the full cache, not the policy's")]
