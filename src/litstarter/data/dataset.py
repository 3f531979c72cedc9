"""One dataset class for every source: a uint8 ``(N, C, H, W)`` array (in RAM or memory-mapped) + labels."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch.utils.data import Dataset
from torchvision.transforms import v2

from litstarter._engine.images.crop import center_crop_or_resize
from litstarter.data.augmentation import augment

Item = int | tuple[int, int]


class ArrayImageDataset(Dataset):
    """Serves ``(image uint8 (C, h, w), label int64)`` pairs from preprocessed arrays: with an ``augmentation`` (the
    train split) every item augmented, without one the eval view (centre crop). An ``(index, seed)`` item is drawn
    from its seed alone (the train loader sends those); a plain index from torch's generator (the loader worker's,
    which Lightning seeds: alike in two runs, not replayed on resume).

    Args:
        images: ``(N, C, H, W)`` uint8 array, possibly a ``np.memmap``; read lazily per item.
        labels: ``(N,)`` integer class indices, or ``(N, K)`` multi-hot targets (multi-label; served as float tensors).
        size: Output ``(h, w)``; images larger than this are cropped, smaller ones resized.
        augmentation: Random augmentation (any v2 transform); ``None`` for the eval view.
    """

    def __init__(
        self, images: np.ndarray, labels: np.ndarray, size: tuple[int, int], augmentation: v2.Transform | None = None
    ) -> None:
        if images.ndim != 4 or images.dtype != np.uint8:
            raise ValueError(f"images must be a uint8 (N, C, H, W) array, got {images.dtype} {images.shape}")
        if len(images) != len(labels):
            raise ValueError(f"{len(images)} images but {len(labels)} labels")
        self.images = images
        self.labels = np.asarray(labels, dtype=np.int64 if np.ndim(labels) == 1 else np.float32)
        self.size = tuple(size)
        self.augmentation = augmentation

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, item: Item) -> tuple[torch.Tensor, int]:
        return self.__getitems__([item])[0]

    def __getitems__(self, items: Sequence[Item]) -> list[tuple[torch.Tensor, int]]:
        """A whole batch at once (the DataLoader calls this when it exists): one gather from the array, then the
        augmentation or the eval view."""
        pairs = [item if isinstance(item, (tuple, list)) else (item, None) for item in items]
        indices = np.array([index for index, _ in pairs], dtype=np.int64)
        images = torch.from_numpy(self.images[indices])  # fancy indexing copies out of the memmap: (B, C, H, W)
        if self.augmentation is None:
            images = center_crop_or_resize(images, self.size)
        else:
            seeds = [int(torch.randint(0, 2**62, ())) if seed is None else seed for _, seed in pairs]
            images = augment(images, self.size, self.augmentation, seeds)
        labels = self.labels[indices]
        labels = labels.tolist() if labels.ndim == 1 else torch.from_numpy(labels).unbind(0)
        return list(zip(images.unbind(0), labels, strict=True))

    def eval_view(self, indices: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """``(images (N, C, h, w) uint8, labels (N,))`` of ``indices``, un-augmented whatever the split."""
        indices = np.asarray(indices, dtype=np.int64)
        images = center_crop_or_resize(torch.from_numpy(self.images[indices]), self.size)
        return images.numpy(), self.labels[indices]

    def class_counts(self, num_classes: int) -> np.ndarray:
        """Number of samples per class, ``(num_classes,)`` (multi-label: images with each label)."""
        if self.labels.ndim == 2:
            return self.labels.sum(axis=0).astype(np.int64)
        return np.bincount(self.labels, minlength=num_classes)
