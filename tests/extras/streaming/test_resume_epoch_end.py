"""A resume from a checkpoint whose epoch Lightning ended before the stream did (``limit_train_batches``) starts the
next epoch whole, as Lightning does for its own loaders. The stream's position was restored as if mid-epoch: the
resumed epoch got the few batches that epoch had left, never reached validation, and EarlyStopping stopped the fit
on ``val/select`` "not available" (issue 60, reported on detection; classification and segmentation did the
same)."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import lightning as L
import pytest

from litstarter.cli import main
from litstarter.data import StreamingDataModule
from tests.extras.streaming.recording import RecordSamples, records
from tests.helpers import DEFAULT_CONFIG, tensorboard_events

pytestmark = pytest.mark.slow
BATCH = 4


def fit_args(save_dir: Path, shards: Path, task: list[str], epochs: int, *extra: str) -> list[str]:
    """A fit from the shards in batches of 4, no loader workers, no test after it."""
    return ["fit", "--config", str(DEFAULT_CONFIG), *task, f"--trainer.max_epochs={epochs}",
            f"--trainer.logger.init_args.save_dir={save_dir}", "--trainer.logger.init_args.name=stream",
            "--data", "litstarter.data.StreamingDataModule", f"--data.root={shards}", "--data.num_workers=0",
            f"--data.batch_size={BATCH}", "--baseline=false", "--test_after_fit=false",
            "--trainer.enable_progress_bar=false", *extra]  # fmt: skip


def loader_epochs(shards: Path, epochs: int = 2) -> list[list[str]]:
    """The sha1 of every training view of the loader's first ``epochs`` epochs, uninterrupted."""
    data = StreamingDataModule(str(shards), num_workers=0, batch_size=BATCH)
    data.setup("fit")
    loader = data.train_dataloader()
    return [
        [hashlib.sha1(i.numpy().tobytes()).hexdigest() for images, _ in loader for i in images] for _ in range(epochs)
    ]


@pytest.mark.parametrize("shards", ["converted_boxes", "converted_masks", "converted"])
def test_a_resume_after_an_epoch_ended_early_trains_the_next_epoch_whole_and_validates(
    shards: str, request, tmp_path: Path
) -> None:
    data = request.getfixturevalue(shards)
    task = data.get("task", [])  # the photos: classification, default.yaml's task
    main(fit_args(tmp_path, data["output"], task, 1, "--trainer.limit_train_batches=2"))  # epoch 0: 2 batches
    seen = tmp_path / "seen.txt"
    main(fit_args(tmp_path, data["output"], task, 2, "--resume=auto"), callbacks=[RecordSamples(seen)])
    first, second = loader_epochs(data["output"])
    resumed = [h for e, h in records(seen) if e == 1]
    assert {e for e, _ in records(seen)} == {1}
    assert Counter(resumed) == Counter(second) and len(resumed) == len(first)  # the uninterrupted second epoch
    validated = tensorboard_events(tmp_path / "stream" / "version_0").Scalars("val/select")
    assert len(validated) == 2  # after epoch 0, and after the resumed epoch


class StopAt(L.Callback):
    """Ask the fit to stop after batch ``batch`` of epoch 0, as ``max_time`` does: the epoch ends there."""

    def __init__(self, batch: int) -> None:
        self.batch = batch

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx: int) -> None:
        if batch_idx == self.batch:
            trainer.should_stop = True


def test_a_resume_after_a_fit_stopped_mid_epoch_trains_the_next_epoch_whole(converted, tmp_path: Path) -> None:
    main(fit_args(tmp_path, converted["output"], [], 1), callbacks=[StopAt(2)])
    seen = tmp_path / "seen.txt"
    main(fit_args(tmp_path, converted["output"], [], 2, "--resume=auto"), callbacks=[RecordSamples(seen)])
    _, second = loader_epochs(converted["output"])
    assert [e for e, _ in records(seen)] == [1] * 40 and Counter(h for _, h in records(seen)) == Counter(second)
