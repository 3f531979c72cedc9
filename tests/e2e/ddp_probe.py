"""A callback for subprocess DDP tests: each rank records the labels of every train batch it saw, and whether
its data module built the image cache or found it built."""

from __future__ import annotations

import json
from pathlib import Path

import lightning as L


class RecordSeenLabels(L.Callback):
    """Write ``<out_dir>/rank<global_rank>_epoch<epoch>.json`` with the train labels this rank saw and, for a
    cached data module, ``cache_reused`` (False on the process that built the cache).

    Args:
        out_dir: Folder to write into.
    """

    def __init__(self, out_dir: str) -> None:
        self.out_dir = Path(out_dir)
        self.labels: list[int] = []

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.labels = []

    def on_train_batch_start(self, trainer: L.Trainer, pl_module: L.LightningModule, batch, batch_idx: int) -> None:
        self.labels += batch[1].tolist()

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        path = self.out_dir / f"rank{trainer.global_rank}_epoch{trainer.current_epoch}.json"
        cache = getattr(trainer.datamodule, "cache", None)
        record = {
            "labels": self.labels,
            "world_size": trainer.world_size,
            "cache_reused": getattr(cache, "reused", None),
        }
        path.write_text(json.dumps(record))
