"""Task options from configs/optim/, configs/loss/ and configs/perf/: optimiser groups, every schedule, label
smoothing, the memory/speed options (gradient checkpointing, channels_last, compile), LR scaling with the batch."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from litstarter.optim import weight_decay_groups
from litstarter.tasks.classification import ImageClassifier
from tests.helpers import CONFIGS, DEFAULT_CONFIG, fast_fit_args, run_cli

TINY = ["--trainer.limit_train_batches=4", "--trainer.limit_val_batches=2", "--test_after_fit=false"]


def config(rel: str) -> list[str]:
    return ["--config", str(CONFIGS / rel)]


# The default schedule is configs/default.yaml's own; the others each have a config.
SCHEDULES = {
    "warmup_cosine": [],
    **{name: config(f"optim/{name}.yaml") for name in ("onecycle", "plateau", "cosine_restarts")},
}


def tiny_model(**kwargs) -> ImageClassifier:
    return ImageClassifier(num_classes=10, in_channels=1, image_size=(8, 8), **kwargs)


def test_norm_layers_and_biases_get_no_weight_decay() -> None:
    model = tiny_model()
    decayed, exempt = weight_decay_groups(model)
    assert exempt["weight_decay"] == 0.0 and "weight_decay" not in decayed
    exempt_ids = {id(p) for p in exempt["params"]}
    for module in model.modules():
        for name, param in module.named_parameters(recurse=False):
            should_exempt = isinstance(module, nn.BatchNorm2d) or name == "bias"
            assert (id(param) in exempt_ids) == should_exempt, (type(module).__name__, name)
    assert len(decayed["params"]) + len(exempt["params"]) == len(list(model.parameters()))


def test_sgd_nesterov_config_builds_sgd_with_nesterov_and_two_groups(tmp_path: Path) -> None:
    cli = run_cli([*fast_fit_args(tmp_path, epochs=1), *config("optim/sgd_nesterov.yaml"), *TINY])
    optimizer = cli.trainer.optimizers[0]
    assert isinstance(optimizer, torch.optim.SGD)
    assert optimizer.defaults["nesterov"] and optimizer.defaults["momentum"] == 0.9
    assert [g["weight_decay"] for g in optimizer.param_groups] == [0.0005, 0.0]


@pytest.mark.parametrize("schedule", list(SCHEDULES))
def test_every_schedule_config_runs_and_steps_at_its_interval(schedule: str, tmp_path: Path) -> None:
    extra = ["--model.lr_scheduler.init_args.T_0=3"] if schedule == "cosine_restarts" else []
    cli = run_cli([*fast_fit_args(tmp_path, epochs=2), *SCHEDULES[schedule], *TINY, *extra])
    trainer = cli.trainer
    config = trainer.lr_scheduler_configs[0]
    scheduler, lrs = config.scheduler, [g["lr"] for g in trainer.optimizers[0].param_groups]
    assert trainer.global_step == 8 and all(lr > 0 for lr in lrs)
    if schedule == "plateau":
        # once per epoch, after validation, on val/loss
        assert (config.interval, config.monitor) == ("epoch", "val/loss")
        assert scheduler.last_epoch == 2
    else:
        assert config.interval == "step" and scheduler.last_epoch == trainer.global_step
    if schedule == "warmup_cosine":
        assert scheduler.total_steps == 8 and lrs[0] == pytest.approx(0.003 * scheduler.factor(8))
    if schedule == "onecycle":
        assert scheduler.total_steps == trainer.estimated_stepping_batches == 8  # filled from the Trainer
    if schedule == "cosine_restarts":
        assert scheduler.T_i == 6  # restarted at step 3 into a twice-longer cycle


def test_label_smoothing_config_keeps_a_floor_under_the_loss(tmp_path: Path) -> None:
    cli = run_cli([*fast_fit_args(tmp_path, epochs=1), *config("loss/label_smoothing.yaml"), *TINY])
    criterion = cli.model.criterion
    assert criterion.label_smoothing == 0.1
    confident = torch.full((1, 10), -20.0)
    confident[0, 3] = 20.0
    assert criterion(confident, torch.tensor([3])) > 0.5  # a one-hot target would give ~0


def test_gradient_checkpointing_gives_the_same_gradients(monkeypatch) -> None:
    import litstarter.models.small_cnn as small_cnn

    calls = []
    real_checkpoint = small_cnn.checkpoint
    monkeypatch.setattr(small_cnn, "checkpoint", lambda *a, **k: calls.append(k) or real_checkpoint(*a, **k))
    torch.manual_seed(0)
    plain = tiny_model()
    checkpointed = tiny_model(gradient_checkpointing=True)
    checkpointed.load_state_dict(plain.state_dict())
    images = torch.randint(0, 256, (16, 1, 8, 8), dtype=torch.uint8)
    labels = torch.randint(0, 10, (16,))
    for model in (plain, checkpointed):
        model.train()
        model.criterion(model(images), labels).backward()
    assert len(calls) == 3 and all(k["use_reentrant"] is False for k in calls)  # one per stage, one model
    for (name, a), (_, b) in zip(plain.named_parameters(), checkpointed.named_parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-5, atol=1e-6, msg=name)


def test_channels_last_changes_the_layout_not_the_outputs() -> None:
    torch.manual_seed(0)
    plain = tiny_model().eval()
    nhwc = tiny_model(channels_last=True).eval()
    nhwc.load_state_dict(plain.state_dict())
    conv = next(m for m in nhwc.modules() if isinstance(m, nn.Conv2d) and m.in_channels > 1)
    assert conv.weight.is_contiguous(memory_format=torch.channels_last)
    images = torch.randint(0, 256, (4, 1, 8, 8), dtype=torch.uint8)
    torch.testing.assert_close(nhwc(images), plain(images), rtol=1e-4, atol=1e-5)


def test_batch_plan_is_printed_and_lr_scales_with_the_global_batch(tmp_path: Path, caplog) -> None:
    cli = run_cli(
        [
            "fit",
            "--config",
            str(DEFAULT_CONFIG),
            f"--trainer.logger.init_args.save_dir={tmp_path}",
            "--trainer.max_epochs=1",
            "--trainer.limit_train_batches=2",
            "--trainer.limit_val_batches=1",
            "--trainer.accumulate_grad_batches=2",
            "--data.init_args.batch_size=128",
            "--data.init_args.num_workers=0",
            "--model.scale_lr_with_batch=linear",
            "--model.reference_batch_size=64",
            "--test_after_fit=false",
        ]
    )
    scheduler = cli.trainer.lr_scheduler_configs[0].scheduler
    # global batch 128 x 1 device x 1 node x 2 accumulation = 256 = 4 x the reference 64
    assert scheduler.base_lrs[0] == pytest.approx(0.003 * 4)
    assert "world size 1" in caplog.text and "effective global batch 256" in caplog.text
    assert "lr x 4" in caplog.text


@pytest.mark.parametrize("dropout", [2.0, -0.5, 1.0])
def test_a_dropout_outside_its_range_is_one_line_naming_the_key(dropout: float) -> None:
    from litstarter.errors import UsageError

    with pytest.raises(UsageError, match=rf"^model\.dropout must be in \[0, 1\), got {dropout}$"):
        tiny_model(dropout=dropout)
