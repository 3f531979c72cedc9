"""What every data module here shares: loader settings, the seeded train sampler, class bookkeeping."""

from __future__ import annotations

import lightning as L
import numpy as np
from torch.utils.data import BatchSampler, DataLoader, Sampler

from litstarter._engine.augment.heap import keep_freed_memory
from litstarter._engine.augment.workers import init_loader_worker
from litstarter._engine.cores import auto_num_workers
from litstarter._engine.errors import UsageError
from litstarter.data.dataset import ArrayImageDataset
from litstarter.data.samplers import EpochShuffleSampler


class ArrayDataModule(L.LightningDataModule):
    """Base for data modules that end in :class:`ArrayImageDataset` splits.

    Subclasses fill ``self.train_set`` / ``self.val_set`` / ``self.test_set`` in ``setup`` and set
    ``self.class_names``; this class builds the loaders.

    Args:
        batch_size: Samples per batch per device.
        num_workers: Loader worker processes; ``null`` picks about half the cores (0 on one core).
        seed: Seed for the split, the shuffling and the augmentation.
    """

    def __init__(self, batch_size: int = 64, num_workers: int | None = None, seed: int = 42) -> None:
        super().__init__()
        if batch_size < 1:
            raise UsageError(f"data.batch_size must be >= 1, got {batch_size}")
        if num_workers is not None and num_workers < 0:
            raise UsageError(f"data.num_workers must be >= 0 or null (auto), got {num_workers}")
        self.batch_size = batch_size
        self.num_workers = auto_num_workers() if num_workers is None else num_workers
        self.seed = seed
        self.class_names: list[str] = []
        self.train_set: ArrayImageDataset | None = None
        self.val_set: ArrayImageDataset | None = None
        self.test_set: ArrayImageDataset | None = None

    @property
    def test_split(self) -> str:
        """The split that ``test`` evaluates: ``test``, or ``val`` when there is no test split (written to
        ``metrics.json`` as ``test_split``, so a score on val is never mistaken for a held-out one)."""
        return "val" if self.test_set is None and self.val_set is not None else "test"

    @property
    def num_classes(self) -> int:
        """Number of classes, linked into ``model.num_classes`` by the CLI."""
        return len(self.class_names)

    @property
    def resize_size(self) -> tuple[int, int]:
        """``(height, width)`` the images are resized and stored at, before the eval view centre-crops ``image_size``
        out of them; linked into ``model.resize_size`` (and from there into ``model.json``). ``image_size`` here:
        override it where images are stored larger."""
        return tuple(int(v) for v in self.image_size)  # a new tuple: hparams.yaml would write an alias of image_size

    def _pin_memory(self) -> bool:
        # Pinned host memory only pays off when batches are copied to an accelerator.
        trainer = self.trainer
        return trainer is not None and trainer.accelerator.__class__.__name__ != "CPUAccelerator"

    def _loader(
        self, dataset: ArrayImageDataset | None, split: str, sampler: Sampler | BatchSampler | None = None
    ) -> DataLoader:
        if dataset is None:
            raise RuntimeError(f"{type(self).__name__} has no {split} split; was setup() called?")
        workers = {
            "num_workers": self.num_workers,
            "pin_memory": self._pin_memory(),
            "persistent_workers": self.num_workers > 0,
            # Each worker, as it starts: Lightning's seeding, then the allocator tuning (see data.fastpath).
            "worker_init_fn": init_loader_worker if self.num_workers > 0 else None,
        }
        if self.num_workers == 0:
            keep_freed_memory()  # this process loads the data itself; tuned once per process
        if isinstance(sampler, BatchSampler):  # it forms the batches itself (e.g. class-balanced ones)
            return DataLoader(dataset, batch_sampler=sampler, **workers)
        # train order comes from the seeded sampler; val/test never shuffle
        return DataLoader(dataset, batch_size=self.batch_size, sampler=sampler, shuffle=False, **workers)

    def train_sampler(self) -> Sampler | BatchSampler:
        """The sampler (or batch sampler) for the train loader; a seeded per-epoch shuffle by default."""
        return EpochShuffleSampler(len(self.train_set), seed=self.seed)

    def class_counts(self) -> np.ndarray:
        """Training samples per class, ``(num_classes,)``; for inverse-frequency loss weights."""
        if self.train_set is None:
            raise RuntimeError(f"{type(self).__name__} has no train split; was setup() called?")
        return self.train_set.class_counts(self.num_classes)

    def train_dataloader(self) -> DataLoader:
        """Shuffled (seeded by seed and epoch) and augmented."""
        return self._loader(self.train_set, "train", sampler=self.train_sampler() if self.train_set else None)

    def val_dataloader(self) -> DataLoader:
        """In order, no augmentation."""
        return self._loader(self.val_set, "val")

    def test_dataloader(self) -> DataLoader:
        """In order, no augmentation."""
        return self._loader(self.test_set, "test")

    def predict_dataloader(self) -> DataLoader:
        """The test split, in order."""
        return self._loader(self.test_set, "test")

    def normalization(self) -> tuple[list[float], list[float]]:
        """Per-channel ``(mean, std)`` on the 0..1 scale that the model should normalise with."""
        raise NotImplementedError
