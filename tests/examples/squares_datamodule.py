"""An example of your own data module: subclass ``ArrayDataModule``, fill the splits in ``setup``, and the CLI links
``num_classes``, ``channels``, ``image_size``, ``class_names`` and ``resize_size`` into the model as for ours.

    python -m litstarter fit --config configs/default.yaml --data tests.examples.squares_datamodule.SquaresDataModule
"""

from __future__ import annotations

import numpy as np
from jsonargparse import lazy_instance
from torchvision.transforms import v2

from litstarter._engine.images.stats import channel_stats
from litstarter.data import ArrayDataModule, ArrayImageDataset, FastAugmentation


class SquaresDataModule(ArrayDataModule):
    """A bright square on a dark ground, in one of three corners (the class), 12x12 RGB stored at 14x14.

    Args:
        batch_size: Samples per batch per device.
        num_workers: Loader worker processes.
        seed: Seed for the images, the shuffling and the augmentation.
        per_class: Images per class in the train split (val and test get a quarter each).
        augmentation: Any torchvision v2 transform; ``null`` for none.
    """

    def __init__(
        self,
        batch_size: int = 16,
        num_workers: int | None = 0,
        seed: int = 0,
        per_class: int = 24,
        augmentation: v2.Transform | None = lazy_instance(FastAugmentation, crop_scale=(0.8, 1.0), hflip=0.0),
    ) -> None:
        super().__init__(batch_size=batch_size, num_workers=num_workers, seed=seed)
        self.class_names = ["top_left", "top_right", "bottom_left"]
        self.channels = 3
        self.image_size = (12, 12)
        self.per_class = per_class
        self.augmentation = augmentation

    @property
    def resize_size(self) -> tuple[int, int]:
        """The arrays are stored at 14x14; training crops 12x12 out of them."""
        return (14, 14)

    def _split(self, n_per_class: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        labels = np.repeat(np.arange(3), n_per_class)
        images = rng.integers(0, 40, (len(labels), 3, 14, 14), dtype=np.uint8)  # (N, C, H, W) dark noise
        for i, label in enumerate(labels):
            top, left = (1, 1) if label == 0 else (1, 7) if label == 1 else (7, 1)
            images[i, :, top : top + 6, left : left + 6] = 220
        return images, labels

    def setup(self, stage: str | None = None) -> None:
        """Make the three splits (cheap and seeded: the same in every process)."""
        rng = np.random.default_rng(self.seed)
        self._train = self._split(self.per_class, rng)
        self.train_set = ArrayImageDataset(*self._train, self.image_size, self.augmentation)
        self.val_set = ArrayImageDataset(*self._split(self.per_class // 4, rng), self.image_size)
        self.test_set = ArrayImageDataset(*self._split(self.per_class // 4, rng), self.image_size)

    def normalization(self) -> tuple[list[float], list[float]]:
        """The train split's per-channel mean and std."""
        if self.train_set is None:
            self.setup()
        return channel_stats(self._train[0])
