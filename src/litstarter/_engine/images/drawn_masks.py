"""Masks drawn from an annotation's shapes (LabelMe, CVAT, COCO polygons or RLE), stored as a mask file's are.

An image whose mask is drawn has this target (plain JSON: the cache's listing records it, so an edited shape, or an
edited annotation file, changes the listing's digest and the split is rebuilt)::

    {"size": [width, height], "shapes": [shape, ...], "annotation": [file under data.root, size, mtime_ns]}

``size`` is the image's as shown (after its EXIF orientation), which the shapes' coordinates are in; each shape is
:mod:`.rasterise`'s (``["polygon", class, [x0, y0, ...]]``, ...), in drawing order, its class an index (``-1``:
``data.ignore_index``, LabelMe's ``__ignore__`` label). The mask is drawn at that size, by :func:`.rasterise.draw`'s
rule, then goes through the cover resize (nearest neighbour) and centre crop that a mask file's pixels go through.
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from .rasterise import draw

#: A drawn shape's class for pixels of ``data.ignore_index``.
IGNORED = -1


def is_drawn(target) -> bool:
    """Whether ``target`` is a drawn mask's (a dict of ``size`` and ``shapes``), not a mask file's."""
    return isinstance(target, dict) and "shapes" in target and "size" in target


def valid_drawn(target, num_classes: int) -> bool:
    """Whether ``target`` has the drawn mask's shape: a ``[width, height]`` of ints, shapes of known kinds whose
    classes are below ``num_classes`` (or :data:`IGNORED`), and the annotation's facts."""
    if not is_drawn(target):
        return False
    size, shapes = target.get("size"), target.get("shapes")
    if not (isinstance(size, list) and len(size) == 2 and all(_count(v) for v in size) and isinstance(shapes, list)):
        return False
    kinds = {"polygon": 3, "ellipse": 3, "rle": 4}
    for shape in shapes:
        if not (isinstance(shape, list) and shape and kinds.get(shape[0]) == len(shape) and _count(shape[1], -1)):
            return False
        if not (shape[1] < num_classes and isinstance(shape[2], list)):
            return False
    annotation = target.get("annotation")
    return isinstance(annotation, list) and len(annotation) == 3 and isinstance(annotation[0], str)


def _count(value, least: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def drawn_indices(target, ignore_index: int) -> np.ndarray:
    """The ``(height, width)`` uint8 class indices of a drawn mask at its image's size as shown.

    Raises:
        ValueError: a run-length shape whose runs do not cover its block.
    """
    width, height = target["size"]
    shapes = [[s[0], ignore_index if s[1] == IGNORED else s[1], *s[2:]] for s in target["shapes"]]
    return draw(shapes, height, width)


def decode_drawn(
    target, image_size: tuple[int, int], orientation: int, size: tuple[int, int], ignore_index: int, crop
) -> tuple[np.ndarray | None, str | None]:
    """A drawn mask as the cache stores it beside its image: ``((H, W) uint8, None)``, or ``(None, reason)``.

    Args:
        target: The drawn mask's target (see the module's docstring).
        image_size: The image file's ``(width, height)`` as stored (before its EXIF orientation).
        orientation: The image's EXIF orientation (1: none).
        size: The cached ``(height, width)``.
        ignore_index: What :data:`IGNORED` shapes draw.
        crop: The cover resize and centre crop of a mask (:func:`.mask_files.cover_crop_nearest`).
    """
    width, height = image_size
    shown = (height, width) if orientation in (5, 6, 7, 8) else (width, height)
    where = f"the shapes of '{target['annotation'][0]}'"
    if tuple(target["size"]) != shown:
        drawn = "x".join(str(v) for v in target["size"])
        return None, f"{where} were read for a {drawn} image; it is now {shown[0]}x{shown[1]}"
    try:
        indices = drawn_indices(target, ignore_index)
    except ValueError as err:
        return None, f"{where}: {err}"
    return np.asarray(crop(Image.fromarray(indices), size), dtype=np.uint8), None


def drawn_classes(target, num_classes: int) -> np.ndarray:
    """The class indices a drawn mask holds (below ``num_classes``; pixels of :data:`IGNORED` shapes aside)."""
    try:
        values = np.unique(drawn_indices(target, 255))
    except ValueError:  # reported, with its reason, when the cache decodes it
        return np.zeros(0, dtype=np.int64)
    return values[values < num_classes]
