"""The batched augmentation draws what torchvision draws and gives its pixels, without its per-op overhead."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torchvision import transforms as T
from torchvision.transforms.v2 import functional as F

from litstarter._engine.augment.fast import (
    MAX_BATCHED_SHRINK,
    _color_jitter_,
    augment,
    augment_batch,
    color_jitter,
    random_resized_crop_boxes,
    resized_crop_batch,
    uniforms,
)
from litstarter.data.augmentation import FastAugmentation


def test_uniforms_are_a_pure_function_of_each_seed() -> None:
    seeds = np.array([7, -3, 2**62 - 1, 7])
    u = uniforms(seeds, 5)
    assert u.shape == (4, 5) and (u >= 0).all() and (u < 1).all()
    assert np.array_equal(u[0], u[3])  # same seed, same numbers, wherever it sits in the batch
    assert np.array_equal(uniforms(seeds[1:2], 5)[0], u[1])
    big = uniforms(np.arange(20_000), 3)
    assert abs(big.mean() - 0.5) < 0.01 and abs(big.std() - math.sqrt(1 / 12)) < 0.01
    assert abs(np.corrcoef(big[:-1, 0], big[1:, 0])[0, 1]) < 0.03  # consecutive seeds are unrelated


def test_crop_boxes_follow_torchvisions_random_resized_crop() -> None:
    height, width, scale, ratio = 74, 60, (0.35, 1.0), (3 / 4, 4 / 3)
    boxes = random_resized_crop_boxes(height, width, scale, ratio, uniforms(np.arange(20_000), 22))
    top, left, h, w = boxes.T
    assert (top >= 0).all() and (left >= 0).all() and (top + h <= height).all() and (left + w <= width).all()
    torch.manual_seed(0)
    reference = np.array(
        [T.RandomResizedCrop.get_params(torch.empty(1, height, width), list(scale), list(ratio)) for _ in range(20_000)]
    )
    ours, theirs = (h * w) / (height * width), reference[:, 2] * reference[:, 3] / (height * width)
    assert abs(ours.mean() - theirs.mean()) < 0.01 and abs(ours.std() - theirs.std()) < 0.01
    assert abs(np.log(w / h).mean() - np.log(reference[:, 3] / reference[:, 2]).mean()) < 0.01
    # positions spread over the whole free range
    assert abs((top / np.maximum(height - h, 1)).mean() - 0.5) < 0.02


def test_crop_box_falls_back_to_torchvisions_centred_crop() -> None:
    # An area of ~99% at aspect 1 never fits a 10 x 100 image: both fall back to the centred 10 x 10 box.
    boxes = random_resized_crop_boxes(10, 100, (0.99, 1.0), (1.0, 1.0), uniforms(np.arange(5), 22))
    expected = T.RandomResizedCrop.get_params(torch.empty(1, 10, 100), [0.99, 1.0], [1.0, 1.0])
    assert (boxes == np.array(expected)).all()


def _random_boxes(height: int, width: int, n: int, seed: int = 0) -> torch.Tensor:
    draws = uniforms(np.arange(seed, seed + n), 22)
    return torch.from_numpy(random_resized_crop_boxes(height, width, (0.2, 1.0), (0.5, 2.0), draws))


def test_resized_crop_batch_gives_torchvisions_pixels() -> None:
    images = torch.randint(0, 256, (24, 3, 41, 57), dtype=torch.uint8)
    boxes, flips = _random_boxes(41, 57, 24), torch.arange(24) % 3 == 0
    for size in [(32, 40), (64, 64)]:  # some crops shrink (both paths), the rest are enlarged
        out = resized_crop_batch(images, boxes, size, flips)
        for i, (top, left, h, w) in enumerate(boxes.tolist()):
            shrunk = h > MAX_BATCHED_SHRINK * size[0] or w > MAX_BATCHED_SHRINK * size[1]
            expected = F.resized_crop(images[i].float(), top, left, h, w, list(size), antialias=shrunk)
            expected = expected.flip(-1) if flips[i] else expected
            torch.testing.assert_close(out[i], expected, atol=2e-3, rtol=0)


def test_augment_matches_torchvision_to_one_grey_level() -> None:
    image = torch.randint(0, 256, (3, 41, 57), dtype=torch.uint8)
    aug = FastAugmentation(crop_scale=(0.35, 1.0), hflip=0.0, color_jitter=0.0)
    for seed in range(10):
        top, left, h, w = random_resized_crop_boxes(41, 57, aug.crop_scale, aug.crop_ratio, uniforms([seed], 22))[0]
        # torch's uint8 resize uses fixed-point weights; ours are float, rounded once.
        expected = F.resized_crop(image, int(top), int(left), int(h), int(w), [64, 64], antialias=True)
        assert (augment(image, (64, 64), aug, seed).int() - expected.int()).abs().max() <= 1


@pytest.mark.parametrize("channels", [1, 3])
def test_a_sample_comes_out_the_same_alone_or_in_a_batch(channels: int) -> None:
    # Big enough (> 32k pixels) that torch splits a lone image's reductions across threads.
    images = torch.randint(0, 256, (6, channels, 256, 256), dtype=torch.uint8)
    aug, threads = FastAugmentation(color_jitter=0.2), torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        batch = augment_batch(images, (224, 224), aug, list(range(6)))
        for i in range(6):
            assert torch.equal(batch[i], augment(images[i], (224, 224), aug, i)), i
        # Before rounding, too (a last-bit difference there only sometimes flips a uint8 pixel).
        floats, factors = images.float(), torch.rand(6, 3 if channels == 3 else 2) * 0.4 + 0.8
        jittered = _color_jitter_(floats.clone(), factors)
        for i in range(6):
            assert torch.equal(jittered[i], _color_jitter_(floats[i : i + 1].clone(), factors[i : i + 1])[0]), i
    finally:
        torch.set_num_threads(threads)


def test_each_sample_depends_only_on_its_seed_and_the_flip_only_mirrors() -> None:
    images = torch.randint(0, 256, (3, 3, 40, 40), dtype=torch.uint8)
    aug = FastAugmentation(color_jitter=0.2)
    batch = augment_batch(images, (32, 32), aug, [11, 12, 13])
    assert batch.dtype == torch.uint8 and batch.shape == (3, 3, 32, 32)
    assert torch.equal(batch[1], augment(images[1], (32, 32), aug, 12))
    assert not torch.equal(batch[0], augment(images[0], (32, 32), aug, 99))
    plain, mirrored = FastAugmentation(hflip=0.0, color_jitter=0.0), FastAugmentation(hflip=1.0, color_jitter=0.0)
    assert torch.equal(augment(images[0], (32, 32), mirrored, 5), augment(images[0], (32, 32), plain, 5).flip(-1))


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
