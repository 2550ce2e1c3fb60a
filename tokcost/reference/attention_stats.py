"""What each attention head looks at: scores per head over one layer's causal weights (heads,
T, T) and a label for each score past its threshold (docs/generate.md defines each)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tokcost.errors import InputError

# score -> the value a head must reach for its label (local: at most this distance).
THRESHOLDS: dict[str, float] = {
    "first_token": 0.5, "previous_token": 0.5, "self_token": 0.5, "duplicate_token": 0.5,
    "entropy_norm": 0.9, "mean_distance": 2.0, "relative_distance": 0.5}
# The labels a score at or past its threshold gives, strongest evidence first.
_LABELS = (("sink", "first_token"), ("previous-token", "previous_token"),
           ("self", "self_token"), ("duplicate-token", "duplicate_token"),
           ("broad", "entropy_norm"))

LABEL_TEXT: dict[str, str] = {
    "sink": "sink (most attention on the first token)", "previous-token": "previous-token head",
    "self": "attends to its own position",
    "duplicate-token": "duplicate-token head (earlier copies of the same token)",
    "broad": "broad (close to uniform over the context)", "local": "local (within 2 tokens back)",
    "long-range": "long-range (looks far back)"}

TOLERANCE = 1e-3  # float32 softmax rows sum to 1 within this


@dataclass(frozen=True)
class HeadStats:
    layer: int
    head: int
    entropy: float
    entropy_norm: float
    mean_distance: float
    relative_distance: float
    first_token: float
    previous_token: float
    self_token: float
    duplicate_token: float | None
    labels: tuple[str, ...]

    @property
    def name(self) -> str:
        """``L3H5``: layer 3, query head 5 (both from 0)."""
        return f"L{self.layer}H{self.head}"

    def to_dict(self) -> dict[str, Any]:
        scores = ("entropy", "entropy_norm", "mean_distance", "relative_distance",
                  "first_token", "previous_token", "self_token", "duplicate_token")
        rounded = {k: None if (v := getattr(self, k)) is None else round(v, 4) for k in scores}
        return {"head": self.name, "layer": self.layer, "index": self.head, **rounded,
                "labels": list(self.labels)}


def check_attention(att: NDArray[Any]) -> NDArray[np.float64]:
    """``att`` as float64 (heads, T, T), or InputError saying what is wrong."""
    a = np.asarray(att, dtype=np.float64)
    if a.ndim != 3 or a.shape[1] != a.shape[2]:
        raise InputError(f"attention must have shape (heads, T, T), got {a.shape}")
    if a.shape[1] < 2:
        raise InputError("attention needs at least 2 positions (row 0 only sees itself)")
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise InputError("attention weights must be finite and >= 0")
    if np.any(np.triu(a, k=1) > TOLERANCE):
        raise InputError("attention must be causal: weights above the diagonal must be 0")
    sums = a.sum(axis=-1)
    if np.any(np.abs(sums - 1) > TOLERANCE):
        raise InputError(f"each attention row must sum to 1, found a row summing to "
                         f"{float(sums.flat[np.argmax(np.abs(sums - 1))]):.4f}")
    return a


def row_entropy(att: NDArray[Any]) -> NDArray[np.float64]:
    """H_i = -sum_j a_ij ln a_ij per head and row, in nats: shape (heads, T)."""
    a = np.asarray(att, dtype=np.float64)
    out: NDArray[np.float64] = -(a * np.log(np.where(a > 0, a, 1.0))).sum(axis=-1)  # 0 ln 0 = 0
    return out


def layer_stats(att: NDArray[Any], *, layer: int, ids: Sequence[int] | None = None,
                window: int | None = None) -> list[HeadStats]:
    """The scores and labels of every head of one layer; ``ids`` enable ``duplicate_token``.
    On a sliding layer the norms are over the n_i = min(i + 1, window) keys row i sees."""
    a = check_attention(att)
    t = a.shape[1]
    if ids is not None and len(ids) != t:
        raise InputError(f"ids has {len(ids)} tokens but attention has {t} positions")
    rows = np.arange(1, t)  # query rows 1..T-1
    seen = rows + 1 if window is None else np.minimum(rows + 1, window)  # keys row i sees
    back = np.maximum(rows[:, None] - np.arange(t)[None, :], 0)  # (T-1, T): i - j
    dup = None  # (T-1, T): True where j < i holds row i's id
    if ids is not None:
        v = np.asarray(ids)
        same = (v[1:, None] == v[None, :]) & (np.arange(t)[None, :] < rows[:, None])
        dup = same if same.any() else None
    stats = []
    for h in range(a.shape[0]):
        m = a[h, 1:, :]  # (T-1, T)
        entropy = row_entropy(m[None])[0]  # (T-1,)
        distance = (m * back).sum(axis=-1)  # (T-1,)
        dup_score = None if dup is None else float((m * dup).sum(axis=-1)[dup.any(-1)].mean())
        scores = {"entropy": float(entropy.mean()),
                  "entropy_norm": float(_ratio(entropy, np.log(seen)).mean()),
                  "mean_distance": float(distance.mean()),
                  "relative_distance": float(_ratio(distance, seen - 1).mean()),
                  "first_token": float(m[:, 0].mean()),
                  "previous_token": float(m[np.arange(t - 1), rows - 1].mean()),
                  "self_token": float(m[np.arange(t - 1), rows].mean())}
        stats.append(HeadStats(layer=layer, head=h, **scores, duplicate_token=dup_score,
                               labels=head_labels(scores, dup_score)))
    return stats


def _ratio(x: NDArray[np.float64], top: NDArray[Any]) -> NDArray[np.float64]:
    """x / top per row, 0 where the row sees one key only (nothing to spread over)."""
    top = np.asarray(top, dtype=np.float64)
    out: NDArray[np.float64] = np.divide(x, top, out=np.zeros_like(x), where=top > 0)
    return out


def head_labels(scores: dict[str, float], duplicate: float | None) -> tuple[str, ...]:
    """The labels ``THRESHOLDS`` give these scores, strongest evidence first."""
    th, given = THRESHOLDS, {**scores, "duplicate_token": duplicate}
    labels = [label for label, score in _LABELS
              if (value := given[score]) is not None and value >= th[score]]
    # Distance only describes a head that no label above already places.
    if not labels and scores["mean_distance"] <= th["mean_distance"]:
        labels.append("local")
    elif not labels and scores["relative_distance"] >= th["relative_distance"]:
        labels.append("long-range")
    return tuple(labels)


def describe(stats: HeadStats) -> str:
    """``L3H5: previous-token head``: the labels of a head in words."""
    return f"{stats.name}: " + "; ".join(LABEL_TEXT[label] for label in stats.labels)
