"""Corpora: groups of parallel texts of one kind (prose, code, data) read from a folder, a
list of files or the shipped corpora (the layouts: docs/compare.md)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from pathlib import Path
from typing import BinaryIO

from tokcost.counting import STDIN, STDIN_NAME, InputText, Skipped, invalid_utf8_note, load_input
from tokcost.errors import InputError, UsageError, arg
from tokcost.inflation.languages import guess_script, language_name, whitespace_words


class CorpusKind(str, Enum):
    """What a group of parallel texts holds: languages, programs or data formats."""

    PROSE = "prose"
    CODE = "code"
    DATA = "data"


class FloresSplit(str, Enum):
    """Which FLORES-200 sentences to read: dev, devtest, or both (Petrov et al.)."""

    DEV = "dev"
    DEVTEST = "devtest"
    BOTH = "both"


KINDS = tuple(k.value for k in CorpusKind)
DEFAULT_BASELINES = {"prose": "en", "code": "python", "data": "json"}

# File suffix -> (kind, code) for lists of files that are not <lang>.txt.
SUFFIX_KINDS = {suffix: (kind, code) for kind, codes in {
    "code": {".py": "python", ".js": "javascript", ".ts": "typescript", ".java": "java",
             ".go": "go", ".rs": "rust", ".c": "c", ".h": "c", ".cpp": "cpp", ".cs": "csharp",
             ".rb": "ruby", ".php": "php", ".swift": "swift", ".kt": "kotlin", ".sql": "sql",
             ".sh": "shell"},
    "data": {".json": "json", ".yaml": "yaml", ".yml": "yaml", ".csv": "csv", ".html": "html",
             ".md": "markdown", ".xml": "xml", ".toml": "toml"},
}.items() for suffix, code in codes.items()}

_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*\n")
STDIN_CODE = "stdin"  # the code of the sample read from standard input


def paragraphs(text: str) -> list[str]:
    """Blocks of text separated by blank lines."""
    return [p.strip() for p in _BLANK_LINE.split(text.replace("\r\n", "\n")) if p.strip()]


def corpus_kinds(kinds: Iterable[CorpusKind | str]) -> tuple[str, ...]:
    """Kind names, checked: ``["code", CorpusKind.DATA]`` -> ``("code", "data")``."""
    return tuple(_member(CorpusKind, kind, "kinds") for kind in kinds)


def _member(choices: type[Enum], value: object, param: str) -> str:
    """The value of the member of ``choices`` that ``value`` names (a UsageError if none)."""
    try:
        return str(choices(value).value)
    except ValueError:
        raise UsageError(f"unknown {arg(param, repr(str(value)))}; use one of "
                         f"{', '.join(str(c.value) for c in choices)}", param=param,
                         value=value) from None


@dataclass(frozen=True)
class Sample:
    """One text of a group: its code (``hi``, ``python``, ``json-min``) and content."""

    code: str
    text: str
    kind: str = "prose"
    name: str = ""
    script: str | None = None
    path: str | None = None
    whitespace_words: bool | None = None  # None: decide from the code
    invalid_utf8_bytes: int = 0  # bytes of invalid UTF-8 read as U+FFFD
    # The aligned sentences the text joins (FLORES-200), for per-sentence premiums.
    units: tuple[str, ...] | None = None

    @property
    def label(self) -> str:
        return self.name or (language_name(self.code) if self.kind == "prose" else self.code)

    @property
    def display_name(self) -> str:
        """'Hindi (hi)', but 'Python' rather than 'Python (python)'."""
        label = self.label
        return label if label.lower() == self.code.lower() else f"{label} ({self.code})"

    @property
    def has_words(self) -> bool:
        """Words are whitespace-delimited (not zh, ja, th, ...) and the text is prose."""
        own = self.whitespace_words
        return self.kind == "prose" and (whitespace_words(self.code) if own is None else own)


@dataclass(frozen=True)
class Group:
    """Parallel samples of one kind, compared against ``baseline`` (a sample code)."""

    kind: str
    baseline: str
    samples: tuple[Sample, ...]
    warnings: tuple[str, ...] = ()

    def sample(self, code: str) -> Sample | None:
        return next((s for s in self.samples if s.code == code), None)


@dataclass(frozen=True, kw_only=True)
class Corpus:
    """Which parallel texts: ``sources`` (a folder, or files, ``-``: ``stdin``; none: the shipped
    corpora), the ``baseline``, the ``kinds`` to keep (none: all), the FLORES ``split``."""

    sources: tuple[Path, ...] = ()
    builtin: bool = False  # the shipped corpora, said outright (the default without sources)
    baseline: str = "en"
    kinds: tuple[str, ...] = ()
    split: str = "both"
    stdin: BinaryIO | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        # One folder, not a sequence of its letters.
        given = (self.sources,) if isinstance(self.sources, (str, Path)) else self.sources
        object.__setattr__(self, "sources", tuple(Path(s) for s in given))
        object.__setattr__(self, "kinds", corpus_kinds(self.kinds))
        object.__setattr__(self, "split", _member(FloresSplit, self.split, "split"))
        if self.builtin and self.sources:
            raise UsageError(f"pass either {arg('builtin')} or folders/files, not both",
                             param="builtin")

    def load(self, skipped: list[Skipped] | None = None) -> list[Group]:
        """The groups the sources hold; binary files go to ``skipped`` (an error without it)."""
        sources, wanted, baseline = self.sources, self.kinds, self.baseline
        if not sources:
            return load_builtin(kinds=wanted, baseline=baseline)
        if len(sources) == 1 and str(sources[0]) != STDIN and sources[0].is_dir():
            return load_dir(sources[0], baseline=baseline, kinds=wanted, skipped=skipped,
                            split=self.split)
        groups = load_files(sources, baseline=baseline, stdin=self.stdin, skipped=skipped)
        return [g for g in groups if g.kind in wanted] if wanted else groups


def read_text_file(path: Path, skipped: list[Skipped] | None,
                   stdin: BinaryIO | None = None) -> InputText | Skipped:
    """One text under the input policy, BOM dropped; skipped into ``skipped``, else an error."""
    read = load_input(path, stdin=stdin)
    if isinstance(read, Skipped):
        if skipped is None:
            raise InputError(f"{read.note}; give a text file")
        skipped.append(read)
        return read
    return replace(read, text=read.text.removeprefix("\ufeff"))


def builtin_dir() -> Path:
    """The shipped corpora folder (inside the wheel, or at the top of a checkout)."""
    from tokcost.catalog.loader import shipped_path
    return shipped_path("corpora")


def load_index(folder: Path, *, kinds: Sequence[CorpusKind | str] | None = None,
               baseline: str | None = None, skipped: list[Skipped] | None = None) -> list[Group]:
    """Groups from ``folder/index.yaml`` (the layout of the shipped corpora)."""
    import yaml
    index_path = folder / "index.yaml"
    try:
        doc = yaml.safe_load(index_path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InputError(f"cannot read {index_path}: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), list):
        raise InputError(f"{index_path} has no 'files' list; see corpora/README.md")
    declared = doc.get("kinds") or {}
    wanted = list(corpus_kinds(kinds or ())) or [k for k in KINDS if k in declared] or list(KINDS)
    by_kind: dict[str, list[Sample]] = {k: [] for k in wanted}
    left_out: dict[str, dict[str, Skipped]] = {k: {} for k in wanted}
    for number, entry in enumerate(doc["files"], start=1):
        if not isinstance(entry, dict) or not entry.get("path") or not entry.get("code"):
            raise InputError(f"{index_path}: files entry {number} needs a 'path' and a 'code' "
                             "(see corpora/index.yaml)")
        kind = str(entry.get("kind", "prose"))
        if kind not in by_kind:
            continue
        path = folder / str(entry["path"])
        if not path.is_file():
            raise InputError(f"cannot read {path}: no such file (files entry {number} of "
                             f"{index_path})")
        read = read_text_file(path, skipped)
        if isinstance(read, Skipped):
            left_out[kind][str(entry["code"])] = read
            continue
        by_kind[kind].append(Sample(
            code=str(entry["code"]), text=read.text, kind=kind, name=str(entry.get("name", "")),
            script=entry.get("script"), path=str(path), invalid_utf8_bytes=read.invalid_bytes,
            whitespace_words=entry.get("whitespace_words")))
    groups = []
    for kind in (k for k in wanted if by_kind[k]):
        base = (declared.get(kind) or {}).get("baseline") or DEFAULT_BASELINES.get(kind, "")
        base = baseline if kind == "prose" and baseline else base
        groups.append(checked_group(kind, str(base), by_kind[kind], where=str(folder),
                                    left_out=left_out[kind]))
    if not groups:
        raise UsageError(f"no files of kind {', '.join(wanted)} in {index_path}; kinds are "
                         f"{', '.join(KINDS)}")
    return groups


def load_builtin(*, kinds: Sequence[CorpusKind | str] | None = None,
                 baseline: str | None = None) -> list[Group]:
    """The corpora tokcost ships: prose in 21 languages, code in 9, data in 8 formats."""
    folder = builtin_dir()
    if not (folder / "index.yaml").is_file():
        raise InputError(f"the built-in corpora are missing ({folder}); reinstall tokcost or "
                         "pass a folder")
    return load_index(folder, kinds=kinds, baseline=baseline)


def load_dir(folder: Path, *, baseline: str = "en", kinds: Sequence[CorpusKind | str] | None = None,
             skipped: list[Skipped] | None = None, split: str = "both") -> list[Group]:
    """A folder of ``<lang>.txt`` files, with an index.yaml, or a benchmark set."""
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder")
    if (folder / "index.yaml").is_file():
        return load_index(folder, kinds=kinds, baseline=baseline, skipped=skipped)
    from tokcost.inflation import benchmarks
    if benchmarks.is_flores(folder) or benchmarks.is_udhr(folder):
        if kinds and "prose" not in corpus_kinds(kinds):
            raise UsageError(f"{folder} holds prose only (a benchmark set); leave out "
                             f"{arg('kinds')}", param="kinds")
        if benchmarks.is_flores(folder):
            return [benchmarks.load_flores(folder, baseline=baseline, split=split, skipped=skipped)]
        return [benchmarks.load_udhr(folder, baseline=baseline, skipped=skipped)]
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix == ".txt")
    if not files:
        raise UsageError(f"no <lang>.txt files in {folder}; put one file per language there "
                         f"(en.txt, de.txt, ...) or pass files")
    return load_files(files, baseline=baseline, skipped=skipped)


def load_files(paths: Iterable[Path], *, baseline: str = "en", stdin: BinaryIO | None = None,
               skipped: list[Skipped] | None = None) -> list[Group]:
    """Files named ``<lang>.txt`` or by their format, ``-`` being ``stdin``; of two with one
    code (``a/en.txt``, ``b/en.txt``) the second is ``en@b``."""
    by_kind: dict[str, list[Sample]] = {}
    left_out: dict[str, dict[str, Skipped]] = {}
    for path in paths:
        # What a file holds, from its name: hi.txt is prose in hi, x.py is python code.
        kind, code = SUFFIX_KINDS.get(path.suffix.lower(), ("prose", path.stem))
        if str(path) == STDIN:
            kind, code = "prose", STDIN_CODE
        elif not path.exists():
            raise UsageError(f"{path} does not exist")
        elif path.is_dir():
            raise UsageError(f"{path} is a folder; pass it alone, or pass files")
        elif path.name.endswith(".min.json"):
            code = "json-min"
        read = read_text_file(path, skipped, stdin)
        if isinstance(read, Skipped):
            left_out.setdefault(kind, {})[code] = read
            continue
        by_kind.setdefault(kind, []).append(Sample(
            code=code, text=read.text, kind=kind,
            script=guess_script(read.text) if kind == "prose" else None,
            path=STDIN_NAME if str(path) == STDIN else str(path),
            invalid_utf8_bytes=read.invalid_bytes))
    groups = []
    for kind in KINDS:
        samples = by_kind.get(kind)
        if not samples:
            if kind == "prose" and baseline in left_out.get(kind, {}):  # say why it is missing
                checked_group(kind, baseline, [], where="the files given", left_out=left_out[kind])
            continue
        seen: set[str] = set()
        for i, s in enumerate(samples):
            if s.code in seen:  # a second en.txt: keep it apart as en@<its folder>
                samples[i] = replace(s, code=f"{s.code}@{Path(s.path or '').parent.name or i}")
            seen.add(samples[i].code)
        base = baseline if kind == "prose" else DEFAULT_BASELINES[kind]
        if kind != "prose" and base not in {s.code for s in samples}:
            base = samples[0].code  # code/data lists: compare with the first file given
        groups.append(checked_group(kind, base, samples, where="the files given",
                                    left_out=left_out.get(kind, {})))
    return groups


def checked_group(kind: str, baseline: str, samples: list[Sample], *, where: str,
    left_out: Mapping[str, Skipped] | None = None, parallel_paragraphs: bool = True) -> Group:
    """The group, its empty files dropped and its baseline required, with its warnings."""
    warnings = [invalid_utf8_note(s.path or s.code, s.invalid_utf8_bytes)
                for s in samples if s.invalid_utf8_bytes]
    warnings += [f"{s.path or s.code} is empty; skipped" for s in samples if not s.text.strip()]
    kept = [s for s in samples if s.text.strip()]
    codes = [s.code for s in kept]
    if baseline not in codes:
        found = ", ".join(codes) or "none"
        code = arg("baseline", "CODE")
        if left_out and baseline in left_out:
            raise InputError(f"the baseline '{baseline}' was skipped in {where} "
                             f"({left_out[baseline].note}); give it as a text file or pass "
                             f"{code} (found: {found})", param="baseline")
        if any(s.code == baseline for s in samples):
            raise InputError(f"the baseline '{baseline}' is empty in {where}; fill it or pass "
                             f"{code} (found: {found})", param="baseline")
        expected = f"{baseline}.txt" if kind == "prose" else f"a '{baseline}' file"
        if not parallel_paragraphs or any(s.units is not None for s in samples):
            expected = f"text in '{baseline}'"  # a benchmark set: its files are not <lang>.txt
        raise UsageError(f"no baseline {expected} in {where}; add it or pass {code} (found: "
                         f"{found})", param="baseline")
    if kind == "prose" and parallel_paragraphs and not any(s.units for s in kept):
        base = next(s for s in kept if s.code == baseline)
        n_base = len(paragraphs(base.text))
        warnings += [f"not parallel: {s.path or s.code} has {n} paragraphs, the baseline "
                     f"{base.path or baseline} has {n_base}; its premium compares different "
                     "content" for s in kept if (n := len(paragraphs(s.text))) != n_base]
    return Group(kind, baseline, tuple(kept), tuple(warnings))
