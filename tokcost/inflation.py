"""Token inflation: the same content, counted in many languages, scripts and formats.

A *group* holds parallel texts: the same paragraphs in several languages (prose),
the same small programs in several programming languages (code), the same records in
several data formats (data). Each text is measured with one or more tokenizers, and
compared with the group's *baseline* (``en`` for prose by default).

The tokenization premium of language X (Petrov et al. 2023, "Language Model
Tokenizers Introduce Unfairness Between Languages") is, on parallel text::

    premium(X) = tokens(X) / tokens(baseline)

so a premium of 2.0 means the same meaning costs twice the tokens (and, at a
per-token price, twice the money) and fills the context window twice as fast.

>>> en = Sample("en", "hello world, how are you?", kind="prose")
>>> de = Sample("de", "hallo Welt, wie geht es dir?", kind="prose")
>>> report = measure([Group("prose", "en", (en, de))], [Meter.of("tiktoken:cl100k_base")])
>>> report.groups[0].rows[1].results[0].premium is not None
True
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokcost.errors import InputError, UsageError

if TYPE_CHECKING:
    from tokcost.adapters.base import Tokenizer
    from tokcost.catalog.schema import ModelEntry
    from tokcost.tokenizers import TokenizerChoice

KINDS = ("prose", "code", "data")
DEFAULT_BASELINES = {"prose": "en", "code": "python", "data": "json"}

# Writing systems that do not separate words with spaces: words/token is meaningless.
NO_WHITESPACE_WORDS = frozenset(
    {"zh", "ja", "th", "lo", "km", "my", "bo", "dz", "yue", "wuu", "zh-hans", "zh-hant"}
)

# Names for language codes found in a user's folder (the shipped corpora carry their
# own names in corpora/index.yaml). Unknown codes are allowed and shown as given.
LANGUAGE_NAMES = {
    "af": "Afrikaans", "am": "Amharic", "ar": "Arabic", "az": "Azerbaijani",
    "be": "Belarusian", "bg": "Bulgarian", "bn": "Bengali", "ca": "Catalan",
    "cs": "Czech", "cy": "Welsh", "da": "Danish", "de": "German", "el": "Greek",
    "en": "English", "eo": "Esperanto", "es": "Spanish", "et": "Estonian",
    "eu": "Basque", "fa": "Persian", "fi": "Finnish", "fr": "French", "ga": "Irish",
    "gl": "Galician", "gu": "Gujarati", "ha": "Hausa", "he": "Hebrew", "hi": "Hindi",
    "hr": "Croatian", "hu": "Hungarian", "hy": "Armenian", "id": "Indonesian",
    "is": "Icelandic", "it": "Italian", "ja": "Japanese", "ka": "Georgian",
    "kk": "Kazakh", "km": "Khmer", "kn": "Kannada", "ko": "Korean", "lo": "Lao",
    "lt": "Lithuanian", "lv": "Latvian", "mk": "Macedonian", "ml": "Malayalam",
    "mr": "Marathi", "ms": "Malay", "my": "Burmese", "ne": "Nepali", "nl": "Dutch",
    "no": "Norwegian", "pa": "Punjabi", "pl": "Polish", "pt": "Portuguese",
    "ro": "Romanian", "ru": "Russian", "si": "Sinhala", "sk": "Slovak",
    "sl": "Slovenian", "sq": "Albanian", "sr": "Serbian", "sv": "Swedish",
    "sw": "Swahili", "ta": "Tamil", "te": "Telugu", "th": "Thai", "tl": "Tagalog",
    "tr": "Turkish", "uk": "Ukrainian", "ur": "Urdu", "uz": "Uzbek",
    "vi": "Vietnamese", "yo": "Yoruba", "zh": "Chinese", "zu": "Zulu",
}

# File suffix -> (kind, code) for lists of files that are not <lang>.txt.
SUFFIX_KINDS = {
    ".py": ("code", "python"), ".js": ("code", "javascript"), ".ts": ("code", "typescript"),
    ".java": ("code", "java"), ".go": ("code", "go"), ".rs": ("code", "rust"),
    ".c": ("code", "c"), ".h": ("code", "c"), ".cpp": ("code", "cpp"), ".cs": ("code", "csharp"),
    ".rb": ("code", "ruby"), ".php": ("code", "php"), ".swift": ("code", "swift"),
    ".kt": ("code", "kotlin"), ".sql": ("code", "sql"), ".sh": ("code", "shell"),
    ".json": ("data", "json"), ".yaml": ("data", "yaml"), ".yml": ("data", "yaml"),
    ".csv": ("data", "csv"), ".html": ("data", "html"), ".md": ("data", "markdown"),
    ".xml": ("data", "xml"), ".toml": ("data", "toml"),
}

_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*\n")


def paragraphs(text: str) -> list[str]:
    """Blocks of text separated by blank lines.

    >>> paragraphs("one\\ntwo\\n\\nthree\\n")
    ['one\\ntwo', 'three']
    """
    return [p.strip() for p in _BLANK_LINE.split(text.replace("\r\n", "\n")) if p.strip()]


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

    @property
    def label(self) -> str:
        return self.name or LANGUAGE_NAMES.get(self.code.lower(), self.code)

    @property
    def has_words(self) -> bool:
        """Words are whitespace-delimited (not zh, ja, th, ...) and the text is prose."""
        if self.kind != "prose":
            return False
        if self.whitespace_words is not None:
            return self.whitespace_words
        return self.code.lower().split("-")[0] not in NO_WHITESPACE_WORDS


@dataclass(frozen=True)
class Group:
    """Parallel samples of one kind, compared against ``baseline`` (a sample code)."""

    kind: str
    baseline: str
    samples: tuple[Sample, ...]
    warnings: tuple[str, ...] = ()

    def sample(self, code: str) -> Sample | None:
        return next((s for s in self.samples if s.code == code), None)


@dataclass(frozen=True)
class Meter:
    """A tokenizer to measure with, and optionally the catalog model that prices it."""

    label: str
    spec: str
    tokenizer: Tokenizer
    exact: bool = True
    model: ModelEntry | None = None

    @classmethod
    def of(cls, spec: str, label: str | None = None) -> Meter:
        from tokcost.adapters.registry import get_tokenizer, normalize_spec

        spec = normalize_spec(spec)
        tok = get_tokenizer(spec)
        return cls(label or spec, spec, tok, exact=tok.exact)

    @classmethod
    def for_model(cls, entry: ModelEntry) -> Meter:
        from tokcost.tokenizers import model_choice

        return cls.from_choice(model_choice(entry))

    @classmethod
    def from_choice(cls, choice: TokenizerChoice) -> Meter:
        tok = choice.load()
        return cls(choice.label, choice.spec, tok, exact=tok.exact, model=choice.model)

    @property
    def priced(self) -> bool:
        return self.model is not None and self.model.pricing is not None


@dataclass(frozen=True)
class Result:
    """One sample measured with one meter."""

    meter: str
    tokens: int
    exact: bool
    bytes_per_token: float | None
    chars_per_token: float | None
    words_per_token: float | None
    tokens_per_word: float | None  # fertility
    tokens_per_line: float | None
    premium: float | None  # tokens / baseline tokens on the same content
    cost_usd: Decimal | None  # the sample sent once as input to the meter's model
    cost_ratio: float | None  # cost / the baseline's cost on the same model


@dataclass(frozen=True)
class Row:
    sample: Sample
    bytes: int
    chars: int
    words: int | None
    lines: int
    paragraphs: int
    results: tuple[Result, ...]

    @property
    def code(self) -> str:
        return self.sample.code

    def result(self, meter: str) -> Result:
        return next(r for r in self.results if r.meter == meter)


@dataclass(frozen=True)
class GroupReport:
    kind: str
    baseline: str
    rows: tuple[Row, ...]  # sorted by premium on the first meter, largest first
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Report:
    meters: tuple[Meter, ...]
    groups: tuple[GroupReport, ...]
    warnings: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """The ``--json`` document (keys documented in the README)."""
        return {
            "tokenizers": [
                {
                    "label": m.label,
                    "spec": m.spec,
                    "exact": m.exact,
                    "model": m.model.id if m.model else None,
                    "priced": m.priced,
                }
                for m in self.meters
            ],
            "groups": [
                {
                    "kind": g.kind,
                    "baseline": g.baseline,
                    "warnings": list(g.warnings),
                    "samples": [_row_dict(row) for row in g.rows],
                }
                for g in self.groups
            ],
            "warnings": list(self.warnings),
        }


def _round(x: float | None, digits: int = 4) -> float | None:
    return None if x is None else round(x, digits)


def _row_dict(row: Row) -> dict[str, Any]:
    s = row.sample
    return {
        "code": s.code,
        "name": s.label,
        "script": s.script,
        "kind": s.kind,
        "path": s.path,
        "bytes": row.bytes,
        "chars": row.chars,
        "words": row.words,
        "lines": row.lines,
        "paragraphs": row.paragraphs,
        "results": [
            {
                "tokenizer": r.meter,
                "tokens": r.tokens,
                "exact": r.exact,
                "bytes_per_token": _round(r.bytes_per_token),
                "chars_per_token": _round(r.chars_per_token),
                "words_per_token": _round(r.words_per_token),
                "tokens_per_word": _round(r.tokens_per_word),
                "tokens_per_line": _round(r.tokens_per_line),
                "premium": _round(r.premium),
                "cost_usd": None if r.cost_usd is None else str(r.cost_usd),
                "cost_ratio": _round(r.cost_ratio),
            }
            for r in row.results
        ],
    }


# --------------------------------------------------------------------------- loading


def _read(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text; convert it (e.g. iconv -t UTF-8)") from None


def builtin_dir() -> Path:
    """The shipped corpora folder (inside the wheel, or at the top of a checkout)."""
    from tokcost.resources import shipped_path

    return shipped_path("corpora")


def load_index(folder: Path, *, kinds: Sequence[str] | None = None,
               baseline: str | None = None) -> list[Group]:
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
    wanted = list(kinds) if kinds else [k for k in KINDS if k in declared] or list(KINDS)
    by_kind: dict[str, list[Sample]] = {k: [] for k in wanted}
    for number, entry in enumerate(doc["files"], start=1):
        if not isinstance(entry, dict) or not entry.get("path") or not entry.get("code"):
            raise InputError(
                f"{index_path}: files entry {number} needs a 'path' and a 'code' "
                f"(see corpora/index.yaml)"
            )
        kind = str(entry.get("kind", "prose"))
        if kind not in by_kind:
            continue
        path = folder / str(entry["path"])
        by_kind[kind].append(
            Sample(
                code=str(entry["code"]),
                text=_read(path),
                kind=kind,
                name=str(entry.get("name", "")),
                script=entry.get("script"),
                path=str(path),
                whitespace_words=entry.get("whitespace_words"),
            )
        )
    groups = []
    for kind in wanted:
        if not by_kind[kind]:
            continue
        base = (declared.get(kind) or {}).get("baseline") or DEFAULT_BASELINES.get(kind, "")
        if kind == "prose" and baseline:
            base = baseline
        groups.append(_checked_group(kind, str(base), by_kind[kind], where=str(folder)))
    if not groups:
        raise UsageError(
            f"no files of kind {', '.join(wanted)} in {index_path}; kinds are {', '.join(KINDS)}"
        )
    return groups


def load_builtin(*, kinds: Sequence[str] | None = None, baseline: str | None = None) -> list[Group]:
    """The corpora tokcost ships: prose in 21 languages, code in 9, data in 8 formats."""
    folder = builtin_dir()
    if not (folder / "index.yaml").is_file():
        raise InputError(
            f"the built-in corpora are missing ({folder}); reinstall tokcost or pass a folder"
        )
    return load_index(folder, kinds=kinds, baseline=baseline)


def load_dir(
    folder: Path, *, baseline: str = "en", kinds: Sequence[str] | None = None
) -> list[Group]:
    """A folder of parallel ``<lang>.txt`` files (or a folder with an index.yaml)."""
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder")
    if (folder / "index.yaml").is_file():
        return load_index(folder, kinds=kinds, baseline=baseline)
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix == ".txt")
    if not files:
        raise UsageError(
            f"no <lang>.txt files in {folder}; put one file per language there "
            f"(en.txt, de.txt, ...) or pass files"
        )
    return load_files(files, baseline=baseline)


_SCRIPT_NAMES = {"CJK": "Han", "HIRAGANA": "Kana", "KATAKANA": "Kana"}


def guess_script(text: str, *, sample: int = 4000) -> str | None:
    """The writing system most letters belong to, from their Unicode names.

    >>> guess_script("Привет, мир"), guess_script("東京は晴れです"), guess_script("123")
    ('Cyrillic', 'Han+Kana', None)
    """
    import unicodedata
    from collections import Counter

    counts: Counter[str] = Counter()
    for ch in text[:sample]:
        if ch.isalpha():
            word = unicodedata.name(ch, "UNKNOWN").split(" ")[0]
            counts[_SCRIPT_NAMES.get(word, word.title())] += 1
    if not counts:
        return None
    total = sum(counts.values())
    if counts["Kana"] > 0.1 * total and counts["Han"] > 0.1 * total:
        return "Han+Kana"
    return counts.most_common(1)[0][0]


def _sample_for(path: Path) -> Sample:
    suffix = path.suffix.lower()
    if suffix in SUFFIX_KINDS:
        kind, code = SUFFIX_KINDS[suffix]
        if path.name.endswith(".min.json"):
            code = "json-min"
    else:
        kind, code = "prose", path.stem
    text = _read(path)
    script = guess_script(text) if kind == "prose" else None
    return Sample(code=code, text=text, kind=kind, script=script, path=str(path))


def _renamed(sample: Sample, code: str) -> Sample:
    return Sample(code, sample.text, sample.kind, sample.name, sample.script, sample.path,
                  sample.whitespace_words)


def load_files(paths: Iterable[Path], *, baseline: str = "en") -> list[Group]:
    """Files named ``<lang>.txt`` (prose) or by their format (``.py``, ``.json``, ...).

    Two files with the same code (``a/en.txt`` and ``b/en.txt``) are kept apart: the
    second is shown as ``en@b``.
    """
    by_kind: dict[str, list[Sample]] = {}
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path} does not exist")
        if path.is_dir():
            raise UsageError(f"{path} is a folder; pass it alone, or pass files")
        sample = _sample_for(path)
        by_kind.setdefault(sample.kind, []).append(sample)
    groups = []
    for kind in KINDS:
        samples = by_kind.get(kind)
        if not samples:
            continue
        seen: set[str] = set()
        for i, s in enumerate(samples):
            if s.code in seen:  # a second en.txt: keep it apart as en@<its folder>
                parent = Path(s.path).parent.name if s.path else str(i)
                samples[i] = _renamed(s, f"{s.code}@{parent or i}")
            seen.add(samples[i].code)
        base = baseline if kind == "prose" else DEFAULT_BASELINES[kind]
        if kind != "prose" and base not in {s.code for s in samples}:
            base = samples[0].code  # code/data lists: compare with the first file given
        groups.append(_checked_group(kind, base, samples, where="the files given"))
    return groups


def _checked_group(kind: str, baseline: str, samples: list[Sample], *, where: str) -> Group:
    """Drop empty files (with a warning), require the baseline, warn on misalignment."""
    warnings: list[str] = []
    kept = []
    for s in samples:
        if not s.text.strip():
            warnings.append(f"{s.path or s.code} is empty; skipped")
        else:
            kept.append(s)
    codes = [s.code for s in kept]
    if baseline not in codes:
        empty = any(s.code == baseline for s in samples)
        found = ", ".join(codes) or "none"
        if empty:
            raise InputError(f"the baseline '{baseline}' is empty in {where}; fill it or pass "
                             f"--baseline CODE (found: {found})")
        expected = f"{baseline}.txt" if kind == "prose" else f"a '{baseline}' file"
        raise UsageError(
            f"no baseline {expected} in {where}; add it or pass --baseline CODE "
            f"(found: {found})"
        )
    if kind == "prose":
        base = next(s for s in kept if s.code == baseline)
        n_base = len(paragraphs(base.text))
        for s in kept:
            n = len(paragraphs(s.text))
            if n != n_base:
                warnings.append(
                    f"not parallel: {s.path or s.code} has {n} paragraphs, the baseline "
                    f"{base.path or baseline} has {n_base}; its premium compares different content"
                )
    return Group(kind, baseline, tuple(kept), tuple(warnings))


# ------------------------------------------------------------------------- measuring


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def _cost(meter: Meter, tokens: int) -> Decimal | None:
    if not meter.priced or meter.model is None:
        return None
    from tokcost.pricing import estimate_cost

    return estimate_cost(meter.model, input_tokens=tokens).total


def measure(
    groups: Sequence[Group],
    meters: Sequence[Meter],
    *,
    on_progress: Callable[[int, int], None] | None = None,
) -> Report:
    """Count every sample with every meter and derive the per-language metrics.

    ``on_progress(done, total)`` is called after each count (the CLI draws a bar).
    """
    if not meters:
        raise UsageError("no tokenizer to compare with; pass -t SPEC or -m MODEL")
    total = sum(len(g.samples) for g in groups) * len(meters)
    done = 0
    counts: dict[tuple[int, str, str], int] = {}
    seen: dict[tuple[int, int, str], int] = {}  # -t o200k_base -m gpt-4o: count once
    for gi, group in enumerate(groups):
        for sample in group.samples:
            for meter in meters:
                key = (id(meter.tokenizer), gi, sample.code)
                if key not in seen:
                    seen[key] = meter.tokenizer.count(sample.text)
                counts[gi, sample.code, meter.label] = seen[key]
                done += 1
                if on_progress:
                    on_progress(done, total)
    reports = []
    for gi, group in enumerate(groups):
        rows = []
        for sample in group.samples:
            n_bytes = len(sample.text.encode("utf-8"))
            n_chars = len(sample.text)
            words = len(sample.text.split()) if sample.has_words else None
            lines = sum(1 for line in sample.text.splitlines() if line.strip())
            results = []
            for meter in meters:
                tokens = counts[gi, sample.code, meter.label]
                base_tokens = counts[gi, group.baseline, meter.label]
                cost = _cost(meter, tokens)
                base_cost = _cost(meter, base_tokens)
                results.append(
                    Result(
                        meter=meter.label,
                        tokens=tokens,
                        exact=meter.exact,
                        bytes_per_token=_ratio(n_bytes, tokens),
                        chars_per_token=_ratio(n_chars, tokens),
                        words_per_token=None if words is None else _ratio(words, tokens),
                        tokens_per_word=None if words is None else _ratio(tokens, words),
                        tokens_per_line=_ratio(tokens, lines) if sample.kind != "prose" else None,
                        premium=_ratio(tokens, base_tokens),
                        cost_usd=cost,
                        cost_ratio=(
                            float(cost / base_cost) if cost is not None and base_cost else None
                        ),
                    )
                )
            rows.append(
                Row(sample, n_bytes, n_chars, words, lines, len(paragraphs(sample.text)),
                    tuple(results))
            )
        first = meters[0].label
        rows.sort(key=lambda r: (-(r.result(first).premium or 0.0), r.code))
        reports.append(GroupReport(group.kind, group.baseline, tuple(rows), group.warnings))
    warnings = tuple(w for g in groups for w in g.warnings)
    return Report(tuple(meters), tuple(reports), warnings)


def premium(tokens: int, baseline_tokens: int) -> float:
    """Petrov et al.'s tokenization premium: ``tokens / baseline_tokens``.

    >>> premium(410, 100)
    4.1
    """
    if baseline_tokens <= 0:
        raise UsageError("the baseline has no tokens; a premium needs a non-empty baseline")
    return tokens / baseline_tokens


# ---------------------------------------------------------------------------- picture


def display_name(sample: Sample) -> str:
    """'Hindi (hi)', but 'Python' rather than 'Python (python)'."""
    label = sample.label
    return label if label.lower() == sample.code.lower() else f"{label} ({sample.code})"


def plot_premiums(report: Report, path: Path, *, force: bool = False) -> None:
    """Draw the premium of every sample, one horizontal bar per tokenizer, to PNG/SVG.

    matplotlib is imported here only (``pip install 'tokcost[plot]'``). The file is
    written atomically: a temporary file in the same folder, then a rename.
    """

    from tokcost.plotting import check_plot_path, pyplot, save_figure

    check_plot_path(path, force=force)
    plt = pyplot()

    groups = [g for g in report.groups if g.rows]
    meters = [m.label for m in report.meters]
    heights = [max(2.0, 0.24 * len(g.rows) * max(1, len(meters)) ** 0.5 + 1.0) for g in groups]
    fig, axes = plt.subplots(
        len(groups), 1, figsize=(9, sum(heights)), dpi=130, squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )
    bar = 0.8 / len(meters)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, group in zip((a[0] for a in axes), groups, strict=True):
        rows = list(reversed(group.rows))  # largest premium at the top
        for mi, meter in enumerate(meters):
            offset = ((len(meters) - 1) / 2 - mi) * bar  # first tokenizer on top
            ys = [i + offset for i in range(len(rows))]
            values = [r.result(meter).premium or 0.0 for r in rows]
            ax.barh(ys, values, height=bar * 0.92, color=colors[mi % len(colors)], label=meter)
            if len(meters) <= 3:
                for y, v in zip(ys, values, strict=True):
                    ax.text(v, y, f" {v:.2f}", va="center", fontsize=6 if len(meters) > 1 else 7)
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([display_name(r.sample) for r in rows], fontsize=8)
        ax.axvline(1.0, color="black", linewidth=0.8, linestyle="--")
        ax.set_xlim(0, max((r.result(m).premium or 0.0) for r in rows for m in meters) * 1.12)
        ax.set_ylim(-0.6, len(rows) - 0.4)
        ax.grid(axis="x", linewidth=0.4, alpha=0.5)
        ax.set_axisbelow(True)
        ax.set_title(f"{group.kind}: tokens relative to {group.baseline} (premium, lower is "
                     f"cheaper)", fontsize=10)
        ax.set_xlabel("premium = tokens(X) / tokens(baseline) on the same content", fontsize=8)
        if len(meters) > 1:
            ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    save_figure(fig, path)
