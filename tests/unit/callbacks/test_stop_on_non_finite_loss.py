"""The NaN guard: stops at the first non-finite loss or gradient, says where and why, spares the checkpoints."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from litstarter.callbacks import NonFiniteLossError, StopOnNonFiniteLoss


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


def test_guard_leaves_gradient_overflow_to_the_amp_grad_scaler_but_not_a_nan_loss() -> None:
    guard, amp = StopOnNonFiniteLoss(), fake_trainer(scaler=object())
    one_step(guard, amp, loss=0.5, grad=float("inf"))  # no stop: the scaler skips this step and lowers its scale
    with pytest.raises(NonFiniteLossError, match="Non-finite loss"):
        one_step(guard, amp, loss=float("nan"), grad=1.0)
