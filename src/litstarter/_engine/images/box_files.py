"""Box annotations as people have them: COCO json, YOLO txt (``data.yaml``), a ``path,x1,y1,x2,y2,label`` CSV.

Each reader gives every image it names with its boxes ``[x1, y1, x2, y2, class index]`` in the image's pixels (as
shown: after its EXIF orientation), and the class names. A box is checked against its image's size (read from the
file's header): outside the image, of zero area, or ``x2 < x1`` is a bad box; so is an unknown category, an
annotation of an image the file lacks, and a YOLO line without five fields. ``data.on_bad_box: error`` refuses
them in one line naming the file and the box (the first few, and the count); ``skip`` leaves them out and counts
them. COCO's crowd annotations (``iscrowd: 1``) are left out, as torchvision's references do.
"""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

from ..errors import BadInputError
from .listing import shown

#: Bad boxes named in full in a refusal; the rest are counted.
NAMED = 5
#: How far past the image's edge (pixels) a box may reach and be clipped: rounding, as YOLO's 6 decimals give.
EDGE_SLACK = 0.5
#: A box's corners are kept to this many decimals of a pixel: COCO's, YOLO's and a CSV's spelling of one box agree.
DECIMALS = 2


@dataclass
class Annotated:
    """Images with their boxes, and what was wrong on the way.

    Args:
        names: The class names, in index order.
        images: ``[(image path, split or None, [[x1, y1, x2, y2, class index], ...])]``.
        problems: One phrase per bad box or annotation (naming the file and the box).
        crowd: Crowd annotations left out.
    """

    names: list[str]
    images: list[tuple[Path, str | None, list[list[float]]]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    crowd: int = 0

    def settle(self, on_bad_box: str, source: str) -> str:
        """Refuse the bad boxes (``error``) or return the note that counts them (``skip``; ``""`` when none).

        Raises:
            BadInputError: bad boxes under ``on_bad_box: error``, the first few named.
        """
        more = f"; and {len(self.problems) - NAMED} more" if len(self.problems) > NAMED else ""
        listed = "; ".join(self.problems[:NAMED]) + more
        if self.problems and on_bad_box != "skip":
            raise BadInputError(
                f"{source}: {len(self.problems)} bad box(es) or annotation(s): {listed} (fix them, or"
                " data.on_bad_box: skip leaves them out, counted)"
            )
        notes = []
        if self.problems:
            notes.append(f"left out {len(self.problems)} bad box(es) (data.on_bad_box: skip): {listed}")
        if self.crowd:
            notes.append(f"left out {self.crowd} crowd annotation(s) (iscrowd: 1)")
        return "; ".join(notes)


def shown_size(path: Path) -> tuple[int, int] | None:
    """A file's ``(width, height)`` as shown (after its EXIF orientation), from its header; ``None`` if unreadable
    (the cache build reports the file)."""
    try:
        with Image.open(path) as image:
            width, height = image.size
            turned = image.getexif().get(0x0112, 1) in (5, 6, 7, 8)
    except Exception:  # noqa: BLE001 - a bad file is the cache build's to report
        return None
    return (height, width) if turned else (width, height)


def checked(path: Path, boxes: list[list[float]], names: list[str], result: Annotated, root: Path) -> list[list[float]]:
    """The good boxes of ``path`` (in its pixels as shown); each bad one recorded in ``result.problems``."""
    size = shown_size(path)
    good = []
    for j, (x1, y1, x2, y2, label) in enumerate(boxes):
        why = None
        if x2 <= x1 or y2 <= y1:
            why = "zero area or x2 < x1" if x2 <= x1 else "zero area or y2 < y1"
        elif size is not None and (min(x1, y1) < -EDGE_SLACK or x2 > size[0] + EDGE_SLACK or y2 > size[1] + EDGE_SLACK):
            why = f"outside the {size[0]}x{size[1]} image"
        if why:
            where = shown(os.path.relpath(path, root))
            result.problems.append(f"{where} box {j} [{x1:g}, {y1:g}, {x2:g}, {y2:g}] ({names[int(label)]}): {why}")
        else:
            width, height = size or (float("inf"), float("inf"))
            corners = (max(x1, 0.0), max(y1, 0.0), min(x2, width), min(y2, height))
            good.append([*(round(float(v), DECIMALS) for v in corners), float(label)])
    return good


def read_coco(path: Path, root: Path, split: str | None, result: Annotated | None = None) -> Annotated:
    """A COCO instances json: its categories (sorted by id), images (``file_name`` found under ``root``, see
    :func:`coco_image`) and boxes (``bbox`` is ``[x, y, w, h]``). An image's ``"split"`` field, where there is one,
    places it; else ``split``.

    Raises:
        BadInputError: the file is not COCO json, or its categories differ from another split's.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
        categories = sorted(data["categories"], key=lambda c: c["id"])
        names = [str(c["name"]) for c in categories]
        images = {image["id"]: image for image in data["images"]}
        annotations = data.get("annotations", [])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise BadInputError(f"'{path}' is not COCO instances json (images, annotations, categories): {err}") from None
    if result is None:
        result = Annotated(names)
    elif result.names != names:
        raise BadInputError(f"'{path}' has the categories {names}; another split's file has {result.names}")
    index = {c["id"]: i for i, c in enumerate(categories)}
    boxes: dict = {image_id: [] for image_id in images}
    for n, ann in enumerate(annotations):
        where = f"{shown(path.name)} annotation {ann.get('id', n)}"
        if ann.get("image_id") not in images:
            result.problems.append(f"{where}: image_id {ann.get('image_id')!r} is no image of the file")
        elif ann.get("category_id") not in index:
            result.problems.append(f"{where}: category_id {ann.get('category_id')!r} is none of {sorted(index)}")
        elif ann.get("iscrowd"):
            result.crowd += 1
        else:
            x, y, w, h = (float(v) for v in ann["bbox"])
            boxes[ann["image_id"]].append([x, y, x + w, y + h, index[ann["category_id"]]])
    for image_id, image in images.items():
        file = coco_image(root, path, str(image["file_name"]), image.get("split") or split)
        if file is None:
            result.problems.append(f"{shown(path.name)} image {image_id}: '{shown(image['file_name'])}' is not found")
            continue
        result.images.append((file, image.get("split") or split, checked(file, boxes[image_id], names, result, root)))
    return result


def coco_image(root: Path, json_path: Path, name: str, split: str | None) -> Path | None:
    """Where a COCO ``file_name`` is: under ``root``, ``root/images``, the split's folder or ``root/images/<split>``,
    or beside the json; ``None`` if nowhere."""
    stem = json_path.stem.removeprefix("instances_")
    for folder in (root, root / "images", root / stem, root / "images" / stem, json_path.parent):
        if (folder / name).is_file():
            return folder / name
        if split and (folder / split / name).is_file():
            return folder / split / name
    return None


def read_yolo(root: Path, config: dict, folders: dict[str, Path], walker_files) -> Annotated:
    """A YOLO dataset: ``names`` from ``data.yaml``, each split's images with ``labels/`` beside ``images/`` (a
    ``.txt`` per image of ``cls cx cy w h`` lines, normalised; no file: no boxes)."""
    names_given = config.get("names")
    names = [str(names_given[k]) for k in sorted(names_given)] if isinstance(names_given, dict) else list(names_given)
    result = Annotated([str(n) for n in names])
    for split, folder in folders.items():
        for image in walker_files(folder):
            label_file = yolo_label_file(image)
            boxes = _yolo_boxes(label_file, image, result, root) if label_file.is_file() else []
            result.images.append((image, split, checked(image, boxes, result.names, result, root)))
    return result


def yolo_label_file(image: Path) -> Path:
    """The label file of an image: its path with the last ``images`` folder as ``labels`` and ``.txt``."""
    parts = list(image.parts)
    last = max((i for i, part in enumerate(parts) if part == "images"), default=None)
    if last is not None:
        parts[last] = "labels"
    return Path(*parts).with_suffix(".txt")


def _yolo_boxes(label_file: Path, image: Path, result: Annotated, root: Path) -> list[list[float]]:
    size = shown_size(image)
    boxes = []
    for line_number, line in enumerate(label_file.read_text().splitlines(), start=1):
        fields = line.split()
        where = f"{shown(os.path.relpath(label_file, root))} line {line_number}"
        if not fields:
            continue
        if len(fields) != 5:
            result.problems.append(f"{where}: {len(fields)} fields; a box is 'cls cx cy w h' (5)")
            continue
        try:
            cls, cx, cy, w, h = int(fields[0]), *(float(f) for f in fields[1:])
        except ValueError:
            result.problems.append(f"{where}: {line.strip()!r} is not 'cls cx cy w h' numbers")
            continue
        if not 0 <= cls < len(result.names):
            result.problems.append(f"{where}: class {cls} is none of data.yaml's {len(result.names)} names")
            continue
        if size is not None:
            width, height = size
            x1, y1, x2, y2 = (cx - w / 2) * width, (cy - h / 2) * height, (cx + w / 2) * width, (cy + h / 2) * height
            boxes.append([x1, y1, x2, y2, cls])
    return boxes


def read_box_csv(path: Path, root: Path) -> Annotated:
    """``path,x1,y1,x2,y2,label[,split]``, a row per box (an image's rows together or not); a row whose box cells
    are empty is an image with no boxes. Class names: the sorted labels.

    Raises:
        BadInputError: a missing column, a number that is not one, a path outside ``root``.
    """
    from .labels_csv import outside_root
    from .splits import canonical_split

    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    columns = [c.strip().lower() for c in (rows[0].keys() if rows else [])]
    if not rows or not {"path", "x1", "y1", "x2", "y2", "label"} <= set(columns):
        raise BadInputError(f"data.labels '{path}' needs the columns path,x1,y1,x2,y2,label[,split], got {columns}")
    rows = [{k.strip().lower(): (v or "").strip() for k, v in row.items()} for row in rows]
    names = sorted({row["label"] for row in rows if row["label"]})
    result, by_image = Annotated(names), {}
    for line, row in enumerate(rows, start=2):
        if outside_root(row["path"]):
            raise BadInputError(f"data.labels '{path}' line {line}: '{row['path']}' is not a path inside data.root")
        split = canonical_split(row["split"]) if row.get("split") else None
        entry = by_image.setdefault(row["path"], (split, []))
        if not row["label"]:
            continue
        try:
            box = [float(row[k]) for k in ("x1", "y1", "x2", "y2")]
        except ValueError:
            raise BadInputError(f"data.labels '{path}' line {line}: x1,y1,x2,y2 must be numbers, got {row}") from None
        entry[1].append([*box, names.index(row["label"])])
    for name, (split, boxes) in by_image.items():
        result.images.append((root / name, split, checked(root / name, boxes, names, result, root)))
    return result
