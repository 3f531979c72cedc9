"""The CLI surface: entry points, bad input at parse time, missing checkpoints."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers import DEFAULT_CONFIG, fast_fit_args, run_cli


def test_fit_help_documents_model_and_data_arguments(capsys) -> None:
    with pytest.raises(SystemExit):
        run_cli(["fit", "--config", str(DEFAULT_CONFIG), "--help"])
    out = capsys.readouterr().out
    assert "--model CONFIG | CLASS_PATH_OR_NAME" in out and "--test_after_fit" in out


def test_each_tasks_help_lists_its_own_arguments_and_the_shared_ones_and_no_other_tasks(capsys) -> None:
    own = {
        "ImageClassifier": ("label_smoothing", "class_weights", "mixup_alpha", "cutmix_alpha", "tta"),
        "MultilabelClassifier": ("label_smoothing", "pos_weight", "thresholds"),
        "ImageRegressor": ("loss", "huber_delta"),
    }
    shared = ("backbone", "weights", "init_from", "backbone_lr_scale", "layer_decay", "compile", "optimizer")
    for task, arguments in own.items():
        with pytest.raises(SystemExit):
            run_cli(["fit", "--model.help", task])
        out = capsys.readouterr().out
        listed = set(re.findall(r"--model\.(\w+)", out))
        others = {a for t, args in own.items() if t != task for a in args} - set(arguments)
        assert set(arguments) | set(shared) <= listed, (task, listed)
        assert not listed & others, (task, listed & others)


def test_unknown_config_key_fails_at_parse_time_naming_the_key_the_file_and_the_nearest_option(tmp_path: Path) -> None:
    from litstarter.errors import UsageError

    bad = tmp_path / "bad.yaml"
    bad.write_text("model:\n  lable_smoothing: 0.1\n")
    with pytest.raises(UsageError, match=r"model.lable_smoothing in .*bad.yaml: .*did you mean label_smoothing"):
        run_cli(["fit", "--config", str(DEFAULT_CONFIG), "--config", str(bad)])


def test_wrong_type_fails_at_parse_time_naming_the_key() -> None:
    from litstarter.errors import UsageError

    with pytest.raises(UsageError, match="trainer.max_epochs: expected int or null, got 'many'"):
        run_cli(["fit", "--config", str(DEFAULT_CONFIG), "--trainer.max_epochs=many"])


def test_missing_checkpoint_path_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "last.ckpt"
    from litstarter.errors import UsageError

    with pytest.raises(UsageError, match=f"--ckpt_path '{missing}' does not exist"):
        run_cli(
            [
                "test",
                "--config",
                str(DEFAULT_CONFIG),
                f"--ckpt_path={missing}",
                f"--trainer.logger.init_args.save_dir={tmp_path}",
                "--data.init_args.num_workers=0",
            ]
        )


def test_bf16_falls_back_to_fp16_on_a_gpu_without_bf16(monkeypatch) -> None:
    import torch
    from jsonargparse import Namespace

    from litstarter._engine.run.fallbacks import fall_back_to_fp16_without_bf16

    config = Namespace(trainer=Namespace(precision="bf16-mixed", accelerator="auto"))
    fall_back_to_fp16_without_bf16(config)
    assert config.trainer.precision == "bf16-mixed"  # no CUDA here: nothing changes
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: False)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda _: "Tesla V100")
    fall_back_to_fp16_without_bf16(config)
    assert config.trainer.precision == "16-mixed"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    config = Namespace(trainer=Namespace(precision="bf16-mixed", accelerator="gpu"))
    fall_back_to_fp16_without_bf16(config)
    assert config.trainer.precision == "bf16-mixed"


def test_disabling_the_progress_bar_drops_the_default_configs_progress_bar_callback(tmp_path: Path) -> None:
    # Lightning refuses a ProgressBar callback beside enable_progress_bar=False; the default config lists one.
    short = ["--trainer.limit_train_batches=2", "--trainer.limit_val_batches=1", "--test_after_fit=false"]
    cli = run_cli([*fast_fit_args(tmp_path, epochs=1), *short, "--trainer.enable_progress_bar=false"])
    from lightning.pytorch.callbacks import ProgressBar

    assert not any(isinstance(c, ProgressBar) for c in cli.trainer.callbacks)
    assert cli.trainer.state.finished
