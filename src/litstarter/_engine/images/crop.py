"""The deterministic eval view: the stored image centre-cropped (or, if smaller, resized) to ``image_size``."""

from __future__ import annotations

import torch
from torchvision.transforms import InterpolationMode
from torchvision.transforms.v2 import functional as F

from .preprocess import center_crop_array


def center_crop_or_resize(image: torch.Tensor, size: tuple[int, int], nearest: bool = False) -> torch.Tensor:
    """Deterministic eval view: centre-crop to ``size`` if the image is at least that big, else resize
    (``nearest``: by nearest neighbour, for masks, whose values are class indices)."""
    if tuple(image.shape[-2:]) == tuple(size):
        return image
    if image.shape[-2] >= size[0] and image.shape[-1] >= size[1]:
        # The same arithmetic as preprocess.center_crop_array, so inference on files matches eval exactly.
        return center_crop_array(image, size)
    if nearest:
        return F.resize(image, list(size), interpolation=InterpolationMode.NEAREST_EXACT)
    return F.resize(image, list(size), antialias=True)


def crop_boxes(boxes: torch.Tensor, stored: tuple[int, int], size: tuple[int, int]) -> torch.Tensor:
    """:func:`center_crop_or_resize`'s geometry on ``(m, 5)`` rows ``x1, y1, x2, y2, class`` of an image stored at
    ``stored`` ``(H, W)``: shifted by the crop (or scaled by the resize), clipped to ``size``, those left without
    area dropped."""
    (sh, sw), (h, w) = stored, size
    out = boxes.clone().float()
    if sh >= h and sw >= w:
        out[:, [0, 2]] -= (sw - w) // 2
        out[:, [1, 3]] -= (sh - h) // 2
    else:
        out[:, [0, 2]] *= w / sw
        out[:, [1, 3]] *= h / sh
    out[:, [0, 2]] = out[:, [0, 2]].clamp(0, w)
    out[:, [1, 3]] = out[:, [1, 3]].clamp(0, h)
    return out[(out[:, 2] > out[:, 0]) & (out[:, 3] > out[:, 1])]
