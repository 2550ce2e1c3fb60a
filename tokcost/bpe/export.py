"""Export a BPE model to a tiktoken rank file and to a Hugging Face ``tokenizer.json``;
both encode exactly like tokcost's encoder (tests check the ids).

* tiktoken: ``base64(token) rank`` lines, and ``PATH.json`` beside it with the pattern
  and special tokens (which the format has no room for): both files or neither.
* Hugging Face: a BPE model with ``ignore_merges`` (a whole pre-token in the vocabulary
  is one token, as in tiktoken) and, for every token, one merge per way to cut it into
  two tokens, ordered by the token's rank (tiktoken's rule); the pre-tokenizer is
  ``Split(pattern, "isolated")`` + ``ByteLevel``. HF's Oniguruma reads ``\\p{N}{1,3}+``
  as "one or more", not possessive, so such intervals become atomic groups
  (``(?>\\p{N}{1,3})``), which mean the same in both engines.
"""

from __future__ import annotations

import base64
import json
from enum import Enum
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tokcost.atomic import write_files_atomic
from tokcost.bpe.io import check_writable
from tokcost.bpe.model import BPEModel, to_byte_level

if TYPE_CHECKING:
    import regex


class ExportFormat(str, Enum):
    """``hf``: a Hugging Face ``tokenizer.json``; ``tiktoken``: a rank file + ``PATH.json``."""

    HF = "hf"
    TIKTOKEN = "tiktoken"


# An atom (\\p{..}, a \\d-style escape, a [class] or one character), {n,m}, then "+".
_POSSESSIVE_INTERVAL = r"(\\p\{\w+\}|\\[dswDSW]|\[(?:\\.|[^\]\\])*\]|[^\\()|])(\{\d+(?:,\d*)?\})\+"


def hf_pattern(pattern: str) -> str:
    """The same regex for Oniguruma: possessive intervals become atomic groups.

    >>> hf_pattern(r"\\p{N}{1,3}+|\\s")
    '(?>\\\\p{N}{1,3})|\\\\s'
    """
    return _possessive_interval().sub(lambda m: f"(?>{m.group(1)}{m.group(2)})", pattern)


@lru_cache(maxsize=1)
def _possessive_interval() -> regex.Pattern[str]:
    import regex

    return regex.compile(_POSSESSIVE_INTERVAL)


def tiktoken_lines(model: BPEModel) -> str:
    return "".join(
        f"{base64.b64encode(b).decode('ascii')} {i}\n"
        for b, i in sorted(model.ranks.items(), key=lambda kv: kv[1])
    )


def export_paths(format: ExportFormat | str, path: str | Path) -> list[Path]:
    """The files an export to ``path`` writes, so they can be checked before the work.

    >>> [str(p) for p in export_paths("tiktoken", "tok.tiktoken")]
    ['tok.tiktoken', 'tok.tiktoken.json']
    """
    p = Path(path)
    if ExportFormat(format) is ExportFormat.TIKTOKEN:
        return [p, p.with_name(p.name + ".json")]
    return [p]


def export_tiktoken(model: BPEModel, path: str | Path, *, force: bool = False) -> list[Path]:
    """Write ``PATH`` (rank file) and ``PATH.json`` (pattern, special tokens): both or neither."""
    p, meta = export_paths(ExportFormat.TIKTOKEN, path)
    check_writable([p, meta], force)
    info = {"pattern": model.pattern_name or model.pattern,
            "special_tokens": model.special_tokens, "tokcost": "tokcost.bpe.export_tiktoken"}
    write_files_atomic({p: tiktoken_lines(model),
                        meta: json.dumps(info, indent=2, ensure_ascii=False) + "\n"})
    return [p, meta]


def hf_merges(model: BPEModel) -> list[tuple[int, int, int]]:
    """(token rank, left rank, right rank) for every cut of every token into two tokens."""
    ranks = model.ranks
    out: list[tuple[int, int, int]] = []
    for data, rank in ranks.items():
        for k in range(1, len(data)):
            left = ranks.get(data[:k])
            if left is None:
                continue
            right = ranks.get(data[k:])
            if right is not None:
                out.append((rank, left, right))
    out.sort()
    return out


#: HF's byte-level step, as pre-tokenizer (after the pattern's split) and as decoder.
_BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
               "use_regex": False}


def tokenizer_json(model: BPEModel) -> dict[str, Any]:
    """The ``tokenizer.json`` document for ``tokenizers.Tokenizer.from_str``."""
    decoder = {i: to_byte_level(b) for b, i in model.ranks.items()}
    vocab: dict[str, int] = {s: i for i, s in sorted(decoder.items())}
    for text, i in model.special_tokens.items():
        vocab.setdefault(text, i)
    added = [{"id": i, "content": text, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True}
             for text, i in sorted(model.special_tokens.items(), key=lambda kv: kv[1])]
    split = {"type": "Split", "pattern": {"Regex": hf_pattern(model.pattern)},
             "behavior": "Isolated", "invert": False}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [split, _BYTE_LEVEL]},
        "post_processor": None, "decoder": _BYTE_LEVEL,
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
            "ignore_merges": True, "vocab": vocab,
            "merges": [[decoder[a], decoder[b]] for _, a, b in hf_merges(model)],
        },
    }


def export_hf(model: BPEModel, path: str | Path, *, force: bool = False) -> list[Path]:
    """Write a Hugging Face ``tokenizer.json`` (atomically: a partial file never shows)."""
    p = Path(path)
    check_writable([p], force)
    write_files_atomic({p: json.dumps(tokenizer_json(model), ensure_ascii=False) + "\n"})
    return [p]
