"""Task options from configs/model/: optimiser groups, every schedule, label smoothing, and the memory/speed
options (gradient checkpointing, channels_last, compile)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn

from litstarter.optim import weight_decay_groups
from litstarter.task import ImageClassifier
from tests.conftest import CONFIGS, best_checkpoint, fast_fit_args, run_cli

TINY = ["--trainer.limit_train_batches=4", "--trainer.limit_val_batches=2", "--test_after_fit=false"]


def model_config(name: str) -> list[str]:
    return ["--config", str(CONFIGS / "model" / f"{name}.yaml")]


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
    cli = run_cli([*fast_fit_args(tmp_path, epochs=1), *model_config("sgd_nesterov"), *TINY])
    optimizer = cli.trainer.optimizers[0]
    assert isinstance(optimizer, torch.optim.SGD)
    assert optimizer.defaults["nesterov"] and optimizer.defaults["momentum"] == 0.9
    assert [g["weight_decay"] for g in optimizer.param_groups] == [0.0005, 0.0]


@pytest.mark.parametrize("schedule", ["warmup_cosine", "onecycle", "plateau", "cosine_restarts"])
def test_every_schedule_config_runs_and_steps_at_its_interval(schedule: str, tmp_path: Path) -> None:
    extra = ["--model.lr_scheduler.init_args.T_0=3"] if schedule == "cosine_restarts" else []
    cli = run_cli([*fast_fit_args(tmp_path, epochs=2), *model_config(schedule), *TINY, *extra])
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
    cli = run_cli([*fast_fit_args(tmp_path, epochs=1), *model_config("label_smoothing"), *TINY])
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


def test_a_compiled_run_checkpoint_loads_into_an_uncompiled_model(tmp_path: Path) -> None:
    compile_args = json.dumps({"backend": "eager"})  # the real compiler on CPU takes minutes; same wrapping
    cli = run_cli([*fast_fit_args(tmp_path, epochs=1), f"--model.compile={compile_args}", *TINY])
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
    fresh = tiny_model()
    fresh.on_load_checkpoint(checkpoint)
    fresh.load_state_dict(checkpoint["state_dict"])
    # ... and into a compiled model, the other way round.
    fresh.net.backbone = torch.compile(fresh.net.backbone, backend="eager")
    checkpoint = {"state_dict": dict(state)}
    fresh.on_load_checkpoint(checkpoint)
    fresh.load_state_dict(checkpoint["state_dict"])
