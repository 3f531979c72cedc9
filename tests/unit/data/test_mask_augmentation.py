"""Masks follow their images: every geometric transform (ours, batched, and torchvision's stock v2 ones) moves image
and mask alike, pixel for pixel, the mask by nearest neighbour and never touched by colour."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torchvision.transforms import v2

from litstarter.data import ArrayImageDataset, FastAugmentation
from litstarter.data.augmentation import augment_with_masks

#: Each class is a grey level of its own: an image pixel at exactly one of these levels is unblended, inside a block.
LEVELS = 10 + 20 * np.arange(10)


def planted(n: int = 6, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Images ``(n, 1, 40, 48)`` of 8x8 blocks, each block's grey level its class's, and their masks."""
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 10, size=(n, 5, 6))
    masks = np.kron(blocks, np.ones((8, 8), dtype=np.int64)).astype(np.uint8)  # (n, 40, 48)
    images = LEVELS[masks].astype(np.uint8)[:, None]
    return torch.from_numpy(images), torch.from_numpy(masks)


def assert_aligned(images: torch.Tensor, masks: torch.Tensor) -> None:
    """Wherever an image pixel and its eight neighbours are one class's own level (inside a block: not blended
    across an edge, not fill), the mask there is that class; and a good part of the pixels are such."""
    values = images[:, 0].numpy().astype(np.int64)
    padded = np.pad(values, ((0, 0), (1, 1), (1, 1)), mode="edge")
    h, w = values.shape[1:]
    same = np.ones_like(values, dtype=bool)
    for dy in range(3):
        for dx in range(3):
            same &= padded[:, dy : dy + h, dx : dx + w] == values
    pure = same & np.isin(values, LEVELS)
    assert pure.mean() > 0.3, pure.mean()
    expected = (values - 10) // 20
    assert (masks.numpy()[pure] == expected[pure]).all()


GEOMETRIC = {
    "resized_crop": v2.RandomResizedCrop((32, 32), scale=(0.3, 1.0), antialias=True),
    "hflip": v2.RandomHorizontalFlip(p=1.0),
    "vflip": v2.RandomVerticalFlip(p=1.0),
    "rotation": v2.RandomRotation(20),
    "affine": v2.RandomAffine(degrees=10, translate=(0.1, 0.1), scale=(0.8, 1.2), shear=5),
    "perspective": v2.RandomPerspective(0.3, p=1.0),
    "crop": v2.RandomCrop((32, 40)),
    "zoom_out": v2.RandomZoomOut(fill=0, side_range=(1.0, 1.5), p=1.0),
    "compose": v2.Compose([v2.RandomHorizontalFlip(), v2.RandomResizedCrop((32, 32), antialias=True)]),
}


@pytest.mark.parametrize("name", [*GEOMETRIC, "fast"])
def test_image_and_mask_stay_aligned_at_pixel_level(name: str) -> None:
    images, masks = planted()
    if name == "fast":
        aug = FastAugmentation(crop_scale=(0.2, 1.0), hflip=0.5, color_jitter=0.0)
    else:
        aug = GEOMETRIC[name]
    out_images, out_masks = augment_with_masks(images, masks, (32, 32), aug, list(range(len(images))))
    assert out_images.shape == (6, 1, 32, 32) and out_masks.shape == (6, 32, 32) and out_masks.dtype == torch.uint8
    assert_aligned(out_images, out_masks)
    assert set(np.unique(out_masks.numpy())) <= set(range(10)) | {0}  # indices, never blended


def test_colour_touches_the_image_alone_and_a_sample_depends_on_its_seed_only() -> None:
    images, masks = planted()
    aug = FastAugmentation(crop_scale=(0.5, 1.0), hflip=0.5, color_jitter=0.4, invert=0.5)
    out_images, out_masks = augment_with_masks(images, masks, (32, 32), aug, [7, 8, 9, 10, 11, 12])
    plain = FastAugmentation(crop_scale=(0.5, 1.0), hflip=0.5, color_jitter=0.0)
    _, plain_masks = augment_with_masks(images, masks, (32, 32), plain, [7, 8, 9, 10, 11, 12])
    assert torch.equal(out_masks, plain_masks)  # the mask's geometry is the image's, whatever the colour does
    assert not torch.equal(out_images, augment_with_masks(images, masks, (32, 32), plain, [7, 8, 9, 10, 11, 12])[0])
    alone = augment_with_masks(images[2:3], masks[2:3], (32, 32), aug, [9])
    assert torch.equal(alone[0][0], out_images[2]) and torch.equal(alone[1][0], out_masks[2])


def test_the_dataset_serves_masks_with_their_images_in_eval_and_training_views() -> None:
    images, masks = planted(4)
    aug = FastAugmentation(crop_scale=(0.3, 1.0), color_jitter=0.0)
    train = ArrayImageDataset(images.numpy(), masks.numpy(), (32, 32), aug)
    evaluated = ArrayImageDataset(images.numpy(), masks.numpy(), (32, 32))
    for dataset, items in ((train, [(i, 100 + i) for i in range(4)]), (evaluated, list(range(4)))):
        batch = dataset.__getitems__(items)
        image, mask = torch.stack([b[0] for b in batch]), torch.stack([b[1] for b in batch])
        assert mask.dtype == torch.uint8 and mask.shape == (4, 32, 32)
        assert_aligned(image, mask)
    eval_images, eval_masks = evaluated.eval_view([0, 1])
    assert eval_masks.shape == (2, 32, 32) and np.array_equal(eval_masks, masks.numpy()[:2, 4:36, 8:40])
