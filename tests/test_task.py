"""The task: learning on one batch, checkpoints that stand alone, and resuming with full state."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import torch

from litstarter.data import DigitsDataModule
from litstarter.optim import WarmupCosineLR
from litstarter.task import ImageClassifier
from tests.conftest import REPO, best_checkpoint, run_cli


def test_overfits_one_fixed_batch() -> None:
    torch.manual_seed(0)
    dm = DigitsDataModule(num_workers=0, augmentation=None)
    dm.setup()
    images, labels = map(
        torch.stack,
        zip(*[(x, torch.tensor(y)) for x, y in (dm.train_set[i] for i in range(32))], strict=True),
    )
    model = ImageClassifier(num_classes=10, in_channels=1, image_size=(8, 8))
    model.net.set_normalization(*dm.normalization())
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    first = None
    for _ in range(200):
        loss = model.criterion(model(images), labels)
        first = first if first is not None else loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if loss.item() < 0.01:
            break
    assert first > 1.5, f"an untrained model should start near log(10)=2.3, got {first:.3f}"
    assert loss.item() < 0.01, f"could not overfit one batch of 32 in 200 steps: loss {loss.item():.4f}"


def test_model_has_no_softmax_and_init_is_sane() -> None:
    model = ImageClassifier(num_classes=10, in_channels=1, image_size=(8, 8)).eval()
    logits = model(torch.randint(0, 256, (4, 1, 8, 8), dtype=torch.uint8))
    assert logits.shape == (4, 10)
    assert not torch.allclose(logits.sum(-1), torch.ones(4)), "outputs look like probabilities"
    # Small head init: the first loss is close to log(num_classes).
    loss = torch.nn.functional.cross_entropy(logits, torch.arange(4))
    assert abs(loss.item() - torch.log(torch.tensor(10.0)).item()) < 0.3


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
from litstarter.task import ImageClassifier
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


def test_a_checkpoint_made_from_plain_python_loads_with_weights_only(tmp_path: Path) -> None:
    """No CLI: the default optimiser/scheduler must not end up as pickled functions in the hparams."""
    import lightning as L

    dm = DigitsDataModule(num_workers=0)
    model = ImageClassifier(num_classes=10, in_channels=1, image_size=(8, 8))
    trainer = L.Trainer(
        max_epochs=1,
        limit_train_batches=2,
        limit_val_batches=1,
        default_root_dir=tmp_path,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(model, datamodule=dm)
    ckpt = tmp_path / "checkpoints"
    path = next(ckpt.glob("*.ckpt"))
    state = torch.load(path, weights_only=True, map_location="cpu")
    assert state["hyper_parameters"]["optimizer"] is None
    assert tuple(state["hyper_parameters"]["resize_size"]) == (8, 8)  # filled from the data module in setup
    loaded = ImageClassifier.load_from_checkpoint(path, map_location="cpu")
    assert isinstance(loaded.optimizer(loaded.parameters()), torch.optim.AdamW)


def test_one_cycle_keeps_the_ratio_between_parameter_groups(tmp_path: Path) -> None:
    cli = run_cli(
        [
            "fit",
            "--config",
            str(REPO / "configs" / "default.yaml"),
            "--config",
            str(REPO / "configs" / "model" / "onecycle.yaml"),
            f"--trainer.logger.init_args.save_dir={tmp_path}",
            "--trainer.max_epochs=1",
            "--trainer.limit_train_batches=2",
            "--trainer.limit_val_batches=1",
            "--model.backbone_lr_scale=0.1",
            "--data.init_args.num_workers=0",
            "--test_after_fit=false",
        ]
    )
    groups = cli.trainer.optimizers[0].param_groups
    peaks = {round(g["max_lr"], 10) for g in groups}
    assert peaks == {0.01, 0.001}, peaks  # head at max_lr, backbone at 0.1 x


def test_epoch_train_metrics_count_every_sample_exactly_though_updates_are_batched(monkeypatch) -> None:
    """The step buffers its argmax; the metrics, fed every few steps and at the epoch's end, equal per-step updates.

    (No Trainer: ``self.log`` only warns, and the metrics are what the epoch's end logs.)"""
    import litstarter.task as task_module
    from litstarter.metrics import classification_metrics

    monkeypatch.setattr(task_module, "TRAIN_METRICS_EVERY", 3)  # flushes mid-epoch as well as at its end
    torch.manual_seed(0)
    model = ImageClassifier(num_classes=4, in_channels=1, image_size=(8, 8))
    reference = classification_metrics(4, "train")
    model.on_train_epoch_start()
    for step in range(7):  # 7 steps of uneven batches: two flushes of 3, one left for the epoch's end
        images = torch.randint(0, 256, (5 + step, 1, 8, 8), dtype=torch.uint8)
        labels = torch.randint(0, 4, (5 + step,))
        model.training_step((images, labels), step)
        with torch.no_grad():
            reference.update(model(images), labels)
    model._update_train_metrics()
    ours, theirs = model.train_metrics.compute(), reference.compute()
    assert ours.keys() == theirs.keys()
    for key in ours:
        assert torch.equal(ours[key], theirs[key]), key
