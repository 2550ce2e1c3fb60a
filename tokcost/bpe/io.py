"""BPE model files: a versioned JSON file (``"format": "tokcost-bpe"``) and a readable ``.vocab``
beside it, both or neither; tiktoken rank files read; exports to a tiktoken rank file (and
``PATH.json`` with the pattern and special tokens) or a Hugging Face ``tokenizer.json``, both with
tokcost's ids (how: docs/bpe.md)."""

from __future__ import annotations

import base64
import json
import unicodedata
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from typing import Any

from tokcost.adapters.base import special_tokens_by_id
from tokcost.adapters.tiktoken_enc import read_sidecar
from tokcost.atomic import ensure_writable, write_files_atomic
from tokcost.bpe.model import BPEError, BPEModel, to_byte_level
from tokcost.bpe.pretokenize import PatternName, resolve_pattern
from tokcost.errors import TokcostError, UsageError, arg
from tokcost.limits import loads_json, regex_problem

FORMAT = "tokcost-bpe"
VERSION = 1


def vocab_path(model_path: str | Path) -> Path:
    p = Path(model_path)
    return p.with_suffix(".vocab") if p.suffix else p.with_name(p.name + ".vocab")


def check_writable(paths: list[Path], force: bool) -> None:
    """Fail now unless every one of ``paths`` can be written (an existing one: with ``force``)."""
    for p in paths:
        if p.is_dir():
            raise UsageError(f"{p} is a directory; give a file name")
        if p.exists() and not force:
            raise UsageError(f"{p} already exists; pass {arg('force', True)} to overwrite it",
                             param="force")
        ensure_writable(p)


def render_token(data: bytes) -> str:
    """Bytes shown readably: UTF-8 where it decodes, ``\\xNN`` else, controls as ``\\uNNNN``."""
    return "".join(ch if unicodedata.category(ch)[0] != "C" or ch == "\\" else f"\\u{ord(ch):04x}"
                   for ch in data.decode("utf-8", "backslashreplace"))


def vocab_lines(model: BPEModel) -> Iterator[str]:
    """The ``.vocab`` companion: ``id<TAB>token[<TAB>left + right]``."""
    made_from = {new: (a, b) for a, b, new in reversed(model.merges)}  # the first merge wins
    yield f"# tokcost-bpe v{VERSION} vocabulary: id, token, [the merge that made it]\n"
    special = model.special_ids
    for i in sorted(model.decoder):
        token = render_token(model.decoder[i])
        if i in special:
            yield f"{i}\t{special[i]}\t(special)\n"
        elif i in made_from:
            left, right = (render_token(model.decoder[t]) for t in made_from[i])
            yield f"{i}\t[{token}]\t[{left}] + [{right}]\n"
        else:
            yield f"{i}\t[{token}]\n"


def save_model(model: BPEModel, path: str | Path, *, force: bool = False) -> tuple[Path, Path]:
    """Write the model and its ``.vocab``, both or neither."""
    mp = Path(path)
    if mp.suffix == ".vocab":
        raise UsageError(f"{mp}: name the model file something other than *.vocab, e.g. tok.bpe")
    vp = vocab_path(mp)
    check_writable([mp, vp], force)
    vocab = sorted(model.ranks.items(), key=lambda kv: kv[1])
    doc = {"format": FORMAT, "version": VERSION, "pattern_name": model.pattern_name,
           "pattern": model.pattern, "special_tokens": model.special_tokens,
           "merges": [list(m) for m in model.merges],
           "vocab": [[i, base64.b64encode(b).decode("ascii")] for b, i in vocab]}
    write_files_atomic({mp: json.dumps(doc, ensure_ascii=False) + "\n",
                        vp: "".join(vocab_lines(model))})
    return mp, vp


def load_model(path: str | Path) -> BPEModel:
    p = Path(path).expanduser()
    try:
        data = loads_json(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"BPE model not found: {p}; train one with `tokcost bpe train`") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BPEError(f"cannot read BPE model {p}: {exc}") from exc
    except ValueError:
        raise BPEError(f"{p} is not a tokcost BPE model (not JSON)") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BPEError(f'{p} is not a tokcost BPE model (no "format": "{FORMAT}")')
    version = data.get("version")
    if version != VERSION:
        raise BPEError(f"{p} is tokcost-bpe version {version}; this tokcost reads version "
                       f"{VERSION}, upgrade tokcost or retrain")
    try:
        ranks = {base64.b64decode(b64): int(i) for i, b64 in data["vocab"]}
        merges = tuple((int(a), int(b), int(c)) for a, b, c in data.get("merges", []))
        specials = {str(k): int(v) for k, v in data.get("special_tokens", {}).items()}
        pattern = str(data["pattern"])
        name = data.get("pattern_name")
    except (KeyError, TypeError, ValueError) as exc:
        raise BPEError(f"{p}: malformed tokcost BPE model ({exc}); retrain or re-export "
                       f"it") from exc
    ids = set(ranks.values())
    unknown = next((m for m in merges if not ids.issuperset(m)), None)
    problem = regex_problem(pattern) or (unknown and f"merge {list(unknown)} names a token id "
                                                     "the vocabulary does not have")
    if problem:
        raise BPEError(f"{p}: {problem}; retrain or re-export it")
    return BPEModel(pattern=pattern, ranks=ranks, special_tokens=specials, merges=merges,
                    pattern_name=name if isinstance(name, str) else None, source=str(p))


def load_tiktoken_file(path: str | Path, pattern: PatternName | str | None = None) -> BPEModel:
    """A tiktoken rank file; its pattern from ``pattern``, else from ``PATH.json`` beside it."""
    from tiktoken.load import load_tiktoken_bpe
    p = Path(path).expanduser()
    if not p.is_file():
        raise UsageError(f"tiktoken rank file not found: {p}")
    meta = p.with_name(p.name + ".json")
    side, specials = read_sidecar(meta) if meta.is_file() else (None, {})
    pattern = pattern or side
    if pattern is None:
        raise UsageError(f"{p}: no pre-tokenization regex known; pass {arg('pattern')} (gpt2, "
                         f"cl100k, o200k or a regex) or write {p.name}.json beside it, as "
                         f"export_tiktoken does", param="pattern")
    try:
        ranks = load_tiktoken_bpe(str(p))
    except Exception as exc:  # tiktoken raises ValueError/binascii errors on bad lines
        raise BPEError(f"{p} is not a tiktoken rank file ({type(exc).__name__}: {exc})") from exc
    regex, name = resolve_pattern(pattern)
    return BPEModel(pattern=regex, ranks=ranks, special_tokens=specials, pattern_name=name,
                    source=str(p))


def model_from_encoding(encoding: Any, source: str) -> BPEModel:
    """A ``BPEModel`` from a ``tiktoken.Encoding``, its special tokens by id, then text (a set
    there, and o200k_harmony gives two one id), so an export is the same on every run."""
    pat = getattr(encoding, "_pat_str", None)
    if not isinstance(pat, str):
        raise BPEError(f"{source}: cannot read the encoding's pre-tokenization pattern")
    regex, name = resolve_pattern(pat)
    specials = special_tokens_by_id(
        (s, encoding.encode_single_token(s)) for s in encoding.special_tokens_set)
    # tiktoken's own dict, when it has one, is copied in C, not asked 200k times.
    held, values = getattr(encoding, "_mergeable_ranks", None), encoding.token_byte_values()
    ranks = dict(held) if isinstance(held, dict) and len(held) == len(values) else {
        data: encoding.encode_single_token(data) for data in values}
    return BPEModel(pattern=regex, ranks=ranks, special_tokens=specials, pattern_name=name,
                    source=source)


def load_any(source: str | Path, *, pattern: PatternName | str | None = None) -> BPEModel:
    """A model from a tokcost file (``bpe:`` optional), a ``.tiktoken`` or ``tiktoken:NAME``."""
    source = str(source).removeprefix("bpe:")
    if source.startswith("tiktoken:"):
        arg = source.split(":", 1)[1]
        if arg.endswith(".tiktoken") or Path(arg).is_file():
            return load_tiktoken_file(arg, pattern)
        from tokcost.adapters.registry import get_tokenizer

        encoding = getattr(get_tokenizer(source), "encoding", None)
        if encoding is None:
            raise TokcostError(f"{source}: the tiktoken adapter exposes no encoding to read "
                               f"ranks from")
        return model_from_encoding(encoding, source)
    p = Path(source).expanduser()
    return load_tiktoken_file(p, pattern) if p.suffix == ".tiktoken" else load_model(p)


class ExportFormat(str, Enum):
    HF = "hf"
    TIKTOKEN = "tiktoken"


# An atom (\\p{..}, a \\d-style escape, a [class] or one character), {n,m}, then "+".
_POSSESSIVE_INTERVAL = r"(\\p\{\w+\}|\\[dswDSW]|\[(?:\\.|[^\]\\])*\]|[^\\()|])(\{\d+(?:,\d*)?\})\+"


def hf_pattern(pattern: str) -> str:
    """The regex for Oniguruma, which reads ``{1,3}+`` as "one or more": atomic groups."""
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
    # tiktoken.Encoding's own arguments: tiktoken.Encoding(**info, mergeable_ranks=...)
    info = {"name": p.stem, "pat_str": model.pattern, "special_tokens": model.special_tokens}
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
