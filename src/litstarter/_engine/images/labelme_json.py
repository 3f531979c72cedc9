"""LabelMe JSON: a ``.json`` per image (``version``, ``shapes``, ``imagePath``, ``imageWidth``, ``imageHeight``), as
LabelMe saves it beside the image.

* Found in ``data.root`` or a folder in it (one level down: ``train/``, ``valid/``, ``images/``) one of whose
  first three ``.json`` holds ``shapes``; every ``.json`` of such a folder is read. A split folder on the way
  (``train/``) gives the split, else the fractions.
* ``imagePath`` is relative to the ``.json``'s folder (``\\`` read as ``/``, as LabelMe writes it on Windows) and goes
  through :func:`.confine.confine` first; ``imageData`` (the image inlined) is not read: the file must be there.
  ``imageWidth`` and ``imageHeight`` are checked against the image.
* Shapes: a ``rectangle`` is a box (its two corners, in any order); a ``polygon`` (3 points or more), a ``circle``
  (centre and a point on it) and a ``mask`` (its two corners) are read as the box around them, counted in the
  layout line; a ``point``, ``line``, ``linestrip`` or ``points`` encloses no box and is left out, counted. A shape
  without ``shape_type`` is a polygon (LabelMe's default). ``label`` is the class, names sorted; ``group_id`` and
  ``flags`` are not read.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

from .annotation_files import Unreadable, bounds, files_in, head, number, read_json, relative, split_of, subfolders
from .box_files import Annotated, Drawn, numbered
from .confine import confine
from .label_formats import Found, LabelFormat

#: Shapes read as the box around them, and those that enclose none.
AROUND = {"polygon", "circle", "mask"}
NO_BOX = {"point", "line", "linestrip", "points"}
_SHAPES = re.compile(rb'"shapes"\s*:')
#: A folder is LabelMe's when one of its first few ``.json`` is.
SNIFFED = 3


def is_labelme(path: Path) -> bool:
    """A JSON object whose first bytes hold ``"shapes"`` (LabelMe writes ``version``, ``flags``, ``shapes`` first)."""
    first = head(path)
    return first[:1] == b"{" and bool(_SHAPES.search(first))


class LabelMe(LabelFormat):
    """LabelMe JSON (see the module's docstring)."""

    name = "labelme"
    title = "LabelMe JSON"
    reads = "a LabelMe .json beside each image, in data.root or a folder in it"

    def detect(self, root: Path) -> Found | None:
        """The folders (``root`` and one level down) whose first ``.json`` is LabelMe's, and their ``.json``."""
        folders = [f for f in (root, *subfolders(root)) if any(map(is_labelme, files_in(f, ".json")[:SNIFFED]))]
        if not folders:
            return None
        files = tuple((p, split_of(relative(p, root))) for f in folders for p in files_in(f, ".json"))
        what = ", ".join(f"{relative(f, root)}/*.json" for f in folders).replace("./*.json", "*.json")
        return Found(self, Path(os.path.commonpath(folders)), f"{what} ({len(files)} files)", files)

    def read(self, root: Path, found: Found) -> Annotated:
        """Every ``.json``: the ``imagePath``\\ s confined first, then each shape read."""
        result = Annotated([])
        parsed = []
        for path, split in found.files:
            where = relative(path, root)
            try:
                data = read_json(path)
            except Unreadable as err:
                result.problems.append(f"{where}: {err}")
                continue
            if not (isinstance(data, dict) and isinstance(data.get("shapes"), list)):
                result.problems.append(f"{where}: not a LabelMe file (no list of shapes)")
            elif not isinstance(data.get("imagePath"), str) or not data["imagePath"].strip():
                result.problems.append(f"{where}: imagePath is empty or missing (imageData is not read)")
            else:
                parsed.append((path, split, data))
        bases: dict[str, list[int]] = {}
        for i, (path, _, _) in enumerate(parsed):
            bases.setdefault(relative(path.parent, root), []).append(i)
        images: dict[int, str] = {}
        for base, members in bases.items():
            entries = [(f"{relative(parsed[i][0], root)} imagePath", _path(parsed[i][2])) for i in members]
            named = confine(f"LabelMe '{found.path}'", root, entries, what="file(s)", base="" if base == "." else base)
            images.update(zip(members, named, strict=True))
        drawn = []
        for i, (path, split, data) in enumerate(parsed):
            where, image = relative(path, root), root / images[i]
            if not image.is_file():
                result.problems.append(f"{where}: imagePath '{_path(data)}' is not found (imageData is not read)")
                continue
            drawn.append(_drawn(data, image, split or split_of(images[i]), where, result))
        return numbered(drawn, result, root)


def _path(data: dict) -> str:
    return data["imagePath"].strip().replace("\\", "/")


def _drawn(data: dict, image: Path, split: str | None, where: str, result: Annotated) -> Drawn:
    """One file's shapes as boxes; the rest counted or recorded in ``result``."""
    stated = (number(data.get("imageWidth")), number(data.get("imageHeight")))
    drawn = Drawn(image, split, stated=stated if None not in stated else None, where=where)
    for j, shape in enumerate(data["shapes"]):
        entry = f"shape {j}"
        shape = shape if isinstance(shape, dict) else {}
        kind = str(shape.get("shape_type") or "polygon")
        label = str(shape.get("label") or "").strip()
        if kind in NO_BOX:
            result.count(f"LabelMe shape(s) that enclose no box left out ({', '.join(sorted(NO_BOX))})")
            continue
        points = point_pairs(shape.get("points"))
        if not label:
            result.problems.append(f"{where} {entry}: label is empty (a box needs its class)")
        elif points is None:
            result.problems.append(f"{where} {entry} ({label}): points {shape.get('points')!r} are not [x, y] numbers")
        elif kind not in ("rectangle", *AROUND):
            result.problems.append(f"{where} {entry} ({label}): shape_type {kind!r} is not one LabelMe writes")
        elif kind == "polygon" and len(points) < 3:
            result.problems.append(f"{where} {entry} ({label}): a polygon of {len(points)} point(s) (it needs 3)")
        elif len(points) < 2:
            result.problems.append(f"{where} {entry} ({label}): a {kind} of {len(points)} point(s) (it needs 2)")
        else:
            if kind == "circle":
                (cx, cy), (px, py) = points[:2]
                radius = math.hypot(px - cx, py - cy)
                box = (cx - radius, cy - radius, cx + radius, cy + radius)
            else:
                box = bounds(points)
            if kind in AROUND:
                result.count(f"LabelMe {kind}(s) read as the box around them")
            drawn.add(box, label, entry)
    return drawn


def point_pairs(value) -> list[tuple[float, float]] | None:
    """``[[x, y], ...]`` as number pairs, or ``None``."""
    if not isinstance(value, list):
        return None
    out = []
    for point in value:
        pair = [number(v) for v in point] if isinstance(point, (list, tuple)) and len(point) == 2 else [None]
        if None in pair:
            return None
        out.append((pair[0], pair[1]))
    return out


FORMAT = LabelMe()
