"""Notes: texts for the user that name parameters, spelled by whoever shows them."""

from __future__ import annotations

import re

from tokcost.errors import TokcostError, Words

_NAME = re.compile(r"\{([A-Za-z_]\w*)(?:=[^{}]*)?\}")


class Note(str):
    """A text whose placeholders (``tokcost.errors.arg``) name parameters: spelled as the API
    does, or by ``render(words)`` as a caller does (the CLI: its flags)."""

    template: str

    def __new__(cls, template: str) -> Note:
        note = super().__new__(cls, _spell(template, None))
        note.template = template
        return note

    def render(self, words: Words | None = None) -> str:
        return _spell(self.template, words)


def _spell(template: str, words: Words | None) -> str:
    text = TokcostError(template, related=tuple(_NAME.findall(template)))
    return text.render() if words is None else text.render(words)
