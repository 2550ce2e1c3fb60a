"""tokcost.scale: exact map/reduce counting and pre-tokenization, and the Dask engine.

The first half needs no Dask: the map functions over byte-range shards must give
exactly what the local engine gives, for any shard size. The second half runs a
LocalCluster of 2 worker processes on 127.0.0.1 (skipped when `distributed` is
not installed): same counts, same merges, a killed worker, an unreachable scheduler.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tokcost import get_tokenizer
from tokcost.bpe.pretokenize import PretokenizeSpec, count_words
from tokcost.bpe.train import TrainerConfig, train, train_counted
from tokcost.cli.app import app
from tokcost.counting import Inputs, TrainingInputs, count_paths, next_cut
from tokcost.errors import MissingDependency, UsageError
from tokcost.scale import (
    DaskRunner,
    count_shard,
    count_texts_partial,
    merge_counts,
    merge_shard_counts,
    merge_word_counts,
    plan_shards,
    pretokenize_shard,
    pretokenize_texts,
)

SPECS = ["tiktoken:o200k_base", "tiktoken:cl100k_base"]

PROSE = (
    "The kettle whistled while the cat slept on the warm windowsill. Counting tokens "
    "before sending a prompt keeps the monthly bill predictable; a cache of keys and "
    "values grows by one row for every generated token!\n"
)
TEXTS = {
    "prose.txt": PROSE * 40,
    "de.txt": "Der Zug nach Norden fährt um halb acht vom zweiten Gleis ab. Grüße!\n" * 30,
    "ru.txt": "Мы считаем токены, чтобы знать цену каждого запроса — быстро.\n" * 30,
    "ja.txt": "東京の朝は静かで、駅の前にパン屋が開いている。\n" * 40,
    "code/add.py": "def add(a, b):\n    return a + b  # small and tidy\n\n" * 50,
    "crlf.txt": "line one\r\nline two's end\r\n\r\n  indented   words\r\n" * 30,
    "oneline.txt": "x" * 3000 + " tail",
    "empty.txt": "",
}


def _corpus(root: Path, *, invalid: bool = True) -> list[str]:
    for name, text in TEXTS.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    if invalid:
        (root / "latin1.txt").write_bytes("café crème, naïve façade\n".encode("latin-1") * 20)
        (root / "blob.bin").write_bytes(b"\x00\x01binary" * 100)
    return sorted(str(p) for p in root.rglob("*") if p.is_file())


def _sizes(paths: list[str]) -> list[tuple[str, int]]:
    return [(p, os.path.getsize(p)) for p in paths]


def _rows(report: Any) -> list[tuple[str, int, int, dict[str, int], int]]:
    return [(f.path, f.bytes, f.chars, f.tokens, f.invalid_utf8_bytes) for f in report.files]


# --- pure map/reduce, no Dask ---------------------------------------------------------------


@pytest.mark.parametrize("shard_bytes", [101, 1 << 20], ids=lambda n: f"shard{n}")
def test_shards_count_like_the_local_engine(tmp_path: Path, shard_bytes: int) -> None:
    paths = _corpus(tmp_path)
    toks = {s: get_tokenizer(s) for s in SPECS}
    local = count_paths(Inputs(paths=[str(tmp_path)]), toks)
    merged = merge_shard_counts(
        count_shard(s, SPECS) for s in plan_shards(_sizes(paths), shard_bytes)
    )
    for f in local.files:
        part = merged[f.path]
        assert (part.bytes, part.chars, part.tokens, part.invalid_utf8_bytes) == (
            f.bytes, f.chars, f.tokens, f.invalid_utf8_bytes), f.path
    assert merged[str(tmp_path / "blob.bin")].skipped == "binary (NUL byte at offset 0)"


def test_plan_shards_covers_every_byte_once() -> None:
    files = [("a", 10), ("b", 0), ("c", 25), ("d", 3)]
    shards = plan_shards(files, 7)
    assert all(sum(p.end - p.start for p in s) <= 7 for s in shards)
    for path, size in files:
        pieces = [p for s in shards for p in s if p.path == path]
        assert pieces[0].start == 0 and pieces[-1].end == size
        assert all(a.end == b.start for a, b in itertools.pairwise(pieces))
    whole = plan_shards(files, 7, split=False)
    assert [p.whole for s in whole for p in s] == [True] * 4


FRAGMENTS = ["word", " ", "  ", "\n", "\r\n", ".", ",", "'s", "é", "日本", "🙂", "42", "Ä",
             "\t", "—", "x\u0301", "\xff"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(FRAGMENTS), max_size=120),
       shard_bytes=st.integers(min_value=1, max_value=64))
def test_any_cut_is_exact(tmp_path: Path, parts: list[str], shard_bytes: int) -> None:
    # "\xff" stands for an invalid byte: the file is UTF-8 with raw 0xFF bytes.
    data = b"".join(b"\xff" if p == "\xff" else p.encode() for p in parts)
    path = tmp_path / "t.txt"
    path.write_bytes(data)
    text = data.decode("utf-8", errors="replace")
    tok = get_tokenizer("tiktoken:o200k_base")
    merged = merge_shard_counts(
        count_shard(s, ["tiktoken:o200k_base"]) for s in plan_shards([(str(path), len(data))],
                                                                     shard_bytes)
    )
    part = merged[str(path)]
    assert (part.bytes, part.chars) == (len(data), len(text))
    assert part.tokens["tiktoken:o200k_base"] == tok.count(text)


def test_next_cut_lands_on_a_safe_point(tmp_path: Path) -> None:
    data = "Hello, wörld and 日本 again. x".encode()
    path = tmp_path / "c.txt"
    path.write_bytes(data)
    with open(path, "rb") as fh:
        cuts = sorted({next_cut(fh, i, len(data)) for i in range(len(data) + 1)})
    pieces = [data[a:b].decode() for a, b in itertools.pairwise(cuts)]
    assert pieces == ["Hello", ", wörld", " and", " 日本", " again", ". x"]


@pytest.mark.parametrize("shard_bytes", [7, 50, 1 << 20], ids=lambda n: f"shard{n}")
@pytest.mark.parametrize("pattern", ["gpt2", "o200k"])
def test_shards_pretokenize_like_the_bpe_trainer(
    tmp_path: Path, shard_bytes: int, pattern: str
) -> None:
    paths = _corpus(tmp_path, invalid=False)
    spec = PretokenizeSpec(pattern)
    local = count_words(paths, spec)
    merged = merge_word_counts(
        pretokenize_shard(s, spec) for s in plan_shards(_sizes(paths), shard_bytes)
    )
    assert merged == local


def test_text_partials_merge_in_any_order() -> None:
    texts = [PROSE, "日本語のテキスト", "", "def f(): pass"]
    parts = [count_texts_partial([t], SPECS) for t in texts]
    whole = count_texts_partial(texts, SPECS)
    assert merge_counts(parts) == merge_counts(reversed(parts)) == whole
    assert whole.texts == 4
    tok = get_tokenizer(SPECS[0])
    assert whole.tokens[SPECS[0]] == sum(tok.count(t) for t in texts)
    spec = PretokenizeSpec("o200k")
    words = merge_word_counts(pretokenize_texts([t], spec) for t in texts)
    assert words == pretokenize_texts(texts, spec)


def test_missing_extra_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runner: Any
) -> None:
    (tmp_path / "a.txt").write_text("hello world")
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(MissingDependency, match=r"pip install 'dask\[distributed\]>=2024.1'"):
        count_paths(Inputs(paths=[str(tmp_path)]), {s: get_tokenizer(s) for s in SPECS}, run=DaskRunner())
    result = runner.invoke(app, ["count", str(tmp_path), "--engine", "dask"])
    assert result.exit_code == 1
    assert "--engine dask needs the 'dask' package: pip install 'dask[distributed]>=2024.1'" in result.stderr


def test_stdin_and_unknown_engine_are_usage_errors(tmp_path: Path, runner: Any) -> None:
    with pytest.raises(UsageError, match="not stdin"):
        count_paths(Inputs(paths=["-"]), {}, run=DaskRunner())
    result = runner.invoke(app, ["count", str(tmp_path), "--engine", "spark"])
    assert result.exit_code == 2 and "use local or dask" in result.stderr


def test_import_tokcost_scale_loads_no_dask() -> None:
    import subprocess

    code = ("import sys, tokcost, tokcost.scale; "
            "print(' '.join(m for m in ('dask', 'distributed') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == ""


# --- on a Dask cluster -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    distributed = pytest.importorskip("distributed")
    scratch = tmp_path_factory.mktemp("dask-scratch")
    with pytest.MonkeyPatch.context() as mp:
        # The worker processes inherit this environment: no user cache, no hub.
        mp.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path_factory.mktemp("empty-cache")))
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.delenv("TOKCOST_CATALOG", raising=False)
        with distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
            dashboard_address="127.0.0.1:0", local_directory=str(scratch), silence_logs=50,
        ) as lc, distributed.Client(lc) as client:
            yield client


def test_dask_counts_equal_local(tmp_path: Path, cluster: Any) -> None:
    _corpus(tmp_path)
    toks = {s: get_tokenizer(s) for s in SPECS}
    inputs = [str(tmp_path), str(tmp_path / "prose.txt")]  # a file twice: two rows, as locally
    local = count_paths(Inputs(paths=inputs), toks)
    remote = count_paths(Inputs(paths=inputs), toks, run=DaskRunner(client=cluster, shard_bytes=3000))
    assert _rows(remote) == _rows(local)
    assert remote.skipped == local.skipped


def test_cli_engine_dask_json_equals_local(tmp_path: Path, cluster: Any, runner: Any) -> None:
    _corpus(tmp_path)
    args = ["count", str(tmp_path), "-t", "cl100k_base", "-t", "o200k_base", "--json"]
    local = runner.invoke(app, args)
    remote = runner.invoke(app, [*args, "--engine", "dask",
                                 "--scheduler", cluster.scheduler.address])
    assert remote.exit_code == 0, remote.stderr
    assert json.loads(remote.stdout) == json.loads(local.stdout)


def test_dask_bpe_merges_equal_local(tmp_path: Path, cluster: Any) -> None:
    paths = _corpus(tmp_path, invalid=False)
    config = TrainerConfig(vocab_size=400, pattern="o200k", special_tokens=("<|endoftext|>",))
    local = train(paths, config)
    engine = TrainingInputs(DaskRunner(client=cluster, shard_bytes=3000))
    remote = train_counted(engine.count_words(paths, config.reader_spec()), config)
    assert remote.model.merges == local.model.merges
    assert remote.model.ranks == local.model.ranks
    assert remote.distinct_pretokens == local.distinct_pretokens


def test_killed_worker_is_retried_and_counts_stay_exact(tmp_path: Path, cluster: Any) -> None:
    import distributed

    marker = tmp_path / "killed-once"

    class KillOnce(distributed.WorkerPlugin):  # defined here: pickled by value to workers
        def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
            if finish == "executing" and "count_shard" in str(key):
                try:
                    fd = os.open(marker, os.O_CREAT | os.O_EXCL)  # exactly one worker dies
                except FileExistsError:
                    return
                os.close(fd)
                os._exit(1)  # the worker process dies with the task running

    _corpus(tmp_path / "data")
    toks = {s: get_tokenizer(s) for s in SPECS}
    local = count_paths(Inputs(paths=[str(tmp_path / "data")]), toks)
    cluster.register_plugin(KillOnce(), name="kill-once")
    try:
        remote = count_paths(Inputs(paths=[str(tmp_path / "data")]), toks, run=DaskRunner(client=cluster, shard_bytes=5000))
    finally:
        cluster.unregister_worker_plugin("kill-once")
    assert marker.exists()  # a worker really died
    assert _rows(remote) == _rows(local)
    cluster.wait_for_workers(2, timeout=30)  # the nanny restarted it


def test_unreachable_scheduler_is_a_clear_error() -> None:
    pytest.importorskip("distributed")
    from tokcost.scale import ClusterError, dask_client

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    with pytest.raises(ClusterError) as caught, dask_client(address, timeout=1.0):
        pass
    assert str(caught.value) == (
        f"cannot reach the Dask scheduler at {address} within 1 s; check the address "
        "(tcp://HOST:8786), start one with `dask scheduler`, or leave out scheduler=ADDRESS "
        "to run on this machine")
    assert caught.value.param == "scheduler"  # the CLI shows: leave out --scheduler ADDRESS


def test_cli_local_cluster_without_scheduler(tmp_path: Path, runner: Any) -> None:
    pytest.importorskip("distributed")
    import dask

    data = tmp_path / "data"
    data.mkdir()
    (data / "a.txt").write_text(PROSE * 5)
    (data / "b.txt").write_text("hello world\n")
    local = runner.invoke(app, ["count", str(data), "--total"])
    with dask.config.set({"temporary-directory": str(tmp_path / "scratch")}):
        remote = runner.invoke(app, ["count", str(data), "--total", "--engine", "dask",
                                     "--jobs", "2"])
    assert remote.exit_code == 0, remote.stderr
    assert remote.stdout == local.stdout


def test_cli_bpe_train_engine_dask_writes_the_same_model(
    tmp_path: Path, cluster: Any, runner: Any
) -> None:
    paths = _corpus(tmp_path / "data", invalid=False)
    base = ["bpe", "train", *paths, "-v", "350", "--pattern", "cl100k"]
    local = runner.invoke(app, [*base, "-o", str(tmp_path / "local.bpe")])
    remote = runner.invoke(app, [*base, "-o", str(tmp_path / "dask.bpe"), "--engine", "dask",
                                 "--scheduler", cluster.scheduler.address])
    assert local.exit_code == 0 and remote.exit_code == 0, remote.stderr
    assert (tmp_path / "dask.bpe").read_bytes() == (tmp_path / "local.bpe").read_bytes()


def test_fsspec_urls_are_listed_and_read_in_shards() -> None:
    fsspec = pytest.importorskip("fsspec")
    from tokcost.scale.mapreduce import list_url

    fs = fsspec.filesystem("memory")
    fs.pipe("/tokcost-test/a.txt", PROSE.encode() * 20)
    fs.pipe("/tokcost-test/sub/b.md", TEXTS["de.txt"].encode())
    try:
        found = list_url("memory://tokcost-test")
        assert [(u, rel) for u, _, rel in found] == [
            ("memory:///tokcost-test/a.txt", "a.txt"), ("memory:///tokcost-test/sub/b.md", "sub/b.md")]
        merged = merge_shard_counts(
            count_shard(s, SPECS) for s in plan_shards([(u, n) for u, n, _ in found], 500)
        )
        tok = get_tokenizer(SPECS[0])
        assert merged["memory:///tokcost-test/a.txt"].tokens[SPECS[0]] == tok.count(PROSE * 20)
        words = merge_word_counts(
            pretokenize_shard(s, PretokenizeSpec("o200k"))
            for s in plan_shards([(u, n) for u, n, _ in found], 97)
        )
        assert words == pretokenize_texts([PROSE * 20, TEXTS["de.txt"]], PretokenizeSpec("o200k"))
    finally:
        fs.rm("/tokcost-test", recursive=True)


def test_dask_reads_file_urls(tmp_path: Path, cluster: Any) -> None:
    _corpus(tmp_path, invalid=False)
    toks = {s: get_tokenizer(s) for s in SPECS}
    local = count_paths(Inputs(paths=[str(tmp_path)]), toks)
    remote = count_paths(Inputs(paths=[tmp_path.as_uri()], include=["*.txt"]), toks, run=DaskRunner(client=cluster, shard_bytes=4000))
    want = {f.path: f.tokens for f in local.files if f.path.endswith(".txt")}
    got = {f.path.removeprefix("file://"): f.tokens for f in remote.files}
    assert got == want


def test_a_worker_error_reaches_the_driver_as_the_same_error(
    tmp_path: Path, cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tokcost.bpe.pretokenize as pre

    gone = tmp_path / "gone.txt"
    gone.write_text("here while the driver plans, gone when a worker reads\n")
    planned = pre.plan_shards

    def plan_then_delete(*args: Any, **kwargs: Any) -> Any:
        shards = planned(*args, **kwargs)
        gone.unlink()  # the worker, not the driver, finds it missing
        return shards

    monkeypatch.setattr(pre, "plan_shards", plan_then_delete)
    with pytest.raises(UsageError, match=r"training file not found: .*gone.txt"):
        TrainingInputs(DaskRunner(client=cluster)).count_words([str(gone)],
                                                               PretokenizeSpec("o200k"))


def test_invalid_utf8_reads_as_on_the_local_engine(tmp_path: Path, cluster: Any) -> None:
    # The input policy: invalid UTF-8 is U+FFFD on every engine, never an error.
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("café crème\n".encode("latin-1") * 50)
    spec = PretokenizeSpec("o200k")
    remote = TrainingInputs(DaskRunner(client=cluster, shard_bytes=64)).count_words([str(bad)],
                                                                                  spec)
    assert remote == count_words([str(bad)], spec)
    assert sum(n for word, n in remote.items() if "\ufffd" in word) == 100  # 2 a line


def test_a_scheduler_without_workers_is_a_clear_error() -> None:
    distributed = pytest.importorskip("distributed")
    from tokcost.scale import ClusterError, dask_client

    with distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0", silence_logs=50) as empty, \
            pytest.raises(ClusterError, match="has no workers after 1 s; start some with"), \
            dask_client(empty.scheduler_address, timeout=1.0):
        pass


def test_dask_driver_merge_stays_within_twice_the_cap(
    tmp_path: Path, cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Many shards, each with its own rare words: summed without a bound, the driver's
    # table would hold every one of them (thousands); the rule holds it at 2 x cap.
    import tokcost.bpe.pretokenize as pre

    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"the cat sat w{i:05d}\n" for i in range(4000)), encoding="utf-8")
    cap = 40
    sizes: list[int] = []
    real = pre.PretokenizeSpec.merge

    def spy(spec: pre.PretokenizeSpec, counts: dict[str, int], part: Any) -> None:
        real(spec, counts, part)
        sizes.append(len(counts))

    monkeypatch.setattr(pre.PretokenizeSpec, "merge", spy)
    config = TrainerConfig(vocab_size=300, pattern="gpt2", max_pretokens=cap)
    engine = TrainingInputs(DaskRunner(client=cluster, shard_bytes=2048))
    result = train_counted(engine.count_words([corpus], config.reader_spec()), config)
    assert len(sizes) > 10  # the driver merged many shards' tables
    assert max(sizes) <= 2 * cap
    assert result.distinct_pretokens == cap
    # The frequent words are never pruned, so the first merges are theirs.
    merged = [result.model.decoder[i] for _, _, i in result.model.merges]
    assert b" cat" in merged and b" sat" in merged


def test_dask_cap_above_the_distinct_count_equals_local(tmp_path: Path, cluster: Any) -> None:
    paths = _corpus(tmp_path, invalid=False)
    free = train(paths, TrainerConfig(vocab_size=350, pattern="o200k"))
    config = TrainerConfig(vocab_size=350, pattern="o200k", max_pretokens=free.distinct_pretokens)
    engine = TrainingInputs(DaskRunner(client=cluster, shard_bytes=3000))
    remote = train_counted(engine.count_words(paths, config.reader_spec()), config)
    assert remote.model.merges == free.model.merges
