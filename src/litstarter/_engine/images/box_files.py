"""Box annotations as people have them, checked the same way whatever the file: each format's reader
(:mod:`.label_formats` lists them: COCO json, YOLO, the boxes CSV, Pascal VOC, the TensorFlow CSV, LabelMe, CVAT,
Label Studio) reads them into :class:`Annotated`.

Each reader gives every image it names with its boxes ``[x1, y1, x2, y2, class index]`` in the image's pixels (as
shown: after its EXIF orientation), and the class names; what a file names goes through :func:`.confine.confine`
first (nothing outside ``data.root`` is opened). A box is checked against its image's size (read from the file's
header): a coordinate that is not a finite number, a box outside the image, of zero area, or ``x2 < x1`` is a bad
box; so is an unknown category, an annotation of an image the file lacks, and a YOLO line without five fields.
``data.on_bad_box: error`` refuses them in one line naming the file and the box (the first few, and the count);
``skip`` leaves them out and counts them. COCO's crowd annotations (``iscrowd: 1``) are left out, as torchvision's
references do. A reader that names its classes by name (every format but COCO and YOLO) gives :class:`Drawn` images
to :func:`numbered`: the classes are the names its boxes use, sorted (as the boxes CSV's are), and a size the file
states for an image (VOC's ``<size>``, the TensorFlow CSV's ``width,height``) is checked against the image.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

from litstarter.errors import BadInputError

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
        ids: The format's own class ids in index order, where it has ids that are not the indices (COCO's category
            ids: ``infer``'s COCO results give them back); ``None`` otherwise.
        counted: ``{phrase: count}`` of what a format's rule read another way or left out (VOC's difficult boxes,
            a polygon read as its bounding box), for the layout line.
    """

    names: list[str]
    images: list[tuple[Path, str | None, list[list[float]]]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    crowd: int = 0
    ids: list | None = None
    counted: dict[str, int] = field(default_factory=dict)
    #: What one problem is, in messages.
    things = "box(es)"

    def count(self, phrase: str, n: int = 1) -> None:
        """Count ``n`` more of ``phrase`` (``difficult box(es) left out``) for the layout line."""
        self.counted[phrase] = self.counted.get(phrase, 0) + n

    def counts(self) -> str:
        """The counted phrases, ``"; "``-joined (``""`` when none): ``2 difficult box(es) left out (...)``."""
        return "; ".join(f"{n} {phrase}" for phrase, n in self.counted.items())

    def settle(self, on_bad_box: str, source: str) -> str:
        """Refuse the bad boxes or shapes (``error``) or return the note that counts them (``skip``; ``""`` when none).

        Raises:
            BadInputError: bad ones under ``on_bad_box: error``, the first few named.
        """
        more = f"; and {len(self.problems) - NAMED} more" if len(self.problems) > NAMED else ""
        listed = "; ".join(self.problems[:NAMED]) + more
        if self.problems and on_bad_box != "skip":
            raise BadInputError(
                f"{source}: {len(self.problems)} bad {self.things} or annotation(s): {listed} (fix them, or"
                " data.on_bad_box: skip leaves them out, counted)"
            )
        notes = []
        if self.problems:
            notes.append(f"left out {len(self.problems)} bad {self.things} (data.on_bad_box: skip): {listed}")
        if self.crowd:
            notes.append(f"left out {self.crowd} crowd annotation(s) (iscrowd: 1)")
        return "; ".join(notes)


def shown_size(path: Path) -> tuple[int, int] | None:
    """A file's ``(width, height)`` as shown (after its EXIF orientation), from its header; ``None`` if unreadable
    (the cache build reports the file)."""
    try:
        size = _plain_jpeg_size(path)
        if size is not None:
            return size
        with Image.open(path) as image:
            width, height = image.size
            turned = image.getexif().get(0x0112, 1) in (5, 6, 7, 8)
    except Exception:  # noqa: BLE001 - a bad file is the cache build's to report
        return None
    return (height, width) if turned else (width, height)


def _plain_jpeg_size(path: Path) -> tuple[int, int] | None:
    """A JPEG's ``(width, height)`` from its frame header, when no APP1 segment (EXIF or XMP, which may turn it)
    comes first; ``None`` for anything else, which PIL reads. A fifth of the time of ``Image.open``: a box folder's
    reader reads every image's header."""
    with open(path, "rb") as file:
        head = file.read(_JPEG_HEAD)
    if head[:2] != b"\xff\xd8":
        return None
    at = 2
    while at + 9 <= len(head):
        if head[at] != 0xFF:
            return None  # not a marker where one must be: PIL decides
        marker = head[at + 1]
        if marker == 0xFF:  # a fill byte
            at += 1
            continue
        if marker == 0xE1:  # EXIF or XMP: either may state an orientation
            return None
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # a start of frame (not DHT, JPG, DAC)
            height, width = int.from_bytes(head[at + 5 : at + 7], "big"), int.from_bytes(head[at + 7 : at + 9], "big")
            return (width, height) if width and height else None
        at += 2 + int.from_bytes(head[at + 2 : at + 4], "big")
    return None


#: Bytes of a JPEG read for its frame header (past which PIL reads it).
_JPEG_HEAD = 1 << 16
_UNREAD = object()


def checked(
    path: Path,
    boxes: list[list[float]],
    names: list[str],
    result: Annotated,
    root: Path,
    size=_UNREAD,
    where: str = "",
    entries: list[str] | None = None,
) -> list[list[float]]:
    """The good boxes of ``path`` (in its pixels as shown, ``size`` when the caller read it); each bad one recorded
    in ``result.problems``, named ``<where> <entry>`` (by default the image's path and ``box <j>``)."""
    size = shown_size(path) if size is _UNREAD else size
    good = []
    for j, (x1, y1, x2, y2, label) in enumerate(boxes):
        why = None
        if not all(math.isfinite(v) for v in (x1, y1, x2, y2)):
            why = "a coordinate that is not a finite number"
        elif x2 <= x1 or y2 <= y1:
            why = "zero area or x2 < x1" if x2 <= x1 else "zero area or y2 < y1"
        elif size is not None and (min(x1, y1) < -EDGE_SLACK or x2 > size[0] + EDGE_SLACK or y2 > size[1] + EDGE_SLACK):
            why = f"outside the {size[0]}x{size[1]} image"
        if why:
            at = f"{where or shown(os.path.relpath(path, root))} {entries[j] if entries else f'box {j}'}"
            result.problems.append(f"{at} [{x1:g}, {y1:g}, {x2:g}, {y2:g}] ({names[int(label)]}): {why}")
        else:
            width, height = size or (float("inf"), float("inf"))
            corners = (max(x1, 0.0), max(y1, 0.0), min(x2, width), min(y2, height))
            good.append([*(round(float(v), DECIMALS) for v in corners), float(label)])
    return good


@dataclass
class Drawn:
    """One image as an annotation file draws it, its classes still names (:func:`numbered` numbers them).

    Args:
        image: The image file (inside ``data.root``).
        split: Its split, or ``None`` (the fractions split it).
        boxes: ``[(x1, y1, x2, y2, class name), ...]`` in the image's pixels as shown.
        stated: ``(width, height)`` the annotation states for the image, checked against the file; ``None``: none.
        where: The annotation entry, as a refusal names it (``annotations/a.xml``, ``tasks.json task 7``).
        entries: Each box's entry in it (``object 2``), as a refusal names it; ``[]``: ``box <j>``.
        stated_at: The entry that states the size, as a refusal names it (``""``: ``where``).
    """

    image: Path
    split: str | None
    boxes: list[tuple[float, float, float, float, str]] = field(default_factory=list)
    stated: tuple[float, float] | None = None
    where: str = ""
    entries: list[str] = field(default_factory=list)
    stated_at: str = ""

    def add(self, box: tuple[float, float, float, float], name: str, entry: str) -> None:
        """One more box, ``(x1, y1, x2, y2)`` of class ``name``, the annotation's ``entry``."""
        self.boxes.append((*box, name))
        self.entries.append(entry)


def numbered(drawn: list[Drawn], result: Annotated, root: Path) -> Annotated:
    """``drawn`` into ``result`` (whose ``names`` are set here): the classes are the names the boxes use, sorted;
    each image's boxes checked (:func:`checked`), an image whose file states another size than its own left out as a
    bad annotation (its boxes would land elsewhere)."""
    result.names = sorted({box[4] for image in drawn for box in image.boxes})
    index = {name: i for i, name in enumerate(result.names)}
    for image in drawn:
        size = shown_size(image.image)
        if image.stated is not None and size is not None and _differs(image.stated, size):
            stated = "x".join(f"{v:g}" for v in image.stated)
            name = shown(os.path.relpath(image.image, root))
            result.problems.append(
                f"{image.stated_at or image.where}: states the size {stated} but '{name}' is {size[0]}x{size[1]} (as"
                " shown, after its EXIF orientation): not its image, or a resized copy"
            )
            continue
        boxes = [[x1, y1, x2, y2, index[name]] for x1, y1, x2, y2, name in image.boxes]
        good = checked(image.image, boxes, result.names, result, root, size, image.where, image.entries or None)
        result.images.append((image.image, image.split, good))
    return result


def _differs(stated: tuple[float, float], size: tuple[int, int]) -> bool:
    """Whether a stated ``(width, height)`` is not the image's (a stated 0 states nothing)."""
    return all(stated) and any(abs(a - b) > EDGE_SLACK for a, b in zip(stated, size, strict=True))
