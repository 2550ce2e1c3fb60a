"""The count use cases take one request each, validated on construction: a bad value is
one error that names the field (the CLI's flag), values are read as users write them."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

import tokcost
from tokcost.counting import Inputs
from tokcost.errors import TokcostError, UsageError
from tokcost.runner import EngineKind, LocalRunner, RunConfig
from tokcost.scale import DaskRunner
from tokcost.tokenizers import TokenizerSelection


def test_a_bare_string_is_one_path(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("hello world", encoding="utf-8")
    assert Inputs(paths=str(path)).paths == (str(path),)
    assert Inputs(paths=path, include="*.txt").include == ("*.txt",)
    assert tokcost.count(str(path)).total_tokens() == 2
    assert tokcost.count(path).total_tokens() == tokcost.count([str(path)]).total_tokens()
    assert tokcost.tokenize(str(path)).files[0].ids == tokcost.tokenize([path]).files[0].ids
    assert TokenizerSelection(models="gpt-4o").models == ("gpt-4o",)


def test_counts_are_parsed_as_users_write_them() -> None:
    stdin = Inputs(paths="-", stdin=io.BytesIO(b"hello"))
    assert tokcost.TokenizeRequest(inputs=stdin, max_tokens="12k").max_tokens == 12_000
    assert RunConfig(jobs="2").jobs == 2
    with pytest.raises(TokcostError) as caught:
        tokcost.TokenizeRequest(inputs=stdin, max_tokens="many")
    assert caught.value.param == "max_tokens"
    assert str(caught.value).startswith("max_tokens 'many' is not a count")
    with pytest.raises(UsageError, match="^jobs must not be negative") as negative:
        RunConfig(jobs=-1)
    assert negative.value.param == "jobs"


@pytest.mark.parametrize(("build", "param", "message"), [
    pytest.param(lambda: RunConfig(engine="spark"), "engine",
                 "unknown engine 'spark': use local or dask", id="engine"),
    pytest.param(lambda: RunConfig(timeout=0, engine="dask"), "timeout",
                 "timeout=0 must be a number of seconds above 0", id="timeout"),
    pytest.param(lambda: tokcost.CountRequest(inputs=Inputs()), "paths",
                 "nothing to count: give files or folders, or '-' to read stdin", id="paths"),
    pytest.param(lambda: Inputs(paths=3), "paths",
                 "paths takes a path or a list of them, got 3", id="not-paths"),
])
def test_a_bad_field_is_one_error_naming_it(build, param: str, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UsageError) as caught:
        build()
    assert caught.value.param == param
    assert str(caught.value) == message


def test_the_cli_names_the_flags(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from tokcost.cli.app import app

    path = tmp_path / "a.txt"
    path.write_text("hi", encoding="utf-8")
    runner = CliRunner()
    result = runner.invoke(app, ["count", str(path), "--timeout", "3"])
    assert result.exit_code == 2
    assert result.stderr == ("error: --timeout 3 is for --engine dask only: add --engine dask, "
                             "or leave out --timeout 3\n")
    result = runner.invoke(app, ["count", str(path), "--engine", "spark"])
    assert result.stderr == "error: unknown --engine 'spark': use local or dask\n"


def test_scheduler_implies_dask_and_runners_follow_the_config() -> None:
    from tokcost.counting import runner_for

    run = RunConfig(scheduler="tcp://10.0.0.5:8786", timeout=60)
    assert run.engine is EngineKind.DASK and run.timeout == 60.0
    dask = runner_for(run, threads=True)
    assert isinstance(dask, DaskRunner) and dask.timeout == 60.0 and dask.remote
    assert runner_for(RunConfig(jobs=3), threads=False) == LocalRunner(3, processes=True)
