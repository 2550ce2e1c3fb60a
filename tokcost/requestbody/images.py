"""Images in a request body: their size, read from a ``data:`` URL or a local file (never the
network), and each provider's published rule turning a size into billed input tokens."""

from __future__ import annotations

import base64
import binascii
import io
import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tokcost.errors import MissingDependency


@dataclass(frozen=True)
class ImageTokens:
    tokens: int
    exact: bool
    rule: str  # the rule applied, for the notes


def image_size(ref: str, base: Path) -> tuple[int, int] | str:
    """(width, height) of the image ``ref`` names, or why it cannot be known offline."""
    if ref.startswith("data:"):
        header, sep, payload = ref.partition(",")
        if not sep or not header.endswith(";base64"):
            return "a data: URL that is not base64"
        try:
            return _measure(io.BytesIO(base64.b64decode(payload, validate=True)))
        except binascii.Error:
            return "a data: URL whose base64 does not decode"
    if "://" in ref:
        return "a remote URL: not fetched, tokcost counts offline (give a data: URL or a file)"
    path = Path(ref) if Path(ref).is_absolute() else base / ref
    if not path.is_file():  # a regular file only: a FIFO or device would block or never end
        return "neither a data: URL nor a local file"
    return _measure(path)


def decoded_size(data: str) -> tuple[int, int] | str:
    """The size of a base64 image (Anthropic's ``source.data``)."""
    return image_size(f"data:;base64,{data}", Path())


def _measure(source: Path | io.BytesIO) -> tuple[int, int] | str:
    try:
        from PIL import Image
    except ImportError:
        raise MissingDependency("pillow", "images", "counting an image's tokens") from None
    # Image.open reads the header only (no pixel is decoded); Pillow's decompression-bomb
    # guard still refuses a header claiming more than twice Image.MAX_IMAGE_PIXELS.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        try:
            with Image.open(source) as image:
                width, height = image.size
        except Image.DecompressionBombError:
            return f"more than {2 * (Image.MAX_IMAGE_PIXELS or 0):,} pixels (Pillow's bomb guard)"
        except (OSError, SyntaxError, ValueError):
            return "not an image Pillow can read"
    return (width, height) if width > 0 and height > 0 else "an image of no pixels"


# OpenAI, "Images and vision" > "Calculating costs":
# https://platform.openai.com/docs/guides/images-vision#calculating-costs
# Patch models: 32 px patches, at most 1536, times the model's multiplier.
PATCH_MULTIPLIERS = {"gpt-5-mini": 1.62, "gpt-5-nano": 2.46, "gpt-4.1-mini": 1.62,
                     "gpt-4.1-nano": 2.46, "o4-mini": 1.72}
PATCH, MAX_PATCHES = 32, 1536
# Tile models: (base tokens, tokens per 512 px tile); "detail": "low" costs the base alone.
TILE_TOKENS = {"gpt-4o-mini": (2833, 5667), "gpt-4o": (85, 170), "chatgpt-4o-latest": (85, 170),
               "gpt-4.1": (85, 170), "gpt-4.5": (85, 170), "gpt-5": (70, 140),
               "gpt-5-chat-latest": (70, 140), "o1": (75, 150), "o1-pro": (75, 150),
               "o3": (75, 150), "computer-use-preview": (65, 129)}


def _listed(model: str, table: dict[str, Any]) -> str | None:
    """The table's key for ``model``: the id itself or a dated snapshot of it."""
    return next((k for k in sorted(table, key=len, reverse=True)
                 if model == k or model.startswith(k + "-20")), None)


def _ceil(x: float) -> int:
    # The rules' scaled sizes are exact multiples (1056 / 32 = 33) that floats miss by 1e-13.
    return math.ceil(x - 1e-9)


def openai_patches(width: int, height: int) -> int:
    """Patches billed for an image on the patch models (before the multiplier)."""
    w, h = float(width), float(height)
    if _ceil(w / PATCH) * _ceil(h / PATCH) > MAX_PATCHES:
        r = math.sqrt(PATCH * PATCH * MAX_PATCHES / (w * h))
        # The guide's floor takes a side narrower than one patch (20 x 100,000 px) to none,
        # billing nothing: such a side keeps its one patch.
        r *= min(max(1, math.floor(w * r / PATCH)) / (w * r / PATCH),
                 max(1, math.floor(h * r / PATCH)) / (h * r / PATCH))
        w, h = w * r, h * r
    return min(_ceil(w / PATCH) * _ceil(h / PATCH), MAX_PATCHES)


def openai_tiles(width: int, height: int) -> int:
    """512 px tiles of an image in "detail": "high" on the tile models."""
    w, h = float(width), float(height)
    if max(w, h) > 2048:  # fit in a 2048 x 2048 square
        w, h = w * 2048 / max(w, h), h * 2048 / max(w, h)
    if min(w, h) > 768:  # then the shortest side to 768
        w, h = w * 768 / min(w, h), h * 768 / min(w, h)
    return _ceil(w / 512) * _ceil(h / 512)


def openai_image(model: str, size: tuple[int, int] | None, detail: str) -> ImageTokens | None:
    """An image's tokens on an OpenAI model; None when its size is needed and unknown.
    "auto" lets the model choose: counted as "high" (its upper bound), marked approximate."""
    patch = _listed(model, PATCH_MULTIPLIERS)
    if patch is not None:  # the patch models take no detail
        if size is None:
            return None
        tokens = math.ceil(openai_patches(*size) * PATCH_MULTIPLIERS[patch])
        return ImageTokens(tokens, True, f"{patch}: 32 px patches x {PATCH_MULTIPLIERS[patch]}")
    tile = _listed(model, TILE_TOKENS)
    base, per_tile = TILE_TOKENS[tile or "gpt-4o"]
    rule = f"{tile or 'gpt-4o (unlisted model)'}: {base} + {per_tile} per 512 px tile"
    if detail == "low":
        return ImageTokens(base, tile is not None, rule)
    if size is None:
        return None
    return ImageTokens(base + per_tile * openai_tiles(*size),
                       tile is not None and detail == "high", rule)


# Anthropic, "Vision" > "Evaluate image size": an image whose long edge is over 1568 px, or
# that would take over ~1,600 tokens, is first scaled down (aspect kept); then
# tokens = width * height / 750, "approximate" by the page's own word.
# https://platform.claude.com/docs/en/build-with-claude/vision#evaluate-image-size
def anthropic_image(width: int, height: int) -> ImageTokens:
    scale = min(1.0, 1568 / max(width, height), math.sqrt(1600 * 750 / (width * height)))
    w, h = max(1, int(width * scale)), max(1, int(height * scale))  # 1 x 3000: not 0 x 1568
    return ImageTokens(math.ceil(w * h / 750), False, "width x height / 750 after resizing")
