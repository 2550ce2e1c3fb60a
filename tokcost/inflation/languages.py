"""Languages and scripts: display names for language codes, which writing systems
separate words with spaces, and the script a text is written in."""

from __future__ import annotations

# Writing systems that do not separate words with spaces: words/token is meaningless.
NO_WHITESPACE_WORDS = frozenset(
    {"zh", "ja", "th", "lo", "km", "my", "bo", "dz", "yue", "wuu", "zh-hans", "zh-hant"}
)

# Names for language codes found in a user's folder (the shipped corpora carry their
# own names in corpora/index.yaml). Unknown codes are allowed and shown as given.
LANGUAGE_NAMES = {
    "af": "Afrikaans", "am": "Amharic", "ar": "Arabic", "az": "Azerbaijani",
    "be": "Belarusian", "bg": "Bulgarian", "bn": "Bengali", "ca": "Catalan",
    "cs": "Czech", "cy": "Welsh", "da": "Danish", "de": "German", "el": "Greek",
    "en": "English", "eo": "Esperanto", "es": "Spanish", "et": "Estonian",
    "eu": "Basque", "fa": "Persian", "fi": "Finnish", "fr": "French", "ga": "Irish",
    "gl": "Galician", "gu": "Gujarati", "ha": "Hausa", "he": "Hebrew", "hi": "Hindi",
    "hr": "Croatian", "hu": "Hungarian", "hy": "Armenian", "id": "Indonesian",
    "is": "Icelandic", "it": "Italian", "ja": "Japanese", "ka": "Georgian",
    "kk": "Kazakh", "km": "Khmer", "kn": "Kannada", "ko": "Korean", "lo": "Lao",
    "lt": "Lithuanian", "lv": "Latvian", "mk": "Macedonian", "ml": "Malayalam",
    "mr": "Marathi", "ms": "Malay", "my": "Burmese", "ne": "Nepali", "nl": "Dutch",
    "no": "Norwegian", "pa": "Punjabi", "pl": "Polish", "pt": "Portuguese",
    "ro": "Romanian", "ru": "Russian", "si": "Sinhala", "sk": "Slovak",
    "sl": "Slovenian", "sq": "Albanian", "sr": "Serbian", "sv": "Swedish",
    "sw": "Swahili", "ta": "Tamil", "te": "Telugu", "th": "Thai", "tl": "Tagalog",
    "tr": "Turkish", "uk": "Ukrainian", "ur": "Urdu", "uz": "Uzbek",
    "vi": "Vietnamese", "yo": "Yoruba", "zh": "Chinese", "zu": "Zulu",
}

# Unicode name prefixes that are not the script's usual name.
_SCRIPT_NAMES = {"CJK": "Han", "HIRAGANA": "Kana", "KATAKANA": "Kana"}


def guess_script(text: str, *, sample: int = 4000) -> str | None:
    """The writing system most letters belong to, from their Unicode names.

    >>> guess_script("Привет, мир"), guess_script("東京は晴れです"), guess_script("123")
    ('Cyrillic', 'Han+Kana', None)
    """
    import unicodedata
    from collections import Counter

    counts: Counter[str] = Counter()
    for ch in text[:sample]:
        if ch.isalpha():
            word = unicodedata.name(ch, "UNKNOWN").split(" ")[0]
            counts[_SCRIPT_NAMES.get(word, word.title())] += 1
    if not counts:
        return None
    total = sum(counts.values())
    if counts["Kana"] > 0.1 * total and counts["Han"] > 0.1 * total:
        return "Han+Kana"
    return counts.most_common(1)[0][0]
