"""The augmentation seam: ``data.augmentation`` is any torchvision v2 transform, applied per sample, reproducibly.

Choices, all set from YAML by ``class_path`` (``null`` turns augmentation off; val and test never augment):

* the default, :class:`~litstarter._engine.augment.fast.FastAugmentation` (random resized crop, flip, colour
  jitter), run per batch several times faster; its arguments alone override it: ``augmentation: {hflip: 0.0}``;
* any stock torchvision v2 transform or ``Compose``, e.g.::

      data:
        init_args:
          augmentation:
            class_path: torchvision.transforms.v2.RandAugment
            init_args: {num_ops: 2, magnitude: 9}

The transform gets one stored image, a ``(C, H, W)`` uint8 tensor at ``resize_size`` (a little larger than
``image_size``), and must return uint8; an output of another size is centre-cropped (or resized) to
``image_size``, so a ``RandomResizedCrop(image_size)`` inside a ``Compose`` gives the random crop. Reproducible:
torch's generator is seeded from the sample's own seed before each call (v2 transforms draw from it), so the same
seed and epoch give the same images and a resumed run replays exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torchvision.transforms import v2

from litstarter._engine.augment.fast import FastAugmentation
from litstarter._engine.errors import UsageError
from litstarter._engine.images.crop import center_crop_or_resize

__all__ = ["IMAGE_FOLDER_DEFAULTS", "FastAugmentation", "augment", "describe", "seeded_call"]

#: What ``ImageFolderDataModule``'s default ``FastAugmentation`` sets beyond the class's own defaults: half the
#: training photos inverted, so that a shape is learnt light-on-dark and dark-on-light alike (ink, paint, film,
#: screens). ``--data.augmentation.invert 0`` where the two are different classes.
IMAGE_FOLDER_DEFAULTS = {"invert": 0.5}


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


def augment(
    images: torch.Tensor, size: tuple[int, int], augmentation: v2.Transform, seeds: Sequence[int] | np.ndarray
) -> torch.Tensor:
    """Augment ``(B, C, H, W)`` uint8 images, sample ``i`` from ``seeds[i]`` alone; returns ``(B, C, *size)`` uint8.

    The built-in :class:`FastAugmentation` runs once on the batch; any other transform runs per sample, seeded.
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
