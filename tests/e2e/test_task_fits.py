"""The task through real fits: a checkpoint that loads alone in a fresh process, resuming with full state, and a
compiled run's checkpoint loading into an uncompiled model."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import torch

from litstarter.optim import WarmupCosineLR
from litstarter.tasks.classification import ImageClassifier
from tests.helpers import REPO, best_checkpoint, fast_fit_args, run_cli


def test_checkpoint_loads_standalone_in_a_fresh_process_with_the_same_test_accuracy(
    digits_run: Path, tmp_path: Path
) -> None:
    best = best_checkpoint(digits_run)
    # 1) the CLI's own `test` with the run's saved config
    cli = run_cli(
        [
            "test",
            "--config",
            str(digits_run / "config.yaml"),
            f"--ckpt_path={best}",
            f"--trainer.logger.init_args.save_dir={tmp_path}",
        ]
    )
    cli_acc = float(cli.trainer.callback_metrics["test/acc"])
    # 2) a fresh interpreter, no config: load_from_checkpoint alone
    script = f"""
import json, torch
from litstarter.tasks.classification import ImageClassifier
from litstarter.data import DigitsDataModule
model = ImageClassifier.load_from_checkpoint({str(best)!r}, map_location="cpu").eval()
dm = DigitsDataModule(num_workers=0); dm.setup()
correct = total = 0
with torch.inference_mode():
    for x, y in dm.test_dataloader():
        correct += (model(x).argmax(1) == y).sum().item(); total += len(y)
print(json.dumps({{"acc": correct / total, "names": model.hparams.class_names}}))
"""
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    fresh = json.loads(proc.stdout.strip().splitlines()[-1])
    assert fresh["names"] == [str(i) for i in range(10)]
    assert abs(fresh["acc"] - cli_acc) < 1e-6, (fresh["acc"], cli_acc)


def test_resume_restores_epoch_step_optimizer_and_scheduler(digits_run: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(digits_run, run)
    last = torch.load(run / "checkpoints" / "last.ckpt", weights_only=True, map_location="cpu")
    saved_epoch, saved_step = last["epoch"], last["global_step"]
    steps_per_epoch = saved_step // (saved_epoch + 1)
    assert saved_step > 0 and steps_per_epoch * (saved_epoch + 1) == saved_step

    cli = run_cli(
        [
            "fit",
            "--config",
            str(run / "config.yaml"),
            f"--ckpt_path={run / 'checkpoints' / 'last.ckpt'}",
            f"--trainer.max_epochs={saved_epoch + 2}",
            f"--trainer.logger.init_args.save_dir={tmp_path}",
            "--test_after_fit=false",
        ]
    )
    trainer = cli.trainer
    assert trainer.current_epoch == saved_epoch + 2
    assert trainer.global_step == saved_step + steps_per_epoch
    # The scheduler continued from the saved step instead of restarting its warmup ...
    scheduler = trainer.lr_scheduler_configs[0].scheduler
    assert isinstance(scheduler, WarmupCosineLR)
    assert scheduler.last_epoch == trainer.global_step
    expected_lr = scheduler.base_lrs[0] * scheduler.factor(trainer.global_step)
    assert abs(trainer.optimizers[0].param_groups[0]["lr"] - expected_lr) < 1e-12
    assert scheduler.total_steps == steps_per_epoch * (saved_epoch + 2)
    # ... and AdamW's moment estimates were restored (its step count includes the pre-kill steps).
    adam_steps = {float(s["step"]) for s in trainer.optimizers[0].state.values()}
    assert adam_steps == {float(trainer.global_step)}


def test_a_compiled_run_checkpoint_loads_into_an_uncompiled_model(tmp_path: Path) -> None:
    compile_args = json.dumps({"backend": "eager"})  # the real compiler on CPU takes minutes; same wrapping
    short = ["--trainer.limit_train_batches=4", "--trainer.limit_val_batches=2", "--test_after_fit=false"]
    cli = run_cli([*fast_fit_args(tmp_path, epochs=1), f"--model.compile={compile_args}", *short])
    assert not hasattr(cli.model.net.backbone, "_orig_mod"), "compile should be undone after fit"
    ckpt = best_checkpoint(tmp_path / "digits" / "version_0")
    state = torch.load(ckpt, weights_only=True, map_location="cpu")["state_dict"]
    assert state and not any("_orig_mod" in key for key in state)

    loaded = ImageClassifier.load_from_checkpoint(ckpt, map_location="cpu").eval()
    assert not hasattr(loaded.net.backbone, "_orig_mod")
    images = torch.randint(0, 256, (4, 1, 8, 8), dtype=torch.uint8)
    torch.testing.assert_close(loaded(images), cli.model.eval()(images))

    # A checkpoint that still carries the prefix (saved elsewhere from a compiled module) loads too.
    prefixed = {k.replace("backbone.", "backbone._orig_mod."): v for k, v in state.items()}
    assert prefixed != state
    checkpoint = {"state_dict": prefixed}
    fresh = ImageClassifier(num_classes=10, in_channels=1, image_size=(8, 8))
    fresh.on_load_checkpoint(checkpoint)
    fresh.load_state_dict(checkpoint["state_dict"])
    # ... and into a compiled model, the other way round.
    fresh.net.backbone = torch.compile(fresh.net.backbone, backend="eager")
    checkpoint = {"state_dict": dict(state)}
    fresh.on_load_checkpoint(checkpoint)
    fresh.load_state_dict(checkpoint["state_dict"])
