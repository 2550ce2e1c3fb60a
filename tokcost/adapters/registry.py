"""Tokenizer specs (``FAMILY:ARGUMENT``) -> lazy constructors, named by module path as
tiktoken's registry names them (DESIGN §2); ``check_spec`` is the one judge of a spec."""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import cast

from tokcost.adapters.base import Tokenizer
from tokcost.errors import TokenizerNotFound, suggest

# family -> "module:function", which takes the part after the colon
FAMILIES: dict[str, str] = {
    "tiktoken": "tokcost.adapters.tiktoken_enc:load", "hf": "tokcost.adapters.hf:load",
    "sp": "tokcost.adapters.sp:load", "bpe": "tokcost.adapters.bpe:load",
    "tekken": "tokcost.adapters.tiktoken_enc:load_tekken"}

TIKTOKEN_NAMES = ("o200k_base", "o200k_harmony", "cl100k_base", "p50k_base", "p50k_edit",
                  "r50k_base", "gpt2")

DEFAULT_SPEC = "tiktoken:o200k_base"


def known_specs() -> list[str]:
    return [*(f"tiktoken:{n}" for n in TIKTOKEN_NAMES), "tiktoken:PATH.tiktoken",
            "hf:PATH/tokenizer.json", "hf:ORG/REPO", "sp:PATH.model", "tekken:PATH.json",
            "bpe:PATH", "model:ID"]


# Pattern names that stand for one encoding (a bare "o200k" never means o200k_harmony).
ENCODING_ALIASES: dict[str, str] = {"o200k": "o200k_base", "cl100k": "cl100k_base"}

MODEL_FAMILY = "model"  # model:ID, resolved through a catalog one layer up


def normalize_spec(spec: str) -> str:
    """The spec's canonical form, without judging it."""
    spec = spec.strip()
    family, sep, arg = spec.partition(":")
    if not sep:
        name = ENCODING_ALIASES.get(spec, spec)
        return f"tiktoken:{name}" if name in TIKTOKEN_NAMES else spec
    if family == "tiktoken" and arg in ENCODING_ALIASES:
        return f"tiktoken:{ENCODING_ALIASES[arg]}"
    return spec


def check_spec(spec: str, *, param: str | None = None) -> str:
    """The canonical form of a spec tokcost can load, or ``TokenizerNotFound`` saying why
    not (offline: a path or a model id is checked for form only)."""
    text = normalize_spec(spec)
    family, sep, arg = text.partition(":")
    names = list(TIKTOKEN_NAMES)
    known = f"use one of: {', '.join(known_specs())}"
    if not text:
        raise TokenizerNotFound(f"the tokenizer spec is empty; {known}", param=param)
    if not sep:
        hint = suggest(text, names, n=1) or suggest(text, [*FAMILIES, MODEL_FAMILY], n=1)
        raise TokenizerNotFound(f"unknown tokenizer spec '{text}'{hint}; {known}", param=param)
    if family != MODEL_FAMILY and family not in FAMILIES:
        hint = suggest(family, [*FAMILIES, MODEL_FAMILY], n=1)
        raise TokenizerNotFound(f"unknown tokenizer spec '{text}': no tokenizer family "
                                f"'{family}'{hint}; {known}", param=param)
    if not arg.strip():
        example = next(s for s in known_specs() if s.startswith(f"{family}:"))
        raise TokenizerNotFound(f"tokenizer spec '{text}' names nothing after '{family}:'; "
                                f"write e.g. {example}", param=param)
    if family == "tiktoken" and arg not in TIKTOKEN_NAMES:
        from tokcost.adapters.tiktoken_enc import is_rank_file
        if not is_rank_file(arg):
            raise TokenizerNotFound(f"unknown tiktoken encoding '{arg}'"
                                    f"{suggest(arg, names, n=1)}; known: {', '.join(names)}, "
                                    "or tiktoken:PATH.tiktoken", param=param)
    return text


def get_tokenizer(spec: str) -> Tokenizer:
    """Build (once per process) the tokenizer a spec names."""
    spec = check_spec(spec)
    return _get_tokenizer(spec, _file_key(spec))


def _file_key(spec: str) -> tuple[str, int, int] | None:
    """The file a spec names, as (absolute path, mtime, size): a relative ``bpe:tok.bpe``
    seen from another folder, or the same file rewritten, is another tokenizer."""
    from pathlib import Path

    try:
        stat = (path := Path(spec.partition(":")[2]).expanduser().resolve()).stat()
    except (OSError, ValueError, RuntimeError):
        return None  # an encoding name, a hub repo
    return str(path), stat.st_mtime_ns, stat.st_size


@lru_cache(maxsize=32)
def _get_tokenizer(spec: str, file: tuple[str, int, int] | None) -> Tokenizer:
    family, _, arg = spec.partition(":")
    if family == MODEL_FAMILY:
        # Adapters read no catalog: model ids resolve one layer up.
        raise TokenizerNotFound(f"'{spec}' names a catalog model; resolve it with "
                                "tokcost.resolve_tokenizers([spec], catalog=...)")
    module_name, func_name = FAMILIES[family].split(":")
    return cast(Tokenizer, getattr(importlib.import_module(module_name), func_name)(arg))

