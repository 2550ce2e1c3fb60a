"""Heat maps of chosen attention heads (``tokcost attention --plot``; matplotlib, optional)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tokcost.plotting import pyplot, save_figure

if TYPE_CHECKING:
    from tokcost.app.attention import AttentionResult

MAX_TICKS = 40  # past this many tokens, labels would overlap: show positions instead


def plot_attention(result: AttentionResult, heads: Sequence[tuple[int, int]], path: Path) -> None:
    """One panel per (layer, head): queries down, keys across, the causal half left blank."""
    import numpy as np
    plt = pyplot()
    n = len(heads)
    cols = min(n, 4)
    rows = math.ceil(n / cols)
    t = len(result.tokens)
    side = 3.2 if t <= 16 else 4.2
    fig, axes = plt.subplots(rows, cols, figsize=(side * cols, side * rows + 0.6), dpi=110,
                             layout="constrained", squeeze=False)
    labels = [repr(tok)[1:-1] or "∅" for tok in result.tokens]
    image = None
    for k, ax in enumerate(axes.flat):
        if k >= n:
            ax.axis("off")
            continue
        layer, head = heads[k]
        weights = np.asarray(result.maps[layer][head], dtype=np.float64)
        # NaN above the diagonal: the causal half is drawn blank, not as weight 0.
        masked = np.where(np.triu(np.ones_like(weights), k=1) > 0, np.nan, weights)
        image = ax.imshow(masked, cmap="viridis", vmin=0.0, vmax=1.0, interpolation="nearest")
        stats = result.head(layer, head)
        ax.set_title(f"{stats.name}: {', '.join(stats.labels) or 'no label'}", fontsize=8)
        # Every panel has the same tokens: only the left column and the bottom row name them
        # (a 16-panel figure drew 500 tick labels, and took seconds to lay out).
        if t <= MAX_TICKS:
            ax.set_xticks(range(t), labels if k + cols >= n else [], rotation=90, fontsize=6)
            ax.set_yticks(range(t), labels if k % cols == 0 else [], fontsize=6)
        if k + cols >= n:
            ax.set_xlabel("key (attended to)", fontsize=7)
        if k % cols == 0:
            ax.set_ylabel("query", fontsize=7)
    if image is not None:
        fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8, label="attention weight")
    fig.suptitle(f"{result.model}: attention weights per head ({t} tokens)", fontsize=10)
    save_figure(fig, path)
