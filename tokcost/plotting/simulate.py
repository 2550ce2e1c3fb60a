"""Where KV memory goes under each allocation policy (``kvmem simulate``; matplotlib, lazily)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tokcost.memory.report import PolicyReport
from tokcost.plotting import pyplot, save_figure

__all__ = ["plot_policies"]

# (legend, PolicyReport attribute, colour), stacked left to right.
_PARTS = (
    ("token states", "token_states", "#2b7bba"),
    ("reserved", "reserved", "#f0a030"),
    ("internal frag.", "internal_fragmentation", "#d04040"),
    ("external frag.", "external_fragmentation", "#8050a0"),
    ("free", "free", "#cccccc"),
)


def plot_policies(reports: Sequence[PolicyReport], path: Path, *, title: str = "") -> None:
    """Stacked bars of the memory categories per policy (PagedAttention Figure 2 style)."""
    plt = pyplot()
    labels = [r.policy if r.block_size is None else f"paged (b={r.block_size})" for r in reports]
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(reports) + 1.6), dpi=120)
    left = [0.0] * len(reports)
    for name, attr, color in _PARTS:
        values = [100 * float(getattr(r, attr)) for r in reports]
        ax.barh(labels, values, left=left, color=color, label=name)
        left = [a + b for a, b in zip(left, values, strict=True)]
    for row, r in enumerate(reports):  # the number the figure is about, on each bar
        share = 100 * float(r.token_states)
        ax.text(min(share, 92) / 2, row, f"{share:.1f}%", va="center", ha="center",
                color="white", fontsize=8, fontweight="bold")
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of KV-cache memory (%)")
    ax.invert_yaxis()
    ax.set_title(title or "Where KV-cache memory goes, per allocation policy", fontsize=10)
    ax.legend(ncol=5, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18),
              frameon=False)
    fig.tight_layout()
    save_figure(fig, path)
