"""Per-sample random augmentation on uint8 tensors, drawn from an explicit generator.

Each random choice comes from a ``torch.Generator`` that the sampler seeds per sample from
``(seed, epoch, position)``. An epoch's augmentation is therefore a function of the seed and the epoch
alone, not of whatever RNG state a worker process happens to have, so a run resumed at an epoch
boundary sees exactly the images the uninterrupted run would have seen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as nn_functional
from torchvision.transforms.v2 import functional as F

from litstarter.preprocess import center_crop_array


@dataclass
class Augmentation:
    """Random training-time augmentation. Val and test never augment.

    Args:
        crop_scale: Area range of the random resized crop, as fractions of the image; ``null`` turns it off.
        crop_ratio: Aspect-ratio range of the random resized crop.
        hflip: Probability of a horizontal flip (0 turns it off; keep 0 for digits or text).
        color_jitter: Strength of brightness/contrast/saturation jitter, e.g. 0.2 for +-20%; 0 turns it off.
    """

    crop_scale: tuple[float, float] | None = (0.35, 1.0)
    crop_ratio: tuple[float, float] = (3 / 4, 4 / 3)
    hflip: float = 0.5
    color_jitter: float = 0.1


def _uniform(generator: torch.Generator, low: float, high: float) -> float:
    return low + (high - low) * torch.rand((), generator=generator).item()


def random_resized_crop_box(
    height: int, width: int, scale: tuple[float, float], ratio: tuple[float, float], generator: torch.Generator
) -> tuple[int, int, int, int]:
    """Pick ``(top, left, h, w)`` as torchvision's ``RandomResizedCrop`` does, from ``generator``."""
    area = height * width
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target_area = area * _uniform(generator, *scale)
        aspect = math.exp(_uniform(generator, *log_ratio))
        w = round(math.sqrt(target_area * aspect))
        h = round(math.sqrt(target_area / aspect))
        if 0 < w <= width and 0 < h <= height:
            top = int(torch.randint(0, height - h + 1, (), generator=generator))
            left = int(torch.randint(0, width - w + 1, (), generator=generator))
            return top, left, h, w
    # Fallback: the largest centred crop within the ratio range.
    in_ratio = width / height
    if in_ratio < ratio[0]:
        w, h = width, round(width / ratio[0])
    elif in_ratio > ratio[1]:
        h, w = height, round(height * ratio[1])
    else:
        w, h = width, height
    return (height - h) // 2, (width - w) // 2, h, w


def center_crop_or_resize(image: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Deterministic eval view: centre-crop to ``size`` if the image is at least that big, else resize."""
    if tuple(image.shape[-2:]) == tuple(size):
        return image
    if image.shape[-2] >= size[0] and image.shape[-1] >= size[1]:
        # The same arithmetic as preprocess.center_crop_array, so inference on files matches eval exactly.
        return center_crop_array(image, size)
    return F.resize(image, list(size), antialias=True)


def augment(image: torch.Tensor, size: tuple[int, int], aug: Augmentation, generator: torch.Generator) -> torch.Tensor:
    """Apply the random training augmentation to one ``(C, H, W)`` uint8 image; returns ``(C, *size)`` uint8."""
    if aug.crop_scale is not None:
        top, left, h, w = random_resized_crop_box(*image.shape[-2:], aug.crop_scale, aug.crop_ratio, generator)
        crop = image[None, :, top : top + h, left : left + w]  # (1, C, h, w) uint8
        # torchvision's resized_crop does exactly this (same pixels); calling torch directly saves its overhead.
        image = nn_functional.interpolate(crop, size=tuple(size), mode="bilinear", antialias=True)[0]
    else:
        image = center_crop_or_resize(image, size)
    if aug.hflip > 0 and torch.rand((), generator=generator).item() < aug.hflip:
        image = F.horizontal_flip(image)
    if aug.color_jitter > 0:
        s = aug.color_jitter
        factors = [_uniform(generator, 1 - s, 1 + s) for _ in range(3 if image.shape[0] == 3 else 2)]
        image = color_jitter(image, *factors)
    return image


#: ITU-R 601 luma weights, as torchvision's ``rgb_to_grayscale``.
_LUMA = (0.2989, 0.587, 0.114)


def color_jitter(image: torch.Tensor, brightness: float, contrast: float, saturation: float = 1.0) -> torch.Tensor:
    """Brightness, then contrast, then saturation of a ``(C, H, W)`` uint8 image, in one float pass.

    The formulas and order of torchvision's ``adjust_brightness/contrast/saturation``, without their
    round trip through uint8 after each step: a few whole-image ops instead of about twenty small ones,
    which is most of the per-sample cost at training sizes.
    """
    x = image.float()  # (C, H, W)
    x.mul_(brightness).clamp_(0, 255)
    luma = torch.tensor(_LUMA).view(3, 1, 1) if x.shape[0] == 3 else None
    mean = float(((x * luma).sum(0) if luma is not None else x[0]).mean())  # of the grayscale image
    x.mul_(contrast).add_((1 - contrast) * mean).clamp_(0, 255)
    if luma is not None and saturation != 1:
        gray = (x * luma).sum(0, keepdim=True)  # (1, H, W)
        x.mul_(saturation).add_(gray * (1 - saturation)).clamp_(0, 255)
    return x.round_().to(torch.uint8)
