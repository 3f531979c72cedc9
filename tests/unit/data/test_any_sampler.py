"""Any sampler keeps the augmentation: a stock sampler or your own, returned by ``train_sampler()``, yields plain
indices, and the training views are still augmented, per sample, and the same in two runs.

The images here are flat grey levels below 128 and the augmentation only inverts (half of the time, drawn from each
sample's seed): an augmented view is above 128, the eval view below, so a batch shows at a glance which were
augmented.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest
import torch
from torch.utils.data import DistributedSampler, RandomSampler, Sampler, WeightedRandomSampler

from litstarter.data import ArrayDataModule, ArrayImageDataset, FastAugmentation

N = 48


class EveryOther(Sampler[int]):
    """A sampler of your own: the even indices, then the odd ones."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __iter__(self) -> Iterator[int]:
        return iter([*range(0, self.n, 2), *range(1, self.n, 2)])

    def __len__(self) -> int:
        return self.n


def seeded() -> torch.Generator:
    return torch.Generator().manual_seed(3)


SAMPLERS: dict[str, Callable[[int], Sampler]] = {
    "WeightedRandomSampler": lambda n: WeightedRandomSampler(torch.ones(n), n, generator=seeded()),
    "RandomSampler": lambda n: RandomSampler(range(n), generator=seeded()),
    "DistributedSampler": lambda n: DistributedSampler(range(n), num_replicas=1, rank=0, seed=3),
    "your own": EveryOther,
}  # fmt: skip


class Greys(ArrayDataModule):
    """``N`` flat 1x4x4 images, image ``i`` at grey level ``2 * i``; training inverts half of them."""

    def __init__(self, make_sampler: Callable[[int], Sampler]) -> None:
        super().__init__(batch_size=8, num_workers=0, seed=5)
        self.make_sampler = make_sampler
        self.class_names, self.channels, self.image_size = ["a", "b"], 1, (4, 4)

    def setup(self, stage: str | None = None) -> None:
        images = np.repeat(np.arange(0, 2 * N, 2, dtype=np.uint8), 16).reshape(N, 1, 4, 4)  # (N, 1, 4, 4)
        augmentation = FastAugmentation(crop_scale=None, color_jitter=0.0, invert=0.5)
        self.train_set = ArrayImageDataset(images, np.arange(N) % 2, self.image_size, augmentation)

    def train_sampler(self) -> Sampler:
        return self.make_sampler(len(self.train_set))


def epoch_views(make_sampler: Callable[[int], Sampler], epoch: int = 0) -> torch.Tensor:
    """One epoch of training images from a fresh data module: ``(N, 1, 4, 4)`` uint8."""
    dm = Greys(make_sampler)
    dm.setup("fit")
    loader = dm.train_dataloader()
    if hasattr(loader.sampler, "set_epoch"):  # what Lightning does at every epoch start
        loader.sampler.set_epoch(epoch)
    return torch.cat([images for images, _ in loader])


@pytest.mark.parametrize("make_sampler", SAMPLERS.values(), ids=SAMPLERS.keys())
def test_any_sampler_gets_augmented_views_that_two_runs_draw_alike(make_sampler) -> None:
    views = epoch_views(make_sampler)
    levels = views.float().mean(dim=(1, 2, 3))  # (N,) one flat level per view
    inverted = levels > 127  # augmented: the eval view of every image is below 128
    assert 0.25 < inverted.float().mean() < 0.75, levels  # about half, drawn per sample
    assert torch.equal(views, epoch_views(make_sampler))  # the same views in another run
    assert not torch.equal(views, epoch_views(make_sampler, epoch=1))  # and other ones in the next epoch


def test_the_seeds_follow_the_position_so_a_resumed_epoch_replays_it() -> None:
    dm = Greys(EveryOther)
    dm.setup("fit")
    sampler = dm.train_dataloader().sampler
    sampler.set_epoch(4)
    first, again = list(sampler), list(sampler)
    assert first == again and [i for i, _ in first] == list(EveryOther(N))
    assert len({seed for _, seed in first}) == N  # a seed of its own for every draw
