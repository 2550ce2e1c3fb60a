"""The one block allocator (tokcost.memory.blocks), used by the simulation and the reference cache."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokcost.memory.blocks import BlockAllocator, OutOfBlocks

OPS = st.lists(
    st.tuples(st.sampled_from(["alloc", "share", "free", "write"]), st.integers(0, 999)),
    max_size=80,
)


@settings(max_examples=150, deadline=None, database=None)
@given(num_blocks=st.integers(1, 12), ops=OPS)
def test_random_alloc_free_never_double_allocates(
    num_blocks: int, ops: list[tuple[str, int]]
) -> None:
    alloc = BlockAllocator(num_blocks)
    held: list[int] = []  # one entry per reference a holder owns, like block tables do
    for op, k in ops:
        if op == "alloc":
            if alloc.num_free == 0:
                with pytest.raises(OutOfBlocks):
                    alloc.allocate()
                continue
            block = alloc.allocate()
            assert block not in held, "handed out a block someone still holds"
            held.append(block)
        elif not held:
            continue
        elif op == "share":  # fork: one more holder of a live block
            block = held[k % len(held)]
            alloc.incref(block)
            held.append(block)
        elif op == "free":
            alloc.decref(held.pop(k % len(held)))
        else:  # copy-on-write by one holder
            i = k % len(held)
            shared = held.count(held[i]) > 1
            if shared and alloc.num_free == 0:
                with pytest.raises(OutOfBlocks):
                    alloc.copy_on_write(held[i])
                continue
            new = alloc.copy_on_write(held[i])
            assert (new != held[i]) == shared
            assert new == held[i] or new not in held
            held[i] = new
        assert alloc.num_used == len(set(held))
        assert all(alloc.refcount(b) == held.count(b) for b in set(held))
    for block in list(held):  # every holder lets go: the whole pool is free again
        alloc.decref(block)
    assert alloc.num_free == num_blocks and alloc.num_used == 0
    assert sorted(alloc.allocate() for _ in range(num_blocks)) == list(range(num_blocks))


def test_blocks_are_handed_out_lowest_first_and_reused() -> None:
    alloc = BlockAllocator(4)
    assert [alloc.allocate() for _ in range(3)] == [0, 1, 2]
    alloc.decref(1)
    assert alloc.allocate() == 1


def test_freeing_a_free_block_is_an_error() -> None:
    alloc = BlockAllocator(2)
    b = alloc.allocate()
    alloc.decref(b)
    with pytest.raises(ValueError, match="already free"):
        alloc.decref(b)
    with pytest.raises(ValueError, match="is free"):
        alloc.incref(b)


def test_reference_cache_uses_the_same_allocator() -> None:
    pytest.importorskip("numpy")
    from tokcost.reference import BlockAllocator as RefAllocator
    from tokcost.reference.config import CacheFull

    assert issubclass(RefAllocator, BlockAllocator)
    alloc = RefAllocator(1)
    alloc.allocate()
    with pytest.raises(CacheFull, match="generate fewer tokens"):
        alloc.allocate()
