"""The attention use case: run a prompt through the reference model and score every head.

One forward pass over the prompt with the full attention matrices kept (every layer,
every query head, every query position); ``tokcost.reference.attention_stats`` turns each
layer's (heads, T, T) weights into the scores it defines (entropy, distance, first-token,
previous-token, self and duplicate-token mass) and names the heads that pass its
thresholds. ``plot`` draws chosen heads as heat maps (matplotlib, optional). Nothing is
printed; the result's ``to_dict()`` is the ``--json`` document.

>>> parse_head("L3H5", layers=4, heads=8)
(3, 5)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokcost.app.generate import check_prompt_text
from tokcost.errors import UsageError
from tokcost.reference.errors import PromptTooLong
from tokcost.tokenizers import open_catalog

if TYPE_CHECKING:
    from tokcost.catalog import CatalogSource
    from tokcost.reference.attention_stats import HeadStats

__all__ = ["AttentionResult", "NotableHead", "attention"]

# A --plot with no heads named draws every head of a model this small, else the notable ones.
MAX_PLOTTED = 16


@dataclass(frozen=True)
class NotableHead:
    """A head that passed a threshold: ``L3H5`` and its labels, in words."""

    head: str
    labels: tuple[str, ...]
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"head": self.head, "labels": list(self.labels), "text": self.text}


@dataclass(frozen=True)
class AttentionResult:
    """Every head's scores for one prompt, the notable heads, and what was plotted.

    ``tokens`` is each prompt id decoded alone (position i is ``tokens[i]``);
    ``maps`` holds the attention weights, per layer (heads, T, T), for plots and callers
    (not in ``to_dict``).
    """

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
    # Per layer "full" or "sliding" (a sliding layer sees its window's newest keys only,
    # and its scores are over that window).
    layer_kinds: tuple[str, ...] = ()
    sliding_window: int | None = None
    maps: tuple[Any, ...] = field(default=(), repr=False, compare=False)

    def head(self, layer: int, head: int) -> HeadStats:
        return self.heads[layer * self.attention_heads + head]

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "weights": self.weights,
            "tokenizer": self.tokenizer,
            "prompt_tokens": len(self.prompt_ids),
            "prompt_ids": list(self.prompt_ids),
            "tokens": list(self.tokens),
            "layers": self.layers,
            "attention_heads": self.attention_heads,
            "kv_heads": self.kv_heads,
            "thresholds": dict(self.thresholds),
            "heads": [h.to_dict() for h in self.heads],
            "notable": [n.to_dict() for n in self.notable],
            "plot": self.plot,
            "plotted": list(self.plotted),
            "layer_kinds": list(self.layer_kinds),
            "sliding_window": self.sliding_window,
        }


_HEAD = re.compile(r"L(\d+)H(\d+)", re.IGNORECASE)


def parse_head(text: str, *, layers: int, heads: int) -> tuple[int, int]:
    """``L3H5`` -> (3, 5), checked against the model's shape."""
    m = _HEAD.fullmatch(text.strip())
    if m is None:
        raise UsageError(f"heads={text!r} is not a head; write it as L<layer>H<head>, e.g. L0H1",
                         param="heads")
    layer, head = int(m.group(1)), int(m.group(2))
    if layer >= layers or head >= heads:
        raise UsageError(
            f"heads={text!r} is outside the model: layers L0-L{layers - 1}, heads H0-H{heads - 1}",
            param="heads",
        )
    return layer, head


def attention(
    prompt: str,
    *,
    model: str = "tiny-ref",
    catalog: CatalogSource = None,
    weights: str | Path | None = None,
    seed: int | None = None,
    plot: str | Path | None = None,
    heads: Sequence[str] = (),
    force: bool = False,
    model_dir: str | Path | None = None,
) -> AttentionResult:
    """Score every head of ``model`` on ``prompt`` (at least 2 tokens, at most the context
    window). ``plot`` writes heat maps of ``heads`` (``L3H5``; none named: every head of a
    model with at most 16, else the notable ones); ``seed`` seeds random weights for a model
    without trained ones. ``model_dir`` (a Hugging Face model folder) or ``model``
    ``hf:ORG/REPO`` runs a real checkpoint, loaded as ``generate`` loads it."""
    import numpy as np

    from tokcost.catalog.hf_model import is_hf_spec
    from tokcost.reference.attention_stats import THRESHOLDS, describe, layer_stats
    from tokcost.reference.from_catalog import (
        input_ids,
        load_checkpoint,
        load_model,
        load_tokenizer,
    )

    if heads and plot is None:
        raise UsageError(f"heads={heads[0]} chooses a head to draw; add plot=FILE",
                         param="heads", related=("plot",))
    if seed is not None and seed < 0:
        raise UsageError(f"seed={seed} must be >= 0", param="seed")
    check_prompt_text(prompt)
    plot_path = Path(plot) if plot is not None else None
    if plot_path is not None:
        from tokcost.plotting import check_plot_path

        check_plot_path(plot_path, force=force)  # before any work
    if model_dir is not None or is_hf_spec(model):
        if weights is not None:
            raise UsageError("weights cannot replace a checkpoint's own; give weights only "
                             "with a catalog model", param="weights")
        checkpoint = load_checkpoint(model_dir if model_dir is not None else model)
        entry, loaded = checkpoint.entry, checkpoint.loaded
    else:
        entry = open_catalog(catalog).resolve(model)
        loaded = load_model(entry, weights=weights, seed=seed or 0)
    cfg = loaded.model.cfg
    chosen = [parse_head(h, layers=cfg.layers, heads=cfg.attention_heads) for h in heads]
    tok = load_tokenizer(entry, cfg)
    ids = input_ids(tok, prompt)
    if len(ids) < 2:
        raise UsageError(f"the prompt is {len(ids)} token(s); attention needs at least 2 "
                         "(the first token can only attend to itself)", param="prompt")
    if len(ids) > cfg.context_window:
        raise PromptTooLong(f"the prompt is {len(ids):,} tokens, over {entry.id}'s context "
                            f"window of {cfg.context_window:,}; shorten it", param="prompt")
    out = loaded.model.forward(np.asarray([ids], dtype=np.int64), attention="full")
    assert out.attention is not None
    maps = tuple(np.asarray(a[0], dtype=np.float32) for a in out.attention)  # (nh, T, T) each
    stats = tuple(
        s for i, a in enumerate(maps)
        for s in layer_stats(a, layer=i, ids=ids,
                             window=cfg.sliding_window if cfg.sliding(i) else None)
    )
    notable = tuple(NotableHead(s.name, s.labels, describe(s)) for s in stats if s.labels)
    result = AttentionResult(
        model=entry.id, weights=loaded.weights, trained=loaded.trained, tokenizer=tok.name,
        prompt_ids=tuple(ids), tokens=tuple(tok.decode([i]) for i in ids), layers=cfg.layers,
        attention_heads=cfg.attention_heads, kv_heads=cfg.kv_heads, heads=stats,
        notable=notable, thresholds=dict(THRESHOLDS), maps=maps,
        layer_kinds=tuple("sliding" if cfg.sliding(i) else "full" for i in range(cfg.layers)),
        sliding_window=cfg.sliding_window if cfg.layer_types and "sliding" in cfg.layer_types
        else None,
    )
    if plot_path is None:
        return result
    if not chosen:
        everyone = [(s.layer, s.head) for s in stats]
        named = [(s.layer, s.head) for s in stats if s.labels]
        chosen = everyone if len(everyone) <= MAX_PLOTTED else (named or everyone)
        chosen = chosen[:MAX_PLOTTED]
    chosen = list(dict.fromkeys(chosen))  # a head named twice is drawn once
    from tokcost.plotting.attention import plot_attention

    plot_attention(result, chosen, plot_path, force=force)
    return replace(result, plot=str(plot_path),
                   plotted=tuple(f"L{layer}H{head}" for layer, head in chosen))
