"""The one protocol every tokenizer family implements.

An adapter wraps a real tokenizer (tiktoken, Hugging Face ``tokenizers``,
SentencePiece, tokcost's own BPE) behind the same small surface, so counting,
comparing, pricing and budgets never care which family they talk to.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class Tokenizer(Protocol):
    """What tokcost needs from a tokenizer.

    ``streamable`` promises that the tokenizer's pre-tokenization never joins
    text across the boundaries ``tokcost.counting.find_boundary`` picks (a
    letter, a space, a letter; or a newline then a letter), so a large text can
    be counted chunk by chunk with exactly the count of the whole.
    ``releases_gil`` says threads give real parallelism (a Rust/C++ core).
    """

    name: str
    exact: bool
    streamable: bool
    releases_gil: bool

    @property
    def vocab_size(self) -> int: ...

    def encode(self, text: str, *, allow_special: bool = False) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def count(self, text: str, *, allow_special: bool = False) -> int: ...

    def token_bytes(self, ids: Sequence[int]) -> list[bytes]: ...


@runtime_checkable
class Describable(Protocol):
    """What a tokenizer may also tell about itself (``tokcost.inspect_bpe`` shows it).

    Not part of ``Tokenizer``: a tokenizer that cannot say leaves these out.
    """

    def special_tokens(self) -> dict[str, int]:
        """Special-token text -> id, ordered by id then text (``special_tokens_by_id``)."""
        ...

    def pattern(self) -> str | None:
        """The pre-tokenization regex, when the tokenizer has one that it can show."""
        ...


def special_tokens_by_id(specials: Iterable[tuple[str, int]]) -> dict[str, int]:
    """``(text, id)`` pairs as a dict in one order on every run: by id, then text
    (two texts may share an id; a set's order changes with the hash seed).

    >>> special_tokens_by_id([("<|b|>", 7), ("<|a|>", 7), ("<|c|>", 3)])
    {'<|c|>': 3, '<|a|>': 7, '<|b|>': 7}
    """
    return dict(sorted(specials, key=lambda item: (item[1], item[0])))


def count_backend(tokenizer: Tokenizer) -> str:
    """Which engine counts for ``tokenizer`` (``count --json`` reports it): its
    ``count_backend`` when it names one (``toktok-rs``, ``tiktoken``, ``tokenizers``,
    ``sentencepiece``), else ``tiktoken`` for an adapter on a tiktoken ``encoding``,
    else ``python``.

    >>> class T: count_backend = "toktok-rs"
    >>> count_backend(T())  # type: ignore[arg-type]
    'toktok-rs'
    """
    backend = getattr(tokenizer, "count_backend", None)
    if isinstance(backend, str):
        return backend
    return "tiktoken" if getattr(tokenizer, "encoding", None) is not None else "python"


def count_many(tokenizer: Tokenizer, texts: Sequence[str], *, allow_special: bool = False,
               threads: int = 1) -> list[int]:
    """``[tokenizer.count(t) for t in texts]`` in one call where the tokenizer has
    ``count_many`` (the fast backend): one GIL release for a batch of texts, not one per
    text, which a counting thread would then wait to get back while a reading thread
    holds it (up to the 5 ms switch interval, per text)."""
    many = getattr(tokenizer, "count_many", None)
    if many is not None and len(texts) > 1:
        return list(many(texts, allow_special=allow_special, threads=threads))
    return [tokenizer.count(t, allow_special=allow_special) for t in texts]


def plan_run(tokenizer: Tokenizer, chars: int | None) -> None:
    """Tell ``tokenizer`` the size of the count run about to start, where it can choose
    a backend by it (``plan_run``: the OpenAI encodings; see
    tokcost.adapters.fast_count.SMALL_RUN_CHARS). ``chars`` is None when unknown."""
    plan = getattr(tokenizer, "plan_run", None)
    if plan is not None:
        plan(chars)
