"""Every run's config.yaml runs again: for each documented seam, a fit through the CLI, then a fit from the
config.yaml it saved, which resolves to the same config (and so writes the same config.yaml, in a folder of its own).

The seams: a stock v2 transform with scalar arguments (RandomRotation's ``degrees: 10``, RandAugment, a Compose),
your own backbone by class path, your own data module (an ArrayDataModule subclass, and a plain
LightningDataModule that only provides the four facts), and a list of loggers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.helpers import DEFAULT_CONFIG, run_cli

SHORT = [
    "--trainer.max_epochs=1",
    "--trainer.limit_train_batches=2",
    "--trainer.limit_val_batches=1",
    "--test_after_fit=false",
]
COMPOSE = {
    "data": {
        "init_args": {
            "augmentation": {
                "class_path": "torchvision.transforms.v2.Compose",
                "init_args": {
                    "transforms": [
                        {"class_path": "torchvision.transforms.v2.RandomRotation", "init_args": {"degrees": 10}},
                        {"class_path": "torchvision.transforms.v2.ColorJitter", "init_args": {"brightness": 0.3}},
                    ]
                },
            }
        }
    }
}
LOGGERS = {
    "trainer": {
        "logger": [
            {"class_path": "lightning.pytorch.loggers.TensorBoardLogger", "init_args": {"save_dir": "runs"}},
            {"class_path": "lightning.pytorch.loggers.CSVLogger", "init_args": {"save_dir": "runs"}},
        ]
    }
}
SEAMS = {
    "RandomRotation degrees 10": ["--data.augmentation=torchvision.transforms.v2.RandomRotation",
                                  "--data.augmentation.degrees=10"],
    "RandAugment": ["--data.augmentation=torchvision.transforms.v2.RandAugment"],
    "Compose": [{"compose.yaml": COMPOSE}],
    "own backbone": ["--model.backbone=tests.examples.my_backbones.TinyNet", "--model.backbone_kwargs={width: 4}"],
    "own ArrayDataModule": ["--data=tests.examples.squares_datamodule.SquaresDataModule"],
    "plain LightningDataModule": ["--data=tests.examples.plain_datamodule.StripesDataModule"],
    "logger list": [{"loggers.yaml": LOGGERS}],
}  # fmt: skip


def _arguments(seam: list, tmp_path: Path) -> list[str]:
    """The seam's options, its YAML snippets written as config files."""
    args = []
    for item in seam:
        if isinstance(item, dict):
            ((name, content),) = item.items()
            (tmp_path / name).write_text(yaml.safe_dump(content))
            args += ["--config", str(tmp_path / name)]
        else:
            args.append(item)
    return args


def _run_folders(save_dir: Path) -> list[Path]:
    return sorted(p.parent for p in save_dir.rglob("config.yaml"))


@pytest.mark.parametrize("seam", SEAMS.values(), ids=SEAMS.keys())
def test_a_fit_from_the_saved_config_yaml_resolves_to_the_same_config(seam: list, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the logger list writes under ./runs
    save_dir = tmp_path / "runs"
    args = _arguments(seam, tmp_path)
    first = ["fit", "--config", str(DEFAULT_CONFIG), *args, *SHORT]
    if "plain_datamodule" not in " ".join(args):  # ours take num_workers; that module has none
        first.append("--data.init_args.num_workers=0")
    if "loggers.yaml" not in " ".join(args):
        first.append(f"--trainer.logger.init_args.save_dir={save_dir}")
    run_cli(first)
    (run,) = _run_folders(save_dir)
    saved = (run / "config.yaml").read_text()
    assert "Unable to serialize" not in saved

    run_cli(["fit", "--config", str(run / "config.yaml")])
    folders = _run_folders(save_dir)
    assert len(folders) == 2, folders  # the rerun got a folder of its own, beside the first
    again = next(folder for folder in folders if folder != run)
    assert yaml.safe_load((again / "config.yaml").read_text()) == yaml.safe_load(saved)
