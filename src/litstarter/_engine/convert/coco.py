"""COCO instances json as ``litstarter convert`` writes it: ``images/<split>/<name>`` and
``annotations/instances_<split>.json``, the layout :mod:`..images.coco_json` (boxes) and :mod:`..images.coco_polygons`
(masks) read back.

* **Boxes**: ``bbox`` ``[x, y, w, h]`` in the image's pixels as shown, ``area`` ``w * h``, ``iscrowd`` 0. Category
  ids are the source's own COCO ids where it had them (1, 5, 90 stay 1, 5, 90), else 1..K in class order.
* **Masks**: each class's pixels of an image are one annotation, its ``segmentation`` an uncompressed RLE
  ``{"size": [h, w], "counts": [...]}`` (column-major, 0s first, as COCO's), ``bbox`` the pixels' box, ``area``
  their count. The background (index 0) and ignored pixels are not written. Class ``c`` is category ``c``; the
  classes are written to ``classes.txt`` too, which the mask reader takes over the categories (so a first class not
  named ``background`` keeps its name).
* Every image is listed in its split's file, with or without annotations; ``file_name`` is its name, found in
  ``images/<split>/``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..images.rasterise import mask_runs
from .output import copy_image, shown_dims
from .plan import Plan
from .source import Item, Source

#: What a source's image gives: its annotations (``category_id``, ``bbox``, ...; no ids yet).
Annotations = Callable[[Item], list[dict]]


def write_coco(out: Path, source: Source, plan: Plan) -> str:
    """The COCO layout of ``source`` under ``out``; what was written, in a phrase."""
    if source.targets == "boxes":
        ids = list(source.ids) if source.ids else list(range(1, len(source.names) + 1))
        categories = [{"id": i, "name": n} for i, n in zip(ids, source.names, strict=True)]
        annotations = _box_annotations(ids)
    else:
        categories = [{"id": c, "name": n} for c, n in enumerate(source.names) if c]
        annotations = _mask_annotations(source)
        (out / "classes.txt").write_text("".join(f"{n}\n" for n in source.names), encoding="utf-8")
    for split, items in plan.splits.items():
        data = _instances(out, split, items, categories, annotations)
        (out / "annotations").mkdir(exist_ok=True)
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        (out / "annotations" / f"instances_{split}.json").write_text(text, encoding="utf-8")
    folders = plan.folders()
    extra = ", classes.txt" if source.targets != "boxes" else ""
    return f"images/{folders}/, annotations/instances_{folders}.json{extra}"


def _instances(out: Path, split: str, items: list[Item], categories: list[dict], annotations: Annotations) -> dict:
    """One split's json, its images copied into ``out/images/<split>/``."""
    images, written = [], []
    for image_id, item in enumerate(items, start=1):
        width, height = shown_dims(item)
        copy_image(item, out / "images" / split)
        images.append({"id": image_id, "file_name": item.image.name, "width": width, "height": height})
        for annotation in annotations(item):
            written.append({"id": len(written) + 1, "image_id": image_id, **annotation})
    return {"images": images, "annotations": written, "categories": categories}


def _box_annotations(ids: list) -> Annotations:
    """An image's boxes as COCO annotations of category ``ids[class]``."""

    def annotations(item: Item) -> list[dict]:
        out = []
        for x1, y1, x2, y2, label in item.target:
            w, h = _tidy(x2 - x1), _tidy(y2 - y1)
            bbox = [_tidy(x1), _tidy(y1), w, h]
            out.append({"category_id": ids[int(label)], "bbox": bbox, "area": _tidy(w * h), "iscrowd": 0})
        return out

    return annotations


def _mask_annotations(source: Source) -> Annotations:
    """An image's mask as one RLE annotation per class it holds (the background and ignored pixels left out)."""
    classes = len(source.names)

    def annotations(item: Item) -> list[dict]:
        mask = source.masks.shown(item)
        height, width = mask.shape
        out = []
        for c in np.unique(mask).tolist():
            if not 0 < c < classes:
                continue
            pixels = mask == c
            rows, cols = np.flatnonzero(pixels.any(axis=1)), np.flatnonzero(pixels.any(axis=0))
            bbox = [int(cols[0]), int(rows[0]), int(cols[-1] - cols[0] + 1), int(rows[-1] - rows[0] + 1)]
            rle = {"size": [height, width], "counts": mask_runs(pixels, "F")}
            out.append({"category_id": c, "segmentation": rle, "bbox": bbox, "area": int(pixels.sum()), "iscrowd": 0})
        return out

    return annotations


def _tidy(value: float) -> float | int:
    """``value`` without float noise (``30.750000000000004`` -> ``30.75``), an int when it is one."""
    rounded = round(float(value), 6)
    return int(rounded) if rounded.is_integer() else rounded
