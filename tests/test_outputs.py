"""Every output flag, given a folder it cannot write: one line on stderr, no traceback,
refused before the long work, nothing left behind; and output sets written whole or not at all.

The table has one row per output (``-o``, ``--plot``, ``--baseline``, ``--write``,
``$GITHUB_STEP_SUMMARY``) and folder kind:

* ``read-only``: a real ``chmod 0o555`` folder (skipped when root ignores the mode bits);
* ``read-only-fs``: the folder refuses files as a read-only mount does (``EROFS``), while
  ``os.access`` still says yes, as it does for root; this row runs everywhere;
* ``missing``: a folder that does not exist (exit code 1, as for any output that cannot
  be written; a baseline's folder is made instead);
* ``under-a-file``: a "folder" that is a regular file (``ENOTDIR``), a failure of the
  filesystem rather than of the typing (exit code 1); it works as root too.
"""

from __future__ import annotations

import errno
import os
import signal
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from tokcost.atomic import atomic_path, atomic_set, ensure_writable, write_files_atomic
from tokcost.bpe import TrainerConfig, save_model, train_from_texts
from tokcost.cli.app import app
from tokcost.errors import InputError, UsageError

TEXT = "the quick brown fox jumps over the lazy dog; tokens cost money and memory.\n" * 40

CATALOG = """\
version: 1
models:
  - id: small-priced
    provider: test
    tokenizer: tiktoken:cl100k_base
    context_window: 1000
    pricing: {input: 2.50, cached_input: 1.25, output: 10.00}
"""

CONFIG = """\
model: small-priced
catalog: models.yaml
budgets:
  - name: system
    paths: [prompts/*.md]
    max_tokens_per_file: 2500
"""

# A price genai-prices disagrees with, so --write has something to write.
SYNC_CATALOG = """\
version: 1
models:
  - id: gpt-4o
    provider: openai
    tokenizer: tiktoken:o200k_base
    context_window: 128000
    pricing: {input: 99.0, output: 10.00}
"""


def _leftover_temps(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.name.startswith(".") and p.name.endswith(".tmp"))


def _assert_one_line_error(result: Any, code: int, fragment: str) -> None:
    assert result.exit_code == code, (result.stdout, result.stderr)
    # an exception CliRunner caught (a traceback for a user) would also give exit code 1
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and fragment in lines[0], lines[0]


# --- the workspace and the folder kinds ------------------------------------------------------


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A corpus, a trained model and a budget repository, all in tmp_path."""
    (tmp_path / "corpus.txt").write_text(TEXT, encoding="utf-8")
    trained = train_from_texts([TEXT], TrainerConfig(vocab_size=270, pattern="gpt2"))
    save_model(trained.model, tmp_path / "tok.bpe")
    repo = tmp_path / "repo"
    (repo / "prompts").mkdir(parents=True)
    (repo / "models.yaml").write_text(CATALOG, encoding="utf-8")
    (repo / "tokcost.yaml").write_text(CONFIG, encoding="utf-8")
    (repo / "prompts" / "system.md").write_text("You are careful.\n", encoding="utf-8")
    return tmp_path


def _read_only(folder: Path) -> Path:
    folder.chmod(0o555)
    try:
        (folder / ".probe").touch()
    except PermissionError:
        return folder
    (folder / ".probe").unlink()
    folder.chmod(0o755)
    pytest.skip("running as root: chmod 0o555 does not stop writes here (read-only-fs covers it)")


def _refusing_mount(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Files cannot be created in ``folder`` (EROFS), though os.access says they can."""
    real = tempfile.mkstemp

    def mkstemp(*args: Any, **kwargs: Any) -> tuple[int, str]:
        where = kwargs.get("dir")
        if where is not None and Path(where).resolve() == folder.resolve():
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    assert os.access(folder, os.W_OK)
    return folder


@dataclass(frozen=True)
class Kind:
    code: int
    message: str


KINDS = {
    "read-only": Kind(1, "Permission denied; choose a folder you can write to"),
    "read-only-fs": Kind(1, "Read-only file system; choose a folder you can write to"),
    "missing": Kind(1, "does not exist; create it first"),
    "under-a-file": Kind(1, "Not a directory; choose a folder you can write to"),
}


@pytest.fixture
def make_folder(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[
    Callable[[str, dict[str, str]], Path]
]:
    """``make_folder(kind, files)``: a folder of that kind holding ``files`` (name -> text)."""
    made: list[Path] = []

    def make(kind: str, files: dict[str, str]) -> Path:
        folder = workspace / "out"
        if kind == "missing":
            return folder
        if kind == "under-a-file":
            folder.write_text("a file, not a folder\n", encoding="utf-8")
            return folder
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")
        made.append(folder)
        if kind == "read-only":
            return _read_only(folder)
        return _refusing_mount(folder, monkeypatch)

    yield make
    for folder in made:
        folder.chmod(0o755)  # so that pytest can remove tmp_path


# --- the table -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Output:
    """One output of one command: its arguments (``{out}`` is the folder under test,
    ``{ws}`` the workspace), the work that must not start, and the folder kinds it meets."""

    args: tuple[str, ...]
    target: str  # the file the command would write in {out}
    work: str | None  # "module.attr" replaced by a tripwire: the long work
    kinds: tuple[str, ...] = tuple(KINDS)
    files: dict[str, str] = field(default_factory=dict)  # what {out} holds beforehand
    env: dict[str, str] = field(default_factory=dict)
    messages: dict[str, Kind] = field(default_factory=dict)  # a kind's message, if other


SUMMARY = {
    "read-only": Kind(1, "cannot write the step summary GITHUB_STEP_SUMMARY="),
    "missing": Kind(1, "No such file or directory; the report above is complete"),
    "under-a-file": Kind(1, "Not a directory; the report above is complete"),
}

OUTPUTS = {
    "bpe-train": Output(
        ("bpe", "train", "{ws}/corpus.txt", "-v", "300", "-o", "{out}/x.bpe"),
        "x.bpe", "tokcost.bpe.train",
    ),
    "bpe-export-hf": Output(
        ("bpe", "export", "{ws}/tok.bpe", "--format", "hf", "-o", "{out}/tokenizer.json"),
        "tokenizer.json", "tokcost.bpe.load_any",
    ),
    "bpe-export-tiktoken": Output(
        ("bpe", "export", "{ws}/tok.bpe", "--format", "tiktoken", "-o", "{out}/tok.tiktoken"),
        "tok.tiktoken", "tokcost.bpe.load_any",
    ),
    "compare-plot": Output(
        ("compare", "--plot", "{out}/p.png"), "p.png", "tokcost.app.compare.measure",
    ),
    "kvmem-estimate-plot": Output(
        ("kvmem", "estimate", "-m", "llama-3.1-8b", "--context", "8k", "--plot", "{out}/p.png"),
        "p.png", "tokcost.memory.estimate_kv",
    ),
    "kvmem-simulate-plot": Output(
        ("kvmem", "simulate", "--requests", "20", "--plot", "{out}/p.png"),
        "p.png", "tokcost.memory.simulate.compare_policies",
    ),
    # A missing baseline folder is made (test_baseline_folder_is_made).
    "check-baseline": Output(
        ("check", "--config", "{ws}/repo/tokcost.yaml", "--update-baseline",
         "--baseline", "{out}/b.json"),
        "b.json", "tokcost.app.check.measure", kinds=("read-only", "read-only-fs", "under-a-file"),
    ),
    # The catalog is written in place: its folder exists, or there is no catalog.
    "models-sync-prices-write": Output(
        ("models", "sync-prices", "--catalog", "{out}/models.yaml", "--write"),
        "models.yaml", "tokcost.catalog.sync.compare_prices",
        kinds=("read-only", "read-only-fs"), files={"models.yaml": SYNC_CATALOG},
    ),
    # The runner's file is appended to after the report is printed (see tokcost.cli.check).
    "check-github-step-summary": Output(
        ("check", "--config", "{ws}/repo/tokcost.yaml", "--format", "github"),
        "summary.md", None, kinds=tuple(SUMMARY), env={"GITHUB_STEP_SUMMARY": "{out}/summary.md"},
        messages=SUMMARY,
    ),
}

ROWS = [
    pytest.param(name, kind, id=f"{name}-{kind}")
    for name, output in OUTPUTS.items()
    for kind in output.kinds
]


def _tripwire(*args: object, **kwargs: object) -> None:
    raise AssertionError("the long work started before the output was checked")


@pytest.mark.parametrize("name, kind", ROWS)
def test_unwritable_output_is_one_line_before_the_work(
    name: str, kind: str, workspace: Path, make_folder: Callable[[str, dict[str, str]], Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    output = OUTPUTS[name]
    before = dict(output.files)
    folder = make_folder(kind, before)
    if output.work is not None:
        monkeypatch.setattr(output.work, _tripwire)

    def fill(text: str) -> str:
        return text.format(ws=workspace, out=folder)

    for key, value in output.env.items():
        monkeypatch.setenv(key, fill(value))
    result = CliRunner().invoke(app, [fill(a) for a in output.args])

    expected = output.messages.get(kind, KINDS[kind])
    _assert_one_line_error(result, expected.code, expected.message)
    if kind != "under-a-file":
        written = {p.name: p.read_text(encoding="utf-8") for p in folder.glob("*")}
        assert written == before  # nothing new, nothing changed
    assert _leftover_temps(workspace) == []


def test_the_step_summary_follows_a_complete_report(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(workspace / "missing" / "summary.md"))
    result = CliRunner().invoke(
        app, ["check", "--config", str(workspace / "repo" / "tokcost.yaml"), "--format", "github"]
    )
    assert result.exit_code == 1
    assert "tokcost check: ok" in result.stdout  # the annotations, all of them, first


def test_baseline_folder_is_made(workspace: Path) -> None:
    target = workspace / "new" / "deeper" / "b.json"
    result = CliRunner().invoke(app, ["check", "--config", str(workspace / "repo" / "tokcost.yaml"),
                                      "--update-baseline", "--baseline", str(target)])
    assert result.exit_code == 0, result.output
    assert target.is_file() and _leftover_temps(workspace) == []


# --- an existing output is refused before the work too ----------------------------------------


@pytest.mark.parametrize(
    "args, existing, work",
    [
        pytest.param(("bpe", "train", "{ws}/corpus.txt", "-v", "300", "-o", "{ws}/x.bpe"),
                     "x.vocab", "tokcost.bpe.train", id="bpe-train-vocab-exists"),
        pytest.param(("bpe", "export", "{ws}/tok.bpe", "--format", "tiktoken", "-o",
                      "{ws}/t.tiktoken"), "t.tiktoken.json", "tokcost.bpe.load_any",
                     id="bpe-export-json-exists"),
        pytest.param(("bpe", "export", "{ws}/tok.bpe", "-o", "{ws}/tokenizer.json"),
                     "tokenizer.json", "tokcost.bpe.load_any", id="bpe-export-hf-exists"),
        pytest.param(("kvmem", "simulate", "--plot", "{ws}/p.png"), "p.png",
                     "tokcost.memory.simulate.compare_policies", id="simulate-plot-exists"),
    ],
)
def test_existing_output_needs_force_before_the_work(
    args: tuple[str, ...], existing: str, work: str, workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (workspace / existing).write_text("keep me\n", encoding="utf-8")
    monkeypatch.setattr(work, _tripwire)
    result = CliRunner().invoke(app, [a.format(ws=workspace) for a in args])
    _assert_one_line_error(result, 2, "--force")
    assert (workspace / existing).read_text(encoding="utf-8") == "keep me\n"


# --- ensure_writable -------------------------------------------------------------------------


def test_ensure_writable_leaves_nothing(tmp_path: Path) -> None:
    ensure_writable(tmp_path / "out.bin")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(UsageError, match="is a directory"):
        ensure_writable(tmp_path)
    with pytest.raises(InputError, match="does not exist; create it first"):
        ensure_writable(tmp_path / "a" / "b.txt")
    with pytest.raises(InputError, match="does not exist; create it first"), atomic_path(
        tmp_path / "a" / "b.txt"
    ):
        pass
    ensure_writable(tmp_path / "a" / "b.txt", create_folder=True)  # the writer makes a/
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_while_writing_is_one_line(tmp_path: Path) -> None:
    target = tmp_path / "p.png"
    with pytest.raises(InputError) as raised, atomic_path(target):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))  # what write(2) says
    assert str(raised.value) == (f"cannot write {target}: No space left on device; "
                                 "free some space or choose another folder")
    assert list(tmp_path.iterdir()) == []


def test_an_oserror_about_another_file_is_not_blamed_on_the_output(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError), atomic_path(tmp_path / "out.txt"):
        (tmp_path / "input.txt").read_text(encoding="utf-8")
    assert list(tmp_path.iterdir()) == []


# --- atomic_set: all files or none ----------------------------------------------------------


def _fail_on_replace(monkeypatch: pytest.MonkeyPatch, targets: list[Path], n: int,
                     error: BaseException) -> list[Path]:
    """Make the ``n``-th ``os.replace`` of a new file onto one of ``targets`` raise
    ``error``; the renames that put back a previous version (``.bak.tmp``) still work."""
    real = os.replace
    moved: list[Path] = []
    watched = {os.path.abspath(t) for t in targets}

    def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if os.path.abspath(dst) in watched and not str(src).endswith(".bak.tmp"):
            if len(moved) + 1 == n:
                raise error
            moved.append(Path(dst))
        real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    return moved


def _contents(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.iterdir())}


def test_a_set_is_written_whole(tmp_path: Path) -> None:
    a, b = tmp_path / "a.bpe", tmp_path / "a.vocab"
    write_files_atomic({a: "model\n", b: b"vocab\n"})
    assert _contents(tmp_path) == {"a.bpe": "model\n", "a.vocab": "vocab\n"}


@pytest.mark.parametrize("error", [OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)),
                                   KeyboardInterrupt()], ids=["disk-full", "ctrl-c"])
@pytest.mark.parametrize("old", [False, True], ids=["new", "overwrite"])
def test_a_failure_between_renames_leaves_none_or_the_old_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: BaseException, old: bool
) -> None:
    targets = [tmp_path / "x.bpe", tmp_path / "x.vocab", tmp_path / "x.json"]
    if old:
        for t in targets:
            t.write_text(f"old {t.name}\n", encoding="utf-8")
    before = _contents(tmp_path)
    moved = _fail_on_replace(monkeypatch, targets, 2, error)
    expected = InputError if isinstance(error, OSError) else KeyboardInterrupt
    with pytest.raises(expected) as raised:
        write_files_atomic({t: f"new {t.name}\n" for t in targets})
    assert moved == [targets[0]]  # one file was in when the second rename failed
    assert _contents(tmp_path) == before  # ... and it was taken back out, or restored
    if expected is InputError:
        assert str(raised.value) == (f"cannot write {targets[1]}: No space left on device; "
                                     "free some space or choose another folder")


def test_an_error_while_writing_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n", encoding="utf-8")
    targets = [tmp_path / "a.txt", tmp_path / "b.txt"]
    with pytest.raises(RuntimeError), atomic_set(targets) as temps:
        temps[0].write_text("new\n", encoding="utf-8")
        raise RuntimeError("stopped")
    assert _contents(tmp_path) == {"a.txt": "old\n"}


def test_a_path_twice_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="twice"), atomic_set([tmp_path / "a", tmp_path / "a"]):
        pass


@pytest.mark.skipif(os.name != "posix", reason="os.kill(SIGINT) is a POSIX signal")
def test_ctrl_c_during_the_renames_waits_for_the_whole_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    targets = [tmp_path / "x.bpe", tmp_path / "x.vocab"]
    real = os.replace

    def replace(src: Any, dst: Any) -> None:
        if Path(dst) == targets[0]:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C lands between the two renames
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        write_files_atomic({t: t.name for t in targets})
    assert _contents(tmp_path) == {"x.bpe": "x.bpe", "x.vocab": "x.vocab"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    old=st.lists(st.booleans(), min_size=1, max_size=4),
    fail_at=st.integers(min_value=0, max_value=5),
    interrupt=st.booleans(),
)
def test_property_all_new_or_all_old(
    tmp_path: Path, old: list[bool], fail_at: int, interrupt: bool
) -> None:
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    targets = [folder / f"f{i}" for i in range(len(old))]
    for target, exists in zip(targets, old, strict=True):
        if exists:
            target.write_text("old", encoding="utf-8")
    before = _contents(folder)
    with pytest.MonkeyPatch.context() as monkeypatch:
        error = KeyboardInterrupt() if interrupt else OSError(errno.EIO, "I/O error")
        _fail_on_replace(monkeypatch, targets, fail_at, error)
        try:
            write_files_atomic({t: "new" for t in targets})
        except (InputError, KeyboardInterrupt):
            assert 1 <= fail_at <= len(targets)
            assert _contents(folder) == before
        else:
            assert not 1 <= fail_at <= len(targets)
            assert _contents(folder) == {t.name: "new" for t in targets}
    assert _leftover_temps(folder) == []


# --- the CLI's sets: bpe train and bpe export --format tiktoken -----------------------------


SETS = {
    "bpe-train": (("bpe", "train", "{ws}/corpus.txt", "-v", "300", "-o", "{ws}/x.bpe", "--force"),
                  ("x.bpe", "x.vocab")),
    "bpe-export-tiktoken": (("bpe", "export", "{ws}/tok.bpe", "--format", "tiktoken", "-o",
                             "{ws}/t.tiktoken", "--force"), ("t.tiktoken", "t.tiktoken.json")),
}


@pytest.mark.parametrize("old", [False, True], ids=["new", "overwrite"])
@pytest.mark.parametrize("error, code, message", [
    pytest.param(KeyboardInterrupt(), 130, "interrupted", id="ctrl-c"),
    pytest.param(OSError(errno.EIO, os.strerror(errno.EIO)), 1, "Input/output error", id="eio"),
])
@pytest.mark.parametrize("name", list(SETS))
def test_cli_output_sets_are_all_or_nothing(
    name: str, error: BaseException, code: int, message: str, old: bool, workspace: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    args, files = SETS[name]
    targets = [workspace / f for f in files]
    if old:
        for t in targets:
            t.write_text("previous\n", encoding="utf-8")
    before = {t.name: t.read_text(encoding="utf-8") for t in targets if t.exists()}
    moved = _fail_on_replace(monkeypatch, targets, 2, error)
    result = CliRunner().invoke(app, [a.format(ws=workspace) for a in args])
    if code == 130:
        assert result.exit_code == 130 and result.stderr.strip() == "interrupted"
    else:
        _assert_one_line_error(result, code, message)
    assert moved == [targets[0]]
    assert {t.name: t.read_text(encoding="utf-8") for t in targets if t.exists()} == before
    assert _leftover_temps(workspace) == []
