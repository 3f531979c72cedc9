"""The data seam: your own LightningDataModule (an ArrayDataModule subclass) runs through the CLI, every link made."""

from __future__ import annotations

from pathlib import Path

import torch

from tests.helpers import DEFAULT_CONFIG, run_cli


def test_a_users_data_module_trains_through_the_cli_with_every_link(tmp_path: Path) -> None:
    cli = run_cli(
        [
            "fit",
            "--config",
            str(DEFAULT_CONFIG),
            "--data=tests.examples.squares_datamodule.SquaresDataModule",
            "--data.init_args.augmentation=torchvision.transforms.v2.TrivialAugmentWide",
            "--trainer.max_epochs=1",
            "--trainer.limit_train_batches=3",
            f"--trainer.logger.init_args.save_dir={tmp_path}",
            "--trainer.logger.init_args.name=squares",
        ]
    )
    hparams = cli.model.hparams
    assert hparams.num_classes == 3 and hparams.in_channels == 3
    assert tuple(hparams.image_size) == (12, 12) and tuple(hparams.resize_size) == (14, 14)
    assert hparams.class_names == ["top_left", "top_right", "bottom_left"]
    assert type(cli.datamodule.augmentation).__name__ == "TrivialAugmentWide"
    assert "test/acc" in cli.trainer.callback_metrics  # test-after-fit ran on the module's test split
    run = tmp_path / "squares" / "version_0"
    assert "SquaresDataModule" in (run / "config.yaml").read_text()
    state = torch.load(run / "checkpoints" / "last.ckpt", weights_only=True, map_location="cpu")
    assert state["hyper_parameters"]["class_names"] == ["top_left", "top_right", "bottom_left"]
