"""The imbalance samplers: class frequencies, exact replay by (seed, epoch), and DDP sharding.

DDP is simulated in-process with two ranks, through the same Lightning functions that inject a distributed
sampler into a train loader under DDP (``_get_distributed_sampler`` + ``_update_dataloader``, then
``_set_sampler_epoch`` at every epoch start). No process group is needed.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from lightning.fabric.utilities.data import _replace_dunder_methods, _set_sampler_epoch
from lightning.fabric.utilities.distributed import DistributedSamplerWrapper
from lightning.pytorch.trainer.connectors.data_connector import _get_distributed_sampler
from lightning.pytorch.trainer.states import RunningStage
from lightning.pytorch.utilities.data import _update_dataloader
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler

from litstarter.data import ArrayImageDataset
from litstarter.data.samplers import BalancedBatchSampler, ClassWeightedSampler

COUNTS = (300, 60, 20)  # 15:3:1
LABELS = np.repeat(np.arange(3), COUNTS)


def single_process_pool(n: int) -> DistributedSampler:
    return DistributedSampler(range(n), num_replicas=1, rank=0, shuffle=False)


def class_fractions(indices) -> np.ndarray:
    return np.bincount(LABELS[list(indices)], minlength=3) / len(indices)


def epoch_items(sampler, epoch: int) -> list:
    """One epoch of a sampler, with the epoch set where Lightning sets it."""
    target = sampler.sampler if isinstance(sampler, BatchSampler) else sampler
    target.set_epoch(epoch)
    return list(sampler)


def test_weighted_draws_every_class_about_equally() -> None:
    sampler = ClassWeightedSampler(LABELS, seed=3)
    assert len(sampler) == len(LABELS)  # num_samples: the training-set size
    # Relative weights 1/(count of the sample's class), not normalised.
    assert sampler.weights[0].item() == pytest.approx(1 / 300) and sampler.weights[-1].item() == pytest.approx(1 / 20)
    indices = [i for epoch in range(10) for i, _ in epoch_items(sampler, epoch)]
    np.testing.assert_allclose(class_fractions(indices), 1 / 3, atol=0.03)  # 3,800 draws: sd ~ 0.008


@pytest.mark.parametrize("batch_size", [12, 10])
def test_balanced_batches_hold_every_class_equally(batch_size: int) -> None:
    sampler = BalancedBatchSampler(single_process_pool(len(LABELS)), batch_size, labels=LABELS, seed=3)
    batches = epoch_items(sampler, 0)
    assert len(batches) == len(sampler) == -(-len(LABELS) // batch_size)
    for batch in batches:
        counts = np.bincount(LABELS[[i for i, _ in batch]], minlength=3)
        assert len(batch) == batch_size and counts.max() - counts.min() <= (batch_size % 3 > 0)
    everything = [i for batch in batches for i, _ in batch]
    np.testing.assert_allclose(class_fractions(everything), 1 / 3, atol=0.01)
    # The rare class is cycled through (all 20 used), not one sample repeated.
    assert set(everything) >= set(np.flatnonzero(LABELS == 2))


@pytest.mark.parametrize("kind", ["weighted", "balanced"])
def test_an_epoch_replays_exactly_from_seed_and_epoch(kind: str) -> None:
    def make(seed: int):
        if kind == "weighted":
            return ClassWeightedSampler(LABELS, seed=seed)
        return BalancedBatchSampler(single_process_pool(len(LABELS)), 10, labels=LABELS, seed=seed)

    run = make(1)
    epochs = [epoch_items(run, e) for e in range(3)]
    assert epochs[0] != epochs[1] != epochs[2]
    resumed = make(1)  # a fresh process resuming at epoch 2 sees exactly what the first run saw
    assert epoch_items(resumed, 2) == epochs[2]
    assert epoch_items(make(2), 0) != epochs[0]


def train_loader(kind: str) -> DataLoader:
    """A train loader built the way Lightning requests one (init arguments recorded for re-instantiation)."""
    dataset = ArrayImageDataset(np.zeros((len(LABELS), 1, 4, 4), np.uint8), LABELS, (4, 4))
    with _replace_dunder_methods(DataLoader, "dataset"), _replace_dunder_methods(BatchSampler):
        if kind == "weighted":
            return DataLoader(dataset, batch_size=10, sampler=ClassWeightedSampler(LABELS, seed=5))
        pool = single_process_pool(len(LABELS))
        return DataLoader(dataset, batch_sampler=BalancedBatchSampler(pool, 12, labels=LABELS, seed=5))


def ddp_loader(loader: DataLoader, rank: int) -> DataLoader:
    """The loader rank ``rank`` of 2 gets after Lightning's DDP sampler injection."""
    sampler = _get_distributed_sampler(loader, shuffle=True, overfit_batches=0, num_replicas=2, rank=rank, seed=0)
    return _update_dataloader(loader, sampler, mode=RunningStage.TRAINING)


def rank_batches(loader: DataLoader, rank: int, epoch: int) -> list[list[tuple[int, int]]]:
    """What rank ``rank`` of 2 iterates in ``epoch``."""
    injected = ddp_loader(loader, rank)
    _set_sampler_epoch(injected, epoch)  # what the fit loop does at every epoch start
    return list(injected.batch_sampler)


def test_weighted_under_ddp_each_rank_draws_a_disjoint_share_with_the_class_mix() -> None:
    loader = train_loader("weighted")
    sampler = _get_distributed_sampler(loader, shuffle=True, overfit_batches=0, num_replicas=2, rank=0, seed=0)
    assert isinstance(sampler, DistributedSamplerWrapper)  # Lightning's wrapping of a custom sampler
    per_rank = {}
    for epoch in range(4):
        draws = [[item for batch in rank_batches(loader, rank, epoch) for item in batch] for rank in (0, 1)]
        assert len(draws[0]) == len(draws[1]) == len(LABELS) // 2
        # Disjoint positions of one epoch's draw, which is identical on both ranks (same seed, same epoch);
        # each position carries its own augmentation seed, so (index, seed) pairs identify them.
        assert not set(draws[0]) & set(draws[1])
        single = loader.sampler
        single.set_epoch(epoch)
        assert set(draws[0]) | set(draws[1]) == set(single)
        for rank in (0, 1):
            per_rank.setdefault(rank, []).extend(i for i, _ in draws[rank])
    assert rank_batches(loader, 0, 1) != rank_batches(loader, 0, 2)  # set_epoch reaches the inner sampler
    for rank in (0, 1):
        np.testing.assert_allclose(class_fractions(per_rank[rank]), 1 / 3, atol=0.05)  # 760 draws: sd ~ 0.017


def test_balanced_under_ddp_each_rank_draws_a_disjoint_stratified_share() -> None:
    loader = train_loader("balanced")
    injected = ddp_loader(loader, 1)
    # Lightning re-creates our batch sampler around its DistributedSampler for this rank.
    assert type(injected.batch_sampler) is BalancedBatchSampler
    assert isinstance(injected.batch_sampler.sampler, DistributedSampler)
    assert (injected.batch_sampler.sampler.rank, injected.batch_sampler.sampler.num_replicas) == (1, 2)
    for epoch in range(2):
        batches = {rank: rank_batches(loader, rank, epoch) for rank in (0, 1)}
        indices = {}
        for rank in (0, 1):
            assert len(batches[rank]) == -(-len(LABELS) // 2 // 12)
            for batch in batches[rank]:
                assert Counter(LABELS[[i for i, _ in batch]]) == {0: 4, 1: 4, 2: 4}  # the class mix, every batch
            indices[rank] = {i for batch in batches[rank] for i, _ in batch}
        assert not indices[0] & indices[1]  # disjoint shares of the data
        rare = set(np.flatnonzero(LABELS == 2))
        assert indices[0] & rare and indices[1] & rare and (indices[0] | indices[1]) >= rare
    # set_epoch on that DistributedSampler reaches us.
    assert rank_batches(loader, 1, 0) != rank_batches(loader, 1, 1)
    assert rank_batches(loader, 1, 1) == rank_batches(loader, 1, 1)
