"""Training on windows of images kept at their own size (``data.tiles``), and the whole images for val and test.

* **An epoch** draws as many crops as windows without overlap cover the train images (``ceil(h / size) x ceil(w /
  size)`` per image), so it sees about every pixel once, whatever the images' sizes.
* **A crop** is a window of ``size`` read out of the memory-mapped image alone (a huge image is never held whole): for
  masks, one crop in :data:`FOREGROUND` is centred on a pixel of a class other than 0 (a class drawn uniformly among
  those the image holds, then one of its pixels), so thin and rare classes are seen often whatever their share of the
  pixels (nnU-Net's rule, a third); the others, and every crop of boxes, at a uniform position within the image. Boxes
  are shifted into the crop, clipped to it and dropped when nothing of them is left (the rule for boxes a crop cuts).
  The augmentation (``data.augmentation``) then runs on the crop at the window's size, from the item's seed, as on
  any image.
* **Val and test** serve each whole stored image (its padding ignored in masks), which the task predicts by sliding
  windows (``ImageTask.forward``), in batches of as many images as a training batch holds pixels (one at least).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torchvision.transforms import v2

from litstarter._engine.tiles import Tiling
from litstarter.data.augmentation import augment_with_masks, boxes_view
from litstarter.data.dataset import ArrayImageDataset, Item

#: The share of a mask's training crops centred on a pixel of a class other than 0.
FOREGROUND = 1 / 3
#: Pixels of each class kept per image to centre crops on (a seeded sample of them).
FOREGROUND_SAMPLES = 256


@dataclass
class Tiles:
    """``data.tiles``: train on windows of the images at their own size, predict by sliding them.

    Args:
        size: A window's side in pixels (or ``[height, width]``): the network's input.
        overlap: Pixels neighbouring windows share when predicting (0 to half the side); ``null``: a quarter of it.
        max_side: Images whose longer side is over this are resized down to it (aspect kept); ``null``: 4096.
    """

    size: int | tuple[int, int] = 256
    overlap: int | None = None
    max_side: int | None = None


class TiledImageDataset(ArrayImageDataset):
    """Crops of ``tiling``'s size out of images stored at their own size (``train``), or the whole images.

    Args:
        images: ``(N, C, H, W)`` uint8, memory-mapped: each image at the top left, padded to ``H, W``.
        targets: ``(N, H, W)`` uint8 masks (padding: ``ignore_index``) or each image's box rows.
        tiling: The windows.
        extents: Each image's ``(h, w)`` within ``H, W``; ``None``: all of it.
        augmentation: Random augmentation of each crop (train; ``None``: none).
        train: Serve crops (an epoch of them, :func:`crops_per_image`), else the whole images. ``eval_view`` is the
            centre window either way (what an export of one window is verified and calibrated on).
        ignore_index: The masks' ignored index (not a class to centre crops on).
    """

    def __init__(
        self,
        images: np.ndarray,
        targets,
        tiling: Tiling,
        extents: np.ndarray | None = None,
        augmentation: v2.Transform | None = None,
        train: bool = False,
        ignore_index: int = 255,
    ) -> None:
        super().__init__(images, targets, tiling.size, augmentation)  # size: the window (eval_view's centre crop)
        stored = tuple(images.shape[-2:])
        self.extents = np.tile(stored, (len(images), 1)) if extents is None else np.asarray(extents).reshape(-1, 2)
        self.tiling, self.train, self.ignore_index = tiling, train, ignore_index
        self.whole = ArrayImageDataset(images, targets, stored)  # val and test: the stored image as it is
        counts = crops_per_image(self.extents, tiling.size)
        self.owner = np.repeat(np.arange(len(images)), counts)  # crop k of an epoch -> its image
        self._foreground: dict[int, list[np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self.owner) if self.train else len(self.images)

    def __getitems__(self, items: Sequence[Item]) -> list[tuple]:
        """Crops (``train``: each ``(index, seed)`` drawn from its seed alone), or the whole images."""
        if not self.train:
            return self.whole.__getitems__(items)
        pairs = [item if isinstance(item, (tuple, list)) else (item, None) for item in items]
        seeds = [int(torch.randint(0, 2**62, ())) if seed is None else int(seed) for _, seed in pairs]
        picked = [self._crop(int(self.owner[k]), seed) for (k, _), seed in zip(pairs, seeds, strict=True)]
        th, tw = self.tiling.size
        images = torch.from_numpy(np.stack([self.images[i, :, t : t + th, x : x + tw] for i, t, x, _ in picked]))
        aug_seeds = [s for *_, s in picked] if self.augmentation is not None else None
        if self.masks:
            masks = torch.from_numpy(
                np.stack([np.asarray(self.targets[i, t : t + th, x : x + tw]) for i, t, x, _ in picked])
            )
            if aug_seeds is not None:
                images, masks = augment_with_masks(images, masks, self.size, self.augmentation, aug_seeds)
            return list(zip(images.unbind(0), masks.unbind(0), strict=True))
        rows = [torch.from_numpy(shifted(np.asarray(self.targets[i]), t, x, (th, tw))) for i, t, x, _ in picked]
        images, targets = boxes_view(images, rows, self.size, self.augmentation, aug_seeds)
        return list(zip(images.unbind(0), targets, strict=True))

    def _crop(self, index: int, seed: int) -> tuple[int, int, int, int]:
        """``(image, top, left, augmentation seed)`` of a crop of image ``index``, from ``seed`` alone."""
        rng = np.random.default_rng(seed)
        (h, w), (th, tw) = self.extents[index], self.tiling.size
        centred = rng.random() < FOREGROUND
        top, left = int(rng.integers(0, max(0, h - th) + 1)), int(rng.integers(0, max(0, w - tw) + 1))
        if centred and self.masks:
            classes = self.foreground(index)
            if classes:
                pixels = classes[int(rng.integers(len(classes)))]
                y, x = pixels[int(rng.integers(len(pixels)))]
                top, left = int(np.clip(y - th // 2, 0, max(0, h - th))), int(np.clip(x - tw // 2, 0, max(0, w - tw)))
        return index, top, left, int(rng.integers(0, 2**62))

    def foreground(self, index: int) -> list[np.ndarray]:
        """A seeded sample of up to :data:`FOREGROUND_SAMPLES` ``(y, x)`` pixels of each class other than 0 (and the
        ignored index) that image ``index`` holds; read once per image (per loader worker)."""
        if index not in self._foreground:
            h, w = self.extents[index]
            mask = np.asarray(self.targets[index, :h, :w])
            rng = np.random.default_rng(index)
            found = []
            for value in np.unique(mask):
                if value in (0, self.ignore_index):
                    continue
                pixels = np.argwhere(mask == value).astype(np.int32)
                if len(pixels) > FOREGROUND_SAMPLES:
                    pixels = pixels[rng.choice(len(pixels), FOREGROUND_SAMPLES, replace=False)]
                found.append(pixels)
            self._foreground[index] = found
        return self._foreground[index]


def crops_per_image(extents: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``(N,)``: the windows without overlap that cover each image (at least one)."""
    th, tw = size
    return np.array([max(1, math.ceil(h / th)) * max(1, math.ceil(w / tw)) for h, w in extents], dtype=np.int64)


def shifted(rows: np.ndarray, top: int, left: int, size: tuple[int, int]) -> np.ndarray:
    """``(m, 5)`` box rows ``x1, y1, x2, y2, class`` in a crop at ``(top, left)`` of ``size``: shifted, clipped to it,
    those left without area dropped."""
    out = np.asarray(rows, dtype=np.float32).reshape(-1, 5).copy()
    out[:, [0, 2]] = (out[:, [0, 2]] - left).clip(0, size[1])
    out[:, [1, 3]] = (out[:, [1, 3]] - top).clip(0, size[0])
    return out[(out[:, 2] > out[:, 0]) & (out[:, 3] > out[:, 1])]


def eval_batch(batch_size: int, stored: tuple[int, int], size: tuple[int, int]) -> int:
    """Whole images per val/test batch: as many as a training batch of windows holds pixels, one at least."""
    return max(1, batch_size * size[0] * size[1] // (stored[0] * stored[1]))
