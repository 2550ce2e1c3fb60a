"""Cache policies (tokcost.reference.kvpolicy) on sliding-window layers.

A sliding layer's queries see the ``window`` newest positions only, so an evicting cache
keeps at most ``window`` keys there and a quantized one drops the tokens before the
window. The bytes are checked against ``policy_cache_bytes`` (the memory model's
``policy_bytes`` per layer kind), the logits against the same policy on a cache that
keeps everything (the model masks what the window left).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tokcost.memory.cache_policy import parse_policy
from tokcost.reference import Transformer
from tokcost.reference.hf_checkpoint import load_weights, open_checkpoint
from tokcost.reference.kvpolicy import (
    EvictingCache,
    QuantizedCache,
    policy_cache,
    policy_cache_bytes,
    teacher_forced,
)

TINY = Path(__file__).parent / "fixtures" / "hf_tiny"
PROMPT = 12
LENGTH = 40


def _gemma2() -> tuple[Transformer, list[int]]:
    folder = TINY / "gemma2"  # layer 0 slides (window 8), layer 1 is global
    ck = open_checkpoint(folder)
    model = Transformer(ck.cfg, load_weights(folder, ck.model_type, ck.cfg))
    ids = np.random.default_rng(5).integers(0, ck.cfg.vocab_size, LENGTH)
    return model, [int(i) for i in ids]


POLICIES = ["fp8", "int4:per-token", "int8", "window:6", "window:20", "streaming:2+5",
            "h2o:3+3", "h2o:0.1+0.2", "snapkv:6+2"]


@pytest.mark.parametrize("residual", [4, 16])
@pytest.mark.parametrize("spec", POLICIES)
def test_sliding_layers_hold_the_window_at_most(spec: str, residual: int) -> None:
    model, ids = _gemma2()
    cfg = model.cfg
    window = cfg.sliding_window
    assert window is not None and cfg.sliding(0) and not cfg.sliding(1)
    policy = parse_policy(spec, residual=residual, group=8)
    cache = policy_cache(cfg, quant=policy.quant, evict=policy.evict, prompt=PROMPT)
    arr = np.asarray(ids)
    model.forward(arr[None, :PROMPT], cache)
    for i in range(PROMPT, LENGTH):
        model.forward(arr[None, i : i + 1], cache)
        want = policy_cache_bytes(cfg, cache.length, quant=policy.quant, evict=policy.evict,
                                  prompt=PROMPT)
        if want is not None:
            assert cache.nbytes == want, (spec, cache.length)
        if isinstance(cache, EvictingCache):
            assert cache.k[0].shape[2] <= window
        else:
            assert isinstance(cache, QuantizedCache)
            # A per-channel key group stays until all its tokens are out of the window.
            assert cache.length - cache.start[0] <= window + 8 - 1
            assert cache.start[1] == 0  # the global layer keeps every token
    if policy.quant is not None and not (policy.quant.grouped and "channel" in (
            policy.quant.keys, policy.quant.values)):
        assert want is not None  # per-token formats: exact
    everywhere = policy.bytes(cache.length, layers=cfg.layers, kv_heads=cfg.kv_heads,
                              head_dim=cfg.head_dim, full_bytes=4, prompt=PROMPT)
    if policy.evict is not None and policy.evict.held(cache.length, prompt=PROMPT) <= window:
        assert cache.nbytes == everywhere  # a budget within the window: nothing more to drop
    else:
        assert cache.nbytes < everywhere


@pytest.mark.parametrize("spec", ["fp8", "int4:per-token", "window:20", "streaming:2+10",
                                  "h2o:4+8", "snapkv:12+4"])
def test_dropping_past_the_window_changes_no_logit(spec: str) -> None:
    """The same policy on a cache that keeps every token of the sliding layer (its config
    says no layer slides; the model still masks by the window): the same logits, as the
    dropped keys were masked anyway."""
    model, ids = _gemma2()
    policy = parse_policy(spec, residual=4, group=8)
    keeps_all = replace(model.cfg, layer_types=None, sliding_window=None)
    dropped = teacher_forced(model, ids, prompt=PROMPT, cache=policy_cache(
        model.cfg, quant=policy.quant, evict=policy.evict, prompt=PROMPT))
    kept = teacher_forced(model, ids, prompt=PROMPT, cache=policy_cache(
        keeps_all, quant=policy.quant, evict=policy.evict, prompt=PROMPT))
    assert dropped.cache_bytes < kept.cache_bytes
    if policy.evict is not None and policy.evict.kind in ("h2o", "snapkv"):
        # Scored policies choose among keys the window still shows: their choice differs
        # from one that spends its budget on masked keys, so only the window policies
        # must agree exactly.
        return
    np.testing.assert_allclose(dropped.logprobs, kept.logprobs, atol=1e-4)


def test_a_window_policy_wider_than_the_window_is_the_cache_free_model() -> None:
    model, ids = _gemma2()
    policy = parse_policy("window:16")
    run = teacher_forced(model, ids, prompt=PROMPT,
                         cache=policy_cache(model.cfg, evict=policy.evict, prompt=PROMPT))
    full = model.forward(np.asarray([ids[:-1]])).logits[0, PROMPT - 1 :]
    shifted = full - full.max(axis=-1, keepdims=True)
    logprobs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    # window:16 drops global-layer keys older than 16: equal while the text fits 16.
    upto = 16 - PROMPT + 1
    np.testing.assert_allclose(run.logprobs[:upto], logprobs[:upto], atol=1e-4)
