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


class RandomDraws:
    """Uniform numbers from a ``torch.Generator``, drawn 32 at a time (one torch call instead of one per number).

    Args:
        generator: The per-sample generator; the draws are a pure function of its seed.
    """

    def __init__(self, generator: torch.Generator) -> None:
        self.generator = generator
        self.values: list[float] = []

    def uniform(self, low: float = 0.0, high: float = 1.0) -> float:
        """A float uniform in ``[low, high)``."""
        if not self.values:
            self.values = torch.rand(32, generator=self.generator).tolist()[::-1]
        return low + (high - low) * self.values.pop()

    def randint(self, low: int, high: int) -> int:
        """An int uniform in ``[low, high)``."""
        return min(low + int(self.uniform() * (high - low)), high - 1)


def random_resized_crop_box(
    height: int,
    width: int,
    scale: tuple[float, float],
    ratio: tuple[float, float],
    draws: RandomDraws | torch.Generator,
) -> tuple[int, int, int, int]:
    """Pick ``(top, left, h, w)`` as torchvision's ``RandomResizedCrop`` does, from ``draws``."""
    draws = draws if isinstance(draws, RandomDraws) else RandomDraws(draws)
    area = height * width
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for _ in range(10):
        target_area = area * draws.uniform(*scale)
        aspect = math.exp(draws.uniform(*log_ratio))
        w = round(math.sqrt(target_area * aspect))
        h = round(math.sqrt(target_area / aspect))
        if 0 < w <= width and 0 < h <= height:
            return draws.randint(0, height - h + 1), draws.randint(0, width - w + 1), h, w
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
    return augment_batch(image[None], size, aug, [generator])[0]


def augment_batch(
    images: torch.Tensor, size: tuple[int, int], aug: Augmentation, generators: list[torch.Generator]
) -> torch.Tensor:
    """Augment ``(B, C, H, W)`` uint8 images, sample ``i`` drawing every random choice from ``generators[i]``.

    Crops differ in size, so they are resized one by one; flips and colour jitter then run once on the whole
    ``(B, C, *size)`` batch with per-sample factors, instead of a dozen small ops per image. Each sample's
    result depends only on its own generator, whatever batch it arrives in.
    """
    crops, flips, factors = [], [], []
    n_factors = 3 if images.shape[1] == 3 else 2
    for image, generator in zip(images, generators, strict=True):
        draws = RandomDraws(generator)
        if aug.crop_scale is not None:
            top, left, h, w = random_resized_crop_box(*image.shape[-2:], aug.crop_scale, aug.crop_ratio, draws)
            crop = image[None, :, top : top + h, left : left + w]  # (1, C, h, w) uint8
            # torchvision's resized_crop does exactly this (same pixels); calling torch directly saves its overhead.
            crops.append(nn_functional.interpolate(crop, size=tuple(size), mode="bilinear", antialias=True)[0])
        else:
            crops.append(center_crop_or_resize(image, size))
        flips.append(aug.hflip > 0 and draws.uniform() < aug.hflip)
        if aug.color_jitter > 0:
            s = aug.color_jitter
            factors.append([draws.uniform(1 - s, 1 + s) for _ in range(n_factors)])
    batch = torch.stack(crops)  # (B, C, h, w) uint8
    if any(flips):
        flipped = torch.tensor(flips)
        batch[flipped] = batch[flipped].flip(-1)
    if factors:
        batch = color_jitter_batch(batch, torch.tensor(factors, dtype=torch.float32))
    return batch


#: ITU-R 601 luma weights, as torchvision's ``rgb_to_grayscale``.
_LUMA = (0.2989, 0.587, 0.114)


def color_jitter(image: torch.Tensor, brightness: float, contrast: float, saturation: float = 1.0) -> torch.Tensor:
    """Brightness, then contrast, then saturation of one ``(C, H, W)`` uint8 image (see :func:`color_jitter_batch`)."""
    factors = [brightness, contrast] + ([saturation] if image.shape[0] == 3 else [])
    return color_jitter_batch(image[None], torch.tensor([factors], dtype=torch.float32))[0]


def color_jitter_batch(images: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:
    """Brightness, then contrast, then saturation of ``(B, C, H, W)`` uint8 images, in one float pass.

    The formulas and order of torchvision's ``adjust_brightness/contrast/saturation``, without their round
    trip through uint8 after each step, and vectorised over the batch.

    Args:
        images: ``(B, C, H, W)`` uint8, C = 1 or 3.
        factors: ``(B, 2)`` (brightness, contrast) or ``(B, 3)`` (+ saturation, RGB only); 1 leaves it unchanged.
    """
    x = images.float()  # (B, C, H, W)
    per_sample = factors.view(len(factors), -1, 1, 1, 1)  # (B, F, 1, 1, 1)
    brightness, contrast = per_sample[:, 0], per_sample[:, 1]  # (B, 1, 1, 1)
    x.mul_(brightness).clamp_(0, 255)
    mean = _grayscale(x).mean(dim=(-3, -2, -1), keepdim=True)  # (B, 1, 1, 1)
    x.mul_(contrast).add_((1 - contrast) * mean).clamp_(0, 255)
    if x.shape[1] == 3 and factors.shape[1] == 3:
        saturation = per_sample[:, 2]
        gray = _grayscale(x)  # before x is scaled in place
        x.mul_(saturation).add_(gray * (1 - saturation)).clamp_(0, 255)
    return x.round_().to(torch.uint8)


def _grayscale(x: torch.Tensor) -> torch.Tensor:
    """``(B, C, H, W)`` float -> ``(B, 1, H, W)`` luma (the image itself when C = 1)."""
    if x.shape[1] == 1:
        return x
    return (x * torch.tensor(_LUMA).view(1, 3, 1, 1)).sum(1, keepdim=True)
