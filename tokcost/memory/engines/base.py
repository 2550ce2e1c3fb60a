"""What every engine profile is and answers: an ``Engine`` turns a ``Deployment`` (one GPU's
cache and budget) into a ``Plan`` (pool, concurrency, start-up) and its ``EngineReport``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

from tokcost.errors import Note, UsageError, arg
from tokcost.memory.fit import DEFAULT_RESERVE, DEFAULT_UTIL, GiB, GpuFit, gpu_fit
from tokcost.memory.kv import KvDtype, KvLayout, pp_stages
from tokcost.units import format_bytes

if TYPE_CHECKING:
    from tokcost.catalog.schema import Gpu
    from tokcost.memory.request import KvRequest

__all__ = ["Deployment", "Engine", "EngineGroup", "EngineReport", "HostGroup", "HostLayout", "Plan",
           "Release"]

RefusalCause = Literal["model_len", "memory"]


@dataclass(frozen=True, order=True)
class Release:
    """An engine release, major.minor: ``vllm@0.20`` picks the rules of v0.20. Engines that
    declare ``Engine.patches`` (SGLang, whose rules change within a minor) add the patch."""

    major: int
    minor: int
    patch: int | None = None

    @classmethod
    def parse(cls, text: str, engine: str, *, patch: bool = False) -> Release:
        parts = str(text).strip().lower().removeprefix("v").split(".")  # a patch: its minor's
        if patch and len(parts) == 4 and parts[3].startswith("post"):  # v0.5.6.post2: v0.5.6's
            parts = parts[:3]
        form, eg = ("MAJOR.MINOR[.PATCH]", "0.5.23") if patch else ("MAJOR.MINOR", "0.20")
        if not (2 <= len(parts) <= 3 and all(p.isdigit() for p in parts)):
            raise UsageError(f"{arg('engine', f'{engine}@{text}')} names no release; write the "
                             f"version as {form}, e.g. {engine}@{eg}", param="engine")
        if any(len(p) > 4 for p in parts):  # well formed, but no release is numbered so
            digits = max(len(p) for p in parts)  # (not echoed: it may run to thousands)
            raise UsageError(f"{arg('engine', f'{engine}@<a {digits:,}-digit number>')} names no "
                             f"release (their numbers run to 4 digits); give one as {form}, e.g. "
                             f"{engine}@{eg}", param="engine")
        given = int(parts[2]) if patch and len(parts) == 3 else None
        return cls(int(parts[0]), int(parts[1]), given)

    def __str__(self) -> str:
        return f"v{self.major}.{self.minor}" + ("" if self.patch is None else f".{self.patch}")


@dataclass(frozen=True, kw_only=True)
class Deployment:
    """One model's cache on one GPU and that GPU's budget: what an engine plans for."""

    layout: KvLayout  # per GPU, every layer
    gpu: Gpu | None = None
    memory_bytes: int | None = None  # one GPU's memory (None: no GPU given)
    kv_memory: int | None = None  # the KV memory an engine logged: replaces the budget
    weights: int = 0  # per GPU
    util: float | None = None  # None: the engine's default gpu_memory_utilization
    reserve: int = DEFAULT_RESERVE
    block_size: int | None = None  # None: the engine's own
    head_dim: int | None = None
    pp: int = 1
    dcp: int = 1  # decode context parallel: GPUs of a TP group that split a sequence's tokens
    # Attention data-parallel ranks inside the TP group (SGLang's DP attention): the layout's
    # tp is then the attention TP, the TP group's size / attn_dp; 1: none.
    attn_dp: int = 1
    kv_heads: int | None = None  # the model's (for vLLM's DCP checks); None: MLA only
    attention_heads: int | None = None  # the model's query heads (vLLM picks some backends by
    # the heads per GPU, attention_heads // tp); None: not known
    model: str = "?"  # the model's id, for messages
    model_max_len: int | None = None  # the model's context window
    family: str | None = None
    # The model class config.json's architectures names (catalog architecture.model_class),
    # which engines' model registries look up; None: not known
    model_class: str | None = None
    # The KV dtype given where the layout's is another: "auto" (the model's), or one the engine
    # caches in another layout (vLLM: DeepSeek-V3.2's fp8 as fp8_ds_mla, Engine.settle); None:
    # the layout's is the one given.
    kv_dtype_given: str | None = None
    pp_extra_last: bool = False  # the engine gives a split's extra layers to the last stages
    moe: bool = False  # routed experts (vLLM's ModelConfig.is_moe: num_experts > 0)

    @property
    def stages(self) -> tuple[range, ...]:
        """Each pipeline stage's layers, split as the engine splits them."""
        return pp_stages(len(self.layout.layers), self.pp, extra_last=self.pp_extra_last)

    @property
    def stage_layout(self) -> KvLayout:
        """The pipeline stage that caches the most per token (it sets every stage's pool)."""
        return max((self.layout.take(s) for s in self.stages), key=lambda x: x.bytes_per_token)

    @property
    def heads_per_gpu(self) -> int | None:
        """Query heads on each tensor-parallel GPU (vLLM's num_heads // tp), None: not known."""
        return None if self.attention_heads is None else self.attention_heads // self.layout.tp

    def fit(self, block_size: int, margin: int | None = None) -> GpuFit | None:
        """The budget vLLM would take, in blocks of the fullest stage; None without one
        (``margin``: vLLM v0.34's extensible KV cache, ``gpu_fit``)."""
        if self.memory_bytes is None and self.kv_memory is None:
            return None
        util = DEFAULT_UTIL if self.util is None else self.util
        return gpu_fit(self.stage_layout, memory_bytes=self.memory_bytes, util=util,
                       weights=self.weights, reserve=self.reserve, kv_memory=self.kv_memory,
                       block_size=block_size, margin=margin)

    def driver_note(self, headroom: str) -> list[Note]:
        """What nvidia-smi's total hides, and which part of the budget absorbs it."""
        if self.gpu is None or self.kv_memory is not None:
            return []
        return [Note(f"{self.gpu.name}'s memory is the total nvidia-smi/rocm-smi reports; the "
                     "framework sees a little less (the driver and the CUDA/HIP context keep a "
                     f"few hundred MiB), which {headroom}")]


def largest(holds: Callable[[int], bool | None], limit: int) -> int:
    """The largest n in 0..``limit`` for which ``holds`` (monotone), 0 for none."""
    lo, hi = 0, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if holds(mid) else (lo, mid - 1)
    return lo


@dataclass(frozen=True)
class EngineGroup:
    """One KV-cache group (vLLM) or pool (SGLang): layers that share a block table."""

    kind: str  # full, sliding, mla, mamba (vLLM spec kinds) or full/swa pools (SGLang)
    layers: int  # real layers in the group
    slots: int  # layer slots it occupies (layers + padding)
    block_size: int
    page_bytes: int  # one block of one layer
    window: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "layers": self.layers, "padding": self.slots - self.layers,
                "block_size": self.block_size, "page_bytes": self.page_bytes,
                "sliding_window": self.window}


@dataclass(frozen=True, kw_only=True)
class EngineReport:
    """The engine's view of one deployment, for ``max_model_len`` tokens per request."""

    name: str
    version: str  # which engine code the formulas follow
    block_size: int
    block_size_reason: Note
    max_model_len: int
    model_max_len: int | None = None
    groups: tuple[EngineGroup, ...] = ()
    num_blocks: int | None = None
    cache_tokens: int | None = None  # the pool's capacity as the engine logs it
    max_concurrency: float | None = None
    lines: tuple[str, ...] = ()  # log lines as the engine prints them
    refusal: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)  # knobs and where defaults came from
    # The rest is for the table and the plot, not the JSON document.
    title: str = ""
    sets_aside: bool = True
    header: Note
    details: tuple[str, ...] = ()
    advice: Note | None = None

    @property
    def refuses_to_start(self) -> bool:
        return self.refusal is not None

    @property
    def refusal_cause(self) -> RefusalCause | None:
        """Why it refuses: the model's length, else memory (advice names the right knob)."""
        if self.refusal is None:
            return None
        too_long = self.model_max_len is not None and self.max_model_len > self.model_max_len
        return "model_len" if too_long else "memory"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "version": self.version, "block_size": self.block_size,
            "block_size_reason": str(self.block_size_reason), "max_model_len": self.max_model_len,
            "groups": [g.to_dict() for g in self.groups], "num_blocks": self.num_blocks,
            "cache_tokens": self.cache_tokens, "max_concurrency": self.max_concurrency,
            "logged_lines": list(self.lines), "refuses_to_start": self.refuses_to_start,
            "refusal": self.refusal, "refusal_cause": self.refusal_cause,
            **{k: str(v) if isinstance(v, Note) else v for k, v in self.settings.items()}}

    def logs(self, lines: list[str]) -> tuple[str, ...]:
        return (f"{self.title} logs (max_model_len {self.max_model_len:,}):",
                *(f"  {line}" for line in lines)) if lines else ()


@dataclass(frozen=True)
class HostGroup:
    """One KV cache group as a host tier stores it: its tokens per block and the blocks of a
    request it keeps (None: every block, a full-attention group; else a window's, a chunk's,
    or one Mamba state)."""

    block_size: int
    kept: int | None
    kind: str = "full"  # full, mla, sliding, chunked or mamba: what bounds ``kept``

    def blocks(self, context: int) -> int:
        whole = -(-context // self.block_size)
        return whole if self.kept is None else min(whole, self.kept)


@dataclass(frozen=True)
class HostLayout:
    """What one block id holds on the first pipeline stage's GPU, every layer slot (bytes), and
    the groups that share the block ids: what an engine's host tier copies per block."""

    block_bytes: int
    groups: tuple[HostGroup, ...]

    def blocks(self, context: int) -> int:
        """Blocks one request of ``context`` tokens keeps in the tier, all groups together."""
        return sum(g.blocks(context) for g in self.groups)


class Plan(ABC):
    """An engine's accounting for one deployment (numbers per GPU)."""

    block_size: int
    model_max_len: int | None = None  # the model's own context window
    fit: GpuFit | None  # the budget the answers below divide (vLLM and SGLang override them)

    @abstractmethod
    def request_bytes(self, context: int) -> int:
        """Bytes the engine sets aside for one request of ``context`` tokens."""

    def max_concurrency(self, context: int) -> float | None:
        """Requests of ``context`` tokens served at once; None without a memory budget."""
        if self.fit is None:
            return None
        return self.fit.available_bytes / max(1, self.request_bytes(context))

    def fits(self, context: int, batch: int) -> bool | None:
        """Whether ``batch`` such requests run at once (and the engine starts at all)."""
        if self.fit is None:
            return None
        return batch * self.request_bytes(context) <= self.fit.available_bytes

    @abstractmethod
    def report(self, max_model_len: int) -> EngineReport: ...

    def past_model_len(self, max_model_len: int) -> bool:
        """Is ``max_model_len`` past the model's own (vLLM and SGLang refuse it at start-up)?"""
        return self.model_max_len is not None and max_model_len > self.model_max_len

    def advice(self, max_model_len: int, knobs: str) -> Note:
        """What to lower (or raise) when the engine refuses to start."""
        if self.past_model_len(max_model_len):
            return Note(f"lower {arg('contexts')} to the model's context window")
        return Note(f"lower {knobs}")

    def engine_blocks(self, context: int) -> int | None:
        return None

    def host_layout(self) -> HostLayout | None:
        """The block ids a host tier copies (vLLM's CPU offload); None: not grouped so."""
        return None

    def batch_notes(self, batch: int, contexts: tuple[int, ...]) -> list[Note]:
        """Why ``batch`` requests do not run at once where memory is not the reason."""
        return []

    def largest_context(self, batch: int, limit: int) -> int | None:
        """Longest context (<= ``limit``) for which ``batch`` requests fit (None: no budget)."""
        if self.fits(1, batch) is None:
            return None
        return largest(lambda n: self.fits(n, batch), limit)


class Engine(ABC):
    """An engine profile; its options are its dataclass fields, named as the request's."""

    name: ClassVar[str]  # the registry's name (tokcost.memory.engines)
    title: ClassVar[str]  # as the engine writes its own name
    code: ClassVar[str]  # whose code the formulas follow
    # The oldest and the newest release whose rules the profile has (None: it has no versions);
    # a profile with releases has a ``release`` field, the newest by default.
    releases: ClassVar[tuple[Release, Release] | None] = None
    kv_offload: ClassVar[bool] = False  # serves a host-memory KV tier (--cpu-offload)
    pp_extra_last: ClassVar[bool] = False  # a pipeline split's extra layers go to the last stages
    # Engines whose rules change within a minor: the newest patch modelled of each minor,
    # which ``NAME@MAJOR.MINOR`` stands for (``sglang@0.4`` = v0.4.10); empty: minors only.
    patches: ClassVar[tuple[Release, ...]] = ()
    # The releases the engine published from the oldest modelled to the newest (empty: every
    # number in between is one): another number in that span is read by the release before it.
    published: ClassVar[tuple[Release, ...]] = ()

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        return {f.name: f.default for f in fields(cast(Any, cls))}

    @classmethod
    def release_of(cls, given: str | Release) -> Release:
        """``given`` (``"0.20"``, ``"v0.20.1"``) as a release this profile has rules for."""
        if cls.releases is None:
            raise UsageError(f"{arg('engine', f'{cls.name}@{given}')}: {cls.name} has no "
                             f"versions; use {arg('engine', cls.name)}", param="engine")
        release = given if isinstance(given, Release) else Release.parse(
            given, cls.name, patch=bool(cls.patches))
        if cls.patches and release.patch is None:
            minor = (release.major, release.minor)
            same = [r for r in cls.patches if (r.major, r.minor) == minor]
            release = same[0] if same else Release(*minor, 0)
        if release < cls.releases[0]:
            oldest, newest = cls.releases
            span = f"{oldest}" if oldest == newest else f"{oldest} to {newest}"
            raise UsageError(f"{arg('engine', f'{cls.name}@{given}')} is older than tokcost "
                             f"models: {cls.title} {span} (and later releases, by {newest}'s "
                             "rules)", param="engine")
        return release

    @property
    def version(self) -> str:
        """Which release's rules the profile follows, as ``kvmem estimate`` prints it."""
        release: Release | None = getattr(self, "release", None)
        if release is None or self.releases is None:
            return self.code
        oldest, newest = self.releases
        if self.published and oldest <= release <= newest and release not in self.published:
            before = max(r for r in self.published if r < release)
            return (f"{self.title} {release} (no such release was published: read by "
                    f"{before}'s rules, the release before it); {self.code}")
        which = ("the release tokcost models" if release == newest == self.releases[0] else
                 "the newest release tokcost models" if release == newest else
                 f"sized by {newest}'s rules: it is newer than {newest}, the newest release "
                 "tokcost models" if release > newest
                 else f"{self.name}@{str(release)[1:]}")
        return f"{self.title} {release} ({which}); {self.code}"

    @abstractmethod
    def plan(self, dep: Deployment) -> tuple[Plan, GpuFit | None]:
        """The plan for ``dep`` and the GPU fit it implies (None without a budget)."""

    def settle(self, dep: Deployment) -> Deployment:
        """``dep`` as the engine runs it: vLLM caches DeepSeek-V3.2's fp8 as fp8_ds_mla."""
        return dep

    def check(self, request: KvRequest) -> None:
        """Refuse what ``request`` gives that this engine does not read."""
        if request.parallel.dcp > 1:
            raise UsageError(f"{arg('dcp')} (decode context parallel) is modelled for vLLM; use "
                             f"{arg('engine', 'vllm')}", param="dcp", related=("engine",))

    def refuse_layout(self, dep: Deployment, *, chunked: bool = False,
                      parallel: bool = False, shared: bool = False) -> None:
        """Refuse Llama-4's chunked local layers (unless ``chunked``), Gemma-3n's shared KV
        (unless ``shared``) and Falcon-H1's side-by-side layers (unless ``parallel``), whose
        caches only vLLM and the ideal cache are modelled for (SGLang: chunked too; llama.cpp:
        Falcon-H1 and shared KV too)."""
        what = ("chunked local attention (Llama-4)" if dep.layout.chunked and not chunked else
                "layers that share another layer's KV (Gemma-3n, Gemma-4 E2B/E4B)"
                if dep.layout.kv_shared and not shared else
                "attention and Mamba side by side in each layer (Falcon-H1)"
                if dep.layout.parallel and not parallel else None)
        if what:
            raise UsageError(f"{dep.model} has {what}, whose cache {self.title} keeps by rules "
                             f"tokcost does not model; use {arg('engine', 'vllm')} or ideal",
                             param="engine")

    def cache_layout(self, layout: KvLayout, model_dtype: Callable[[], KvLayout]) -> KvLayout:
        """``layout`` as this engine caches it; ``model_dtype()`` lays the model out in its own
        dtype (vLLM keeps the layers of --kv-cache-dtype-skip-layers in it)."""
        return layout

    def attention_dp(self, dp: int) -> int:
        """The attention data-parallel ranks ``dp`` makes inside the TP group (SGLang's DP
        attention), splitting kv heads over the TP group's size / that many GPUs; 1: none
        (``dp`` counts engines, each with its own cache)."""
        return 1

    def gpu_knobs(self) -> dict[str, bool]:
        """Whether each option that sizes the pool from a GPU's memory is given."""
        return {}

    def budget_line(self, fit: GpuFit, dep: Deployment) -> str:
        if fit.memory_bytes is None or fit.util is None:
            per_gpu = " per GPU" if dep.layout.tp > 1 or dep.pp > 1 else ""
            return f"KV cache memory{per_gpu}: {format_bytes(fit.available_bytes)} (given)"
        return (f"GPU {dep.gpu.name if dep.gpu else 'custom'}: {format_bytes(fit.memory_bytes)} "
                f"x {fit.util:g} - weights {format_bytes(fit.weights_bytes)} - reserve "
                f"{format_bytes(fit.reserve_bytes)} = {format_bytes(fit.available_bytes)} for "
                "the KV cache")

    def budget_notes(self, dep: Deployment) -> list[Note]:
        """What the budget assumes: vLLM profiles the activation peak; tokcost reserves it."""
        if dep.memory_bytes is None or dep.kv_memory is not None:
            return []
        return [Note(f"reserve of {dep.reserve / GiB:g} GiB per GPU for activations and runtime "
                     f"overhead (vLLM profiles this; set {arg('reserve', 'SIZE')}, or pass vLLM's "
                     f"logged 'Available KV cache memory' as {arg('kv_memory', 'SIZE')})"),
                *dep.driver_note(f"the {arg('reserve')} absorbs")]

    def layout_note(self, dtype: KvDtype) -> Note | None:
        """A cache layout tokcost models that the engine does not have."""
        if dtype.engine is not None:
            return None if dtype.engine == self.name else Note(
                f"{dtype.name} is {dtype.engine}'s KV cache layout; {self.name} has none of that "
                "name (its bytes are sized as that engine stores them)")
        if dtype.group is None:
            return None
        return Note(f"{dtype.name} caches use tokcost's per-group scales; {self.name} has no "
                    f"{dtype.name} KV cache of that layout")

    def eviction_note(self) -> Note | None:
        """Said when a cache policy evicts: the engine itself keeps every token."""
        return Note(f"{self.name} evicts nothing: per sequence, concurrency and fits are the "
                    f"bytes the eviction policy holds, in the KV memory {self.name} leaves; its "
                    "own lines are for its full cache (engine=ideal drops them)")

    def pool_notes(self, report: EngineReport, context: int) -> list[Note]:
        """What the engine does with a request of ``context`` tokens beyond the report."""
        return []

    def idle_notes(self, dep: Deployment) -> list[Note]:
        """The options given that change nothing for ``dep``'s model, and why."""
        return []
