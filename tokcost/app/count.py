"""``tokcost count`` as library calls: tokens in files, folders and stdin, in a chat request,
and the tokens themselves; each takes one request, or paths (``tokcost.count("README.md")``)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, ClassVar

from tokcost import counting
from tokcost.chat import ChatCount, load_messages
from tokcost.chat import count_chat as count_messages
from tokcost.counting import FileCount, Inputs, LeftOut, ProgressFn, Skipped
from tokcost.counting.groups import CountView, Group, group
from tokcost.counting.inputs import count_warnings, unreadable_message
from tokcost.errors import InputError, UsageError, arg
from tokcost.parts import Parts
from tokcost.runner import RunConfig
from tokcost.tokenizers import TokenizerChoice, TokenizerSelection, load_tokenizers, model_choice
from tokcost.units import parse_count

if TYPE_CHECKING:
    from tokcost.requestbody import BodyCount

__all__ = ["ChatRequest", "CountRequest", "TokenizeRequest", "count", "count_chat", "tokenize"]

DEFAULT_CHAT_MODEL = "gpt-4o"  # whose chat template ``count_chat`` applies when none is named
Paths = Inputs | str | Path | Sequence[str | Path]
_SHARED = ("tokenizer", "max_tokens")  # said once in TokensResult.to_dict, not per file


def _choice_dict(choice: TokenizerChoice) -> dict[str, Any]:
    return {"label": choice.label, "spec": choice.spec, "exact": choice.exact,
            "model": choice.model.id if choice.model else None}


def _inputs(given: Paths) -> Inputs:
    return given if isinstance(given, Inputs) else Inputs(paths=given)  # type: ignore[arg-type]


class _ManyInputs:
    files: tuple[Any, ...]
    skipped: tuple[Skipped, ...]
    NOTHING: ClassVar[str] = "nothing to count"

    @property
    def unreadable(self) -> str | None:
        """The one error line when an input could not be read (exit 1 after the output)."""
        return unreadable_message(self.skipped)

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.notes()

    def notes(self, *, verbose: bool = False, hint: str = "",
              names: Mapping[str, str] | None = None) -> tuple[str, ...]:
        """The warnings (binary files summed up unless ``verbose``), and why nothing was found."""
        notes = count_warnings(self.skipped, ((f.path, f.invalid_utf8_bytes, f.encoding)
                                              for f in self.files), verbose=verbose, hint=hint)
        left_out: LeftOut | None = getattr(self, "left_out", None)
        if left_out is not None and not self.files and not self.skipped:
            notes += (left_out.note(names=names),)
        return notes

    def raise_for_empty(self) -> None:
        """Raise InputError when every input was skipped (no input at all is no error)."""
        if not self.files and self.skipped:
            raise InputError(f"{self.NOTHING}: every input was skipped ({len(self.skipped)}, "
                             "reasons above)")


@dataclass(frozen=True)
class WindowShare:
    id: str
    tokenizer: str
    exact: bool
    tokens: int
    context_window: int | None

    @property
    def context_share(self) -> float | None:
        return round(self.tokens / self.context_window, 6) if self.context_window else None

    @property
    def fits(self) -> bool:
        return self.context_share is None or self.context_share <= 1

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "context_share": self.context_share}


@dataclass(frozen=True)
class CountResult(_ManyInputs):
    """Per-file counts (in input order), ``tokens`` keyed by spec, and what was skipped."""

    tokenizers: tuple[TokenizerChoice, ...]
    files: tuple[FileCount, ...]
    skipped: tuple[Skipped, ...]
    left_out: LeftOut = field(default_factory=LeftOut)  # what the walk's rules left out
    view: CountView = field(default_factory=CountView)
    roots: tuple[str, ...] = ()  # the folders named, which --by dir sums up below

    @property
    def total_bytes(self) -> int:
        return sum(f.bytes for f in self.files)

    @property
    def total_chars(self) -> int:
        return sum(f.chars for f in self.files)

    def total_tokens(self, tokenizer: TokenizerChoice | None = None) -> int:
        return sum(f.tokens[(tokenizer or self.tokenizers[0]).spec] for f in self.files)

    @property
    def windows(self) -> tuple[WindowShare, ...]:
        return tuple(WindowShare(c.label, c.spec, c.exact, self.total_tokens(c),
                                 c.model.context_window)
                     for c in self.tokenizers if c.model is not None)

    def rows(self) -> tuple[list[Any], Group | None]:
        """The rows to show as ``view`` asks (files, or groups with ``by``), sorted and cut to
        ``top``, and the rows cut summed up in one, named '(N more)' (None: nothing cut)."""
        v, spec = self.view, self.tokenizers[0].spec
        rows: list[Any] = (
            v.order(group(self.files, v.by, self.roots), spec, lambda g: g.name) if v.by
            else v.order(self.files, spec, lambda f: f.path))
        shown, left = (rows, []) if v.top is None else (rows[:v.top], rows[v.top:])
        if not left:
            return shown, None
        rest = Group(f"({len(left):,} more)", rows=len(left))
        for r in left:
            rest.add(getattr(r, "files", 1), r.bytes, r.chars, r.tokens)
        return shown, rest

    def to_dict(self) -> dict[str, Any]:
        cols, v = self.tokenizers, self.view
        labels = {c.spec: c.label for c in cols}
        shown, rest = self.rows()
        doc: dict[str, Any] = {
            "tokenizers": [{**_choice_dict(c), "backend": c.backend} for c in cols],
            "files": [{"path": f.path, "bytes": f.bytes, "chars": f.chars,
                       "tokens": {c.label: f.tokens[c.spec] for c in cols},
                       "invalid_utf8_bytes": f.invalid_utf8_bytes, "encoding": f.encoding}
                      for f in (self.files if v.by else shown)]}
        if v.by:
            doc |= {"by": v.by, "groups": [g.to_dict(labels) for g in shown]}
        doc["total"] = {"files": len(self.files), "bytes": self.total_bytes,
                        "chars": self.total_chars,
                        "tokens": {c.label: self.total_tokens(c) for c in cols}}
        if v.top is not None:  # what --top left out, so that the rows shown add up to the total
            doc["others"] = None if rest is None else {
                "rows": rest.rows, **{k: n for k, n in rest.to_dict(labels).items() if k != "name"}}
        return doc | {"models": [w.to_dict() for w in self.windows],
                      "skipped": [asdict(s) for s in self.skipped]}


@dataclass(frozen=True, kw_only=True)
class CountRequest(Parts):
    """Count the files under ``inputs`` with every tokenizer (default o200k_base), on ``run``."""

    inputs: Inputs
    tokenizers: TokenizerSelection = field(default_factory=TokenizerSelection)
    run: RunConfig = field(default_factory=RunConfig)
    view: CountView = field(default_factory=CountView)
    allow_special: bool = False

    def __post_init__(self) -> None:
        if not self.inputs.paths:
            raise UsageError("nothing to count: give files or folders, or '-' to read stdin",
                             param="paths")


def count(request: CountRequest | Paths, *, progress: ProgressFn | None = None) -> CountResult:
    """Count as ``request`` asks (``progress``: see ``tokcost.counting.count_paths``)."""
    if not isinstance(request, CountRequest):
        request = CountRequest(inputs=_inputs(request))
    choices = request.tokenizers.columns()
    report = counting.count_paths(request.inputs, load_tokenizers(choices), run=request.run,
                                  allow_special=request.allow_special, progress=progress,
                                  unique=True)
    roots = (tuple(p for p in request.inputs.paths if os.path.isdir(p))
             if request.view.by == "dir" else ())
    return CountResult(tuple(choices), tuple(report.files), tuple(report.skipped), report.left_out,
                       request.view, roots)


class _WindowShare:
    """One model's count of a chat or a request body, as a share of its context window."""

    counted: Any  # ChatCount or BodyCount: both have a total
    context_window: int | None

    @property
    def context_share(self) -> float | None:
        return self.counted.total / self.context_window if self.context_window else None


@dataclass(frozen=True)
class ChatModelCount(_WindowShare):
    id: str
    tokenizer: str
    exact: bool
    counted: ChatCount
    context_window: int | None

    def to_dict(self) -> dict[str, Any]:
        c = self.counted
        return {"id": self.id, "tokenizer": self.tokenizer, "exact": self.exact,
                "messages": c.messages, "content_tokens": c.content_tokens,
                "overhead_tokens": c.overhead_tokens, "total": c.total,
                "context_window": self.context_window}


@dataclass(frozen=True)
class ChatResult:
    chat: str  # the file, or <stdin>
    models: tuple[ChatModelCount, ...]
    invalid_utf8_bytes: int = 0

    @property
    def warnings(self) -> tuple[str, ...]:
        skipped = self.models[0].counted.skipped_parts if self.models else 0
        parts = f"{skipped} non-text parts (images, audio, tool calls) not counted"
        return (*counting.input_warnings((), [(self.chat, self.invalid_utf8_bytes)]),
                *((parts,) if skipped else ()))

    def to_dict(self) -> dict[str, Any]:
        return {"chat": self.chat, "models": [m.to_dict() for m in self.models],
                "invalid_utf8_bytes": self.invalid_utf8_bytes}


@dataclass(frozen=True)
class RequestModelCount(_WindowShare):
    id: str
    tokenizer: str
    counted: BodyCount
    context_window: int | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "tokenizer": self.tokenizer, **self.counted.to_dict(),
                "context_window": self.context_window}


@dataclass(frozen=True)
class RequestResult:
    """A whole request body counted for each model, part by part (``count --request``)."""

    request: str  # the file, or <stdin>
    format: str
    models: tuple[RequestModelCount, ...]

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(n for m in self.models for n in m.counted.notes))

    def to_dict(self) -> dict[str, Any]:
        return {"request": self.request, "format": self.format,
                "models": [m.to_dict() for m in self.models]}


@dataclass(frozen=True, kw_only=True)
class ChatRequest(Parts):
    """Count the JSON messages in ``chat`` (``-``: stdin) for each model (default gpt-4o);
    ``body``: ``chat`` is a whole request body (OpenAI Chat Completions or Responses,
    Anthropic Messages), counted by each provider's rules (default: the body's model)."""

    chat: str | Path
    tokenizers: TokenizerSelection = field(default_factory=TokenizerSelection)
    stdin: BinaryIO | None = field(default=None, compare=False, repr=False)
    body: bool = False

    def __post_init__(self) -> None:
        if self.body and self.tokenizers.tokenizers:
            raise UsageError(f"a request body is counted with each model's own tokenizer: give "
                             f"{arg('models', 'ID')}, not {arg('tokenizers')}",
                             param="tokenizers", related=("models",))


def count_chat(request: ChatRequest | str | Path) -> ChatResult | RequestResult:
    """A message list per model (ChatResult), or a whole request body (RequestResult)."""
    if not isinstance(request, ChatRequest):
        request = ChatRequest(chat=request)
    if request.body:
        return _count_body(request)
    messages, read = load_messages(str(request.chat), stdin=request.stdin)
    selection = request.tokenizers
    cat = selection.open_catalog()
    override = replace(selection, tokenizers=selection.tokenizers[:1], models=(),
                       catalog=cat).resolve(default=None)
    rows = []
    for model_id in selection.models or [DEFAULT_CHAT_MODEL]:
        entry = cat.resolve(model_id)
        if entry.chat is None:
            raise UsageError(f"model '{entry.id}' has no chat overhead in the catalog; "
                             "choose a model that has one (tokcost models show ID)")
        choice = (replace(override[0], label=entry.id, model=entry) if override
                  else model_choice(entry))
        rows.append(ChatModelCount(entry.id, choice.spec, choice.exact, count_messages(
            messages, choice.load(), entry.chat), entry.context_window))
    return ChatResult(read.name, tuple(rows), read.invalid_bytes)


def _count_body(request: ChatRequest) -> RequestResult:
    from tokcost.requestbody import count_body, load_body
    body = load_body(str(request.chat), stdin=request.stdin)
    cat = request.tokenizers.open_catalog()
    rows = []
    for model_id in request.tokenizers.models or [body.model or DEFAULT_CHAT_MODEL]:
        entry = cat.resolve(model_id)
        choice = model_choice(entry)
        rows.append(RequestModelCount(entry.id, choice.spec, count_body(body, entry, choice.load()),
                                      entry.context_window))
    return RequestResult(body.name, body.format, tuple(rows))


@dataclass(frozen=True)
class TokenizeResult:
    """One input's token ids, their texts and the text (cut to ``max_tokens``, whole characters)."""

    tokenizer: TokenizerChoice
    ids: tuple[int, ...]
    pieces: tuple[str, ...]  # each token's bytes as text (a split character: \\x escapes)
    text: str
    path: str = counting.STDIN_NAME  # the file as given, or <stdin>
    input_tokens: int = 0
    max_tokens: int | None = None
    invalid_utf8_bytes: int = 0
    encoding: str = counting.UTF8  # or the UTF-16/32 its byte order mark names

    @property
    def truncated(self) -> bool:
        return self.input_tokens > len(self.ids)

    @property
    def warnings(self) -> tuple[str, ...]:
        return counting.input_warnings((), [(self.path, self.invalid_utf8_bytes, self.encoding)])

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "tokenizer": _choice_dict(self.tokenizer),
                "count": len(self.ids), "input_tokens": self.input_tokens,
                "max_tokens": self.max_tokens, "truncated": self.truncated,
                "ids": list(self.ids), "pieces": list(self.pieces), "text": self.text,
                "invalid_utf8_bytes": self.invalid_utf8_bytes}


@dataclass(frozen=True)
class TokensResult(_ManyInputs):
    tokenizer: TokenizerChoice
    files: tuple[TokenizeResult, ...]
    skipped: tuple[Skipped, ...] = ()
    max_tokens: int | None = None
    NOTHING: ClassVar[str] = "no text to show"

    def to_dict(self) -> dict[str, Any]:
        """The ``tokcost count --tokens --json`` (and ``--truncate N``) document."""
        return {"tokenizer": _choice_dict(self.tokenizer), "max_tokens": self.max_tokens,
                "files": [{k: v for k, v in f.to_dict().items() if k not in _SHARED}
                          for f in self.files], "skipped": [asdict(s) for s in self.skipped]}


@dataclass(frozen=True, kw_only=True)
class TokenizeRequest(Parts):
    """The tokens of the inputs under one tokenizer; ``max_tokens``: only the first ones."""

    inputs: Inputs
    tokenizers: TokenizerSelection = field(default_factory=TokenizerSelection)
    allow_special: bool = False
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.max_tokens is not None:
            object.__setattr__(self, "max_tokens", parse_count(self.max_tokens, param="max_tokens"))
        if not self.inputs.paths:
            raise UsageError("nothing to show: give files or folders, or '-' to read stdin",
                             param="paths")
        given = [*self.tokenizers.tokenizers, *self.tokenizers.models]
        if len(given) > 1:
            raise UsageError(f"tokens are shown for one tokenizer at a time, got {len(given)} "
                             f"({', '.join(given)}); give one of {arg('tokenizers')} or "
                             f"{arg('models')}, and call once per tokenizer",
                             param="tokenizers", related=("models",))


def tokenize(request: TokenizeRequest | Paths) -> TokensResult:
    """The tokens of every file under the request's paths, walked as ``count`` walks them."""
    if not isinstance(request, TokenizeRequest):
        request = TokenizeRequest(inputs=_inputs(request))
    choice = request.tokenizers.columns()[0]
    tok = choice.load()
    inputs, top = request.inputs, request.max_tokens
    skipped: list[Skipped] = []
    results = []
    for source in counting.walk(inputs.paths, include=inputs.include, exclude=inputs.exclude,
                                gitignore=inputs.gitignore, skipped=skipped,
                                visited=counting.Visited(), follow=inputs.follow):
        read = counting.load_input(source.path, stdin=inputs.stdin)
        if isinstance(read, Skipped):
            skipped.append(read)
            continue
        ids = tok.encode(read.text, allow_special=request.allow_special)
        cut = top is not None and len(ids) > top
        shown, text = (ids[:top], tok.decode(ids[:top])) if cut else (ids, read.text)
        # A character split by the cut decodes to U+FFFD: keep whole characters only.
        while text.endswith("\ufffd") and not read.text.startswith(text):
            text = text[:-1]
        pieces = tuple(p.decode("utf-8", errors="backslashreplace") for p in tok.token_bytes(shown))
        results.append(TokenizeResult(choice, tuple(shown), pieces, text, read.name, len(ids), top,
                                      read.invalid_bytes, read.encoding))
    return TokensResult(choice, tuple(results), tuple(skipped), top)
