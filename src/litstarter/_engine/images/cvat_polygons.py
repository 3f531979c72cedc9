"""CVAT for images 1.1 XML for segmentation: the ``annotations.xml`` the box reader finds (:mod:`.cvat_xml`: images
under ``images/`` by ``name``, the split by ``subset``), each shape drawn into the image's mask (:mod:`.polygon_files`,
:mod:`.rasterise`).

* **Shapes**: ``<polygon>`` (``points="x,y;x,y;..."``, 3 points or more), ``<box>`` (``xtl ytl xbr ybr``, turned by
  ``rotation`` degrees about its centre: the 4-point polygon of its corners), ``<ellipse>`` (``cx cy rx ry
  rotation``) and ``<mask>`` (``rle``: CVAT's runs, row by row over its ``left top width height`` block, 0s first).
  ``<polyline>``, ``<points>``, ``<cuboid>``, ``<skeleton>`` and ``<tag>`` enclose no pixel: left out, counted.
* **Overlaps**: shapes are drawn by ``z_order`` (the lowest first, as CVAT shows them), shapes of one ``z_order`` in
  the file's order; the later drawn wins.
* ``label`` is the class; ``occluded`` shapes are drawn as any; the labels ``<meta>`` declares are not classes until
  a shape uses them.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .annotation_files import number
from .cvat_xml import CvatImages, cvat_images
from .label_formats import Found
from .polygon_files import Drawings, Sketch, numbered
from .rasterise import mask_runs, rle_string, runs_to_mask

#: Shapes that enclose no pixel.
NO_AREA = {"polyline", "points", "cuboid", "skeleton", "tag"}
DRAWN = {"polygon", "box", "ellipse", "mask"}


class CvatPolygons(CvatImages):
    """CVAT for images 1.1 read for masks (see the module's docstring); found as the box reader finds it."""

    targets = "mask"
    #: What it draws, for messages.
    shapes = "polygons, boxes, ellipses, masks"

    def read(self, root: Path, found: Found) -> Drawings:
        """Every file's ``<image>`` elements.

        Raises:
            BadInputError: a file does not parse, is CVAT for video, or names an image outside ``data.root``.
        """
        result, sketches = Drawings([], format=self.name), []
        for path, _ in found.files:
            sketches += _read_file(path, root, result)
        return numbered(sketches, result, root)


def _read_file(path: Path, root: Path, result: Drawings) -> list[Sketch]:
    """One ``annotations.xml``'s images with their shapes."""
    images = cvat_images(path, root, result.problems, "shapes")
    return [_sketch(image, file, split, path, label, result) for image, file, split, label in images]


def _sketch(image, file: Path, split: str | None, path: Path, where: str, result: Drawings) -> Sketch:
    """One ``<image>``'s shapes, by ``z_order`` then in order; the rest counted or recorded in ``result``."""
    stated = (number(image.get("width")), number(image.get("height")))
    sketch = Sketch(file, split, path, where, stated=stated if None not in stated else None)
    drawn = []
    for j, shape in enumerate(image):
        kind, entry = shape.tag, f"{shape.tag} {j}"
        if kind in NO_AREA:
            result.count(f"CVAT shape(s) that enclose no pixel left out ({', '.join(sorted(NO_AREA))})")
            continue
        if kind not in DRAWN:
            continue
        label = (shape.get("label") or "").strip()
        z_order = number(shape.get("z_order") or 0)
        made = _shape(shape, kind, label) if label else "label is empty (a shape needs its class)"
        if z_order is None:
            made = f"z_order {shape.get('z_order')!r} is not a number"
        if isinstance(made, str):
            result.problems.append(f"{where} {entry}{f' ({label})' if label else ''}: {made}")
        else:
            drawn.append((z_order, j, entry, label, made))
    for _, _, entry, label, made in sorted(drawn, key=lambda d: (d[0], d[1])):
        sketch.add(entry, label, made)
    return sketch


def _shape(shape, kind: str, label: str) -> list | str:
    """A ``<polygon>``, ``<box>``, ``<ellipse>`` or ``<mask>`` as a drawn shape, or the phrase saying why not."""
    if kind == "polygon":
        pairs = [p.split(",") for p in (shape.get("points") or "").split(";") if p.strip()]
        points = [(number(p[0]), number(p[1])) if len(p) == 2 else (None, None) for p in pairs]
        if any(None in point for point in points):
            return f"points {shape.get('points')!r} are not 'x,y;x,y;...' numbers"
        return ["polygon", label, [v for point in points for v in point]]
    if kind == "mask":
        return _mask(shape, label)
    keys = ("cx", "cy", "rx", "ry") if kind == "ellipse" else ("xtl", "ytl", "xbr", "ybr")
    values = [number(shape.get(k)) for k in keys]
    degrees = number(shape.get("rotation") or 0)
    if None in values or degrees is None:
        return f"{' '.join(keys)} {[shape.get(k) for k in keys]} (rotation {shape.get('rotation')!r}) are not numbers"
    if kind == "ellipse":
        return ["ellipse", label, [*values, degrees]]
    x1, y1, x2, y2 = values
    return ["polygon", label, _turned_corners(x1, y1, x2, y2, degrees)]


def _turned_corners(x1: float, y1: float, x2: float, y2: float, degrees: float) -> list[float]:
    """A box's corners (clockwise from its top left), turned ``degrees`` clockwise (y down) about its centre."""
    corners = [(x1, y1), (x2, y1), (x2, y2), (x1, y2)]
    if not degrees:
        return [v for corner in corners for v in corner]
    ax, ay = (x1 + x2) / 2, (y1 + y2) / 2
    cos, sin = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    return [v for x, y in corners for v in (ax + (x - ax) * cos - (y - ay) * sin, ay + (x - ax) * sin + (y - ay) * cos)]


def _mask(shape, label: str) -> list | str:
    """A ``<mask>``: CVAT's row-major runs over its block, as a column-major COCO RLE shape."""
    keys = ("left", "top", "width", "height")
    values = [number(shape.get(k)) for k in keys]
    if None in values or any(v != int(v) for v in values):
        return f"{' '.join(keys)} {[shape.get(k) for k in keys]} are not whole numbers"
    left, top, width, height = (int(v) for v in values)
    runs = [number(v) for v in (shape.get("rle") or "").split(",") if v.strip()]
    if not runs or None in runs or any(v != int(v) for v in runs):
        return f"rle {(shape.get('rle') or '')[:40]!r} is not comma-separated whole numbers"
    try:
        block = runs_to_mask(np.asarray(runs, dtype=np.int64), height, width, order="C")
    except ValueError as err:
        return f"rle: {err}"
    return ["rle", label, [left, top, height, width], rle_string(mask_runs(block))]


FORMAT = CvatPolygons()
