"""Every console example in README.md and docs/*.md runs, and prints what the page shows.

A page's ```console blocks hold `$ command` lines, each followed by its output as a terminal
shows it (stdout and stderr together). A block written ```yaml file=NAME (any language)
is written to NAME before the examples after it run, so a page shows the files it uses.
Each page runs top to bottom in its own workspace (a copy of corpora/, models.yaml and the
fixtures the page names, in pytest's tmp dir): what one example writes, the next may read.
`tokcost` and `tokcount` run in this process through the console scripts' entry points; a
line with a pipe, a redirection, `&&` or a variable runs under bash, on shims of the same
scripts and interpreter (`$?` there is the previous example's exit status). Nothing reaches the network (HF_HUB_OFFLINE, conftest.py).

    TOKCOST_UPDATE_DOCS=1 pytest tests/test_docs.py   # rewrite the outputs in the pages

A ```bash block is shown, never run (installs, clusters, downloads, long runs); a console
example that cannot run here is listed in NOT_RUN with the reason.
"""

from __future__ import annotations

import difflib
import glob
import importlib
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cli_tree import subcommands
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parent.parent
if not (ROOT / "docs").is_dir():  # an sdist ships tests/ and README.md, not docs/
    pytest.skip("not a tokcost checkout", allow_module_level=True)
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
UPDATE = bool(os.environ.get("TOKCOST_UPDATE_DOCS"))

# Console examples shown but not run: command -> why.
_DASK = ("starts a Dask cluster, several seconds each: over this test's time "
         "(tests/test_dask.py runs the same on a local cluster)")
NOT_RUN = {
    "pip install '.[dask]'": "installs a package (network)",
    "tokcost count 'corpora/prose/[ejz]*.txt' --engine dask --jobs 2 -t cl100k_base "
    "-t o200k_base": _DASK,
    "diff <(tokcost count corpora/prose --json) <(tokcost count corpora/prose --json "
    "--engine dask) && echo identical": _DASK,
    "tokcost bpe train corpora/prose/*.txt -v 1000 -o p-local.bpe": "compared with the Dask run",
    "tokcost bpe train 'corpora/prose/*.txt' -v 1000 -o p-dask.bpe --engine dask": _DASK,
    'cmp p-local.bpe p-dask.bpe && echo "same model"': _DASK,
    "tokcost count s3://bucket/docs/ --engine dask --scheduler tcp://10.0.0.5:8786 --json":
        "needs an S3 bucket and a remote Dask scheduler",
}

# Wall-clock figures change run to run; where the workspace lies changes with the machine.
MASKS = [
    (re.compile(r"\bin \d+(?:\.\d+)? s\b"), "in <t> s"),
    (re.compile(r'("seconds[a-z_]*": )[0-9.e-]+'), r"\1<t>"),
]
WORKSPACE = "/src/app"  # how a page shows the folder its examples run in

# What a page may name besides corpora/ and models.yaml, copied when it does.
FIXTURES = ["tests/fixtures/hf_tiny", "tests/fixtures/hf_configs", "tests/fixtures/flores",
            "tests/fixtures/udhr"]


@dataclass
class Step:
    command: str
    raw: list[str]  # the command's lines as the page writes them
    expected: list[str]
    line: int  # 1-based, of the `$` line


@dataclass
class Block:
    info: str
    start: int  # index of the first line inside the fence
    end: int  # index of the closing fence
    lines: list[str]
    steps: list[Step] = field(default_factory=list)

    @property
    def file(self) -> str | None:
        found = re.search(r"\bfile=(\S+)", self.info)
        return found.group(1) if found else None


def parse(text: str) -> list[Block]:
    """The fenced blocks of a page, console blocks cut into steps."""
    lines = text.split("\n")
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        fence = re.match(r"(`{3,})(.*)$", lines[i])
        if not fence:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith(fence.group(1)))
        block = Block(fence.group(2).strip(), i + 1, end, lines[i + 1:end])
        if block.info.split()[:1] == ["console"]:
            block.steps = _steps(block.lines, i + 2)
        blocks.append(block)
        i = end + 1
    return blocks


def _steps(lines: list[str], first_line: int) -> list[Step]:
    steps: list[Step] = []
    k = 0
    while k < len(lines):
        assert lines[k].startswith("$ "), f"line {first_line + k}: output before any `$ `"
        start, command = k, lines[k][2:]
        while command.endswith("\\"):
            k += 1
            command = command[:-1] + lines[k].lstrip()
        k += 1
        out_start = k
        while k < len(lines) and not lines[k].startswith("$ "):
            k += 1
        steps.append(Step(command, lines[start:out_start], lines[out_start:k], first_line + start))
    return steps


def masked(text: str) -> str:
    for pattern, repl in MASKS:
        text = pattern.sub(repl, text)
    return text


# --- running a command ------------------------------------------------------------------------

def _quoting(command: str) -> tuple[bool, bool, bool]:
    """(a glob character outside quotes, one inside quotes, a `$` or backtick the shell
    would expand: outside single quotes)."""
    bare = quoted = expands = False
    quote = ""
    for ch in command:
        if quote:
            quote = "" if ch == quote else quote
            quoted = quoted or ch in "*?["
            expands = expands or (quote == '"' and ch in "$`")
        elif ch in "'\"":
            quote = ch
        else:
            bare = bare or ch in "*?["
            expands = expands or ch in "$`"
    return bare, quoted, expands


_ECHO = re.compile(r"echo ((?:'[^']*'|\"[^\"$`]*\"|[\w.,-]+ ?)+) \| (.*)$")


def split_stdin(command: str) -> tuple[str, str | None]:
    """`echo TEXT | tokcost ...` -> (`tokcost ...`, TEXT + newline); other lines unchanged."""
    found = _ECHO.fullmatch(command)
    if not found:
        return command, None
    return found.group(2), " ".join(shlex.split(found.group(1))) + "\n"


def needs_shell(command: str) -> bool:
    command = split_stdin(command)[0]
    words = list(shlex.shlex(command, posix=True, punctuation_chars=True))
    bare, quoted, expands = _quoting(command)
    return (not words or words[0] not in ("tokcost", "tokcount") or expands
            or any(set(w) <= set("<>|&;()") for w in words[1:]) or (bare and quoted))


def _entry_points() -> dict[str, str]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - the tomli dependency on 3.10
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return dict(project["project"]["scripts"])


def run_in_process(command: str) -> tuple[str, int]:
    """One `tokcost`/`tokcount` line, as its console script runs it (unquoted globs
    expanded as the shell would; `echo TEXT |` in front is its stdin)."""
    command, stdin = split_stdin(command)
    words = shlex.split(command)
    if _quoting(command)[0]:
        words = [w for word in words
                 for w in (sorted(glob.glob(word)) or [word] if set(word) & set("*?[") else [word])]
    module, _, name = _entry_points()[words[0]].partition(":")
    entry = getattr(importlib.import_module(module), name)
    from tokcost.cli import console

    for lazy in (console.out, console.err):  # a fresh console per process, as in a shell
        lazy._console = None  # type: ignore[attr-defined]
    saved, code = sys.argv, 0
    sys.argv = words
    try:
        with CliRunner().isolation(input=stdin) as (_, _, mixed):
            try:
                entry()
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 1
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
            return mixed.getvalue().decode("utf-8", "replace"), code
    finally:
        sys.argv = saved


def run_in_shell(command: str, workspace: Path, bin_dir: Path, status: int) -> tuple[str, int]:
    """A line under bash; `$?` is the exit status of the page's previous example."""
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
               PYTHONPATH=os.pathsep.join([str(_package_root()), os.environ.get("PYTHONPATH", "")]),
               PYTHONUNBUFFERED="1")
    done = subprocess.run(["bash", "-c", f"(exit {status}); {command}"], cwd=workspace,
                          env=env, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=120, check=False)
    return done.stdout, done.returncode


def _package_root() -> Path:
    import tokcost

    return Path(tokcost.__file__).resolve().parent.parent


def _shims(bin_dir: Path) -> None:
    """`tokcost`, `tokcount` and `python` on PATH for bash: this interpreter and package."""
    bin_dir.mkdir()
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n',
                                    encoding="utf-8")
    (bin_dir / "python").chmod(0o755)
    for name, target in _entry_points().items():
        module, _, func = target.partition(":")
        shim = bin_dir / name
        shim.write_text(f"#!{sys.executable}\nimport sys\nfrom {module} import {func}\n"
                        f"sys.exit({func}())\n", encoding="utf-8")
        shim.chmod(0o755)


# --- a page ------------------------------------------------------------------------------------

def _workspace(page_text: str, tmp: Path) -> Path:
    workspace = tmp / "app"
    workspace.mkdir()
    shutil.copytree(ROOT / "corpora", workspace / "corpora")
    shutil.copy(ROOT / "models.yaml", workspace / "models.yaml")
    for fixture in FIXTURES:
        if fixture in page_text:
            shutil.copytree(ROOT / fixture, workspace / fixture)
    return workspace


def _skip_reason(command: str) -> str | None:
    if command in NOT_RUN:
        return NOT_RUN[command]
    if re.search(r"\|\s*jq\b", command) and shutil.which("jq") is None:
        return "jq is not installed"
    return None


def check_page(page: Path, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Run a page's examples; return a diff per example that printed something else
    (and, under TOKCOST_UPDATE_DOCS, write what they printed into the page)."""
    text = page.read_text(encoding="utf-8")
    workspace = _workspace(text, tmp)
    bin_dir = tmp / "bin"
    _shims(bin_dir)
    monkeypatch.chdir(workspace)
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setenv("TERM", "dumb")
    for var in ("GITHUB_WORKSPACE", "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(var, raising=False)
    for var in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(var, "Docs")
    for var in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(var, "docs@example.invalid")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    lines = text.split("\n")
    problems: list[str] = []
    for block in reversed(_run_blocks(parse(text), workspace, bin_dir, page, problems)):
        lines[block.start:block.end] = block.lines
    if UPDATE and problems:
        page.write_text("\n".join(lines), encoding="utf-8")
        return []
    return problems


def _run_blocks(blocks: list[Block], workspace: Path, bin_dir: Path, page: Path,
                problems: list[str]) -> list[Block]:
    """Run the blocks in page order; each console block's lines become what ran."""
    where = [str(workspace.resolve()), str(workspace)]
    status = 0
    for block in blocks:
        if block.file:
            target = workspace / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("\n".join(block.lines) + "\n", encoding="utf-8")
        new: list[str] = []
        for step in block.steps:
            new += step.raw
            if _skip_reason(step.command):
                new += step.expected
                continue
            got, status = (run_in_shell(step.command, workspace, bin_dir, status)
                           if needs_shell(step.command) else run_in_process(step.command))
            for path in where:
                got = got.replace(path, WORKSPACE)
            got_lines = got.split("\n")[:-1] if got.endswith("\n") else got.split("\n")
            if masked("\n".join(got_lines)) == masked("\n".join(step.expected)):
                new += step.expected
                continue
            new += got_lines
            diff = difflib.unified_diff(step.expected, got_lines, "page", "ran", lineterm="")
            problems.append(f"{page.relative_to(ROOT)}:{step.line}: $ {step.command}\n"
                            + "\n".join(diff))
        if block.steps:
            block.lines = new
    return [b for b in blocks if b.steps]


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_examples_print_what_the_page_shows(page: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    problems = check_page(page, tmp_path, monkeypatch)
    assert not problems, "\n\n".join(problems)


# --- what the pages must hold ------------------------------------------------------------------

def _console_commands(page: Path) -> list[str]:
    return [s.command for b in parse(page.read_text(encoding="utf-8")) for s in b.steps]


def test_set_up_has_the_two_commands_ci_runs() -> None:
    """.ci/run installs and tests exactly as the README's Set up section says: two commands,
    each in its own fenced block, the second running pytest."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Set up\n", 1)[1].split("\n## ", 1)[0]
    commands = [line for b in parse(section) for line in b.lines if line.strip()]
    assert commands[0] == "pip install . && tokcount README.md"
    assert len(commands) == 2 and "pytest" in commands[1]


def test_readme_is_a_short_guide() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 400


def test_the_tour_runs_every_command() -> None:
    from tokcost.cli.app import COMMANDS, _load_command

    def paths(command: Any, path: str) -> list[str]:
        subs = subcommands(command)
        return [p for name, sub in subs.items() for p in paths(sub, f"{path} {name}")] or [path]

    wanted = [p for name in COMMANDS for p in paths(_load_command(name), f"tokcost {name}")]
    shown = [re.sub(r"^tokcount\b", "tokcost count", c) for c in _console_commands(ROOT / "README.md")]
    shown += [c for b in parse((ROOT / "README.md").read_text(encoding="utf-8"))
              if b.info == "bash" for c in b.lines]  # models sync-prices: shown, not run
    missing = [p for p in wanted if not any(re.match(rf"{re.escape(p)}\b", c) for c in shown)]
    assert missing == []


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_links_lead_somewhere(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    prose = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", prose):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md":
            headings = re.findall(r"^#+ (.*)$", file.read_text(encoding="utf-8"), re.MULTILINE)
            if anchor not in {_slug(h) for h in headings}:
                broken.append(target)
    assert broken == []


def test_the_flags_table_lists_every_short_flag() -> None:
    """docs/grammar.md's table of short flags is the commands' own (tests/test_flags.py
    checks that each short flag means one thing)."""
    from tokcost.cli.app import COMMANDS, _load_command

    def options(command: Any) -> list[Any]:
        subs = subcommands(command).values()
        return [p for p in command.params if p.param_type_name == "option"] + [
            p for sub in subs for p in options(sub)]

    used = {short: next(o for o in p.opts if o.startswith("--"))
            for name in COMMANDS for p in options(_load_command(name))
            for short in p.opts if len(short) == 2}
    used["-h"] = "--help"  # Click's help option, on every command
    text = (ROOT / "docs" / "grammar.md").read_text(encoding="utf-8")
    table = dict(re.findall(r"^\| `(-\w)` \| `(--[\w-]+)` \|", text, re.MULTILINE))
    assert table == used


def test_every_example_not_run_is_still_shown() -> None:
    """NOT_RUN names examples by their command: one no page shows any more goes."""
    shown = {c for page in PAGES for c in _console_commands(page)}
    assert sorted(set(NOT_RUN) - shown) == []


@pytest.mark.skipif(not (ROOT / "docs").is_dir(), reason="docs/ is not shipped in the sdist")
def test_the_library_examples_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/api.md's ```pycon blocks are doctests, run from the checkout (README.md)."""
    import doctest

    monkeypatch.chdir(ROOT)
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```pycon\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 3
    parser, runner = doctest.DocTestParser(), doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    globs: dict[str, Any] = {}
    for i, block in enumerate(blocks):  # one session: a block sees the names made before
        test = parser.get_doctest(block, globs, f"api.md[{i}]", "docs/api.md", 0)
        runner.run(test, clear_globs=False)
        globs.update(test.globs)
    assert runner.summarize(verbose=False).failed == 0
