"""Canvases of 0 to 5 of scikit-learn's bundled digits, the count as the target: the regression example, offline."""

from __future__ import annotations

import numpy as np
from jsonargparse import lazy_instance
from torchvision.transforms import v2

from litstarter._engine.images.stats import channel_stats
from litstarter.data.augmentation import FastAugmentation
from litstarter.data.base import ArrayDataModule
from litstarter.data.dataset import ArrayImageDataset
from litstarter.errors import UsageError

#: The canvas is a grid of CELLS x CELLS cells of CELL px; a digit (8 px) lands in a cell, shifted by up to 2 px.
CELLS, CELL = 4, 10


def digit_canvases(count: int, seed: int, most: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """``count`` canvases ``(N, 1, 40, 40)`` uint8, each holding 0 to ``most`` digits in distinct cells, and their
    counts ``(N, 1)`` float32. The same for the same ``seed``."""
    from sklearn.datasets import load_digits

    glyphs = np.round(load_digits().images * (255.0 / 16.0)).astype(np.uint8)  # (1797, 8, 8)
    rng = np.random.default_rng(seed)
    side = CELLS * CELL
    images = np.zeros((count, 1, side, side), dtype=np.uint8)
    counts = rng.integers(0, most + 1, size=count)
    for i, n in enumerate(counts):
        for cell in rng.choice(CELLS * CELLS, size=n, replace=False):
            top, left = (cell // CELLS) * CELL + rng.integers(0, 3), (cell % CELLS) * CELL + rng.integers(0, 3)
            images[i, 0, top : top + 8, left : left + 8] = glyphs[rng.integers(len(glyphs))]
    return images, counts.astype(np.float32)[:, None]


class DigitCountsDataModule(ArrayDataModule):
    """How many digits does the canvas hold? 40x40 grey canvases of 0 to 5 sklearn digits, the count the target
    (``target_kind: value``): generated in memory from ``seed``, split 70/15/15.

    Args:
        size: Canvases generated in all.
        max_digits: The most digits a canvas holds (each count from 0 to it equally likely).
        batch_size: Samples per batch per device.
        num_workers: Loader worker processes; ``null`` picks about half the cores (0 on one core).
        seed: Seed for the canvases, the shuffling and the augmentation.
        augmentation: Random training augmentation; ``null`` turns it off. No crops by default: a crop could cut a
            digit off and change the count.
    """

    target_kind = "value"

    def __init__(
        self,
        size: int = 3000,
        max_digits: int = 5,
        batch_size: int = 64,
        num_workers: int | None = None,
        seed: int = 42,
        augmentation: v2.Transform | None = lazy_instance(
            FastAugmentation, crop_scale=None, hflip=0.5, color_jitter=0.1
        ),
    ) -> None:
        super().__init__(batch_size=batch_size, num_workers=num_workers, seed=seed)
        if size < 20:
            raise UsageError(f"data.size must be >= 20 (canvases for three splits), got {size}")
        if not 1 <= max_digits <= CELLS * CELLS:
            raise UsageError(f"data.max_digits must be in 1..{CELLS * CELLS}, got {max_digits}")
        self.size, self.max_digits = size, max_digits
        self.augmentation = augmentation
        self.class_names = ["count"]  # the target's name
        self.channels = 1
        self.image_size = (CELLS * CELL, CELLS * CELL)
        self.target_source = "data (DigitCountsDataModule)"

    def setup(self, stage: str | None = None) -> None:
        """Generate the canvases (about a second) and split them 70/15/15."""
        if self.train_set is not None:
            return
        images, counts = digit_canvases(self.size, self.seed, self.max_digits)
        train, val = int(0.7 * self.size), int(0.85 * self.size)
        self.train_set = ArrayImageDataset(images[:train], counts[:train], self.image_size, self.augmentation)
        self.val_set = ArrayImageDataset(images[train:val], counts[train:val], self.image_size)
        self.test_set = ArrayImageDataset(images[val:], counts[val:], self.image_size)

    def normalization(self) -> tuple[list[float], list[float]]:
        """The train split's own statistics."""
        if self.train_set is None:
            self.setup()
        return channel_stats(self.train_set.images)
