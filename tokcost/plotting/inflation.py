"""The compare figure: the premium of every text, one horizontal bar per tokenizer."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tokcost.plotting import check_plot_path, pyplot, save_figure

if TYPE_CHECKING:
    from tokcost.inflation import Report


def plot_premiums(report: Report, path: Path, *, force: bool = False) -> None:
    """One panel per group, bars by premium on the first tokenizer, a line at 1.0."""
    check_plot_path(path, force=force)
    plt = pyplot()
    groups = [g for g in report.groups if g.rows]
    meters = [m.label for m in report.meters]
    names = [m.label if m.exact else f"≈{m.label} (proxy tokenizer)" for m in report.meters]
    marks = ["" if m.exact else "≈" for m in report.meters]
    heights = [max(2.0, 0.24 * len(g.rows) * max(1, len(meters)) ** 0.5 + 1.0) for g in groups]
    fig, axes = plt.subplots(len(groups), 1, figsize=(9, sum(heights)), dpi=130, squeeze=False,
                             gridspec_kw={"height_ratios": heights})
    bar = 0.8 / len(meters)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, group in zip((a[0] for a in axes), groups, strict=True):
        rows = list(reversed(group.rows))  # largest premium at the top
        for mi, meter in enumerate(meters):
            offset = ((len(meters) - 1) / 2 - mi) * bar  # first tokenizer on top
            ys = [i + offset for i in range(len(rows))]
            values = [r.result(meter).premium or 0.0 for r in rows]
            ax.barh(ys, values, height=bar * 0.92, color=colors[mi % len(colors)], label=names[mi])
            if len(meters) <= 3:
                for y, v in zip(ys, values, strict=True):
                    ax.text(v, y, f" {marks[mi]}{v:.2f}", va="center",
                            fontsize=6 if len(meters) > 1 else 7)
        ax.set_yticks(range(len(rows)), [r.sample.display_name for r in rows], fontsize=8)
        ax.axvline(1.0, color="black", linewidth=0.8, linestyle="--")
        ax.set(xlim=(0, max((r.result(m).premium or 0.0) for r in rows for m in meters) * 1.12),
               ylim=(-0.6, len(rows) - 0.4), axisbelow=True)
        ax.grid(axis="x", linewidth=0.4, alpha=0.5)
        ax.set_title(f"{group.kind}: tokens relative to {group.baseline} (premium, lower is "
                     f"cheaper)", fontsize=10)
        ax.set_xlabel("premium = tokens(X) / tokens(baseline) on the same content", fontsize=8)
        if len(meters) > 1 or any(marks):
            ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    save_figure(fig, path)
