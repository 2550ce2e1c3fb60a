"""forward(logits="last"): the prefill computes one row of logits, the same row (issue 16 gap 2)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tokcost.errors import UsageError
from tokcost.reference.cache import ContiguousCache, PagedCache
from tokcost.reference.config import RefConfig
from tokcost.reference.hf_checkpoint import FAMILIES, load_weights, open_checkpoint
from tokcost.reference.model import Transformer
from tokcost.reference.weights import init_weights

TINY = Path(__file__).parent / "fixtures" / "hf_tiny"


def _checkpoint(family: str) -> tuple[Transformer, list[int]]:
    ck = open_checkpoint(TINY / family)
    ids = json.loads((TINY / family / "prompt_ids.json").read_text())
    return Transformer(ck.cfg, load_weights(TINY / family, ck.model_type, ck.cfg)), ids


def _cache(model: Transformer, mode: str, tokens: int) -> ContiguousCache | PagedCache | None:
    if mode == "none":
        return None
    if mode == "contiguous":
        return ContiguousCache(model.cfg, capacity=tokens)
    return PagedCache(model.cfg, block_size=4, num_blocks=-(-tokens // 4))


@pytest.mark.parametrize("mode", ["none", "contiguous", "paged"])
@pytest.mark.parametrize("family", FAMILIES)
def test_last_logits_are_the_full_computations_last_row(family: str, mode: str) -> None:
    model, ids = _checkpoint(family)
    # Without a cache, two rows in one batch: each keeps its own last position.
    rows = [ids, ids[::-1]] if mode == "none" else [ids]
    batch = np.asarray(rows, dtype=np.int64)  # (B, T)
    full = model.forward(batch, _cache(model, mode, len(ids))).logits
    last = model.forward(batch, _cache(model, mode, len(ids)), logits="last").logits
    assert full.shape == (len(rows), len(ids), model.cfg.vocab_size)
    assert last.shape == (len(rows), 1, model.cfg.vocab_size) and last.dtype == np.float32
    np.testing.assert_allclose(last[:, 0], full[:, -1], rtol=0, atol=1e-6)
    assert (np.argmax(last[:, 0], axis=-1) == np.argmax(full[:, -1], axis=-1)).all()


def test_a_decode_step_after_the_prefill_is_unchanged() -> None:
    cfg = RefConfig(layers=2, hidden_size=16, attention_heads=2, kv_heads=1, head_dim=8,
                    vocab_size=23, context_window=32)
    model = Transformer(cfg, init_weights(cfg, seed=3))
    ids = np.asarray([[1, 5, 7, 2, 9]], dtype=np.int64)
    a, b = ContiguousCache(cfg, capacity=6), ContiguousCache(cfg, capacity=6)
    model.forward(ids, a)
    model.forward(ids, b, logits="last")
    step = np.asarray([[4]], dtype=np.int64)
    np.testing.assert_array_equal(model.forward(step, a).logits, model.forward(step, b).logits)


def test_an_unknown_logits_choice_is_refused() -> None:
    model, ids = _checkpoint("llama")
    with pytest.raises(UsageError, match="logits='first'"):
        model.forward(np.asarray([ids]), logits="first")  # type: ignore[arg-type]
