"""The input policy every command reads under: invalid UTF-8 becomes U+FFFD and is reported, a
binary file is skipped with the reason (skips summed up in few lines), ``-`` is stdin; ``Inputs``
says what to read."""

from __future__ import annotations

import codecs
import os
import stat
import sys
import threading
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import BinaryIO, Protocol

from tokcost.errors import InputError, UsageError, arg

BLOCK_BYTES = 1 << 20  # read size; chunks handed to the tokenizer are about this big
SNIFF_BYTES = 8000  # like git: a NUL byte in the first 8000 bytes means binary
STDIN = "-"
STDIN_NAME = "<stdin>"


class ByteSource(Protocol):  # what the streaming reader reads: a binary file, any read(n)
    def read(self, n: int = -1, /) -> bytes: ...


def _strings(value: object, name: str) -> tuple[str, ...]:
    """A request's list of paths or globs: a bare string (or path) is one, not its letters."""
    if isinstance(value, (str, os.PathLike)):
        return (os.fspath(value),)
    if isinstance(value, Iterable):
        return tuple(os.fspath(v) if isinstance(v, os.PathLike) else str(v) for v in value)
    raise UsageError(f"{arg(name)} takes a path or a list of them, got {value!r}",
                     param=name, value=value)


@dataclass(frozen=True, kw_only=True)
class Inputs:
    """What to read: ``paths`` (files, folders, ``-`` for ``stdin``; a bare string is one
    path), folders walked with the ``include``/``exclude`` globs and ``.gitignore``, their
    symlinks read only with ``follow``."""

    paths: Sequence[str] = ()
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    gitignore: bool = True
    follow: bool = False
    stdin: BinaryIO | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("paths", "include", "exclude"):
            object.__setattr__(self, name, _strings(getattr(self, name), name))


def refuse_urls(paths: Iterable[str]) -> None:
    for raw in paths:
        if "://" in raw and not os.path.exists(raw):
            raise UsageError(f"{raw} is a URL: URLs need {arg('engine', 'dask')} (this engine "
                             "reads files, folders and stdin)", param="engine")


_invalid = threading.local()


def _count_invalid(exc: UnicodeError) -> tuple[str, int]:
    assert isinstance(exc, UnicodeDecodeError)
    _invalid.n = getattr(_invalid, "n", 0) + (exc.end - exc.start)
    return "\ufffd", exc.end


codecs.register_error("tokcost.replace", _count_invalid)
_utf8_decode = codecs.utf_8_decode  # (text, bytes used); the core of every UTF-8 decoder
UTF8 = "UTF-8"
# Byte order marks (the Unicode Standard, §23.8 "Byte Order Mark"; Python's codecs.BOM_*).
# UTF-32's little-endian mark begins with UTF-16's, so it is looked for first.
_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32"), (codecs.BOM_UTF32_BE, "UTF-32"),
         (codecs.BOM_UTF16_LE, "UTF-16"), (codecs.BOM_UTF16_BE, "UTF-16"))


def bom_encoding(head: bytes) -> str | None:
    """b'\\xff\\xfeh\\x00' -> 'UTF-16': the encoding a byte order mark names, or None."""
    return next((name for bom, name in _BOMS if head.startswith(bom)), None)


class Utf8Decoder:
    """An incremental UTF-8 decoder that puts U+FFFD for invalid bytes and counts them."""

    def __init__(self) -> None:
        self._carry = b""  # the start of a character cut off at the end of the last block
        self.invalid_bytes = 0

    def decode(self, data: bytes, final: bool = False) -> str:
        if self._carry:
            data = self._carry + data
        try:
            # An incomplete character at the end is left for the next call (unless final).
            text, used = _utf8_decode(data, "strict", final)
        except UnicodeDecodeError:
            # The handler counts per thread; the difference over one call is this call's.
            before = getattr(_invalid, "n", 0)
            text, used = _utf8_decode(data, "tokcost.replace", final)
            self.invalid_bytes += getattr(_invalid, "n", 0) - before
        self._carry = data[used:] if used < len(data) else b""
        return text


def decode_utf8(data: bytes) -> tuple[str, int]:
    decoder = Utf8Decoder()
    return decoder.decode(data, final=True), decoder.invalid_bytes


def invalid_utf8_note(name: str, invalid_bytes: int, encoding: str = UTF8) -> str:
    unit = "byte" if invalid_bytes == 1 else "bytes"
    return f"{name}: {invalid_bytes} {unit} of invalid {encoding} replaced with U+FFFD"


def sniff_binary(data: bytes, offset: int = 0) -> str | None:
    """Why a file holding ``data`` at ``offset`` is skipped (a NUL byte, as git decides, but
    anywhere: text that turns into zeros is not read whole), or None."""
    nul = data.find(b"\x00")
    if nul < 0:
        return None
    if offset == 0 and (encoding := bom_encoding(data)) is not None:  # a reader of UTF-8 only
        return (f"{encoding} text (byte order mark), not read here (UTF-8 only): convert it "
                f"with iconv -f {encoding} -t UTF-8")
    return f"binary (NUL byte at offset {offset + nul})"


class LateBinary(InputError):
    """A NUL byte past the sniffed head: the stream stops there (its count is dropped)."""


class WideDecoder(Utf8Decoder):
    """UTF-16 or UTF-32, as the byte order mark says (the mark itself dropped, as Python's
    'utf-16' codec drops it); invalid units become U+FFFD and are counted; a U+0000
    character makes the input binary (LateBinary), as a NUL byte does in UTF-8."""

    def __init__(self, encoding: str) -> None:
        super().__init__()
        self.encoding, self._chars = encoding, 0
        self._wide = codecs.getincrementaldecoder(encoding.lower())("tokcost.replace")

    def decode(self, data: bytes, final: bool = False) -> str:
        before = getattr(_invalid, "n", 0)
        text: str = self._wide.decode(data, final)
        self.invalid_bytes += getattr(_invalid, "n", 0) - before
        if (nul := text.find("\x00")) >= 0:
            raise LateBinary(f"binary (U+0000 at character {self._chars + nul} of its "
                             f"{self.encoding} text)")
        self._chars += len(text)
        return text


def decoder_for(encoding: str) -> Utf8Decoder:
    return Utf8Decoder() if encoding == UTF8 else WideDecoder(encoding)


def sniff_text(head: bytes) -> tuple[str | None, str]:
    """Why the input that begins with ``head`` is skipped (or None), and its encoding: the
    UTF-16 or UTF-32 a byte order mark names, else UTF-8 (``sniff_binary``)."""
    encoding = bom_encoding(head)
    if encoding is None:
        return sniff_binary(head), UTF8
    try:
        WideDecoder(encoding).decode(head)
    except LateBinary as late:
        return str(late), encoding
    return None, encoding


@dataclass
class TextOnly:
    """A byte source that raises LateBinary at its first NUL byte, so a file that turns
    binary past its sniffed head (text, then gigabytes of zeros) is not read whole."""

    source: ByteSource
    offset: int = 0

    def read(self, n: int = -1, /) -> bytes:
        block = self.source.read(n)
        if (binary := sniff_binary(block, self.offset)) is not None:
            raise LateBinary(binary)
        self.offset += len(block)
        return block


@dataclass(frozen=True)
class Skipped:
    """An input left out, and why (``binary (NUL byte at offset 6)``)."""

    path: str
    reason: str

    @property
    def note(self) -> str:
        return f"skipped {self.path}: {self.reason}"


Invalid = Iterable[tuple[str, int] | tuple[str, int, str]]  # (name, bytes replaced[, encoding])


def input_warnings(skipped: Iterable[Skipped], invalid: Invalid = ()) -> tuple[str, ...]:
    """The input policy's warnings: each input skipped, then each ``(name, bytes replaced)``."""
    return (*(s.note for s in skipped),
            *(invalid_utf8_note(*item) for item in invalid if item[1]))


BINARY = "binary"  # how sniff_binary's reasons begin
SAME_FILE = "the same file as"  # a path to a file already counted (walk with unique=True)
SHOWN_KINDS = 3  # the commonest extensions a binary summary names; the rest are "others"
UNREADABLE = ("unreadable", "read error")


def same_file_reason(first: str) -> str:
    return f"{SAME_FILE} {first} (counted once)"


def is_unreadable(skip: Skipped) -> bool:
    """Whether ``skip`` could not be read, rather than being left out by policy."""
    return skip.reason.startswith(UNREADABLE)


def unreadable(skipped: Iterable[Skipped]) -> tuple[Skipped, ...]:
    return tuple(s for s in skipped if is_unreadable(s))


def unreadable_message(skipped: Iterable[Skipped]) -> str | None:
    """The one error line, after the counts, for the inputs that could not be read, or None."""
    failed = len(unreadable(skipped))
    if not failed:
        return None
    inputs = "input" if failed == 1 else "inputs"
    return f"{failed:,} {inputs} could not be read (see the warnings above)"


def _kinds(paths: Iterable[str]) -> str:
    """'700 .pyc, 10 .png, 4 .so, 2 others': the commonest extensions, the rest counted."""
    kinds = Counter(PurePath(p).suffix.lower() for p in paths)
    ranked = sorted(kinds.items(), key=lambda kv: (-kv[1], not kv[0], kv[0]))
    parts = [f"{n:,} {ext}" if ext else f"{n:,} with no extension"
             for ext, n in ranked[:SHOWN_KINDS]]
    rest = sum(n for _, n in ranked[SHOWN_KINDS:])
    return ", ".join(parts + ([f"{rest:,} others"] if rest else []))


def _binary_line(skips: Sequence[Skipped]) -> str:
    return f"skipped {len(skips):,} binary files: {_kinds(s.path for s in skips)}"


def _same_file_line(skips: Sequence[Skipped]) -> str:
    return (f"skipped {len(skips):,} paths to files counted already (the same device and "
            "inode, as du counts)")


def skip_notes(skipped: Iterable[Skipped], *, verbose: bool = False,
               hint: str = "") -> tuple[str, ...]:
    """One warning per skip, but binary files (or paths counted already) summed up in one line."""
    skipped = list(skipped)
    if verbose:
        return tuple(s.note for s in skipped)
    summaries: list[str] = []
    for kind, line in ((BINARY, _binary_line), (SAME_FILE, _same_file_line)):
        group = [s for s in skipped if s.reason.startswith(kind)]
        if len(group) > 1:
            summaries.append(line(group) + (f"; {hint}" if hint else ""))
            skipped = [s for s in skipped if not s.reason.startswith(kind)]
    return (*(s.note for s in skipped), *summaries)


def count_warnings(skipped: Iterable[Skipped], invalid: Invalid = (), *,
                   verbose: bool = False, hint: str = "") -> tuple[str, ...]:
    """``skip_notes``, then the inputs with invalid UTF-8: one line each, or, several and not
    ``verbose``, one line for all, as binary files are summed up."""
    bad = [item for item in invalid if item[1]]
    if verbose or len(bad) < 2:
        return (*skip_notes(skipped, verbose=verbose, hint=hint), *input_warnings((), bad))
    total = sum(item[1] for item in bad)
    line = (f"{len(bad):,} files hold invalid text ({total:,} bytes replaced with U+FFFD): "
            f"{_kinds(item[0] for item in bad)}" + (f"; {hint}" if hint else ""))
    return (*skip_notes(skipped, verbose=verbose, hint=hint), line)


class _Prefixed:
    def __init__(self, head: bytes, rest: ByteSource) -> None:
        self.head, self.rest = head, rest

    def read(self, n: int = -1, /) -> bytes:
        if not self.head:
            return self.rest.read(n)
        cut = len(self.head) if n < 0 else n
        data, self.head = self.head[:cut], self.head[cut:]
        return data + self.rest.read() if n < 0 else data


def sniff_source(source: ByteSource, *, wide: bool = False) -> tuple[str | None, str, ByteSource]:
    """Why a stream is skipped (or None), its encoding (UTF-16/32 from a byte order mark only
    when the caller reads them: ``wide``) and the stream with its sniffed bytes put back."""
    head = b""  # a pipe may hand over less than asked
    while len(head) < SNIFF_BYTES and (more := source.read(SNIFF_BYTES - len(head))):
        head += more
    reason, encoding = sniff_text(head) if wide else (sniff_binary(head), UTF8)
    return reason, encoding, _Prefixed(head, source)


def stdin_source(stdin: BinaryIO | None = None) -> ByteSource:
    return stdin if stdin is not None else sys.stdin.buffer


def stdin_size(stdin: BinaryIO | None = None) -> int | None:
    """The bytes left on ``stdin`` when it is a regular file (``tokcount - < big.txt``)."""
    source = stdin_source(stdin)
    try:
        info = os.fstat(source.fileno())  # type: ignore[attr-defined]
        if not stat.S_ISREG(info.st_mode):
            return None
        at = source.tell()  # type: ignore[attr-defined]  # what was read before, buffered too
    except (AttributeError, OSError, ValueError):  # no file behind it, or a closed one
        return None
    return max(info.st_size - int(at), 0)


def not_a_folder(raw: str) -> str:
    """The usage error for a path through a file as if a folder (``notes.txt/``)."""
    if raw.endswith("/") and os.path.lexists(raw.rstrip("/")):
        return f"{raw} is not a folder; drop the trailing '/' to read the file"
    return f"no such file or folder: {raw}"


@dataclass(frozen=True)
class InputText:
    name: str  # the path as given, or <stdin>
    text: str
    bytes: int
    invalid_bytes: int = 0
    encoding: str = UTF8  # or the UTF-16/32 its byte order mark names

    @property
    def warnings(self) -> tuple[str, ...]:
        return input_warnings((), [(self.name, self.invalid_bytes, self.encoding)])


def decode_input(name: str, data: bytes) -> InputText | Skipped:
    """A whole input's text (UTF-8, or the UTF-16/32 its byte order mark names), or why it is
    skipped (binary)."""
    encoding = bom_encoding(data)
    if encoding is None:
        if (reason := sniff_binary(data)) is not None:
            return Skipped(name, reason)
        text, invalid = decode_utf8(data)
        return InputText(name, text, len(data), invalid)
    decoder = WideDecoder(encoding)
    try:
        text = decoder.decode(data, final=True)
    except LateBinary as late:
        return Skipped(name, str(late))
    return InputText(name, text, len(data), decoder.invalid_bytes, encoding)


def load_input(path: str | Path, *, stdin: BinaryIO | None = None) -> InputText | Skipped:
    """The whole text of one input (``-``: stdin), or why it is skipped."""
    raw = name = str(path)
    if raw == STDIN:
        name, data = STDIN_NAME, _read_text_bytes(STDIN_NAME, stdin_source(stdin))
    else:
        try:
            # open(), not Path.read_bytes(): pathlib would read "notes.txt/" as notes.txt
            with open(raw, "rb") as handle:
                data = _read_text_bytes(name, handle)
        except FileNotFoundError:
            raise UsageError(f"no such file: {raw or repr(raw)}") from None
        except IsADirectoryError:
            raise UsageError(f"{raw} is a folder; give one file, or '-' for stdin") from None
        except NotADirectoryError:
            raise UsageError(not_a_folder(raw)) from None
        except OSError as err:
            return Skipped(name, f"unreadable ({err.strerror})")
    return decode_input(name, data) if isinstance(data, bytes) else data


def _read_text_bytes(name: str, source: ByteSource) -> bytes | Skipped:
    """All of ``source``, unless its head is binary: /dev/zero is not read to the end."""
    reason, _, rest = sniff_source(source, wide=True)
    return Skipped(name, reason) if reason is not None else rest.read()


def read_input(path: str | Path, *, stdin: BinaryIO | None = None) -> InputText:
    """``load_input``, a skipped input raising InputError."""
    read = load_input(path, stdin=stdin)
    if isinstance(read, Skipped):
        raise InputError(f"{read.note}; give a text file")
    return read
