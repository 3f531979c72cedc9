"""The same numbers: the photo folder fitted through the image-folder cache and through its shards, same seed and
configs, ends with the same test metrics, each step training the same samples through the same eval view."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import DEFAULT_CONFIG, FOLDER_CONFIG, run_cli

# Float32 sums in another order (the cache's sampler and LitData's shuffle put the 40 samples of the one batch in
# different orders; the loss mean and BatchNorm's batch statistics add them up in that order) differ in the last
# bits, ~1e-7 relative; three steps of Adam carry that far below this. A wrong pixel, label, normalisation or eval
# view moves the test loss by orders of magnitude more.
LOSS_TOLERANCE = 1e-4


def common(save_dir: Path, name: str) -> list[str]:
    """One step per epoch over the whole train split (40), no augmentation, no dropout (its masks come from torch's
    global generator, which the two loaders leave in different states): the order within a batch is then all that
    differs between the two loaders, and a mean over the batch does not depend on it (up to float rounding). With
    the default augmentation the views differ (the cache seeds a sample by its position in the epoch's order,
    the shards by its stored index), and so would the metrics, by amounts that 4 test images cannot tell from noise."""
    return [f"--trainer.logger.init_args.save_dir={save_dir}", f"--trainer.logger.init_args.name={name}",
            "--trainer.max_epochs=3", "--data.init_args.num_workers=0", "--data.init_args.batch_size=40",
            "--data.init_args.augmentation=null", "--model.dropout=0", "--baseline=false",
            "--trainer.enable_progress_bar=false"]  # fmt: skip


def final_test_metrics(save_dir: Path) -> dict[str, float]:
    """The numeric ``test/*`` entries of the run's ``metrics.json``."""
    metrics = json.loads(next(save_dir.rglob("metrics.json")).read_text())
    return {k: v for k, v in metrics.items() if k.startswith("test/") and isinstance(v, float | int)}


@pytest.mark.slow
def test_the_cache_and_the_shards_give_the_same_test_metrics(converted, tmp_path: Path) -> None:
    run_cli(["fit", *converted["args"], *common(tmp_path / "cache", "cache")])
    run_cli(["fit", "--config", str(DEFAULT_CONFIG), "--config", str(FOLDER_CONFIG), "--data",
             "litstarter.data.StreamingDataModule", f"--data.root={converted['output']}",
             *common(tmp_path / "shards", "shards")])  # fmt: skip
    cached, streamed = final_test_metrics(tmp_path / "cache"), final_test_metrics(tmp_path / "shards")
    assert set(cached) == set(streamed) and "test/acc" in cached
    assert streamed["test/loss"] == pytest.approx(cached["test/loss"], rel=LOSS_TOLERANCE)
    assert streamed["test/acc"] == cached["test/acc"]
