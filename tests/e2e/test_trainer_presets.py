"""Each trainer preset that can run on a CPU runs `fit` end to end; accumulation and clipping act as configured."""

from __future__ import annotations

import json
from pathlib import Path

import lightning as L
import pytest
import torch

from litstarter.cli import LitStarterCLI
from litstarter.data.base import ArrayDataModule
from litstarter.tasks.base import ImageTask
from tests.helpers import CONFIGS, fast_fit_args, run_cli

TINY = ["--trainer.limit_train_batches=4", "--trainer.limit_val_batches=2", "--trainer.limit_test_batches=2"]


def preset(name: str) -> list[str]:
    return ["--config", str(CONFIGS / "trainer" / f"{name}.yaml")]


def fit(tmp_path: Path, *extra: str, epochs: int = 2):
    return run_cli([*fast_fit_args(tmp_path, epochs=epochs), *TINY, *extra])


def build(tmp_path: Path, *extra: str) -> LitStarterCLI:
    """The CLI's model, data and Trainer, not yet fitted (to add a probe callback first)."""
    args = [*fast_fit_args(tmp_path, epochs=1)[1:], *extra]
    return LitStarterCLI(
        ImageTask,
        ArrayDataModule,
        subclass_mode_model=True,
        subclass_mode_data=True,
        run=False,
        auto_configure_optimizers=False,
        args=args,
    )


def test_cpu_preset_fits_in_full_precision(tmp_path: Path) -> None:
    cli = fit(tmp_path, *preset("cpu"))
    assert type(cli.trainer.accelerator).__name__ == "CPUAccelerator" and cli.trainer.precision == "32-true"
    assert cli.trainer.global_step == 2 * 4
    assert (tmp_path / "digits" / "version_0" / "metrics.json").exists()


def test_gpu_preset_runs_bf16_mixed_autocast_on_a_cpu(tmp_path: Path) -> None:
    dtypes: list[torch.dtype] = []

    def record(module, inputs, output) -> None:
        dtypes.append(output.dtype)

    cli = build(tmp_path, *preset("gpu"), "--trainer.accelerator=cpu", *TINY)
    assert cli.trainer.precision == "bf16-mixed"
    assert torch.backends.cudnn.benchmark and not torch.are_deterministic_algorithms_enabled()
    cli.model.net.head.register_forward_hook(record)
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    assert torch.bfloat16 in dtypes, "the head never ran under bf16 autocast"
    assert torch.isfinite(cli.trainer.callback_metrics["train/loss_epoch"])


def test_debug_preset_runs_one_batch_of_each_and_writes_nothing(tmp_path: Path, monkeypatch) -> None:
    workdir = tmp_path / "workdir"
    workdir.mkdir()
    monkeypatch.chdir(workdir)  # default_root_dir is relative: nothing may land in the working directory
    cli = fit(tmp_path / "runs", *preset("debug"))
    assert cli.trainer.global_step == 1
    assert cli.trainer._detect_anomaly
    assert not any(tmp_path.rglob("metrics.json"))
    stray = [p.relative_to(tmp_path) for p in tmp_path.rglob("*.ckpt")]
    assert all(p.parts[:3] == ("workdir", "runs", "debug") for p in stray), stray


def test_overfit_preset_memorises_one_batch(tmp_path: Path) -> None:
    # 40 epochs of the same batch: from ~2.3 (chance) down to 0.05-0.12 (by the seeds' draws) with a livelier lr and
    # no dropout.
    shorter = ["--trainer.max_epochs=40", "--model.optimizer.init_args.lr=0.01", "--model.dropout=0"]
    cli = run_cli([*fast_fit_args(tmp_path), *preset("overfit"), *shorter, "--test_after_fit=false"])
    assert cli.trainer.global_step == 40  # one batch per epoch
    metrics = cli.trainer.callback_metrics
    assert metrics["train/acc"] >= 0.95, float(metrics["train/acc"])  # from ~0.1
    assert metrics["train/loss_epoch"] < 0.2, float(metrics["train/loss_epoch"])


def test_profile_preset_writes_its_report_into_the_run_directory(tmp_path: Path) -> None:
    fit(tmp_path, *preset("profile"), "--test_after_fit=false", epochs=1)
    report = tmp_path / "digits" / "version_0" / "fit-profile.txt"
    assert report.exists(), sorted(p.name for p in (tmp_path / "digits" / "version_0").iterdir())
    assert "run_training_batch" in report.read_text()


def test_gradient_accumulation_steps_the_optimiser_every_n_batches(tmp_path: Path) -> None:
    cli = fit(tmp_path, "--trainer.accumulate_grad_batches=2", "--test_after_fit=false")
    assert cli.trainer.global_step == 2 * 4 // 2


class WeightDelta(L.Callback):
    def on_train_start(self, trainer, pl_module) -> None:
        self.before = [p.detach().clone() for p in pl_module.parameters()]

    def on_train_end(self, trainer, pl_module) -> None:
        deltas = [(p.detach() - b).flatten() for p, b in zip(pl_module.parameters(), self.before, strict=True)]
        self.norm = float(torch.cat(deltas).norm())


def test_gradient_clipping_bounds_the_update_and_the_logged_norm_is_before_clipping(tmp_path: Path) -> None:
    # Plain SGD with lr 1 and no decay: the update is exactly minus the clipped gradient.
    sgd = json.dumps({"class_path": "torch.optim.SGD", "init_args": {"lr": 1.0, "weight_decay": 0.0}})
    cli = build(
        tmp_path,
        f"--model.optimizer={sgd}",
        "--model.lr_scheduler=torch.optim.lr_scheduler.ConstantLR",
        "--model.lr_scheduler.init_args.factor=1.0",
        "--trainer.gradient_clip_val=0.001",
        "--trainer.limit_train_batches=1",
        "--trainer.limit_val_batches=1",
        "--trainer.log_every_n_steps=1",  # train/grad_norm is computed on logging steps only
    )
    probe = WeightDelta()
    cli.trainer.callbacks.append(probe)
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    assert probe.norm == pytest.approx(0.001, rel=1e-3)
    assert cli.trainer.callback_metrics["train/grad_norm"] > 0.01  # logged before clipping


def test_the_gpu_perf_presets_each_run_a_step_on_a_cpu(tmp_path: Path) -> None:
    """configs/perf/channels_last.yaml and compile.yaml over the gpu preset, on the CPU: what a GPU run turns on
    still parses and takes a training step here (compile with its own mode, through inductor's CPU backend)."""
    one_step = ["--trainer.accelerator=cpu", "--trainer.limit_train_batches=1", "--trainer.limit_val_batches=1"]
    for name, check in (("channels_last", "channels_last"), ("compile", "compile")):
        perf = ["--config", str(CONFIGS / "perf" / f"{name}.yaml")]
        cli = build(tmp_path / name, *preset("gpu"), *perf, *one_step)
        assert getattr(cli.model.hparams, check), name
        cli.trainer.fit(cli.model, datamodule=cli.datamodule)
        assert cli.trainer.global_step == 1, name
        assert torch.isfinite(cli.trainer.callback_metrics["train/loss_step"]), name
        if name == "channels_last":
            conv = next(m for m in cli.model.modules() if isinstance(m, torch.nn.Conv2d))
            assert conv.weight.is_contiguous(memory_format=torch.channels_last)
