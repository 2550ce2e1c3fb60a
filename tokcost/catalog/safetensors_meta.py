"""A safetensors checkpoint's tensors from its headers alone, without the optional
``safetensors`` package: 6 ms, not ~200 ms (docs/models.md)."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path

from tokcost.errors import InputError
from tokcost.limits import loads_json

# The safetensors library refuses longer headers (safetensors/src/tensor.rs MAX_HEADER_SIZE).
MAX_HEADER_BYTES = 100_000_000

# Bits per element (safetensors/src/tensor.rs, Dtype::bitsize): offsets that disagree with
# shape x bits are corrupt; an unknown dtype keeps its exact bytes and counts no parameters.
DTYPE_BITS: dict[str, int] = {
    "BOOL": 8, "U8": 8, "I8": 8, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "I16": 16, "U16": 16,
    "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32, "I64": 64, "U64": 64, "F64": 64,
    "C64": 64, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6}
_DAMAGED = "the file is damaged or not safetensors: download it again"


@dataclass(frozen=True)
class TensorMeta:
    name: str
    dtype: str  # as safetensors writes it: BF16, F32, U8, F8_E4M3...
    shape: tuple[int, ...]
    nbytes: int  # data_offsets end - begin: its bytes in the file, exactly

    @property
    def elements(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class Checkpoint:
    """The tensors of a checkpoint's shards, and what reading their headers took."""

    files: tuple[Path, ...]
    tensors: tuple[TensorMeta, ...]
    bytes_read: int  # header bytes read from the shards (8 + N each)


def parse_header(data: bytes, where: str, *, data_bytes: int | None = None
                 ) -> tuple[TensorMeta, ...]:
    """The tensors of a header's JSON; ``data_bytes`` (when known) bounds every offset."""
    try:
        header = loads_json(data)
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{where}: the safetensors header is not JSON ({exc}); "
                         f"{_DAMAGED}") from None
    if not isinstance(header, dict):
        raise InputError(f"{where}: the safetensors header is not a JSON object; {_DAMAGED}")
    return tuple(_tensor(name, info, where, data_bytes) for name, info in header.items()
                 if name != "__metadata__")


def _tensor(name: str, info: object, where: str, data_bytes: int | None) -> TensorMeta:
    def bad(why: str) -> InputError:
        return InputError(f"{where}: tensor '{name}' {why} in the safetensors header; "
                          "the file is damaged: download it again")

    if not isinstance(info, dict):
        raise bad("has no description")
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if not isinstance(dtype, str):
        raise bad("has no dtype")
    if not isinstance(shape, list) or not all(map(_natural, shape)):
        raise bad("has no valid shape")
    if (not isinstance(offsets, list) or len(offsets) != 2 or not all(map(_natural, offsets))
            or offsets[0] > offsets[1]):
        raise bad("has no valid data_offsets")
    begin, end = offsets
    if data_bytes is not None and end > data_bytes:
        raise bad(f"ends at byte {end:,}, past the file's {data_bytes:,} data bytes (truncated?)")
    bits = DTYPE_BITS.get(dtype)
    if bits is not None and math.ceil(math.prod(shape) * bits / 8) != end - begin:
        raise bad(f"holds {end - begin:,} bytes, not the {math.prod(shape):,} x {dtype} "
                  "its shape says")
    return TensorMeta(name, dtype, tuple(shape), end - begin)


def _natural(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def read_header(path: Path) -> tuple[tuple[TensorMeta, ...], int]:
    """The tensors of one ``.safetensors`` file, and the bytes read to learn them."""
    try:
        # Unbuffered: a buffered file would read ahead 8 KiB (or far more) past the 8 bytes.
        with open(path, "rb", buffering=0) as f:
            size = f.seek(0, 2)
            f.seek(0)
            head = f.read(8)
            if len(head) < 8:
                raise InputError(f"{path}: {size} bytes, too short for a safetensors file; "
                                 "download it again")
            (length,) = struct.unpack("<Q", head)
            if length > MAX_HEADER_BYTES or 8 + length > size:
                raise InputError(f"{path}: the safetensors header claims {length:,} bytes in a "
                                 f"{size:,}-byte file; {_DAMAGED}")
            chunks: list[bytes] = []
            left = length
            while left and (chunk := f.read(left)):  # a raw read may return fewer bytes
                chunks.append(chunk)
                left -= len(chunk)
    except FileNotFoundError:
        raise InputError(f"{path} does not exist; download the checkpoint's shards "
                         "(or give a folder without them)") from None
    except IsADirectoryError:
        raise InputError(f"{path} is a folder, not a safetensors file") from None
    except PermissionError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}") from None
    return parse_header(b"".join(chunks), str(path), data_bytes=size - 8 - length), 8 + length


def shard_names(folder: Path) -> tuple[str, ...] | None:
    """A model folder's checkpoint files (Mistral's ``consolidated`` file last), or None."""
    where = folder / "model.safetensors.index.json"  # weight_map: tensor name -> shard file
    if not where.is_file():
        return next(((n,) for n in ("model.safetensors", "consolidated.safetensors")
                     if (folder / n).is_file()), None)
    try:
        index = loads_json(where.read_bytes())
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{where} is not JSON ({exc}); download it again") from None
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise InputError(f"{where} has no weight_map of tensor names to shard files; "
                         "download it again")
    names = tuple(dict.fromkeys(weight_map.values()))  # in first-named order
    for name in names:
        if "/" in name or "\\" in name or name in ("", ".", ".."):
            raise InputError(f"{where} names a shard outside its folder ({name!r})")
    return names


def read_checkpoint(folder: Path, names: tuple[str, ...]) -> Checkpoint | None:
    """Every shard's headers; None when none is there, an error when only some are."""
    files = tuple(folder / n for n in names)
    missing = [f.name for f in files if not f.is_file()]
    if len(missing) == len(files):
        return None
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise InputError(f"{folder}: shard {missing[0]}{more} of the checkpoint is missing; "
                         "download every shard of it")
    headers = [read_header(path) for path in files]
    return Checkpoint(files, tuple(t for found, _ in headers for t in found),
                      sum(n for _, n in headers))
