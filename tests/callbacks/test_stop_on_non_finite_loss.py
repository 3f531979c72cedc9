"""The NaN guard: stops at the first non-finite loss or gradient, says where and why, spares the checkpoints."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from litstarter.callbacks import NonFiniteLossError, StopOnNonFiniteLoss
from tests.conftest import fast_fit_args, run_litstarter


def fake_trainer(scaler=None) -> SimpleNamespace:
    return SimpleNamespace(
        precision_plugin=SimpleNamespace(scaler=scaler),
        global_step=7,
        current_epoch=1,
        checkpoint_callback=SimpleNamespace(best_model_path="/run/best.ckpt", last_model_path="/run/last.ckpt"),
    )


def one_step(guard: StopOnNonFiniteLoss, trainer, loss: float, grad: float) -> None:
    module = torch.nn.Linear(2, 1)
    module.device = torch.device("cpu")  # what a LightningModule has
    for p in module.parameters():
        p.grad = torch.full_like(p, grad)
    optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    guard.on_train_batch_start(trainer, module, None, batch_idx=3)
    guard.on_before_backward(trainer, module, torch.tensor(loss))
    guard.on_before_optimizer_step(trainer, module, optimizer)


def test_guard_passes_finite_steps_and_stops_on_a_nan_loss_or_an_inf_gradient() -> None:
    guard, trainer = StopOnNonFiniteLoss(), fake_trainer()
    one_step(guard, trainer, loss=0.5, grad=1.0)
    with pytest.raises(NonFiniteLossError, match=r"Non-finite loss at global step 7, epoch 1 \(batch 3"):
        one_step(guard, trainer, loss=float("nan"), grad=1.0)
    with pytest.raises(NonFiniteLossError, match="gradient norm"):
        one_step(guard, trainer, loss=0.5, grad=float("inf"))
    # A NaN in any accumulated micro-batch counts, even if the last one was finite.
    guard.on_before_backward(trainer, None, torch.tensor(float("inf")))
    with pytest.raises(NonFiniteLossError, match="Non-finite loss"):
        one_step(guard, trainer, loss=0.5, grad=1.0)


def test_guard_leaves_gradient_overflow_to_the_amp_grad_scaler() -> None:
    guard = StopOnNonFiniteLoss()
    one_step(guard, fake_trainer(scaler=object()), loss=0.5, grad=float("inf"))  # the scaler skips this step


@pytest.mark.slow
def test_nan_mid_run_stops_with_step_epoch_causes_and_leaves_checkpoints_byte_identical(tmp_path: Path) -> None:
    snapshot = tmp_path / "checkpoints_before_nan"
    poison = {
        "class_path": "tests.fault_injection.PoisonWeightsAtStep",
        "init_args": {"step": 45, "snapshot": str(snapshot)},  # epoch 2, after two epochs' checkpoints
    }
    args = [*fast_fit_args(tmp_path, epochs=3), f"--trainer.callbacks+={json.dumps(poison)}"]
    proc = run_litstarter(args, check=False, timeout=120)

    assert proc.returncode != 0
    message = proc.stderr[proc.stderr.rfind("NonFiniteLossError") :]
    assert "Non-finite loss at global step 45, epoch 2" in message, proc.stderr[-3000:]
    for cause in ["learning rate", "AMP overflow", "division by zero", "bad data", "detect_anomaly"]:
        assert cause in message, f"{cause!r} missing from: {message}"

    run = tmp_path / "digits" / "version_0"
    before = {p.name: p.read_bytes() for p in snapshot.glob("*.ckpt")}
    after = {p.name: p.read_bytes() for p in (run / "checkpoints").glob("*.ckpt")}
    assert "last.ckpt" in before and len(before) == 2, sorted(before)
    assert after == before, "a checkpoint was written or changed after the loss went non-finite"
    state = torch.load(run / "checkpoints" / "last.ckpt", weights_only=True, map_location="cpu")
    assert state["global_step"] == 40
    assert not (run / "metrics.json").exists(), "a failed fit must not be tested"
