"""LocalEngine's workers: jobs=0 is a thread per CPU when the tokenizers release the GIL."""

from __future__ import annotations

from pathlib import Path

from tokcost import get_tokenizer
from tokcost.counting import LocalEngine, count_paths
from tokcost.counting.local import _CountExecutor, available_cpus


def test_automatic_jobs_are_threads_per_cpu_and_count_the_same(tmp_path: Path) -> None:
    for i in range(30):
        (tmp_path / f"f{i}.txt").write_text(f"file {i}: the kettle sang, " * (50 * i + 1))
    toks = {"o": get_tokenizer("tiktoken:o200k_base")}
    executor = _CountExecutor(toks, 0, allow_special=False)
    try:
        assert executor.jobs == available_cpus() >= 1
        assert executor.threads and (executor.executor is not None) == (executor.jobs > 1)
    finally:
        executor.close()
    one = count_paths([str(tmp_path)], toks, engine=LocalEngine(jobs=1, block_bytes=512))
    auto = count_paths([str(tmp_path)], toks, engine=LocalEngine(jobs=0, block_bytes=512))
    assert [f.tokens for f in auto.files] == [f.tokens for f in one.files]
    assert one.total_tokens("o") == sum(
        toks["o"].count((tmp_path / f"f{i}.txt").read_text()) for i in range(30))


def test_automatic_jobs_do_not_start_processes(tiny_sp_model: Path) -> None:
    """A tokenizer that holds the GIL would need processes: only when asked for."""
    executor = _CountExecutor({"sp": get_tokenizer(f"sp:{tiny_sp_model}")}, 0,
                              allow_special=False)
    try:
        assert executor.jobs == 1 and executor.executor is None
    finally:
        executor.close()
