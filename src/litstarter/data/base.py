"""What a data module provides, and what every data module here shares: the loaders, the seeded train sampler.

**The contract.** Any ``LightningDataModule`` can be ``data`` (``--data my_pkg.MyDataModule``) if it provides four
facts, linked into the model: ``num_classes`` (the outputs: classes, labels or targets), ``class_names`` (in
order), ``channels`` (1 or 3) and ``image_size`` (``(height, width)``). Its batches are ``(images (B, C, H, W) in
0..255, uint8 is best; targets)``. ``target_kind`` says what the targets are, and the task checks it: ``class``
(the default; ``(B,)`` int64 class indices), ``label_set`` (``(B, K)`` multi-hot float), ``value`` (``(B, K)``
float numbers), or a kind of a task of your own. Used when present: ``normalization()`` (per-channel ``(mean,
std)``, 0..1 scale), ``resize_size`` (the size stored before the eval centre crop), ``class_counts()`` (for
``class_weights: auto``) and ``test_split``.

**Per-sample seeds.** :class:`ArrayDataModule` wraps whatever ``train_sampler()`` returns, stock or your own, in
:class:`~litstarter.data.samplers.SeedEachItem`: each training item reaches the dataset as ``(index, seed)``, its
augmentation a function of ``(seed, epoch, position)``, the same in every run and on resume. A batch sampler is used
as it is (``BalancedBatchSampler`` sends its own seeds; others get the loader worker's).
"""

from __future__ import annotations

import lightning as L
import numpy as np
from torch.utils.data import BatchSampler, DataLoader, Sampler

from litstarter._engine.cores import auto_num_workers
from litstarter._engine.targets import target_kind
from litstarter.data.dataset import ArrayImageDataset
from litstarter.data.samplers import EpochShuffleSampler, SeedEachItem
from litstarter.errors import UsageError


class ArrayDataModule(L.LightningDataModule):
    """Base for data modules that end in :class:`ArrayImageDataset` splits.

    Subclasses set ``class_names``, ``channels`` and ``image_size`` in ``__init__``, fill ``self.train_set`` /
    ``self.val_set`` / ``self.test_set`` in ``setup`` and return ``(mean, std)`` from ``normalization``; this class
    builds the loaders.

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
    def num_classes(self) -> int:
        """Number of classes, linked into ``model.num_classes`` by the CLI."""
        return len(self.class_names)

    @property
    def test_split(self) -> str:
        """The split that ``test`` evaluates: ``test``, or ``val`` when there is no test split."""
        return "val" if self.test_set is None and self.val_set is not None else "test"

    def _loader(self, dataset: ArrayImageDataset | None, split: str, sampler: Sampler | None = None) -> DataLoader:
        if dataset is None:
            raise RuntimeError(f"{type(self).__name__} has no {split} split; was setup() called?")
        on_accelerator = self.trainer is not None and type(self.trainer.accelerator).__name__ != "CPUAccelerator"
        workers = {
            "num_workers": self.num_workers,
            "pin_memory": on_accelerator,  # pinned host memory only pays off when batches go to an accelerator
            "persistent_workers": self.num_workers > 0,
        }
        if getattr(dataset, "boxes", False):  # a variable number of boxes per image: batched as a list
            workers["collate_fn"] = dataset.collate
        if isinstance(sampler, BatchSampler):  # it forms the batches itself (e.g. class-balanced ones)
            return DataLoader(dataset, batch_sampler=sampler, **workers)
        # train order comes from the seeded sampler; val/test never shuffle. A dataset of whole large images
        # (data.tiles) says how many of them a batch holds (loader_batch).
        batch = getattr(dataset, "loader_batch", None) or self.batch_size
        return DataLoader(dataset, batch_size=batch, sampler=sampler, shuffle=False, **workers)

    def train_sampler(self) -> Sampler | BatchSampler:
        """The sampler (or batch sampler) for the train loader; a seeded per-epoch shuffle by default. Override
        it to return any sampler: its items get seeds (see the module docstring)."""
        return EpochShuffleSampler(len(self.train_set), seed=self.seed)

    def class_counts(self) -> np.ndarray:
        """Training samples per class (multi-label: images with each label), ``(num_classes,)``; for
        inverse-frequency loss weights.

        Raises:
            UsageError: the targets have no classes (values), or are of a kind the engine does not count.
        """
        if self.train_set is None:
            raise RuntimeError(f"{type(self).__name__} has no train split; was setup() called?")
        kind = getattr(self, "target_kind", "class")
        try:
            counter = target_kind(kind)
        except KeyError:
            raise UsageError(f"{type(self).__name__}'s targets are {kind!r}: there are no classes to count") from None
        return counter.class_counts(self.train_set.targets, self.num_classes)

    def train_dataloader(self) -> DataLoader:
        """Shuffled (seeded by seed and epoch) and augmented."""
        if self.train_set is None:
            return self._loader(None, "train")
        sampler = self.train_sampler()
        if not isinstance(sampler, BatchSampler):
            sampler = SeedEachItem(sampler, seed=self.seed)
        return self._loader(self.train_set, "train", sampler=sampler)

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
