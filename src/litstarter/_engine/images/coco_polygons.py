"""COCO json for segmentation: the instances files the box reader finds (:mod:`.coco_json`:
``annotations/instances_<split>.json``, or one file ``data.labels`` names; images by ``file_name``), each
annotation's ``segmentation`` drawn into its image's mask (:mod:`.polygon_files`, :mod:`.rasterise`).

* **Segmentation**: a list of polygons (``[[x0, y0, x1, y1, ...], ...]``, each of 3 points or more: the annotation
  is their union), or a run-length mask ``{"size": [height, width], "counts": ...}``, compressed (COCO's string)
  or not (a list of runs), column-major, 0s first, the image's size. RLE is decoded here, exactly, whether
  ``pycocotools`` is installed or not.
* **Overlaps**: annotations are drawn in the file's order, the later over the earlier (COCO has no depth).
* **Crowd** annotations (``iscrowd: 1``, the RLE masks CVAT and Datumaro export) are drawn as their class.
* **Classes**: ``background`` (0), then the categories by id (1, 5, 90 alike), whether or not an annotation uses
  them (``classes.txt`` in ``data.root`` replaces them).
* An annotation without a ``segmentation`` is a bad annotation (a box is not a mask); a file none of whose
  annotations has one is refused whole: it is a detection set.
"""

from __future__ import annotations

import json
from pathlib import Path

from litstarter.errors import BadInputError

from .coco_json import CocoJson, check_categories, coco_image, is_number, known, listed_images
from .label_formats import Found
from .listing import shown
from .polygon_files import Drawings, Sketch, numbered
from .rasterise import rle_counts, rle_string


class CocoPolygons(CocoJson):
    """COCO json read for masks (see the module's docstring); found as the box reader finds it."""

    targets = "mask"
    #: What it draws, for messages.
    shapes = "polygons or RLE"

    def read(self, root: Path, found: Found) -> Drawings:
        """Each file in turn, their categories the same.

        Raises:
            BadInputError: a file is not COCO json, holds no segmentation, names an image outside ``data.root``, or
                its categories differ from another split's file's.
        """
        result, sketches, categories = Drawings([], format=self.name), [], None
        for path, split in found.files:
            categories = _read_file(path, root, split, categories, sketches, result)
        order = [str(c["name"]) for c in categories or []]
        return numbered(sketches, result, root, order)


def _read_file(
    path: Path, root: Path, split: str | None, before: list | None, sketches: list[Sketch], result: Drawings
) -> list[dict]:
    """One file's images, each with its annotations' shapes appended to ``sketches``; returns its categories."""
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
        categories = sorted(data["categories"], key=lambda c: c["id"])
        index = {c["id"]: str(c["name"]) for c in categories}
        entries = list(data["images"])
        annotations = data.get("annotations", [])
        annotations = annotations if isinstance(annotations, list) else []
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise BadInputError(f"'{path}' is not COCO instances json (images, annotations, categories): {err}") from None
    check_categories(path, categories)
    if before is not None and [(c["id"], c["name"]) for c in before] != [(c["id"], c["name"]) for c in categories]:
        raise BadInputError(f"'{path}' has the categories {index}; another split's file has {_named(before)}")
    if annotations and not any(isinstance(a, dict) and a.get("segmentation") for a in annotations):
        raise BadInputError(
            f"'{path}': none of its {len(annotations)} annotations has a segmentation (polygons or RLE): boxes alone"
            " are no masks (configs/task/detection.yaml trains on them)"
        )
    images = listed_images(path, root, entries, split)
    stated = {e["id"]: (e.get("width"), e.get("height")) for e in entries if isinstance(e, dict) and "id" in e}
    drawn: dict = {image_id: [] for image_id in images}
    for n, ann in enumerate(annotations):
        ann = ann if isinstance(ann, dict) else {}
        where = f"annotation {ann.get('id', n)}"
        image_id, category = ann.get("image_id"), ann.get("category_id")
        if not known(image_id, images):
            result.problems.append(f"{shown(path.name)} {where}: image_id {image_id!r} is no image of the file")
        elif not known(category, index):
            result.problems.append(f"{shown(path.name)} {where}: category_id {category!r} is none of {sorted(index)}")
        else:
            drawn[image_id].append((where, index[category], ann.get("segmentation")))
    for image_id, (name, image_split) in images.items():
        file = coco_image(root, path, name, image_split)
        if file is None:
            result.problems.append(f"{shown(path.name)} image {image_id!r}: '{shown(name)}' is not found")
            continue
        size = _pair(stated.get(image_id))
        sketch = Sketch(file, image_split, path, f"{shown(path.name)} image {image_id!r}", stated=size)
        for where, label, segmentation in drawn[image_id]:
            for entry, shape in _shapes(where, label, segmentation, size, path, result):
                sketch.add(entry, label, shape)
        sketches.append(sketch)
    return categories


def _shapes(where: str, label: str, segmentation, size, path: Path, result: Drawings) -> list[tuple[str, list]]:
    """An annotation's polygons or RLE as drawn shapes, ``(entry, shape)``; what is wrong recorded in ``result``."""
    at = f"{shown(path.name)} {where} ({label})"
    if isinstance(segmentation, list) and segmentation:
        out = []
        for k, polygon in enumerate(segmentation):
            entry = f"{where} polygon {k}" if len(segmentation) > 1 else where
            if not (isinstance(polygon, list) and len(polygon) % 2 == 0 and all(is_number(v) for v in polygon)):
                result.problems.append(f"{at}: polygon {k} is not [x0, y0, x1, y1, ...] numbers")
            else:
                out.append((entry, ["polygon", label, [float(v) for v in polygon]]))
        return out
    if isinstance(segmentation, dict):
        shape = _rle(segmentation, label, size)
        if isinstance(shape, str):
            result.problems.append(f"{at}: {shape}")
            return []
        return [(where, shape)]
    result.problems.append(f"{at}: no segmentation (polygons or RLE; a bbox alone draws no mask)")
    return []


def _rle(segmentation: dict, label: str, size) -> list | str:
    """A COCO RLE as a drawn shape, or why it is not one."""
    shape, counts = segmentation.get("size"), segmentation.get("counts")
    if not (isinstance(shape, list) and len(shape) == 2 and all(isinstance(v, int) and v >= 0 for v in shape)):
        return f"RLE size {shape!r} is not [height, width]"
    height, width = shape
    if size is not None and (width, height) != size:
        return f"RLE size [{height}, {width}] is not its image's [{int(size[1])}, {int(size[0])}] (height, width)"
    try:
        runs = rle_counts(counts) if isinstance(counts, str) else [int(v) for v in counts]
    except (TypeError, ValueError) as err:
        return f"RLE counts are neither COCO's compressed string nor a list of runs ({err})"
    if any(r < 0 for r in runs) or sum(runs) != height * width:
        covered = "a run is negative" if any(r < 0 for r in runs) else f"they cover {sum(runs)} pixels"
        return f"RLE counts: {covered}, not the {width}x{height} = {width * height} of its size"
    return ["rle", label, [0, 0, height, width], counts if isinstance(counts, str) else rle_string(runs)]


def _pair(value) -> tuple[float, float] | None:
    if isinstance(value, tuple) and all(is_number(v) for v in value):
        return float(value[0]), float(value[1])
    return None


def _named(categories: list[dict]) -> dict:
    return {c["id"]: str(c["name"]) for c in categories}


FORMAT = CocoPolygons()
