"""Sliding-window layers in the reference caches: they let go of keys past the window.

A sliding layer's query sees its ``sliding_window`` newest positions only, so the caches
keep no more: the contiguous cache a ring of ``window`` slots, the paged cache a block
table of its own (vLLM's KV cache groups) whose blocks go back to the pool once wholly
outside the window. The bytes held are checked against the memory model's function
(``tokcost.memory.kv_cache_bytes``), never a copy of its formula, and the logits against
the cache-free forward pass.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokcost.catalog import Architecture
from tokcost.catalog.hf_model import load_config
from tokcost.catalog.schema import Attention
from tokcost.memory import kv_cache_bytes
from tokcost.reference import (
    CacheSpec,
    RefConfig,
    SamplingParams,
    Transformer,
    generate,
    init_weights,
)
from tokcost.reference.cache import ContiguousCache, PagedCache
from tokcost.reference.hf_checkpoint import load_weights, open_checkpoint

TINY = Path(__file__).parent / "fixtures" / "hf_tiny"
SLIDING = ("mistral", "gemma2", "gemma3_text")
LENGTH = 40  # five times the fixtures' 8-token window


def _family(family: str) -> tuple[Transformer, Architecture]:
    folder = TINY / family
    ck = open_checkpoint(folder)
    arch = load_config(folder).entry.architecture
    assert arch is not None
    return Transformer(ck.cfg, load_weights(folder, ck.model_type, ck.cfg)), arch


def _ids(cfg: RefConfig, n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, cfg.vocab_size, n)


@pytest.mark.parametrize("family", SLIDING)
def test_contiguous_bytes_equal_the_memory_model_past_the_window(family: str) -> None:
    model, arch = _family(family)
    window = model.cfg.sliding_window
    assert window is not None and window < LENGTH
    ids = _ids(model.cfg, LENGTH)
    for tokens in (1, window - 1, window, window + 1, 2 * window + 3, LENGTH):
        # Reserved for exactly `tokens`, filled by one prefill: the slab is the model's size.
        cache = ContiguousCache(model.cfg, capacity=tokens)
        model.forward(ids[None, :tokens], cache)
        assert cache.nbytes == kv_cache_bytes(arch, tokens, "fp32")
    # Reserved for 40: the sliding slabs hold the window, not 40 tokens.
    assert kv_cache_bytes(arch, LENGTH, "fp32") < LENGTH * model.cfg.kv_bytes_per_token


@pytest.mark.parametrize("block_size", [1, 3, 4, 5, 8])
@pytest.mark.parametrize("family", SLIDING)
def test_paged_bytes_at_most_the_memory_model_and_equal_at_the_worst_alignment(
    family: str, block_size: int
) -> None:
    """At every length the blocks held are at most ``kvmem estimate --engine ideal``'s
    worst case; they equal it while the context fits the window and whenever the window
    starts on a block's last slot ((length - window) % block_size == block_size - 1)."""
    model, arch = _family(family)
    window = model.cfg.sliding_window
    assert window is not None
    ids = _ids(model.cfg, LENGTH, seed=1)
    cache = PagedCache(model.cfg, block_size=block_size, num_blocks=LENGTH)
    model.forward(ids[None, :5], cache)
    worst_hits = 0
    for length in range(5, LENGTH + 1):
        if length > 5:
            model.forward(ids[None, length - 1 : length], cache)
        model_bytes = kv_cache_bytes(arch, length, "fp32", block_size=block_size)
        assert cache.nbytes <= model_bytes, length
        if length <= window or (length - window) % block_size == block_size - 1:
            assert cache.nbytes == model_bytes, length
            worst_hits += length > window
    assert worst_hits >= (LENGTH - window) // block_size


@pytest.mark.parametrize("family", SLIDING)
@pytest.mark.parametrize("mode", ["contiguous", "paged"])
def test_cached_logits_past_the_window_equal_the_cache_free_ones(family: str, mode: str) -> None:
    """A 12-token prompt and 28 generated tokens (40 in all, window 8): every step's
    logits equal a cache-free forward pass over the whole sequence."""
    model, _ = _family(family)
    prompt = [int(i) for i in _ids(model.cfg, 12, seed=2)]
    r = generate(model, prompt, SamplingParams(temperature=0.0, max_new_tokens=LENGTH - 12),
                 CacheSpec(cache=mode, block_size=3), keep_logits=True)
    seq = prompt + r.samples[0]
    full = model.forward(np.asarray([seq[:-1]])).logits[0]  # (T, V)
    for step, logged in enumerate(r.logits):
        np.testing.assert_allclose(logged[0], full[len(prompt) - 1 + step], atol=1e-4)
    assert r.cache_tokens == LENGTH - 1


@pytest.mark.parametrize("family", ["gemma2", "mistral"])
def test_forked_samples_free_their_window_blocks_and_match_cache_free_runs(family: str) -> None:
    """Parallel samples share the prompt's blocks (copy-on-write), then each drops the
    blocks its window left; the shared ones go back to the pool only when the last
    holder lets go."""
    model, _ = _family(family)
    window = model.cfg.sliding_window
    assert window is not None
    prompt = [int(i) for i in _ids(model.cfg, 10, seed=3)]
    r = generate(model, prompt, SamplingParams(temperature=1.5, seed=7, max_new_tokens=20, n=3),
                 CacheSpec(cache="paged", block_size=4), keep_logits=True, explain=True)
    for s, sample in enumerate(r.samples):
        seq = prompt + sample
        full = model.forward(np.asarray([seq[:-1]])).logits[0]
        for step, logged in enumerate(r.logits):
            np.testing.assert_allclose(logged[s], full[len(prompt) - 1 + step], atol=1e-4)
    events = [e for step in r.steps for e in step.events]
    freed = [e for e in events if e.kind == "free"]
    assert freed and all(e.group == "sliding" for e in freed)
    # A prompt block shared by 3 samples: two drops leave holders, the third frees it.
    first = [e for e in events if e.kind == "share" and e.group == "sliding" and e.block == 0]
    assert len(first) == 1 and first[0].holders == 3
    drops = [e for e in freed if e.block == 0]
    assert sorted(e.holders for e in drops) == [0, 1, 2]
    assert {e.physical for e in drops} == {first[0].physical}
    assert r.copy_on_write and r.copy_on_write > 0


def test_explain_shows_blocks_dropped_outside_the_window() -> None:
    from typer.testing import CliRunner

    from tokcost.cli.app import app

    folder = TINY / "gemma2"
    result = CliRunner().invoke(app, [
        "generate", "The baker opens the shop", "--model-dir", str(folder), "--cache", "paged",
        "--block-size", "4", "--max-new-tokens", "14", "--temperature", "0", "--explain",
    ])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert "paged (sliding layers):" in result.output
    assert "drops block" in result.output and "outside the window of position" in result.output
    assert "back in the pool" in result.output


@pytest.mark.parametrize("family", SLIDING)
def test_generate_reports_cache_bytes_within_the_estimate(family: str) -> None:
    """The app's summary: held bytes within kvmem estimate, flagged as matching."""
    from tokcost.app.generate import _cache_use

    model, arch = _family(family)
    prompt = [int(i) for i in _ids(model.cfg, 9, seed=4)]
    for new in (14, 15, 16, 17):
        r = generate(model, prompt, SamplingParams(max_new_tokens=new),
                     CacheSpec(cache="paged", block_size=4))

        def estimate(tokens: int, **kw: object) -> int:
            return kv_cache_bytes(arch, tokens, "fp32", **kw)  # type: ignore[arg-type]

        use = _cache_use(r, 1, estimate)
        assert use.matches and use.bytes <= use.estimate_bytes
        assert use.saved_by_sharing == 0


@settings(max_examples=40, deadline=None)
@given(
    window=st.integers(1, 9),
    block_size=st.integers(1, 6),
    prompt=st.integers(1, 20),
    new=st.integers(1, 20),
    pattern=st.sampled_from([("sliding",), ("sliding", "full"), ("full", "sliding")]),
    samples=st.integers(1, 2),
)
def test_sliding_caches_property(window: int, block_size: int, prompt: int, new: int,
                                 pattern: tuple[str, ...], samples: int) -> None:
    """Any window, block size and lengths: cached logits equal the cache-free ones, the
    contiguous slabs equal the memory model, and the paged blocks never exceed it."""
    layers = 2
    kinds = tuple(pattern[i % len(pattern)] for i in range(layers))
    cfg = RefConfig(layers=layers, hidden_size=16, attention_heads=2, kv_heads=1, head_dim=8,
                    vocab_size=23, context_window=64, layer_types=kinds,
                    sliding_window=window)
    arch = Architecture(layers=layers, hidden_size=16, attention_heads=2, kv_heads=1,
                        head_dim=8, vocab_size=23,
                        attention=Attention("sliding", pattern, window))  # type: ignore[arg-type]
    weights = {k: v * 5 for k, v in init_weights(cfg, seed=window).items()}
    model = Transformer(cfg, weights)
    ids = [int(i) for i in np.random.default_rng(prompt * 31 + new).integers(0, 23, prompt)]
    for mode in ("contiguous", "paged"):
        r = generate(model, ids, SamplingParams(temperature=1.0, seed=1, max_new_tokens=new,
                                                n=samples),
                     CacheSpec(cache=mode, block_size=block_size), keep_logits=True)
        for s, sample in enumerate(r.samples):
            seq = ids + sample
            full = model.forward(np.asarray([seq[:-1]])).logits[0]
            for step, logged in enumerate(r.logits):
                # float32 sums in another order (a ring's slots, gathered blocks) against the
                # one-pass forward, on weights scaled x5 (logits up to ~4): a wrong mask or
                # position is off by 0.1 or more, rounding by about 1e-4.
                np.testing.assert_allclose(logged[s], full[prompt - 1 + step], rtol=2e-4,
                                           atol=2e-4)
        held = r.cache_tokens
        if mode == "contiguous":
            assert r.cache_bytes == kv_cache_bytes(arch, prompt + new - 1, "fp32",
                                                   batch=samples)
        else:
            per_sample = kv_cache_bytes(arch, held, "fp32", block_size=block_size)
            assert r.cache_bytes_per_sample <= per_sample
            assert r.cache_bytes <= samples * per_sample
            if held <= window:
                assert r.cache_bytes_per_sample == per_sample


def test_a_prompt_longer_than_the_window_prefills_in_one_pass() -> None:
    """The prefill attends to the whole prompt at once (the ring joins held and new keys),
    then keeps the window only."""
    model, arch = _family("gemma3_text")
    ids = json.loads((TINY / "gemma3_text" / "prompt_ids.json").read_text())
    golden = np.load(TINY / "gemma3_text" / "golden_logits.npy")
    for cache in (ContiguousCache(model.cfg, capacity=len(ids)),
                  PagedCache(model.cfg, block_size=4, num_blocks=8)):
        got = model.forward(np.asarray([ids]), cache).logits[0]
        assert np.abs(got - golden).max() <= 1e-4
        assert cache.nbytes <= kv_cache_bytes(
            arch, len(ids), "fp32",
            block_size=4 if isinstance(cache, PagedCache) else None)
