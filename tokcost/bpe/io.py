"""Saving and loading BPE models: a versioned JSON file (``"format": "tokcost-bpe"``) and a
readable ``.vocab`` beside it, both or neither; and loading tiktoken rank files."""

from __future__ import annotations

import base64
import json
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tokcost.adapters.base import special_tokens_by_id
from tokcost.atomic import ensure_writable, write_files_atomic
from tokcost.bpe.model import BPEError, BPEModel
from tokcost.bpe.pretokenize import PatternName, resolve_pattern
from tokcost.errors import TokcostError, UsageError, arg

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
        data = json.loads(p.read_text(encoding="utf-8"))
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
    return BPEModel(pattern=pattern, ranks=ranks, special_tokens=specials, merges=merges,
                    pattern_name=name if isinstance(name, str) else None, source=str(p))


def load_tiktoken_file(path: str | Path, pattern: PatternName | str | None = None) -> BPEModel:
    """A tiktoken rank file; its pattern from ``pattern``, else from ``PATH.json`` beside it."""
    from tiktoken.load import load_tiktoken_bpe
    p = Path(path).expanduser()
    if not p.is_file():
        raise UsageError(f"tiktoken rank file not found: {p}")
    meta = p.with_name(p.name + ".json")
    side: str | None = None
    specials: dict[str, int] = {}
    if meta.is_file():
        try:
            info = json.loads(meta.read_text(encoding="utf-8"))
            specials = {str(k): int(v) for k, v in info.get("special_tokens", {}).items()}
            side = str(info["pattern"])
        except (ValueError, KeyError, TypeError, AttributeError, OSError) as exc:
            raise BPEError(f"{meta}: expected JSON with 'pattern' and 'special_tokens' "
                           f"({exc})") from exc
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

        tok = get_tokenizer(source)
        encoding = getattr(tok, "encoding", None)
        if encoding is None:
            raise TokcostError(f"{source}: the tiktoken adapter exposes no encoding to read "
                               f"ranks from")
        return model_from_encoding(encoding, source)
    p = Path(source).expanduser()
    if p.suffix == ".tiktoken":
        return load_tiktoken_file(p, pattern)
    return load_model(p)
