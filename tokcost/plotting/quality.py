"""The ``kvmem quality`` figure: each cache policy's memory against its quality cost."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tokcost.plotting import pyplot, save_figure

if TYPE_CHECKING:
    from tokcost.app.quality import QualityResult


def plot_frontier(result: QualityResult, path: Path) -> None:
    """Bytes held (share of the full cache) against the mean KL divergence from it, one
    labelled point per policy, the full cache at (1, 0); the points no other policy beats
    on both axes (the frontier) joined by a line. matplotlib is imported here only."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=130)
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
    ax.set_xlabel("KV bytes held / full float32 cache")
    ax.set_ylabel("mean KL(full || policy) per next token")
    ax.set_title(f"{result.model}: cache policies on {result.tokens:,} tokens "
                 f"(prompt {result.prompt:,}); full-cache perplexity "
                 f"{result.baseline_perplexity:.2f}", fontsize=9)
    ax.grid(linewidth=0.4, alpha=0.5)
    ax.set_xlim(0, 1.08)
    ax.set_ylim(bottom=0)
    fig.tight_layout()
    save_figure(fig, path)
