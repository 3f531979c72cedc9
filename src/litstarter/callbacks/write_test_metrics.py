"""Write the test metrics of a run to ``<run>/metrics.json``."""

from __future__ import annotations

from pathlib import Path

import lightning as L
from lightning.pytorch.utilities import rank_zero_info

from litstarter._engine.atomic_io import write_json


class WriteTestMetrics(L.Callback):
    """At the end of ``test``, write every ``test/*`` metric to ``<trainer.log_dir>/<filename>`` (rank 0 only; not
    under ``fast_dev_run``, whose one-batch metrics mean nothing).

    Args:
        filename: File name inside the run directory.
    """

    def __init__(self, filename: str = "metrics.json") -> None:
        self.filename = filename

    def on_test_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Collect the logged test metrics and write them atomically."""
        if trainer.fast_dev_run:
            return
        run_dir = trainer.log_dir  # a collective under DDP (rank 0 broadcasts it): every rank must ask
        if not trainer.is_global_zero:
            return
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items() if k.startswith("test/") and v.numel() == 1}
        # "val" when the data has no test split: those scores are not held out.
        metrics["test_split"] = getattr(trainer.datamodule, "test_split", "test")
        metrics["tta"] = list(getattr(pl_module, "tta", []))  # the views test averaged over ([]: none)
        path = Path(run_dir or trainer.default_root_dir) / self.filename
        write_json(path, metrics)
        rank_zero_info(f"Test metrics written to {path}")
