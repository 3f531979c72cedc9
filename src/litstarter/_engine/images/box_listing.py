"""The box layouts, found and listed: COCO json per split (or one file), YOLO's ``data.yaml``, a boxes CSV.

* ``root/annotations/instances_<split>.json`` (or ``root/instances_<split>.json``; ``train2017`` names the train
  split too): one COCO file per split; ``data.labels: <file>.json``: one file, each image's ``"split"`` placing it
  (without one, the splits come from the fractions);
* ``root/data.yaml`` with ``names`` and ``train``/``val``/``test`` folders of images or list files (YOLO; ``labels/``
  beside ``images/``: :mod:`.yolo_files`);
* ``data.labels: <file>.csv`` with ``path,x1,y1,x2,y2,label[,split]`` columns, a row per box (:mod:`.box_csv`).

Each image's target is its boxes, ``[[x1, y1, x2, y2, class index], ...]`` in its pixels as shown
(:mod:`.box_files`); an image with none is allowed and counted. Nothing a file names is opened outside ``data.root``
(:mod:`.confine`), and an image named twice (two entries, or a link to a listed one) is refused: which boxes has it?
"""

from __future__ import annotations

from pathlib import Path

from litstarter.errors import BadInputError

from .box_csv import box_header, read_box_csv
from .box_files import Annotated
from .coco_json import read_coco
from .listing import Walker, shown
from .splits import SPLIT_NAMES, SourceFile, canonical_split, source_file
from .yolo_files import YOLO_CONFIG, read_yolo

#: Images named in full in a refusal; the rest are counted.
NAMED = 5


def coco_files(root: Path) -> dict[str, Path]:
    """``{split: instances json}`` under ``root/annotations`` or ``root`` (``instances_train2017.json`` is train)."""
    found = {}
    for folder in (root / "annotations", root):
        for path in sorted(folder.glob("instances_*.json")) if folder.is_dir() else []:
            split = canonical_split(path.stem.removeprefix("instances_").rstrip("0123456789"))
            if split and split not in found:
                found[split] = path
    return found


def read_annotations(root: Path, labels: str | None) -> tuple[Annotated, str, Path | None] | None:
    """The box annotations of ``root`` (parsed once: the layout keeps them), their form (``coco``, ``yolo``,
    ``boxes``) and file; ``None`` when ``root`` holds no box layout."""
    if labels is not None:
        path = root / labels
        if path.suffix.lower() == ".json" and path.is_file():
            return read_coco(path, root, None), "coco", path
        return (read_box_csv(path, root), "boxes", path) if box_header(path) else None
    if (root / YOLO_CONFIG).is_file():
        return read_yolo(root), "yolo", root / YOLO_CONFIG
    files = coco_files(root)
    if "train" not in files:
        return None
    result = None
    for split in SPLIT_NAMES:
        if split in files:
            result = read_coco(files[split], root, split, result)
    return result, "coco", files["train"]


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
    twice = []
    for path, split, boxes in annotated.images:
        found = walker.named(path)
        if not found:  # one file named twice: two entries, or two names for it (a link, a hard link)
            twice.append(f"'{shown(path)}' (= '{shown(walker.duplicates[-1][1])}')")
        for file in found:
            key = (split or "train") if split_given else None
            listed.setdefault(key, []).append(source_file(root, file, boxes))
    if twice:
        more = f" and {len(twice) - NAMED} more" if len(twice) > NAMED else ""
        raise BadInputError(
            f"{source} names {len(twice)} image(s) that another entry names too (the same path, a link or a hard"
            f" link to it): {', '.join(twice[:NAMED])}{more}; list each image once, with all its boxes"
        )
    return listed, note
