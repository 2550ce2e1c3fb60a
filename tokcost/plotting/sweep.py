"""The ``bpe sweep`` figure: tokens per byte against vocabulary size, the knee, the reference
tokenizers as points, and the embedding + output parameters on a second axis."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tokcost.plotting import pyplot, save_figure

if TYPE_CHECKING:
    from tokcost.app.sweep import BPESweepPoint


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
