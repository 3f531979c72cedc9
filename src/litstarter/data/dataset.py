"""One dataset class for every source: a uint8 ``(N, C, H, W)`` array (in RAM or memory-mapped) + labels."""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset

from litstarter.data.transforms import Augmentation, augment, center_crop_or_resize


class ArrayImageDataset(Dataset):
    """Serves ``(image uint8 (C, h, w), label int64)`` pairs from preprocessed arrays.

    Indices may be plain ints (no augmentation: the deterministic eval view) or ``(index, seed)`` pairs
    from :class:`~litstarter.data.samplers.EpochShuffleSampler` and friends, in which case the random
    augmentation for that draw is generated from ``seed``.

    Args:
        images: ``(N, C, H, W)`` uint8 array, possibly a ``np.memmap``; read lazily per item.
        labels: ``(N,)`` integer class indices.
        size: Output ``(h, w)``; images larger than this are cropped, smaller ones resized.
        augmentation: Random augmentation for seeded draws; ``None`` means none at all.
    """

    def __init__(
        self,
        images: np.ndarray,
        labels: np.ndarray,
        size: tuple[int, int],
        augmentation: Augmentation | None = None,
    ) -> None:
        if images.ndim != 4 or images.dtype != np.uint8:
            raise ValueError(f"images must be a uint8 (N, C, H, W) array, got {images.dtype} {images.shape}")
        if len(images) != len(labels):
            raise ValueError(f"{len(images)} images but {len(labels)} labels")
        self.images = images
        self.labels = np.asarray(labels, dtype=np.int64)
        self.size = tuple(size)
        self.augmentation = augmentation

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, item: int | tuple[int, int]) -> tuple[torch.Tensor, int]:
        seed = None
        if isinstance(item, (tuple, list)):
            item, seed = item
        image = torch.from_numpy(np.array(self.images[item]))  # copy out of the memmap: (C, H, W) uint8
        if seed is not None and self.augmentation is not None:
            generator = torch.Generator().manual_seed(int(seed))
            image = augment(image, self.size, self.augmentation, generator)
        else:
            image = center_crop_or_resize(image, self.size)
        return image, int(self.labels[item])

    def class_counts(self, num_classes: int) -> np.ndarray:
        """Number of samples per class, ``(num_classes,)``."""
        return np.bincount(self.labels, minlength=num_classes)


def channel_stats(images: np.ndarray, chunk: int = 4096) -> tuple[list[float], list[float]]:
    """Per-channel mean and std of a uint8 ``(N, C, H, W)`` array, on the 0..1 scale, in chunks."""
    n, c = images.shape[:2]
    total = np.zeros(c, dtype=np.float64)
    total_sq = np.zeros(c, dtype=np.float64)
    count = 0
    for start in range(0, n, chunk):
        block = np.asarray(images[start : start + chunk], dtype=np.float64) / 255.0
        total += block.sum(axis=(0, 2, 3))
        total_sq += (block**2).sum(axis=(0, 2, 3))
        count += block.shape[0] * block.shape[2] * block.shape[3]
    mean = total / count
    std = np.sqrt(np.maximum(total_sq / count - mean**2, 1e-12))
    return mean.tolist(), std.tolist()
