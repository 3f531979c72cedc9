"""Canvases of scikit-learn's digits at random sizes and places, their boxes from the placement: detection, offline.

:func:`digit_boxes` draws them; :func:`write_coco`, :func:`write_yolo` and :func:`write_box_csv` write the same
canvases as the three box layouts an image folder reads (the tests and ``docs/detection.md`` use them).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from jsonargparse import lazy_instance
from PIL import Image
from torchvision.transforms import v2

from litstarter._engine.images.stats import channel_stats
from litstarter._engine.targets.rows import RaggedRows
from litstarter.data.base import ArrayDataModule
from litstarter.data.dataset import ArrayImageDataset
from litstarter.errors import UsageError

#: The canvas's side, in pixels; a digit is drawn 1.5 to 3 times its 8 px.
SIDE, SMALLEST, LARGEST = 64, 12, 24
#: Class names: the digits (no background class: a detector's boxes are its objects).
CLASS_NAMES = [str(d) for d in range(10)]


def digit_boxes(count: int, seed: int, most: int = 4) -> tuple[np.ndarray, list[np.ndarray]]:
    """``count`` canvases ``(N, 1, 64, 64)`` uint8 of 1 to ``most`` digits, each scaled to 12-24 px at a random
    place (some overlap: the later digit drawn over), over faint noise; and each canvas's boxes ``(m, 5)``
    ``x1, y1, x2, y2, digit`` (the scaled glyph's square). The same for the same ``seed``."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 24, size=(count, 1, SIDE, SIDE)).astype(np.uint8)
    boxes = []
    for i in range(count):
        rows = []
        for _ in range(rng.integers(1, most + 1)):
            pick, side = rng.integers(len(digits.images)), int(rng.integers(SMALLEST, LARGEST + 1))
            glyph = Image.fromarray(np.round(digits.images[pick] * (255 / 16)).astype(np.uint8))
            glyph = np.asarray(glyph.resize((side, side), Image.Resampling.BILINEAR))
            top, left = (int(v) for v in rng.integers(0, SIDE - side + 1, size=2))
            window = images[i, 0, top : top + side, left : left + side]
            np.maximum(window, glyph, out=window)
            rows.append([left, top, left + side, top + side, digits.target[pick]])
        boxes.append(np.asarray(rows, dtype=np.float32))
    return images, boxes


def _ragged(boxes: list[np.ndarray]) -> RaggedRows:
    stored = [np.column_stack([np.full(len(b), i, np.float32), b]) for i, b in enumerate(boxes)]
    return RaggedRows(np.concatenate(stored) if stored else np.zeros((0, 6), np.float32), len(boxes))


class DigitBoxesDataModule(ArrayDataModule):
    """Where are the digits? 64x64 grey canvases of 1 to 4 scikit-learn digits at 12-24 px, a box per digit
    (``target_kind: boxes``; classes the digits 0-9): generated in memory from ``seed``, split 70/15/15.

    Args:
        size: Canvases generated in all.
        max_digits: The most digits a canvas holds (1 to it, equally likely).
        batch_size: Samples per batch per device.
        num_workers: Loader worker processes; ``null`` picks about half the cores (0 on one core).
        seed: Seed for the canvases, the shuffling and the augmentation.
        augmentation: Random training augmentation, moving each canvas's boxes with it; ``null`` turns it off.
            No flips: a mirrored digit is another glyph.
    """

    target_kind = "boxes"

    def __init__(
        self,
        size: int = 3000,
        max_digits: int = 4,
        batch_size: int = 16,
        num_workers: int | None = None,
        seed: int = 42,
        augmentation: v2.Transform | None = lazy_instance(v2.RandomZoomOut, fill=0, side_range=(1.0, 1.5), p=0.5),
    ) -> None:
        super().__init__(batch_size=batch_size, num_workers=num_workers, seed=seed)
        if size < 20:
            raise UsageError(f"data.size must be >= 20 (canvases for three splits), got {size}")
        if not 1 <= max_digits <= 8:
            raise UsageError(f"data.max_digits must be in 1..8, got {max_digits}")
        self.size, self.max_digits = size, max_digits
        self.augmentation = augmentation
        self.class_names = list(CLASS_NAMES)
        self.channels = 1
        self.image_size = (SIDE, SIDE)
        self.target_source = "data (DigitBoxesDataModule)"

    def setup(self, stage: str | None = None) -> None:
        """Generate the canvases (about a second) and split them 70/15/15."""
        if self.train_set is not None:
            return
        images, boxes = digit_boxes(self.size, self.seed, self.max_digits)
        train, val = int(0.7 * self.size), int(0.85 * self.size)
        size = self.image_size
        self.train_set = ArrayImageDataset(images[:train], _ragged(boxes[:train]), size, self.augmentation)
        self.val_set = ArrayImageDataset(images[train:val], _ragged(boxes[train:val]), size)
        self.test_set = ArrayImageDataset(images[val:], _ragged(boxes[val:]), size)

    def normalization(self) -> tuple[list[float], list[float]]:
        """The train split's own statistics."""
        self.setup()
        return channel_stats(self.train_set.images)


def write_canvases(root: Path, count: int, seed: int = 0) -> list[tuple[str, str, np.ndarray]]:
    """The canvases as PNG files under ``root/images/<split>/`` (70/15/15): ``[(path under root, split, boxes)]``."""
    images, boxes = digit_boxes(count, seed)
    written = []
    for i, (image, rows) in enumerate(zip(images[:, 0], boxes, strict=True)):
        split = "train" if i < 0.7 * count else "val" if i < 0.85 * count else "test"
        path = Path("images") / split / f"{i:04d}.png"
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(image).save(root / path)
        written.append((path.as_posix(), split, rows))
    return written


def write_coco(root: Path, written: list[tuple[str, str, np.ndarray]]) -> None:
    """``root/annotations/instances_<split>.json`` of :func:`write_canvases`' files (``bbox`` as ``[x, y, w, h]``)."""
    categories = [{"id": i + 1, "name": name} for i, name in enumerate(CLASS_NAMES)]
    (root / "annotations").mkdir(parents=True, exist_ok=True)
    for split in ("train", "val", "test"):
        images, annotations = [], []
        for image_id, (path, where, rows) in enumerate(written):
            if where != split:
                continue
            images.append({"id": image_id, "file_name": path, "width": SIDE, "height": SIDE})
            for x1, y1, x2, y2, label in rows.tolist():
                bbox = [x1, y1, x2 - x1, y2 - y1]
                ann = {"id": len(annotations) + 1, "image_id": image_id, "category_id": int(label) + 1, "bbox": bbox}
                annotations.append({**ann, "area": bbox[2] * bbox[3], "iscrowd": 0})
        data = {"images": images, "annotations": annotations, "categories": categories}
        (root / "annotations" / f"instances_{split}.json").write_text(json.dumps(data))


def write_yolo(root: Path, written: list[tuple[str, str, np.ndarray]]) -> None:
    """``root/data.yaml`` and ``root/labels/<split>/<name>.txt`` (``cls cx cy w h``, normalised)."""
    for path, _, rows in written:
        label = root / path.replace("images/", "labels/", 1).replace(".png", ".txt")
        label.parent.mkdir(parents=True, exist_ok=True)
        lines = []
        for x1, y1, x2, y2, c in (rows / [SIDE, SIDE, SIDE, SIDE, 1]).tolist():
            lines.append(f"{int(c)} {(x1 + x2) / 2:.6f} {(y1 + y2) / 2:.6f} {x2 - x1:.6f} {y2 - y1:.6f}")
        label.write_text("\n".join(lines) + "\n")
    names = "\n".join(f"  {i}: '{name}'" for i, name in enumerate(CLASS_NAMES))
    (root / "data.yaml").write_text(f"train: images/train\nval: images/val\ntest: images/test\nnames:\n{names}\n")


def write_box_csv(root: Path, written: list[tuple[str, str, np.ndarray]], name: str = "boxes.csv") -> None:
    """``root/<name>``: ``path,x1,y1,x2,y2,label,split``, a row per box."""
    lines = ["path,x1,y1,x2,y2,label,split"]
    for path, split, rows in written:
        lines += [f"{path},{x1:g},{y1:g},{x2:g},{y2:g},{int(c)},{split}" for x1, y1, x2, y2, c in rows.tolist()]
    (root / name).write_text("\n".join(lines) + "\n")
