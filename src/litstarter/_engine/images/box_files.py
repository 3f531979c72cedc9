"""Box annotations as people have them, checked the same way whatever the file: :mod:`.coco_json`,
:mod:`.yolo_files` (``data.yaml``) and :mod:`.box_csv` (``path,x1,y1,x2,y2,label``) read them into :class:`Annotated`.

Each reader gives every image it names with its boxes ``[x1, y1, x2, y2, class index]`` in the image's pixels (as
shown: after its EXIF orientation), and the class names; what a file names goes through :func:`.confine.confine`
first (nothing outside ``data.root`` is opened). A box is checked against its image's size (read from the file's
header): a coordinate that is not a finite number, a box outside the image, of zero area, or ``x2 < x1`` is a bad
box; so is an unknown category, an annotation of an image the file lacks, and a YOLO line without five fields.
``data.on_bad_box: error`` refuses them in one line naming the file and the box (the first few, and the count);
``skip`` leaves them out and counts them. COCO's crowd annotations (``iscrowd: 1``) are left out, as torchvision's
references do.
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
        if not all(math.isfinite(v) for v in (x1, y1, x2, y2)):
            why = "a coordinate that is not a finite number"
        elif x2 <= x1 or y2 <= y1:
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
