"""An example of a data module that is a plain ``LightningDataModule``: no base class of ours, only the four facts
the CLI links into the model (``num_classes``, ``class_names``, ``channels``, ``image_size``) and its loaders.

    python -m litstarter fit --config configs/default.yaml --data tests.examples.plain_datamodule.StripesDataModule
"""

from __future__ import annotations

import lightning as L
import torch
from torch.utils.data import DataLoader, TensorDataset


class StripesDataModule(L.LightningDataModule):
    """Horizontal or vertical stripes (the two classes), 1x10x10 uint8 images.

    Args:
        batch_size: Samples per batch.
        per_class: Images per class in each split.
        seed: Seed for the images.
    """

    def __init__(self, batch_size: int = 16, per_class: int = 32, seed: int = 0) -> None:
        super().__init__()
        self.batch_size = batch_size
        self.per_class = per_class
        self.seed = seed
        self.class_names = ["horizontal", "vertical"]
        self.num_classes = len(self.class_names)
        self.channels = 1
        self.image_size = (10, 10)

    def _split(self, offset: int) -> TensorDataset:
        generator = torch.Generator().manual_seed(self.seed + offset)
        labels = torch.arange(2).repeat_interleave(self.per_class)  # (N,)
        rows = (torch.arange(10) % 2 * 200).view(1, 10, 1).expand(len(labels), 10, 10)  # (N, H, W) stripes
        images = torch.where(labels.view(-1, 1, 1) == 0, rows, rows.transpose(1, 2))
        noise = torch.randint(0, 50, images.shape, generator=generator)
        return TensorDataset((images + noise).clamp(0, 255).to(torch.uint8)[:, None], labels)  # (N, 1, 10, 10)

    def setup(self, stage: str | None = None) -> None:
        self.splits = {name: self._split(i) for i, name in enumerate(("train", "val", "test"))}

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.splits["train"], batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.splits["val"], batch_size=self.batch_size)

    def test_dataloader(self) -> DataLoader:
        return DataLoader(self.splits["test"], batch_size=self.batch_size)
