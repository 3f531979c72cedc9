"""Canvases of 1 to 3 of scikit-learn's bundled digits, the set of digits drawn as the target: the multi-label
example, offline."""

from __future__ import annotations

import numpy as np
from jsonargparse import lazy_instance
from PIL import Image
from torchvision.transforms import v2

from litstarter._engine.images.stats import channel_stats
from litstarter.data.augmentation import FastAugmentation
from litstarter.data.base import ArrayDataModule
from litstarter.data.dataset import ArrayImageDataset
from litstarter.errors import UsageError

#: The canvas's side, in pixels; a digit is drawn 12 to 18 px wide (1.5 to 2.25 times its 8 px).
SIDE, SMALLEST, LARGEST = 48, 12, 18
#: Pixels kept clear between two digits' squares.
GAP = 1
#: Labels: the digits 0-9.
CLASS_NAMES = [str(d) for d in range(10)]


def _place(sides: list[int], rng: np.random.Generator) -> list[tuple[int, int]]:
    """``(top, left)`` of squares of ``sides`` on the canvas, no two within :data:`GAP` px of each other: drawn at
    random, drawn again whole when a square finds no room (3 squares of 18 px fit 48 px at most places)."""
    while True:
        placed: list[tuple[int, int, int]] = []
        for side in sides:
            for _ in range(50):
                top, left = (int(v) for v in rng.integers(0, SIDE - side + 1, size=2))
                if all(
                    top + side + GAP <= t or t + s + GAP <= top or left + side + GAP <= lf or lf + s + GAP <= left
                    for t, lf, s in placed
                ):
                    placed.append((top, left, side))
                    break
            else:
                break
        if len(placed) == len(sides):
            return [(t, lf) for t, lf, _ in placed]


def digit_sets(count: int, seed: int, most: int = 3) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """``count`` canvases ``(N, 1, 48, 48)`` uint8 over faint noise, each holding 1 to ``most`` different digits
    (the number equally likely, the digits uniform), each scaled to 12-18 px at a random place apart from the others;
    their label sets ``(N, 10)`` float32 (1 where the digit is drawn); and each canvas's squares ``(m, 5)``
    ``x1, y1, x2, y2, digit`` (for checking the drawing). The same for the same ``seed``."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    by_digit = [np.flatnonzero(digits.target == d) for d in range(10)]
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 24, size=(count, 1, SIDE, SIDE)).astype(np.uint8)  # faint noise
    labels = np.zeros((count, len(CLASS_NAMES)), dtype=np.float32)
    squares = []
    for i in range(count):
        drawn = rng.choice(10, size=int(rng.integers(1, most + 1)), replace=False)
        sides = [int(s) for s in rng.integers(SMALLEST, LARGEST + 1, size=len(drawn))]
        rows = []
        for digit, side, (top, left) in zip(drawn, sides, _place(sides, rng), strict=True):
            pick = rng.choice(by_digit[digit])
            glyph = Image.fromarray(np.round(digits.images[pick] * (255 / 16)).astype(np.uint8))
            glyph = np.asarray(glyph.resize((side, side), Image.Resampling.BILINEAR))
            window = images[i, 0, top : top + side, left : left + side]
            np.maximum(window, glyph, out=window)
            labels[i, digit] = 1
            rows.append([left, top, left + side, top + side, digit])
        squares.append(np.asarray(rows, dtype=np.float32))
    return images, labels, squares


class DigitSetsDataModule(ArrayDataModule):
    """Which digits are on the canvas? 48x48 grey canvases of 1 to 3 different scikit-learn digits at 12-18 px, none
    overlapping, the set of digits drawn the target (``target_kind: label_set``; labels the digits 0-9): generated
    in memory from ``seed``, split 70/15/15.

    Args:
        size: Canvases generated in all.
        max_digits: The most digits a canvas holds (1 to it, equally likely; different digits on one canvas).
        batch_size: Samples per batch per device.
        num_workers: Loader worker processes; ``null`` picks about half the cores (0 on one core).
        seed: Seed for the canvases, the shuffling and the augmentation.
        augmentation: Random training augmentation; ``null`` turns it off. No crops by default: a crop could cut a
            digit off and its label would be wrong. No flips: a mirrored digit is another glyph.
    """

    target_kind = "label_set"

    def __init__(
        self,
        size: int = 3000,
        max_digits: int = 3,
        batch_size: int = 64,
        num_workers: int | None = None,
        seed: int = 42,
        augmentation: v2.Transform | None = lazy_instance(
            FastAugmentation, crop_scale=None, hflip=0.0, color_jitter=0.1
        ),
    ) -> None:
        super().__init__(batch_size=batch_size, num_workers=num_workers, seed=seed)
        if size < 20:
            raise UsageError(f"data.size must be >= 20 (canvases for three splits), got {size}")
        if not 1 <= max_digits <= 4:
            raise UsageError(f"data.max_digits must be in 1..4 (apart on a {SIDE} px canvas), got {max_digits}")
        self.size, self.max_digits = size, max_digits
        self.augmentation = augmentation
        self.class_names = list(CLASS_NAMES)
        self.channels = 1
        self.image_size = (SIDE, SIDE)
        self.target_source = "data (DigitSetsDataModule)"

    def setup(self, stage: str | None = None) -> None:
        """Generate the canvases (about a second) and split them 70/15/15."""
        if self.train_set is not None:
            return
        images, labels, _ = digit_sets(self.size, self.seed, self.max_digits)
        train, val = int(0.7 * self.size), int(0.85 * self.size)
        self.train_set = ArrayImageDataset(images[:train], labels[:train], self.image_size, self.augmentation)
        self.val_set = ArrayImageDataset(images[train:val], labels[train:val], self.image_size)
        self.test_set = ArrayImageDataset(images[val:], labels[val:], self.image_size)

    def normalization(self) -> tuple[list[float], list[float]]:
        """The train split's own statistics."""
        self.setup()
        return channel_stats(self.train_set.images)
