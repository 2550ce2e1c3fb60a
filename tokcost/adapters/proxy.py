"""A real tokenizer standing in for a model whose own tokenizer is not public."""

from __future__ import annotations

from collections.abc import Sequence

from tokcost.adapters.base import Describable, Tokenizer, count_backend, count_many, plan_run


class Approximate:
    """Delegates everything to ``inner`` but reports ``exact = False`` (shown as ≈)."""

    exact = False

    def __init__(self, inner: Tokenizer) -> None:
        self.inner, self.name = inner, inner.name
        self.streamable, self.releases_gil = inner.streamable, inner.releases_gil
        self.encode, self.decode, self.count = inner.encode, inner.decode, inner.count
        self.token_bytes = inner.token_bytes

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
