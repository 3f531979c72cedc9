"""``data.channels: auto``: 1 channel when every image is grey, else 3, from the files' headers (no decoding).
The same pass reads the sizes that ``data.image_size: auto`` uses (``litstarter._engine.images.sizes``)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable

from PIL import Image

#: PIL modes of single-band (grey) images, with or without alpha.
GREY_MODES = frozenset({"1", "L", "LA", "I", "I;16", "I;16B", "I;16L", "I;16N", "F"})


def read_headers(paths: Iterable[str | os.PathLike], oriented: bool = False) -> tuple[Counter, list[tuple[int, int]]]:
    """How many files have each PIL mode, and each file's ``(width, height)`` (``oriented``: as shown, after its EXIF
    orientation), from headers only (``Image.open`` is lazy): what ``channels: auto`` and ``image_size: auto`` need,
    in one pass. Unreadable files are left out here (the cache build reports them)."""
    modes: Counter = Counter()
    sizes = []
    for path in paths:
        try:
            with Image.open(path) as image:
                modes[image.mode] += 1
                turned = oriented and image.getexif().get(0x0112, 1) in (5, 6, 7, 8)  # a quarter turn swaps them
                sizes.append(image.size[::-1] if turned else image.size)
        except Exception:  # noqa: BLE001 - a bad file is the cache build's to report, with on_bad_file
            continue
    return modes, sizes


def channels_for(modes: Counter) -> tuple[int, str]:
    """``(channels, reason)``: 1 when every readable image is grey, else 3 (also when none could be read)."""
    counts = ", ".join(f"{mode} {n}" for mode, n in modes.most_common())
    total = sum(modes.values())
    if total and set(modes) <= GREY_MODES:
        return 1, f"all {total} images are grey ({counts})"
    if not total:
        return 3, "no image header could be read"
    return 3, f"not every image is grey ({counts})"
