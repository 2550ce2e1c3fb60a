"""Which ``tokenizer.json`` pipelines count chunk by chunk exactly: those where every cut of
tokcost.counting's space rule (before U+0020 between two letters or two digits) is one that the
pipeline never joins text across. A pipeline not proven here counts whole texts.

Why a cut c is exact, step by step (huggingface/tokenizers, tokenizers/src/tokenizer/mod.rs
``encode_single_sequence``: added tokens, normalizer, pre-tokenizer, then the model on each
pre-token alone, so equal pre-tokens give equal ids; ``count`` adds no post-processor tokens):

- Normalizer: none, or NFC, NFD, NFKC, NFKD, Lowercase in a Sequence. U+0020 has combining
  class 0, composes with nothing before it and maps to itself, so each Unicode form of ``a + b``
  is the forms of ``a`` and ``b`` joined when ``b`` starts with it (UAX #15, "Stable Code
  Points"); Lowercase maps each character alone (normalizer.rs, ``NormalizedString::lowercase``).
  Neither makes the character before c whitespace (NFKC could, for a regex split: NFC at most).
- Regex splits (ByteLevel's GPT-2 regex, or one ``Split`` with a regex below, Isolated): in each,
  a space is inside a piece only as its first character or after whitespace, so the piece
  before c ends at c; the next match starts at c and depends on the text from c on (no
  look-behind, no anchors). Before c, only ``\\s+(?!\\S)`` could match differently once the text
  ends at c, and it matches whitespace, which the text before c does not end with.
- DeepSeek's three Splits: the first two match digit runs and CJK runs, never a space, with no
  look-around, so no match crosses c and each side splits alone as the whole did; the third is
  a regex split as above.
- Metaspace (split=true) and Whitespace/WhitespaceSplit start a piece at every space. Metaspace
  prepends ▁ to a split that does not start with one (metaspace.rs); text after c starts with a
  space, now ▁, so nothing is prepended; ByteLevel's add_prefix_space likewise (byte_level.rs).
- Later steps run on each piece alone, so equal pieces stay equal; Metaspace's "first" scheme
  looks at a piece's offset in the whole text, so it may not come later.
- Added tokens are matched on the text before all this (added_vocabulary.rs): a cut never falls
  inside one (tokcost.counting.cuts.Specials); lstrip/rstrip/single_word look past the token, so
  a tokenizer with one counts whole texts; one matched after normalizing must hold no space.

Not the punctuation cut: which characters are letters comes from Python's Unicode tables there
and Oniguruma's here; a letter one knows and the other does not joins a punctuation run (and NFC
may end a letter with a mark: U+0958 -> U+0915 U+093C, then U+093C and ``.`` are one piece).
"""

from __future__ import annotations

import json
from typing import Any

from tokcost.adapters.openai_encodings import PATTERNS
from tokcost.adapters.tiktoken_enc import TEKKEN_PATTERN

# ByteLevel's own regex (tokenizers/src/pre_tokenizers/byte_level.rs, ``RE``).
GPT2_REGEX = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
# Llama-3 (meta-llama/Meta-Llama-3-8B tokenizer.json; GLM-4, OLMo-2, Phi-4 too) and Qwen2
# (Qwen/Qwen2-7B tokenizer.json; transformers tokenization_qwen2.py PRETOKENIZE_REGEX).
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = LLAMA3_REGEX.replace(r"\p{N}{1,3}", r"\p{N}", 1)
# o200k as tiktoken spells it is also GPT-4o's and Llama-4's tokenizer.json regex.
REGEXES = frozenset({GPT2_REGEX, LLAMA3_REGEX, QWEN2_REGEX, TEKKEN_PATTERN, *PATTERNS.values()})
# deepseek-ai/DeepSeek-V3 tokenizer.json: three Splits in sequence (R1 and V4 the same).
DEEPSEEK_REGEXES = (
    r"\p{N}{1,3}", r"[一-龥\u3040-ゟ゠-ヿ]+",
    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"""
    r"""| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
_NORMALIZERS = frozenset({"NFC", "NFD", "NFKC", "NFKD", "Lowercase"})
_LATER = frozenset({"ByteLevel", "Split", "Digits", "Punctuation", "Whitespace",
                    "WhitespaceSplit", "Metaspace"})


def _steps(component: Any, key: str) -> list[dict[str, Any]]:
    """A normalizer's or pre-tokenizer's steps, Sequences flattened (None: no step)."""
    nodes: list[Any] = [json.loads(component.__getstate__())] if component is not None else []
    steps: list[dict[str, Any]] = []
    while nodes:
        node = nodes.pop(0)
        if isinstance(node, dict) and node.get("type") == "Sequence":
            nodes[:0] = node.get(key) or []
        elif isinstance(node, dict):
            steps.append(node)
        else:
            return [{"type": "?"}]  # not a shape tokenizers writes: unproven
    return steps


def _regex(step: dict[str, Any]) -> str | None:
    """An Isolated, not inverted Split's regex (CR, LF and U+3040 written as escapes, as most
    files do)."""
    regex = (step.get("pattern") or {}).get("Regex")
    if (step.get("type") != "Split" or step.get("behavior") != "Isolated" or step.get("invert")
            or not isinstance(regex, str)):
        return None
    return regex.replace("\r", r"\r").replace("\n", r"\n").replace("\u3040", r"\u3040")


def _first(steps: list[dict[str, Any]], norms: set[str]) -> int | None:
    """How many steps the pipeline's first split covers, or None: unproven."""
    first = steps[0]
    kind = first.get("type")
    regex_ok = norms <= {"NFC"}  # regex splits are argued under NFC at most
    if tuple(_regex(s) for s in steps[:3]) == DEEPSEEK_REGEXES:
        return 3 if regex_ok else None
    if (kind == "ByteLevel" and first.get("use_regex", True)) or _regex(first) in REGEXES:
        return 1 if regex_ok else None
    if (kind == "Metaspace" and first.get("split", True)) or kind in ("Whitespace",
                                                                      "WhitespaceSplit"):
        return 1
    return None


def streamable(tokenizer: Any) -> bool:
    """Whether ``tokenizer`` counts chunks cut at tokcost's space rule as the whole text."""
    norms = {str(s.get("type")) for s in _steps(tokenizer.normalizer, "normalizers")}
    steps = _steps(tokenizer.pre_tokenizer, "pretokenizers")
    used = _first(steps, norms) if steps and norms <= _NORMALIZERS else None
    if used is None:
        return False
    for later in steps[used:]:
        if later.get("type") not in _LATER or later.get("prepend_scheme") == "first":
            return False
    for token in tokenizer.get_added_tokens_decoder().values():
        if token.lstrip or token.rstrip or token.single_word:
            return False
        if norms and token.normalized and " " in tokenizer.normalizer.normalize_str(
                token.content)[1:]:
            return False
    return True
