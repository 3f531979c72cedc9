"""The task: learning on one batch, a sane init, parameter groups, checkpoints from plain Python, one-cycle groups
(checkpoints in a fresh process and resuming: tests/e2e/test_task_fits.py)."""

from __future__ import annotations

from pathlib import Path

import torch

from litstarter.data import DigitsDataModule
from litstarter.tasks.classification import ImageClassifier
from tests.helpers import REPO, run_cli


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
            str(REPO / "configs" / "optim" / "onecycle.yaml"),
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


def test_epoch_train_metrics_count_every_sample_of_the_epoch(monkeypatch) -> None:
    """The epoch's train metrics equal the metrics of every sample trained on, in steps of uneven batches.

    (No Trainer: ``self.log`` only warns, and the metrics are what the epoch's end logs.)"""
    from litstarter.metrics import classification_metrics

    torch.manual_seed(0)
    model = ImageClassifier(num_classes=4, in_channels=1, image_size=(8, 8))
    reference = classification_metrics(4, "train")
    for step in range(7):
        images = torch.randint(0, 256, (5 + step, 1, 8, 8), dtype=torch.uint8)
        labels = torch.randint(0, 4, (5 + step,))
        model.training_step((images, labels), step)
        with torch.no_grad():
            reference.update(model(images), labels)
    ours, theirs = model.train_metrics.compute(), reference.compute()
    assert ours.keys() == theirs.keys()
    for key in ours:
        assert torch.equal(ours[key], theirs[key]), key
