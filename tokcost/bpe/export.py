"""Export a BPE model to a tiktoken rank file (and ``PATH.json`` with the pattern and special
tokens) or a Hugging Face ``tokenizer.json``, both with tokcost's ids (how: docs/bpe.md)."""

from __future__ import annotations

import base64
import json
from enum import Enum
from pathlib import Path

from tokcost.atomic import write_files_atomic
from tokcost.bpe.io import check_writable
from tokcost.bpe.model import BPEModel, to_byte_level


class ExportFormat(str, Enum):
    HF = "hf"
    TIKTOKEN = "tiktoken"


# An atom (\\p{..}, a \\d-style escape, a [class] or one character), {n,m}, then "+".
_POSSESSIVE_INTERVAL = r"(\\p\{\w+\}|\\[dswDSW]|\[(?:\\.|[^\]\\])*\]|[^\\()|])(\{\d+(?:,\d*)?\})\+"


def hf_pattern(pattern: str) -> str:
    """The regex for Oniguruma, which reads ``{1,3}+`` as "one or more": atomic groups.

    >>> hf_pattern(r"\\p{N}{1,3}+|\\s")
    '(?>\\\\p{N}{1,3})|\\\\s'
    """
    import regex
    return regex.sub(_POSSESSIVE_INTERVAL, lambda m: f"(?>{m.group(1)}{m.group(2)})", pattern)


def export_paths(format: ExportFormat | str, path: str | Path) -> list[Path]:
    """The files an export to ``path`` writes (``tok.tiktoken`` and ``tok.tiktoken.json``)."""
    p = Path(path)
    if ExportFormat(format) is ExportFormat.TIKTOKEN:
        return [p, p.with_name(p.name + ".json")]
    return [p]


def export_tiktoken(model: BPEModel, path: str | Path, *, force: bool = False) -> list[Path]:
    """Write ``PATH`` and ``PATH.json``, both or neither."""
    p, meta = export_paths(ExportFormat.TIKTOKEN, path)
    check_writable([p, meta], force)
    info = {"pattern": model.pattern_name or model.pattern,
            "special_tokens": model.special_tokens, "tokcost": "tokcost.bpe.export_tiktoken"}
    ranks = sorted(model.ranks.items(), key=lambda kv: kv[1])
    lines = "".join(f"{base64.b64encode(b).decode('ascii')} {i}\n" for b, i in ranks)
    write_files_atomic({p: lines, meta: json.dumps(info, indent=2, ensure_ascii=False) + "\n"})
    return [p, meta]


def hf_merges(model: BPEModel) -> list[tuple[int, int, int]]:
    """(token, left, right) ranks for every cut of every token into two, so HF merges by rank."""
    ranks = model.ranks
    cuts = ((rank, ranks.get(data[:k]), ranks.get(data[k:]))
            for data, rank in ranks.items() for k in range(1, len(data)))
    return sorted((rank, a, b) for rank, a, b in cuts if a is not None and b is not None)


#: HF's byte-level step, as pre-tokenizer (after the split) and as decoder.
_BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
               "use_regex": False}


def export_hf(model: BPEModel, path: str | Path, *, force: bool = False) -> list[Path]:
    """Write a Hugging Face ``tokenizer.json``, atomically."""
    p = Path(path)
    check_writable([p], force)
    decoder = {i: to_byte_level(b) for b, i in model.ranks.items()}
    vocab: dict[str, int] = {s: i for i, s in sorted(decoder.items())}
    for text, i in model.special_tokens.items():
        vocab.setdefault(text, i)
    added = [{"id": i, "content": text, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}
             for text, i in sorted(model.special_tokens.items(), key=lambda kv: kv[1])]
    split = {"type": "Split", "pattern": {"Regex": hf_pattern(model.pattern)},
             "behavior": "Isolated", "invert": False}
    doc = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
           "normalizer": None,
           "pre_tokenizer": {"type": "Sequence", "pretokenizers": [split, _BYTE_LEVEL]},
           "post_processor": None, "decoder": _BYTE_LEVEL, "model": {
               "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
               "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
               "ignore_merges": True, "vocab": vocab,
               "merges": [[decoder[a], decoder[b]] for _, a, b in hf_merges(model)]}}
    write_files_atomic({p: json.dumps(doc, ensure_ascii=False) + "\n"})
    return [p]
