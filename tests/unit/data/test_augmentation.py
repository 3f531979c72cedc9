"""The augmentation seam: the built-in fast augmentation or a stock torchvision v2 transform, per sample, replayable."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader
from torchvision.transforms import v2

from litstarter.data import ArrayImageDataset, EpochShuffleSampler, FastAugmentation


def _dataset(augmentation, n: int = 12, size: int = 16) -> ArrayImageDataset:
    images = np.random.default_rng(0).integers(0, 256, (n, 3, size + 2, size + 2), dtype=np.uint8)
    return ArrayImageDataset(images, np.arange(n) % 3, (size, size), augmentation)


STOCK = [
    v2.RandAugment(num_ops=2, magnitude=9),
    v2.TrivialAugmentWide(),
    v2.Compose([v2.RandomResizedCrop(16, antialias=True), v2.RandomHorizontalFlip(), v2.ColorJitter(0.3, 0.3)]),
]


@pytest.mark.parametrize("transform", STOCK, ids=lambda t: type(t).__name__)
def test_a_stock_transform_is_a_function_of_each_samples_seed(transform) -> None:
    dataset = _dataset(transform)
    items = [(i, 1000 + i) for i in range(12)]
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    batch = dataset.__getitems__(items)
    assert torch.equal(torch.rand(3), before)  # the process's own generator is left as it was
    alone = [dataset[item] for item in reversed(items)][::-1]  # another batch, another order: the same images
    for (image, label), (again, again_label) in zip(batch, alone, strict=True):
        assert image.dtype == torch.uint8 and image.shape == (3, 16, 16)
        assert torch.equal(image, again) and label == again_label
    reseeded = dataset.__getitems__([(i, 5000 + i) for i in range(12)])
    assert any(not torch.equal(a[0], b[0]) for a, b in zip(batch, reseeded, strict=True))
    eval_images, _ = dataset.eval_view(range(12))  # the un-augmented view: the centre crop
    np.testing.assert_array_equal(eval_images, dataset.images[:12, :, 1:-1, 1:-1])


def test_an_epoch_replays_exactly_from_the_sampler_with_a_stock_transform() -> None:
    dataset, sampler = _dataset(v2.RandAugment()), EpochShuffleSampler(12, seed=7)

    def epoch(e: int, workers: int) -> torch.Tensor:
        sampler.set_epoch(e)
        loader = DataLoader(dataset, batch_size=5, sampler=sampler, num_workers=workers)
        return torch.cat([images for images, _ in loader])

    first = epoch(1, 0)
    assert torch.equal(first, epoch(1, 2))  # whatever process draws it
    assert not torch.equal(first, epoch(2, 0))


def test_a_transform_that_returns_floats_is_refused_by_name() -> None:
    dataset = _dataset(v2.Compose([v2.ToDtype(torch.float32, scale=True)]))
    with pytest.raises(ValueError, match=r"data.augmentation Compose returned torch.float32; it must return uint8"):
        dataset.__getitems__([(0, 1), (1, 2)])


def test_the_fast_augmentation_is_a_v2_transform_too() -> None:
    image = torch.randint(0, 256, (3, 20, 24), dtype=torch.uint8)
    torch.manual_seed(0)
    out = FastAugmentation(hflip=1.0)(image)
    torch.manual_seed(0)
    assert out.shape == image.shape and out.dtype == torch.uint8
    assert torch.equal(out, FastAugmentation(hflip=1.0)(image))
    assert torch.equal(
        v2.Compose([FastAugmentation(crop_scale=None, hflip=1.0, color_jitter=0.0)])(image), image.flip(-1)
    )
