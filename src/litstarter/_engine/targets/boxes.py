"""Boxes per image (``boxes``): COCO json, YOLO txt or a boxes CSV (:mod:`..images.box_listing`), a variable number
per image, decoded with each image through its geometry into rows ``[x1, y1, x2, y2, class]`` of the cached pixels.

A box keeps the part of it the cover resize and centre crop leave; a box the crop cuts away entirely is dropped
(``inspect`` counts them: listed less stored). Splits are stratified on the classes each image's boxes hold.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from litstarter.errors import UsageError

from ..images.label_sets import carve_sets
from ..images.splits import SourceFile
from .base import TargetKind
from .rows import RaggedRows

#: COCO's area thresholds (pixels of the cached image) between small, medium and large boxes.
SMALL, LARGE = 32**2, 96**2


class BoxTargets(TargetKind):
    """Each image's boxes, stored as rows ``(M, 1 + 5)``: the image's index, ``x1, y1, x2, y2`` in the cached
    image's pixels, the class index.

    Args:
        num_classes: The number of classes (a box's class is below it).
        on_bad_box: ``error`` or ``skip`` (:mod:`..images.box_files`).
    """

    name = "boxes"
    how = "stratified by the classes each image's boxes hold (iterative stratification)"
    storage = "rows"
    row_width = 5
    #: One class is a detector's: the background is implicit (what no box covers), not a class of the data.
    fewest = 1
    #: The whole image: a centre crop would cut the objects at its edges away from evaluation and ``infer``.
    eval_crop = 1.0
    holder = "box"
    empty_hint = (
        "; check the annotations (a COCO category, a YOLO name or a CSV label that no train box has, or boxes"
        " data.on_bad_box: skip left out)"
    )

    def __init__(self, num_classes: int = 1, on_bad_box: str = "error") -> None:
        self.num_classes, self.on_bad_box = num_classes, on_bad_box

    def configured(self, root, names: list[str], settings: dict) -> BoxTargets:
        """For data of ``names``; ``settings``' ``on_bad_box``."""
        return BoxTargets(len(names), str(settings.get("on_bad_box", "error")))

    def carve(
        self,
        files: list[SourceFile],
        names: list[str],
        val_fraction: float,
        test_fraction: float,
        seed: int,
        where: str,
    ) -> dict[str, list[SourceFile]]:
        """Iterative stratification of which classes each image's boxes hold (images without one by size alone)."""
        files = self.order(files)
        held = np.zeros((len(files), len(names)), dtype=np.float32)
        for row, f in zip(held, files, strict=True):
            row[[int(box[4]) for box in f.target]] = 1
        parts = carve_sets(files, held, val_fraction, test_fraction, seed, where)
        return {split: self.order(part) for split, part in parts.items()}

    def decode(self, target, image_size: tuple[int, int], orientation: int, size: tuple[int, int]):
        """The boxes in the cached pixels: ``((m, 5) float32, None)``; the cover resize's scale, then the centre
        crop's offset, each box clipped to the crop and dropped when nothing of it is left."""
        width, height = (image_size[1], image_size[0]) if orientation in (5, 6, 7, 8) else image_size
        th, tw = size
        scale = max(th / height, tw / width)
        new_w, new_h = max(tw, round(width * scale)), max(th, round(height * scale))
        left, top = (new_w - tw) // 2, (new_h - th) // 2
        boxes = np.asarray(target, dtype=np.float64).reshape(-1, 5)
        out = boxes.copy()
        out[:, [0, 2]] = np.clip(boxes[:, [0, 2]] * new_w / width - left, 0, tw)
        out[:, [1, 3]] = np.clip(boxes[:, [1, 3]] * new_h / height - top, 0, th)
        kept = (out[:, 2] > out[:, 0]) & (out[:, 3] > out[:, 1])
        return out[kept].astype(np.float32), None

    def strata(self, stored: RaggedRows) -> np.ndarray:
        """Which classes each image's boxes hold, ``(N, K)`` (``K``: the classes, or more if the rows name more)."""
        labels = stored.concatenated()[:, 4]
        out = np.zeros((len(stored), max(self.num_classes, int(labels.max(initial=-1)) + 1)), dtype=np.int64)
        for row, boxes in zip(out, stored[range(len(stored))], strict=True):
            row[boxes[:, 4].astype(np.int64)] = 1
        return out

    def text(self, row, names: Sequence[str]) -> str:
        """Boxes are many rows per image: no labels CSV cell holds them.

        Raises:
            UsageError: always (cv's split files; not yet for boxes).
        """
        raise UsageError("this command writes each image's target into a labels CSV cell; boxes are many: not yet")

    def valid(self, target, k: int) -> bool:
        """A list of ``[x1, y1, x2, y2, class]`` with the class below ``k``."""
        return isinstance(target, list) and all(
            isinstance(box, list) and len(box) == 5 and 0 <= int(box[4]) < k for box in target
        )

    def empty(self, stored: RaggedRows, names: Sequence[str]) -> list[str]:
        """The classes no box of ``stored`` (the train split's boxes, as cached) has."""
        return [n for n, count in zip(names, self.class_counts(stored, len(names)), strict=True) if count == 0]

    def class_counts(self, stored: RaggedRows, k: int) -> np.ndarray:
        """Boxes of each class."""
        labels = stored.concatenated()[:, 4].astype(np.int64)
        return np.bincount(labels, minlength=k)[:k]

    def summary(self, by_split: dict[str, RaggedRows], names: Sequence[str]) -> dict:
        """``{"boxes": {split: {"per_image": {min, mean, max}, "without": images with none, "per_class": {class:
        boxes}, "sizes": {"small", "medium", "large"}}}}`` (sizes by COCO's areas, in the cached pixels)."""
        out = {}
        for split, stored in by_split.items():
            counts = [stored.row_count(i) for i in range(len(stored))]
            rows = stored.concatenated()
            areas = (rows[:, 2] - rows[:, 0]) * (rows[:, 3] - rows[:, 1])
            sizes = Counter("small" if a < SMALL else "medium" if a < LARGE else "large" for a in areas.tolist())
            per_class = self.class_counts(stored, len(names)).tolist()
            spread = {"min": min(counts, default=0), "mean": round(float(np.mean(counts or [0])), 3)}
            out[split] = {
                "per_image": {**spread, "max": max(counts, default=0)},
                "without": sum(c == 0 for c in counts),
                "per_class": dict(zip(names, per_class, strict=True)),
                "sizes": {s: sizes.get(s, 0) for s in ("small", "medium", "large")},
            }
        return {"boxes": out}

    def summary_lines(self, summary: dict) -> list[str]:
        """Two lines per split: boxes per image, images without one, sizes; boxes per class."""
        lines = []
        for split, s in summary["boxes"].items():
            per, sizes = s["per_image"], s["sizes"]
            lines.append(
                f"boxes ({split}): {per['min']}-{per['max']} per image (mean {per['mean']}), {s['without']} image(s)"
                f" without; small {sizes['small']}, medium {sizes['medium']}, large {sizes['large']}"
            )
            lines.append(f"boxes per class ({split}): " + ", ".join(f"{k} {n}" for k, n in s["per_class"].items()))
        return lines


KIND = BoxTargets()
