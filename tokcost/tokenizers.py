"""Which tokenizer for this spec, model and catalog: the one resolution (DESIGN §2), so
``-t model:ID`` and ``-m ID`` read the same catalog in every command."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from tokcost.adapters.base import count_backend
from tokcost.adapters.registry import DEFAULT_SPEC, check_spec, get_tokenizer, normalize_spec
from tokcost.errors import CatalogError, TokenizerNotFound, UsageError, arg
from tokcost.units import spec_label as spec_label

if TYPE_CHECKING:
    from tokcost.adapters.base import Tokenizer
    from tokcost.catalog import Catalog, CatalogSource, ModelEntry

MODEL_PREFIX = "model:"


def open_catalog(catalog: CatalogSource = None) -> Catalog:
    """The catalog ``catalog`` names (None: ``$TOKCOST_CATALOG``, else the shipped one)."""
    from tokcost.catalog import Catalog, load_catalog
    return catalog if isinstance(catalog, Catalog) else load_catalog(catalog)


@dataclass(frozen=True)
class TokenizerChoice:
    """One resolved tokenizer (``written_spec``: as the catalog wrote it, for baselines)."""

    label: str
    spec: str
    exact: bool = True
    model: ModelEntry | None = None
    written_spec: str | None = None

    def load(self) -> Tokenizer:
        """The tokenizer (built once per process); a proxy is marked approximate."""
        tok = get_tokenizer(self.spec)
        if not self.exact and tok.exact:
            from tokcost.adapters.base import Approximate
            return Approximate(tok)
        return tok

    @property
    def backend(self) -> str:
        return count_backend(self.load())


def model_choice(entry: ModelEntry) -> TokenizerChoice:
    """The tokenizer a catalog entry names."""
    if not entry.tokenizer_spec:
        raise TokenizerNotFound(f"model '{entry.id}' names no tokenizer in the catalog; pass "
                                f"{arg('tokenizers', 'SPEC')}", param="tokenizers")
    # Judged as written, before expanding a placeholder may ask for a package.
    try:
        written = check_spec(entry.tokenizer_spec)
    except TokenizerNotFound as exc:
        raise CatalogError(f"model '{entry.id}' in the catalog: tokenizer: {exc} (tokcost "
                           "models validate FILE lists every problem of a catalog)") from None
    spec = normalize_spec(entry.tokenizer or written)
    return TokenizerChoice(entry.id, spec, entry.tokenizer_exact, entry, written)


def resolve_tokenizers(tokenizers: Sequence[str] = (), models: Sequence[str] = (), *,
                       catalog: CatalogSource = None, default: str | None = DEFAULT_SPEC,
                       unique: bool = False) -> list[TokenizerChoice]:
    """Specs (``model:ID`` is a model), then model ids -> choices; ``default`` for none."""
    choices: list[TokenizerChoice] = []
    cat: Catalog | None = None
    wanted = [(t, False) for t in tokenizers] + [(m, True) for m in models]
    for text, is_model in wanted or ([(default, False)] if default is not None else []):
        if not is_model and text.startswith(MODEL_PREFIX):
            text, is_model = text[len(MODEL_PREFIX):], True
        if is_model:
            if cat is None:
                cat = open_catalog(catalog)
            choices.append(model_choice(cat.resolve(text)))
        else:
            spec = check_spec(text, param="tokenizers")
            choices.append(TokenizerChoice(spec_label(spec), spec, True, None, spec))
    dupes = sorted(label for label, n in Counter(c.label for c in choices).items() if n > 1)
    if unique and dupes:
        models_only = all(c.model is not None for c in choices if c.label in dupes)
        what = "model" if models_only else "tokenizer"
        raise UsageError(f"{what} given twice: {', '.join(dupes)}; pass each once",
                         param="models" if models_only else "tokenizers")
    return choices


def load_tokenizers(choices: Sequence[TokenizerChoice]) -> dict[str, Tokenizer]:
    toks: dict[str, Tokenizer] = {}
    for choice in choices:
        if choice.spec not in toks:
            toks[choice.spec] = choice.load()
    return toks


@dataclass(frozen=True, kw_only=True)
class TokenizerSelection:
    """The part of a request that picks tokenizers: ``tokenizers`` (specs) and ``models``
    (catalog ids) through ``catalog``; a bare string is one."""

    tokenizers: Sequence[str] = ()
    models: Sequence[str] = ()
    catalog: CatalogSource = None

    def __post_init__(self) -> None:
        for name in ("tokenizers", "models"):
            value = getattr(self, name)
            object.__setattr__(self, name, (value,) if isinstance(value, str) else tuple(value))

    def resolve(self, *, default: str | None = DEFAULT_SPEC,
                unique: bool = False) -> list[TokenizerChoice]:
        return resolve_tokenizers(self.tokenizers, self.models, catalog=self.catalog,
                                  default=default, unique=unique)

    def columns(self) -> list[TokenizerChoice]:
        """Plain specs, then ``model:ID`` specs, then models, each in the order given."""
        ordered = sorted(self.tokenizers, key=lambda t: t.startswith(MODEL_PREFIX))
        return replace(self, tokenizers=ordered).resolve(unique=True)

    def open_catalog(self) -> Catalog:
        return open_catalog(self.catalog)
