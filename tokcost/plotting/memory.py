"""KV memory against context length, for one ``kvmem estimate`` (matplotlib, imported lazily)."""

from __future__ import annotations

from pathlib import Path

from tokcost.memory.estimate import KvResult
from tokcost.plotting import pyplot, save_figure

__all__ = ["plot_memory"]


def plot_memory(result: KvResult, path: Path) -> None:
    """Plot the batch's KV bytes (paged) against context; mark the GPU budget (the caller
    checked ``path``)."""
    plt = pyplot()
    from matplotlib.ticker import FuncFormatter

    layout, batch, block, gib = result.layout, result.batch, result.block_size, 2**30
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
    by_kind: dict[str, list[float]] = {kind: [] for kind in layout.counts}
    for x in xs:
        for kind, value in layout.by_kind(x, block).items():
            by_kind[kind].append(batch * value / gib)
    if len(by_kind) > 1:
        for kind, ys in by_kind.items():
            ax.plot(xs, ys, linestyle="--", linewidth=1, label=f"{kind} layers")
    if result.fit is not None:
        on = f" on {result.gpu}" if result.gpu not in (None, "custom") else ""
        available = result.fit.available_bytes / gib
        ax.axhline(available, color="tab:red", linewidth=1.2,
                   label=f"available KV memory{on} ({available:.1f} GiB)")
    for row in result.rows:
        ax.axvline(row.context, color="grey", linewidth=0.6, linestyle=":")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("GiB" + (" per GPU" if result.tp > 1 else ""))
    tp = f", TP {result.tp}" if result.tp > 1 else ""
    ax.set_title(f"{result.model}: KV cache ({result.kv_dtype}, blocks of {block}{tp})")
    ax.xaxis.set_major_formatter(FuncFormatter(
        lambda v, _: f"{int(v) // 1024}Ki" if v >= 1024 else f"{int(v)}"))
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="best", fontsize=8)  # "best" keeps it off the budget line
    fig.tight_layout()
    save_figure(fig, path)
