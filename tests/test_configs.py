"""Every YAML under configs/ parses through the CLI, composed on top of configs/default.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CONFIGS, DEFAULT_CONFIG, run_cli

ALL_CONFIGS = sorted(p for p in CONFIGS.rglob("*.yaml"))


def _config_id(path: Path) -> str:
    return str(path.relative_to(CONFIGS))


@pytest.mark.parametrize("config", ALL_CONFIGS, ids=_config_id)
def test_config_parses(config: Path, tmp_path: Path, capsys) -> None:
    args = ["fit", "--config", str(DEFAULT_CONFIG)]
    if config != DEFAULT_CONFIG:
        args += ["--config", str(config)]
    text = config.read_text()
    if "ImageFolderDataModule" in text or "image_folder" in config.name:
        args += [f"--data.init_args.root={tmp_path}"]  # parsing only: the folder need not hold images
    with pytest.raises(SystemExit) as exit_info:
        run_cli([*args, "--print_config"])
    assert exit_info.value.code in (0, None)
    printed = capsys.readouterr().out
    assert "trainer:" in printed and "model:" in printed and "data:" in printed


@pytest.mark.parametrize("config", sorted((CONFIGS / "experiment").glob("*.yaml")), ids=_config_id)
def test_experiment_config_opens_with_its_command(config: Path) -> None:
    first_lines = config.read_text().splitlines()[:5]
    assert first_lines and first_lines[0].startswith("#"), f"{config} must open with a comment"
    assert any("litstarter" in line and "--config" in line for line in first_lines), (
        f"{config} must give the exact command that runs it in its opening comment"
    )


def test_default_config_runs_alone_and_names_the_essentials() -> None:
    text = DEFAULT_CONFIG.read_text()
    for needed in [
        "seed_everything",
        "max_epochs",
        "deterministic",
        "log_every_n_steps",
        "ModelCheckpoint",
        "LearningRateMonitor",
        "EarlyStopping",
        "TensorBoardLogger",
        "save_last",
    ]:
        assert needed in text, f"configs/default.yaml lacks {needed}"
