"""The box layouts, found and listed: COCO json per split (or one file), YOLO's ``data.yaml``, a boxes CSV.

* ``root/annotations/instances_<split>.json`` (or ``root/instances_<split>.json``; ``train2017`` names the train
  split too): one COCO file per split; ``data.labels: <file>.json``: one file, each image's ``"split"`` placing it
  (without one, the splits come from the fractions);
* ``root/data.yaml`` with ``names`` and ``train``/``val``/``test`` folders of images (YOLO; ``labels/`` beside
  ``images/``);
* ``data.labels: <file>.csv`` with ``path,x1,y1,x2,y2,label[,split]`` columns, a row per box.

Each image's target is its boxes, ``[[x1, y1, x2, y2, class index], ...]`` in its pixels as shown
(:mod:`.box_files`); an image with none is allowed and counted.
"""

from __future__ import annotations

import csv
from pathlib import Path

from ..errors import BadInputError, UsageError
from .box_files import Annotated, read_box_csv, read_coco, read_yolo
from .listing import Walker
from .preprocess import is_image_file
from .splits import SPLIT_NAMES, SourceFile, canonical_split, source_file

YOLO_CONFIG = "data.yaml"
#: The columns that make a labels CSV a boxes file.
BOX_COLUMNS = {"path", "x1", "y1", "x2", "y2", "label"}


def coco_files(root: Path) -> dict[str, Path]:
    """``{split: instances json}`` under ``root/annotations`` or ``root`` (``instances_train2017.json`` is train)."""
    found = {}
    for folder in (root / "annotations", root):
        for path in sorted(folder.glob("instances_*.json")) if folder.is_dir() else []:
            split = canonical_split(path.stem.removeprefix("instances_").rstrip("0123456789"))
            if split and split not in found:
                found[split] = path
    return found


def is_box_csv(path: Path) -> bool:
    """Whether a labels CSV's header holds ``path,x1,y1,x2,y2,label``."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            header = {c.strip().lower() for c in next(csv.reader(f), [])}
    except (OSError, UnicodeDecodeError):
        return False
    return BOX_COLUMNS <= header


def read_annotations(root: Path, labels: str | None) -> tuple[Annotated, str, Path | None] | None:
    """The box annotations of ``root`` (parsed once: the layout keeps them), their form (``coco``, ``yolo``,
    ``boxes``) and file; ``None`` when ``root`` holds no box layout."""
    if labels is not None:
        path = root / labels
        if path.suffix.lower() == ".json" and path.is_file():
            return read_coco(path, root, None), "coco", path
        return (read_box_csv(path, root), "boxes", path) if is_box_csv(path) else None
    if (root / YOLO_CONFIG).is_file():
        return _read_yolo(root), "yolo", root / YOLO_CONFIG
    files = coco_files(root)
    if "train" not in files:
        return None
    result = None
    for split in SPLIT_NAMES:
        if split in files:
            result = read_coco(files[split], root, split, result)
    return result, "coco", files["train"]


def _read_yolo(root: Path) -> Annotated:
    import yaml

    try:
        config = yaml.safe_load((root / YOLO_CONFIG).read_text())
        names = config["names"]
    except (OSError, yaml.YAMLError, KeyError, TypeError) as err:
        raise BadInputError(f"'{root / YOLO_CONFIG}' has no names: {err}") from None
    base = root / str(config.get("path") or ".")
    folders = {key: base / str(config[key]) for key in ("train", "val", "test") if key in config}
    if "train" not in folders or not isinstance(names, (list, dict)):
        raise UsageError(f"'{root / YOLO_CONFIG}' needs names and a train folder (train: images/train)")
    missing = [f"{s}: {p}" for s, p in folders.items() if not p.is_dir()]
    if missing:
        raise BadInputError(f"'{root / YOLO_CONFIG}' names folders that do not exist: {missing}")
    walker = Walker(root)
    return read_yolo(root, config, folders, lambda folder: [f.path for f in walker.files(folder, keep=is_image_file)])


def list_boxes(
    root: Path, annotated: Annotated, walker: Walker, on_bad_box: str, source: str
) -> tuple[dict[str | None, list[SourceFile]], str]:
    """Every annotated image with its boxes: ``{None: files}`` where no split is given (to be split by the
    fractions), else ``{split: files}``; and the note counting what was left out.

    Raises:
        BadInputError: bad boxes under ``on_bad_box: error``.
    """
    note = annotated.settle(on_bad_box, source)
    split_given = any(split for _, split, _ in annotated.images)
    listed: dict[str | None, list[SourceFile]] = {}
    for path, split, boxes in annotated.images:
        for found in walker.named(path):
            key = (split or "train") if split_given else None
            listed.setdefault(key, []).append(source_file(root, found, boxes))
    return listed, note
