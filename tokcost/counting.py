"""Counting tokens in texts, files, folders and streams — exactly, in bounded memory.

Large inputs are read in blocks and cut only where a tokenizer's pre-tokenization
is known to start a new piece, so the sum of the chunk counts equals the count of
the whole text (a hypothesis test checks this). That cut rule is the one here:
the streaming reader applies it to decoded text, and ``next_cut`` to the bytes of
a file at any offset (for byte-range shards, ``tokcost.scale``). Folders are
walked respecting ``.gitignore`` (through pathspec), binary files are skipped
with the reason.
"""

from __future__ import annotations

import codecs
import errno
import os
import sys
import threading
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, BinaryIO, Protocol

import pathspec

from tokcost.adapters.base import Tokenizer
from tokcost.errors import InputError, UsageError

BLOCK_BYTES = 1 << 20  # read size; chunks handed to the tokenizer are about this big
SNIFF_BYTES = 8000  # like git: a NUL byte in the first 8000 bytes means binary
MAX_WHOLE_CHARS = 256 << 20  # a non-streamable tokenizer must see the whole text at once
SCAN_BYTES = 4096  # first window read around an offset to find a cut (doubled as needed)

# progress(stage, done, total): bytes done of total (0 while the total is unknown)
ProgressFn = Callable[[str, int, int], None]


class ByteSource(Protocol):
    """What the streaming reader reads from: a binary file, or any ``read(n)``."""

    def read(self, n: int = -1, /) -> bytes: ...


# --- boundaries -------------------------------------------------------------------


def _is_letter(ch: str) -> bool:
    return ch.isalpha()  # str.isalpha is exactly \p{L}


def _is_number(ch: str) -> bool:
    return unicodedata.category(ch)[0] == "N"  # \p{N}


def _is_splittable_punct(ch: str) -> bool:
    # Punctuation or a symbol starts a new piece after a letter or a digit in the
    # gpt2, cl100k, o200k and Tekken patterns; an apostrophe does not (o200k glues 's
    # to the word), a combining mark does not (o200k counts marks as part of the
    # word), and neither does an unassigned code point (category C): a newer regex
    # engine may know it as a letter.
    return (
        ch not in "'\r\n"
        and not ch.isspace()
        and unicodedata.category(ch)[0] not in "LMNC"
    )


def _is_cut(text: str, i: int, *, punct: bool = True) -> bool:
    """Whether ``text`` may be cut before index ``i`` (see find_boundary)."""
    ch, prev = text[i], text[i - 1]
    if ch == " ":
        if i + 1 >= len(text):
            return False
        nxt = text[i + 1]
        return (_is_letter(prev) and _is_letter(nxt)) or (_is_number(prev) and _is_number(nxt))
    return punct and _is_splittable_punct(ch) and (_is_letter(prev) or _is_number(prev))


def find_boundary(text: str, start: int = 0, *, punct: bool = True) -> int:
    """The last index ``i > start`` where ``text`` may be cut for exact streaming, or -1.

    A cut lies before a space between two letters or two digits, or before a
    punctuation mark that follows a letter or a digit: no piece of the gpt2,
    cl100k, o200k (or Tekken) pre-tokenizers spans such a point, and the piece
    before it ends the same way whether or not the text goes on. ``punct=False``
    keeps only the space rule, which never cuts inside special-token text such
    as ``<|endoftext|>`` (for ``allow_special``).

    >>> text = "one two"
    >>> text[:find_boundary(text)], text[find_boundary(text):]
    ('one', ' two')
    """
    for i in range(len(text) - 1, start, -1):
        if _is_cut(text, i, punct=punct):
            return i
    return -1


def find_boundary_forward(
    text: str, start: int, *, punct: bool = True, stop: int | None = None
) -> int:
    """The first boundary at or after ``start`` and before ``stop`` (see find_boundary), or -1.

    >>> find_boundary_forward("one two three", 4)
    7
    """
    for i in range(max(start, 1), len(text) if stop is None else stop):
        if _is_cut(text, i, punct=punct):
            return i
    return -1


# surrogateescape's stand-ins for undecodable bytes read as the U+FFFD that the
# streaming decoder puts in their place, so bytes and text obey the same rule.
_UNDECODABLE = dict.fromkeys(range(0xDC80, 0xDD00), "\ufffd")


def _width(ch: str) -> int:
    return len(ch.encode("utf-8", "surrogateescape"))


def next_cut(fh: IO[bytes], offset: int, size: int, *, punct: bool = True) -> int:
    """The first byte offset ``>= offset`` where a file of ``size`` bytes may be cut, or ``size``.

    The rule is ``find_boundary``'s, applied to the characters around ``offset``
    (an undecodable byte counts as the U+FFFD it is read as); a cut always lies at
    the start of a well-formed character after a whole one. The answer depends only
    on the bytes near ``offset``, so two readers of the same file asking about the
    same offset agree without talking (the byte-range shards of ``tokcost.scale``).

    >>> import io
    >>> data = "one two".encode()
    >>> next_cut(io.BytesIO(data), 1, len(data))
    3
    """
    if offset <= 0:
        return 0
    if offset >= size:
        return size
    # Start up to 4 bytes early: the character that ends at `offset` starts there or later.
    lo = max(0, offset - 4)
    scan = SCAN_BYTES
    while True:
        fh.seek(lo)
        buf = fh.read(min(scan, size - lo))
        eof = lo + len(buf) >= size or len(buf) < min(scan, size - lo)
        raw = buf.decode("utf-8", "surrogateescape")  # one character per undecodable byte
        first, pos = 0, lo  # the first character that starts at or after `offset`
        while pos < offset and first < len(raw):
            pos += _width(raw[first])
            first += 1
        # Unless at the end, the last 3 characters may be a cut-off character's bytes,
        # and the rule looks one character ahead.
        stop = len(raw) if eof else len(raw) - 4
        cut = find_boundary_forward(raw.translate(_UNDECODABLE), first, punct=punct, stop=stop)
        if cut >= 0:
            return pos + len(raw[first:cut].encode("utf-8", "surrogateescape"))
        if eof:
            return size
        scan *= 2


# --- reading: the input policy -----------------------------------------------------
#
# Every command that reads user files reads them through here, so they all behave
# alike: invalid UTF-8 becomes U+FFFD and is reported (the file and the number of
# bytes replaced); a binary file (a NUL byte in its first SNIFF_BYTES, as git
# decides) is skipped and reported; ``-`` is standard input, wherever a file can be.

STDIN = "-"
STDIN_NAME = "<stdin>"

_invalid = threading.local()


def _count_invalid(exc: UnicodeError) -> tuple[str, int]:
    assert isinstance(exc, UnicodeDecodeError)
    _invalid.n = getattr(_invalid, "n", 0) + (exc.end - exc.start)
    return "\ufffd", exc.end


codecs.register_error("tokcost.replace", _count_invalid)


class Utf8Decoder:
    """An incremental UTF-8 decoder that puts U+FFFD for each invalid sequence (as
    ``errors="replace"`` does) and counts the bytes it replaced.

    >>> d = Utf8Decoder()
    >>> text = d.decode(b"caf\\xc3") + d.decode(b"\\xa9 \\xff!", final=True)
    >>> text == "caf\\u00e9 \\ufffd!", d.invalid_bytes
    (True, 1)
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="tokcost.replace")
        self.invalid_bytes = 0

    def decode(self, data: bytes, final: bool = False) -> str:
        # The handler counts per thread; the difference over one call is this call's.
        before = getattr(_invalid, "n", 0)
        text: str = self._decoder.decode(data, final)
        self.invalid_bytes += getattr(_invalid, "n", 0) - before
        return text


def decode_utf8(data: bytes) -> tuple[str, int]:
    """``data`` as text under the input policy, and how many bytes were replaced.

    >>> decode_utf8(b"ok \\xe2\\x82 done") == ("ok \\ufffd done", 2)
    True
    """
    decoder = Utf8Decoder()
    return decoder.decode(data, final=True), decoder.invalid_bytes


def invalid_utf8_note(name: str, invalid_bytes: int) -> str:
    """The one warning for replaced bytes, in every command.

    >>> invalid_utf8_note("notes.txt", 3)
    'notes.txt: 3 bytes of invalid UTF-8 replaced with U+FFFD'
    """
    unit = "byte" if invalid_bytes == 1 else "bytes"
    return f"{name}: {invalid_bytes} {unit} of invalid UTF-8 replaced with U+FFFD"


def sniff_binary(head: bytes) -> str | None:
    """Why a file starting with ``head`` is skipped, or None: as git decides, a NUL
    byte in the first ``SNIFF_BYTES`` bytes makes it binary.

    >>> sniff_binary(b"GIF89a\\x00\\x01"), sniff_binary(b"plain text")
    ('binary (NUL byte at offset 6)', None)
    """
    nul = head.find(b"\x00", 0, SNIFF_BYTES)
    return None if nul < 0 else f"binary (NUL byte at offset {nul})"


@dataclass(frozen=True)
class Skipped:
    """An input left out, and why (``binary (NUL byte at offset 6)``)."""

    path: str
    reason: str

    @property
    def note(self) -> str:
        """The one warning for a skipped input, in every command.

        >>> Skipped("logo.png", "binary (NUL byte at offset 6)").note
        'skipped logo.png: binary (NUL byte at offset 6)'
        """
        return f"skipped {self.path}: {self.reason}"


def input_warnings(
    skipped: Iterable[Skipped], invalid: Iterable[tuple[str, int]] = ()
) -> tuple[str, ...]:
    """The input policy's warnings: each input skipped, then each one whose invalid
    UTF-8 was replaced (``invalid``: ``(name, bytes replaced)`` pairs; zeros are left out)."""
    notes = [s.note for s in skipped]
    notes += [invalid_utf8_note(name, n) for name, n in invalid if n]
    return tuple(notes)


class _Prefixed:
    """A byte source whose first bytes were already read (to sniff them)."""

    def __init__(self, head: bytes, rest: ByteSource) -> None:
        self.head, self.rest = head, rest

    def read(self, n: int = -1, /) -> bytes:
        if not self.head:
            return self.rest.read(n)
        if n < 0:
            data, self.head = self.head + self.rest.read(), b""
            return data
        data, self.head = self.head[:n], self.head[n:]
        return data


def sniff_source(source: ByteSource) -> tuple[str | None, ByteSource]:
    """Why a stream is skipped (``sniff_binary``) or None, and the stream to read it from,
    its first bytes put back (a pipe cannot seek)."""
    head = b""
    while len(head) < SNIFF_BYTES:  # a pipe may hand over less than asked
        more = source.read(SNIFF_BYTES - len(head))
        if not more:
            break
        head += more
    return sniff_binary(head), _Prefixed(head, source)


def stdin_source(stdin: BinaryIO | None = None) -> ByteSource:
    """``stdin`` or the process's standard input, as bytes."""
    return stdin if stdin is not None else sys.stdin.buffer


@dataclass(frozen=True)
class InputText:
    """One input read whole under the input policy (``read_input``)."""

    name: str  # the path as given, or <stdin>
    text: str
    bytes: int
    invalid_bytes: int = 0

    @property
    def warnings(self) -> tuple[str, ...]:
        return (invalid_utf8_note(self.name, self.invalid_bytes),) if self.invalid_bytes else ()


def load_input(path: str | Path, *, stdin: BinaryIO | None = None) -> InputText | Skipped:
    """The whole text of one input (``-``: ``stdin``, default the process's) under the
    input policy, or why it is skipped (binary, unreadable). A missing path or a
    folder raises UsageError: that is the caller's mistake, not the input's.
    """
    raw = str(path)
    if raw == STDIN:
        name, data = STDIN_NAME, stdin_source(stdin).read()
    else:
        name = raw
        try:
            data = Path(raw).read_bytes()
        except FileNotFoundError:
            raise UsageError(f"no such file: {raw}") from None
        except IsADirectoryError:
            raise UsageError(f"{raw} is a folder; give one file, or '-' for stdin") from None
        except OSError as err:
            return Skipped(name, f"unreadable ({err.strerror})")
    reason = sniff_binary(data[:SNIFF_BYTES])
    if reason is not None:
        return Skipped(name, reason)
    text, invalid = decode_utf8(data)
    return InputText(name, text, len(data), invalid)


def read_input(path: str | Path, *, stdin: BinaryIO | None = None) -> InputText:
    """``load_input`` for a command that reads one input: a skipped one raises InputError.

    >>> import io
    >>> got = read_input("-", stdin=io.BytesIO(b"hi \\xff"))
    >>> got.name, got.text == "hi \\ufffd", got.invalid_bytes, got.warnings
    ('<stdin>', True, 1, ('<stdin>: 1 byte of invalid UTF-8 replaced with U+FFFD',))
    """
    read = load_input(path, stdin=stdin)
    if isinstance(read, Skipped):
        raise InputError(f"{read.note}; give a text file")
    return read


@dataclass(frozen=True)
class FileScan:
    """What the input policy makes of one file read as a stream (``scan_file``)."""

    path: str
    bytes: int = 0
    invalid_bytes: int = 0
    skipped: str | None = None  # why it is skipped, else None


def scan_file(path: str, *, block_bytes: int = BLOCK_BYTES) -> FileScan:
    """Sniff a local file and count its invalid UTF-8 bytes without keeping its text,
    for readers that take paths (the BPE trainer's byte-range workers): they replace
    the same bytes, and this says how many, up front. Missing paths raise UsageError.
    """
    try:
        with open(path, "rb") as handle:
            reason, source = sniff_source(handle)
            if reason is not None:
                return FileScan(path, skipped=reason)
            decoder, size = Utf8Decoder(), 0
            while block := source.read(block_bytes):
                size += len(block)
                decoder.decode(block)
            decoder.decode(b"", final=True)
    except FileNotFoundError:
        raise UsageError(f"no such file: {path}") from None
    except IsADirectoryError:
        raise UsageError(f"{path} is a folder; give the files in it") from None
    except OSError as err:
        return FileScan(path, skipped=f"unreadable ({err.strerror})")
    return FileScan(path, size, decoder.invalid_bytes)


@dataclass
class LineBlocks:
    """The text of a byte stream in blocks of whole lines (cut after ``"\\n"``, never
    inside a character), decoded under the input policy: for readers that split text
    into lines, such as the BPE trainer reading standard input."""

    source: ByteSource
    block_bytes: int = BLOCK_BYTES
    bytes: int = 0
    invalid_bytes: int = 0

    def __iter__(self) -> Iterator[str]:
        decoder = Utf8Decoder()
        carry = b""
        while True:
            block = self.source.read(self.block_bytes)
            self.bytes += len(block)
            data = carry + block
            cut = data.rfind(b"\n") + 1 if block else len(data)
            carry = data[cut:]
            if cut:
                # A newline ends any sequence, valid or not: the decoder holds nothing back.
                yield decoder.decode(data[:cut], final=not block)
            if not block:
                break
        self.invalid_bytes = decoder.invalid_bytes


@dataclass
class TextStream:
    """Boundary-safe text chunks of a byte stream, with running byte/char totals."""

    source: ByteSource
    block_bytes: int = BLOCK_BYTES
    punct: bool = True  # False with allow_special: never cut inside <|...|>
    bytes: int = 0
    chars: int = 0
    invalid_bytes: int = 0

    def chunks(self) -> Iterator[str]:
        decoder = Utf8Decoder()
        pending = ""
        searched = 0  # pending[:searched] holds no cut point
        while True:
            block = self.source.read(self.block_bytes)
            final = not block
            self.bytes += len(block)
            text = decoder.decode(block, final=final)
            self.chars += len(text)
            pending += text
            if final:
                break
            if len(pending) >= self.block_bytes:
                # Search only text not searched before, so a stretch without a cut
                # point (no letters or digits) costs linear, not quadratic, time.
                searched = max(searched - 2, 0)
                cut = find_boundary(pending, start=max(len(pending) // 2, searched),
                                    punct=self.punct)
                if cut < 0 and searched < len(pending) // 2:
                    cut = find_boundary(pending, start=searched, punct=self.punct)
                if cut > 0:
                    yield pending[:cut]
                    pending = pending[cut:]
                    searched = 0
                else:
                    searched = len(pending)
        self.invalid_bytes = decoder.invalid_bytes
        if pending:
            yield pending


def read_text(
    source: ByteSource,
    tokenizers: Mapping[str, Tokenizer],
    count: Callable[[str, str], None],
    *,
    name: str,
    block_bytes: int = BLOCK_BYTES,
    allow_special: bool = False,
) -> TextStream:
    """Read ``source`` once for all ``tokenizers`` (spec -> tokenizer).

    ``count(spec, text)`` gets every boundary-safe chunk for a streamable tokenizer
    and the whole text for the others (at most ``MAX_WHOLE_CHARS``; ``name`` says
    which input is too large). The stream returned holds the byte, character and
    invalid-byte totals. Each local file and each shard piece is read this way.
    """
    # Special-token text is one token when allowed: never cut inside <|...|> then.
    stream = TextStream(source, block_bytes, punct=not allow_special)
    streamable = [s for s, t in tokenizers.items() if t.streamable]
    whole_specs = [s for s, t in tokenizers.items() if not t.streamable]
    whole: list[str] = []
    whole_chars = 0
    for chunk in stream.chunks():
        for spec in streamable:
            count(spec, chunk)
        if whole_specs:
            whole_chars += len(chunk)
            if whole_chars > MAX_WHOLE_CHARS:
                raise InputError(
                    f"{name}: too large for exact counting with "
                    f"{', '.join(whole_specs)} (over {MAX_WHOLE_CHARS >> 20} M characters); "
                    "use a tiktoken or bpe tokenizer, or split the file"
                )
            whole.append(chunk)
    if whole_specs:
        text = "".join(whole)
        for spec in whole_specs:
            count(spec, text)
    return stream


def split_text(text: str, chunk_chars: int) -> list[str]:
    """Cut an in-memory text at boundary-safe points into pieces of about chunk_chars."""
    pieces: list[str] = []
    start = 0
    while len(text) - start > chunk_chars:
        window_end = start + chunk_chars
        cut = find_boundary(text[: window_end], start=start + chunk_chars // 2)
        if cut < 0:
            cut = find_boundary(text[:window_end], start=start)
        if cut <= start:
            # No safe point in this window: look further on, never split unsafely.
            nxt = find_boundary_forward(text, window_end)
            if nxt < 0:
                break
            cut = nxt
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


def count_text(text: str, tokenizer: Tokenizer, *, allow_special: bool = False) -> int:
    """Tokens in one text, as the tokenizer counts the whole of it.

    >>> from tokcost import get_tokenizer
    >>> count_text("hello world", get_tokenizer("tiktoken:cl100k_base"))
    2
    """
    return tokenizer.count(text, allow_special=allow_special)


def count_texts(texts: Iterable[str], tokenizer: Tokenizer, *, allow_special: bool = False) -> int:
    """Total tokens over texts counted one by one (each text is a document of its own)."""
    return sum(tokenizer.count(t, allow_special=allow_special) for t in texts)


# --- walking ------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """One input: a file path, or ``-`` for standard input."""

    path: str
    display: str


def _gitignore_spec(directory: Path) -> pathspec.GitIgnoreSpec | None:
    ignore = directory / ".gitignore"
    if not ignore.is_file():
        return None
    try:
        lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _globs(patterns: Sequence[str]) -> pathspec.GitIgnoreSpec | None:
    if not patterns:
        return None
    return pathspec.GitIgnoreSpec.from_lines(patterns)


def walk(
    paths: Sequence[str],
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    gitignore: bool = True,
    skipped: list[Skipped] | None = None,
) -> Iterator[Source]:
    """Files to count, in a stable order. Missing paths raise UsageError.

    Folders are walked recursively without following symlinked folders (so a
    symlink loop cannot trap the walk); ``.git`` and ``.gitignore``d paths are
    left out (unless ``gitignore=False``); ``include``/``exclude`` are
    gitignore-style globs matched against the path relative to the folder given.
    """
    inc, exc = _globs(include), _globs(exclude)
    for raw in paths:
        if raw == STDIN:
            yield Source(STDIN, STDIN_NAME)
            continue
        path = Path(raw)
        try:
            st = path.stat()
        except FileNotFoundError:
            raise UsageError(f"no such file or folder: {raw}") from None
        except OSError as err:
            if err.errno == errno.ELOOP:
                raise InputError(f"{raw}: symlink loop; point at the real file") from None
            raise InputError(f"cannot read {raw}: {err.strerror}") from None
        if not path.is_dir():
            del st
            yield Source(str(path), raw)
            continue
        yield from _walk_dir(path, inc, exc, gitignore, skipped)


def _ancestor_gitignores(root: Path) -> list[tuple[Path, pathspec.GitIgnoreSpec]]:
    """The .gitignore files above ``root`` up to its git work tree's top, outermost first."""
    start = Path(os.path.abspath(root))
    chain: list[Path] = []
    for folder in start.parents:
        chain.append(folder)
        if (folder / ".git").exists():
            break
    else:
        return []  # not inside a git work tree: only the folders walked count
    found = []
    for folder in reversed(chain):
        spec = _gitignore_spec(folder)
        if spec is not None:
            found.append((folder, spec))
    return found


def _walk_dir(
    root: Path,
    inc: pathspec.GitIgnoreSpec | None,
    exc: pathspec.GitIgnoreSpec | None,
    gitignore: bool,
    skipped: list[Skipped] | None,
) -> Iterator[Source]:
    # Each .gitignore applies below its own folder: (absolute folder, spec) pairs,
    # outermost first, starting with those above `root` inside the same git work tree.
    specs: list[tuple[Path, pathspec.GitIgnoreSpec]] = (
        _ancestor_gitignores(root) if gitignore else []
    )

    def ignored(path: Path, is_dir: bool) -> bool:
        # As git decides: the last matching pattern wins, and a deeper .gitignore
        # comes later, so its "!keep.txt" can re-include what an outer one ignores.
        verdict: bool | None = None
        full = Path(os.path.abspath(path))
        for base, spec in specs:
            rel = full.relative_to(base).as_posix() + ("/" if is_dir else "")
            result = spec.check_file(rel)
            if result.include is not None:
                verdict = result.include
        return bool(verdict)

    def onerror(err: OSError) -> None:
        if skipped is not None:
            skipped.append(Skipped(str(err.filename), f"unreadable folder ({err.strerror})"))

    for dirpath, dirnames, filenames in os.walk(root, onerror=onerror):
        here = Path(dirpath)
        here_abs = Path(os.path.abspath(here))
        specs[:] = [(b, s) for b, s in specs if here_abs == b or b in here_abs.parents]
        if gitignore:
            spec = _gitignore_spec(here)
            if spec is not None:
                specs.append((here_abs, spec))
        keep = []
        for d in sorted(dirnames):
            sub = here / d
            if d == ".git" or (gitignore and ignored(sub, True)):
                continue
            if exc is not None and exc.match_file(sub.relative_to(root).as_posix() + "/"):
                continue
            keep.append(d)
        dirnames[:] = keep
        for name in sorted(filenames):
            file = here / name
            rel = file.relative_to(root).as_posix()
            if gitignore and ignored(file, False):
                continue
            if inc is not None and not inc.match_file(rel):
                continue
            if exc is not None and exc.match_file(rel):
                continue
            if file.is_symlink() and not file.exists():
                if skipped is not None:
                    skipped.append(Skipped(str(file), "broken symlink"))
                continue
            yield Source(str(file), str(file))


# --- counting -----------------------------------------------------------------------


@dataclass
class FileCount:
    path: str
    bytes: int = 0
    chars: int = 0
    tokens: dict[str, int] = field(default_factory=dict)
    invalid_utf8_bytes: int = 0


@dataclass
class CountReport:
    """Per-file counts (in input order) for each tokenizer spec, and what was skipped."""

    specs: list[str]
    files: list[FileCount] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return sum(f.bytes for f in self.files)

    @property
    def total_chars(self) -> int:
        return sum(f.chars for f in self.files)

    def total_tokens(self, spec: str) -> int:
        return sum(f.tokens.get(spec, 0) for f in self.files)

    @property
    def warnings(self) -> tuple[str, ...]:
        """What the input policy reports: inputs skipped, invalid UTF-8 replaced."""
        return input_warnings(self.skipped, ((f.path, f.invalid_utf8_bytes) for f in self.files))


# Worker-side state for process pools: tokenizers are built once per process.
_worker_tokenizers: dict[str, Tokenizer] = {}


def _init_worker(specs: Sequence[str]) -> None:
    import signal

    from tokcost.adapters.registry import get_tokenizer

    # Ctrl-C is the parent's to handle: workers must not print their own tracebacks.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    for spec in specs:
        _worker_tokenizers[spec] = get_tokenizer(spec)


def _count_batch_in_worker(items: list[tuple[str, str]], allow_special: bool) -> list[int]:
    return [_worker_tokenizers[spec].count(text, allow_special=allow_special)
            for spec, text in items]


def _count_batch(
    tokenizers: Mapping[str, Tokenizer], items: list[tuple[str, str]], allow_special: bool
) -> list[int]:
    return [tokenizers[spec].count(text, allow_special=allow_special) for spec, text in items]


BATCH_CHARS = 1 << 20  # work handed to a worker at once: many small files, or one chunk


class _CountExecutor:
    """Runs counting work inline, on threads, or on processes, with bounded queueing.

    Threads when every tokenizer's core releases the GIL (tiktoken, tokenizers):
    no start-up cost and no copying of text between processes. Processes otherwise.
    Small texts are batched (about BATCH_CHARS a task) so a tree of many small
    files costs few hand-offs; at most 4 x jobs batches are in flight.
    """

    def __init__(
        self, tokenizers: Mapping[str, Tokenizer], jobs: int, allow_special: bool
    ) -> None:
        self.tokenizers = tokenizers
        self.allow_special = allow_special
        self.jobs = max(1, jobs)
        self.executor: Executor | None = None
        self.threads = all(t.releases_gil for t in tokenizers.values())
        if self.jobs > 1:
            if self.threads:
                self.executor = ThreadPoolExecutor(self.jobs)
            else:
                self.executor = ProcessPoolExecutor(
                    self.jobs, initializer=_init_worker, initargs=(list(tokenizers),)
                )
        self.batch: list[tuple[FileCount, str, str]] = []
        self.batch_chars = 0
        self.inflight: list[tuple[Future[list[int]], list[tuple[FileCount, str]]]] = []

    def submit(self, target: FileCount, spec: str, text: str) -> None:
        """Add the tokens of ``text`` to ``target.tokens[spec]`` (now, or by ``close``)."""
        if self.executor is None:
            n = self.tokenizers[spec].count(text, allow_special=self.allow_special)
            target.tokens[spec] += n
            return
        self.batch.append((target, spec, text))
        self.batch_chars += len(text)
        if self.batch_chars >= BATCH_CHARS:
            self.flush()

    def flush(self) -> None:
        if not self.batch or self.executor is None:
            return
        items = [(spec, text) for _, spec, text in self.batch]
        owners = [(target, spec) for target, spec, _ in self.batch]
        self.batch, self.batch_chars = [], 0
        if self.threads:
            fut = self.executor.submit(_count_batch, self.tokenizers, items, self.allow_special)
        else:
            fut = self.executor.submit(_count_batch_in_worker, items, self.allow_special)
        self.inflight.append((fut, owners))
        if len(self.inflight) >= 4 * self.jobs:  # bound memory: wait for the oldest
            self.drain(keep=2 * self.jobs)

    def drain(self, keep: int = 0) -> None:
        while len(self.inflight) > keep:
            fut, owners = self.inflight.pop(0)
            for (target, spec), n in zip(owners, fut.result(), strict=True):
                target.tokens[spec] += n

    def close(self) -> None:
        try:
            self.flush()
            self.drain()
        finally:
            if self.executor is not None:
                self.executor.shutdown(wait=True, cancel_futures=True)


def refuse_urls(paths: Iterable[str | Path]) -> None:
    """URLs (``s3://...``, ``https://...``) are read by the Dask engine only."""
    for raw in paths:
        if "://" in str(raw) and not os.path.exists(raw):
            raise UsageError(f"{raw} is a URL: URLs need engine=dask (this engine reads "
                             "files, folders and stdin)", param="engine")


@dataclass(frozen=True)
class LocalEngine:
    """Count and pre-tokenize on this machine: ``jobs`` threads for tokenizers whose
    cores release the GIL (tiktoken, tokenizers), else ``jobs`` processes."""

    jobs: int = 1
    block_bytes: int = BLOCK_BYTES

    def count_paths(
        self,
        paths: Sequence[str],
        tokenizers: Mapping[str, Tokenizer],
        *,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        gitignore: bool = True,
        allow_special: bool = False,
        stdin: BinaryIO | None = None,
        progress: ProgressFn | None = None,
    ) -> CountReport:
        """See ``count_paths``. Counts are exact for any file size: streamable
        tokenizers see boundary-safe chunks, the others the whole text."""
        refuse_urls(paths)
        report = CountReport(specs=list(tokenizers))
        executor = _CountExecutor(tokenizers, self.jobs, allow_special)
        done = 0
        try:
            for source in walk(paths, include=include, exclude=exclude, gitignore=gitignore,
                               skipped=report.skipped):
                counted = self._count_source(source, stdin, executor, report.skipped)
                if counted is None:
                    continue
                report.files.append(counted)
                done += counted.bytes
                if progress is not None:
                    progress("count", done, 0)  # 0: the total is not known while walking
        finally:
            executor.close()  # the counts still in flight land in report.files
        return report

    def _count_source(
        self,
        source: Source,
        stdin: BinaryIO | None,
        executor: _CountExecutor,
        skipped: list[Skipped],
    ) -> FileCount | None:
        if source.path == STDIN:
            reason, piped = sniff_source(stdin_source(stdin))
            if reason is None:
                return self._count_handle(source, piped, executor, skipped)
            skipped.append(Skipped(source.display, reason))
            return None
        try:
            with open(source.path, "rb") as handle:
                reason = sniff_binary(handle.peek(SNIFF_BYTES))
                if reason is None:  # read errors past this point are caught as such
                    return self._count_handle(source, handle, executor, skipped)
        except IsADirectoryError:
            return None
        except OSError as err:
            skipped.append(Skipped(source.display, f"unreadable ({err.strerror})"))
            return None
        skipped.append(Skipped(source.display, reason))
        return None

    def _count_handle(
        self,
        source: Source,
        handle: ByteSource,
        executor: _CountExecutor,
        skipped: list[Skipped],
    ) -> FileCount | None:
        counted = FileCount(path=source.display, tokens=dict.fromkeys(executor.tokenizers, 0))
        try:
            stream = read_text(
                handle, executor.tokenizers,
                lambda spec, text: executor.submit(counted, spec, text),
                name=source.display, block_bytes=self.block_bytes,
                allow_special=executor.allow_special)
        except OSError as err:
            skipped.append(Skipped(source.display, f"read error ({err.strerror})"))
            return None
        counted.bytes = stream.bytes
        counted.chars = stream.chars
        counted.invalid_utf8_bytes = stream.invalid_bytes
        return counted

    def count_words(
        self, paths: Sequence[str | Path], pattern: str, *, progress: ProgressFn | None = None
    ) -> Counter[str]:
        """See ``tokcost.bpe.pretokenize.count_words`` (``jobs`` processes)."""
        from tokcost.bpe.pretokenize import count_words

        refuse_urls(paths)
        return count_words(paths, pattern, jobs=self.jobs, progress=progress)


class Engine(Protocol):
    """Where counting runs: ``LocalEngine`` here, ``tokcost.scale.DaskEngine`` on Dask."""

    def count_paths(
        self,
        paths: Sequence[str],
        tokenizers: Mapping[str, Tokenizer],
        *,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        gitignore: bool = True,
        allow_special: bool = False,
        stdin: BinaryIO | None = None,
        progress: ProgressFn | None = None,
    ) -> CountReport: ...

    def count_words(
        self, paths: Sequence[str | Path], pattern: str, *, progress: ProgressFn | None = None
    ) -> Counter[str]: ...


def count_paths(
    paths: Sequence[str],
    tokenizers: Mapping[str, Tokenizer],
    *,
    engine: Engine | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    gitignore: bool = True,
    allow_special: bool = False,
    stdin: BinaryIO | None = None,
    progress: ProgressFn | None = None,
) -> CountReport:
    """Count every file under ``paths`` (``-`` is standard input) with each tokenizer.

    ``tokenizers`` maps a spec to its tokenizer; each file is read once for all.
    ``engine`` runs it (default: ``LocalEngine()``, one worker here).
    ``progress("count", bytes_done, bytes_total or 0)`` reports the bytes read.
    """
    return (engine or LocalEngine()).count_paths(
        paths, tokenizers, include=include, exclude=exclude, gitignore=gitignore,
        allow_special=allow_special, stdin=stdin, progress=progress)
