"""Issue 13 follow-ups: the fast walk spells paths as before, plain counting uses every
CPU, du-style unique files on the Dask engine, and --max-pretokens on Dask workers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tokcost import get_tokenizer
from tokcost.bpe.pretokenize import PATTERNS, PretokenizeSpec
from tokcost.counting import Inputs, Visited, count_paths, walk
from tokcost.counting import local as local_mod
from tokcost.runner import LocalRunner, RunConfig
from tokcost.scale import DaskRunner, plan_shards, pretokenize_shard
from tokcost.scale.mapreduce import list_inputs

SPEC = "tiktoken:o200k_base"


def _tree(root: Path) -> None:
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("alpha beta gamma\n")
    (root / "sub" / "b.txt").write_text("delta epsilon\n" * 5)
    os.link(root / "a.txt", root / "sub" / "hard.txt")


# --- the walk: string paths, spelled as Path spells them ------------------------------------


@pytest.mark.parametrize("arg", [".", "./", "./sub/", "sub"])
def test_walk_from_dot_spells_paths_without_a_leading_dot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, arg: str
) -> None:
    _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    got = [s.path for s in walk([arg])]
    names = ["a.txt", "sub/b.txt", "sub/hard.txt"] if "sub" not in arg else ["b.txt", "hard.txt"]
    assert got == [str(Path(arg) / p) for p in names]  # as the Path-based walk spelled them
    assert not any(p.startswith("./") for p in got)


# --- jobs: a thread per CPU by default ------------------------------------------------------


def test_plain_local_engine_is_a_thread_per_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    assert RunConfig(engine="local") == RunConfig(jobs=0) == RunConfig()
    assert local_mod.runner_for(RunConfig(jobs=3), threads=True) == LocalRunner(3)
    monkeypatch.setattr(local_mod, "available_cpus", lambda: 2)
    runner = local_mod.runner_for(RunConfig(), threads=get_tokenizer(SPEC).releases_gil)
    assert runner.workers == 2 and runner.in_process and not runner.processes


def test_default_jobs_count_what_one_job_counts(tmp_path: Path) -> None:
    _tree(tmp_path)
    toks = {SPEC: get_tokenizer(SPEC)}
    one = count_paths(Inputs(paths=[str(tmp_path)]), toks, run=RunConfig(jobs=1))
    many = count_paths(Inputs(paths=[str(tmp_path)]), toks, run=RunConfig())
    assert [(f.path, f.tokens) for f in many.files] == [(f.path, f.tokens) for f in one.files]


# --- unique on the Dask engine --------------------------------------------------------------


def _args(root: Path) -> list[str]:
    # A file directly after its folder, a hard link, and the folder named twice.
    return [str(root), str(root / "a.txt"), str(root / "sub"), str(root)]


@pytest.mark.parametrize("unique", [True, False])
def test_dask_listing_takes_each_file_once_as_the_local_walk(tmp_path: Path,
                                                             unique: bool) -> None:
    _tree(tmp_path)
    skipped: list[Any] = []
    listed = list_inputs(Inputs(paths=_args(tmp_path)), skipped, timeout=10, unique=unique)
    local_skipped: list[Any] = []
    local = list(walk(_args(tmp_path), skipped=local_skipped,
                      visited=Visited() if unique else None))
    assert [display for _, display, _ in listed] == [s.display for s in local]
    assert skipped == local_skipped
    if unique:
        # a.txt and sub/b.txt; the hard link, the paths met again and the folder: skipped
        assert len(listed) == 2 and len(skipped) == 5
    else:
        assert len(listed) == 3 + 1 + 2 + 3 and not skipped


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    distributed = pytest.importorskip("distributed")
    scratch = tmp_path_factory.mktemp("dask-scratch")
    # In-process workers: the engine's own code path, without process start-up.
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False,
        dashboard_address="127.0.0.1:0", local_directory=str(scratch), silence_logs=50,
    ) as lc, distributed.Client(lc) as client:
        yield client


def test_dask_counts_each_file_once_as_the_local_engine(tmp_path: Path, cluster: Any) -> None:
    _tree(tmp_path)
    toks = {SPEC: get_tokenizer(SPEC)}
    inputs = Inputs(paths=_args(tmp_path))
    local = count_paths(inputs, toks, unique=True)
    remote = count_paths(inputs, toks, unique=True,
                         run=DaskRunner(client=cluster, shard_bytes=16))
    rows = [(f.path, f.bytes, f.tokens) for f in remote.files]
    assert rows == [(f.path, f.bytes, f.tokens) for f in local.files]
    assert len(rows) == 2  # a.txt (and its hard link) and sub/b.txt
    assert remote.skipped == local.skipped
    twice = count_paths(inputs, toks, run=DaskRunner(client=cluster))
    assert len(twice.files) == 9  # without unique each path is counted, as locally


# --- --max-pretokens bounds a Dask worker's table while it counts ---------------------------


def test_a_worker_table_is_capped_while_counting(tmp_path: Path) -> None:
    path = tmp_path / "words.txt"
    path.write_text("".join(f"w{i:05d}\n" for i in range(5000)))
    shards = plan_shards([(str(path), path.stat().st_size)], 1 << 30)
    assert len(shards) == 1
    free = pretokenize_shard(shards[0], PretokenizeSpec(PATTERNS["gpt2"]))
    capped = pretokenize_shard(shards[0], PretokenizeSpec(PATTERNS["gpt2"], max_pretokens=10))
    assert len(free) > 5000
    assert len(capped) <= 2 * 10 + 1
    assert all(capped[w] == free[w] for w in capped)
