"""``kvmem simulate``: allocation policies on a stream of requests."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tokcost.cli.app import app
from tokcost.errors import InputError, UsageError
from tokcost.memory.policies import POLICIES, StepSample, next_pow2
from tokcost.memory.simulate import PolicyReport, simulate
from tokcost.memory.workload import Request, load_requests, requests_from_distribution

runner = CliRunner()

SHAREGPT = requests_from_distribution("sharegpt", 120, seed=1, max_len=2048)


@pytest.mark.parametrize("n", [1, 3])
@pytest.mark.parametrize("block_size", [1, 8, 16, 64])
def test_paged_waste_under_one_block_per_live_sequence(block_size: int, n: int) -> None:
    reqs = requests_from_distribution("sharegpt", 60, seed=2, max_len=2048, n=n)
    samples: list[StepSample] = []
    r = simulate(
        reqs, capacity_tokens=12000, policy="paged", block_size=block_size, samples=samples
    )
    assert r.completed == len(reqs)
    assert samples
    for s in samples:
        assert s.reserved == 0 and s.external == 0
        assert s.internal <= (block_size - 1) * s.live_sequences


@pytest.mark.parametrize("policy", POLICIES)
def test_shares_sum_to_one_and_everything_completes(policy: str) -> None:
    r = simulate(SHAREGPT, capacity_tokens=10000, policy=policy)
    total = (
        r.token_states + r.reserved + r.internal_fragmentation + r.external_fragmentation + r.free
    )
    assert total == pytest.approx(1.0)
    assert r.completed == len(SHAREGPT)


def test_policies_rank_as_in_the_paper() -> None:
    rep = {p: simulate(SHAREGPT, capacity_tokens=10000, policy=p) for p in POLICIES}
    assert rep["oracle"].internal_fragmentation == 0
    assert rep["max"].external_fragmentation == 0  # equal-size slots never fragment
    assert (
        rep["max"].token_states
        < rep["pow2"].token_states
        < rep["oracle"].token_states
        < rep["paged"].token_states
    )
    assert rep["paged"].token_states > 0.9
    assert 0.15 < rep["max"].token_states < 0.4  # paper: 20.4-38.2% for existing systems
    assert (
        rep["max"].peak_batch
        <= rep["pow2"].peak_batch
        <= rep["oracle"].peak_batch
        <= rep["paged"].peak_batch
    )


def test_golden_single_request_under_max_reservation() -> None:
    # One request, prompt 4 + output 2, in 8 slots reserved for max length 8.
    # Step 1: 5 token states, 1 reserved, 2 internal; step 2: 6, 0, 2.
    r = simulate([Request(4, 2)], capacity_tokens=8, policy="max", max_len=8)
    assert (r.token_states, r.reserved, r.internal_fragmentation) == (11 / 16, 1 / 16, 4 / 16)
    assert r.steps == 2 and r.peak_batch == 1


def test_external_fragmentation_when_gaps_are_too_small() -> None:
    # 10 slots, oracle: A=4 and B=4 placed at [0,4) and [4,8); A finishes first, then
    # C needs 6: 2 + 4 = 6 slots are free but in two gaps, so C waits.
    reqs = [Request(3, 1), Request(2, 2), Request(4, 2)]
    samples: list[StepSample] = []
    r = simulate(reqs, capacity_tokens=10, policy="oracle", samples=samples)
    assert r.completed == 3
    assert any(s.external == 6 for s in samples)


def test_prefix_sharing_saves_blocks_with_parallel_samples() -> None:
    reqs = [Request(64, 16, n=4)] * 5
    shared = simulate(reqs, capacity_tokens=4096, policy="paged", block_size=16)
    # 4 full prompt blocks stored once instead of 4 times: at every step
    # 4 + 4 x 1 physical blocks against 4 x 5 logical ones, 12 of 20 saved.
    assert shared.prefix_sharing_saved == pytest.approx(0.6)
    alone = simulate([Request(64, 16)] * 5, capacity_tokens=4096, policy="paged")
    assert alone.prefix_sharing_saved is None


def test_preemption_when_paged_memory_runs_out() -> None:
    reqs = [Request(8, 40)] * 6
    r = simulate(reqs, capacity_tokens=128, policy="paged", block_size=8)
    assert r.completed == 6
    assert r.preemptions > 0


def test_request_larger_than_memory_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="needs 2,048 KV slots"):
        simulate([Request(10, 10)], capacity_tokens=1000, policy="max", max_len=2048)


@pytest.mark.parametrize(
    "name, first",
    [
        pytest.param("fixed:10,5", Request(10, 5), id="fixed"),
        pytest.param("fixed:3000,5", Request(2047, 1), id="clipped"),
    ],
)
def test_distribution_golden(name: str, first: Request) -> None:
    assert requests_from_distribution(name, 3, max_len=2048)[0] == first


def test_distributions_are_seeded_and_bounded() -> None:
    a = requests_from_distribution("alpaca", 50, seed=4)
    assert a == requests_from_distribution("alpaca", 50, seed=4)
    u = requests_from_distribution("uniform:5-9", 50, seed=4)
    assert all(5 <= r.prompt_tokens <= 9 and 5 <= r.output_tokens <= 9 for r in u)
    with pytest.raises(UsageError, match="unknown distribution"):
        requests_from_distribution("zipf", 5)


def test_next_pow2() -> None:
    assert [next_pow2(n) for n in (1, 2, 3, 17, 1024, 1025)] == [1, 2, 4, 32, 1024, 2048]


def test_load_requests_jsonl(tmp_path: Path) -> None:
    f = tmp_path / "reqs.jsonl"
    f.write_text(
        '{"prompt_tokens": 12, "output_tokens": 30}\n\n{"prompt": 5, "output": 2, "n": 3}\n'
    )
    assert load_requests(f) == [Request(12, 30), Request(5, 2, 3)]
    f.write_text('{"prompt_tokens": "x"}\n')
    with pytest.raises(InputError, match="reqs.jsonl:1"):
        load_requests(f)


@pytest.mark.parametrize(("text", "message"), [
    pytest.param("[" * 100_000 + "\n", "reqs.jsonl:1: expected a JSON object", id="deep"),
    pytest.param('{"prompt_tokens": Infinity, "output_tokens": 1}\n', "reqs.jsonl:1: expected",
                 id="infinity"),
    pytest.param("0" * (2 << 20), "reqs.jsonl:1: a line over 1 MiB", id="huge-line"),
    pytest.param('{"prompt_tokens": 2.7, "output_tokens": 1}\n', "reqs.jsonl:1: expected",
                 id="fraction"),  # was read as 2
    pytest.param('{"prompt_tokens": true, "output_tokens": 1}\n', "reqs.jsonl:1: expected",
                 id="bool"),
])
def test_a_hostile_trace_is_one_error(tmp_path: Path, text: str, message: str) -> None:
    """Was a RecursionError, an OverflowError and a whole file read into memory."""
    f = tmp_path / "reqs.jsonl"
    f.write_text(text)
    with pytest.raises(InputError, match=message):
        load_requests(f)


def test_a_trace_past_what_is_replayed_stops_there(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tokcost.memory.workload.MAX_REQUESTS", 2)
    f = tmp_path / "reqs.jsonl"
    f.write_text('{"prompt_tokens": 1, "output_tokens": 1}\n' * 3)
    with pytest.raises(InputError, match="reqs.jsonl:3: more than 2 requests"):
        load_requests(f)


def test_cli_json_keys() -> None:
    res = runner.invoke(app, ["kvmem", "simulate", "--requests", "40", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["model"] == "opt-13b"
    assert data["kv_bytes_per_token"] == 819200  # PagedAttention §3: 800 KB per token
    assert data["capacity_tokens"] == 12_000_000_000 // 819200
    assert [p["policy"] for p in data["policies"]] == list(POLICIES)
    assert set(data["policies"][0]) >= {
        "token_states",
        "reserved",
        "internal_fragmentation",
        "external_fragmentation",
        "free",
        "peak_batch",
        "mean_batch",
        "preemptions",
        "prefix_sharing_saved",
    }


def test_cli_table_with_trace_and_sharing(tmp_path: Path) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text(
        "".join(json.dumps({"prompt_tokens": 40, "output_tokens": 20}) + "\n" for _ in range(10))
    )
    res = runner.invoke(
        app,
        [
            "kvmem",
            "simulate",
            "--trace",
            str(f),
            "--slots",
            "600",
            "--policy",
            "paged,max",
            "--n",
            "2",
            "--max-len",
            "128",
        ],
    )
    assert res.exit_code == 0, res.output
    assert "paged/16" in res.stdout and "prefix sharing" in res.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        pytest.param(["--policy", "lru"], "unknown --policy", id="policy"),
        pytest.param(["--dist", "zipf"], "unknown distribution", id="dist"),
        pytest.param(["--kv-memory", "12G"], "", id="ambiguous-size"),
        pytest.param(["--slots", "100"], "needs 2,048 KV slots", id="too-small"),
    ],
)
def test_cli_bad_input(args: list[str], message: str) -> None:
    res = runner.invoke(app, ["kvmem", "simulate", "--requests", "5", *args])
    assert res.exit_code == 2
    assert message in res.output
    assert "Traceback" not in res.output


def test_cli_plot_refuses_to_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "waste.png"
    target.write_bytes(b"keep")
    res = runner.invoke(app, ["kvmem", "simulate", "--requests", "5", "--plot", str(target)])
    assert res.exit_code == 2 and "--force" in res.output
    assert target.read_bytes() == b"keep"


def test_cli_plot_writes_the_chart(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    target = tmp_path / "waste.png"
    res = runner.invoke(app, ["kvmem", "simulate", "--requests", "20", "--plot", str(target)])
    assert res.exit_code == 0, res.output
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["waste.png"]  # no temp file left


def test_poisson_arrivals_are_seeded_and_ordered() -> None:
    a = requests_from_distribution("fixed:10,5", 50, seed=3, rate=0.1)
    assert a == requests_from_distribution("fixed:10,5", 50, seed=3, rate=0.1)
    arrivals = [r.arrival for r in a]
    assert arrivals[0] == 0 and arrivals == sorted(arrivals) and arrivals[-1] > 100
    with pytest.raises(UsageError, match="rate must be > 0"):
        requests_from_distribution("fixed:10,5", 5, rate=0)


def test_idle_memory_between_arrivals_is_not_waste() -> None:
    # Two requests far apart never compete: no step is saturated, the simulation
    # skips the idle gap, and each request runs its 5 steps.
    reqs = [Request(10, 5, arrival=0), Request(10, 5, arrival=1000)]
    r = simulate(reqs, capacity_tokens=64, policy="paged", block_size=4)
    assert r.steps == 10 and r.saturated_steps == 0 and r.peak_batch == 1


def test_trace_arrivals(tmp_path: Path) -> None:
    f = tmp_path / "t.jsonl"
    f.write_text('{"prompt_tokens": 4, "output_tokens": 2, "arrival": 7}\n')
    assert load_requests(f) == [Request(4, 2, 1, 7)]


class _Stalled(Exception):
    pass


def _within(seconds: int, run: Callable[[], PolicyReport]) -> PolicyReport:
    """``run()``, failing (not hanging) if it takes longer than ``seconds``."""

    def stop(*_: object) -> None:
        raise _Stalled

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        return run()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_two_requests_never_take_turns_evicting_each_other() -> None:
    """A workload that livelocked: the newest request, unable to grow, evicted an older
    one, which came back newer and evicted it in turn. Now the newest running request
    is preempted, which may be the one growing, so the oldest always progresses."""
    reqs = [Request(2, 3, n=2, arrival=2), Request(13, 13, arrival=0),
            Request(15, 18, arrival=4), Request(1, 2, n=4, arrival=1)]
    report = _within(10, lambda: simulate(reqs, capacity_tokens=44, policy="paged",
                                          block_size=4, max_len=10**6))
    assert report.completed == len(reqs)
    assert report.preemptions >= 1


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    block=st.sampled_from([1, 2, 4, 8, 16]),
    blocks=st.integers(2, 16),
    shapes=st.lists(st.tuples(st.integers(1, 8), st.integers(1, 8), st.sampled_from([1, 2, 4]),
                              st.integers(0, 5)), min_size=2, max_size=8),
    policy=st.sampled_from(POLICIES),
)
def test_every_admissible_workload_completes(
    block: int, blocks: int, shapes: list[tuple[int, int, int, int]], policy: str
) -> None:
    """Under tight memory every request that fits alone finishes, under every policy."""
    cap = blocks * block
    reqs = [Request(max(1, p * cap // 16), max(1, o * cap // 16), n=n, arrival=a)
            for p, o, n, a in shapes]
    try:
        report = _within(10, lambda: simulate(reqs, capacity_tokens=cap, policy=policy,
                                              block_size=block, max_len=10**6))
    except UsageError as err:
        assert "needs" in str(err)  # refused up front: one request exceeds memory
        return
    assert report.completed == len(reqs)


def test_a_policy_that_cannot_fit_is_marked_while_the_others_run() -> None:
    # 'max' reserves --max-len (4,096) per request: more than the 3,000 slots; the rest fit.
    res = runner.invoke(app, ["kvmem", "simulate", "--slots", "3000", "--max-len", "4096",
                              "--dist", "fixed:100,100", "--requests", "20", "--json"])
    assert res.exit_code == 0, res.output
    rows = {p["policy"]: p for p in json.loads(res.stdout)["policies"]}
    assert rows["max"]["infeasible"].startswith("request 0 (100+100 tokens x 1) needs 4,096 KV")
    assert rows["max"]["token_states"] is None and rows["max"]["steps"] is None
    assert all(rows[p]["infeasible"] is None and rows[p]["completed"] == 20
               for p in ("pow2", "oracle", "paged"))
    table = runner.invoke(app, ["kvmem", "simulate", "--slots", "3000", "--max-len", "4096",
                                "--dist", "fixed:100,100", "--requests", "20"])
    assert table.exit_code == 0, table.output
    assert "max is infeasible: request 0" in table.stdout and "paged/16" in table.stdout


def test_progress_counts_requests_served_under_every_policy() -> None:
    import tokcost
    calls: list[tuple[int, int]] = []
    request = tokcost.SimulationRequest.of(slots=4096, distribution="fixed:4,4", requests=9000,
                                           policies="oracle,paged")
    tokcost.simulate(request, on_progress=lambda done, total: calls.append((done, total)))
    done = [d for d, _ in calls]
    assert {t for _, t in calls} == {18000} and done == sorted(set(done))
    assert 9000 in done and done[-1] == 18000 and len(done) >= 6  # every 4,096 and each end


def test_no_progress_bar_when_stderr_is_piped() -> None:
    res = runner.invoke(app, ["kvmem", "simulate", "--requests", "20"])
    assert res.exit_code == 0 and "serving" not in res.stderr


@settings(max_examples=120, deadline=None, derandomize=True)
@given(
    block=st.sampled_from([1, 3, 8, 16]),
    blocks=st.integers(8, 200),
    shapes=st.lists(st.tuples(st.integers(1, 90), st.integers(1, 200), st.sampled_from([1, 2, 3]),
                              st.integers(0, 400)), min_size=1, max_size=12),
    policy=st.sampled_from(POLICIES),
)
def test_steps_summed_at_once_equal_steps_served_one_by_one(
    block: int, blocks: int, shapes: list[tuple[int, int, int, int]], policy: str
) -> None:
    """Between events the loop sums the steps in closed form (whole block cycles at once);
    asked for every step's sample it serves them one by one: the reports must agree, and the
    samples must add up to the shares the report averages. Without samples the report comes
    from fastloop.py's hot loops, with them from the policy objects: the fast path is checked
    against the plain one."""
    cap = blocks * block
    reqs = [Request(p, o, n=n, arrival=a) for p, o, n, a in shapes]
    run = lambda samples: simulate(reqs, capacity_tokens=cap, policy=policy,  # noqa: E731
                                   block_size=block, max_len=10**6, samples=samples)
    try:
        fast = run(None)
    except UsageError as err:
        assert "needs" in str(err)
        return
    samples: list[StepSample] = []
    assert run(samples) == fast and len(samples) == fast.steps
    if fast.saturated_steps == 0:  # averaged over every busy step: the samples' mean
        mean = sum(s.token_states for s in samples) / (len(samples) * (cap // block * block
                                                                         if policy == "paged" else cap))
        assert fast.token_states == pytest.approx(mean)
