"""The one protocol every tokenizer adapter implements (tiktoken, Hugging Face ``tokenizers``,
SentencePiece, tokcost's BPE), so the rest of tokcost never cares which it is; ``Approximate``:
a real tokenizer standing in for a model whose own tokenizer is not public."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from tokcost.errors import TokcostError


@runtime_checkable
class Tokenizer(Protocol):
    """What tokcost needs from a tokenizer (``streamable``: chunks count as the whole)."""

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
    def special_tokens(self) -> dict[str, int]: ...  # text -> id, by id then text
    def pattern(self) -> str | None: ...  # the pre-tokenization regex, if it can show one


def special_tokens_by_id(specials: Iterable[tuple[str, int]]) -> dict[str, int]:
    """``(text, id)`` pairs as a dict ordered by id, then text (the same on every run)."""
    return dict(sorted(specials, key=lambda item: (item[1], item[0])))


def check_ids(name: str, ids: Sequence[int], vocab_size: int) -> None:
    bad = [i for i in ids if not 0 <= i < vocab_size]
    if bad:
        raise TokcostError(f"{name}: invalid token id {bad[0]}; ids run 0..{vocab_size - 1}")


def count_backend(tokenizer: Tokenizer) -> str:
    backend = getattr(tokenizer, "count_backend", None)
    if isinstance(backend, str):
        return backend
    return "tiktoken" if getattr(tokenizer, "encoding", None) is not None else "python"


def count_many(tokenizer: Tokenizer, texts: Sequence[str], *, allow_special: bool = False,
               threads: int = 1) -> list[int]:
    """``[tokenizer.count(t) for t in texts]``, in one call where it has ``count_many``."""
    many = getattr(tokenizer, "count_many", None)
    if many is not None and len(texts) > 1:
        return list(many(texts, allow_special=allow_special, threads=threads))
    return [tokenizer.count(t, allow_special=allow_special) for t in texts]


def plan_run(tokenizer: Tokenizer, chars: int | None) -> None:
    """Tell ``tokenizer`` the size of the count run about to start (None: unknown)."""
    plan = getattr(tokenizer, "plan_run", None)
    if plan is not None:
        plan(chars)


class Approximate:
    """Delegates everything to ``inner`` but reports ``exact = False`` (shown as ≈)."""

    exact = False

    def __init__(self, inner: Tokenizer) -> None:
        self.inner, self.name = inner, inner.name
        self.streamable, self.releases_gil = inner.streamable, inner.releases_gil
        self.encode, self.decode, self.count = inner.encode, inner.decode, inner.count
        self.token_bytes = inner.token_bytes
        # How a stream may be cut for it (tokcost.counting.cuts.CutRule.for_tokenizers).
        for attr in ("cut_punct", "matched_texts", "max_chars", "stream_chars"):
            if hasattr(inner, attr):
                setattr(self, attr, getattr(inner, attr))

    @property
    def count_backend(self) -> str:
        return count_backend(self.inner)

    def plan_run(self, chars: int | None) -> None:
        plan_run(self.inner, chars)

    def count_many(self, texts: Sequence[str], *, allow_special: bool = False,
                   threads: int = 1) -> list[int]:
        return count_many(self.inner, texts, allow_special=allow_special, threads=threads)

    @property
    def vocab_size(self) -> int:
        return self.inner.vocab_size

    def special_tokens(self) -> dict[str, int]:
        return self.inner.special_tokens() if isinstance(self.inner, Describable) else {}

    def pattern(self) -> str | None:
        return self.inner.pattern() if isinstance(self.inner, Describable) else None
