"""CVAT for images 1.1 XML: one ``annotations.xml`` holding every image (``<image id name width height [subset]>``)
with its shapes, as CVAT exports a task, a job or a project.

* Found as an ``.xml`` in ``data.root`` whose root element is ``<annotations>`` (CVAT names it
  ``annotations.xml``; each such file is read), or named by ``data.labels``. An export of "CVAT for video 1.1"
  (``<track>`` elements) is refused, naming the format to export instead.
* ``name`` is the image's path under ``images/`` (as CVAT's export writes it; ``images/<subset>/``, ``data.root`` and
  the ``.xml``'s folder are looked in too) and goes through :func:`.confine.confine` first. ``width`` and
  ``height`` are checked against the image. ``subset`` (``Train``, ``Validation``, ``Test``) gives the split, else
  the image's folders, else the fractions.
* Shapes: ``<box>`` (``xtl ytl xbr ybr``; ``rotation``: the box around it turned about its centre; ``occluded``
  boxes are trained on as any) is a box; ``<polygon>`` (3 points or more), ``<ellipse>`` and ``<mask>`` (its
  ``left top width height``) are read as the box around them, counted in the layout line; ``<polyline>``,
  ``<points>``, ``<cuboid>``, ``<skeleton>`` and ``<tag>`` enclose no box and are left out, counted. ``label`` is
  the class, names sorted (the labels ``<meta>`` declares are not classes until a box uses them).
"""

from __future__ import annotations

import math
from pathlib import Path
from xml.etree.ElementTree import Element

from litstarter.errors import BadInputError

from .annotation_files import Unreadable, bounds, files_in, number, read_xml, relative, split_of, turned, xml_root
from .box_files import Annotated, Drawn, numbered
from .confine import confine
from .label_formats import Found, LabelFormat
from .splits import canonical_split

#: Shapes read as the box around them, and those that enclose none.
AROUND = {"polygon", "ellipse", "mask"}
NO_BOX = {"polyline", "points", "cuboid", "skeleton", "tag"}
#: The attributes that place each shape read as a box.
ATTRIBUTES = {
    "box": ("xtl", "ytl", "xbr", "ybr"),
    "ellipse": ("cx", "cy", "rx", "ry"),
    "mask": ("left", "top", "width", "height"),
}


class CvatImages(LabelFormat):
    """CVAT for images 1.1 (see the module's docstring)."""

    name = "cvat"
    title = "CVAT for images 1.1 XML"
    reads = "annotations.xml (an <annotations> of <image> elements) beside images/, or data.labels: <file>.xml"

    def detect(self, root: Path) -> Found | None:
        """The ``.xml`` files of ``root`` whose root element is ``<annotations>``."""
        files = tuple((p, None) for p in files_in(root, ".xml") if xml_root(p) == "annotations")
        if not files:
            return None
        return Found(self, files[0][0], ", ".join(relative(p, root) for p, _ in files), files)

    def claims(self, path: Path) -> bool:
        """An ``.xml`` whose root element is ``<annotations>``."""
        return path.suffix.lower() == ".xml" and xml_root(path) == "annotations"

    def read(self, root: Path, found: Found) -> Annotated:
        """Every file's ``<image>`` elements.

        Raises:
            BadInputError: a file does not parse, is CVAT for video, or names an image outside ``data.root``.
        """
        result, drawn = Annotated([]), []
        for path, _ in found.files:
            drawn += _read_file(path, root, result)
        return numbered(drawn, result, root)


def _read_file(path: Path, root: Path, result: Annotated) -> list[Drawn]:
    """One ``annotations.xml``'s images with their boxes."""
    images = cvat_images(path, root, result.problems, "boxes")
    return [_shapes(image, file, split, label, result) for image, file, split, label in images]


def cvat_images(
    path: Path, root: Path, problems: list[str], shapes: str
) -> list[tuple[Element, Path, str | None, str]]:
    """One ``annotations.xml``'s ``<image>`` elements, each with its file (inside ``data.root``), split (``subset``,
    else the folder's) and its place for messages; an image whose file is missing is recorded in ``problems``.

    Raises:
        BadInputError: the file does not parse, is CVAT for video (whose ``<track>`` elements hold the ``shapes``),
            or names an image without a name or outside ``data.root``.
    """
    try:
        element = read_xml(path)
    except Unreadable as err:
        raise BadInputError(f"'{path}' {err}") from None
    images = element.findall("image")
    if element.find("track") is not None and not images:
        raise BadInputError(
            f"'{path}' is CVAT for video 1.1 (<track> elements): export the task as CVAT for images 1.1, whose"
            f" <image> elements hold each frame's {shapes}"
        )
    entries = [(f"image {image.get('id', n)}", (image.get("name") or "").strip()) for n, image in enumerate(images)]
    empty = [where for where, name in entries if not name]
    if empty:
        raise BadInputError(f"'{path}': {', '.join(empty[:5])} without a name (the image's path under images/)")
    names = confine(f"'{path}'", root, entries, what="image(s)")
    found = []
    for image, (where, _), name in zip(images, entries, names, strict=True):
        subset = (image.get("subset") or "").strip()
        file = _image(root, path, name, subset)
        label = f"{relative(path, root)} {where}"
        if file is None:
            problems.append(f"{label}: '{name}' is not found under images/, data.root or beside the .xml")
            continue
        found.append(
            (image, file, (canonical_split(subset) if subset else None) or split_of(relative(file, root)), label)
        )
    return found


def _image(root: Path, xml: Path, name: str, subset: str) -> Path | None:
    folders = [root / "images", *([root / "images" / subset] if subset else []), root, xml.parent]
    return next((folder / name for folder in folders if (folder / name).is_file()), None)


def _shapes(image, file: Path, split: str | None, where: str, result: Annotated) -> Drawn:
    """One ``<image>``'s shapes as boxes; the rest counted or recorded in ``result``."""
    stated = (number(image.get("width")), number(image.get("height")))
    drawn = Drawn(file, split, stated=stated if None not in stated else None, where=where)
    for j, shape in enumerate(image):
        kind, entry = shape.tag, f"{shape.tag} {j}"
        if kind in NO_BOX:
            result.count(f"CVAT shape(s) that enclose no box left out ({', '.join(sorted(NO_BOX))})")
            continue
        if kind not in ("box", *AROUND):
            continue
        label = (shape.get("label") or "").strip()
        box = _box(shape, kind)
        if not label:
            result.problems.append(f"{where} {entry}: label is empty (a box needs its class)")
        elif isinstance(box, str):
            result.problems.append(f"{where} {entry} ({label}): {box}")
        else:
            if kind in AROUND:
                result.count(f"CVAT {kind}(s) read as the box around them")
            drawn.add(box, label, entry)
    return drawn


def _box(shape, kind: str) -> tuple[float, float, float, float] | str:
    """The box of a ``<box>``, ``<polygon>``, ``<ellipse>`` or ``<mask>``, or the phrase saying why there is none."""
    if kind == "polygon":
        pairs = [p.split(",") for p in (shape.get("points") or "").split(";") if p.strip()]
        points = [(number(p[0]), number(p[1])) if len(p) == 2 else (None, None) for p in pairs]
        if any(None in point for point in points):
            return f"points {shape.get('points')!r} are not 'x,y;x,y;...' numbers"
        return bounds(points) if len(points) >= 3 else f"a polygon of {len(points)} point(s) (it needs 3)"
    keys = ATTRIBUTES[kind]
    values = [number(shape.get(k)) for k in keys]
    if None in values:
        return f"{' '.join(keys)} {[shape.get(k) for k in keys]} are not numbers"
    degrees = number(shape.get("rotation") or 0) or 0.0
    if kind == "mask":
        left, top, width, height = values
        return left, top, left + width, top + height
    if kind == "ellipse":
        cx, cy, rx, ry = values
        cos, sin = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
        half_w, half_h = math.hypot(rx * cos, ry * sin), math.hypot(rx * sin, ry * cos)
        return cx - half_w, cy - half_h, cx + half_w, cy + half_h
    x1, y1, x2, y2 = values
    return turned((x1, y1, x2, y2), degrees, ((x1 + x2) / 2, (y1 + y2) / 2))


FORMAT = CvatImages()
