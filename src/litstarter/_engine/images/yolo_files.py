"""A YOLO dataset (Ultralytics, Roboflow): ``data.yaml``'s ``names`` and splits, a ``.txt`` of boxes per image.

* ``path`` (optional) is the dataset's folder, relative to ``data.root`` (``data.yaml``'s folder); ``train``,
  ``val`` and ``test`` are relative to it, each a folder of images, a list file (``train.txt``: one image path per
  line, relative to ``path``; ``./images/a.jpg`` as Ultralytics writes it) or a list of either. Every one of them,
  and every line of a list file, goes through :func:`.confine.confine` before anything is opened: an absolute
  value or one that climbs out of ``data.root`` is refused naming ``data.yaml`` and the key (or the list file and
  its line). A folder link inside ``data.root`` may lead elsewhere, as everywhere.
* Two spellings of real exports are read as Ultralytics reads them, each said in one line: an absolute ``path``
  (or key) that, resolved, is ``data.root`` or a folder inside it (Ultralytics writes the dataset's own folder
  there) is read as the relative path it names; a split's ``../x`` that leaves ``data.root`` is read as ``x`` where
  that is inside it (``check_det_dataset``'s rule for a missing ``../`` path, which Roboflow's export relies on:
  ``train: ../train/images`` beside the folder ``train/``). Nothing outside ``data.root`` is opened either way.
* ``names`` (a list, or a dict of index to name) names each class once; a name given twice is refused.
* Each image's boxes are in ``labels/`` beside ``images/`` (the last ``images`` folder of its path), a ``.txt`` of
  ``cls cx cy w h`` lines normalised to the image's size; no file: no boxes.
"""

from __future__ import annotations

import logging
import os
import posixpath
from pathlib import Path

from litstarter.errors import BadInputError, UsageError

from .box_files import Annotated, checked, shown_size
from .confine import LEAVES, confine, outside_root
from .label_formats import Found, LabelFormat
from .listing import Walker, shown
from .preprocess import is_image_file

log = logging.getLogger("litstarter")

YOLO_CONFIG = "data.yaml"
#: The keys of ``data.yaml`` that name a split's images.
SPLIT_KEYS = ("train", "val", "test")
#: What a refused ``../`` value lacked, in the refusal.
ROBOFLOW_HINT = (
    " (a ../x value is read as x when x is a folder or list file inside data.root, as Ultralytics reads Roboflow's"
    " train: ../train/images; here it is not)"
)


def read_yolo(root: Path) -> Annotated:
    """The YOLO dataset of ``root/data.yaml``: its class names and each split's images with their boxes.

    Raises:
        UsageError: ``data.yaml`` has no ``names`` or no ``train``.
        BadInputError: ``data.yaml`` is not YAML or names a class twice; a key or a list file's line leaves
            ``data.root``; a folder or list file it names does not exist.
    """
    import yaml

    config_path = root / YOLO_CONFIG
    try:
        config = yaml.safe_load(config_path.read_text())
        names = config["names"]
    except (OSError, yaml.YAMLError, KeyError, TypeError) as err:
        raise BadInputError(f"'{config_path}' has no names: {err}") from None
    if "train" not in config or not isinstance(names, (list, dict)):
        raise UsageError(f"'{config_path}' needs names and a train folder (train: images/train)")
    names = [str(names[k]) for k in sorted(names)] if isinstance(names, dict) else [str(n) for n in names]
    twice = {n: [i for i, m in enumerate(names) if m == n] for n in names if names.count(n) > 1}
    if twice:
        listed = "; ".join(f"{n!r} is class {' and '.join(map(str, at))}" for n, at in twice.items())
        raise BadInputError(f"'{config_path}' names a class twice: {listed}; name each class once, in index order")
    walker = Walker(root)
    result = Annotated(names)
    for split, images in split_images(root, config, walker).items():
        for image in images:
            label_file = yolo_label_file(image)
            boxes = _yolo_boxes(label_file, image, result, root) if label_file.is_file() else []
            result.images.append((image, split, checked(image, boxes, result.names, result, root)))
    return result


def split_images(root: Path, config: dict, walker: Walker) -> dict[str, list[Path]]:
    """``{split: image paths}`` of ``data.yaml``'s ``train``/``val``/``test``: folders walked, list files read;
    every value (and ``path``) confined to ``root`` first, then every list file's lines.

    Raises:
        BadInputError: a value or a line leaves ``root``; a folder or list file does not exist.
    """
    source = f"'{root / YOLO_CONFIG}'"
    given = [("key path", _as_read(root, "path", str(config["path"])))] if config.get("path") not in (None, "") else []
    (base,) = confine(source, root, given, what="key(s)", thing="a folder") or ["."]
    values = {key: config[key] for key in SPLIT_KEYS if config.get(key) not in (None, "")}
    written = [(key, str(v)) for key, value in values.items() for v in _as_list(value)]
    entries = [(f"key {key}", _as_read(root, key, v, base)) for key, v in written]
    hint = ROBOFLOW_HINT if any(v.startswith("../") for _, v in written) else ""
    confined = iter(confine(source, root, entries, what="key(s)", thing="a folder or list file", base=base, hint=hint))
    named = {key: [root / next(confined) for _ in _as_list(value)] for key, value in values.items()}
    missing = [f"{key}: {shown(p)}" for key, paths in named.items() for p in paths if not p.exists()]
    if missing:
        raise BadInputError(f"{source} names folders or list files that do not exist: {missing}")
    out: dict[str, list[Path]] = {}
    for key, paths in named.items():
        for path in paths:
            if path.is_dir():
                out.setdefault(key, []).extend(f.path for f in walker.files(path, keep=is_image_file))
            else:
                out.setdefault(key, []).extend(_listed(root, path, base))
    return out


def _as_read(root: Path, key: str, value: str, base: str = "") -> str:
    """``value`` of ``data.yaml``'s ``key`` as it is read, relative to ``base`` (``path``, for a split's key): an
    absolute value that, resolved, is ``root`` or inside it, as the relative path it names; a split's ``../x`` that
    leaves ``root``, as ``x`` where that is inside it (a folder or list file there). Each rewrite is said in one
    line; any other value is returned as written, for :func:`.confine.confine` to judge."""
    where = f"'{root / YOLO_CONFIG}' key {key} '{shown(value)}'"
    inside = _within(root, value)
    if inside is not None:
        what = "is data.root" if inside == "." else "lies inside data.root"
        log.info("data: %s %s: read as '%s' (relative to data.root)", where, what, inside)
        return posixpath.relpath(inside, base) if base else inside
    if key == "path" or not value.startswith("../") or outside_root(posixpath.join(base, value)) != LEAVES:
        return value
    rest = value[3:]
    kept = posixpath.normpath(posixpath.join(base, rest))
    if outside_root(kept) is not None or not (root / kept).exists():
        return value
    log.info(
        "data: %s leaves data.root: read as '%s', as Ultralytics reads a ../ path that does not exist (Roboflow's"
        " export writes them)",
        where,
        rest,
    )
    return rest


def _within(root: Path, value: str) -> str | None:
    """An absolute ``value`` as the path relative to ``root`` it names when it is ``root`` or inside it: by its
    spelling, or where its links lead (``root``'s too); ``None`` otherwise. Only names are compared and links read:
    nothing is opened."""
    if "\0" in value or not os.path.isabs(value):
        return None
    for candidate in dict.fromkeys((os.path.normpath(value), os.path.realpath(value))):
        for folder in dict.fromkeys((os.path.abspath(root), os.path.realpath(root))):
            relative = os.path.relpath(candidate, folder)
            if relative != os.pardir and not relative.startswith(os.pardir + os.sep):
                return Path(relative).as_posix()
    return None


def _as_list(value) -> list:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _listed(root: Path, list_file: Path, base: str) -> list[Path]:
    """The images a list file names (a path per line, relative to ``base``; blank lines and ``#`` comments skipped),
    each confined to ``root`` before any is opened.

    Raises:
        BadInputError: the file is not UTF-8 text, or a line leaves ``root``.
    """
    try:
        lines = list_file.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise BadInputError(f"'{list_file}' is not a readable list of image paths: {err}") from None
    entries = [(f"line {n}", line.strip()) for n, line in enumerate(lines, start=1)]
    entries = [(where, line) for where, line in entries if line and not line.startswith("#")]
    return [root / path for path in confine(f"'{list_file}'", root, entries, what="line(s)", base=base)]


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


class YoloFiles(LabelFormat):
    """YOLO: ``data.yaml`` at the folder's top."""

    name = "yolo"
    title = "YOLO"
    reads = "data.yaml with names and train/val/test, a labels/<name>.txt of 'class cx cy w h' per image"

    def detect(self, root: Path) -> Found | None:
        """``data.yaml``."""
        path = root / YOLO_CONFIG
        return Found(self, path, YOLO_CONFIG, ((path, None),)) if path.is_file() else None

    def read(self, root: Path, found: Found) -> Annotated:
        """:func:`read_yolo`."""
        return read_yolo(root)


FORMAT = YoloFiles()
