"""The one protocol every tokenizer family implements: an adapter wraps a real tokenizer
(tiktoken, Hugging Face ``tokenizers``, SentencePiece, tokcost's own BPE) behind the same
small surface, so counting, comparing, pricing and budgets never care which it is."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class Tokenizer(Protocol):
    """What tokcost needs from a tokenizer. ``streamable`` promises that its
    pre-tokenization never joins text across the cuts ``tokcost.counting.find_boundary``
    picks, so a large text counts chunk by chunk exactly as whole; ``releases_gil`` says
    threads give real parallelism (a Rust/C++ core)."""

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
    """What a tokenizer may also tell about itself (``tokcost.inspect_bpe`` shows it)."""

    def special_tokens(self) -> dict[str, int]:
        """Special-token text -> id, ordered by id then text (``special_tokens_by_id``)."""
        ...

    def pattern(self) -> str | None:
        """The pre-tokenization regex, when the tokenizer has one that it can show."""
        ...


def special_tokens_by_id(specials: Iterable[tuple[str, int]]) -> dict[str, int]:
    """``(text, id)`` pairs as a dict in one order on every run: by id, then text (two
    texts may share an id; a set's order changes with the hash seed)."""
    return dict(sorted(specials, key=lambda item: (item[1], item[0])))


def count_backend(tokenizer: Tokenizer) -> str:
    """Which engine counts for ``tokenizer`` (``count --json`` reports it): its
    ``count_backend`` when it names one, else ``tiktoken`` for an adapter on a tiktoken
    ``encoding``, else ``python``."""
    backend = getattr(tokenizer, "count_backend", None)
    if isinstance(backend, str):
        return backend
    return "tiktoken" if getattr(tokenizer, "encoding", None) is not None else "python"


def count_many(tokenizer: Tokenizer, texts: Sequence[str], *, allow_special: bool = False,
               threads: int = 1) -> list[int]:
    """``[tokenizer.count(t) for t in texts]`` in one call where the tokenizer has
    ``count_many`` (the fast backend): one GIL release for a batch, not one per text
    (each costing up to the 5 ms switch interval while a reading thread holds it)."""
    many = getattr(tokenizer, "count_many", None)
    if many is not None and len(texts) > 1:
        return list(many(texts, allow_special=allow_special, threads=threads))
    return [tokenizer.count(t, allow_special=allow_special) for t in texts]


def plan_run(tokenizer: Tokenizer, chars: int | None) -> None:
    """Tell ``tokenizer`` the size of the count run about to start (None: unknown), where
    it chooses a backend by it (the OpenAI encodings: ``fast_count.SMALL_RUN_CHARS``)."""
    plan = getattr(tokenizer, "plan_run", None)
    if plan is not None:
        plan(chars)
