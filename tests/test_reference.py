"""The reference transformer and its KV caches (library level, no CLI).

The fast paths (contiguous and paged caches) are checked against the naive one
(recompute everything), and the bytes the caches hold against tokcost.memory's
formula, as nanochat checks its engine against the plain model.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokcost.catalog import Architecture
from tokcost.memory import kv_cache_bytes
from tokcost.reference import (
    BlockAllocator,
    CacheSpec,
    ModelTooLarge,
    PagedCache,
    PromptTooLong,
    RefConfig,
    SamplingParams,
    Transformer,
    WeightsMismatch,
    generate,
    init_weights,
    load_weights,
    save_weights,
)
from tokcost.reference.config import CacheFull
from tokcost.reference.model import apply_rope, rope_tables

CFG = RefConfig(
    layers=2,
    hidden_size=32,
    attention_heads=4,
    kv_heads=2,
    head_dim=8,
    vocab_size=64,
    context_window=128,
)
ARCH = Architecture(
    layers=CFG.layers,
    hidden_size=CFG.hidden_size,
    attention_heads=CFG.attention_heads,
    kv_heads=CFG.kv_heads,
    head_dim=CFG.head_dim,
    vocab_size=CFG.vocab_size,
)


@pytest.fixture(scope="module")
def model() -> Transformer:
    # Larger random weights than init_weights' 0.02 so that the logits are peaked
    # enough for sampling differences to show.
    w = init_weights(CFG, seed=3)
    w = {k: (v * 8 if v.ndim == 2 else v) for k, v in w.items()}
    return Transformer(CFG, w)


PROMPTS = [
    pytest.param([5], id="one-token"),
    pytest.param([1, 2, 3, 4, 5, 6, 7], id="seven"),
    pytest.param(list(range(10, 42)), id="two-full-blocks"),
    pytest.param([9, 9, 9, 9, 9, 3, 1, 60, 2, 17, 17, 40, 8, 33, 21, 0, 5, 11, 44], id="ragged"),
]
SAMPLING = [
    pytest.param(SamplingParams(), id="greedy"),
    pytest.param(SamplingParams(temperature=1.0, seed=0), id="t1-seed0"),
    pytest.param(SamplingParams(temperature=0.8, top_k=10, seed=7), id="topk-seed7"),
    pytest.param(SamplingParams(temperature=1.2, top_p=0.9, seed=123), id="topp-seed123"),
]


@pytest.mark.parametrize("sampling", SAMPLING)
@pytest.mark.parametrize("prompt", PROMPTS)
def test_cache_modes_give_same_tokens_and_logits(
    model: Transformer, prompt: list[int], sampling: SamplingParams
) -> None:
    runs = {
        mode: generate(
            model,
            prompt,
            replace(sampling, max_new_tokens=12, n=2),
            CacheSpec(cache=mode, block_size=4),
            keep_logits=True,
        )
        for mode in ("none", "contiguous", "paged")
    }
    base = runs["none"]
    for mode in ("contiguous", "paged"):
        assert runs[mode].samples == base.samples, mode
        for got, want in zip(runs[mode].logits, base.logits, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("block_size", [1, 3, 16, 64])
def test_paged_cache_any_block_size_matches_recompute(model: Transformer, block_size: int) -> None:
    prompt = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]
    want = generate(model, prompt, SamplingParams(max_new_tokens=10), CacheSpec(cache="none")).samples
    got = generate(model, prompt, SamplingParams(max_new_tokens=10),
                   CacheSpec(cache="paged", block_size=block_size))
    assert got.samples == want


@pytest.mark.parametrize("block_size", [1, 4, 16])
@pytest.mark.parametrize("prompt_len", [1, 7, 16, 33])
def test_cache_bytes_equal_kvmem_estimate_at_every_step(
    model: Transformer, block_size: int, prompt_len: int
) -> None:
    prompt = list(range(1, prompt_len + 1))
    seen: list[tuple[int, int]] = []
    r = generate(
        model,
        prompt,
        SamplingParams(max_new_tokens=9),
        CacheSpec(cache="paged", block_size=block_size),
        on_step=lambda s: seen.append((s.cache_tokens, s.cache_bytes)),
    )
    for tokens, held in seen:
        assert held == kv_cache_bytes(ARCH, tokens, "fp32", block_size=block_size)
    assert r.cache_bytes == kv_cache_bytes(ARCH, r.cache_tokens, "fp32", block_size=block_size)
    c = generate(model, prompt, SamplingParams(max_new_tokens=9), CacheSpec(cache="contiguous"))
    # The contiguous cache reserves prompt + new - 1 slots up front (the last token
    # is never fed back).
    assert c.cache_reserved_tokens == prompt_len + 8
    assert c.cache_bytes == kv_cache_bytes(ARCH, prompt_len + 8, "fp32")
    assert CFG.kv_bytes_per_token == kv_cache_bytes(ARCH, 1, "fp32")


@pytest.mark.parametrize("prompt_len, copies", [(10, 2), (12, 0), (3, 2)])
def test_parallel_samples_share_prompt_blocks(
    model: Transformer, prompt_len: int, copies: int
) -> None:
    n, b, new = 3, 4, 9
    r = generate(
        model,
        list(range(1, prompt_len + 1)),
        SamplingParams(temperature=1.0, seed=1, max_new_tokens=new, n=n),
        CacheSpec(cache="paged", block_size=b),
    )
    full = prompt_len // b
    per_seq = -(-(prompt_len + new - 1) // b)
    assert r.logical_blocks == n * per_seq
    # The full prompt blocks are stored once; a half-filled last prompt block is
    # copied on write by all samples but the last one still holding it.
    assert r.cache_blocks == r.logical_blocks - (n - 1) * full
    assert r.copy_on_write == copies


def test_copy_on_write_keeps_samples_independent(model: Transformer) -> None:
    prompt = [7, 3, 9, 1, 4, 4, 2]  # 7 tokens: the last prompt block (of 4) is shared
    r = generate(
        model,
        prompt,
        SamplingParams(temperature=1.5, seed=5, max_new_tokens=10, n=4),
        CacheSpec(cache="paged", block_size=4),
        keep_logits=True,
    )
    assert len({tuple(s) for s in r.samples}) > 1, "samples should differ"
    for s, sample in enumerate(r.samples):
        # Each sample's logits equal a fresh, cache-free run over its own tokens: no
        # sample ever saw another's keys and values.
        seq = prompt + sample
        full = model.forward(np.asarray([seq[:-1]])).logits[0]  # (T, V)
        for step, logged in enumerate(r.logits):
            np.testing.assert_allclose(logged[s], full[len(prompt) - 1 + step], atol=1e-4)


def test_paged_cache_frees_every_block(model: Transformer) -> None:
    cache = PagedCache(CFG, block_size=4, num_blocks=20)
    model.forward(np.asarray([[1, 2, 3, 4, 5, 6]]), cache)
    cache.fork(3)
    model.forward(np.asarray([[1], [2], [3]]), cache)
    assert cache.allocator.num_used == 1 + 3  # shared full block + 3 private
    cache.free()
    assert cache.allocator.num_free == 20


def test_paged_cache_full_raises(model: Transformer) -> None:
    cache = PagedCache(CFG, block_size=2, num_blocks=2)
    with pytest.raises(CacheFull, match="blocks"):
        model.forward(np.asarray([[1, 2, 3, 4, 5]]), cache)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["alloc", "incref", "decref"]), st.integers(0, 99)), max_size=60
    )
)
def test_allocator_never_hands_out_a_live_block(ops: list[tuple[str, int]]) -> None:
    alloc = BlockAllocator(8)
    refs: dict[int, int] = {}
    for op, k in ops:
        if op == "alloc":
            if alloc.num_free == 0:
                with pytest.raises(CacheFull):
                    alloc.allocate()
                continue
            b = alloc.allocate()
            assert b not in refs
            refs[b] = 1
        elif refs:
            b = sorted(refs)[k % len(refs)]
            if op == "incref":
                alloc.incref(b)
                refs[b] += 1
            else:
                alloc.decref(b)
                refs[b] -= 1
                if refs[b] == 0:
                    del refs[b]
        assert alloc.num_used == len(refs)
        assert all(alloc.refcount(b) == c for b, c in refs.items())


def test_fixed_seed_reproduces_output(model: Transformer) -> None:
    sp = SamplingParams(temperature=1.0, top_p=0.95, seed=42, max_new_tokens=15, n=2)
    a = generate(model, [1, 2, 3], sp).samples
    b = generate(model, [1, 2, 3], sp).samples
    c = generate(
        model,
        [1, 2, 3],
        SamplingParams(temperature=1.0, top_p=0.95, seed=43, max_new_tokens=15, n=2),
    ).samples
    assert a == b
    assert a != c


def test_top_k_one_is_greedy(model: Transformer) -> None:
    greedy = generate(model, [4, 5], SamplingParams(max_new_tokens=8)).samples
    k1 = generate(
        model, [4, 5], SamplingParams(temperature=2.0, top_k=1, seed=9, max_new_tokens=8)
    ).samples
    assert k1 == greedy


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 100), st.integers(0, 100), st.integers(0, 20))
def test_rope_scores_depend_only_on_offset(i: int, j: int, shift: int) -> None:
    cos, sin = rope_tables(8, 200, 10000.0)
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((1, 1, 1, 8)), rng.standard_normal((1, 1, 1, 8))

    def score(a: int, b: int) -> float:
        qa = apply_rope(q, cos[a : a + 1], sin[a : a + 1])
        kb = apply_rope(k, cos[b : b + 1], sin[b : b + 1])
        return float((qa * kb).sum())

    assert score(i, j) == pytest.approx(score(i + shift, j + shift), rel=1e-4, abs=1e-4)


def test_prompt_longer_than_context(model: Transformer) -> None:
    with pytest.raises(PromptTooLong, match="context window is 128"):
        generate(model, list(range(1, 60)) * 2, SamplingParams(max_new_tokens=20))


def test_weights_roundtrip_and_mismatch(tmp_path: Path) -> None:
    w = init_weights(CFG, seed=1)
    path = tmp_path / "w.npz"
    save_weights(path, w, dtype="float32")
    back = load_weights(path, CFG)
    assert all(np.array_equal(back[k], w[k]) for k in w)
    other = RefConfig(
        layers=2,
        hidden_size=32,
        attention_heads=4,
        kv_heads=4,
        head_dim=8,
        vocab_size=64,
        context_window=128,
    )
    with pytest.raises(WeightsMismatch, match=r"layers\.0\.wk.*\(32, 16\).*\(32, 32\)"):
        load_weights(path, other)


def test_model_too_large_names_kvmem_estimate() -> None:
    big = Architecture(
        layers=32,
        hidden_size=4096,
        attention_heads=32,
        kv_heads=8,
        head_dim=128,
        vocab_size=128256,
        params_total=8_030_000_000,
    )
    with pytest.raises(ModelTooLarge, match="kvmem estimate -m llama-3.1-8b"):
        RefConfig.from_architecture("llama-3.1-8b", big, 131072)


def test_numpy_forward_matches_torch_oracle() -> None:
    torch = pytest.importorskip("torch")
    script = Path(__file__).resolve().parent.parent / "scripts" / "train_tiny_ref.py"
    spec = importlib.util.spec_from_file_location("train_tiny_ref", script)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["train_tiny_ref"] = mod
    spec.loader.exec_module(mod)
    torch.manual_seed(0)
    tm = mod.build_torch_model(CFG, 0.0).eval()
    ids = np.asarray([[1, 5, 9, 2, 33, 63, 0, 7]])
    with torch.no_grad():
        want = tm(torch.tensor(ids)).numpy()
    got = Transformer(CFG, tm.export()).forward(ids).logits
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_safetensors_weights(tmp_path: Path) -> None:
    st_numpy = pytest.importorskip("safetensors.numpy")
    w = init_weights(CFG, seed=2)
    path = tmp_path / "w.safetensors"
    st_numpy.save_file(w, str(path))
    back = load_weights(path, CFG)
    assert all(np.array_equal(back[k], w[k]) for k in w)
    del w["norm"]
    st_numpy.save_file(w, str(path))
    with pytest.raises(WeightsMismatch, match="no array 'norm'"):
        load_weights(path, CFG)


@pytest.mark.parametrize("cache", ["contiguous", "paged"])
def test_a_prompt_longer_than_a_prefill_chunk_gives_the_one_pass_logits(
    model: Transformer, cache: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cached prefill runs in chunks of PREFILL_CHUNK tokens (bounded attention scores);
    the logits equal the no-cache pass, which runs the prompt at once, at every step."""
    import importlib

    gen = importlib.import_module("tokcost.reference.generate")  # the module, not the function
    monkeypatch.setattr(gen, "PREFILL_CHUNK", 5)  # 23 tokens: chunks of 5, 5, 5, 5, 3
    prompt = [(7 * i + 3) % CFG.vocab_size for i in range(23)]
    want = generate(model, prompt, SamplingParams(max_new_tokens=6), CacheSpec(cache="none"),
                    keep_logits=True)
    got = generate(model, prompt, SamplingParams(max_new_tokens=6, n=2),
                   CacheSpec(cache=cache, block_size=4), keep_logits=True)
    assert got.samples == [want.samples[0]] * 2
    for g, w in zip(got.logits, want.logits, strict=True):
        np.testing.assert_allclose(g, np.repeat(w, 2, axis=0), rtol=1e-4, atol=1e-4)
