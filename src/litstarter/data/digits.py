"""scikit-learn's bundled 8x8 handwritten digits: the default data, available offline."""

from __future__ import annotations

import numpy as np
from jsonargparse import lazy_instance
from torchvision.transforms import v2

from litstarter._engine.images.classes import relabel, select_classes
from litstarter._engine.images.stats import channel_stats
from litstarter._engine.split_file import read_split_file
from litstarter.data.augmentation import FastAugmentation
from litstarter.data.base import ArrayDataModule
from litstarter.data.dataset import ArrayImageDataset
from litstarter.errors import UsageError


class DigitsDataModule(ArrayDataModule):
    """The 1,797 digits of ``sklearn.datasets.load_digits`` as 1x8x8 uint8 images, split ~70/15/15.

    The split is stratified and seeded, so it is the same in every run and every process.

    Args:
        batch_size: Samples per batch per device.
        num_workers: Loader worker processes; ``null`` picks about half the cores (0 on one core).
        seed: Seed for the split, the shuffling and the augmentation.
        val_fraction: Fraction of all images held out for validation.
        test_fraction: Fraction of all images held out for testing.
        augmentation: Random training augmentation; ``null`` turns it off. No flips: a flipped digit is another glyph.
        mean: Per-channel mean (0..1 scale) to normalise with; ``null`` computes it from the train split.
        std: Per-channel std (0..1 scale) to normalise with; ``null`` computes it from the train split.
        classes: Train on these digits only, e.g. ``[5, 6, 7, 8, 9]``, labelled 0..K-1 in the order given (the
            model's ``class_names`` follow). Each split keeps the images it has in the full data. ``null``: all 10.
        split_file: A CSV of ``index,split`` rows (``index`` into ``load_digits()``, ``split`` train, val or test)
            that replaces the fractions; images it leaves out are not used. A cross-validation fold is one.
    """

    def __init__(
        self,
        batch_size: int = 64,
        num_workers: int | None = None,
        seed: int = 42,
        val_fraction: float = 0.15,
        test_fraction: float = 0.15,
        augmentation: v2.Transform | None = lazy_instance(
            FastAugmentation, crop_scale=(0.7, 1.0), crop_ratio=(0.9, 1.1), hflip=0.0, color_jitter=0.0
        ),
        mean: list[float] | None = None,
        std: list[float] | None = None,
        classes: list[str | int] | None = None,
        split_file: str | None = None,
    ) -> None:
        super().__init__(batch_size=batch_size, num_workers=num_workers, seed=seed)
        if not 0 < val_fraction < 1 or not 0 < test_fraction < 1 or val_fraction + test_fraction >= 1:
            raise UsageError(
                f"data.val_fraction={val_fraction} and data.test_fraction={test_fraction} must each be in (0, 1)"
                " and sum to less than 1"
            )
        self.val_fraction = val_fraction
        self.test_fraction = test_fraction
        self.augmentation = augmentation
        self.image_size = (8, 8)
        self.channels = 1
        self.all_class_names = [str(d) for d in range(10)]
        self.class_names = select_classes(self.all_class_names, classes, source="the digits (0-9)")
        self._mean, self._std = mean, std
        self.split_file = split_file
        self._splits: dict[str, tuple[np.ndarray, np.ndarray]] | None = None

    def split_indices(self) -> dict[str, np.ndarray]:
        """``{"train"|"val"|"test": indices into load_digits()}``: ``split_file``'s, else by the fractions."""
        # scikit-learn costs seconds to import: only a digits fit pays for it, and only here.
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        labels = load_digits().target
        if self.split_file is not None:
            return read_split_file(self.split_file, len(labels))
        held_out = self.val_fraction + self.test_fraction
        everything = np.arange(len(labels))
        train, rest = train_test_split(everything, test_size=held_out, stratify=labels, random_state=self.seed)
        val, test = train_test_split(
            rest, test_size=self.test_fraction / held_out, stratify=labels[rest], random_state=self.seed
        )
        return {"train": train, "val": val, "test": test}

    def splits(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """``{"train"|"val"|"test": (images (N, 1, 8, 8) uint8, labels (N,))}`` of the kept classes, computed once."""
        if self._splits is None:
            from sklearn.datasets import load_digits

            digits = load_digits()
            # Pixel values are 0..16 counts; rescale to the 0..255 of every other image source.
            images = np.round(digits.images * (255.0 / 16.0)).astype(np.uint8)[:, None]  # (N, 1, 8, 8)
            labels = digits.target.astype(np.int64)
            self._splits = {}
            # Split first, then keep the chosen classes: a class's images land in the same split either way.
            for split, index in self.split_indices().items():
                keep, y_new = relabel(labels[index], self.all_class_names, self.class_names)
                self._splits[split] = (images[index][keep], y_new)
        return self._splits

    def setup(self, stage: str | None = None) -> None:
        """Build the three splits (cheap: the data ships inside scikit-learn)."""
        splits = self.splits()
        self.train_set = ArrayImageDataset(*splits["train"], self.image_size, self.augmentation)
        self.val_set = ArrayImageDataset(*splits["val"], self.image_size)
        self.test_set = ArrayImageDataset(*splits["test"], self.image_size) if "test" in splits else None

    def normalization(self) -> tuple[list[float], list[float]]:
        """The configured mean/std, or the train split's own statistics."""
        if self._mean is not None and self._std is not None:
            return list(self._mean), list(self._std)
        return channel_stats(self.splits()["train"][0])
