"""The infeasibility shortcut: a policy that holds the bound request (the longest total, the
most samples, a one-token prompt) holds every request, so the scan for the first culprit runs
only when the bound does not fit; both must name the same culprit, or none."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tokcost.memory import simulate as sim
from tokcost.memory.policies import POLICIES, make_policy
from tokcost.memory.workload import Request

requests = st.lists(st.builds(Request, st.integers(1, 300), st.integers(1, 300),
                              st.integers(1, 4)), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(reqs=requests, capacity=st.integers(16, 2000), block=st.integers(1, 64),
       max_len=st.integers(600, 700), share=st.booleans())
def test_bound_shortcut_names_the_same_culprit_as_the_scan(
    reqs: list[Request], capacity: int, block: int, max_len: int, share: bool,
) -> None:
    bound = sim._bound(reqs)
    for name in POLICIES:
        pol = make_policy(name, capacity, max_len=max_len, block_size=block, share_prefix=share)
        scanned = next((i for i, r in enumerate(reqs) if pol.admit_need(r) > pol.capacity),
                       None)
        got = sim._infeasible(pol, reqs, bound)
        assert (got is None) == (scanned is None)
        if got is not None:
            assert got.startswith(f"request {scanned} ")
