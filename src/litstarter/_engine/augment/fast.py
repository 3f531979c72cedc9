"""The kernels of ``FastAugmentation`` (``litstarter/data/augmentation.py``): random resized crop, flip, colour jitter
and recolouring, batched, every random choice drawn from the sample's own seed.

The augmentation itself (its settings, its place among the other choices) is the project's; this is how it runs
several times faster than the same operations from torchvision one sample at a time.

The sampler gives every draw of every sample a seed, a function of ``(seed, epoch, position)``. All random
choices for that draw (crop box, flip, jitter factors) are fixed numbers of a counter-based generator keyed
by that seed, so an epoch's augmentation depends on the seed and the epoch alone, not on a worker process's
RNG state or on which batch a sample lands in: a run resumed at an epoch boundary sees exactly the images the
uninterrupted run would have seen. The pixel work then runs once per batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import torch
import torch.nn.functional as nn_functional

from ..images.crop import center_crop_or_resize, crop_boxes
from .recolour import recolour

#: Crop attempts before the centred fallback, as torchvision's ``RandomResizedCrop``.
CROP_ATTEMPTS = 10
# Where each choice sits in a sample's stream of uniforms: the attempts' (area, log-ratio) pairs, the box's
# position, the flip, up to three jitter factors, the recolouring's three. Fixed slots: switching one
# augmentation off leaves the others' draws unchanged.
_POSITION = 2 * CROP_ATTEMPTS
_FLIP = _POSITION + 2
_JITTER = _FLIP + 1
_RECOLOUR = _JITTER + 3
_DRAWS = _RECOLOUR + 3


def uniforms(seeds: Sequence[int] | np.ndarray, count: int) -> np.ndarray:
    """``(len(seeds), count)`` floats uniform in ``[0, 1)``; row ``i`` is a pure function of ``seeds[i]``.

    SplitMix64 (the generator behind Java's ``SplittableRandom``) started from each seed, its first ``count`` outputs:
    one vectorised pass for a whole batch instead of a ``torch.Generator`` per sample.

    Args:
        seeds: One integer seed per sample; any int, taken modulo 2**64.
        count: Numbers per sample.
    """
    if isinstance(seeds, np.ndarray) and seeds.dtype.kind in "iu":
        z = seeds.astype(np.uint64)  # two's complement: negative int64 seeds wrap, as below
    else:
        z = np.fromiter((int(s) & 0xFFFF_FFFF_FFFF_FFFF for s in seeds), dtype=np.uint64, count=len(seeds))
    z = z[:, None]
    with np.errstate(over="ignore"):
        z = z + np.arange(1, count + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0**-53


def random_resized_crop_boxes(
    height: int, width: int, scale: tuple[float, float], ratio: tuple[float, float], draws: np.ndarray
) -> np.ndarray:
    """``(B, 4)`` int64 ``(top, left, h, w)`` boxes, chosen as torchvision's ``RandomResizedCrop`` chooses.

    Up to :data:`CROP_ATTEMPTS` tries of an area fraction in ``scale`` and a log-uniform aspect ratio in
    ``ratio``; the first box that fits is placed uniformly at random; if none fits, the largest centred box
    within the ratio range is taken. Vectorised over the batch.

    Args:
        height: Image height.
        width: Image width.
        scale: Area range, as fractions of the image.
        ratio: Aspect-ratio (width / height) range.
        draws: ``(B, >= 2 * CROP_ATTEMPTS + 2)`` uniforms in ``[0, 1)``, e.g. from :func:`uniforms`.
    """
    n = len(draws)
    attempts = draws[:, :_POSITION].reshape(n, CROP_ATTEMPTS, 2)
    area = height * width * (scale[0] + (scale[1] - scale[0]) * attempts[..., 0])
    log_low, log_high = math.log(ratio[0]), math.log(ratio[1])
    aspect = np.exp(log_low + (log_high - log_low) * attempts[..., 1])
    w = np.rint(np.sqrt(area * aspect)).astype(np.int64)  # rint rounds half to even, as Python's round()
    h = np.rint(np.sqrt(area / aspect)).astype(np.int64)
    fits = (w > 0) & (w <= width) & (h > 0) & (h <= height)
    first = fits.argmax(axis=1)  # the first attempt that fits (0 if none does; replaced below)
    rows = np.arange(n)
    h, w = h[rows, first], w[rows, first]
    top = np.minimum((draws[:, _POSITION] * (height - h + 1)).astype(np.int64), height - h)
    left = np.minimum((draws[:, _POSITION + 1] * (width - w + 1)).astype(np.int64), width - w)
    boxes = np.stack([top, left, h, w], axis=1)
    none_fits = ~fits.any(axis=1)
    if none_fits.any():  # the largest centred crop within the ratio range
        in_ratio = width / height
        if in_ratio < ratio[0]:
            fw, fh = width, round(width / ratio[0])
        elif in_ratio > ratio[1]:
            fh, fw = height, round(height * ratio[1])
        else:
            fw, fh = width, height
        boxes[none_fits] = ((height - fh) // 2, (width - fw) // 2, fh, fw)
    return boxes


class Settings(Protocol):
    """What the kernels read of an augmentation (``FastAugmentation``'s arguments)."""

    crop_scale: tuple[float, float] | None
    crop_ratio: tuple[float, float]
    hflip: float
    color_jitter: float
    invert: float
    channel_shuffle: float


def augment(image: torch.Tensor, size: tuple[int, int], aug: Settings, seed: int) -> torch.Tensor:
    """Apply the random training augmentation to one ``(C, H, W)`` uint8 image; returns ``(C, *size)`` uint8."""
    return augment_batch(image[None], size, aug, [seed])[0]


#: Crops shrunk by at most this factor are bilinear-sampled for the whole batch in one call. Crops shrunk
#: more are resized one by one with antialiasing, as torchvision's ``resized_crop`` does. The image-folder
#: cache stores images ``RESIZE_RATIO`` (1.14) times the training size and the digits are stored at it, so
#: every crop in this template takes the batched path. Against antialiasing, a 1.14x shrink of a smooth photo
#: differs by about 0.6 grey levels on average (4 at most); only pixel noise differs much (7 on average).
MAX_BATCHED_SHRINK = 1.25


def augment_batch(
    images: torch.Tensor, size: tuple[int, int], aug: Settings, seeds: Sequence[int] | np.ndarray
) -> torch.Tensor:
    """Augment ``(B, C, H, W)`` uint8 images, sample ``i`` drawing every random choice from ``seeds[i]``.

    The choices (crop box, flip, jitter factors, recolouring) are drawn for the whole batch at once; the pixel
    work then runs once on the batch: one bilinear sampling for all crops, the flip folded into it, and one
    float pass for the colour jitter, rounded to uint8 once; then the recolouring
    (:mod:`~litstarter._engine.augment.recolour`). Each sample's result depends only on its own seed, whatever
    batch it arrives in.
    """
    draws = uniforms(seeds, _DRAWS)  # (B, _DRAWS)
    flips = torch.from_numpy(draws[:, _FLIP] < aug.hflip) if aug.hflip > 0 else torch.zeros(len(draws), dtype=bool)
    if aug.crop_scale is not None:
        boxes = random_resized_crop_boxes(*images.shape[-2:], aug.crop_scale, aug.crop_ratio, draws)
        batch = resized_crop_batch(images, torch.from_numpy(boxes), size, flips)  # float
    else:
        batch = center_crop_or_resize(images, size)
        if flips.any():
            batch = batch.clone()
            batch[flips] = batch[flips].flip(-1)
        if aug.color_jitter > 0:
            batch = batch.float()
    if aug.color_jitter > 0:
        s = aug.color_jitter
        n_factors = 3 if images.shape[1] == 3 else 2
        factors = (1 - s) + 2 * s * draws[:, _JITTER : _JITTER + n_factors]
        _color_jitter_(batch, torch.from_numpy(factors).float())
    if batch.dtype != torch.uint8:
        batch = _to_uint8(batch)
    return recolour(batch, draws[:, _RECOLOUR:_DRAWS], aug.invert, aug.channel_shuffle)


def augment_masks(
    masks: torch.Tensor, size: tuple[int, int], aug: Settings, seeds: Sequence[int] | np.ndarray
) -> torch.Tensor:
    """The geometry :func:`augment_batch` gives the images of ``seeds`` (the same crop boxes and flips, drawn from
    the same seeds), applied to their ``(B, H, W)`` uint8 masks by nearest neighbour; colour never touches them.
    Returns ``(B, *size)`` uint8."""
    draws = uniforms(seeds, _DRAWS)
    flips = torch.from_numpy(draws[:, _FLIP] < aug.hflip) if aug.hflip > 0 else torch.zeros(len(draws), dtype=bool)
    if aug.crop_scale is None:
        out = center_crop_or_resize(masks[:, None], size, nearest=True)[:, 0]
        return torch.where(flips[:, None, None], out.flip(-1), out)
    boxes = random_resized_crop_boxes(*masks.shape[-2:], aug.crop_scale, aug.crop_ratio, draws)
    return resized_crop_batch(masks[:, None], torch.from_numpy(boxes), size, flips, nearest=True)[:, 0].to(torch.uint8)


def augment_boxes(
    boxes: Sequence[torch.Tensor],
    stored: tuple[int, int],
    size: tuple[int, int],
    aug: Settings,
    seeds: Sequence[int] | np.ndarray,
) -> list[torch.Tensor]:
    """The geometry :func:`augment_batch` gives the images of ``seeds`` (stored at ``(H, W)``) on each image's
    ``(m, 5)`` rows ``x1, y1, x2, y2, class``: the crop box's offset and scale, the flip; clipped to ``size``, the
    boxes left without area dropped."""
    draws = uniforms(seeds, _DRAWS)
    flips = draws[:, _FLIP] < aug.hflip if aug.hflip > 0 else np.zeros(len(draws), dtype=bool)
    if aug.crop_scale is None:
        crops = [None] * len(draws)
    else:
        crops = random_resized_crop_boxes(*stored, aug.crop_scale, aug.crop_ratio, draws).tolist()
    out_h, out_w = size
    result = []
    for rows, crop, flip in zip(boxes, crops, flips, strict=True):
        if crop is None:
            rows = crop_boxes(rows, stored, size)
        else:
            top, left, h, w = crop
            rows = rows.clone().float()
            rows[:, [0, 2]] = ((rows[:, [0, 2]] - left) * out_w / w).clamp(0, out_w)
            rows[:, [1, 3]] = ((rows[:, [1, 3]] - top) * out_h / h).clamp(0, out_h)
            rows = rows[(rows[:, 2] > rows[:, 0]) & (rows[:, 3] > rows[:, 1])]
        if flip:
            rows = rows.clone()
            rows[:, [0, 2]] = out_w - rows[:, [2, 0]]
        result.append(rows)
    return result


def resized_crop_batch(
    images: torch.Tensor,
    boxes: torch.Tensor,
    size: tuple[int, int],
    flips: torch.Tensor | None = None,
    nearest: bool = False,
) -> torch.Tensor:
    """Crop box ``i`` of image ``i`` and resize it to ``size``, bilinearly; optionally mirrored.

    Crops shrunk by at most :data:`MAX_BATCHED_SHRINK` are sampled for the whole batch in one
    ``grid_sample`` call, at the source coordinates ``F.resized_crop(..., antialias=False)`` would use (edges
    clamped to the box); the rest are resized one by one with antialiasing, like ``F.resized_crop``.

    Args:
        images: ``(B, C, H, W)``, uint8 or float.
        boxes: ``(B, 4)`` integer ``(top, left, height, width)`` per image.
        size: Output ``(h, w)``.
        flips: ``(B,)`` bool, mirror left-right; ``None`` for none.
        nearest: Sample the nearest pixel instead (masks: a class index is never blended), at the same source
            coordinates; a crop shrunk more is resized by ``nearest-exact``, whose pixel centres are the same.

    Returns:
        ``(B, C, h, w)`` float32, unrounded.
    """
    n, _, height, width = images.shape
    out_h, out_w = size
    flips = torch.zeros(n, dtype=torch.bool) if flips is None else flips
    top, left, box_h, box_w = boxes.to(torch.float64).unbind(1)
    ys = _source_coordinates(top, box_h, out_h)  # (B, out_h) pixel rows
    xs = _source_coordinates(left, box_w, out_w)  # (B, out_w) pixel columns
    xs = torch.where(flips[:, None], xs.flip(1), xs)
    # grid_sample's normalised coordinates (align_corners=False): -1 and 1 are the outer pixel edges.
    grid = torch.empty((n, out_h, out_w, 2))
    grid[..., 0] = ((2 * xs + 1) / width - 1).float()[:, None, :]  # float32 first: a mixed-dtype fill is slow
    grid[..., 1] = ((2 * ys + 1) / height - 1).float()[:, :, None]
    mode = "nearest" if nearest else "bilinear"
    out = nn_functional.grid_sample(images.float(), grid, mode=mode, padding_mode="border", align_corners=False)
    shrunk = (boxes[:, 2] > MAX_BATCHED_SHRINK * out_h) | (boxes[:, 3] > MAX_BATCHED_SHRINK * out_w)
    for i in shrunk.nonzero().flatten().tolist():
        top_i, left_i, h, w = boxes[i].tolist()
        crop = images[i : i + 1, :, top_i : top_i + h, left_i : left_i + w].float()
        if nearest:
            resized = nn_functional.interpolate(crop, size=tuple(size), mode="nearest-exact")[0]
        else:
            resized = nn_functional.interpolate(crop, size=tuple(size), mode="bilinear", antialias=True)[0]
        out[i] = resized.flip(-1) if flips[i] else resized
    return out


def _source_coordinates(start: torch.Tensor, length: torch.Tensor, out_size: int) -> torch.Tensor:
    """Where output pixel ``j`` samples a box ``[start, start + length)`` resized to ``out_size`` pixels.

    Pixel-centre aligned (``align_corners=False``) and clamped to the box's first and last pixel, as
    torch's bilinear ``interpolate`` on the cropped box does. ``(B,)`` float64 in, ``(B, out_size)`` out.
    """
    scale = (length / out_size)[:, None]
    coords = start[:, None] + (torch.arange(out_size, dtype=torch.float64) + 0.5) * scale - 0.5
    return torch.minimum(torch.maximum(coords, start[:, None]), (start + length - 1)[:, None])


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
    return _to_uint8(_color_jitter_(images.to(torch.float32, copy=True), factors))


def _color_jitter_(x: torch.Tensor, factors: torch.Tensor) -> torch.Tensor:
    """:func:`color_jitter_batch` in place on a float ``(B, C, H, W)`` batch on the 0..255 scale, unrounded."""
    n, channels = x.shape[:2]
    per_sample = factors.view(n, -1, 1, 1, 1)  # (B, F, 1, 1, 1)
    brightness, contrast = per_sample[:, 0], per_sample[:, 1]  # (B, 1, 1, 1)
    x.mul_(brightness).clamp_(0, 255)
    # The mean of the grayscale image is the luma-weighted sum of the channel means: no grayscale image needed.
    # Rows first, then their sums: a reduction of a whole image to one number (a lone grey image's mean) may be
    # split across threads, and its rounding would then depend on the batch the image arrives in.
    channel_means = x.sum(dim=-1).sum(dim=-1) / (x.shape[-2] * x.shape[-1])  # (B, C)
    mean = channel_means if channels == 1 else _luma(channel_means[..., None, None])[..., 0, 0]  # (B, 1)
    x.mul_(contrast).add_((1 - contrast) * mean.view(n, 1, 1, 1)).clamp_(0, 255)
    if channels == 3 and factors.shape[1] == 3:
        saturation = per_sample[:, 2]
        gray = _grayscale(x)  # before x is scaled in place
        x.mul_(saturation).add_(gray.mul_(1 - saturation)).clamp_(0, 255)
    return x


def _to_uint8(x: torch.Tensor) -> torch.Tensor:
    """Round a float batch on the 0..255 scale to uint8, in place (through int16: torch's float -> uint8 cast
    is several times slower)."""
    return x.clamp_(0, 255).round_().to(torch.int16).to(torch.uint8)


def _grayscale(x: torch.Tensor) -> torch.Tensor:
    """``(B, 3, H, W)`` float -> ``(B, 1, H, W)`` luma."""
    return _luma(x)


def _luma(x: torch.Tensor) -> torch.Tensor:
    """``(B, 3, ...)`` -> ``(B, 1, ...)``: the luma-weighted sum of the channels, element by element. Not a matmul:
    BLAS picks its kernel by the batch's shape, so a sample's last bits would depend on the batch it arrives in."""
    r, g, b = _LUMA
    return (x[:, 0:1] * r).add_(x[:, 1:2] * g).add_(x[:, 2:3] * b)
