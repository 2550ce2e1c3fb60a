"""The attention use case: one forward pass over a prompt with the full attention matrices
kept, every head scored (``tokcost.reference.attention_stats``) and chosen heads plotted."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokcost.app import names
from tokcost.errors import UsageError, arg
from tokcost.reference.config import PromptTooLong
from tokcost.reference.from_catalog import ModelSource
from tokcost.reference.request import PromptRequest

if TYPE_CHECKING:
    from tokcost.reference.attention_stats import HeadStats

__all__ = ["AttentionRequest", "attention"]

# A plot with no heads named draws every head of a model this small, else the notable ones.
MAX_PLOTTED = 16
_HEAD = re.compile(r"L(\d+)H(\d+)", re.IGNORECASE)


@dataclass(frozen=True, kw_only=True)
class AttentionRequest(PromptRequest):
    """Score every head of the ``source`` model on ``prompt``; ``plot`` draws ``heads`` (L3H5)."""

    source: ModelSource = field(default_factory=ModelSource)
    plot: str | Path | None = None
    heads: tuple[str, ...] = ()
    force: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "heads", names(self.heads))
        if self.heads and self.plot is None:
            raise UsageError(f"{arg('heads', self.heads[0])} chooses a head to draw; add "
                             f"{arg('plot', 'FILE')}", param="heads", related=("plot",))


@dataclass(frozen=True)
class NotableHead:
    head: str
    labels: tuple[str, ...]
    text: str


@dataclass(frozen=True)
class AttentionResult:
    """Every head's scores for one prompt, the notable heads, and what was plotted;
    ``tokens``: each id decoded alone; ``maps``: per layer (heads, T, T), not in ``to_dict``."""

    model: str
    weights: str
    trained: bool
    tokenizer: str
    prompt_ids: tuple[int, ...]
    tokens: tuple[str, ...]
    layers: int
    attention_heads: int
    kv_heads: int
    heads: tuple[HeadStats, ...]
    notable: tuple[NotableHead, ...]
    thresholds: dict[str, float]
    plot: str | None = None
    plotted: tuple[str, ...] = ()
    layer_kinds: tuple[str, ...] = ()
    sliding_window: int | None = None
    maps: tuple[Any, ...] = field(default=(), repr=False, compare=False)

    def head(self, layer: int, head: int) -> HeadStats:
        return self.heads[layer * self.attention_heads + head]

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "weights": self.weights, "tokenizer": self.tokenizer,
                "prompt_tokens": len(self.prompt_ids), "prompt_ids": list(self.prompt_ids),
                "tokens": list(self.tokens), "layers": self.layers,
                "attention_heads": self.attention_heads, "kv_heads": self.kv_heads,
                "thresholds": dict(self.thresholds), "heads": [h.to_dict() for h in self.heads],
                "notable": list(map(asdict, self.notable)), "plot": self.plot,
                "plotted": list(self.plotted), "layer_kinds": list(self.layer_kinds),
                "sliding_window": self.sliding_window}


def parse_head(text: str, *, layers: int, heads: int) -> tuple[int, int]:
    """``L3H5`` -> (3, 5), checked against the model's shape."""
    m = _HEAD.fullmatch(text.strip())
    if m is None:
        raise UsageError(f"{arg('heads', repr(text))} is not a head; write it as "
                         "L<layer>H<head>, e.g. L0H1", param="heads", value=text)
    layer, head = int(m.group(1)), int(m.group(2))
    if layer >= layers or head >= heads:
        raise UsageError(f"{arg('heads', repr(text))} is outside the model: layers "
                         f"L0-L{layers - 1}, heads H0-H{heads - 1}", param="heads", value=text)
    return layer, head


def attention(request: AttentionRequest) -> AttentionResult:
    """Score every head on ``request``'s prompt (and plot the heads it names)."""
    import numpy as np

    from tokcost.plotting import check_plot_path
    from tokcost.reference.attention_stats import THRESHOLDS, describe, layer_stats
    from tokcost.reference.from_catalog import input_ids, load_tokenizer
    plot = Path(request.plot) if request.plot is not None else None
    check_plot_path(plot, force=request.force)  # before any work
    loaded = request.source.load()
    cfg = loaded.model.cfg
    chosen = [parse_head(h, layers=cfg.layers, heads=cfg.attention_heads) for h in request.heads]
    tok = load_tokenizer(loaded.entry, cfg)
    ids = input_ids(tok, request.text)
    if len(ids) < 2:
        raise UsageError(f"the {arg('prompt')} is {len(ids)} token(s); attention needs at "
                         "least 2 (the first token can only attend to itself)", param="prompt")
    if len(ids) > cfg.context_window:
        raise PromptTooLong(f"the {arg('prompt')} is {len(ids):,} tokens, over {loaded.entry.id}'s "
                            f"context window of {cfg.context_window:,}; shorten it", param="prompt")
    out = loaded.model.forward(np.asarray([ids], dtype=np.int64), attention="full")
    assert out.attention is not None
    maps = tuple(np.asarray(a[0], dtype=np.float32) for a in out.attention)  # (nh, T, T) each
    window = cfg.sliding_window
    stats = tuple(s for i, a in enumerate(maps) for s in layer_stats(
        a, layer=i, ids=ids, window=window if cfg.sliding(i) else None))
    result = AttentionResult(
        model=loaded.entry.id, weights=loaded.weights, trained=loaded.trained,
        tokenizer=tok.name, prompt_ids=tuple(ids), tokens=tuple(tok.decode([i]) for i in ids),
        layers=cfg.layers, attention_heads=cfg.attention_heads, kv_heads=cfg.kv_heads,
        heads=stats, thresholds=dict(THRESHOLDS), maps=maps,
        notable=tuple(NotableHead(s.name, s.labels, describe(s)) for s in stats if s.labels),
        layer_kinds=tuple("sliding" if cfg.sliding(i) else "full" for i in range(cfg.layers)),
        sliding_window=window if cfg.slides else None)
    if plot is None:
        return result
    from tokcost.plotting import plot_attention
    if not chosen:  # every head of a small model, else the notable ones
        everyone = [(s.layer, s.head) for s in stats]
        named = [(s.layer, s.head) for s in stats if s.labels]
        chosen = (everyone if len(everyone) <= MAX_PLOTTED else named or everyone)[:MAX_PLOTTED]
    chosen = list(dict.fromkeys(chosen))  # a head named twice is drawn once
    plot_attention(result, chosen, plot)
    return replace(result, plot=str(plot), plotted=tuple(f"L{la}H{h}" for la, h in chosen))
