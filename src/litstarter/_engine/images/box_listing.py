"""The box layouts, found and listed: every format of :mod:`.label_formats` (COCO json, YOLO, a boxes CSV, Pascal
VOC, the TensorFlow CSV, LabelMe, CVAT for images, Label Studio), each read by its own module into
:class:`.box_files.Annotated`.

Each image's target is its boxes, ``[[x1, y1, x2, y2, class index], ...]`` in its pixels as shown
(:mod:`.box_files`); an image with none is allowed and counted. Nothing a file names is opened outside ``data.root``
(:mod:`.confine`), and an image named twice (two entries, or a link to a listed one) is refused: which boxes has it?
"""

from __future__ import annotations

from pathlib import Path

from litstarter.errors import BadInputError

from .box_files import Annotated
from .label_formats import find_boxes
from .listing import Walker, shown
from .splits import SourceFile, source_file

#: Images named in full in a refusal; the rest are counted.
NAMED = 5


def read_annotations(
    root: Path, labels: str | None, chosen: str | None = None
) -> tuple[Annotated, str, Path | None] | None:
    """The box annotations of ``root`` (parsed once: the layout keeps them), their form (the format's name:
    ``coco``, ``yolo``, ``boxes``, ``voc``, ...) and what the layout line names; ``None`` when ``root`` (or the
    ``labels`` file) holds no box format. ``chosen``: ``data.box_format``, the one format looked for.

    Raises:
        BadInputError: two formats in ``root`` and none chosen; the chosen one is not there; what a format reads
            is refused (:mod:`.label_formats`).
    """
    found = find_boxes(root, labels, chosen)
    if found is None:
        return None
    return found.format.read(root, found), found.format.name, found.path


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
    if split_given and "train" not in listed:
        raise BadInputError(
            f"{source} puts every image in {' and '.join(sorted(k for k in listed if k))}, none in train: a fit needs"
            " train images (give some the train split, or give none a split: data.val_fraction and"
            " data.test_fraction carve them)"
        )
    if twice:
        more = f" and {len(twice) - NAMED} more" if len(twice) > NAMED else ""
        raise BadInputError(
            f"{source} names {len(twice)} image(s) that another entry names too (the same path, a link or a hard"
            f" link to it): {', '.join(twice[:NAMED])}{more}; list each image once, with all its boxes"
        )
    return listed, note
