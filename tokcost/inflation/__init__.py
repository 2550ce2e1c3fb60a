"""Token inflation: the same content in many languages and formats; ``corpus`` and ``benchmarks``
read it, ``measure`` derives the premium, ``view`` lays it out (``tokcost.compare`` chains them)."""

from tokcost.inflation.benchmarks import load_flores, load_udhr
from tokcost.inflation.corpus import (
    Corpus,
    CorpusKind,
    FloresSplit,
    Group,
    Sample,
    builtin_dir,
    corpus_kinds,
    load_builtin,
    load_dir,
    load_files,
    paragraphs,
)
from tokcost.inflation.languages import guess_script
from tokcost.inflation.measure import (
    GroupReport,
    Measurement,
    Meter,
    Report,
    Row,
    SentencePremiums,
    measure,
    premium,
)

__all__ = ["Corpus", "CorpusKind", "FloresSplit", "Group", "GroupReport", "Measurement", "Meter",
           "Report", "Row", "Sample", "SentencePremiums", "builtin_dir", "corpus_kinds",
           "guess_script", "load_builtin", "load_dir", "load_files", "load_flores", "load_udhr",
           "measure", "paragraphs", "premium"]
