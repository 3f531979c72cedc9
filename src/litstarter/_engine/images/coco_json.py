"""COCO instances json: its categories, images and boxes, checked before any image is opened.

* **Categories** are sorted by id; an id or a name given twice is refused naming both (which class would a box be?).
* **Images**: an id given twice is refused naming both ``file_name``s (an annotation's ``image_id`` would name
  either); so is one file under two ids. A ``file_name`` is relative to ``data.root`` (found there, under
  ``images/``, the split's folder or beside the json: :func:`coco_image`) and must stay inside it
  (:func:`.confine.confine`: ``../x.png``, ``/etc/passwd`` are refused, every one named). An image's ``"split"``
  field takes the split names and aliases (``valid``, ``testing``, ...); another value is refused.
* **Annotations**: ``bbox`` is ``[x, y, w, h]``; an unknown image or category, or a ``bbox`` that is not four
  numbers, is a bad annotation (:class:`.box_files.Annotated` refuses or counts them).
* **Category ids** may be any (1, 5, 90 as COCO's own are): the classes are the categories sorted by id, and the
  ids are kept (:attr:`.box_files.Annotated.ids`) so that ``infer``'s COCO results give them back.

Found as ``annotations/instances_<split>.json`` (or ``instances_<split>.json`` beside the images;
``instances_train2017.json`` is train), or named by ``data.labels: <file>.json`` (:class:`CocoJson`).
"""

from __future__ import annotations

import json
from pathlib import Path

from litstarter.errors import BadInputError

from .annotation_files import json_kind
from .box_files import Annotated, checked
from .confine import confine, outside_root
from .label_formats import Found, LabelFormat
from .listing import shown
from .splits import SPLIT_ALIASES, SPLIT_NAMES, canonical_split


def read_coco(path: Path, root: Path, split: str | None, result: Annotated | None = None) -> Annotated:
    """A COCO instances json: its categories (sorted by id), images (``file_name`` found under ``root``, see
    :func:`coco_image`) and boxes. An image's ``"split"`` field, where there is one, places it; else ``split``.

    Args:
        path: The json.
        root: ``data.root``: every ``file_name`` stays inside it.
        split: The split of the file's images (``None``: their own ``"split"`` fields, else the fractions).
        result: Another split's file's annotations, to add this file's to (their categories must match).

    Raises:
        BadInputError: the file is not COCO json; a category id or name, an image id or an image's file is given
            twice; a ``file_name`` leaves ``root``; a ``"split"`` is unknown; or the categories differ from another
            split's file.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
        categories = sorted(data["categories"], key=lambda c: c["id"])
        names = [str(c["name"]) for c in categories]
        index = {c["id"]: i for i, c in enumerate(categories)}
        entries = list(data["images"])
        annotations = data.get("annotations", [])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise BadInputError(f"'{path}' is not COCO instances json (images, annotations, categories): {err}") from None
    check_categories(path, categories)
    ids = [c["id"] for c in categories]
    if result is None:
        result = Annotated(names, ids=ids)
    elif result.names != names or result.ids != ids:
        raise BadInputError(
            f"'{path}' has the categories {dict(zip(ids, names, strict=True))}; another split's file has"
            f" {dict(zip(result.ids or [], result.names, strict=True))}"
        )
    images = listed_images(path, root, entries, split)
    boxes: dict = {image_id: [] for image_id in images}
    for n, ann in enumerate(annotations if isinstance(annotations, list) else []):
        ann = ann if isinstance(ann, dict) else {}
        where = f"{shown(path.name)} annotation {ann.get('id', n)}"
        bbox = ann.get("bbox")
        if not known(ann.get("image_id"), images):
            result.problems.append(f"{where}: image_id {ann.get('image_id')!r} is no image of the file")
        elif not known(ann.get("category_id"), index):
            result.problems.append(f"{where}: category_id {ann.get('category_id')!r} is none of {sorted(index)}")
        elif ann.get("iscrowd"):
            result.crowd += 1
        elif not (isinstance(bbox, list) and len(bbox) == 4 and all(is_number(v) for v in bbox)):
            result.problems.append(f"{where}: bbox {bbox!r} is not [x, y, w, h] numbers")
        else:
            x, y, w, h = (float(v) for v in bbox)
            boxes[ann["image_id"]].append([x, y, x + w, y + h, index[ann["category_id"]]])
    for image_id, (name, image_split) in images.items():
        file = coco_image(root, path, name, image_split)
        if file is None:
            result.problems.append(f"{shown(path.name)} image {image_id}: '{shown(name)}' is not found")
            continue
        result.images.append((file, image_split, checked(file, boxes[image_id], names, result, root)))
    return result


def known(key, table: dict) -> bool:
    try:
        return key in table
    except TypeError:  # a list or a dict as an id
        return False


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_categories(path: Path, categories: list[dict]) -> None:
    """Refuse a category id or name given twice, naming both."""
    by_id: dict = {}
    by_name: dict = {}
    for category in categories:
        cid, name = category["id"], str(category["name"])
        if cid in by_id:
            raise BadInputError(
                f"'{path}': category id {cid!r} is given twice, as {by_id[cid]!r} and {name!r}; give each category"
                " its own id"
            )
        if name in by_name:
            raise BadInputError(
                f"'{path}': category name {name!r} is given twice, ids {by_name[name]!r} and {cid!r}; name each class"
                " once (merge the two ids, or name them apart)"
            )
        by_id[cid], by_name[name] = name, cid


def listed_images(path: Path, root: Path, entries: list, split: str | None) -> dict:
    """``{image id: (file_name normalised, split)}``, every entry checked before any file is opened.

    Raises:
        BadInputError: an entry without ``id`` and ``file_name``; an id or a file given twice; a ``file_name``
            outside ``root``; an unknown ``"split"``.
    """
    seen: dict = {}
    for n, image in enumerate(entries):
        if not (isinstance(image, dict) and isinstance(image.get("id"), (int, str)) and image.get("file_name")):
            raise BadInputError(f"'{path}': images[{n}] is not an image entry with an id and a file_name: {image!r}")
        image_id, name = image["id"], str(image["file_name"])
        if image_id in seen:
            raise BadInputError(
                f"'{path}': image id {image_id!r} is given twice, for '{shown(seen[image_id]['file_name'])}' and"
                f" '{shown(name)}'; give each image its own id (an annotation's image_id would name either)"
            )
        seen[image_id] = image
    named = [(f"image {image_id!r}", str(image["file_name"])) for image_id, image in seen.items()]
    files = confine(f"'{path}'", root, named, what="image(s)")
    out, by_file = {}, {}
    for (image_id, image), name in zip(seen.items(), files, strict=True):
        if name in by_file:
            raise BadInputError(
                f"'{path}': images {by_file[name]!r} and {image_id!r} both name '{shown(name)}'; list each file once,"
                " with all its boxes"
            )
        by_file[name] = image_id
        given = image.get("split")
        if given and canonical_split(str(given)) is None:
            raise BadInputError(
                f"'{path}' image {image_id!r}: split {given!r} is not one of {sorted(SPLIT_ALIASES)} (any case)"
            )
        out[image_id] = (name, canonical_split(str(given)) if given else split)
    return out


def coco_image(root: Path, json_path: Path, name: str, split: str | None) -> Path | None:
    """Where a COCO ``file_name`` (relative, inside ``root``: :func:`.confine.confine`) is: under ``root``,
    ``root/images``, the split's folder or ``root/images/<split>``, or beside the json; ``None`` if nowhere."""
    stem = json_path.stem.removeprefix("instances_")
    folders = [root, root / "images"]
    folders += [root / stem, root / "images" / stem] if stem not in ("", ".") and not outside_root(stem) else []
    for folder in (*folders, json_path.parent):
        if (folder / name).is_file():
            return folder / name
        if split and (folder / split / name).is_file():
            return folder / split / name
    return None


def coco_files(root: Path) -> dict[str, Path]:
    """``{split: instances json}`` under ``root/annotations`` or ``root`` (``instances_train2017.json`` is train)."""
    found = {}
    for folder in (root / "annotations", root):
        for path in sorted(folder.glob("instances_*.json")) if folder.is_dir() else []:
            split = canonical_split(path.stem.removeprefix("instances_").rstrip("0123456789"))
            if split and split not in found:
                found[split] = path
    return found


class CocoJson(LabelFormat):
    """COCO instances json: a file per split found in the folder, or one file ``data.labels`` names."""

    name = "coco"
    title = "COCO json"
    reads = "annotations/instances_<split>.json (or beside the images), or data.labels: <file>.json"

    def detect(self, root: Path) -> Found | None:
        """``instances_<split>.json`` files, train's among them."""
        files = coco_files(root)
        if "train" not in files:
            return None
        listed = tuple((files[split], split) for split in SPLIT_NAMES if split in files)
        what = ", ".join(path.relative_to(root).as_posix() for path, _ in listed)
        return Found(self, files["train"], what, listed)

    def claims(self, path: Path) -> bool:
        """A ``.json`` that is not a list (a list is Label Studio's: this reader says why anything else is not
        COCO)."""
        return path.suffix.lower() == ".json" and json_kind(path) != "list"

    def read(self, root: Path, found: Found) -> Annotated:
        """Each file in turn, their categories the same."""
        result = None
        for path, split in found.files:
            result = read_coco(path, root, split, result)
        return result


FORMAT = CocoJson()
