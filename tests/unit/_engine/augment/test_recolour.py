"""The fast augmentation's recolouring: inversion and channel reordering, per sample and batch-independent."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from litstarter._engine.augment.fast import augment_batch
from litstarter._engine.augment.recolour import recolour
from litstarter.data.augmentation import FastAugmentation


def _images(n: int, channels: int = 3) -> torch.Tensor:
    torch.manual_seed(0)
    return torch.randint(0, 256, (n, channels, 6, 5), dtype=torch.uint8)


def test_invert_and_shuffle_do_exactly_what_they_say() -> None:
    images = _images(4)
    draws = np.array([[0.1, 0.9, 0.0], [0.9, 0.1, 0.0], [0.9, 0.1, 0.99], [0.9, 0.9, 0.5]])
    out = recolour(images, draws, invert=0.5, channel_shuffle=0.5)
    assert torch.equal(out[0], 255 - images[0])  # inverted, not shuffled
    assert torch.equal(out[1], images[1][[0, 2, 1]])  # the first non-identity order
    assert torch.equal(out[2], images[2][[2, 1, 0]])  # the last one
    assert torch.equal(out[3], images[3])  # neither
    assert out.dtype == torch.uint8


def test_off_by_default_and_grey_images_are_never_reordered() -> None:
    images, draws = _images(3), np.zeros((3, 3))
    assert recolour(images, draws, 0.0, 0.0) is images
    assert FastAugmentation().invert == 0.0 and FastAugmentation().channel_shuffle == 0.0
    grey = _images(3, channels=1)
    assert torch.equal(recolour(grey, draws, 0.0, 1.0), grey)


@pytest.mark.parametrize("channels", [1, 3])
def test_recoloured_samples_come_out_the_same_alone_or_in_a_batch_at_the_set_rates(channels: int) -> None:
    aug = FastAugmentation(invert=0.3, channel_shuffle=0.6)
    images = _images(400, channels)
    seeds = np.arange(400) * 7919 + 11
    batch = augment_batch(images, (6, 5), aug, seeds)
    alone = torch.stack([augment_batch(images[i : i + 1], (6, 5), aug, seeds[i : i + 1])[0] for i in range(0, 400, 37)])
    assert torch.equal(batch[::37], alone)
    plain = augment_batch(images, (6, 5), FastAugmentation(), seeds)  # the same crops and jitter, no recolouring
    inverted = (batch.float().mean((1, 2, 3)) - (255 - plain).float().mean((1, 2, 3))).abs() < 1e-3
    assert 0.2 < inverted.float().mean() < 0.4
    if channels == 3:
        same_channels = (batch.sort(1).values == plain.sort(1).values).flatten(1).all(1)
        reordered = same_channels & (batch != plain).flatten(1).any(1)
        assert 0.5 * 0.6 < reordered.float().mean() < 0.8 * 0.6 + 0.1  # not inverted ones, and not identity


def test_describe_says_in_words_what_the_training_images_go_through() -> None:
    from torchvision.transforms import v2

    from litstarter.data.augmentation import describe

    photos = describe(FastAugmentation(invert=0.5))
    assert photos == (
        "random resized crop (35%-100% of the area), no flips (data.augmentation.hflip), colour jitter +-10%, "
        "inverted 50% (data.augmentation.invert)"
    )
    assert "inverted" not in describe(FastAugmentation())  # off unless asked for
    flips = describe(FastAugmentation(crop_scale=None, hflip=0.5, color_jitter=0.0, channel_shuffle=0.2))
    assert flips == "horizontal flip 50%, colour channels reordered 20%"
    assert describe(None) == "none (data.augmentation: null)"
    assert describe(v2.RandAugment()) == "RandAugment, per sample"


def test_describe_builds_the_lazy_default_a_data_module_holds_before_a_loader_calls_it() -> None:
    from jsonargparse import lazy_instance

    from litstarter.data.augmentation import describe

    lazy = lazy_instance(FastAugmentation, invert=0.5)  # as ImageFolderDataModule's default is held, unbuilt
    assert describe(lazy) == describe(FastAugmentation(invert=0.5))
