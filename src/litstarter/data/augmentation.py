"""The augmentation seam: ``data.augmentation`` is any torchvision v2 transform, applied per sample, reproducibly.

The default, :class:`FastAugmentation`, runs per batch several times faster (its arguments alone override it:
``augmentation: {hflip: 0.5}``); any stock v2 transform or ``Compose`` works by ``class_path`` (``RandAugment``);
``null`` turns it off; val and test never augment. A transform gets one stored ``(C, H, W)`` uint8 image at
``resize_size`` and returns uint8; another size is centre-cropped (or resized) to ``image_size``, so a
``RandomResizedCrop`` in a ``Compose`` gives the random crop. Torch's generator is seeded from the sample's own
seed before each call (``litstarter.data.base`` says where the seeds come from): a resumed run replays exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torchvision.transforms import v2

from litstarter._engine.augment import fast
from litstarter._engine.images.crop import center_crop_or_resize
from litstarter.errors import UsageError


class FastAugmentation(v2.Transform):
    """Random resized crop, horizontal flip, colour jitter and recolouring, every choice drawn from the sample's
    seed and run on the whole batch at once. Called on one ``(C, H, W)`` uint8 image like any v2 transform, it draws
    a seed from torch's generator and keeps the image's size.

    Args:
        crop_scale: Area range of the random resized crop, as fractions of the image; ``null`` turns it off.
        crop_ratio: Aspect-ratio range of the random resized crop.
        hflip: Probability of a horizontal flip. Off (0) by default: a mirrored digit, letter or scan is often
            another class or none; 0.5 for photos where a mirror image shows the same class.
        color_jitter: Strength of brightness/contrast/saturation jitter, e.g. 0.2 for +-20%; 0 turns it off.
        invert: Probability of inverting an image (light on dark becomes dark on light). Off by default: on the
            defaults suite (docs/data.md) 0.5 helped digit photos in random colours by 6 points and cost photo
            crops 12 and a colour-coded set 13.
        channel_shuffle: Probability of reordering an RGB image's colour channels (red ink becomes blue).
    """

    def __init__(
        self,
        crop_scale: tuple[float, float] | None = (0.35, 1.0),
        crop_ratio: tuple[float, float] = (3 / 4, 4 / 3),
        hflip: float = 0.0,
        color_jitter: float = 0.1,
        invert: float = 0.0,
        channel_shuffle: float = 0.0,
    ) -> None:
        super().__init__()
        self.crop_scale = None if crop_scale is None else tuple(crop_scale)
        self.crop_ratio = tuple(crop_ratio)
        self.hflip = hflip
        self.color_jitter = color_jitter
        self.invert = invert
        self.channel_shuffle = channel_shuffle

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        """One ``(C, H, W)`` uint8 image, augmented at its own size from a seed drawn from torch's generator."""
        seed = int(torch.randint(0, 2**62, ()))
        return self.augment_batch(image[None], tuple(image.shape[-2:]), [seed])[0]

    def augment_batch(
        self, images: torch.Tensor, size: tuple[int, int], seeds: Sequence[int] | np.ndarray
    ) -> torch.Tensor:
        """``(B, C, H, W)`` uint8 -> ``(B, C, *size)`` uint8, sample ``i`` from ``seeds[i]`` alone. (A method call
        builds the jsonargparse ``lazy_instance`` the data modules default to.)"""
        return fast.augment_batch(images, size, self, seeds)

    def augment_masks(
        self, masks: torch.Tensor, size: tuple[int, int], seeds: Sequence[int] | np.ndarray
    ) -> torch.Tensor:
        """The geometry :meth:`augment_batch` gives the images of ``seeds``, on their ``(B, H, W)`` uint8 masks
        (nearest neighbour; no colour): ``(B, *size)`` uint8."""
        return fast.augment_masks(masks, size, self, seeds)

    def extra_repr(self) -> str:
        return (
            f"crop_scale={self.crop_scale}, crop_ratio={self.crop_ratio}, hflip={self.hflip}, "
            f"color_jitter={self.color_jitter}, invert={self.invert}, channel_shuffle={self.channel_shuffle}"
        )


def describe(augmentation: v2.Transform | None) -> str:
    """In words, what ``augmentation`` does to training images: the line every image-folder fit prints."""
    if augmentation is None:
        return "none (data.augmentation: null)"
    if not isinstance(augmentation, FastAugmentation):
        return f"{type(augmentation).__name__}, per sample"
    a = augmentation
    a.extra_repr()  # a method call builds a jsonargparse lazy_instance (the data modules' default) before its fields
    parts = (
        []
        if a.crop_scale is None
        else [f"random resized crop ({a.crop_scale[0]:.0%}-{a.crop_scale[1]:.0%} of the area)"]
    )
    parts.append(f"horizontal flip {a.hflip:.0%}" if a.hflip > 0 else "no flips (data.augmentation.hflip)")
    if a.color_jitter > 0:
        parts.append(f"colour jitter +-{a.color_jitter:.0%}")
    if a.invert > 0:
        parts.append(f"inverted {a.invert:.0%} (data.augmentation.invert)")
    if a.channel_shuffle > 0:
        parts.append(f"colour channels reordered {a.channel_shuffle:.0%}")
    return ", ".join(parts)


def seeded_call(transform: v2.Transform, image: torch.Tensor, seed: int) -> torch.Tensor:
    """``transform(image)`` with torch's generator seeded from ``seed`` (the caller restores the generator)."""
    torch.manual_seed(int(seed) & 0x7FFF_FFFF_FFFF_FFFF)
    return transform(image)


def augment_with_masks(
    images: torch.Tensor,
    masks: torch.Tensor,
    size: tuple[int, int],
    augmentation: v2.Transform,
    seeds: Sequence[int] | np.ndarray,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`augment` for ``(B, C, H, W)`` uint8 images and their ``(B, H, W)`` uint8 masks: one geometry for both
    (nearest neighbour for the mask), colour for the image alone. :class:`FastAugmentation` runs on the batch; any
    other v2 transform gets each image with its mask as a ``tv_tensors.Mask``, seeded. Returns ``(B, C, *size)`` and
    ``(B, *size)``."""
    if isinstance(augmentation, FastAugmentation):
        return augmentation.augment_batch(images, size, seeds), augmentation.augment_masks(masks, size, seeds)
    from torchvision import tv_tensors

    out_images, out_masks = [], []
    with torch.random.fork_rng(devices=[]):
        for image, mask, seed in zip(images, masks, seeds, strict=True):
            torch.manual_seed(int(seed) & 0x7FFF_FFFF_FFFF_FFFF)
            image, mask = augmentation(image, tv_tensors.Mask(mask))
            out_images.append(center_crop_or_resize(image, size))
            out_masks.append(center_crop_or_resize(mask.as_subclass(torch.Tensor)[None], size, nearest=True)[0])
    if any(o.dtype != torch.uint8 for o in out_images):
        raise UsageError(
            f"data.augmentation {type(augmentation).__name__} returned {out_images[0].dtype}; it must return uint8"
            " images (the model normalises them itself)"
        )
    return torch.stack(out_images), torch.stack(out_masks)


def augment_with_boxes(
    images: torch.Tensor,
    boxes: Sequence[torch.Tensor],
    size: tuple[int, int],
    augmentation: v2.Transform,
    seeds: Sequence[int] | np.ndarray,
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """:func:`augment` for ``(B, C, H, W)`` uint8 images and each one's ``(m, 5)`` box rows ``x1, y1, x2, y2, class``:
    one geometry for both. :class:`FastAugmentation` runs on the batch; any other v2 transform gets each image with
    its boxes as ``tv_tensors.BoundingBoxes`` (and their labels), seeded, then the eval view's crop and
    ``SanitizeBoundingBoxes`` (boxes left without area dropped). Returns ``(B, C, *size)`` and the boxes."""
    if isinstance(augmentation, FastAugmentation):
        stored = tuple(images.shape[-2:])
        return augmentation.augment_batch(images, size, seeds), fast.augment_boxes(
            boxes, stored, size, augmentation, seeds
        )
    from torchvision import tv_tensors

    finish = v2.Compose([v2.Resize(min(size), antialias=True), v2.CenterCrop(size), v2.SanitizeBoundingBoxes()])
    out_images, out_boxes = [], []
    with torch.random.fork_rng(devices=[]):
        for image, rows, seed in zip(images, boxes, seeds, strict=True):
            torch.manual_seed(int(seed) & 0x7FFF_FFFF_FFFF_FFFF)
            target = {
                "boxes": tv_tensors.BoundingBoxes(rows[:, :4], format="XYXY", canvas_size=tuple(image.shape[-2:])),
                "labels": rows[:, 4].long(),
            }
            image, target = augmentation(image, target)
            if tuple(image.shape[-2:]) != tuple(size):
                image, target = finish(image, target)
            else:
                image, target = v2.SanitizeBoundingBoxes()(image, target)
            out_images.append(image)
            box = target["boxes"].as_subclass(torch.Tensor).float()
            out_boxes.append(torch.cat([box, target["labels"].float()[:, None]], dim=1))
    return torch.stack(out_images), out_boxes


def augment(
    images: torch.Tensor, size: tuple[int, int], augmentation: v2.Transform, seeds: Sequence[int] | np.ndarray
) -> torch.Tensor:
    """Augment ``(B, C, H, W)`` uint8 images, sample ``i`` from ``seeds[i]`` alone; returns ``(B, C, *size)`` uint8.

    :class:`FastAugmentation` runs once on the batch; any other transform runs per sample, seeded.
    """
    if isinstance(augmentation, FastAugmentation):
        return augmentation.augment_batch(images, size, seeds)
    with torch.random.fork_rng(devices=[]):  # the worker's own generator is left as it was
        out = [seeded_call(augmentation, image, seed) for image, seed in zip(images, seeds, strict=True)]
    if any(o.dtype != torch.uint8 for o in out):
        raise UsageError(
            f"data.augmentation {type(augmentation).__name__} returned {out[0].dtype}; it must return uint8 images "
            "(the model normalises them itself)"
        )
    return torch.stack([center_crop_or_resize(o, size) for o in out])


def boxes_view(
    images: torch.Tensor,
    rows: Sequence[torch.Tensor],
    size: tuple[int, int],
    augmentation: v2.Transform | None,
    seeds: Sequence[int] | None,
) -> tuple[torch.Tensor, list[dict[str, torch.Tensor]]]:
    """A batch's images and their ``(m, 5)`` box rows through one geometry: the eval view (centre crop) without
    ``seeds``, else :func:`augment_with_boxes`; each image's boxes as ``{"boxes": (m, 4), "labels": (m,) int64}``."""
    from litstarter._engine.images.crop import crop_boxes

    if seeds is None or augmentation is None:
        stored = tuple(images.shape[-2:])
        images, rows = center_crop_or_resize(images, size), [crop_boxes(r, stored, size) for r in rows]
    else:
        images, rows = augment_with_boxes(images, rows, size, augmentation, seeds)
    return images, [{"boxes": r[:, :4].contiguous(), "labels": r[:, 4].long()} for r in rows]
