"""Deterministic image preprocessing shared by the cache build and by inference on files.

Torch-free on purpose (numpy + Pillow only): inference on files with an ONNX model runs on a box that has
no torch. Whatever the cache does to an image, inference on a file does exactly the same.

Pipeline for one file: decode -> orientation from EXIF -> convert to the configured channels (8-bit) ->
resize the shorter side to ``resize_size`` -> centre-crop to ``resize_size``. The dataset then random-crops
(train) or centre-crops (eval) ``image_size`` out of that.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import BinaryIO

import numpy as np
from PIL import Image, ImageOps

from .listing import file_problem

#: File extensions treated as images; everything else (and hidden files) is ignored.
IMAGE_EXTENSIONS = frozenset({".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff", ".gif", ".ppm", ".pgm"})

#: Cache images are this much larger than ``image_size`` (ImageNet's 256/224), so random crops have room.
RESIZE_RATIO = 1.14

#: The resize filters implemented (``model.json``'s ``preprocessing.resize.interpolation``): Pillow's, antialiased.
RESAMPLING = {"bilinear": Image.Resampling.BILINEAR, "bicubic": Image.Resampling.BICUBIC}


def is_image_file(name: str) -> bool:
    """True for a visible file with an image extension (``.DS_Store``, ``notes.txt`` -> False)."""
    base = os.path.basename(name)
    return not base.startswith(".") and os.path.splitext(base)[1].lower() in IMAGE_EXTENSIONS


def as_size(size: int | Sequence[int]) -> tuple[int, int]:
    """``224`` or ``[224, 224]`` -> ``(224, 224)`` as ``(height, width)``."""
    if isinstance(size, int):
        return (size, size)
    size = tuple(int(s) for s in size)
    if len(size) != 2 or min(size) < 1:
        raise ValueError(f"image size must be an int or [height, width] of positive ints, got {list(size)}")
    return size


def resize_size_for(
    image_size: int | Sequence[int], ratio: float = RESIZE_RATIO, crop_pct: float | None = None
) -> tuple[int, int]:
    """The stored size for a given training ``image_size``: a little larger, for random-crop room. With a
    ``crop_pct`` (a timm backbone's), ``floor(side / crop_pct)`` as timm's eval transform resizes."""
    h, w = as_size(image_size)
    if crop_pct is not None:
        return (max(h, math.floor(h / crop_pct)), max(w, math.floor(w / crop_pct)))
    return (max(h, round(h * ratio)), max(w, round(w * ratio)))


def _to_8bit(image: Image.Image) -> Image.Image:
    """16/32-bit integer and float images -> 8-bit grayscale, scaled by their dtype range (not clipped)."""
    array = np.asarray(image)
    if array.dtype == np.uint8:
        return image
    if np.issubdtype(array.dtype, np.floating):
        scaled = np.clip(array, 0.0, 1.0) * 255.0 if array.max() <= 1.0 else np.clip(array, 0, 255)
    else:
        top = 65535.0 if array.max() > 255 or array.dtype == np.uint16 or image.mode.startswith("I;16") else 255.0
        scaled = np.clip(array.astype(np.float64) * (255.0 / top), 0, 255)  # 32-bit values above 65535 saturate
    return Image.fromarray(np.round(scaled).astype(np.uint8), mode="L")


def convert_mode(image: Image.Image, channels: int) -> Image.Image:
    """Any PIL mode (L, RGB, RGBA, P, CMYK, I;16, I, F, LA, ...) -> ``L`` (channels=1) or ``RGB`` (channels=3).

    Transparent pixels are composited onto white, as a viewer would show them.
    """
    if channels not in (1, 3):
        raise ValueError(f"channels must be 1 or 3, got {channels}")
    if image.mode in ("I;16", "I;16B", "I;16L", "I;16N", "I", "F"):
        image = _to_8bit(image)
    if image.mode == "P":
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
    if image.mode in ("RGBA", "LA", "PA"):
        background = Image.new("RGBA", image.size, (255, 255, 255, 255))
        image = Image.alpha_composite(background, image.convert("RGBA"))
    return image.convert("L" if channels == 1 else "RGB")


def resize_center_crop(image: Image.Image, size: tuple[int, int], interpolation: str = "bilinear") -> Image.Image:
    """Resize so the image covers ``size`` (aspect kept, antialiased), then centre-crop to exactly ``size``.

    The rules, exactly (``model.json``'s ``preprocessing.resize`` states them for clients in other languages):
    ``scale = max(target_h / h, target_w / w)`` in float64; new sides ``max(target, round(side * scale))`` with
    Python's ``round`` (half to even); Pillow's ``BILINEAR`` (or ``BICUBIC``: ``interpolation``), whose filter is
    widened by the downscale factor when reducing (so it antialiases), width pass first, then height, each rounded
    to uint8;
    crop ``left = (new_w - target_w) // 2``, ``top = (new_h - target_h) // 2``.
    """
    target_h, target_w = size
    resample = RESAMPLING[interpolation]
    w, h = image.size
    scale = max(target_h / h, target_w / w)
    new_w, new_h = max(target_w, round(w * scale)), max(target_h, round(h * scale))
    # One axis at a time, width first, each pass rounded to 8 bits: the order is then ours to state (model.json),
    # not Pillow's (13.0 picks the order of a two-axis resize itself, and either order is off by one here and there).
    if new_w != w:
        image = image.resize((new_w, h), resample, reducing_gap=None)
    if new_h != h:
        image = image.resize((new_w, new_h), resample, reducing_gap=None)
    left, top = (new_w - target_w) // 2, (new_h - target_h) // 2
    return image.crop((left, top, left + target_w, top + target_h))


class ImageTooLarge(ValueError):
    """An image with more pixels than allowed: refused from its header, before anything is decoded."""


def load_image(
    path: str | os.PathLike | BinaryIO | Image.Image,
    channels: int,
    size: tuple[int, int],
    max_pixels: int | None = None,
    interpolation: str = "bilinear",
) -> np.ndarray:
    """Decode ``path`` (a file name or a binary file object) and return a ``(C, H, W)`` uint8 array of ``size``.

    Args:
        path: The image file, a binary file object holding its bytes (e.g. an HTTP request body), or an image
            opened from one (nothing decoded yet); it is closed.
        channels: 1 (``L``) or 3 (``RGB``).
        size: ``(height, width)`` to resize and centre-crop to.
        max_pixels: Refuse an image whose width x height is larger (a decompression bomb), from its header.
        interpolation: The resize filter, a key of :data:`RESAMPLING`.

    Raises:
        ImageTooLarge: If the image has more than ``max_pixels`` pixels.
        OSError / ValueError: if the file cannot be decoded (corrupt, truncated, empty, not an image).
    """
    with path if isinstance(path, Image.Image) else Image.open(path) as image:
        if max_pixels is not None and image.width * image.height > max_pixels:
            raise ImageTooLarge(
                f"{image.width}x{image.height} is {image.width * image.height} pixels, over the limit of {max_pixels}"
            )
        image.load()  # force a full decode now: truncated files fail here, not later in a worker
        image = ImageOps.exif_transpose(image)
        image = resize_center_crop(convert_mode(image, channels), size, interpolation)
    array = np.asarray(image, dtype=np.uint8)
    return array[None] if array.ndim == 2 else array.transpose(2, 0, 1)  # (C, H, W)


def try_load_image(
    path: str | os.PathLike, channels: int, size: tuple[int, int], interpolation: str = "bilinear"
) -> tuple[np.ndarray | None, str | None]:
    """:func:`load_image`, but a bad file returns ``(None, reason)`` instead of raising.

    For batch builds (the cache) that must report every bad file, not just the first; picklable, so it can
    run in a process pool.
    """
    problem = file_problem(path)  # a dangling link, a link loop, a missing file
    if problem:
        return None, problem
    try:
        if os.path.getsize(path) == 0:
            return None, "empty file (0 bytes)"
        return load_image(path, channels, size, interpolation=interpolation), None
    except Exception as error:  # noqa: BLE001 - any decode failure is a bad file; the caller reports it
        return None, f"{type(error).__name__}: {error}"


def center_crop_array(array: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Centre-crop a ``(C, H, W)`` array to ``size`` (must fit), matching the eval view of the dataset."""
    h, w = array.shape[-2:]
    th, tw = size
    if th > h or tw > w:
        raise ValueError(f"cannot centre-crop {h}x{w} to {th}x{tw}")
    top, left = (h - th) // 2, (w - tw) // 2
    return array[..., top : top + th, left : left + tw]
