"""KV memory against context length, for one ``kvmem estimate`` (matplotlib, optional).

matplotlib is imported only when a plot is asked for; the file is written atomically.
"""

from __future__ import annotations

from pathlib import Path

from tokcost.memory.estimate import KvResult
from tokcost.plotting import check_plot_path, pyplot, save_figure

__all__ = ["plot_memory"]


def _sweep(limit: int) -> list[int]:
    """Context lengths 256, 512, ... up to ``limit``, plus ``limit`` itself."""
    points, n = [], 256
    while n < limit:
        points.append(n)
        n *= 2
    points.append(limit)
    return points


def plot_memory(result: KvResult, path: str | Path, *, force: bool = False) -> None:
    """Plot the batch's KV bytes (paged) against context; mark the GPU budget."""
    path = Path(path)
    check_plot_path(path, force=force)
    plt = pyplot()
    from matplotlib.ticker import FuncFormatter

    layout = result.layout
    top = max([*(r.context for r in result.rows), result.context_window or 0, 4096])
    xs = _sweep(top)
    gib = 2**30
    fig, ax = plt.subplots(figsize=(8, 4.8), dpi=120)
    total = [result.batch * layout.sequence_bytes(x, result.block_size) / gib for x in xs]
    ax.plot(
        xs, total, marker="o", markersize=3, linewidth=2, label=f"KV cache, batch {result.batch}"
    )
    if result.plan is not None and result.engine.sets_aside:
        # What the engine sets aside per request (vLLM: padding and the sliding in-flight
        # reserve) is what meets the budget line, not the bytes held.
        held = [result.batch * result.plan.request_bytes(x) / gib for x in xs]
        ax.plot(xs, held, linewidth=1.5, color="tab:purple",
                label=f"{result.engine.title} sets aside, batch {result.batch}")
    by_kind = {kind: [] for kind in layout.counts}  # type: dict[str, list[float]]
    for x in xs:
        for kind, value in layout.by_kind(x, result.block_size).items():
            by_kind[kind].append(result.batch * value / gib)
    if len(by_kind) > 1:
        for kind, ys in by_kind.items():
            ax.plot(xs, ys, linestyle="--", linewidth=1, label=f"{kind} layers")
    if result.fit is not None:
        ax.axhline(
            result.fit.available_bytes / gib,
            color="tab:red",
            linewidth=1.2,
            label=(
                "available KV memory"
                + (f" on {result.gpu}" if result.gpu not in (None, "custom") else "")
                + f" ({result.fit.available_bytes / gib:.1f} GiB)"
            ),
        )
    for row in result.rows:
        ax.axvline(row.context, color="grey", linewidth=0.6, linestyle=":")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("GiB" + (" per GPU" if result.tp > 1 else ""))
    ax.set_title(
        f"{result.model}: KV cache ({result.kv_dtype}, blocks of {result.block_size}"
        + (f", TP {result.tp}" if result.tp > 1 else "")
        + ")"
    )
    ax.xaxis.set_major_formatter(
        FuncFormatter(
            lambda v, _: f"{int(v) // 1024}Ki" if v >= 1024 else f"{int(v)}"
        )
    )
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="best", fontsize=8)  # "best" keeps it off the budget line
    fig.tight_layout()
    save_figure(fig, path)
