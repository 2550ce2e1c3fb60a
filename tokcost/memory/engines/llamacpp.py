"""llama.cpp's KV cache, reproduced (docs/kvmem.md): token cells, not blocks, allocated at start-up
for the whole context. From ggml-org/llama.cpp (late 2025 to 2026): ``src/llama-context.cpp``
(n_ctx and n_ctx_seq), ``src/llama-model.cpp`` (``create_memory``), ``src/llama-kv-cache.cpp``
(one K and one V tensor per layer, the log line), ``src/llama-kv-cache-iswa.cpp`` (the SWA
cache), ``src/llama-memory-recurrent.cpp``, ``tools/server/server.cpp`` (the slots)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from tokcost.errors import Note, UsageError, arg, suggest
from tokcost.memory.engines.base import Deployment, Engine, EngineGroup, EngineReport, Plan, largest
from tokcost.memory.fit import GpuFit
from tokcost.units import format_bytes

if TYPE_CHECKING:
    from tokcost.memory.request import KvRequest

__all__ = ["GGML_TYPES", "LlamaCpp", "LlamaCppPlan"]

MiB = 2**20
N_CTX_PAD = 256  # llama-context.cpp: n_ctx and n_ctx_seq padded to 256 (PR #17046)
SWA_PAD = 256  # llama-kv-cache-iswa.cpp: the SWA cache too (issue #17037)
UINT32_MAX = 2**32 - 1  # fit.cpp saturates n_ctx_train and --fit-ctx x streams at it
MAX_SEQ = 256  # llama-cparams.h LLAMA_MAX_SEQ: llama_context refuses more sequences
AUTO_SLOTS = 4  # server.cpp: -np auto (the default) is 4 slots with a unified cache (PR #16736)
# ggml's type traits (ggml/src/ggml.c, blocks in ggml-common.h): values per block, bytes per
# block, for the cache types common/arg.cpp accepts (kv_cache_types). q8_0 is an fp16 scale and
# 32 int8 values; q4_0 a scale and 16 bytes of nibbles; q4_1/q5_1 add an fp16 minimum, q5_*
# 4 bytes of fifth bits; iq4_nl is q4_0's size with a non-linear grid.
GGML_TYPES: dict[str, tuple[int, int]] = {
    "f32": (1, 4), "f16": (1, 2), "bf16": (1, 2), "q8_0": (32, 34), "q4_0": (32, 18),
    "q4_1": (32, 20), "iq4_nl": (32, 18), "q5_0": (32, 22), "q5_1": (32, 24)}


def _pad(n: int, to: int) -> int:
    return -(-n // to) * to  # GGML_PAD


def _row_bytes(ggml_type: str, elements: int) -> int:
    """``ggml_row_size``: bytes of one row of ``elements`` values (a cell of one layer's K)."""
    block, size = GGML_TYPES[ggml_type]
    return size * elements // block


def _mib(n: int) -> float:
    """``(float) n / (1024.0f * 1024.0f)`` as llama.cpp prints it: in single precision."""
    value: float = struct.unpack("f", struct.pack("f", n / MiB))[0]
    return value


@dataclass(frozen=True)
class _Cache:
    """One ``llama_kv_cache``: ``cells`` per stream over ``layers`` layers."""

    kind: str  # full, sliding
    cells: int
    layers: int
    k_bytes: int  # one cell of one layer
    v_bytes: int
    streams: int

    def size(self, per_cell: int) -> int:
        return per_cell * self.cells * self.streams * self.layers


@dataclass(frozen=True)
class LlamaCppPlan(Plan):
    """llama.cpp's caches, allocated whole at start-up for ``-c`` (a row's context) tokens."""

    kinds: dict[str, int]  # layers by kind: full, sliding, linear, all
    k_bytes: int  # one cell of one layer
    v_bytes: int
    state_bytes: int  # one sequence's recurrent state in one layer, f32
    window: int | None
    engine: LlamaCpp
    slots: int
    unified: bool
    free: int | None  # memory left for the cache after weights and reserve (None: no GPU)
    fit: GpuFit | None = None
    block_size: int = 1
    settings: dict[str, Any] = field(default_factory=dict)
    model_max_len: int | None = None
    # A sliding layer's cell where its heads differ from the full layers' (Gemma-4: 256-wide
    # sliding heads, 512-wide global ones; llama_hparams n_embd_k_gqa(il) is per layer).
    swa_k_bytes: int | None = None
    swa_v_bytes: int | None = None
    conv_bytes: int = 0  # of state_bytes, the conv state's (R); 0: the split is not known

    def _swa_bytes(self) -> tuple[int, int]:
        return (self.k_bytes if self.swa_k_bytes is None else self.swa_k_bytes,
                self.v_bytes if self.swa_v_bytes is None else self.swa_v_bytes)

    def layout(self, n_ctx: int) -> tuple[int, int, tuple[_Cache, ...]]:
        """``(n_ctx, n_ctx_seq, caches)`` for ``-c n_ctx`` (llama-context.cpp, create_memory)."""
        n_ctx = _pad(n_ctx, N_CTX_PAD)
        if self.unified:
            n_ctx_seq, streams = n_ctx, 1
        else:  # each slot's stream padded to 256, n_ctx grown to match ("rounding down")
            n_ctx_seq, streams = _pad(n_ctx // self.slots, N_CTX_PAD), self.slots
            n_ctx = n_ctx_seq * self.slots
        k, v = self.k_bytes, self.v_bytes
        caches = [_Cache("full", n_ctx_seq, self.kinds["full"], k, v, streams)]
        if self.kinds["sliding"]:
            window = self.window or n_ctx_seq
            seqs = self.slots if self.unified else 1
            swa = _pad(min(n_ctx_seq, window * seqs + self.engine.ubatch_size), SWA_PAD)
            caches.append(_Cache("sliding", n_ctx_seq if self.engine.swa_full else swa,
                                 self.kinds["sliding"], *self._swa_bytes(), streams))
        return n_ctx, n_ctx_seq, tuple(caches)

    def kv_bytes(self, n_ctx: int) -> int:
        caches = self.layout(n_ctx)[2]
        return (sum(c.size(c.k_bytes) + c.size(c.v_bytes) for c in caches)
                + self.state_bytes * self.kinds["linear"] * self.slots)

    def request_bytes(self, context: int) -> int:
        held = context if self.window is None or self.engine.swa_full else min(context,
                                                                                self.window)
        return (context * self.kinds["full"] * (self.k_bytes + self.v_bytes)
                + held * self.kinds["sliding"] * sum(self._swa_bytes())
                + self.state_bytes * self.kinds["linear"])

    def minus_c(self, context: int) -> int:
        """The ``-c`` for requests of ``context`` tokens: a unified cache is shared, so -c is
        the context; separate streams split -c among the slots, so it is context x slots."""
        return context if self.unified else context * self.slots

    def _starts(self, n_ctx: int) -> bool:
        return self.free is None or self.kv_bytes(n_ctx) <= self.free

    def max_concurrency(self, context: int) -> float | None:
        """Requests of ``context`` tokens at once, llama-server started with its ``-c``."""
        n_ctx = self.layout(self.minus_c(context))[0]
        if not self._starts(n_ctx):
            return 0.0
        # A unified cache shares its n_ctx cells among the slots; separate ones give each slot
        # n_ctx_seq cells (the SWA cache holds every slot's window either way).
        return float(min(self.slots, n_ctx // context) if self.unified else self.slots)

    def fits(self, context: int, batch: int) -> bool | None:
        conc = self.max_concurrency(context)
        return None if self.fit is None else bool(conc and conc >= batch)

    def largest_context(self, batch: int, limit: int) -> int | None:
        """The longest requests ``batch`` slots hold at once, -c being their sum (a unified
        cache, a -c larger than the rows': batch_notes says so) or the context x slots
        (separate streams), in the memory left."""
        if self.fit is None:
            return None
        per = batch if self.unified else self.slots
        return largest(lambda n: self._starts(n * per), limit) if batch <= self.slots else 0

    def fit_context(self, *, per_stream: bool = True) -> tuple[int, str] | None:
        """The n_ctx ``-fit on`` sets when -c is not given, and its step: ``kept`` (the model's
        n_ctx_train leaves the margin free), ``reduced`` or ``offload`` (the smallest context
        still leaves less: layers move to host memory, how many not modelled). None without a
        GPU or a model context. common/fit.cpp ``common_params_fit_impl`` (PR #16653, b7407),
        for one device: used = weights + cache + compute (here the reserve), against the free
        memory (here the GPU's) less ``--fit-target``. Step 1 keeps n_ctx_train where it leaves
        the margin; step 2 (PR #18372, b7550: a second measurement at ``--fit-ctx`` and a linear
        interpolation; PR #18101, b7441: down to a multiple of 256) lowers it. From b10584 (PR
        #27496) separate streams count: n_ctx_train and --fit-ctx per stream, the step 256 x
        streams; ``per_stream=False`` is the rule before (the totals, 256)."""
        if self.free is None or self.model_max_len is None:
            return None
        t = self.engine
        if not t.fit:  # -c 0 without fit: llama_context takes n_ctx_train for all the streams
            return self.model_max_len, "off"
        streams = 1 if self.unified or not per_stream else self.slots
        n_max = min(self.model_max_len * streams, UINT32_MAX)  # n_ctx_train, per stream
        n_min = min(t.fit_ctx * streams, UINT32_MAX)
        room = self.free - t.fit_target * MiB  # target - weights - compute, in used memory
        if self.kv_bytes(n_max) <= room:
            return n_max, "kept"
        if n_max <= n_min:  # "default model context size is <= the min. context size"
            return n_max, "offload"
        over_min = room - self.kv_bytes(n_min)  # sum_used_target - sum_projected_used_min_ctx
        span = self.kv_bytes(n_max) - self.kv_bytes(n_min)
        if over_min <= 0 or span <= 0:  # even --fit-ctx leaves less: n_ctx stays at it
            return n_min, "offload"
        n_ctx = n_min + (n_max - n_min) * over_min // span  # C++ int64 division, both > 0
        align = N_CTX_PAD * streams  # "round down context for CUDA backend"
        return max(n_ctx - n_ctx % align, n_min), "reduced"

    def offloads(self, context: int) -> bool:
        """-fit on with -c given (step 2 lowers only an unset -c: "context size set by user
        -> no change"): weights + cache + reserve leave less than --fit-target, so llama.cpp
        moves layers to host memory (step 3 of fit.cpp)."""
        return (self.free is not None and self.engine.fit and self.kv_bytes(
            self.minus_c(context)) > self.free - self.engine.fit_target * MiB)

    def fit_notes(self, contexts: tuple[int, ...]) -> list[Note]:
        """What -fit on does with the rows' -c, and without -c (the context it would pick)."""
        chosen = self.fit_context()
        if chosen is None or self.fit is None:
            return []
        t, free, notes = self.engine, max(self.free or 0, 0), []
        target = f"{arg('fit_target')} {t.fit_target:,} MiB"
        if not t.fit:
            return [Note(f"{arg('fit', False)} (-fit off): without -c llama-server takes the "
                         f"model's n_ctx_train, {self.model_max_len:,} tokens, whatever the "
                         "memory; a cache past the memory fails to allocate")]
        moved = [c for c in contexts if self.offloads(c)]
        if moved:
            c = min(moved)
            left = free - self.kv_bytes(self.minus_c(c))
            room = (f"leave {format_bytes(left)}, less than the {target} it keeps free"
                    if left >= 0 else f"need {format_bytes(-left)} more than the memory, "
                    f"before the {target} it keeps free")
            fails = sum(not self._starts(self.minus_c(n)) for n in moved)
            notes.append(Note(
                f"-fit on (llama-server's default, PR #16653, b7407) at -c {self.minus_c(c):,}"
                f"{' and the longer rows' * (len(moved) > 1)}: the weights, the cache and the "
                f"reserve {room}, so llama.cpp keeps -c (fit.cpp lowers "
                "only an unset one) and moves layers to host memory; how many stay on the GPU "
                "is not modelled (fit.cpp measures each layer's tensors). The fits column is "
                "-fit off's"
                + (" (the cache fits beside all the weights)" if not fails else "")))
        n_ctx, step = chosen
        streams = 1 if self.unified else self.slots

        def cells(n: int) -> str:  # n_ctx, and what each stream gets of it
            _, seq, _ = self.layout(n)
            return f"n_ctx {n:,}" + (f" ({seq:,} cells per slot)" if streams > 1 else "")

        train = f"the model's {self.model_max_len:,} tokens (n_ctx_train)"
        per = "" if streams == 1 else f" per stream x {self.slots} slots"
        if step == "kept":
            what = f"{train}{per} leave at least {target} free: {cells(n_ctx)}"
        elif step == "reduced":
            what = (f"{train}{per} leave less than {target}, so llama.cpp lowers it to "
                    f"{cells(n_ctx)}: between {arg('fit_ctx')} {t.fit_ctx:,}{per} and "
                    "n_ctx_train by the memory each takes, down to a multiple of "
                    f"{N_CTX_PAD * streams:,} (PR #18372, b7550)")
        elif step == "offload" and n_ctx != min(t.fit_ctx * streams, UINT32_MAX):
            what = (f"{train} leave less than {target} and are not above {arg('fit_ctx')} "
                    f"{t.fit_ctx:,}: {cells(n_ctx)} kept, and layers move to host memory "
                    "(how many is not modelled)")
        else:
            what = (f"even {arg('fit_ctx')} {t.fit_ctx:,}{per} leaves less than {target}: "
                    f"{cells(n_ctx)}, and layers move to host memory (how many is not "
                    "modelled)")
        old = None if streams == 1 else self.fit_context(per_stream=False)
        before = (f"; builds before b10584 (PR #27496) took n_ctx_train for all {self.slots} "
                  f"streams together: {cells(old[0])}" if old else "")
        notes.append(Note(f"-fit on without -c (the rows above give -c = their context): "
                          f"{what}{before}"))
        return notes

    def batch_notes(self, batch: int, contexts: tuple[int, ...]) -> list[Note]:
        return self._slot_notes(batch, contexts) + self.fit_notes(contexts)

    def _slot_notes(self, batch: int, contexts: tuple[int, ...]) -> list[Note]:
        """Rows that fail for the slots, not the memory: too few slots, or one unified cache
        of -c = the context cells, which holds one request of it (server.cpp's slots share it)."""
        if self.fit is None or batch <= 1:
            return []
        started = [c for c in contexts if self._starts(self.minus_c(c))]
        if batch > self.slots and started:
            return [Note(f"{batch} requests at once need {batch} slots, llama-server has "
                         f"{self.slots}: give {arg('parallel', batch)}")]
        short = [c for c in started if (self.max_concurrency(c) or 0) < batch]
        if not self.unified or not short:
            return []
        c = short[-1]
        streams = replace(self, unified=False)
        need = streams.kv_bytes(streams.minus_c(c))
        room = "fits in" if streams._starts(streams.minus_c(c)) else "is more than"
        held = int(self.max_concurrency(c) or 0)
        most = self.largest_context(batch, self.model_max_len or 10**8) or 0
        return [Note(
            f"fits no at {', '.join(f'{n:,}' for n in short)} tokens: the {self.slots} slots "
            f"share one unified cache of -c cells, and -c is the context ({arg('contexts')}), "
            f"so it holds {held} request{'s' * (held != 1)} of {c:,} tokens, not {batch}; "
            f"llama-server holds {batch} with -c {batch} x {c:,} = {batch * c:,}, or with "
            f"{arg('kv_unified', False)}: a {c:,}-cell stream per slot ({self.slots} x {c:,} "
            f"cells = {format_bytes(need)}, which {room} the memory left). The largest context "
            f"for batch {batch}, {most:,} tokens, is for -c {batch} x that context")]

    def _line(self, cache: _Cache) -> str:
        k, v = cache.size(cache.k_bytes), cache.size(cache.v_bytes)
        t = self.engine
        return (f"llama_kv_cache: size = {_mib(k + v):7.2f} MiB ({cache.cells:6d} cells, "
                f"{cache.layers:3d} layers, {self.slots:2d}/{cache.streams} seqs), K "
                f"({t.cache_type_k}): {_mib(k):7.2f} MiB, V ({t.cache_type_v}): {_mib(v):7.2f} MiB")

    def lines(self, n_ctx: int) -> list[str]:
        """The start-up lines of ``llama-server -c n_ctx``."""
        caches = self.layout(n_ctx)[2]
        out: list[str] = []
        for cache in caches:
            if len(caches) > 1:
                name = "non-SWA" if cache.kind == "full" else "    SWA"
                out.append(f"llama_kv_cache_iswa: creating {name} KV cache, size = "
                           f"{cache.cells} cells")
            out.append(self._line(cache))
        if self.kinds["linear"]:
            size = self.state_bytes * self.kinds["linear"] * self.slots
            line = (f"llama_memory_recurrent: size = {_mib(size):7.2f} MiB ({self.slots:6d} "
                    f"cells, {self.kinds['all']:3d} layers, {self.slots:2d} seqs)")
            if self.conv_bytes:  # R (the conv state, n_embd_r) and S (the SSM state, n_embd_s)
                r = self.conv_bytes * self.kinds["linear"] * self.slots
                line += f", R (f32): {_mib(r):7.2f} MiB, S (f32): {_mib(size - r):7.2f} MiB"
            out.append(line)
        return out

    def _fit_settings(self, max_model_len: int) -> dict[str, Any]:
        """-fit's knobs, and with a GPU what it does: ``fit_n_ctx`` (the n_ctx it picks without
        -c), ``fit_step`` (kept, reduced, offload; off) and ``fit_offloads`` (at this -c)."""
        t = self.engine
        chosen = self.fit_context() if self.fit is not None else None
        return {"fit": t.fit, "fit_target_mib": t.fit_target, "fit_ctx": t.fit_ctx,
                "fit_n_ctx": chosen[0] if chosen else None,
                "fit_step": chosen[1] if chosen else None,
                "fit_offloads": self.offloads(max_model_len) if chosen else None}

    def report(self, max_model_len: int) -> EngineReport:
        minus_c = self.minus_c(max_model_len)
        n_ctx, n_ctx_seq, caches = self.layout(minus_c)
        kv = self.kv_bytes(minus_c)
        refusal = None if self._starts(minus_c) else (
            ("with -fit off, " if self.engine.fit else "")
            + f"failed to allocate buffer for kv cache: {format_bytes(kv)} of cells, "
            f"{format_bytes(max(self.free or 0, 0))} left after the weights and the reserve"
            + ("; -fit on, the default, starts with layers moved to host memory instead (see "
               "the -fit note)" if self.engine.fit else ""))
        t = self.engine
        mode = "unified" if self.unified else "a stream per slot"
        header = (f"cells (block 1); -c {minus_c:,}: n_ctx {n_ctx:,}, {self.slots} slots "
                  f"({self.settings.get('parallel_source', '')}), {mode}: {n_ctx_seq:,} cells "
                  f"per sequence; K {t.cache_type_k}, V {t.cache_type_v}")
        lines = self.lines(minus_c)
        cells = caches[0].cells * caches[0].streams
        return EngineReport(
            name=LlamaCpp.name, version=self.engine.version, block_size=1,
            block_size_reason=Note("1 (llama.cpp caches token cells)"),
            max_model_len=max_model_len,
            groups=tuple(EngineGroup(c.kind, c.layers, c.layers, 1, c.k_bytes + c.v_bytes,
                                     self.window if c.kind == "sliding" else None)
                         for c in caches),
            num_blocks=cells, cache_tokens=cells,
            max_concurrency=self.max_concurrency(max_model_len), lines=tuple(lines),
            refusal=refusal, settings={**self.settings, **self._fit_settings(max_model_len),
                                       "n_ctx": n_ctx, "n_ctx_seq": n_ctx_seq,
                                       "n_seq_max": self.slots, "kv_unified": self.unified,
                                       "kv_bytes": kv, "cache_type_k": t.cache_type_k,
                                       "cache_type_v": t.cache_type_v},
            title=LlamaCpp.title, header=Note(header),
            details=(f"llama.cpp allocates {format_bytes(kv)} of KV cells at start-up; "
                     f"its log (-c {minus_c:,}):", *(f"  {line}" for line in lines)),
            advice=Note(f"lower {arg('contexts')} (-c), {arg('parallel')} or "
                        f"{arg('cache_type_k')}/{arg('cache_type_v')}"))


@dataclass(frozen=True, kw_only=True)
class LlamaCpp(Engine):
    """llama.cpp's server: its cache types, slots (``-np``) and unified cache (``-kvu``)."""

    name: ClassVar[str] = "llama.cpp"
    title: ClassVar[str] = "llama.cpp"
    # The builds whose logs reproduce with these rules: b8643 (Gemma-4-31B, issue 21394) and b10107
    # (gemma-3-270m's slots, unslothai/unsloth PR 7530); the rules are PR #17046's padding (Nov
    # 2025) and PR #16736's -np auto, both still in llama-context.cpp / server.cpp of b10481.
    # b6168's log (GLM-4.5-Air) predates both and reproduces only with -np 1 given (its default).
    # -fit's rules (common/fit.cpp) were read up to b10587, each tied to its build in fit_notes.
    code: ClassVar[str] = ("llama.cpp b8643 to b10481: llama_kv_cache / llama_kv_cache_iswa "
                           "(n_ctx padded to 256, SWA cache n_swa x seqs + ubatch); -fit as "
                           "common/fit.cpp has it to b10587")

    cache_type_k: str = "f16"  # --cache-type-k
    cache_type_v: str = "f16"  # --cache-type-v
    parallel: int | None = None  # -np; None: llama-server's auto, 4 slots sharing one cache
    kv_unified: bool | None = None  # -kvu; None: on for the auto slots, off for a given -np
    swa_full: bool = False  # --swa-full: the SWA layers cache the whole context
    ubatch_size: int = 512  # -ub: the SWA cache keeps one ubatch beyond the windows
    # -fit on|off, --fit-target MiB, --fit-ctx N: common/common.h fit_params (true),
    # fit_params_target (1024 MiB a device), fit_params_min_ctx (4096), PR #16653 (b7407), the
    # same defaults in b10587's common.h and arg.cpp.
    fit: bool = True
    fit_target: int = 1024
    fit_ctx: int = 4096

    def __post_init__(self) -> None:
        for name in ("cache_type_k", "cache_type_v"):
            value = str(getattr(self, name)).lower()
            if value not in GGML_TYPES:
                raise UsageError(f"unknown {arg(name)} '{getattr(self, name)}'"
                                 f"{suggest(value, GGML_TYPES)}; llama.cpp takes "
                                 f"{', '.join(GGML_TYPES)}", param=name)
            object.__setattr__(self, name, value)
        # --fit-target 0 leaves no margin; --fit-ctx 0 is refused: fit.cpp would measure at
        # n_ctx 0, which llama_context reads as n_ctx_train
        for name, least, most in (("parallel", 1, MAX_SEQ), ("ubatch_size", 1, 1 << 20),
                                  ("fit_target", 0, 1 << 30), ("fit_ctx", 1, UINT32_MAX)):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or not least <= value <= most):
                raise UsageError(f"{arg(name)} must be an integer from {least} to {most}, got "
                                 f"{value}", param=name)

    def check(self, request: KvRequest) -> None:
        super().check(request)  # --dcp is vLLM's
        budget, cache = request.budget, request.cache
        # A --kv-dtype given is refused, bf16 too: llama.cpp's cells are --cache-type-k/-v's
        # (common/arg.cpp kv_cache_types: f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1).
        for param, given in (("kv_dtype", cache.dtype_given),
                             ("block_size", cache.block_size is not None),
                             ("gpu_util", budget.gpu_util is not None),
                             ("kv_memory", budget.kv_memory is not None),
                             ("tp", request.parallel.tp > 1), ("pp", request.parallel.pp > 1)):
            if given:
                raise UsageError(
                    f"{arg(param)} is not llama.cpp's: its cells take {arg('cache_type_k')} and "
                    f"{arg('cache_type_v')}"
                    + (f" (f16 by default; bf16 too: {arg('cache_type_k', 'bf16')} "
                       f"{arg('cache_type_v', 'bf16')})" if param == "kv_dtype" else "")
                    + f", its context (-c) {arg('contexts')}, its slots "
                    f"{arg('parallel')}, on one GPU's memory", param=param,
                    related=("engine", "cache_type_k", "cache_type_v", "contexts", "parallel"))

    def plan(self, dep: Deployment) -> tuple[LlamaCppPlan, GpuFit | None]:
        # Falcon-H1 (PR #14534): llama_memory_hybrid with no layer filter, so the KV cache and
        # the recurrent one each span all n_layer layers (src/llama-model.cpp create_memory).
        # Gemma-3n/Gemma-4's shared KV (PR #15504, "kv-cache : support layer reuse"): only the
        # first n_layer_kv_from_start layers have a cache (llama_hparams::has_kv), the others
        # reuse one: the layout's layers are those.
        self.refuse_layout(dep, parallel=True, shared=True)
        layout = dep.layout
        counts = layout.counts
        # n_embd_k_gqa(il): one cell of one layer, K (or V) alone, by kind of layer. Heads that
        # differ by kind are Gemma-4's: the sliding layers the model's kv heads x head_dim, the
        # global (full) ones their own heads of global_head_dim, K stored again as V.
        elements = {kind: layout.token_bytes[kind] * 8 // (2 * layout.dtype.bits)
                    for kind in ("full", "sliding") if counts[kind]}
        own = None if dep.head_dim is None or dep.kv_heads is None else dep.kv_heads * dep.head_dim
        mixed = layout.kv_heads_per_gpu is None and elements.get("sliding", -1) == own
        if counts["mla"] or dep.head_dim is None or (layout.kv_heads_per_gpu is None
                                                     and not mixed):
            what = "MLA cache" if counts["mla"] else "cache of heads that differ by layer or K/V"
            raise UsageError(f"llama.cpp's {what} is not modelled by tokcost ({dep.model}); "
                             f"use {arg('engine', 'vllm')} or {arg('engine', 'ideal')}",
                             param="engine")
        auto = self.parallel is None
        unified = auto if self.kv_unified is None else self.kv_unified
        free = None if dep.memory_bytes is None else dep.memory_bytes - dep.weights - dep.reserve
        # "all": the model's n_layer (a Falcon-H1 layer is an attention and a Mamba slot), which
        # llama_memory_recurrent prints whatever its layer filter keeps: Nemotron-H's MLP/MoE
        # layers hold no cache (create_memory's filter_attn/filter_recr: n_ff(il) == 0; PR
        # #15507, NEMOTRON_H_MOE PR #18058) but count there; its size spans the Mamba layers.
        kinds = {**{k: counts[k] for k in ("full", "sliding", "linear")},
                 "all": len(layout.layers) // (2 if layout.parallel else 1)
                 + layout.cacheless_layers}
        iswa = bool(kinds["full"] and kinds["sliding"])
        if not iswa:  # Mistral-7B-v0.1's window: LLM_ARCH_LLAMA's load_hparams reads none
            kinds.update(full=kinds["full"] + kinds["sliding"], sliding=0)
        full = elements.get("full", elements.get("sliding", 0))
        swa = elements.get("sliding", full) if iswa else full
        plan = LlamaCppPlan(
            kinds=kinds,
            k_bytes=_row_bytes(self.cache_type_k, full),
            v_bytes=_row_bytes(self.cache_type_v, full),
            swa_k_bytes=_row_bytes(self.cache_type_k, swa) if swa != full else None,
            swa_v_bytes=_row_bytes(self.cache_type_v, swa) if swa != full else None,
            # Recurrent states are f32 (create_memory: GGML_TYPE_F32), one cell per slot: R and
            # S in full (the layout's state may hold a part in float32 already, Qwen3.5's SSM).
            state_bytes=(layout.conv_elements + layout.ssm_elements) * 4 if layout.ssm_elements
            else layout.state_bytes * 2, window=layout.window if iswa else None,
            engine=self,
            slots=AUTO_SLOTS if self.parallel is None else self.parallel,
            unified=unified, free=free,  # -np auto's slots are unified unless -kvu is given
            settings={"parallel_source": ("-np auto: 4" + ", unified" * (self.kv_unified is None))
                      if auto else "-np given"},
            model_max_len=dep.model_max_len, conv_bytes=layout.conv_elements * 4)
        if free is None or dep.memory_bytes is None:
            return plan, None
        # What the cells may take; how much -c allocates is the report's (a row's -c its own).
        cell = plan.request_bytes(1)
        fit = GpuFit(dep.memory_bytes, None, dep.weights, dep.reserve, free, 1, cell,
                     max(free, 0) // cell, max(free, 0) // cell)
        return replace(plan, fit=fit), fit

    def budget_line(self, fit: GpuFit, dep: Deployment) -> str:
        gpu = dep.gpu.name if dep.gpu else "custom"
        return (f"GPU {gpu}: {format_bytes(fit.memory_bytes or 0)} - weights "
                f"{format_bytes(fit.weights_bytes)} - reserve {format_bytes(fit.reserve_bytes)} = "
                f"{format_bytes(fit.available_bytes)} for llama.cpp's KV cells")

    def budget_notes(self, dep: Deployment) -> list[Note]:
        if dep.memory_bytes is None:
            return []
        # common/arg.cpp -fit (PR #16653, b7407, on by default): with -c given the context is
        # kept and layers move to host memory where less than --fit-target stays
        # free (the plan's fit_notes); -fit off is what "failed to allocate" below is.
        return [Note(f"llama.cpp allocates its cache for -c at start-up; the reserve "
                     f"({arg('reserve', 'SIZE')}) stands for its compute buffers and the GPU's "
                     "memory for the free memory llama.cpp reads. A cache past the memory is "
                     "refused as with -fit off: llama-server's default -fit on moves layers to "
                     "host memory instead (PR #16653)")]

    def idle_notes(self, dep: Deployment) -> list[Note]:
        counts = dep.layout.counts
        if not self.swa_full or (counts["full"] and counts["sliding"]):
            return []
        # --swa-full sizes llama_kv_cache_iswa's SWA cache, made only for full + sliding layers
        return [Note(f"{arg('swa_full')} has no effect: {dep.model} has no separate "
                     "sliding-window cache (llama.cpp makes one only beside full-attention "
                     "layers), so every layer already caches the whole context")]

    def layout_note(self, dtype: Any) -> Note | None:
        return None  # --kv-dtype is refused (check): the cache types say it

    def pool_notes(self, report: EngineReport, context: int) -> list[Note]:
        s = report.settings
        notes = []
        if s["kv_unified"] and s["n_seq_max"] > 1:
            notes.append(Note(
                f"the {s['n_seq_max']} slots share one cache of -c cells (as many requests of the "
                f"context as it holds); separate streams ({arg('kv_unified', False)}) give each "
                "slot the context, -c being the context x slots"))
        if (s["cache_type_k"], s["cache_type_v"]) != ("f16", "f16"):
            notes.append(Note(f"bytes per token above are bf16's; llama.cpp's cells hold K "
                              f"{s['cache_type_k']} and V {s['cache_type_v']} (per sequence and "
                              "the log lines count them)"))
        return notes

