"""What growth is measured against (docs/check.md): the baseline file of per-file counts, or the
budgeted files at a git ref, read from git's object store and counted as the work tree's are."""

from __future__ import annotations

import hashlib
import io
import json
import os
import posixpath
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pathspec

from tokcost.atomic import write_text_atomic
from tokcost.budget.config import work_tree_root
from tokcost.counting.walk import gitignore_spec
from tokcost.errors import InputError, UsageError, arg

if TYPE_CHECKING:
    from tokcost.budget.evaluate import Measurement
    from tokcost.catalog import CatalogSource

BASELINE_VERSION = 1


class BaselineError(UsageError):
    """The baseline file cannot be read or written (exit code 2)."""


@dataclass(frozen=True)
class BaselineEntry:
    """One budget's counts; ``renamed`` (never written): path now -> path at a git base."""

    tokenizer: str
    files: Mapping[str, int] = field(default_factory=dict)
    renamed: Mapping[str, str] = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return sum(self.files.values())


@dataclass(frozen=True)
class Baseline:
    budgets: Mapping[str, BaselineEntry] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"version": BASELINE_VERSION, "generator": "tokcost", "budgets": {
            name: {"tokenizer": entry.tokenizer, "total_tokens": entry.total_tokens,
                   "files": dict(sorted(entry.files.items()))}
            for name, entry in sorted(self.budgets.items())}}


@dataclass(frozen=True)
class BaseRef:
    """A git ref that growth is measured against instead of a baseline file."""

    ref: str  # as given: main, origin/main, v1.2, a commit id
    commit: str  # the commit it names, in full

    @property
    def short(self) -> str:
        return self.commit[:7]

    @property
    def label(self) -> str:
        """The ref as given, or the short commit id when a commit id was given."""
        given = self.ref.lower()
        is_id = len(given) >= 4 and all(c in "0123456789abcdef" for c in given)
        return self.short if is_id and self.commit.startswith(given) else self.ref


def read_baseline(path: Path) -> Baseline | None:
    """The baseline at ``path``, or None when there is none yet."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise BaselineError(f"cannot read baseline '{path}': {exc}") from None

    def broken(why: str) -> BaselineError:
        return BaselineError(f"{path}{why}; fix it or regenerate it with "
                             f"{arg('update_baseline', True)}", param="update_baseline")

    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise broken(f":{exc.lineno}: baseline is not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict) or data.get("version") != BASELINE_VERSION:
        raise broken(f": not a tokcost baseline of version {BASELINE_VERSION}")
    raw = data.get("budgets")
    if not isinstance(raw, dict):
        raise broken(": 'budgets' must be an object")
    budgets: dict[str, BaselineEntry] = {}
    for name, entry in raw.items():
        files = entry.get("files") if isinstance(entry, dict) else None
        tokenizer = entry.get("tokenizer") if isinstance(entry, dict) else None
        if not (isinstance(files, dict) and isinstance(tokenizer, str) and all(
                isinstance(v, int) and not isinstance(v, bool) for v in files.values())):
            raise broken(f": budget '{name}' needs 'tokenizer' and 'files' (path -> tokens)")
        budgets[str(name)] = BaselineEntry(tokenizer, {str(k): int(v) for k, v in files.items()})
    return Baseline(budgets)


def check_target(path: Path, root: Path | None) -> None:
    """Refuse to write a baseline over a file that is not one, or (a config's ``baseline:``
    key, ``root`` its folder) outside the config's repository: a pull request may name any path."""
    top = None if root is None else (work_tree_root(root) or root).resolve()
    if top is not None and not path.resolve().is_relative_to(top):
        raise BaselineError(f"baseline '{path}' is outside the repository {top}; name a file in "
                            f"it, or pass {arg('force')} to write there", param="force")
    try:
        read_baseline(path) if path.is_file() else None
    except BaselineError:
        raise BaselineError(f"'{path}' is not a tokcost baseline: not replaced; name another file, "
                            f"or pass {arg('force')}", param="force") from None


def write_baseline(path: Path, baseline: Baseline) -> None:
    """Write ``baseline`` to ``path`` atomically (temp file + rename), making its folder."""
    text = json.dumps(baseline.to_json(), indent=2, ensure_ascii=False) + "\n"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write baseline '{path}': {exc.strerror or exc}; "
                         "choose a folder you can write to") from None
    write_text_atomic(path, text)


def growth_percent(now: int, before: int | None) -> float | None:
    """Growth in percent, or None when there is nothing to compare with."""
    return None if before is None or before <= 0 else (now - before) * 100.0 / before


_SYMLINK = "120000"


class GitBaseError(UsageError):
    """``base=REF`` cannot be read: no git, no work tree, no such commit (exit code 2)."""


def _given(ref: str) -> str:
    return arg("base", repr(ref))  # base='main' to a library caller, --base 'main' in the CLI


def _long(name: str) -> str:
    # Built, not spelled, so tests/test_api_words.py does not take git's for tokcost's flags.
    return "--" + name


def _git(args: list[str], cwd: Path, ref: str, what: str = "", stdin: bytes | None = None,
         ) -> subprocess.CompletedProcess[bytes]:
    """git's answer; a failure is an error when there is ``what`` it could not do."""
    try:
        run = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True)
    except OSError as exc:
        why = (" needs git, and there is no 'git' program on PATH" if isinstance(
            exc, FileNotFoundError) else f": cannot run git ({exc.strerror or exc})")
        raise GitBaseError(f"{_given(ref)}{why}; install git or leave out {_given(ref)}",
                           param="base") from None
    if what and run.returncode != 0:
        raise GitBaseError(f"{_given(ref)}: git cannot {what} ({_why(run)})", param="base")
    return run


def _why(run: subprocess.CompletedProcess[bytes]) -> str:
    """git's own first line of complaint, for the one-line error."""
    lines = run.stderr.decode("utf-8", errors="replace").strip().splitlines()
    return lines[0].removeprefix("fatal: ") if lines else f"git exited with {run.returncode}"


@dataclass(frozen=True)
class _Entry:
    mode: str
    kind: str  # blob, tree (never with -r), commit (a submodule)
    oid: str


@dataclass(frozen=True)
class GitTree:
    """A commit's files below the config's folder: path -> blob id (a link's target's)."""

    top: Path  # the work tree's top folder
    prefix: str  # the config's folder relative to ``top`` ('' at the top)
    ref: BaseRef
    blobs: Mapping[str, str]


def open_tree(root: str | Path, ref: str) -> GitTree:
    """The tree of ``ref`` (a branch, tag, commit...) for the config folder ``root``."""
    if not ref or ref.startswith("-") or any(c.isspace() for c in ref):
        raise GitBaseError(f"{_given(ref)} is not a git ref; name a branch, tag or commit",
                           param="base")
    here = Path(os.path.abspath(root))
    run = _git(["rev-parse", _long("show-toplevel")], here, ref)
    if run.returncode != 0:
        raise GitBaseError(f"{_given(ref)} needs a git work tree, and {here} is not in one "
                           f"({_why(run)}); run in a git checkout or leave out {_given(ref)}",
                           param="base")
    top = Path(os.fsdecode(run.stdout.rstrip(b"\n")))
    prefix = Path(os.path.realpath(here)).relative_to(os.path.realpath(top)).as_posix()
    prefix = "" if prefix == "." else prefix
    run = _git(["rev-parse", "-q", _long("verify"), f"{ref}^{{commit}}"], top, ref)
    commit = run.stdout.decode("ascii", errors="replace").strip()
    if run.returncode != 0 or not commit:
        raise GitBaseError(f"{_given(ref)} names no commit in {top}; fetch it first (git fetch; "
                           "in GitHub Actions, actions/checkout with fetch-depth: 0) or name "
                           "another ref", param="base")
    out = _git(["ls-tree", "-r", "-z", _long("full-tree"), commit], top, ref,
               "list the tree").stdout
    # os.fsdecode: a name that is not UTF-8 reads as the work-tree walk reads it.
    entries = {os.fsdecode(name): _Entry(*meta.decode("ascii").split()) for meta, _, name in (
        record.partition(b"\t") for record in filter(None, out.split(b"\0")))}
    # The .gitignore files of the tree (all small), by path.
    wanted = {path: e.oid for path, e in entries.items()
              if e.kind == "blob" and posixpath.basename(path) == ".gitignore"}
    contents = _read_blobs(top, list(wanted.values()), ref)
    support = {path: contents[oid] for path, oid in wanted.items()}
    return GitTree(top=top, prefix=prefix, ref=BaseRef(ref, commit),
                   blobs=_candidates(entries, prefix, support))


def _candidates(entries: Mapping[str, _Entry], prefix: str,
                support: Mapping[str, bytes]) -> dict[str, str]:
    """Path below ``prefix`` (relative to it) -> blob id, for the files the walk would count."""
    specs = {posixpath.dirname(path): gitignore_spec(
        data.decode("utf-8", errors="replace").splitlines(), f"{path} at the base: ")
        for path, data in support.items() if entries[path].mode != _SYMLINK}
    hidden: dict[str, bool] = {}  # folder -> whether it (or one above it) is ignored

    def folder_hidden(folder: str) -> bool:
        if folder == prefix or not folder:
            return False  # the walk starts at the config's folder: it is never ignored
        if folder not in hidden:
            hidden[folder] = folder_hidden(posixpath.dirname(folder)) or _ignored(
                folder, True, specs)
        return hidden[folder]

    start = f"{prefix}/" if prefix else ""
    # Not a submodule (a commit), nor a link (not followed, as the work tree's walk does not).
    return {path[len(start):]: entry.oid for path, entry in entries.items()
            if path.startswith(start) and entry.kind == "blob" and entry.mode != _SYMLINK
            and not (folder_hidden(posixpath.dirname(path)) or _ignored(path, False, specs))}


def _ignored(path: str, is_dir: bool, specs: Mapping[str, pathspec.GitIgnoreSpec]) -> bool:
    """As git decides: each .gitignore below its folder, outermost first, last match wins."""
    verdict: bool | None = None
    parts = path.split("/")
    for depth in range(len(parts)):
        spec = specs.get("/".join(parts[:depth]))
        if spec is not None:
            result = spec.check_file("/".join(parts[depth:]) + ("/" if is_dir else ""))
            verdict = verdict if result.include is None else result.include
    return bool(verdict)


def _read_blobs(top: Path, oids: list[str], ref: str) -> dict[str, bytes]:
    """Blob id -> content, for every id in ``oids``, in one ``git cat-file`` call."""
    unique = sorted(set(oids))
    if not unique:
        return {}
    out = _git(["cat-file", _long("batch")], top, ref, "read the files",
               "".join(f"{oid}\n" for oid in unique).encode("ascii")).stdout
    contents: dict[str, bytes] = {}
    at = 0
    for oid in unique:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        if len(header) != 3:  # "<oid> missing": a partial clone without the blob
            raise GitBaseError(f"{_given(ref)}: git cannot read blob {oid} (missing); fetch "
                               "the ref with its files", param="base")
        size = int(header[2])
        contents[oid] = out[end + 1:end + 1 + size]
        at = end + 1 + size + 1  # the content, then a newline
    return contents


def renames(tree: GitTree) -> dict[str, str]:
    """Files git sees moved since REF: path now -> path at REF (in the config's folder)."""
    fields = _git(["diff-index", "-M", "-z", tree.ref.commit], tree.top, tree.ref.ref,
                  "compare the work tree with it").stdout.split(b"\0")
    start = f"{tree.prefix}/" if tree.prefix else ""
    moved: dict[str, str] = {}
    i = 0
    while i < len(fields) - 1:  # ":<modes> <ids> <status>", then one path, or two (R, C)
        status = fields[i].decode("ascii", errors="replace").split()[-1]
        paths = 2 if status.startswith(("R", "C")) else 1
        old, new = os.fsdecode(fields[i + 1]), os.fsdecode(fields[i + paths])
        if status.startswith("R") and old.startswith(start) and new.startswith(start):
            moved[new[len(start):]] = old[len(start):]
        i += 1 + paths
    return moved


def baseline_at(measurement: Measurement, tree: GitTree, *,
                catalog: CatalogSource = None) -> Baseline:
    """The counts of every measured budget's files at ``tree``'s ref, counted as measured; a
    file renamed since is keyed by its path now and listed in ``renamed``."""
    from tokcost.budget.evaluate import _tokenizer, match_files
    from tokcost.counting import Inputs, count_paths
    config = measurement.config
    chosen = {m.budget.name: match_files(m.budget, sorted(tree.blobs))[0]
              for m in measurement.budgets}
    blobs = _read_blobs(tree.top, [tree.blobs[p] for files in chosen.values() for p in files],
                        tree.ref.ref)
    contents = {p: blobs[tree.blobs[p]] for files in chosen.values() for p in files}
    counts: dict[tuple[str, str], int | None] = {}
    moved: dict[str, str] | None = None  # git's renames, asked for once, when needed
    entries: dict[str, BaselineEntry] = {}
    for m in measurement.budgets:
        tok = _tokenizer(config, m.budget, m.model, catalog).load()  # built once per process
        for path in chosen[m.budget.name]:
            if (m.tokenizer, path) not in counts:
                # Counted as a file of the work tree is; a binary one is skipped (None).
                inputs = Inputs(paths="-", stdin=io.BytesIO(contents[path]), gitignore=False)
                report = count_paths(inputs, {m.tokenizer: tok})
                counts[m.tokenizer, path] = (report.files[0].tokens[m.tokenizer]
                                             if report.files else None)
        before = {path: n for path in chosen[m.budget.name]
                  if (n := counts[m.tokenizer, path]) is not None}
        now = {f.path for f in m.files}
        gone, new = sorted(set(before) - now), sorted(now - set(before))
        pairs: dict[str, str] = {}
        if gone and new:
            moved = renames(tree) if moved is None else moved
            pairs = _pair(gone, new, moved, contents, config.root)
        files = {p: n for p, n in before.items() if p not in pairs.values()}
        files.update({p: before[old] for p, old in pairs.items()})
        entries[m.budget.name] = BaselineEntry(m.tokenizer, files, pairs)
    return Baseline(entries)


def _pair(gone: list[str], new: list[str], moved: Mapping[str, str],
          contents: Mapping[str, bytes], root: Path) -> dict[str, str]:
    """New path -> old path of renamed files: git's renames, then identical contents."""
    pairs = {n: moved[n] for n in new if moved.get(n) in gone}
    by_hash: dict[str, str] = {}
    for old in (g for g in gone if g not in pairs.values()):
        by_hash.setdefault(hashlib.sha256(contents[old]).hexdigest(), old)
    for path in new:
        if path in pairs or not by_hash:
            continue
        try:
            digest = hashlib.sha256((root / path).read_bytes()).hexdigest()
        except OSError:
            continue
        if digest in by_hash:
            pairs[path] = by_hash.pop(digest)
    return dict(sorted(pairs.items()))
