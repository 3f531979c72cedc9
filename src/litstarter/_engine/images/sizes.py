"""``data.image_size: auto``: a training size from the images' own sizes, read from their headers
(``channels.read_headers``, no decoding).

The median short side, snapped to a multiple of :data:`SNAP` and kept within :data:`AUTO_SIDES`: 28 px digit
photos train at 32, not at 64 (four times the pixels for nothing), and 500 px photos at 224 (what pretrained
ImageNet backbones were trained at). ``inspect``'s ``data.image_size`` suggestion is the same function.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: The smallest and largest side ``auto`` picks, in pixels. Below 32 px a random resized crop leaves too few
#: pixels to learn shapes from; above 224 a CPU fit slows for little (and pretrained backbones expect 224).
AUTO_SIDES = (32, 224)
#: ``auto`` snaps to a multiple of this (the default backbones halve the size three times).
SNAP = 8


def auto_side(sizes: Sequence[tuple[int, int]]) -> tuple[int, str]:
    """``(side, reason)`` for ``image_size: auto`` from ``(width, height)`` pairs: the median short side snapped
    to :data:`SNAP` within :data:`AUTO_SIDES` (the largest of them when no size is known)."""
    low, high = AUTO_SIDES
    if not sizes:
        return high, f"no image header could be read (the largest size, {high} px)"
    median = float(np.median([min(w, h) for w, h in sizes]))
    side = int(min(max(round(median / SNAP) * SNAP, low), high))
    snapped = f"snapped to a multiple of {SNAP} within {low}-{high} px"
    return side, f"the median short side of {len(sizes)} images is {median:g} px ({snapped})"


#: ``image_size: auto`` says so when it shrinks the images of a pixel task more than this (and suggests tiles).
SHRINK_NOTE = 2.0


def tile_window(sizes: Sequence[tuple[int, int]], side: int) -> int | None:
    """The window ``data.tiles`` would train on when ``side`` shrinks the median image (of ``(width, height)`` pairs)
    more than :data:`SHRINK_NOTE` times (about half the median short side, a multiple of 32 within 128-512 px);
    ``None`` when it shrinks them less."""
    if not sizes:
        return None
    median = float(np.median([min(w, h) for w, h in sizes]))
    if median <= SHRINK_NOTE * side:
        return None
    return int(min(max(median // 2 // 32 * 32, 128), 512))


def shrink_note(sizes: Sequence[tuple[int, int]], side: int) -> str | None:
    """One line when ``side`` shrinks the median image more than :data:`SHRINK_NOTE` times (:func:`tile_window`): for
    masks and boxes, thin and small structures vanish; ``data.tiles`` trains on windows at full resolution instead."""
    window = tile_window(sizes, side)
    if window is None:
        return None
    median = float(np.median([min(w, h) for w, h in sizes]))
    return (
        f"data.image_size: auto -> {side} shrinks these images {median / side:.1f}x (median short side {median:g} px):"
        f" thin or small structures can vanish; train on windows at their own resolution with data.tiles, e.g."
        f" --data.tiles.size {window} (docs/segmentation.md, Tiles)"
    )
