"""What ``kvmem estimate`` is asked: one frozen ``KvRequest`` of small frozen parts, each
checking its fields (an error's ``param`` is the field's, and the CLI parameter's, name);
counts and sizes may be text. ``KvRequest.of`` takes flat field names."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from tokcost.errors import UsageError, arg
from tokcost.memory.blocks import check_block_size
from tokcost.memory.cache_policy import Eviction, parse_evict
from tokcost.memory.engines import engine_classes, split_engine
from tokcost.memory.kv import kv_dtype
from tokcost.memory.offload import BACKENDS, check_offload
from tokcost.parts import Parts
from tokcost.units import parse_context_list, parse_count, parse_fraction, parse_size, weight_bits

if TYPE_CHECKING:
    from tokcost.catalog import CatalogSource, Gpu, ModelEntry
    from tokcost.memory.engines.base import Engine

__all__ = ["CacheSpec", "EngineSpec", "GpuBudget", "KvRequest", "ModelRef", "OffloadSpec",
           "Parallelism", "PlotSpec", "RooflineSpec"]

# Past these a number is a typo: engines run hundreds of sequences, tp spans one NVLink domain.
MAX_BATCH = 10**6
MAX_TP = 1024
MIN_FLOPS, MAX_FLOPS = 10**9, 10**18  # a CPU core does about 1 GFLOP/s


def _set(part: object, name: str, value: object) -> None:
    object.__setattr__(part, name, value)  # a frozen part normalizing what it was given


def _positive(part: object, name: str) -> int:
    value = parse_count(getattr(part, name), param=name)
    if value <= 0:
        raise UsageError(f"{arg(name)} must be a positive integer, got {value}", param=name)
    _set(part, name, value)
    return value


def _sizes(part: object, *names: str, allow_zero: bool = False) -> None:
    for name in names:
        value = getattr(part, name)
        if isinstance(value, str) and name == "bandwidth":
            value = value.removesuffix("/s")
        if value is not None:
            _set(part, name, parse_size(value, param=name, allow_zero=allow_zero))


def _shares(part: object, *names: str) -> None:
    for name in names:
        if isinstance(getattr(part, name), str):
            _set(part, name, float(parse_fraction(getattr(part, name), param=name)))


@dataclass(frozen=True, kw_only=True)
class ModelRef:
    """A catalog id or alias, an entry or ``hf:ORG/REPO``; or a ``config`` (its folder)."""

    model: str | ModelEntry | None = None
    config: Path | None = None
    catalog: CatalogSource = None

    def __post_init__(self) -> None:
        if isinstance(self.config, str):
            _set(self, "config", Path(self.config))


@dataclass(frozen=True, kw_only=True)
class CacheSpec:
    """How the cache stores tokens (``auto``: the model's dtype; ``block_size`` None: the
    engine's) and a cache policy (``evict`` spec; ``residual`` tokens KIVI keeps whole)."""

    kv_dtype: str = ""  # "": bf16, tokcost's default (whatever the model's dtype)
    kv_group_size: int | None = None
    block_size: int | None = None
    evict: str | Eviction | None = None
    residual: int | None = None
    eviction: Eviction | None = field(init=False, repr=False, compare=False)  # evict, parsed
    dtype_given: bool = field(init=False, repr=False, compare=False)  # kv_dtype was given

    def __post_init__(self) -> None:
        _set(self, "dtype_given", self.kv_dtype != "")
        if not self.dtype_given:
            _set(self, "kv_dtype", "bf16")
        if str(self.kv_dtype).lower() != "auto":
            kv_dtype(self.kv_dtype)  # a typo is refused before any work
        for name in ("kv_group_size", "residual"):
            if isinstance(getattr(self, name), str):
                _set(self, name, parse_count(getattr(self, name), param=name))
        if self.block_size is not None:
            check_block_size(_positive(self, "block_size"))
        _set(self, "eviction", parse_evict(self.evict) if isinstance(self.evict, str)
             else self.evict)


@dataclass(frozen=True, kw_only=True)
class Parallelism:
    """Tensor-parallel GPUs (``tp``: kv heads split), pipeline stages (``pp``), decode context
    parallel (``dcp``: a sequence's tokens split over that many GPUs of the TP group) and
    data-parallel engines (``dp``: each holds its own cache)."""

    tp: int = 1
    pp: int = 1
    dcp: int = 1
    dp: int = 1

    def __post_init__(self) -> None:
        tp = _positive(self, "tp")
        _positive(self, "pp")
        dcp, dp = _positive(self, "dcp"), _positive(self, "dp")
        if tp > MAX_TP:
            raise UsageError(
                f"{arg('tp', f'{tp:,}')} is beyond {MAX_TP:,} GPUs in one tensor-parallel "
                "group; tensor parallelism spans one NVLink domain (8 to 72 GPUs)", param="tp")
        if dp > MAX_BATCH:
            raise UsageError(f"{arg('dp', f'{dp:,}')} is beyond {MAX_BATCH:,} engines",
                             param="dp")
        if tp % dcp:
            # DCP reuses the TP group's GPUs (vllm/config/parallel.py; PR #23734)
            raise UsageError(f"{arg('dcp', dcp)} must divide {arg('tp', tp)}: decode context "
                             "parallel splits the tensor-parallel group", param="dcp",
                             related=("tp",))


@dataclass(frozen=True, kw_only=True)
class GpuBudget:
    """A catalog ``gpu`` or its ``gpu_memory`` (x ``gpu_util``, None: the engine's default;
    less the weights and a ``reserve``, None: 2 GiB), or the ``kv_memory`` an engine logged."""

    gpu: str | Gpu | None = None
    gpu_memory: int | None = None
    gpu_util: float | None = None  # None: the engine's default
    kv_memory: int | None = None
    reserve: int | None = None
    weights_dtype: str | None = None

    def __post_init__(self) -> None:
        _sizes(self, "gpu_memory", "kv_memory")
        _sizes(self, "reserve", allow_zero=True)
        _shares(self, "gpu_util")
        if self.weights_dtype is not None:
            weight_bits(self.weights_dtype)  # a typo is refused even without a GPU
        if self.gpu is not None and self.gpu_memory is not None:
            raise UsageError(f"{arg('gpu')} already sets the GPU memory; give a GPU or its "
                             "memory, not both", param="gpu")


@dataclass(frozen=True, kw_only=True)
class EngineSpec:
    """The engine (``vllm@0.20``: the rules of that release) and its ``options`` by name
    (``profile``: the engine made with them); another engine's option, off its default, is
    refused."""

    engine: str = "vllm"
    options: Mapping[str, Any] = field(default_factory=dict)
    profile: Engine = field(init=False, repr=False, compare=False)
    rest: ClassVar[str] = "options"  # KvRequest.of gives it the names no other part has

    def __post_init__(self) -> None:
        chosen, release = split_engine(self.engine)
        own = chosen.defaults()
        for name, value in self.options.items():
            if name in own:
                continue
            owner = next((c for c in engine_classes() if name in c.defaults()), None)
            if owner is None:
                raise TypeError(f"no engine has an option {name!r} (nor the request a field)")
            if value != owner.defaults()[name]:
                raise UsageError(f"{arg(name)} is {owner.title}'s setting; use it with "
                                 f"{arg('engine', owner.name)} (the engine is {chosen.name})",
                                 param=name, related=("engine",))
        options = {k: v for k, v in self.options.items() if k in own}
        if release is not None:
            options["release"] = chosen.release_of(release)
        _set(self, "profile", chosen(**options))


@dataclass(frozen=True, kw_only=True)
class OffloadSpec:
    """A KV tier in host memory: ``cpu_offload`` bytes for all GPUs together, held by vLLM's
    ``native`` offloading or ``lmcache`` (tokcost.memory.offload)."""

    cpu_offload: int | None = None
    offload_backend: str = "native"

    def __post_init__(self) -> None:
        _sizes(self, "cpu_offload")
        _set(self, "offload_backend", str(self.offload_backend).strip().lower())
        if self.offload_backend not in BACKENDS:
            raise UsageError(f"{arg('offload_backend', repr(self.offload_backend))} is not a "
                             f"backend; give one of {', '.join(BACKENDS)}",
                             param="offload_backend")
        if self.cpu_offload is None and self.offload_backend != BACKENDS[0]:
            raise UsageError(f"{arg('offload_backend')} chooses who holds "
                             f"{arg('cpu_offload', 'SIZE')}; give that size with it",
                             param="offload_backend", related=("cpu_offload",))


@dataclass(frozen=True, kw_only=True)
class RooflineSpec:
    """Decode and prefill: ``bandwidth`` and peak ``flops`` (None: the GPU's), the
    ``efficiency`` reached, and the prompt of the time to first token (None: each context)."""

    bandwidth: int | None = None
    flops: float | None = None
    efficiency: float = 1.0
    input_tokens: int | None = None

    def __post_init__(self) -> None:
        _sizes(self, "bandwidth")
        _shares(self, "efficiency")
        if self.flops is not None:
            given = self.flops
            if isinstance(given, str):
                _set(self, "flops", float(parse_count(given.removesuffix("/s"), param="flops",
                                                      maximum=MAX_FLOPS)))
            if self.flops < MIN_FLOPS:
                raise UsageError(f"{arg('flops', given)} is below 1e9: peak FLOP/s runs from 1e9 "
                                 "(1B, a CPU) to 1e18; write e.g. 989T or 989e12", param="flops")
        if not 0 < self.efficiency <= 1:
            raise UsageError(
                f"{arg('efficiency')} must be in (0, 1], got {self.efficiency}: the fraction "
                "of the datasheet peaks reached (1 = the bound)", param="efficiency")
        if self.input_tokens is not None:
            _set(self, "input_tokens", parse_count(self.input_tokens, param="input_tokens",
                                                   minimum=1))


@dataclass(frozen=True, kw_only=True)
class PlotSpec:
    """Where to draw the result (None: no plot), and whether to replace a file."""

    plot: Path | None = None
    force: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.plot, str):
            _set(self, "plot", Path(self.plot))


@dataclass(frozen=True, kw_only=True)
class KvRequest(Parts):
    """One ``kvmem estimate``: ``batch`` sequences at each of ``contexts`` (``"1k,8k"`` too;
    empty: the model's window), per GPU."""

    model_ref: ModelRef = field(default_factory=ModelRef)
    contexts: tuple[int, ...] = ()
    batch: int = 1
    cache: CacheSpec = field(default_factory=CacheSpec)
    parallel: Parallelism = field(default_factory=Parallelism)
    budget: GpuBudget = field(default_factory=GpuBudget)
    engine_spec: EngineSpec = field(default_factory=EngineSpec)
    roofline: RooflineSpec = field(default_factory=RooflineSpec)
    offload: OffloadSpec = field(default_factory=OffloadSpec)
    output: PlotSpec = field(default_factory=PlotSpec)

    def __post_init__(self) -> None:
        _set(self, "contexts", _contexts(self.contexts))
        batch = _positive(self, "batch")
        if batch > MAX_BATCH:
            raise UsageError(f"{arg('batch', f'{batch:,}')} is beyond {MAX_BATCH:,} sequences "
                             "at once; engines run hundreds", param="batch")
        self.engine_spec.profile.check(self)
        self._check_offload()
        if self.parallel.dcp > 1 and (self.cache.evict is not None or self.cache.residual):
            raise UsageError(f"{arg('dcp')} is modelled for the engine's own cache, not under "
                             f"{arg('evict')} or {arg('residual')}; drop one",
                             param="dcp", related=("evict", "residual"))
        budget, roof = self.budget, self.roofline
        knobs = {"gpu_util": budget.gpu_util is not None,
                 "reserve": budget.reserve is not None, **self.engine_spec.profile.gpu_knobs()}
        if budget.kv_memory is not None and (budget.gpu_memory is not None or any(knobs.values())):
            raise UsageError(f"{arg('kv_memory')} replaces the estimate from GPU memory, "
                             "utilization and reserve; give it without them", param="kv_memory")
        # Without a GPU (or a bandwidth) nothing reads these: refuse rather than ignore them.
        no_gpu = budget.gpu is None and budget.gpu_memory is None and budget.kv_memory is None
        _unused([k for k, given in knobs.items() if given and no_gpu], "applies to a GPU's "
                "memory", ("gpu", "gpu_memory"))
        _unused([k for k, given in (("efficiency", roof.efficiency != 1.0),
                                    ("flops", roof.flops is not None),
                                    ("input_tokens", roof.input_tokens is not None))
                 if given and budget.gpu is None and roof.bandwidth is None],
                "applies to the decode and prefill roofline", ("gpu", "bandwidth"))

    def _check_offload(self) -> None:
        if self.offload.cpu_offload is None:
            return
        engine = self.engine_spec.profile
        if not engine.kv_offload:
            ours = [c for c in engine_classes() if c.kv_offload]
            titles, names = (" or ".join(getattr(c, k) for c in ours) for k in ("title", "name"))
            raise UsageError(f"{arg('cpu_offload')} is {titles}'s host tier (its native "
                             f"offloading or LMCache); use it with {arg('engine', names)} (the "
                             f"engine is {engine.name})", param="cpu_offload",
                             related=("engine",))
        check_offload(self.offload.offload_backend, getattr(engine, "release", None),
                      hybrid_manager=getattr(engine, "hybrid_manager", True))
        if self.cache.evict is not None or self.cache.residual is not None:
            raise UsageError(f"{arg('cpu_offload')} holds the engine's own blocks; give it "
                             f"without a cache policy ({arg('evict')}, {arg('residual')})",
                             param="cpu_offload", related=("evict", "residual"))

    @property
    def needs_weights(self) -> bool:  # for a GPU fit or a roofline
        b = self.budget
        return (b.gpu is not None or self.roofline.bandwidth is not None
                or (b.gpu_memory is not None and b.kv_memory is None))


def _unused(names: list[str], what: str, instead: tuple[str, str]) -> None:
    if names:
        raise UsageError(f"{arg(names[0])} {what}; give {arg(instead[0])} or {arg(instead[1])} "
                         "with it", param=names[0], related=instead)


def _contexts(given: Any) -> tuple[int, ...]:
    if isinstance(given, str):
        if any(not part.strip() for part in given.split(",")):
            raise UsageError(f"{arg('contexts', repr(given))} has an empty item; separate "
                             "lengths with single commas, e.g. 1k,8k,32k", param="contexts")
        return tuple(parse_context_list(given, param="contexts"))
    items = () if given is None else given if isinstance(given, Iterable) else (given,)
    return tuple(parse_count(c, param="contexts", minimum=1) for c in items)
