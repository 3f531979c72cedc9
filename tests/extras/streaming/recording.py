"""Callbacks for the resume and DDP tests: record every trained sample (a hash of its view), and die mid-epoch."""

from __future__ import annotations

import hashlib
import json
import os
import signal
from pathlib import Path

import lightning as L


class RecordSamples(L.Callback):
    """Append ``<epoch> <sha1 of the image>`` per trained sample to ``path`` after each batch: a sample's view is a
    function of ``(seed, epoch, sample)``, so within an epoch equal hashes mean the same sample seen twice."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx: int) -> None:
        images = batch[0].cpu().numpy()
        with open(self.path, "a") as out:
            out.writelines(f"{trainer.current_epoch} {hashlib.sha1(i.tobytes()).hexdigest()}\n" for i in images)


class KillAt(L.Callback):
    """SIGKILL this process at the start of batch ``batch`` of epoch ``epoch``: no hook, no finally runs."""

    def __init__(self, epoch: int, batch: int) -> None:
        self.epoch, self.batch = epoch, batch

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx: int) -> None:
        if trainer.current_epoch == self.epoch and batch_idx == self.batch:
            os.kill(os.getpid(), signal.SIGKILL)


def records(path: Path) -> list[tuple[int, str]]:
    """``(epoch, hash)`` per recorded sample, in order."""
    return [(int(e), h) for e, h in (line.split() for line in path.read_text().splitlines())]


class RecordRankViews(L.Callback):
    """Under DDP, write ``<out_dir>/rank<r>_epoch<e>.json`` per rank and epoch: the sha1 of every trained image, in
    order, and the steps the rank ran. With ``data.augmentation null`` a view is the sample's eval view, so its hash
    names the sample (the test maps hashes to the stored ids).

    Args:
        out_dir: Folder to write into.
    """

    def __init__(self, out_dir: str) -> None:
        self.out_dir = Path(out_dir)
        self.hashes: list[str] = []
        self.steps = 0

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self.hashes, self.steps = [], 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx: int) -> None:
        self.hashes += [hashlib.sha1(i.tobytes()).hexdigest() for i in batch[0].cpu().numpy()]
        self.steps += 1

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        record = {"hashes": self.hashes, "steps": self.steps, "world_size": trainer.world_size}
        (self.out_dir / f"rank{trainer.global_rank}_epoch{trainer.current_epoch}.json").write_text(json.dumps(record))
