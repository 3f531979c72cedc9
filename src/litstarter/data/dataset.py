"""One dataset class for every source: a uint8 ``(N, C, H, W)`` array (in RAM or memory-mapped) + labels."""

from __future__ import annotations

import numpy as np
import torch
from torch.utils.data import Dataset
from torchvision.transforms import v2

from litstarter._engine.augment.seeds import split_items
from litstarter._engine.images.crop import center_crop_or_resize
from litstarter.data.augmentation import augment


class ArrayImageDataset(Dataset):
    """Serves ``(image uint8 (C, h, w), label int64)`` pairs from preprocessed arrays.

    Indices may be plain ints (no augmentation: the deterministic eval view) or ``(index, seed)`` pairs
    from :class:`~litstarter.data.samplers.EpochShuffleSampler` and friends, in which case the random
    augmentation for that draw is generated from ``seed`` (see :mod:`litstarter.data.augmentation`).

    Args:
        images: ``(N, C, H, W)`` uint8 array, possibly a ``np.memmap``; read lazily per item.
        labels: ``(N,)`` integer class indices.
        size: Output ``(h, w)``; images larger than this are cropped, smaller ones resized.
        augmentation: Random augmentation for seeded draws (any v2 transform); ``None`` means none at all.
    """

    def __init__(
        self,
        images: np.ndarray,
        labels: np.ndarray,
        size: tuple[int, int],
        augmentation: v2.Transform | None = None,
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
        return self.__getitems__([item])[0]

    def __getitems__(self, items: list[int | tuple[int, int]]) -> list[tuple[torch.Tensor, int]]:
        """A whole batch at once (the DataLoader calls this when it exists): one gather from the array, then the
        augmentation. Plain ints get the eval view, ``(index, seed)`` pairs the augmentation drawn from ``seed``."""
        indices, seeds = split_items(items)
        images = torch.from_numpy(self.images[indices])  # fancy indexing copies out of the memmap: (B, C, H, W)
        seeded = [s is not None for s in seeds]
        if self.augmentation is None or not any(seeded):
            images = center_crop_or_resize(images, self.size)
        elif all(seeded):
            images = augment(images, self.size, self.augmentation, seeds)
        else:  # a mix of seeded and plain items: rare, do it per item
            return [self.__getitem__(item) for item in items]
        return list(zip(images.unbind(0), self.labels[indices].tolist(), strict=True))

    def class_counts(self, num_classes: int) -> np.ndarray:
        """Number of samples per class, ``(num_classes,)``."""
        return np.bincount(self.labels, minlength=num_classes)
