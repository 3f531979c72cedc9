"""The per-sample augmentation matches torchvision's formulas while skipping its per-op overhead."""

from __future__ import annotations

import pytest
import torch
from torchvision.transforms.v2 import functional as F

from litstarter.data.transforms import Augmentation, augment, color_jitter, random_resized_crop_box


def test_random_resized_crop_gives_torchvisions_pixels() -> None:
    image = torch.randint(0, 256, (3, 41, 57), dtype=torch.uint8)
    aug = Augmentation(crop_scale=(0.35, 1.0), hflip=0.0, color_jitter=0.0)
    for seed in range(10):
        box = random_resized_crop_box(41, 57, aug.crop_scale, aug.crop_ratio, torch.Generator().manual_seed(seed))
        expected = F.resized_crop(image, *box, [32, 32], antialias=True)
        assert torch.equal(augment(image, (32, 32), aug, torch.Generator().manual_seed(seed)), expected)


@pytest.mark.parametrize("channels", [3, 1])
def test_color_jitter_follows_torchvision_within_rounding(channels: int) -> None:
    image = torch.randint(0, 256, (channels, 24, 24), dtype=torch.uint8)
    assert torch.equal(color_jitter(image, 1.0, 1.0, 1.0), image)
    for b, c, s in [(1.1, 0.9, 1.1), (0.9, 1.1, 0.9), (1.3, 1.2, 0.7)]:
        expected = F.adjust_contrast(F.adjust_brightness(image, b), c)
        if channels == 3:
            expected = F.adjust_saturation(expected, s)
        # torchvision truncates to uint8 after every step; one float pass differs by rounding only.
        assert (color_jitter(image, b, c, s).int() - expected.int()).abs().max() <= 3
