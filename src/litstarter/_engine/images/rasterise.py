"""Shapes drawn into class-index masks, one rule for every format (NumPy only): the masks a LabelMe, CVAT or COCO
annotation gives are the masks an index PNG of the same shapes holds.

* **A pixel is a shape's when its centre is inside the shape.** Pixel ``(x, y)`` (column, row) covers
  ``[x, x + 1) x [y, y + 1)`` of the annotation's coordinates, so its centre is ``(x + 0.5, y + 0.5)``: a rectangle
  from ``(2, 3)`` to ``(10, 7)`` is exactly columns 2-9 of rows 3-6, 32 pixels, its area.
* **Polygons** are filled by the even-odd rule (a self-crossing polygon's doubly-wound part is outside), scanline by
  scanline. A centre exactly on an edge is inside on a left or top edge and outside on a right or bottom one (the
  half-open rule of scanline fill): two polygons sharing an edge never both take, nor both leave, a pixel on it.
* **Ellipses** (LabelMe circles, CVAT ellipses): the centres inside or on the (turned) ellipse.
* **Run-length masks** (COCO RLE, compressed or not; CVAT and LabelMe bitmaps) are exact: decoded here, no
  ``pycocotools`` needed (it gives the same pixels where it is installed; its own polygon fill differs from the rule
  above by at most a pixel along edges, which is why polygons are not handed to it).
* **Overlaps**: shapes are drawn in the order given, each over those before it (the readers give CVAT's
  ``z_order``, then each file's own order: the later shape wins).

A drawn shape is plain JSON (what the cache's listing records): ``["polygon", class, [x0, y0, x1, y1, ...]]``,
``["ellipse", class, [cx, cy, rx, ry, degrees]]`` or ``["rle", class, [left, top, height, width], counts]`` with
``counts`` COCO's compressed string, column-major over the ``height x width`` block placed at ``(left, top)``.
"""

from __future__ import annotations

import math

import numpy as np

#: The first character of COCO's compressed RLE alphabet (``'0'``); each character holds 5 bits and a "more" bit.
_BASE = 48


def fill_polygon(xy, height: int, width: int) -> np.ndarray:
    """``(height, width)`` bool: the pixels whose centre is inside the polygon ``xy`` (``[x0, y0, x1, y1, ...]``,
    closed implicitly) by the even-odd rule, half-open on edges (see the module's docstring)."""
    points = np.asarray(xy, dtype=np.float64).reshape(-1, 2)
    out = np.zeros((height, width), dtype=bool)
    if len(points) < 3 or height <= 0 or width <= 0:
        return out
    x0, y0 = points[:, 0], points[:, 1]
    x1, y1 = np.roll(x0, -1), np.roll(y0, -1)
    slanted = y0 != y1  # a horizontal edge crosses no scanline
    x0, y0, x1, y1 = x0[slanted], y0[slanted], x1[slanted], y1[slanted]
    low, high = np.minimum(y0, y1), np.maximum(y0, y1)
    first = max(int(math.floor(low.min() - 0.5)), 0) if len(low) else height
    last = min(int(math.ceil(high.max() - 0.5)), height) if len(high) else 0
    if first >= last:
        return out
    centres = np.arange(first, last, dtype=np.float64) + 0.5
    cy = centres[:, None]
    crossed = (low[None, :] <= cy) & (cy < high[None, :])  # top-inclusive, bottom-exclusive
    rows, edges = np.nonzero(crossed)
    at = x0[edges] + (centres[rows] - y0[edges]) * (x1[edges] - x0[edges]) / (y1[edges] - y0[edges])
    # A crossing at x flips every pixel whose centre is at or right of it: column ceil(x - 0.5) onwards.
    columns = np.clip(np.ceil(at - 0.5), 0, width).astype(np.int64)
    flat = np.bincount(rows * (width + 1) + columns, minlength=(last - first) * (width + 1))
    flips = flat.reshape(last - first, width + 1)[:, :width]
    out[first:last] = (np.cumsum(flips, axis=1) & 1).astype(bool)
    return out


def fill_ellipse(params, height: int, width: int) -> np.ndarray:
    """``(height, width)`` bool: the pixels whose centre is inside or on the ellipse ``[cx, cy, rx, ry, degrees]``
    (turned clockwise on the image, y down, about its centre)."""
    cx, cy, rx, ry, degrees = (float(v) for v in params)
    out = np.zeros((height, width), dtype=bool)
    if rx <= 0 or ry <= 0:
        return out
    cos, sin = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    reach_x, reach_y = math.hypot(rx * cos, ry * sin), math.hypot(rx * sin, ry * cos)
    top, bottom = max(int(math.floor(cy - reach_y)), 0), min(int(math.ceil(cy + reach_y)) + 1, height)
    left, right = max(int(math.floor(cx - reach_x)), 0), min(int(math.ceil(cx + reach_x)) + 1, width)
    if top >= bottom or left >= right:
        return out
    dy = np.arange(top, bottom, dtype=np.float64)[:, None] + 0.5 - cy
    dx = np.arange(left, right, dtype=np.float64)[None, :] + 0.5 - cx
    u, v = (dx * cos + dy * sin) / rx, (-dx * sin + dy * cos) / ry
    out[top:bottom, left:right] = u * u + v * v <= 1.0
    return out


def rle_decode(counts: str, height: int, width: int) -> np.ndarray:
    """``(height, width)`` bool of COCO's compressed RLE string (column-major runs, 0s first).

    Raises:
        ValueError: the runs do not cover ``height x width`` exactly, or one is negative.
    """
    runs = np.asarray(rle_counts(counts), dtype=np.int64)
    return runs_to_mask(runs, height, width, order="F")


def runs_to_mask(runs, height: int, width: int, order: str) -> np.ndarray:
    """``(height, width)`` bool of alternating runs (0s first) over the block in ``order`` (``F``: column-major, as
    COCO; ``C``: row-major, as CVAT's ``rle``).

    Raises:
        ValueError: a run is negative, or the runs do not add up to ``height x width``.
    """
    runs = np.asarray(runs, dtype=np.int64)
    if (runs < 0).any():
        raise ValueError("a run length is negative")
    if int(runs.sum()) != height * width:
        raise ValueError(f"the runs cover {int(runs.sum())} pixels, not the {width}x{height} = {height * width} given")
    values = np.arange(len(runs)) % 2 == 1
    flat = np.repeat(values, runs)
    return flat.reshape((height, width), order=order)


def rle_counts(text: str) -> list[int]:
    """The run lengths of COCO's compressed RLE string (as ``pycocotools``' ``rleFrString``).

    Raises:
        ValueError: a character outside the alphabet, or the string ends inside a number.
    """
    counts: list[int] = []
    p, data = 0, text.encode("ascii")
    while p < len(data):
        x, k, more = 0, 0, True
        while more:
            if p >= len(data):
                raise ValueError("the compressed RLE string ends inside a number")
            c = data[p] - _BASE
            if not 0 <= c < 64:
                raise ValueError(f"character {chr(data[p])!r} is not in the compressed RLE alphabet")
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p, k = p + 1, k + 1
            if not more and c & 0x10:
                x |= -1 << (5 * k)
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x)
    return counts


def rle_string(counts) -> str:
    """COCO's compressed RLE string of run lengths (as ``pycocotools``' ``rleToString``)."""
    out = bytearray()
    counts = [int(c) for c in counts]
    for i, count in enumerate(counts):
        x = count - counts[i - 2] if i > 2 else count
        more = True
        while more:
            c = x & 0x1F
            x >>= 5
            more = x != -1 if c & 0x10 else x != 0
            out.append((c | 0x20 if more else c) + _BASE)
    return out.decode("ascii")


def mask_runs(mask: np.ndarray, order: str = "F") -> list[int]:
    """The alternating run lengths (0s first) of a bool ``(H, W)`` mask in ``order`` (``F``: COCO's)."""
    flat = np.asarray(mask, dtype=bool).ravel(order=order)
    changes = np.flatnonzero(flat[1:] != flat[:-1]) + 1
    edges = np.concatenate([[0], changes, [flat.size]])
    runs = np.diff(edges).tolist()
    return [0, *runs] if flat.size and flat[0] else runs


def shape_pixels(shape, height: int, width: int) -> np.ndarray:
    """``(height, width)`` bool: the pixels of one drawn shape (see the module's docstring).

    Raises:
        ValueError: a run-length shape whose runs do not cover its block.
    """
    kind, _, data = shape[0], shape[1], shape[2]
    if kind == "polygon":
        return fill_polygon(data, height, width)
    if kind == "ellipse":
        return fill_ellipse(data, height, width)
    left, top, block_h, block_w = (int(v) for v in data)
    block = rle_decode(shape[3], block_h, block_w)
    out = np.zeros((height, width), dtype=bool)
    y0, x0 = max(top, 0), max(left, 0)
    y1, x1 = min(top + block_h, height), min(left + block_w, width)
    if y0 < y1 and x0 < x1:
        out[y0:y1, x0:x1] = block[y0 - top : y1 - top, x0 - left : x1 - left]
    return out


def draw(shapes, height: int, width: int) -> np.ndarray:
    """``(height, width)`` uint8 class indices: 0 (the background), then each shape's class over it in order (the
    later shape wins where two overlap).

    Raises:
        ValueError: a run-length shape whose runs do not cover its block.
    """
    out = np.zeros((height, width), dtype=np.uint8)
    for shape in shapes:
        out[shape_pixels(shape, height, width)] = int(shape[1])
    return out
