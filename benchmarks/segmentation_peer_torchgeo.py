"""torchgeo's ``SemanticSegmentationTask`` on a mask folder's splits: the peer side of ``segmentation_peer.py``.

    /work/peer/torchgeo-venv/bin/python benchmarks/segmentation_peer_torchgeo.py <folder> \\
        [--epochs 8] [--batch_size 32] [--workers 1] [--seed 42]

Runs in torchgeo's venv (``segmentation_peer.py``'s docstring makes it) and imports torch, torchgeo (and its
kornia), Lightning, torchmetrics, PIL and numpy only, never litstarter. ``<folder>`` holds
``{train,val,test}/images/<name>.png`` beside ``{train,val,test}/masks/<name>.png`` (class indices) and
``classes.txt``, the files our side reads.

The task is torchgeo's own, configured as its docs show: ``model="unet", backbone="resnet18", weights=None`` (an
smp U-Net, random init), ``loss="ce"``, ``lr=1e-3``; its ``configure_optimizers`` gives AdamW (torch's default
weight decay, 0.01) and ``ReduceLROnPlateau(patience=10)`` on ``val_loss``. The data is torchgeo's
``NonGeoDataModule`` over a ``NonGeoDataset`` that reads a split's PNGs once into memory, normalised on the batch
by the module's ``K.Normalize`` with the train split's mean and standard deviation (as ours). Two additions, in
:class:`MacroIoUTask`:

* torchgeo's ``JaccardIndex`` is micro-averaged; the subclass also logs the macro mean IoU (torchmetrics'
  ``MulticlassJaccardIndex(average="macro")``, classes absent from both masks and predictions left out, as ours),
  and the best checkpoint is chosen on it (ours chooses on its val mIoU);
* smp's encoders need sides that are a multiple of 32: the input is padded (the edge repeated) and the logits
  cropped back, as ours does for ``smp/<arch>/<encoder>``.

Printed last, one JSON line: ``test_miou_macro``, ``test_iou_micro``, ``fit_s``, ``test_s``, ``epochs``.

A part of ``benchmarks/segmentation_peer.py``, which runs it, not a benchmark: no smoke of its own;
``segmentation_peer.py --smoke`` runs it (and skips in one line without torchgeo's venv).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import kornia.augmentation as K
import lightning as L
import numpy as np
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import ModelCheckpoint
from PIL import Image
from torchgeo.datamodules import NonGeoDataModule
from torchgeo.datasets import NonGeoDataset
from torchgeo.trainers import SemanticSegmentationTask
from torchmetrics.classification import MulticlassJaccardIndex

#: smp's encoders halve the input five times: its sides must be a multiple of this.
STRIDE = 32


class MaskFolder(NonGeoDataset):
    """One split of the folder, read once into memory: ``{"image": (C, H, W) float 0..255, "mask": (H, W) long}``.

    Args:
        root: The folder.
        split: ``train``, ``val`` or ``test``.
    """

    def __init__(self, root: str, split: str) -> None:
        images = sorted((Path(root) / split / "images").glob("*.png"))
        if not images:
            raise FileNotFoundError(f"{root}/{split}/images has no PNG files")
        masks = [Path(root) / split / "masks" / path.name for path in images]
        pixels = np.stack([np.asarray(Image.open(path)) for path in images])  # (N, H, W) or (N, H, W, C) uint8
        self.images = torch.from_numpy(pixels if pixels.ndim == 4 else pixels[..., None]).permute(0, 3, 1, 2)
        self.masks = torch.from_numpy(np.stack([np.asarray(Image.open(path)) for path in masks])).long()

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        return {"image": self.images[index].float(), "mask": self.masks[index]}


class MaskFolderDataModule(NonGeoDataModule):
    """torchgeo's ``NonGeoDataModule`` over :class:`MaskFolder`, normalised by the train split's statistics.

    Args:
        root: The folder.
        batch_size: Samples per batch.
        num_workers: Loader worker processes.
    """

    def __init__(self, root: str, batch_size: int, num_workers: int) -> None:
        super().__init__(MaskFolder, batch_size=batch_size, num_workers=num_workers, root=root)
        with Image.open(next((Path(root) / "train" / "images").glob("*.png"))) as image:
            self.channels = len(image.getbands())

    def setup(self, stage: str) -> None:
        """torchgeo's setup, then ``K.Normalize`` by the train split's per-channel mean and standard deviation."""
        super().setup(stage)
        if stage == "fit":
            train = self.train_dataset.images.double()  # (N, C, H, W), 0..255
            self.mean, self.std = train.mean(dim=(0, 2, 3)).float(), train.std(dim=(0, 2, 3)).float()
            self.aug = K.AugmentationSequential(K.Normalize(self.mean, self.std), data_keys=None, keepdim=True)


class MacroIoUTask(SemanticSegmentationTask):
    """torchgeo's task, its input padded to a multiple of :data:`STRIDE`, with the macro mean IoU logged beside its
    micro one (``val_miou_macro``, ``test_miou_macro``)."""

    def configure_metrics(self) -> None:
        """torchgeo's metrics, the macro mean IoU added to its val and test collections (updated by its steps from
        the same logits, no second forward pass)."""
        super().configure_metrics()
        kwargs = {"num_classes": self.hparams["num_classes"], "ignore_index": self.hparams["ignore_index"]}
        for metrics in (self.val_metrics, self.test_metrics):
            metrics.add_metrics({"miou_macro": MulticlassJaccardIndex(average="macro", **kwargs)})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Pad ``(B, C, H, W)`` up to a multiple of :data:`STRIDE` (the edge repeated), crop the logits back."""
        h, w = x.shape[-2:]
        padded = F.pad(x, (0, (-w) % STRIDE, 0, (-h) % STRIDE), mode="replicate")
        return super().forward(padded)[..., :h, :w]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("root", help="the mask folder ({train,val,test}/{images,masks}/, classes.txt)")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=1, help="loader worker processes")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    L.seed_everything(args.seed, workers=True)
    classes = (Path(args.root) / "classes.txt").read_text().split()
    datamodule = MaskFolderDataModule(args.root, args.batch_size, args.workers)
    task = MacroIoUTask(
        model="unet", backbone="resnet18", weights=None, in_channels=datamodule.channels, num_classes=len(classes),
        loss="ce", lr=1e-3,
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        best = ModelCheckpoint(dirpath=Path(tmp) / "checkpoints", monitor="val_miou_macro", mode="max")
        trainer = L.Trainer(
            max_epochs=args.epochs, deterministic=True, callbacks=[best], default_root_dir=tmp,
            enable_progress_bar=False, enable_model_summary=False,
        )  # fmt: skip
        start = time.perf_counter()
        trainer.fit(task, datamodule=datamodule)
        fit_s = time.perf_counter() - start
        start = time.perf_counter()
        (scores,) = trainer.test(task, datamodule=datamodule, ckpt_path="best", verbose=False)
        test_s = time.perf_counter() - start
    result = {
        "test_miou_macro": scores["test_miou_macro"],
        "test_iou_micro": scores["test_MulticlassJaccardIndex"],
        "fit_s": round(fit_s, 2),
        "test_s": round(test_s, 2),
        "epochs": trainer.current_epoch,
    }
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
