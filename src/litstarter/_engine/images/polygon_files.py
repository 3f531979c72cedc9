"""Polygon annotations as people have them, checked the same way whatever the file: the segmentation readers
(:mod:`.polygon_formats` lists them: LabelMe, CVAT for images, COCO) give each image its shapes as a :class:`Sketch`,
and :func:`numbered` turns them into :class:`Drawings`, each image's target a drawn mask (:mod:`.drawn_masks`).

* **Classes**: ``classes.txt`` (or ``classes.json``) in ``data.root`` when there is one, index 0 its first line;
  else ``background`` (0) and the labels the shapes use, sorted (COCO: its categories, by id). A shape labelled
  ``background``, ``_background_`` or ``__background__`` draws the background (0), one labelled ``__ignore__``
  draws ``data.ignore_index`` (LabelMe's ``labels.txt`` conventions); neither is a class of its own.
* **Checks**, against the image's size as shown (after its EXIF orientation, read from its header): a polygon of
  fewer than 3 points or of no area, a point that is not a finite number or lies more than half a pixel outside the
  image, a run-length mask of another size than its image, a label ``classes.txt`` lacks, an image the annotation
  names that is not there, a size the annotation states that is not the image's. ``data.on_bad_box: error``
  refuses them in one line naming the file and the entry (the first few, and the count); ``skip`` leaves them out
  (the shape, or the image) and counts them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .box_files import EDGE_SLACK, Annotated, shown_size
from .drawn_masks import IGNORED
from .listing import shown
from .mask_files import CLASS_FILES, read_class_names

#: Labels that draw the background, and the one that draws ``data.ignore_index``.
BACKGROUND_LABELS = frozenset({"background", "_background_", "__background__"})
IGNORE_LABEL = "__ignore__"
#: The background's name where no ``classes.txt`` names it.
BACKGROUND = "background"
#: Bad shapes named in full in a refusal; the rest are counted.
NAMED = 5


@dataclass
class Sketch:
    """One image as an annotation draws it, its classes still names (:func:`numbered` numbers them).

    Args:
        image: The image file (inside ``data.root``).
        split: Its split, or ``None`` (the fractions split it).
        annotation: The annotation file (its facts go into the target: an edit rebuilds the cache).
        where: The annotation entry, as a refusal names it (``train/0001.json``, ``annotations.xml image 7``).
        shapes: ``(entry, label, shape)`` in drawing order; ``shape`` is :mod:`.rasterise`'s with the label in
            place of the class (``["polygon", "cat", [x0, y0, ...]]``).
        stated: ``(width, height)`` the annotation states for the image, checked against the file; ``None``: none.
    """

    image: Path
    split: str | None
    annotation: Path
    where: str
    shapes: list[tuple[str, str, list]] = field(default_factory=list)
    stated: tuple[float, float] | None = None

    def add(self, entry: str, label: str, shape: list) -> None:
        """One more shape, the annotation's ``entry`` (``shape 3``), of class ``label``."""
        self.shapes.append((entry, label, shape))


@dataclass
class Drawings(Annotated):
    """Images with their drawn masks (``images``: ``[(image, split, target)]``, the target a drawn mask's), what was
    wrong on the way, and the format's name for the layout line."""

    format: str = ""
    things = "shape(s)"

    def describe(self, path: Path | None) -> str:
        """The layout line's layout: ``labelme shapes <path> (30 images, 52 shapes, 0 image(s) without)``."""
        shapes = sum(len(target["shapes"]) for _, _, target in self.images)
        empty = sum(not target["shapes"] for _, _, target in self.images)
        counted = f"; {self.counts()}" if self.counted else ""
        return (
            f"{self.format} shapes {path} ({len(self.images)} images, {shapes} shapes, {empty} image(s)"
            f" without{counted}; classes {', '.join(self.names)})"
        )


def class_index(names: list[str]) -> dict[str, int]:
    """Label -> the class it draws: each name's index, the background labels 0 and ``__ignore__``
    :data:`.drawn_masks.IGNORED` (where ``classes.txt`` does not name them itself)."""
    return dict.fromkeys(BACKGROUND_LABELS, 0) | {IGNORE_LABEL: IGNORED} | {name: i for i, name in enumerate(names)}


def class_names(root: Path, sketches: list[Sketch], order: list[str] | None = None) -> tuple[list[str], bool]:
    """The classes, and whether ``classes.txt`` (or ``classes.json``) gave them: its names, else ``background`` and
    ``order`` (COCO's categories by id) or the labels the shapes use, sorted (see the module's docstring)."""
    given = read_class_names(root)
    if given is not None:
        return given, True
    special = BACKGROUND_LABELS | {IGNORE_LABEL}
    if order is None:
        order = sorted({label for sketch in sketches for _, label, _ in sketch.shapes})
    return [BACKGROUND, *(name for name in order if name not in special)], False


def numbered(sketches: list[Sketch], result: Drawings, root: Path, order: list[str] | None = None) -> Drawings:
    """``sketches`` into ``result`` (whose ``names`` are set here, :func:`class_names`): each image's shapes checked
    and numbered into its drawn mask's target; an image whose annotation states another size than its own is left
    out as a bad annotation (its shapes would land elsewhere)."""
    result.names, fixed = class_names(root, sketches, order)
    index, facts = class_index(result.names), {}
    for sketch in sketches:
        size = shown_size(sketch.image) or (0, 0)  # unreadable: the cache build names the image
        if sketch.stated is not None and all(sketch.stated) and size != (0, 0) and _differs(sketch.stated, size):
            stated = "x".join(f"{v:g}" for v in sketch.stated)
            result.problems.append(
                f"{sketch.where}: states the size {stated} but '{shown(os.path.relpath(sketch.image, root))}' is"
                f" {size[0]}x{size[1]} (as shown, after its EXIF orientation): not its image, or a resized copy"
            )
            continue
        shapes = []
        for entry, label, shape in sketch.shapes:
            why = _unknown(label, index, fixed) or shape_problem(shape, size)
            if why:
                result.problems.append(f"{sketch.where} {entry} ({label}): {why}")
            else:
                shapes.append([shape[0], index[label], *shape[2:]])
        if sketch.annotation not in facts:
            facts[sketch.annotation] = annotation_facts(sketch.annotation, root)
        target = {"size": list(size), "shapes": shapes, "annotation": facts[sketch.annotation]}
        result.images.append((sketch.image, sketch.split, target))
    return result


def _unknown(label: str, index: dict[str, int], fixed: bool) -> str | None:
    if label in index:
        return None
    return f"label {label!r} is not one of the classes {CLASS_FILES[0]} names" if fixed else f"label {label!r} unknown"


def _differs(stated: tuple[float, float], size: tuple[int, int]) -> bool:
    return any(abs(a - b) > EDGE_SLACK for a, b in zip(stated, size, strict=True))


def annotation_facts(path: Path, root: Path) -> list:
    """``[file under root, size, mtime_ns]`` of an annotation file: an edit to it changes a drawn mask's target."""
    try:
        stat = path.stat()
        size, mtime = stat.st_size, stat.st_mtime_ns
    except OSError:
        size, mtime = 0, 0
    return [shown(os.path.relpath(path, root)).replace(os.sep, "/"), size, mtime]


def shape_problem(shape: list, size: tuple[int, int]) -> str | None:
    """Why a shape cannot be drawn on an image of ``size`` (``(width, height)``; ``(0, 0)``: unknown, not checked),
    or ``None``."""
    kind, data = shape[0], shape[2]
    if kind == "polygon":
        points = list(zip(data[0::2], data[1::2], strict=True))
        if len(points) < 3:
            return f"a polygon of {len(points)} point(s) (it needs 3)"
        if not polygon_area(data):
            return "a polygon of no area (its points on one line)"
        return _outside([x for x, _ in points], [y for _, y in points], size)
    if kind == "ellipse":
        cx, cy, rx, ry, _ = data
        if rx <= 0 or ry <= 0:
            return f"an ellipse of radii {rx:g} and {ry:g} (both must be above 0)"
        reach = max(rx, ry)
        return _outside([cx - reach, cx + reach], [cy - reach, cy + reach], size) if size != (0, 0) else None
    left, top, height, width = data
    if size != (0, 0) and (left < 0 or top < 0 or left + width > size[0] or top + height > size[1]):
        return f"a {width}x{height} mask at ({left}, {top}) is not inside the {size[0]}x{size[1]} image"
    return None


def _outside(xs: list[float], ys: list[float], size: tuple[int, int]) -> str | None:
    if size == (0, 0):
        return None
    width, height = size
    if min(*xs, *ys) < -EDGE_SLACK or max(xs) > width + EDGE_SLACK or max(ys) > height + EDGE_SLACK:
        box = ", ".join(f"{v:g}" for v in (min(xs), min(ys), max(xs), max(ys)))
        return f"reaches [{box}], outside the {width}x{height} image"
    return None


def polygon_area(xy) -> float:
    """The area a polygon ``[x0, y0, x1, y1, ...]`` encloses (the shoelace formula, unsigned)."""
    xs, ys = xy[0::2], xy[1::2]
    n = len(xs)
    return abs(sum(xs[i] * ys[(i + 1) % n] - xs[(i + 1) % n] * ys[i] for i in range(n))) / 2
