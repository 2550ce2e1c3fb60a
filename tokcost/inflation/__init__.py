"""Token inflation: the same content, counted in many languages, scripts and formats.

``corpus`` reads the parallel texts (a folder, a list of files, the shipped corpora)
into groups, each with a *baseline* (``en`` for prose by default); ``languages`` names
languages and guesses scripts; ``measure`` counts every text with every tokenizer and
derives the premium, tokens(X) / tokens(baseline) on the same content, with the
per-token metrics and costs. The picture is drawn in ``tokcost.plotting.inflation``.

>>> en = Sample("en", "hello world, how are you?", kind="prose")
>>> de = Sample("de", "hallo Welt, wie geht es dir?", kind="prose")
>>> report = measure([Group("prose", "en", (en, de))], [Meter.of("tiktoken:cl100k_base")])
>>> report.groups[0].rows[1].results[0].premium is not None
True
"""

from __future__ import annotations

from tokcost.inflation.benchmarks import FloresSplit, load_flores, load_udhr
from tokcost.inflation.corpus import (
    DEFAULT_BASELINES,
    KINDS,
    SUFFIX_KINDS,
    CorpusKind,
    Group,
    Sample,
    builtin_dir,
    corpus_kinds,
    load_builtin,
    load_corpora,
    load_dir,
    load_files,
    load_index,
    paragraphs,
)
from tokcost.inflation.languages import (
    NO_SPACE_SCRIPTS,
    guess_script,
    language_name,
    language_script,
    script_name,
    whitespace_words,
)
from tokcost.inflation.measure import (
    GroupReport,
    Measurement,
    Meter,
    Report,
    Row,
    SentencePremiums,
    by_premium,
    measure,
    premium,
)

__all__ = [
    "DEFAULT_BASELINES",
    "KINDS",
    "NO_SPACE_SCRIPTS",
    "SUFFIX_KINDS",
    "CorpusKind",
    "FloresSplit",
    "Group",
    "GroupReport",
    "Measurement",
    "Meter",
    "Report",
    "Row",
    "Sample",
    "SentencePremiums",
    "builtin_dir",
    "by_premium",
    "corpus_kinds",
    "guess_script",
    "language_name",
    "language_script",
    "load_builtin",
    "load_corpora",
    "load_dir",
    "load_files",
    "load_flores",
    "load_index",
    "load_udhr",
    "measure",
    "paragraphs",
    "premium",
    "script_name",
    "whitespace_words",
]
