"""Training samplers whose order is a pure function of ``(seed, epoch)``, and the wrapper that seeds any sampler.

Ours yield ``(index, sample_seed)`` pairs (the batch sampler: lists of them); any other sampler's indices get
seeds from :class:`SeedEachItem`. The dataset draws each training sample's augmentation from its seed, and
Lightning calls ``set_epoch`` on the train sampler every epoch: shuffling and augmentation replay exactly on resume.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import torch
from torch.utils.data import BatchSampler, DistributedSampler, Sampler

from litstarter.errors import BadInputError


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


class SeedEachItem(Sampler[tuple[int, int]]):
    """Any sampler's items as ``(index, seed)`` pairs, the seed a function of ``(seed, epoch, position)``: a stock
    sampler or your own keeps per-sample, reproducible augmentation. Pairs (our samplers') pass through.

    Args:
        sampler: The sampler of indices; ``set_epoch`` is passed on to it.
        seed: Base seed shared by every process.
    """

    def __init__(self, sampler: Sampler[int], seed: int = 0) -> None:
        self.sampler = sampler
        self.seed = seed
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch whose seeds to draw next (and pass it on)."""
        self.epoch = epoch
        if hasattr(self.sampler, "set_epoch"):
            self.sampler.set_epoch(epoch)

    def __iter__(self) -> Iterator[tuple[int, int]]:
        draws = max(1, len(self.sampler))
        seeds = np.random.default_rng([self.seed, self.epoch]).integers(0, 2**62, draws).tolist()  # (N,)
        for position, item in enumerate(self.sampler):
            yield tuple(item) if isinstance(item, (tuple, list)) else (int(item), seeds[position % len(seeds)])

    def __len__(self) -> int:
        return len(self.sampler)


def _class_counts(labels: np.ndarray) -> np.ndarray:
    if labels.ndim != 1 or len(labels) == 0 or labels.min() < 0:
        raise ValueError(f"labels must be a non-empty 1-D array of class indices >= 0, got shape {labels.shape}")
    return np.bincount(labels)


class ClassWeightedSampler(EpochShuffleSampler):
    """``WeightedRandomSampler``'s draw (``torch.multinomial``, with replacement), seeded by ``(seed, epoch)``:
    each sample weighted by ``1 / (count of its class)``, so every class is drawn about ``1/K`` of the time.

    Under DDP, Lightning's ``DistributedSamplerWrapper`` gives each rank a disjoint slice of the same epoch's draws;
    each draw is independent, so every slice keeps the class mix.

    Args:
        labels: ``(N,)`` class index of every training sample.
        seed: Base seed shared by every process.
        num_samples: Draws per epoch; the training-set size by default.
    """

    def __init__(self, labels: np.ndarray, seed: int = 0, num_samples: int | None = None) -> None:
        labels = np.asarray(labels, dtype=np.int64)
        counts = _class_counts(labels)
        super().__init__(len(labels) if num_samples is None else num_samples, seed=seed)
        if self.num_samples < 1:
            raise ValueError(f"num_samples must be >= 1, got {self.num_samples}")
        self.weights = torch.as_tensor(1.0 / counts[labels], dtype=torch.float64)  # (N,)

    def draw(self, generator: torch.Generator) -> torch.Tensor:
        """``num_samples`` indices drawn with replacement in proportion to ``weights``."""
        return torch.multinomial(self.weights, self.num_samples, replacement=True, generator=generator)


class BalancedBatchSampler(BatchSampler):
    """Batches that draw every class equally (``batch_size // K`` of each, the remainder spread over random
    classes), as lists of ``(index, sample_seed)`` pairs: rare classes repeat, common ones are subsampled, and an
    epoch has as many batches as one pass over the training set.

    DDP: Lightning re-instantiates it with a ``DistributedSampler`` as ``sampler`` (one process: pass
    ``DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=False)``) and sets its epoch; the epoch, rank and
    replicas are read from it, and each class's permutation, the same on every rank, is dealt out
    ``rank::num_replicas``: every rank draws a disjoint, stratified share, even of a class of a few samples.

    Args:
        sampler: Source of the epoch and of the DDP rank / replica count (see above); its length sets the
            number of batches per epoch.
        batch_size: Samples per batch per process.
        drop_last: Round the number of batches per epoch down instead of up. Every batch is full either way.
        labels: ``(N,)`` class index of every training sample.
        seed: Base seed shared by every process.
    """

    def __init__(
        self,
        sampler: DistributedSampler,
        batch_size: int,
        drop_last: bool = False,
        *,
        labels: np.ndarray,
        seed: int = 0,
    ) -> None:
        super().__init__(sampler, batch_size, drop_last)
        self.labels = np.asarray(labels, dtype=np.int64)
        counts = _class_counts(self.labels)
        self.classes = np.flatnonzero(counts)  # classes present in the training set
        self.class_indices = [np.flatnonzero(self.labels == c) for c in self.classes]
        self.seed = seed

    @property
    def epoch(self) -> int:
        """The epoch Lightning last set on ``sampler`` (0 before the first ``set_epoch``)."""
        return int(getattr(self.sampler, "epoch", 0))

    def _generator(self, *keys: int) -> torch.Generator:
        """A generator seeded from ``(seed, epoch, *keys)`` only."""
        state = np.random.SeedSequence([self.seed, self.epoch, *keys]).generate_state(2, dtype=np.uint32)
        return torch.Generator().manual_seed(int(state[0]) << 31 ^ int(state[1]))

    def _shares(self) -> list[np.ndarray]:
        """This rank's disjoint share of every class's sample indices, from a generator shared by all ranks."""
        replicas = int(getattr(self.sampler, "num_replicas", 1))
        rank = int(getattr(self.sampler, "rank", 0))
        generator = self._generator()  # identical on every rank: the shares partition each class
        shares = []
        for c, indices in zip(self.classes, self.class_indices, strict=True):
            permuted = indices[torch.randperm(len(indices), generator=generator).numpy()]
            share = permuted[rank::replicas]
            if len(share) == 0:
                raise BadInputError(
                    f"class index {c} has {len(indices)} training samples, fewer than the {replicas} processes;"
                    " balanced sampling under DDP needs at least one per process"
                )
            shares.append(share)
        return shares

    def __iter__(self) -> Iterator[list[tuple[int, int]]]:
        shares = self._shares()
        k, n_batches = len(shares), len(self)
        rank = int(getattr(self.sampler, "rank", 0))
        generator = self._generator(rank + 1)  # per rank: draws within its own share
        # (n_batches, K) samples of each class per batch: the equal part plus a random remainder.
        per_batch = torch.full((n_batches, k), self.batch_size // k, dtype=torch.int64)
        remainder = self.batch_size % k
        if remainder:
            for b in range(n_batches):
                per_batch[b, torch.randperm(k, generator=generator)[:remainder]] += 1
        streams = []  # per class: enough samples for the epoch, cycling through fresh permutations
        for c, share in enumerate(shares):
            needed = int(per_batch[:, c].sum())
            rounds = -(-needed // len(share))
            order = torch.cat([torch.randperm(len(share), generator=generator) for _ in range(rounds)])
            streams.append(share[order[:needed].numpy()])
        seeds = torch.randint(0, 2**62, (n_batches, self.batch_size), generator=generator).tolist()
        offsets = [0] * k
        for b in range(n_batches):
            batch = []
            for c in range(k):
                n = int(per_batch[b, c])
                batch.extend(int(i) for i in streams[c][offsets[c] : offsets[c] + n])
                offsets[c] += n
            yield list(zip(batch, seeds[b], strict=True))

    def __len__(self) -> int:
        n = len(self.sampler)
        return max(1, n // self.batch_size if self.drop_last else -(-n // self.batch_size))
