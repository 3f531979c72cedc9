"""Training samplers whose order is a pure function of ``(seed, epoch)``.

Each yields ``(index, sample_seed)`` pairs; :class:`~litstarter.data.dataset.ArrayImageDataset` draws the
random augmentation for that sample from ``sample_seed``. Lightning calls ``set_epoch`` on the train
sampler at the start of every epoch (as it does for ``DistributedSampler``), so shuffling and augmentation
replay exactly after a resume, and no worker's RNG state leaks into the data.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch.utils.data import Sampler


class EpochShuffleSampler(Sampler[tuple[int, int]]):
    """A random permutation per epoch, seeded by ``(seed, epoch)``.

    Args:
        num_samples: Size of the dataset.
        seed: Base seed shared by every process.
    """

    def __init__(self, num_samples: int, seed: int = 0) -> None:
        self.num_samples = num_samples
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch whose order to produce next."""
        self.epoch = epoch

    def generator(self) -> torch.Generator:
        """A generator seeded from ``(seed, epoch)`` only."""
        return torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)

    def draw(self, generator: torch.Generator) -> torch.Tensor:
        """Indices for one epoch; subclasses change only this."""
        return torch.randperm(self.num_samples, generator=generator)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        generator = self.generator()
        indices = self.draw(generator)
        seeds = torch.randint(0, 2**62, (len(indices),), generator=generator)
        return iter(zip(indices.tolist(), seeds.tolist(), strict=True))

    def __len__(self) -> int:
        return self.num_samples
