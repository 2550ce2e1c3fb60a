"""The kvmem plots: KV memory against context (``estimate``), where memory goes per allocation
policy (``simulate``), each cache policy's memory against its quality cost (``quality``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tokcost.memory.estimate import KvResult
from tokcost.memory.simulate import PolicyReport
from tokcost.plotting import pyplot, save_figure

if TYPE_CHECKING:
    from tokcost.app.quality import QualityResult

# (legend, PolicyReport attribute, colour), stacked left to right.
_PARTS = (("token states", "token_states", "#2b7bba"), ("reserved", "reserved", "#f0a030"),
          ("internal frag.", "internal_fragmentation", "#d04040"),
          ("external frag.", "external_fragmentation", "#8050a0"), ("free", "free", "#cccccc"))


def plot_memory(result: KvResult, path: Path) -> None:
    """Plot the batch's KV bytes (paged) against context; mark the GPU budget."""
    plt = pyplot()
    from matplotlib.ticker import FuncFormatter
    layout = result.stage or result.layout  # one GPU's: with --pp the fullest stage
    batch, block, gib = result.batch, result.block_size, 2**30
    top = max([*(r.context for r in result.rows), result.context_window or 0, 4096])
    xs = [256 << i for i in range(max(0, (top - 1).bit_length() - 8))] + [top]  # 256, 512... top
    fig, ax = plt.subplots(figsize=(8, 4.8), dpi=120)
    total = [batch * layout.sequence_bytes(x, block) / gib for x in xs]
    ax.plot(xs, total, marker="o", markersize=3, linewidth=2, label=f"KV cache, batch {batch}")
    if result.plan is not None and result.engine.sets_aside:
        # What the engine sets aside (vLLM: padding, the sliding in-flight reserve) meets the
        # budget line, not the bytes held.
        held = [batch * result.plan.request_bytes(x) / gib for x in xs]
        ax.plot(xs, held, linewidth=1.5, color="tab:purple",
                label=f"{result.engine.title} sets aside, batch {batch}")
    if len(layout.counts) > 1:
        for kind in layout.counts:
            ys = [batch * layout.by_kind(x, block)[kind] / gib for x in xs]
            ax.plot(xs, ys, linestyle="--", linewidth=1, label=f"{kind} layers")
    if result.fit is not None:
        on = f" on {result.gpu}" if result.gpu not in (None, "custom") else ""
        available = result.fit.available_bytes / gib
        ax.axhline(available, color="tab:red", linewidth=1.2,
                   label=f"available KV memory{on} ({available:.1f} GiB)")
    for row in result.rows:
        ax.axvline(row.context, color="grey", linewidth=0.6, linestyle=":")
    ax.set_xscale("log", base=2)
    tp = f", TP {result.tp}" if result.tp > 1 else ""
    ax.set(xlabel="context length (tokens)", ylabel="GiB" + (" per GPU" if result.tp > 1 else ""),
           title=f"{result.model}: KV cache ({result.kv_dtype}, blocks of {block}{tp})")
    ax.xaxis.set_major_formatter(FuncFormatter(
        lambda v, _: f"{int(v) // 1024}Ki" if v >= 1024 else f"{int(v)}"))
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="best", fontsize=8)  # "best" keeps it off the budget line
    fig.tight_layout()
    save_figure(fig, path)


def plot_policies(reports: Sequence[PolicyReport], path: Path, *, title: str = "") -> None:
    """Stacked bars of the memory categories per policy (PagedAttention Figure 2 style)."""
    labels = [r.policy if r.block_size is None else f"paged (b={r.block_size})" for r in reports]
    fig, ax = pyplot().subplots(figsize=(8, 0.6 * len(reports) + 1.6), dpi=120)
    left = [0.0] * len(reports)
    for name, attr, color in _PARTS:
        values = [100 * float(getattr(r, attr)) for r in reports]
        ax.barh(labels, values, left=left, color=color, label=name)
        left = [a + b for a, b in zip(left, values, strict=True)]
    for row, r in enumerate(reports):  # the number the figure is about, on each bar
        share = 100 * float(r.token_states)
        ax.text(min(share, 92) / 2, row, f"{share:.1f}%", va="center", ha="center",
                color="white", fontsize=8, fontweight="bold")
    ax.set(xlim=(0, 100), xlabel="share of KV-cache memory (%)")
    ax.invert_yaxis()
    ax.set_title(title or "Where KV-cache memory goes, per allocation policy", fontsize=10)
    ax.legend(ncol=5, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18), frameon=False)
    fig.tight_layout()
    save_figure(fig, path)


def plot_frontier(result: QualityResult, path: Path) -> None:
    """Bytes held against mean KL from the full cache (at (1, 0)), a point per policy, the
    frontier (points no other beats on both axes) joined by a line."""
    fig, ax = pyplot().subplots(figsize=(7.5, 4.8), dpi=130)
    points = [(r.quality.bytes_ratio, r.quality.mean_kl, r.policy) for r in result.rows]
    for x, y, name in points:
        ax.scatter([x], [y], s=28, zorder=3)
        ax.annotate(name, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=7)
    ax.scatter([1.0], [0.0], marker="*", s=90, color="black", zorder=3)
    ax.annotate("full cache", (1.0, 0.0), textcoords="offset points", xytext=(-50, 6), fontsize=7)
    frontier = sorted((x, y) for x, y, _ in [*points, (1.0, 0.0, "full")])
    best: list[tuple[float, float]] = []
    for x, y in frontier:  # by memory ascending: keep each point better than all cheaper ones
        if not best or y < best[-1][1]:
            best.append((x, y))
    ax.plot([x for x, _ in best], [y for _, y in best], color="gray", linewidth=0.8,
            linestyle="--", zorder=2)
    ax.set(xlabel=f"KV bytes held / full {result.cache_dtype} cache",
           ylabel="mean KL(full || policy) per next token")
    ax.set_title(f"{result.model}: cache policies on {result.tokens:,} tokens "
                 f"(prompt {result.prompt:,}); full-cache perplexity "
                 f"{result.baseline_perplexity:.2f}", fontsize=9)
    ax.grid(linewidth=0.4, alpha=0.5)
    ax.set(xlim=(0, 1.08), ylim=(0, None))
    fig.tight_layout()
    save_figure(fig, path)
