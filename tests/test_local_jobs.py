"""Local runners: no jobs given is a thread per CPU when the tokenizers release the GIL."""

from __future__ import annotations

from pathlib import Path

from tokcost import get_tokenizer
from tokcost.counting import Inputs, count_paths, runner_for
from tokcost.runner import LocalRunner, RunConfig, available_cpus


def test_automatic_jobs_are_threads_per_cpu_and_count_the_same(tmp_path: Path) -> None:
    for i in range(30):
        (tmp_path / f"f{i}.txt").write_text(f"file {i}: the kettle sang, " * (50 * i + 1))
    toks = {"o": get_tokenizer("tiktoken:o200k_base")}
    runner = runner_for(RunConfig(), threads=all(t.releases_gil for t in toks.values()))
    assert runner == LocalRunner(available_cpus()) and runner.workers >= 1
    assert runner.in_process and not runner.processes
    inputs = Inputs(paths=[str(tmp_path)])
    one = count_paths(inputs, toks, run=RunConfig(jobs=1), block_bytes=512)
    auto = count_paths(inputs, toks, run=RunConfig(), block_bytes=512)
    assert [f.tokens for f in auto.files] == [f.tokens for f in one.files]
    assert one.total_tokens("o") == sum(
        toks["o"].count((tmp_path / f"f{i}.txt").read_text()) for i in range(30))


def test_automatic_jobs_do_not_start_processes(tiny_sp_model: Path) -> None:
    """A tokenizer that holds the GIL would need processes: only when asked for."""
    sp = get_tokenizer(f"sp:{tiny_sp_model}")
    assert not sp.releases_gil
    assert runner_for(RunConfig(), threads=False) == LocalRunner(1)
    assert runner_for(RunConfig(jobs=2), threads=False) == LocalRunner(2, processes=True)
