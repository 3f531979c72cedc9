"""One dataset class for every source: a uint8 ``(N, C, H, W)`` array (in RAM or memory-mapped) + targets."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch.utils.data import Dataset
from torchvision.transforms import v2

from litstarter._engine.images.crop import center_crop_or_resize, crop_boxes
from litstarter.data.augmentation import augment, augment_with_masks, boxes_view

Item = int | tuple[int, int]


class ArrayImageDataset(Dataset):
    """Serves ``(image uint8 (C, h, w), target)`` pairs from preprocessed arrays: with an ``augmentation`` (the
    train split) every item augmented, without one the eval view (centre crop). An ``(index, seed)`` item is drawn
    from its seed alone (the train loader sends those); a plain index from torch's generator (the loader worker's,
    which Lightning seeds: alike in two runs, not replayed on resume).

    Args:
        images: ``(N, C, H, W)`` uint8 array, possibly a ``np.memmap``; read lazily per item.
        targets: ``(N,)`` integer class indices (served as ints); ``(N, H, W)`` uint8 masks of the images' own
            ``H, W`` (cropped, resized and flipped with their image, by nearest neighbour; served as uint8 tensors);
            each image's box rows ``x1, y1, x2, y2, class`` (a ``RaggedRows``: moved with their image, served as
            ``{"boxes", "labels"}``, batched by :meth:`collate`); or ``(N, ...)`` targets of another shape (a
            multi-label task's multi-hot rows, a regression's values: served as float32 tensors, row by row). May be
            memory-mapped.
        size: Output ``(h, w)``; images larger than this are cropped, smaller ones resized.
        augmentation: Random augmentation (any v2 transform); ``None`` for the eval view.
    """

    def __init__(
        self, images: np.ndarray, targets: np.ndarray, size: tuple[int, int], augmentation: v2.Transform | None = None
    ) -> None:
        if images.ndim != 4 or images.dtype != np.uint8:
            raise ValueError(f"images must be a uint8 (N, C, H, W) array, got {images.dtype} {images.shape}")
        if len(images) != len(targets):
            raise ValueError(f"{len(images)} images but {len(targets)} targets")
        self.images = images
        #: Whether each target is a mask of its image's pixels (it then follows the image's geometry).
        self.masks = np.ndim(targets) == 3 and tuple(targets.shape[1:]) == tuple(images.shape[2:])
        #: Whether each target is a set of boxes of any number (it then follows the image's geometry too).
        self.boxes = hasattr(targets, "row_count")
        if not self.masks and not self.boxes:
            targets = np.asarray(targets)
            integral = targets.ndim == 1 and targets.dtype.kind in "iub"
            targets = targets.astype(np.int64 if integral else np.float32, copy=False)
        self.targets = targets
        self.size = tuple(size)
        self.augmentation = augmentation

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, item: Item) -> tuple[torch.Tensor, int | torch.Tensor]:
        return self.__getitems__([item])[0]

    def __getitems__(self, items: Sequence[Item]) -> list[tuple[torch.Tensor, int | torch.Tensor]]:
        """A whole batch at once (the DataLoader calls this when it exists): one gather from the array, then the
        augmentation or the eval view."""
        pairs = [item if isinstance(item, (tuple, list)) else (item, None) for item in items]
        indices = np.array([index for index, _ in pairs], dtype=np.int64)
        images = torch.from_numpy(self.images[indices])  # fancy indexing copies out of the memmap: (B, C, H, W)
        seeds = None
        if self.augmentation is not None:
            seeds = [int(torch.randint(0, 2**62, ())) if seed is None else seed for _, seed in pairs]
        if self.masks:
            return list(zip(*self._with_masks(images, indices, seeds), strict=True))
        if self.boxes:
            return self._with_boxes(images, indices, seeds)
        if seeds is None:
            images = center_crop_or_resize(images, self.size)
        else:
            images = augment(images, self.size, self.augmentation, seeds)
        targets = self.targets[indices]
        targets = targets.tolist() if targets.dtype == np.int64 else torch.from_numpy(targets).unbind(0)
        return list(zip(images.unbind(0), targets, strict=True))

    def _with_masks(
        self, images: torch.Tensor, indices: np.ndarray, seeds: list[int] | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The batch's images and masks, ``(B, C, h, w)`` and ``(B, h, w)`` uint8: one geometry for both."""
        masks = torch.from_numpy(np.asarray(self.targets[indices]))  # (B, H, W) uint8
        if seeds is None:
            return center_crop_or_resize(images, self.size), center_crop_or_resize(masks, self.size, nearest=True)
        return augment_with_masks(images, masks, self.size, self.augmentation, seeds)

    def _with_boxes(self, images: torch.Tensor, indices: np.ndarray, seeds: list[int] | None) -> list[tuple]:
        """The batch's images and each one's boxes as ``{"boxes": (m, 4) float32, "labels": (m,) int64}``."""
        rows = [torch.from_numpy(np.asarray(r)) for r in self.targets[indices]]
        images, targets = boxes_view(images, rows, self.size, self.augmentation, seeds)
        return list(zip(images.unbind(0), targets, strict=True))

    @staticmethod
    def collate(items: list[tuple]) -> tuple[torch.Tensor, list]:
        """A batch of ``(image, target)`` pairs as ``(images (B, C, h, w), [target, ...])``: what a detection
        model takes, as torchvision's do (the loader uses it for box targets)."""
        return torch.stack([image for image, _ in items]), [target for _, target in items]

    def eval_view(self, indices: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
        """``(images (N, C, h, w) uint8, targets (N, ...))`` of ``indices``, un-augmented whatever the split."""
        indices = np.asarray(indices, dtype=np.int64)
        images = center_crop_or_resize(torch.from_numpy(self.images[indices]), self.size)
        if self.masks:
            masks = center_crop_or_resize(torch.from_numpy(np.asarray(self.targets[indices])), self.size, nearest=True)
            return images.numpy(), masks.numpy()
        if self.boxes:
            stored = tuple(self.images.shape[-2:])
            boxes = [
                crop_boxes(torch.from_numpy(np.asarray(r)), stored, self.size).numpy() for r in self.targets[indices]
            ]
            return images.numpy(), boxes
        return images.numpy(), self.targets[indices]
