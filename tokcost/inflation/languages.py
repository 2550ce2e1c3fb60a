"""Languages and scripts: names for language codes (CLDR's, through ``langcodes``), which
writing systems separate words with spaces, and the script a text is written in."""

from __future__ import annotations

import functools
from typing import Any

# Scripts without spaces between words (ISO 15924), where words/token means nothing.
NO_SPACE_SCRIPTS = frozenset(
    {"Hani", "Hans", "Hant", "Hira", "Kana", "Jpan", "Thai", "Laoo", "Khmr", "Mymr", "Tibt"})
# Unicode name prefixes that are not the script's usual name.
_SCRIPT_NAMES = {"CJK": "Han", "HIRAGANA": "Kana", "KATAKANA": "Kana"}


@functools.lru_cache(maxsize=4096)
def _language(code: str) -> Any | None:
    """The langcodes ``Language`` a code names (``eng_Latn``, ``zh-Hant``), else None."""
    import langcodes  # imported on first use: its name data takes ~0.1 s to load
    try:
        found = langcodes.Language.get(code.replace("_", "-"))
    except (ValueError, LookupError):
        return None
    return found if found.is_valid() and found.language else None


def language_name(code: str) -> str:
    """The English name (CLDR's) of the language a code names, else the code itself."""
    found = _language(code)
    if found is None:
        return code
    # A script every FLORES code states (eng_Latn) is named only where not the default.
    if found.script:
        bare = _language(found.language)
        if bare is not None and found.script == bare.maximize().script:
            found = found.update_dict({"script": None})
    name = str(found.display_name())
    # Private-use codes (qaa-qtz) are valid but nameless: show them as given.
    return code if name.startswith("Unknown language") else name


def language_script(code: str) -> str | None:
    """The ISO 15924 script a code states, else its language's usual one, else None."""
    found = _language(code)
    script = None if found is None else found.script or found.maximize().script
    return str(script) if script else None


def script_name(script: str) -> str:
    """The English name of an ISO 15924 script code (``Deva`` -> ``Devanagari``)."""
    import langcodes
    if script in ("Hans", "Hant"):  # CLDR's short names are "Simplified", "Traditional"
        return f"{'Simplified' if script == 'Hans' else 'Traditional'} Han"
    try:
        return str(langcodes.Language.make(script=script).script_name())
    except (ValueError, LookupError):
        return script


def whitespace_words(code: str) -> bool:
    """Whether a language's words are separated by spaces (not Chinese, Japanese, Thai...)."""
    return language_script(code) not in NO_SPACE_SCRIPTS


def guess_script(text: str, *, sample: int = 4000) -> str | None:
    """The script most letters belong to, by Unicode name (``Han+Kana``: Japanese mixes them)."""
    import unicodedata
    from collections import Counter
    words = (unicodedata.name(ch, "UNKNOWN").split(" ")[0] for ch in text[:sample] if ch.isalpha())
    counts = Counter(_SCRIPT_NAMES.get(word, word.title()) for word in words)
    if not counts:
        return None
    total = sum(counts.values())
    if counts["Kana"] > 0.1 * total and counts["Han"] > 0.1 * total:
        return "Han+Kana"
    return counts.most_common(1)[0][0]
