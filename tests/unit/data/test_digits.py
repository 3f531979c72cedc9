"""The embedded digits data: split, dtype, loaders."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from litstarter.data import DigitsDataModule
from litstarter.data.samplers import EpochShuffleSampler


def test_split_is_stratified_seeded_and_complete() -> None:
    dm = DigitsDataModule(num_workers=0)
    splits = dm.splits()
    sizes = {k: len(v[1]) for k, v in splits.items()}
    assert sum(sizes.values()) == 1797
    assert abs(sizes["train"] / 1797 - 0.70) < 0.01 and abs(sizes["test"] / 1797 - 0.15) < 0.01
    for images, labels in splits.values():
        assert images.dtype == np.uint8 and images.shape[1:] == (1, 8, 8)
        assert images.max() == 255
        frac = np.bincount(labels, minlength=10) / len(labels)
        assert np.all(np.abs(frac - 0.1) < 0.02), "split is not stratified"
    again = DigitsDataModule(num_workers=0).splits()
    for k in splits:
        assert np.array_equal(splits[k][0], again[k][0]) and np.array_equal(splits[k][1], again[k][1])
    other = DigitsDataModule(num_workers=0, seed=7).splits()
    assert not np.array_equal(splits["test"][1], other["test"][1])
    assert dm.num_classes == 10 and dm.class_names == [str(i) for i in range(10)]


def test_val_and_test_loaders_never_shuffle_and_never_augment() -> None:
    dm = DigitsDataModule(num_workers=0)
    dm.setup()
    for loader, split in [(dm.val_dataloader(), "val"), (dm.test_dataloader(), "test")]:
        first = torch.cat([y for _, y in loader])
        second = torch.cat([y for _, y in loader])
        assert torch.equal(first, second)
        assert torch.equal(first, torch.as_tensor(dm.splits()[split][1]))
        x, _ = next(iter(loader))
        assert x.dtype == torch.uint8 and torch.equal(x[0], torch.from_numpy(dm.splits()[split][0][0]))


def test_train_order_and_augmentation_are_a_function_of_seed_and_epoch() -> None:
    dm = DigitsDataModule(num_workers=0)
    dm.setup()

    def epoch_batch(epoch: int) -> torch.Tensor:
        loader = dm.train_dataloader()
        loader.sampler.set_epoch(epoch)
        return next(iter(loader))[0]

    assert torch.equal(epoch_batch(3), epoch_batch(3))
    assert not torch.equal(epoch_batch(3), epoch_batch(4))
    sampler = EpochShuffleSampler(100, seed=1)
    assert sorted(i for i, _ in sampler) == list(range(100))


def test_loader_settings() -> None:
    dm2 = DigitsDataModule(num_workers=2)
    dm2.setup()
    loader = dm2.val_dataloader()
    assert loader.persistent_workers and not loader.pin_memory  # no trainer/accelerator -> no pinning
    dm0 = DigitsDataModule(num_workers=0)
    dm0.setup()
    assert not dm0.val_dataloader().persistent_workers


@pytest.mark.parametrize("bad", [dict(val_fraction=0.0), dict(test_fraction=0.6, val_fraction=0.5), dict(batch_size=0)])
def test_bad_arguments_name_the_key(bad: dict) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        DigitsDataModule(**bad)
