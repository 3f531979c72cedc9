"""Fine-tuning through config: init_from with head replacement, freeze-then-unfreeze at a scaled backbone LR,
and the errors for files that do not fit."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import lightning as L
import numpy as np
import pytest
import torch
import torchvision
from lightning.pytorch.callbacks import Callback, LearningRateMonitor
from lightning.pytorch.loggers import CSVLogger

from litstarter.data import DigitsDataModule
from litstarter.models.weights import CheckpointError
from litstarter.task import ImageClassifier
from tests.conftest import CONFIGS, DEFAULT_CONFIG, best_checkpoint, fast_fit_args, run_cli

FIRST_HALF = "--data.init_args.classes=[0,1,2,3,4]"
SECOND_HALF = "--data.init_args.classes=[5,6,7,8,9]"
# A small budget: one epoch of 3 batches. The gap to scratch was 0.10-0.36 test accuracy over seeds 0-3 while
# developing (fine-tuned 0.64-0.75, scratch 0.40-0.60); with a whole epoch scratch catches up on digits.
BUDGET = ["--trainer.limit_train_batches=3"]


def _test_acc(run_dir: Path) -> float:
    return json.loads((run_dir / "metrics.json").read_text())["test/acc"]


def test_finetuning_from_digits_0_4_beats_scratch_on_5_9_through_config(tmp_path: Path) -> None:
    run_cli([*fast_fit_args(tmp_path, epochs=3, name="base"), FIRST_HALF, "--test_after_fit=false"])
    base_ckpt = best_checkpoint(tmp_path / "base" / "version_0")
    base_backbone = {k for k in torch.load(base_ckpt, weights_only=True)["state_dict"] if k.startswith("net.backbone.")}

    cli = run_cli([*fast_fit_args(tmp_path, epochs=1, name="finetune"), SECOND_HALF, *BUDGET,
                   f"--model.init_from={base_ckpt}"])  # fmt: skip
    report = cli.model.init_report
    loaded = {"net." + k for k in report.matched if k.startswith("backbone.")}
    assert loaded == base_backbone  # the whole backbone loaded (scalar buffers too, though they don't count)
    assert not report.missing and not report.unexpected and not report.mismatched
    assert "the classes differ" in report.head_replaced
    assert cli.model.class_names == ["5", "6", "7", "8", "9"] and cli.model.net.head.out_features == 5

    run_cli([*fast_fit_args(tmp_path, epochs=1, name="scratch"), SECOND_HALF, *BUDGET])
    finetuned, scratch = _test_acc(tmp_path / "finetune" / "version_0"), _test_acc(tmp_path / "scratch" / "version_0")
    assert finetuned >= scratch, f"fine-tuned {finetuned:.3f} < scratch {scratch:.3f} after the same budget"

    # The fine-tuned run no longer needs the file it started from: loading and resuming never re-read init_from.
    shutil.rmtree(tmp_path / "base")
    run_dir = tmp_path / "finetune" / "version_0"
    model = ImageClassifier.load_from_checkpoint(best_checkpoint(run_dir))
    assert model.class_names == ["5", "6", "7", "8", "9"] and model.net.head.out_features == 5
    assert model.hparams.init_from == str(base_ckpt)
    run_cli(["fit", "--config", str(run_dir / "config.yaml"), "--trainer.max_epochs=2", "--test_after_fit=false",
             f"--ckpt_path={run_dir / 'checkpoints' / 'last.ckpt'}"])  # fmt: skip


class RecordBackbone(Callback):
    """Snapshots of the backbone's state per epoch, its modes, and the LR and size of each optimiser step."""

    def __init__(self) -> None:
        self.start: dict[int, dict[str, torch.Tensor]] = {}
        self.end: dict[int, dict[str, torch.Tensor]] = {}
        self.backbone_training: dict[int, set[bool]] = {}
        self.lrs: list[dict[str, float]] = []
        self.first_unfrozen_step: float | None = None

    def on_train_epoch_start(self, trainer, pl_module) -> None:
        self.start[trainer.current_epoch] = _clone(pl_module.net.backbone.state_dict())

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        modes = {m.training for m in pl_module.net.backbone.modules()}
        self.backbone_training.setdefault(trainer.current_epoch, set()).update(modes)

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        self.lrs.append({g["name"]: g["lr"] for g in optimizer.param_groups})

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.current_epoch == 1 and batch_idx == 0:
            before, after = self.start[1], pl_module.net.backbone.state_dict()
            weights = [k for k in after if k.endswith("weight") and after[k].ndim == 4]  # conv weights: decayed group
            self.first_unfrozen_step = max((after[k] - before[k]).abs().max().item() for k in weights)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self.end[trainer.current_epoch] = _clone(pl_module.net.backbone.state_dict())


def _clone(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in state.items()}


def _changed(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], keys) -> list[str]:
    return [k for k in keys if not torch.equal(a[k], b[k])]


def test_frozen_epochs_keep_the_backbone_and_its_bn_stats_then_it_trains_at_the_scaled_lr(tmp_path: Path) -> None:
    L.seed_everything(0)
    model = ImageClassifier(num_classes=10, in_channels=1, freeze_backbone_epochs=1, backbone_lr_scale=0.1)
    recorder, lr_monitor = RecordBackbone(), LearningRateMonitor(logging_interval="step")
    trainer = L.Trainer(
        max_epochs=2, limit_train_batches=3, limit_val_batches=1, callbacks=[recorder, lr_monitor],
        logger=CSVLogger(tmp_path), enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
    )  # fmt: skip
    head_before = model.net.head.weight.detach().clone()
    trainer.fit(model, datamodule=DigitsDataModule(num_workers=0))

    keys = list(recorder.start[0])
    params = {k for k, _ in model.net.backbone.named_parameters()}
    running = [k for k in keys if "running_" in k]
    assert running and params
    # Frozen epoch (validation ran in between): nothing of the backbone moved, it stayed in eval mode.
    assert _changed(recorder.start[0], recorder.end[0], keys) == []
    assert recorder.backbone_training[0] == {False}
    assert not torch.equal(head_before, model.net.head.weight)  # while the head trained
    # Unfrozen epoch: parameters and running statistics move, in train mode.
    assert set(_changed(recorder.start[1], recorder.end[1], params)) == params
    assert set(_changed(recorder.start[1], recorder.end[1], running)) == set(running)
    assert recorder.backbone_training[1] == {True}
    # Own parameter groups at 0.1 x the head's learning rate at every step, the no-decay split kept.
    assert set(recorder.lrs[0]) == {"head", "head_no_decay", "backbone", "backbone_no_decay"}
    for lrs in recorder.lrs:
        assert lrs["backbone"] == pytest.approx(0.1 * lrs["head"]) and lrs["backbone_no_decay"] == lrs["backbone"]
    # AdamW's first step moves each weight by about its group's lr (sign of the gradient): the scaled one.
    lr_backbone = recorder.lrs[3]["backbone"]  # the first step of epoch 1
    assert 0.5 * lr_backbone < recorder.first_unfrozen_step < 1.5 * lr_backbone
    # Both learning rates are logged.
    assert {"lr-AdamW/head", "lr-AdamW/backbone"} <= set(lr_monitor.lrs)


def _checkpoint(tmp_path: Path, model: ImageClassifier, name: str = "source.ckpt") -> Path:
    """A file laid out like a Lightning checkpoint of ours (weights + the hyper-parameters init_from reads)."""
    path = tmp_path / name
    hparams = {"backbone": model.hparams.backbone, "class_names": model.class_names}
    torch.save({"state_dict": model.state_dict(), "hyper_parameters": hparams}, path)
    return path


def test_init_from_loads_the_backbone_and_keeps_or_replaces_the_head(tmp_path: Path) -> None:
    torch.manual_seed(0)
    source = ImageClassifier(num_classes=3, in_channels=1, class_names=["a", "b", "c"])
    with torch.no_grad():
        source.net.mean.fill_(99.0)
    path = _checkpoint(tmp_path, source)

    same = ImageClassifier(num_classes=3, in_channels=1, class_names=["a", "b", "c"], init_from=str(path))
    report = same.load_initial_weights()
    assert report.head_replaced is None and torch.equal(same.net.head.weight, source.net.head.weight)
    assert not torch.equal(same.net.mean, source.net.mean)  # normalisation comes from this run's data

    for other in (
        ImageClassifier(num_classes=3, in_channels=1, class_names=["x", "y", "z"], init_from=str(path)),
        ImageClassifier(num_classes=5, in_channels=1, init_from=str(path)),
    ):
        fresh_head = other.net.head.weight.detach().clone()
        report = other.load_initial_weights()
        assert report.head_replaced and torch.equal(other.net.head.weight, fresh_head)
        for key, value in source.net.backbone.state_dict().items():
            assert torch.equal(other.net.backbone.state_dict()[key], value), key

    torch.save(source.net.backbone.state_dict(), tmp_path / "backbone.pt")  # a bare backbone state_dict
    bare = ImageClassifier(num_classes=3, in_channels=1, init_from=str(tmp_path / "backbone.pt"))
    assert bare.load_initial_weights().head_replaced == "the file has no head"
    assert torch.equal(bare.net.backbone.stages[0][0][0].weight, source.net.backbone.stages[0][0][0].weight)


def test_init_from_a_partly_fitting_backbone_loads_what_fits_and_warns(tmp_path: Path) -> None:
    path = _checkpoint(tmp_path, ImageClassifier(num_classes=3, in_channels=1))
    wider = ImageClassifier(
        num_classes=3, in_channels=1, backbone_kwargs={"widths": [32, 64, 256]}, init_from=str(path)
    )
    with pytest.warns(UserWarning, match="only part of the backbone loaded"):
        report = wider.load_initial_weights()
    assert report.backbone_matched and report.mismatched


def test_init_from_an_unrelated_file_is_a_clear_error(tmp_path: Path) -> None:
    source = _checkpoint(tmp_path, ImageClassifier(num_classes=3, in_channels=1))  # small_cnn
    other_arch = ImageClassifier(backbone="resnet18", num_classes=3, in_channels=1, init_from=str(source))
    with pytest.raises(
        CheckpointError, match=r"No weight tensor of init_from .*trained with backbone 'small_cnn'.*model.backbone"
    ):
        other_arch.load_initial_weights()
    del other_arch

    (tmp_path / "notes.txt").write_text("not a checkpoint")
    for path, match in [
        (tmp_path / "notes.txt", "cannot read .*notes.txt as a torch file: it is neither"),
        (tmp_path / "list.pt", "list.pt is neither a litstarter checkpoint .* nor a state_dict"),
        (tmp_path / "missing.ckpt", "checkpoint not found: .*missing.ckpt"),
    ]:
        if path.name == "list.pt":
            torch.save([torch.zeros(2)], path)
        model = ImageClassifier(num_classes=3, in_channels=1, init_from=str(path))  # not read yet: no error
        with pytest.raises((CheckpointError, FileNotFoundError), match=match):
            model.load_initial_weights()


def test_weights_are_checked_at_init_and_loaded_when_fitting_starts(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"model.weights: unknown weights 'IMAGENET1K_V9'.*'IMAGENET1K_V1'"):
        ImageClassifier(backbone="mobilenet_v3_small", weights="IMAGENET1K_V9")
    with pytest.raises(ValueError, match="model.weights: backbone 'small_cnn' has no pretrained weights"):
        ImageClassifier(backbone="small_cnn", weights="IMAGENET1K_V1")
    path = tmp_path / "mobilenet.pth"
    model = ImageClassifier(backbone="mobilenet_v3_small", num_classes=2, in_channels=1, weights=str(path))
    reference = torchvision.models.mobilenet_v3_small().state_dict()
    torch.save(reference, path)  # only needed once loading starts
    model.load_initial_weights()
    stem = model.net.backbone.features[0][0].weight
    assert torch.equal(stem, reference["features.0.0.weight"].sum(dim=1, keepdim=True))


def _image_folder(root: Path, classes: list[str], per_class: int = 8) -> Path:
    """``root/<class>/<i>.png``: 12x12 RGB images, each class its own colour plus noise."""
    from PIL import Image

    rng = np.random.default_rng(0)
    for k, name in enumerate(classes):
        (root / name).mkdir(parents=True)
        for i in range(per_class):
            pixels = np.clip(rng.normal(60 + 60 * k, 30, (12, 12, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(root / name / f"{i}.png")
    return root


def test_finetune_experiment_config_starts_from_the_image_folder_run(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # runs/ and runs/cache/ land here, where the experiment's init_from points
    first, second = _image_folder(tmp_path / "first", ["a", "b"]), _image_folder(tmp_path / "second", ["c", "d", "e"])
    small = ["--data.init_args.image_size=8", "--data.init_args.num_workers=0", "--test_after_fit=false"]
    run_cli(["fit", "--config", str(DEFAULT_CONFIG), "--config", str(CONFIGS / "data" / "image_folder.yaml"),
             f"--data.root={first}", "--trainer.max_epochs=1", *small])  # fmt: skip
    cli = run_cli(["fit", "--config", str(DEFAULT_CONFIG), "--config", str(CONFIGS / "experiment" / "finetune.yaml"),
                   f"--data.root={second}", "--trainer.max_epochs=3", *small])  # fmt: skip
    report = cli.model.init_report
    assert Path(report.source).resolve() == (tmp_path / "runs/image_folder/version_0/checkpoints/last.ckpt").resolve()
    assert report.backbone_matched and not report.missing and not report.mismatched
    assert "num_classes differs" in report.head_replaced or "classes differ" in report.head_replaced
    assert cli.model.class_names == ["c", "d", "e"]
    assert cli.trainer.current_epoch == 3 and (tmp_path / "runs" / "finetune" / "version_0").is_dir()
