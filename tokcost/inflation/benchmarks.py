"""Benchmark sets as distributed: FLORES-200 (aligned sentences, dev and devtest joined as
Petrov et al. 2023 measured them) and UDHR in Unicode (whole texts, a header to a ``---`` line,
BCP 47 tags in ``index.xml``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from tokcost.counting import InputText, Skipped
from tokcost.errors import InputError, UsageError, arg
from tokcost.inflation.corpus import FloresSplit, Group, Sample, checked_group, read_text_file
from tokcost.inflation.languages import _language, language_name, language_script, script_name

# FLORES-200 file stems: an ISO 639-3 code and an ISO 15924 script (eng_Latn, zho_Hant).
_FLORES = re.compile(r"^[a-z]{3}_[A-Z][a-z]{3}$")
_UDHR_FILE = re.compile(r"^udhr_(.+)\.txt$")
_SPLITS = ("dev", "devtest")


def _flores_files(folder: Path, split: str) -> list[Path]:
    return sorted(p for p in folder.glob(f"*.{split}") if _FLORES.match(p.stem) and p.is_file())


def is_flores(folder: Path) -> bool:
    """A FLORES-200 folder (``dev/`` and/or ``devtest/`` inside), or one split's folder."""
    return any(_flores_files(f, s) for s in _SPLITS for f in (folder / s, folder))


def is_udhr(folder: Path) -> bool:
    """A folder of UDHR in Unicode ``udhr_<id>.txt`` files."""
    return any(_UDHR_FILE.match(p.name) for p in folder.glob("udhr_*.txt"))


def match_baseline(baseline: str, codes: Sequence[str], *, where: str) -> str:
    """The code ``baseline`` names: itself, or the one of its language (``en``: ``eng_Latn``)."""
    wanted = None if baseline in codes else _language(baseline)
    if wanted is None:
        return baseline  # itself, or the group's check says that it is missing
    same = [code for code in codes if (found := _language(code)) is not None
            and found.language == wanted.language
            and (not wanted.script or language_script(code) == wanted.script)]
    if len(same) > 1:
        raise UsageError(f"{arg('baseline', baseline)} matches {', '.join(same)} in {where}; "
                         "give one of them", param="baseline", value=baseline)
    return same[0] if same else baseline


def load_flores(folder: Path, *, baseline: str = "en", split: FloresSplit | str = FloresSplit.BOTH,
                skipped: list[Skipped] | None = None) -> Group:
    """Every language of a FLORES-200 folder, its sentences of ``split`` in order."""
    chosen = FloresSplit(split)
    splits: tuple[str, ...] = _SPLITS if chosen is FloresSplit.BOTH else (chosen.value,)
    here = tuple(s for s in _SPLITS if _flores_files(folder, s))
    if chosen is FloresSplit.BOTH:  # in one split's folder, or beside only one: that split
        splits = here or tuple(s for s in _SPLITS if _flores_files(folder / s, s)) or _SPLITS
    files = {s: {p.stem: p for p in _flores_files(folder if s in here else folder / s, s)}
             for s in splits}
    codes = sorted(set().union(*(set(f) for f in files.values())))
    if not codes:
        example = folder / splits[0] / f"eng_Latn.{splits[0]}"
        raise UsageError(f"no FLORES-200 {'/'.join(splits)} files in {folder} (e.g. {example}); "
                         f"choose {arg('split', 'dev')} or devtest", param="split")
    samples: list[Sample] = []
    warnings: list[str] = []
    for code in codes:
        missing = [s for s in splits if code not in files[s]]
        if missing:
            warnings.append(f"{code}: no {'/'.join(missing)} file; left out")
            continue
        reads: list[InputText] = []
        for s in splits:
            read = read_text_file(files[s][code], skipped)
            if isinstance(read, Skipped):
                break
            reads.append(read)
        else:
            sentences = [line.strip() for read in reads
                         for line in read.text.replace("\r\n", "\n").split("\n") if line.strip()]
            script = language_script(code)
            samples.append(Sample(
                code=code, text=" ".join(sentences), kind="prose", name=language_name(code),
                script=script_name(script) if script else None, units=tuple(sentences),
                path=str(files[splits[0]][code]),
                invalid_utf8_bytes=sum(read.invalid_bytes for read in reads)))
    base = match_baseline(baseline, [s.code for s in samples], where=str(folder))
    group = checked_group("prose", base, samples, where=str(folder))
    n = len(next(s.units or () for s in group.samples if s.code == group.baseline))
    warnings += group.warnings
    warnings += [f"not parallel: {s.path or s.code} has {len(s.units)} sentences, the baseline "
                 f"has {n}; its per-sentence premiums are left out"
                 for s in group.samples if s.units is not None and len(s.units) != n]
    return Group(group.kind, group.baseline, group.samples, tuple(warnings))


def _udhr_tags(folder: Path) -> dict[str, str]:
    """File id -> BCP 47 tag from the folder's index.xml (empty without one)."""
    import xml.etree.ElementTree as ET
    index = folder / "index.xml"
    if not index.is_file():
        return {}
    try:
        root = ET.parse(index).getroot()
    except (OSError, ET.ParseError) as exc:
        raise InputError(f"cannot read {index}: {exc}; fix it or remove it") from None
    return {str(e.get("f")): str(e.get("bcp47")) for e in root.iter("udhr")
            if e.get("f") and e.get("bcp47") not in (None, "", "und")}


def load_udhr(folder: Path, *, baseline: str = "en", skipped: list[Skipped] | None = None) -> Group:
    """Every translation in a UDHR in Unicode ``data/txt`` folder, its header removed."""
    tags = _udhr_tags(folder)
    samples: list[Sample] = []
    for path in sorted(folder.glob("udhr_*.txt")):
        match = _UDHR_FILE.match(path.name)
        if match is None or not path.is_file():
            continue
        read = read_text_file(path, skipped)
        if isinstance(read, Skipped):
            continue
        # The header's first line names the translation after " - "; "---" ends the header.
        head, sep, body = read.text.partition("\n---\n")
        first = head.strip().splitlines()[0] if sep and head.strip() else ""
        header_name = first.partition(" - ")[2].strip() or None
        file_id = match.group(1)
        code = tags.get(file_id, file_id)
        named = language_name(code)
        script = language_script(code)
        samples.append(Sample(
            code=code if code not in {s.code for s in samples} else f"{code}@{file_id}",
            text=body if sep else read.text, kind="prose", path=str(path),
            name=header_name if named == code and header_name else named,
            script=script_name(script) if script else None, invalid_utf8_bytes=read.invalid_bytes))
    if not samples:
        raise UsageError(f"no udhr_<id>.txt files in {folder}")
    base = match_baseline(baseline, [s.code for s in samples], where=str(folder))
    return checked_group("prose", base, samples, where=str(folder), parallel_paragraphs=False)
