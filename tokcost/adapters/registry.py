"""Tokenizer specs -> lazy constructors (DESIGN §2).

A spec is ``FAMILY:ARGUMENT``. Each family maps to a constructor named by module
path, imported only when that family is asked for, so ``import tokcost`` stays
light (tiktoken's registry works the same way). A bare name that tiktoken knows
(``o200k_base``) is accepted as ``tiktoken:o200k_base``.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import TYPE_CHECKING

from tokcost.errors import TokenizerNotFound

if TYPE_CHECKING:
    from tokcost.adapters.base import Tokenizer

# family -> "module:function"; the function takes the part after the colon.
FAMILIES: dict[str, str] = {
    "tiktoken": "tokcost.adapters.tiktoken_enc:load",
    "hf": "tokcost.adapters.hf:load",
    "sp": "tokcost.adapters.sp:load",
    "bpe": "tokcost.adapters.bpe:load",
    "tekken": "tokcost.adapters.tekken:load",
}

TIKTOKEN_NAMES = (
    "o200k_base",
    "o200k_harmony",
    "cl100k_base",
    "p50k_base",
    "p50k_edit",
    "r50k_base",
    "gpt2",
)

DEFAULT_SPEC = "tiktoken:o200k_base"


def known_specs() -> list[str]:
    """Examples of every family, for error messages and ``--help``."""
    return [f"tiktoken:{n}" for n in TIKTOKEN_NAMES] + [
        "tiktoken:PATH.tiktoken",
        "hf:PATH/tokenizer.json",
        "hf:ORG/REPO",
        "sp:PATH.model",
        "tekken:PATH.json",
        "bpe:PATH",
        "model:ID",
    ]


def normalize_spec(spec: str) -> str:
    """``o200k_base`` -> ``tiktoken:o200k_base``; other specs unchanged."""
    spec = spec.strip()
    if ":" not in spec and spec in TIKTOKEN_NAMES:
        return f"tiktoken:{spec}"
    return spec


def get_tokenizer(spec: str) -> Tokenizer:
    """Build (once per process) the tokenizer a spec names.

    >>> get_tokenizer("tiktoken:cl100k_base").encode("hello world")
    [15339, 1917]
    """
    return _get_tokenizer(normalize_spec(spec))


@lru_cache(maxsize=32)
def _get_tokenizer(spec: str) -> Tokenizer:
    family, sep, arg = spec.partition(":")
    if family == "model" and sep:
        # Adapters read no catalog: model ids resolve one layer up, with the caller's catalog.
        raise TokenizerNotFound(
            f"'{spec}' names a catalog model; resolve it with "
            "tokcost.resolve_tokenizers([spec], catalog=...)"
        )
    if not sep or family not in FAMILIES or not arg:
        raise TokenizerNotFound(
            f"unknown tokenizer spec '{spec}'; use one of: {', '.join(known_specs())}"
        )
    module_name, func_name = FAMILIES[family].split(":")
    constructor = getattr(importlib.import_module(module_name), func_name)
    tok: Tokenizer = constructor(arg)
    return tok

