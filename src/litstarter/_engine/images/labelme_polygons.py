"""LabelMe JSON for segmentation: the same files the box reader finds (:mod:`.labelme_json`: a ``.json`` beside each
image, in ``data.root`` or a folder in it, a split folder on the way giving the split), each shape drawn into the
image's mask (:mod:`.polygon_files`, :mod:`.rasterise`).

* **Shapes**, drawn in the file's order, the later over the earlier: a ``polygon`` (3 points or more; a shape
  without ``shape_type`` is one, LabelMe's default), a ``rectangle`` (its two corners, as the 4-point polygon
  between them), a ``circle`` (centre and a point on it) and a ``mask`` (its corners and the PNG of its pixels,
  ``mask``, as LabelMe 5 writes it). A ``point``, ``line``, ``linestrip`` or ``points`` encloses no pixel: left out,
  counted in the layout line. ``label`` is the class; ``group_id``, ``description`` and ``flags`` are not read.
* **The image**: ``imagePath`` is relative to the ``.json``'s folder (``\\`` read as ``/``, as LabelMe writes it on
  Windows). Where it leaves ``data.root`` (``..\\..\\Desktop\\a.jpg``, ``C:\\...``: the annotator's machine) or names
  no file, the image is its base name beside the ``.json`` (LabelMe's own layout), counted in the layout line; no
  path outside ``data.root`` is opened (:func:`.confine.outside_root`). ``imageData`` (the image inlined as base64)
  is not read: the image file must be there, else the ``.json`` is a bad annotation naming ``imagePath``.
  ``imageWidth`` and ``imageHeight`` are checked against the image.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import posixpath
from pathlib import Path

import numpy as np
from PIL import Image

from .annotation_files import Unreadable, number, read_json, relative, split_of
from .confine import outside_root
from .label_formats import Found
from .labelme_json import LabelMe, point_pairs
from .polygon_files import Drawings, Sketch, numbered
from .rasterise import mask_runs, rle_string

#: Shapes that enclose no pixel.
NO_AREA = {"point", "line", "linestrip", "points"}
#: What a ``.json`` whose ``imagePath`` was read by its base name is counted as.
BY_BASE_NAME = "LabelMe imagePath(s) read by base name beside the .json (the path left data.root or named no file)"


class LabelMePolygons(LabelMe):
    """LabelMe JSON read for masks (see the module's docstring); found as the box reader finds it."""

    targets = "mask"
    #: What it draws, for messages.
    shapes = "polygons, rectangles, circles, masks"

    def read(self, root: Path, found: Found) -> Drawings:
        """Every ``.json``: its image found (see the module's docstring), its shapes sketched, then numbered."""
        result, sketches = Drawings([], format=self.name), []
        for path, split in found.files:
            where = relative(path, root)
            try:
                data = read_json(path)
            except Unreadable as err:
                result.problems.append(f"{where}: {err}")
                continue
            if not (isinstance(data, dict) and isinstance(data.get("shapes"), list)):
                result.problems.append(f"{where}: not a LabelMe file (no list of shapes)")
                continue
            image = _image(root, path, data, where, result)
            if image is not None:
                sketches.append(_sketch(data, image, split or split_of(relative(image, root)), path, where, result))
        return numbered(sketches, result, root)


def _image(root: Path, path: Path, data: dict, where: str, result: Drawings) -> Path | None:
    """The image a ``.json`` names, inside ``root`` (see the module's docstring); ``None``, recorded, if none."""
    named = data.get("imagePath")
    if not isinstance(named, str) or not named.strip():
        result.problems.append(f"{where} imagePath: empty or missing (imageData is not read)")
        return None
    name = named.strip().replace("\\", "/")
    base = relative(path.parent, root)
    joined = posixpath.join("" if base == "." else base, name)
    why = outside_root(joined)
    if why is None and (root / posixpath.normpath(joined)).is_file():
        return root / posixpath.normpath(joined)
    beside = posixpath.basename(name)
    if beside and outside_root(beside) is None and (path.parent / beside).is_file():
        result.count(BY_BASE_NAME)
        return path.parent / beside
    found = f"{why}, not opened" if why is not None else "not found"
    result.problems.append(f"{where} imagePath '{named}': {found}; nor is '{beside}' beside it (imageData is not read)")
    return None


def _sketch(data: dict, image: Path, split: str | None, path: Path, where: str, result: Drawings) -> Sketch:
    """One file's shapes, in its order; the rest counted or recorded in ``result``."""
    stated = (number(data.get("imageWidth")), number(data.get("imageHeight")))
    sketch = Sketch(image, split, path, where, stated=stated if None not in stated else None)
    for j, shape in enumerate(data["shapes"]):
        entry = f"shape {j}"
        shape = shape if isinstance(shape, dict) else {}
        kind = str(shape.get("shape_type") or "polygon")
        label = str(shape.get("label") or "").strip()
        if kind in NO_AREA:
            result.count(f"LabelMe shape(s) that enclose no pixel left out ({', '.join(sorted(NO_AREA))})")
            continue
        points = point_pairs(shape.get("points"))
        drawn = None
        if not label:
            why = "label is empty (a shape needs its class)"
        elif points is None:
            why = f"points {shape.get('points')!r} are not [x, y] numbers"
        elif kind not in ("polygon", "rectangle", "circle", "mask"):
            why = f"shape_type {kind!r} is not one LabelMe writes"
        elif kind == "polygon":
            why, drawn = None, ["polygon", label, [v for point in points for v in point]]
        elif len(points) < 2:
            why = f"a {kind} of {len(points)} point(s) (it needs 2)"
        else:
            why, drawn = _two_point(kind, label, points, shape.get("mask"))
        if why:
            result.problems.append(f"{where} {entry}{f' ({label})' if label else ''}: {why}")
        else:
            sketch.add(entry, label, drawn)
    return sketch


def _two_point(kind: str, label: str, points: list, encoded) -> tuple[str | None, list | None]:
    """A rectangle, a circle or a mask as a drawn shape, or why it cannot be one."""
    (x1, y1), (x2, y2) = points[:2]
    if kind == "rectangle":
        left, top, right, bottom = min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)
        return None, ["polygon", label, [left, top, right, top, right, bottom, left, bottom]]
    if kind == "circle":
        radius = math.hypot(x2 - x1, y2 - y1)
        return None, ["ellipse", label, [x1, y1, radius, radius, 0.0]]
    try:
        with Image.open(io.BytesIO(base64.b64decode(str(encoded or ""), validate=True))) as picture:
            block = np.asarray(picture.convert("L")) > 0
    except (binascii.Error, OSError, ValueError) as err:
        return f"its mask is not a base64 PNG ({err})", None
    left, top = round(min(x1, x2)), round(min(y1, y2))
    return None, ["rle", label, [left, top, *block.shape], rle_string(mask_runs(block))]


FORMAT = LabelMePolygons()
