"""A YOLO dataset as ``litstarter convert`` writes it: ``images/<split>/<name>``, ``labels/<split>/<stem>.txt`` of
``class cx cy w h`` lines normalised to the image's size as shown (an image without boxes: an empty file), and
``data.yaml`` naming each split's folder and the classes in index order, the layout :mod:`..images.yolo_files`
reads back (and Ultralytics trains on)."""

from __future__ import annotations

from pathlib import Path

import yaml

from .output import copy_image, shown_dims
from .plan import Plan
from .source import Item, Source

#: Significant digits of a normalised coordinate: well under 0.01 px on any image.
DIGITS = 10


def write_yolo(out: Path, source: Source, plan: Plan) -> str:
    """The YOLO layout of ``source`` (boxes) under ``out``; what was written, in a phrase."""
    for split, items in plan.splits.items():
        labels = out / "labels" / split
        labels.mkdir(parents=True, exist_ok=True)
        for item in items:
            copy_image(item, out / "images" / split)
            lines = yolo_lines(item)
            (labels / f"{item.image.stem}.txt").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    config = {split: f"images/{split}" for split in plan.splits}
    config["names"] = list(source.names)
    text = yaml.safe_dump(config, sort_keys=False, allow_unicode=True)
    (out / "data.yaml").write_text(text, encoding="utf-8")
    folders = plan.folders()
    return f"images/{folders}/, labels/{folders}/, data.yaml"


def yolo_lines(item: Item) -> list[str]:
    """``item``'s boxes as YOLO lines: ``class cx cy w h``, each normalised to the image's size as shown."""
    width, height = shown_dims(item)
    lines = []
    for x1, y1, x2, y2, label in item.target:
        values = ((x1 + x2) / 2 / width, (y1 + y2) / 2 / height, (x2 - x1) / width, (y2 - y1) / height)
        lines.append(" ".join([str(int(label)), *(f"{v:.{DIGITS}g}" for v in values)]))
    return lines
