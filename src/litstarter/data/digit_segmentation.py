"""Canvases of scikit-learn's bundled digits with a mask of each digit's pixels: the segmentation example, offline."""

from __future__ import annotations

import numpy as np
from jsonargparse import lazy_instance
from torchvision.transforms import v2

from litstarter._engine.images.stats import channel_stats
from litstarter.data.augmentation import FastAugmentation
from litstarter.data.base import ArrayDataModule
from litstarter.data.dataset import ArrayImageDataset
from litstarter.errors import UsageError

#: The canvas is a grid of CELLS x CELLS cells of CELL px; a digit (8 px, scaled by SCALE) lands in a cell, shifted.
CELLS, CELL, SCALE = 3, 16, 2
#: A digit's pixel belongs to the digit from this grey level on (0..16 in scikit-learn's data), else background.
INK = 5
#: Index 0 is the background, 1..10 the digits 0..9.
CLASS_NAMES = ["background", *(str(d) for d in range(10))]


def digit_masks(count: int, seed: int, most: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """``count`` canvases ``(N, 1, 48, 48)`` uint8 of 1 to ``most`` digits (each twice its 8 px, in distinct cells,
    over faint noise) and their masks ``(N, 48, 48)`` uint8: 0 background, ``1 + digit`` on the digit's ink. The
    same for the same ``seed``."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    glyphs = np.kron(digits.images, np.ones((SCALE, SCALE)))  # (1797, 16, 16), 0..16
    rng = np.random.default_rng(seed)
    side = CELLS * CELL
    images = rng.integers(0, 24, size=(count, 1, side, side)).astype(np.uint8)  # faint noise
    masks = np.zeros((count, side, side), dtype=np.uint8)
    glyph = 8 * SCALE
    for i in range(count):
        for cell in rng.choice(CELLS * CELLS, size=rng.integers(1, most + 1), replace=False):
            pick = rng.integers(len(glyphs))
            shift = CELL - glyph
            top = (cell // CELLS) * CELL + (rng.integers(0, shift + 1) if shift > 0 else 0)
            left = (cell % CELLS) * CELL + (rng.integers(0, shift + 1) if shift > 0 else 0)
            ink = glyphs[pick]
            window = np.s_[top : top + glyph, left : left + glyph]
            images[i, 0][window] = np.maximum(images[i, 0][window], np.round(ink * (255 / 16)).astype(np.uint8))
            masks[i][window] = np.where(ink >= INK, 1 + digits.target[pick], masks[i][window])
    return images, masks


class DigitSegmentationDataModule(ArrayDataModule):
    """Which pixels are which digit? 48x48 grey canvases of 1 to 4 scikit-learn digits (twice their size), a mask
    per canvas (``target_kind: mask``; class 0 the background, 1-10 the digits 0-9): generated in memory from
    ``seed``, split 70/15/15.

    Args:
        size: Canvases generated in all.
        max_digits: The most digits a canvas holds (1 to it, equally likely).
        batch_size: Samples per batch per device.
        num_workers: Loader worker processes; ``null`` picks about half the cores (0 on one core).
        seed: Seed for the canvases, the shuffling and the augmentation.
        augmentation: Random training augmentation, applied to each canvas and its mask alike (the mask by nearest
            neighbour); ``null`` turns it off. No flips: a mirrored digit is another glyph.
    """

    target_kind = "mask"

    def __init__(
        self,
        size: int = 3000,
        max_digits: int = 4,
        batch_size: int = 32,
        num_workers: int | None = None,
        seed: int = 42,
        augmentation: v2.Transform | None = lazy_instance(
            FastAugmentation, crop_scale=(0.6, 1.0), crop_ratio=(0.9, 1.1), hflip=0.0, color_jitter=0.1
        ),
    ) -> None:
        super().__init__(batch_size=batch_size, num_workers=num_workers, seed=seed)
        if size < 20:
            raise UsageError(f"data.size must be >= 20 (canvases for three splits), got {size}")
        if not 1 <= max_digits <= CELLS * CELLS:
            raise UsageError(f"data.max_digits must be in 1..{CELLS * CELLS}, got {max_digits}")
        self.size, self.max_digits = size, max_digits
        self.augmentation = augmentation
        self.class_names = list(CLASS_NAMES)
        self.channels = 1
        self.image_size = (CELLS * CELL, CELLS * CELL)
        self.ignore_index = 255
        self.target_source = "data (DigitSegmentationDataModule)"

    def setup(self, stage: str | None = None) -> None:
        """Generate the canvases (about a second) and split them 70/15/15."""
        if self.train_set is not None:
            return
        images, masks = digit_masks(self.size, self.seed, self.max_digits)
        train, val = int(0.7 * self.size), int(0.85 * self.size)
        self.train_set = ArrayImageDataset(images[:train], masks[:train], self.image_size, self.augmentation)
        self.val_set = ArrayImageDataset(images[train:val], masks[train:val], self.image_size)
        self.test_set = ArrayImageDataset(images[val:], masks[val:], self.image_size)

    def normalization(self) -> tuple[list[float], list[float]]:
        """The train split's own statistics."""
        self.setup()
        return channel_stats(self.train_set.images)
