"""The event-driven simulator against the step-by-step one it replaced, at sizes where
the steps number in the hundreds of thousands.

tests/golden/kvmem/simulate-scale.json holds, per case, the report the step-by-step
``memory/simulate.py`` (one Python loop iteration per decode step) computed before the
event-driven loop replaced it; the new loop must reproduce every figure exactly.
Regenerate only after an intended change: ``TOKCOST_UPDATE_GOLDEN=1 pytest
tests/test_simulate_scale.py``, and review the diff.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tokcost.memory.simulate import simulate
from tokcost.memory.workload import requests_from_distribution

GOLDEN = Path(__file__).parent / "golden" / "kvmem" / "simulate-scale.json"

# name -> workload, capacity in token slots, max_len, paged block sizes, prefix sharing.
CASES: dict[str, dict[str, Any]] = {
    # the CLI's default: OPT-13B in 12 GB (14,648 slots), ShareGPT-like, all at step 0
    "sharegpt-2000": dict(dist="sharegpt", count=2000, seed=0, cap=14648, max_len=2048,
                          blocks=(16, 1)),
    "alpaca-3000-seed1": dict(dist="alpaca", count=3000, seed=1, cap=14648, max_len=2048,
                              blocks=(32,)),
    "sharegpt-n3-rate": dict(dist="sharegpt", count=800, seed=3, cap=20000, max_len=4096, n=3,
                             rate=0.5, blocks=(16, 7)),
    "sharegpt-n2-noshare": dict(dist="sharegpt", count=600, seed=5, cap=12000, max_len=2048, n=2,
                                share=False, blocks=(16,)),
    "uniform-rate": dict(dist="uniform:10-900", count=1500, seed=7, cap=8192, max_len=1024,
                         rate=0.05, blocks=(8, 128)),
    "fixed-tight": dict(dist="fixed:100,300", count=1000, seed=0, cap=5000, max_len=512,
                        blocks=(16, 100)),
}


def _cases() -> list[Any]:
    return [pytest.param(name, policy, block, id=f"{name}-{policy}" + (
                f"-b{block}" if policy == "paged" else ""))
            for name, spec in CASES.items()
            for policy in ("max", "pow2", "oracle", "paged")
            for block in (spec["blocks"] if policy == "paged" else (16,))]


def _run(name: str, policy: str, block: int) -> dict[str, Any]:
    spec = CASES[name]
    reqs = requests_from_distribution(spec["dist"], spec["count"], seed=spec["seed"],
                                      max_len=spec["max_len"], n=spec.get("n", 1),
                                      rate=spec.get("rate"))
    report = simulate(reqs, capacity_tokens=spec["cap"], policy=policy, max_len=spec["max_len"],
                      block_size=block, share_prefix=spec.get("share", True))
    # ``infeasible`` came with the event-driven loop (None here): the goldens predate it
    return {k: v for k, v in dataclasses.asdict(report).items() if k != "infeasible"}


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    if os.environ.get("TOKCOST_UPDATE_GOLDEN"):
        return {}
    data: dict[str, Any] = json.loads(GOLDEN.read_text(encoding="utf-8"))
    return data


_written: dict[str, Any] = {}


@pytest.mark.parametrize(("name", "policy", "block"), _cases())
def test_report_matches_the_step_by_step_simulator(
    request: pytest.FixtureRequest, golden: dict[str, Any], name: str, policy: str, block: int,
) -> None:
    key = request.node.callspec.id
    got = _run(name, policy, block)
    if os.environ.get("TOKCOST_UPDATE_GOLDEN"):
        _written[key] = got
        GOLDEN.write_text(json.dumps(_written, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return
    assert got == golden[key]
