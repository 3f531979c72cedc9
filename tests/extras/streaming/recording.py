"""Callbacks for the resume test: record every trained sample (a hash of its view), and die mid-epoch."""

from __future__ import annotations

import hashlib
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
