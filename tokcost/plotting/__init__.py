"""What every plot shares (path checks, lazy matplotlib, atomic save), and the one-figure plots
(attention heads, the bpe sweep); the kvmem and compare figures in modules beside it.
matplotlib is an optional extra (``tokcost[plot]``), imported only here."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokcost.atomic import atomic_path, ensure_writable
from tokcost.errors import MissingDependency, UsageError, arg

if TYPE_CHECKING:
    from tokcost.app.attention import AttentionResult
    from tokcost.app.sweep import BPESweepPoint

FORMATS = (".png", ".svg", ".pdf")


def check_plot_path(path: Path | None, *, force: bool = False) -> None:
    """Fail before any work when the picture (if any) could not be written."""
    if path is None:
        return
    if path.suffix.lower() not in FORMATS:
        raise UsageError(f"{arg('plot')} needs a .png, .svg or .pdf file name, got "
                         f"'{path.name}'", param="plot", value=path)
    if path.exists() and not force:
        raise UsageError(f"{path} exists; pass {arg('force', True)} to overwrite it", param="force")
    ensure_writable(path)  # a missing or read-only folder, tried by writing there


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise MissingDependency("matplotlib", "plot", "plotting") from None
    return plt


def save_figure(fig: Any, path: Path) -> None:
    """Write ``fig`` to ``path`` atomically, in the format its suffix names, and close it."""
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=path.suffix.lstrip(".").lower())
    finally:
        pyplot().close(fig)


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



def plot_sweep(sizes: Sequence[BPESweepPoint], references: Sequence[BPESweepPoint], path: Path,
               *, knee: int | None = None, knee_rule: str = "", width: str = "") -> None:
    """Draw the curve (log2 x axis), the knee dashed, the references as labelled points."""
    fig, ax = pyplot().subplots(figsize=(8.5, 5), dpi=130)
    xs = [p.vocab_size for p in sizes]
    ax.plot(xs, [p.tokens_per_byte for p in sizes], marker="o", color="#2b7bba",
            label="BPE trained on the corpus (one run, prefixes)")
    ax.set_xscale("log", base=2)
    ax.margins(x=0.12)  # room for the references' labels
    ax.set(xlabel="vocabulary size (tokens)", ylabel="held-out tokens per byte (lower is shorter)")
    for p in references:
        name = p.label if p.exact else f"≈{p.label}"
        ax.scatter([p.vocab_size], [p.tokens_per_byte], marker="s", color="#d04040", zorder=3)
        ax.annotate(f" {name}", (p.vocab_size, p.tokens_per_byte), fontsize=7, va="bottom")
    if knee is not None:
        at = next(p for p in sizes if p.vocab_size == knee)
        ax.axvline(at.vocab_size, color="black", linestyle="--", linewidth=0.8)
        ax.annotate(f"knee: {at.vocab_size:,}", (at.vocab_size, at.tokens_per_byte),
                    xytext=(6, 12), textcoords="offset points", fontsize=8,
                    arrowprops={"arrowstyle": "->", "linewidth": 0.6})
    right = ax.twinx()
    points = sorted([*sizes, *references], key=lambda p: p.vocab_size)
    right.plot([p.vocab_size for p in points],
               [(p.embedding_params + p.output_params) / 1e6 for p in points], linestyle=":",
               color="#808080", label="embedding + output parameters")
    right.set_ylabel(f"embedding + output parameters (M){f', {width}' if width else ''}",
                     fontsize=8)
    lines = ax.get_legend_handles_labels()
    more = right.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize=7, loc="upper center")
    ax.grid(linewidth=0.4, alpha=0.5)
    ax.set_title("Vocabulary size: sequence length against embedding parameters", fontsize=10)
    if knee_rule:
        none = "" if knee is not None else " (none in this range)"
        fig.text(0.01, 0.01, f"knee: {knee_rule}{none}", fontsize=6, color="#555555")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    save_figure(fig, path)
