"""Tokenizer specs -> lazy constructors (DESIGN §2).

A spec is ``FAMILY:ARGUMENT``; each family's constructor is named by module path and
imported only when asked for (tiktoken's registry works the same way). A bare name
tiktoken knows (``o200k_base``), or a pattern name standing for one encoding
(``o200k``), is that encoding's ``tiktoken:`` spec. ``check_spec`` is the one judge of
a spec (``-t``, a catalog's ``tokenizer:``, ``get_tokenizer``), offline.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import TYPE_CHECKING

from tokcost.errors import TokenizerNotFound, suggest

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


# Pattern names (``bpe train --pattern``) that stand for exactly one encoding: the
# o200k pattern is also o200k_harmony's, but that one is a variant with other
# special tokens, never what a bare "o200k" means.
ENCODING_ALIASES: dict[str, str] = {"o200k": "o200k_base", "cl100k": "cl100k_base"}

MODEL_FAMILY = "model"  # model:ID, resolved through a catalog one layer up


def normalize_spec(spec: str) -> str:
    """The spec's canonical form, without judging it: ``o200k_base`` and ``o200k`` ->
    ``tiktoken:o200k_base``; ``tiktoken:cl100k`` -> ``tiktoken:cl100k_base``; other
    specs stripped and unchanged.

    >>> normalize_spec("o200k"), normalize_spec("tiktoken:cl100k"), normalize_spec(" hf:x ")
    ('tiktoken:o200k_base', 'tiktoken:cl100k_base', 'hf:x')
    """
    spec = spec.strip()
    family, sep, arg = spec.partition(":")
    if not sep:
        name = ENCODING_ALIASES.get(spec, spec)
        return f"tiktoken:{name}" if name in TIKTOKEN_NAMES else spec
    if family == "tiktoken" and arg in ENCODING_ALIASES:
        return f"tiktoken:{ENCODING_ALIASES[arg]}"
    return spec


def check_spec(spec: str, *, param: str | None = None) -> str:
    """The canonical form of a spec that names something tokcost can load, or
    ``TokenizerNotFound`` saying why not (with a "did you mean"); a path or a model id
    can only be checked for form here.

    >>> check_spec("cl100k")
    'tiktoken:cl100k_base'
    >>> try:
    ...     check_spec("tiktoken:o200k_bas")
    ... except TokenizerNotFound as exc:
    ...     print(str(exc).split(";")[0])
    unknown tiktoken encoding 'o200k_bas' (did you mean: o200k_base?)
    """
    text = normalize_spec(spec)
    family, sep, arg = text.partition(":")
    names = list(TIKTOKEN_NAMES)
    if not sep:
        if not text:
            raise TokenizerNotFound(
                f"the tokenizer spec is empty; use one of: {', '.join(known_specs())}", param=param
            )
        hint = suggest(text, names, n=1) or suggest(text, [*FAMILIES, MODEL_FAMILY], n=1)
        raise TokenizerNotFound(
            f"unknown tokenizer spec '{text}'{hint}; use one of: {', '.join(known_specs())}",
            param=param,
        )
    if family != MODEL_FAMILY and family not in FAMILIES:
        hint = suggest(family, [*FAMILIES, MODEL_FAMILY], n=1)
        raise TokenizerNotFound(
            f"unknown tokenizer spec '{text}': no tokenizer family '{family}'{hint}; "
            f"use one of: {', '.join(known_specs())}",
            param=param,
        )
    if not arg.strip():
        example = next(s for s in known_specs() if s.startswith(f"{family}:"))
        raise TokenizerNotFound(
            f"tokenizer spec '{text}' names nothing after '{family}:'; write e.g. {example}",
            param=param,
        )
    if family == "tiktoken" and arg not in TIKTOKEN_NAMES and not _is_rank_file(arg):
        raise TokenizerNotFound(
            f"unknown tiktoken encoding '{arg}'{suggest(arg, names, n=1)}; known: "
            f"{', '.join(names)}, or tiktoken:PATH.tiktoken",
            param=param,
        )
    return text


def _is_rank_file(arg: str) -> bool:
    """What ``tiktoken:`` reads as a file rather than an encoding name (its adapter's rule)."""
    from pathlib import Path

    return arg.endswith((".tiktoken", ".tiktoken.gz")) or "/" in arg or Path(arg).exists()


def get_tokenizer(spec: str) -> Tokenizer:
    """Build (once per process) the tokenizer a spec names.

    >>> get_tokenizer("tiktoken:cl100k_base").encode("hello world")
    [15339, 1917]
    """
    spec = check_spec(spec)
    return _get_tokenizer(spec, _file_key(spec))


def _file_key(spec: str) -> tuple[str, int, int] | None:
    """The file a spec names, as (absolute path, mtime, size): a relative ``bpe:tok.bpe``
    seen from another folder, or the same file rewritten, is another tokenizer."""
    from pathlib import Path

    try:
        path = Path(spec.partition(":")[2]).expanduser().resolve()
        stat = path.stat()
    except (OSError, ValueError, RuntimeError):
        return None  # an encoding name, a hub repo
    return str(path), stat.st_mtime_ns, stat.st_size


@lru_cache(maxsize=32)
def _get_tokenizer(spec: str, file: tuple[str, int, int] | None) -> Tokenizer:
    family, _, arg = spec.partition(":")
    if family == MODEL_FAMILY:
        # Adapters read no catalog: model ids resolve one layer up, with the caller's catalog.
        raise TokenizerNotFound(
            f"'{spec}' names a catalog model; resolve it with "
            "tokcost.resolve_tokenizers([spec], catalog=...)"
        )
    module_name, func_name = FAMILIES[family].split(":")
    constructor = getattr(importlib.import_module(module_name), func_name)
    tok: Tokenizer = constructor(arg)
    return tok

